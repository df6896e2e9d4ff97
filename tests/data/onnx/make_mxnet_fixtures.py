"""Makes the ONNX fixtures of tests/test_onnx.py with Apache MXNet 1.9.1's own exporter
(mxnet.onnx.export_model), so that oxnet's importer is tested on files MXNet wrote.

MXNet 1.9.1's mx.onnx needs the onnx package, which MXNet's benchmark venv lacks; the
fixtures were made in a separate venv:

    python3 -m venv /work/mxonnx-venv
    /work/mxonnx-venv/bin/pip install mxnet==1.9.1 "numpy<1.24" onnx==1.14.1
    cd tests/data/onnx && /work/mxonnx-venv/bin/python make_mxnet_fixtures.py

For each model NAME it writes NAME.onnx (MXNet's export, opset MXNet chose) and
NAME.npz: 'x', the fixed input, and 'y', MXNet 1.9.1's output for it.
Every file stays under 2 MB.
"""
import os

import mxnet as mx
import numpy as np
from mxnet import gluon

HERE = os.path.dirname(os.path.abspath(__file__))


def seed_cnn():
    # the CNN of the seed article (shared/seeds/gluon_seed.py)
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Conv2D(channels=20, kernel_size=5, activation='relu'))
        net.add(gluon.nn.MaxPool2D(pool_size=2, strides=2))
        net.add(gluon.nn.Conv2D(channels=50, kernel_size=5, activation='relu'))
        net.add(gluon.nn.MaxPool2D(pool_size=2, strides=2))
        net.add(gluon.nn.Flatten())
        net.add(gluon.nn.Dense(500, activation="relu"))
        net.add(gluon.nn.Dense(10))
    return net, (1, 1, 28, 28)


class _Block(gluon.HybridBlock):
    def __init__(self, channels, stride, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.conv1 = gluon.nn.Conv2D(channels, 3, stride, 1, use_bias=False)
            self.bn1 = gluon.nn.BatchNorm()
            self.conv2 = gluon.nn.Conv2D(channels, 3, 1, 1, use_bias=False)
            self.bn2 = gluon.nn.BatchNorm()
            self.down = gluon.nn.Conv2D(channels, 1, stride, use_bias=False)

    def hybrid_forward(self, F, x):
        y = F.Activation(self.bn1(self.conv1(x)), act_type='relu')
        y = self.bn2(self.conv2(y))
        return F.Activation(y + self.down(x), act_type='relu')


def small_resnet():
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Conv2D(8, 3, 1, 1, use_bias=False))
        net.add(gluon.nn.BatchNorm())
        net.add(gluon.nn.Activation('relu'))
        net.add(gluon.nn.MaxPool2D(3, 2, 1))
        net.add(_Block(16, 2))
        net.add(_Block(32, 2))
        net.add(gluon.nn.GlobalAvgPool2D())
        net.add(gluon.nn.Flatten())
        net.add(gluon.nn.Dense(10))
    return net, (1, 3, 32, 32)


def mobilenet_v2():
    net = gluon.model_zoo.vision.get_model('mobilenetv2_0.25', classes=10)
    return net, (1, 3, 32, 32)


def randomize_bn(net, rng):
    # non-trivial running statistics, so that the inference form of BatchNorm matters
    for name, p in net.collect_params().items():
        if name.endswith(('running_mean', 'moving_mean')):
            p.set_data(mx.nd.array(rng.uniform(-0.2, 0.2, p.shape)))
        elif name.endswith(('running_var', 'moving_var')):
            p.set_data(mx.nd.array(rng.uniform(0.5, 1.5, p.shape)))
        elif name.endswith('gamma'):
            p.set_data(mx.nd.array(rng.uniform(0.5, 1.5, p.shape)))
        elif name.endswith('beta'):
            p.set_data(mx.nd.array(rng.uniform(-0.2, 0.2, p.shape)))


def main():
    mx.random.seed(7)
    rng = np.random.RandomState(7)
    for name, make in [('mxnet_seed_cnn', seed_cnn), ('mxnet_small_resnet', small_resnet),
                       ('mxnet_mobilenetv2_0.25', mobilenet_v2)]:
        net, shape = make()
        net.initialize(mx.init.Xavier(magnitude=2.24))
        net.hybridize()
        x = rng.uniform(-1, 1, shape).astype(np.float32)
        net(mx.nd.array(x))
        randomize_bn(net, rng)
        y = net(mx.nd.array(x)).asnumpy()
        prefix = os.path.join(HERE, '_tmp_' + name)
        net.export(prefix)
        path = os.path.join(HERE, name + '.onnx')
        mx.onnx.export_model(prefix + '-symbol.json', prefix + '-0000.params', [shape],
                             np.float32, path)
        os.remove(prefix + '-symbol.json')
        os.remove(prefix + '-0000.params')
        np.savez(os.path.join(HERE, name + '.npz'), x=x, y=y)
        size = os.path.getsize(path)
        assert size < 2 * 1024 * 1024, (name, size)
        print(name, size, 'bytes, output', y.shape)


if __name__ == '__main__':
    main()
