"""Inference fusion of hybridized graphs: Convolution + BatchNorm + residual add +
ReLU/ReLU6 run as one `_sg_oxnet_conv` op outside training, with the outputs of the
unfused network (imperative, or hybridized in training mode)."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon, nd
from oxnet.gluon import nn
from oxnet.gluon.model_zoo import vision


def _randomise_bn(net, seed=0):
    """Non-trivial BatchNorm statistics and affine parameters, so that a wrong fold shows."""
    rng = np.random.RandomState(seed)
    for name, p in net.collect_params().items():
        shape = p.shape
        if name.endswith("running_mean"):
            p.set_data(nd.array(rng.uniform(-0.5, 0.5, shape)))
        elif name.endswith("running_var"):
            p.set_data(nd.array(rng.uniform(0.5, 2.0, shape)))
        elif name.endswith("gamma"):
            p.set_data(nd.array(rng.uniform(0.5, 1.5, shape)))
        elif name.endswith("beta"):
            p.set_data(nd.array(rng.uniform(-0.5, 0.5, shape)))


def _fused_ops(net, x):
    op = net._cached_op
    assert op is not None
    arrays = [x if is_arg else v.data(x.context) for is_arg, v in net._cached_op_args]
    return list(op.fused_ops(arrays))


def _check(net, shape, seed=0, rtol=1e-4, atol=1e-4):
    net.initialize(mx.init.Xavier(), force_reinit=True)
    x = nd.array(np.random.RandomState(seed).uniform(-1, 1, shape))
    net(x)  # shapes for deferred initialisation
    _randomise_bn(net, seed)
    want = net(x).asnumpy()
    net.hybridize(static_alloc=True, static_shape=True)
    got = net(x).asnumpy()
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    return x, want


def test_conv_bn_relu_chain_is_fused_and_matches():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(16, 3, padding=1, in_channels=3), nn.BatchNorm(), nn.Activation("relu"),
            nn.Conv2D(24, 3, padding=1, use_bias=False), nn.BatchNorm(), nn.Activation("relu"))
    x, _ = _check(net, (2, 3, 12, 12))
    ops = _fused_ops(net, x)
    assert ops.count("_sg_oxnet_conv") == 2
    assert "BatchNorm" not in ops and "Activation" not in ops and "Convolution" not in ops


@pytest.mark.parametrize("model,shape", [
    ("resnet18_v1", (2, 3, 32, 32)),
    ("resnet50_v1", (1, 3, 32, 32)),
    ("mobilenetv2_0.25", (2, 3, 32, 32)),
    ("mobilenet0.25", (1, 3, 32, 32)),
    ("vgg11", (1, 3, 32, 32)),
])
def test_model_zoo_outputs_unchanged_by_fusion(model, shape):
    net = vision.get_model(model, classes=10)
    x, _ = _check(net, shape)
    ops = _fused_ops(net, x)
    assert "_sg_oxnet_conv" in ops
    assert "Convolution" not in ops or model.startswith("mobilenet")
    if model.startswith("resnet"):
        # every BatchNorm follows a convolution, every residual add feeds a ReLU
        assert "BatchNorm" not in ops and "elemwise_add" not in ops


def test_training_mode_and_gradients_use_the_unfused_graph():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(8, 3, padding=1, in_channels=3), nn.BatchNorm(in_channels=8), nn.Activation("relu"))
    net.initialize()
    _randomise_bn(net)
    x = nd.array(np.random.RandomState(1).uniform(-1, 1, (4, 3, 6, 6)))
    grads = []
    for hybrid in (False, True):
        if hybrid:
            net.hybridize()
        x.attach_grad()
        with autograd.record():
            y = net(x)
        y.backward()
        grads.append((y.asnumpy(), x.grad.asnumpy()))
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-4, atol=1e-5)
    # training mode without recording: batch statistics, as unfused
    with autograd.train_mode():
        got = net(x).asnumpy()
    np.testing.assert_allclose(got, grads[0][0], rtol=1e-4, atol=1e-5)


def test_new_statistics_take_effect_on_the_next_call():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 1, in_channels=2), nn.BatchNorm(in_channels=4))
    net.initialize()
    net.hybridize()
    x = nd.ones((1, 2, 3, 3))
    before = net(x).asnumpy()
    net[1].running_var.set_data(nd.full((4,), 4.0))
    after = net(x).asnumpy()
    np.testing.assert_allclose(after, before / 2, rtol=1e-5, atol=1e-6)


def test_value_read_twice_is_not_fused_past():
    class Two(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2D(4, 3, padding=1, in_channels=2)
            self.bn = nn.BatchNorm(in_channels=4)

        def hybrid_forward(self, F, x):
            c = self.conv(x)
            return F.relu(self.bn(c)) + c  # the convolution's output is read twice

    net = Two()
    x, _ = _check(net, (2, 2, 5, 5))
    ops = _fused_ops(net, x)
    assert "Convolution" in ops and "BatchNorm" in ops


def test_symbol_batchnorm_fix_gamma_default():
    # mx.sym.BatchNorm defaults to fix_gamma=True: gamma is taken as one.
    data = mx.sym.var("data")
    c = mx.sym.Convolution(data, num_filter=3, kernel=(3, 3), pad=(1, 1), name="c")
    b = mx.sym.BatchNorm(c, name="bn")
    out = mx.sym.clip(b, 0, 6)
    net = gluon.SymbolBlock(out, [data])
    net.initialize()
    rng = np.random.RandomState(3)
    x = nd.array(rng.uniform(-3, 3, (2, 1, 6, 6)))
    net(x)  # deferred initialisation
    params = net.collect_params()
    params["bn_gamma"].set_data(nd.array(rng.uniform(2, 3, (3,))))
    params["bn_moving_var"].set_data(nd.array(rng.uniform(0.5, 2, (3,))))
    params["bn_moving_mean"].set_data(nd.array(rng.uniform(-1, 1, (3,))))
    vals = {k: v.data() for k, v in params.items()}
    vals["data"] = x
    exe = out.bind(mx.cpu(), {k: vals[k] for k in out.list_arguments()},
                   aux_states={k: vals[k] for k in out.list_auxiliary_states()})
    want = exe.forward(is_train=False)[0].asnumpy()
    net.hybridize()
    got = net(x).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert "_sg_oxnet_conv" in _fused_ops(net, x)
