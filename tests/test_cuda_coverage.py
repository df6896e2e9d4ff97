"""Every op that the seed's LeNet and the model-zoo networks run in a training step
(forward, backward, optimizer update, accuracy) has a CUDA kernel, so none of them
takes the slow host path on a GPU. Traced on the CPU with the profiler; needs no GPU."""

import re

import pytest

import oxnet as mx
from oxnet import _core, autograd, gluon, nd


def trace_ops(fn):
    mx.profiler.set_config(profile_all=True, aggregate_stats=True, filename="/dev/null")
    mx.profiler.set_state("run")
    try:
        fn()
        nd.waitall()
    finally:
        mx.profiler.set_state("stop")
    text = mx.profiler.dumps(reset=True)
    names = set()
    in_ops = False
    for line in text.splitlines():
        if line.strip() == "operator":
            in_ops = True
            continue
        if in_ops:
            m = re.match(r"^(\S+)\s+\d+\s+[\d.]+", line)
            if m:
                names.add(m.group(1))
            elif line.strip() and not line.startswith(("=", "-", "Name")):
                in_ops = False
    return names


def lenet():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(20, 5, activation="relu"), gluon.nn.MaxPool2D(2, 2),
            gluon.nn.Conv2D(50, 5, activation="relu"), gluon.nn.MaxPool2D(2, 2), gluon.nn.Flatten(),
            gluon.nn.Dense(500, activation="relu"), gluon.nn.Dense(10))
    return net, (4, 1, 28, 28)


def zoo(name):
    return lambda: (gluon.model_zoo.vision.get_model(name, classes=10), (2, 3, 32, 32))


NETS = {"lenet": lenet, "resnet18_v1": zoo("resnet18_v1"), "resnet18_v2": zoo("resnet18_v2"),
        "mobilenet0.25": zoo("mobilenet0.25"), "mobilenetv2_0.25": zoo("mobilenetv2_0.25"),
        "vgg11_bn": zoo("vgg11_bn"), "resnet50_v1": zoo("resnet50_v1")}


def train_step(name, hybridize):
    net, shape = NETS[name]()
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    x = nd.random.uniform(shape=shape)
    y = nd.array([i % 10 for i in range(shape[0])])
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4})

    def step():
        with autograd.record():
            out = net(x)
            ls = loss(out, y)
        ls.backward()
        trainer.step(shape[0])
        acc = (nd.argmax(out, axis=1) == y).sum() / shape[0]
        acc.asscalar()
        nd.one_hot(y, 10)
    return step


def test_ops_without_cuda_are_listed_and_real():
    missing = _core.ops_without_cuda()
    assert missing == sorted(missing)
    names = {c for _, c in _core.list_ops()}
    assert set(missing) <= names


@pytest.mark.parametrize("hybridize", [False, True])
@pytest.mark.parametrize("name", sorted(NETS))
def test_training_step_needs_no_host_op(name, hybridize):
    used = trace_ops(train_step(name, hybridize))
    assert {"Convolution", "_backward_Convolution_weight"} <= used, sorted(used)
    host = sorted(used & set(_core.ops_without_cuda()))
    assert not host, "ops of %s without a CUDA kernel: %s" % (name, host)
