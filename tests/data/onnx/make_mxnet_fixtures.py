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


def kitchen_sink():
    """A Symbol (not a Gluon block) with many of MXNet's common ops."""
    data = mx.sym.var('data')        # (2, 3, 8, 8)
    tokens = mx.sym.var('tokens')    # (2, 5)
    c = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name='conv')
    c = mx.sym.BatchNorm(c, fix_gamma=False, name='bn')
    c = mx.sym.LeakyReLU(c, act_type='leaky', slope=0.1, name='lrelu')
    p = mx.sym.Pooling(c, kernel=(2, 2), stride=(2, 2), pool_type='avg', name='pool')  # (2,4,4,4)
    d = mx.sym.Deconvolution(p, kernel=(2, 2), stride=(2, 2), num_filter=2, no_bias=True, name='deconv')  # (2,2,8,8)
    g = mx.sym.Pooling(d, kernel=(1, 1), global_pool=True, pool_type='max', name='gpool')
    f = mx.sym.Flatten(g)                                   # (2, 2)
    r = mx.sym.Reshape(p, shape=(0, -1, 4), name='rs')     # (2, 16, 4)
    t = mx.sym.transpose(r, axes=(0, 2, 1))                 # (2, 4, 16)
    s = mx.sym.slice_axis(t, axis=2, begin=2, end=10)       # (2, 4, 8)
    e = mx.sym.Embedding(tokens, input_dim=20, output_dim=8, name='emb')  # (2,5,8)
    bd = mx.sym.batch_dot(e, s, transpose_b=True)           # (2,5,4)
    m = mx.sym.mean(bd, axis=1)                             # (2,4)
    fc = mx.sym.FullyConnected(mx.sym.Concat(m, f, dim=1), num_hidden=6, name='fc')  # (2,6)
    fc = mx.sym.Activation(fc, act_type='tanh')
    fc = mx.sym.clip(fc * 2 + 0.5, -0.8, 0.9)
    fc = mx.sym.Dropout(fc, p=0.3)
    x = mx.sym.expand_dims(fc, axis=1)                      # (2,1,6)
    x = mx.sym.broadcast_mul(x, mx.sym.expand_dims(mx.sym.sum(bd, axis=2), axis=2))  # (2,5,6)
    x = mx.sym.squeeze(mx.sym.slice_axis(x, axis=1, begin=0, end=1), axis=1)
    return mx.sym.log_softmax(x, axis=-1), {'data': (2, 3, 8, 8), 'tokens': (2, 5)}


def export_kitchen_sink(rng):
    """MXNet 1.9.1's exporter writes the installed onnx's newest opset into the model but
    translates with its opset-13 tables, and checks the graph against the newest opset:
    with onnx 1.14 (opset 19) that breaks for ReduceMean (axes became an input in 18).
    So this model is made with onnx told that its newest opset is 13 (the opset MXNet's
    tables were written for), MXNet's graph check left to onnx.checker.check_model at
    the end."""
    import onnx
    import onnx.checker
    import onnx.defs
    saved = onnx.defs.onnx_opset_version, onnx.checker.check_graph
    onnx.defs.onnx_opset_version = lambda: 13
    onnx.checker.check_graph = lambda graph, ctx=None: None
    try:
        sym, shapes = kitchen_sink()
        arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
        params = {}
        for n, s in zip(sym.list_arguments(), arg_shapes):
            if n not in shapes:
                params[n] = mx.nd.array(rng.uniform(-0.5, 0.5, s))
        for n, s in zip(sym.list_auxiliary_states(), aux_shapes):
            params[n] = mx.nd.array(rng.uniform(0.5, 1.5, s))
        x = {'data': rng.uniform(-1, 1, shapes['data']).astype(np.float32),
             'tokens': rng.randint(0, 20, shapes['tokens']).astype(np.float32)}
        args = {k: mx.nd.array(v) for k, v in x.items()}
        args.update({k: v for k, v in params.items() if k in sym.list_arguments()})
        exe = sym.bind(mx.cpu(), args,
                       aux_states={k: params[k] for k in sym.list_auxiliary_states()})
        exe.forward(is_train=False)
        y = exe.outputs[0].asnumpy()
        names = [n for n in sym.list_arguments() if n in shapes]   # MXNet's input order
        path = os.path.join(HERE, 'mxnet_kitchen_sink.onnx')
        mx.onnx.export_model(sym, params, [shapes[n] for n in names],
                             [np.float32] * len(names), path)
    finally:
        onnx.defs.onnx_opset_version, onnx.checker.check_graph = saved
    onnx.checker.check_model(onnx.load(path))
    np.savez(os.path.join(HERE, 'mxnet_kitchen_sink.npz'), y=y, **x)
    print('mxnet_kitchen_sink', os.path.getsize(path), 'bytes, output', y.shape)


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
    export_kitchen_sink(rng)


if __name__ == '__main__':
    main()
