"""A manual check (too big for CI and for committed fixtures): every model-zoo vision
network exported by MXNet 1.9.1's own mx.onnx.export_model, imported by oxnet.

    # 1. in a venv with MXNet 1.9.1 and onnx (see make_mxnet_fixtures.py):
    /work/mxonnx-venv/bin/python check_mxnet_zoo.py export OUTDIR
    # 2. with oxnet, onnx and onnxruntime:
    python check_mxnet_zoo.py compare OUTDIR

Random weights (Xavier; BatchNorm statistics, gamma and beta random too), batch 1, the
smallest input each network accepts. `compare` prints, per network, oxnet's output on
the imported model against MXNet's own output and against onnxruntime's reading of the
same file.

Result (2026-11-26, onnx 1.14.1 for MXNet, oxnet's importer): all 34 import; oxnet and
onnxruntime agree on every file (<= 3e-6). MXNet's files themselves disagree with MXNet
for resnet*_v2 (1e-2 to 3e-2): their first BatchNorm has fix_gamma=True, which MXNet's
operator honours (gamma taken as 1) and MXNet's exporter does not (it writes gamma).
oxnet's exporter writes ones there.
"""
import glob
import os
import sys

import numpy as np

NAMES = [
    'alexnet', 'densenet121', 'densenet161', 'densenet169', 'densenet201', 'inceptionv3',
    'mobilenet0.25', 'mobilenet0.5', 'mobilenet0.75', 'mobilenet1.0', 'mobilenetv2_0.25',
    'mobilenetv2_0.5', 'mobilenetv2_0.75', 'mobilenetv2_1.0', 'resnet101_v1', 'resnet101_v2',
    'resnet152_v1', 'resnet152_v2', 'resnet18_v1', 'resnet18_v2', 'resnet34_v1', 'resnet34_v2',
    'resnet50_v1', 'resnet50_v2', 'squeezenet1.0', 'squeezenet1.1', 'vgg11', 'vgg11_bn', 'vgg13',
    'vgg13_bn', 'vgg16', 'vgg16_bn', 'vgg19', 'vgg19_bn',
]


def export(out):
    import mxnet as mx
    from mxnet.gluon.model_zoo import vision
    for name in NAMES:
        size = {'alexnet': 64, 'inceptionv3': 299}.get(name, 32)
        if name.startswith(('densenet', 'squeezenet')):
            size = 224
        net = vision.get_model(name, classes=10)
        net.initialize(mx.init.Xavier())
        net.hybridize()
        rng = np.random.RandomState(0)
        x = rng.uniform(-1, 1, (1, 3, size, size)).astype(np.float32)
        net(mx.nd.array(x))
        for k, p in net.collect_params().items():
            lo_hi = {'running_mean': (-0.1, 0.1), 'running_var': (0.5, 1.5), 'gamma': (0.8, 1.2),
                     'beta': (-0.1, 0.1)}
            for suffix, (lo, hi) in lo_hi.items():
                if k.endswith(suffix):
                    p.set_data(mx.nd.array(rng.uniform(lo, hi, p.shape)))
        y = net(mx.nd.array(x)).asnumpy()
        prefix = os.path.join(out, 'tmp')
        net.export(prefix)
        mx.onnx.export_model(prefix + '-symbol.json', prefix + '-0000.params', [x.shape],
                             np.float32, os.path.join(out, name + '.onnx'))
        np.savez(os.path.join(out, name + '.npz'), x=x, y=y)
        print(name, 'exported', flush=True)


def compare(out):
    import onnxruntime as ort
    import oxnet as mx
    so = ort.SessionOptions()
    so.log_severity_level = 3
    for path in sorted(glob.glob(os.path.join(out, '*.onnx'))):
        name = os.path.basename(path)[:-5]
        d = np.load(path[:-5] + '.npz')
        blk = mx.contrib.onnx.import_to_gluon(path, mx.cpu())
        z = blk(mx.nd.array(d['x'])).asnumpy()
        r = ort.InferenceSession(path, so, providers=['CPUExecutionProvider']).run(
            None, {'data': d['x']})[0]
        print('%-18s oxnet-vs-mxnet %.2e  oxnet-vs-ort %.2e  ort-vs-mxnet %.2e'
              % (name, np.abs(z - d['y']).max(), np.abs(z - r).max(), np.abs(r - d['y']).max()),
              flush=True)


if __name__ == '__main__':
    {'export': export, 'compare': compare}[sys.argv[1]](sys.argv[2])
