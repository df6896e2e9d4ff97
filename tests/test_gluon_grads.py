"""Every gluon.nn layer and gluon.loss: gradients (of the inputs and of every
parameter) against central differences in float64, and the hybridized block agreeing
with the imperative one in outputs and gradients."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon, nd
from oxnet.gluon import nn

EPS = 1e-6
N_PROBES = 6


def _layers():
    R = np.random.RandomState
    img = lambda *s: R(1).randn(*s)  # noqa: E731
    return [
        ("Dense", lambda: nn.Dense(3, activation="tanh"), [img(2, 4)]),
        ("Dense_noflat", lambda: nn.Dense(3, flatten=False, use_bias=False), [img(2, 2, 4)]),
        ("Conv1D", lambda: nn.Conv1D(3, 3, padding=1, strides=2), [img(2, 2, 7)]),
        ("Conv2D", lambda: nn.Conv2D(3, (3, 2), dilation=(1, 2), activation="relu"), [img(2, 2, 6, 6)]),
        ("Conv2D_groups", lambda: nn.Conv2D(4, 3, groups=2), [img(1, 4, 5, 5)]),
        ("Conv3D", lambda: nn.Conv3D(2, 2), [img(1, 2, 3, 4, 4)]),
        ("Conv2DTranspose", lambda: nn.Conv2DTranspose(3, 3, strides=2, padding=1), [img(2, 2, 3, 3)]),
        ("MaxPool1D", lambda: nn.MaxPool1D(2), [img(2, 3, 8)]),
        ("MaxPool2D", lambda: nn.MaxPool2D(2, 2), [img(2, 3, 6, 6)]),
        ("MaxPool3D", lambda: nn.MaxPool3D(2), [img(1, 2, 4, 4, 4)]),
        ("AvgPool1D", lambda: nn.AvgPool1D(3, 1, 1), [img(2, 3, 7)]),
        ("AvgPool2D", lambda: nn.AvgPool2D(2, ceil_mode=True), [img(2, 3, 5, 5)]),
        ("AvgPool3D", lambda: nn.AvgPool3D(2), [img(1, 2, 4, 4, 4)]),
        ("GlobalMaxPool2D", lambda: nn.GlobalMaxPool2D(), [img(2, 3, 4, 4)]),
        ("GlobalAvgPool2D", lambda: nn.GlobalAvgPool2D(), [img(2, 3, 4, 4)]),
        ("Flatten", lambda: nn.Flatten(), [img(2, 3, 2, 2)]),
        ("Activation_sigmoid", lambda: nn.Activation("sigmoid"), [img(3, 4)]),
        ("Activation_softrelu", lambda: nn.Activation("softrelu"), [img(3, 4)]),
        ("Dropout_predict", lambda: nn.Dropout(0.5), [img(3, 4)]),
        ("BatchNorm", lambda: nn.BatchNorm(), [img(4, 3, 2, 2)]),
        ("LayerNorm", lambda: nn.LayerNorm(), [img(3, 5)]),
        ("InstanceNorm", lambda: nn.InstanceNorm(), [img(2, 3, 5)]),
        ("Embedding", lambda: nn.Embedding(6, 3, dtype="float64"), [np.array([[0, 2, 5], [1, 1, 3]], dtype=np.float64)]),
        ("LeakyReLU", lambda: nn.LeakyReLU(0.1), [img(3, 4)]),
        ("PReLU", lambda: nn.PReLU(mx.init.Constant(0.2)), [img(3, 4)]),
        ("ELU", lambda: nn.ELU(), [img(3, 4)]),
        ("SELU", lambda: nn.SELU(), [img(3, 4)]),
        ("Swish", lambda: nn.Swish(), [img(3, 4)]),
        ("GELU", lambda: nn.GELU(), [img(3, 4)]),
        ("HybridLambda", lambda: nn.HybridLambda(lambda F, x: F.tanh(x) * x), [img(3, 4)]),
    ]


def _losses():
    R = np.random.RandomState(2)
    p = R.randn(4, 5)
    lab = R.randint(0, 5, (4,)).astype(np.float64)
    dense = np.abs(R.randn(4, 5))
    dense /= dense.sum(1, keepdims=True)
    sign = np.where(R.rand(4, 5) > 0.5, 1.0, -1.0)
    b01 = (R.rand(4, 5) > 0.5).astype(np.float64)
    w = R.rand(4, 1)
    return [
        ("L1Loss", gluon.loss.L1Loss, {}, [p, R.randn(4, 5)]),
        ("L2Loss", gluon.loss.L2Loss, {"weight": 0.7}, [p, R.randn(4, 5), w]),
        ("SoftmaxCE_sparse", gluon.loss.SoftmaxCrossEntropyLoss, {}, [p, lab]),
        ("SoftmaxCE_dense", gluon.loss.SoftmaxCrossEntropyLoss, {"sparse_label": False}, [p, dense]),
        ("SoftmaxCE_logits", gluon.loss.SoftmaxCrossEntropyLoss, {"from_logits": True},
         [np.log(dense), lab]),
        ("SigmoidBCE", gluon.loss.SigmoidBinaryCrossEntropyLoss, {}, [p, b01, w]),
        ("SigmoidBCE_from_sigmoid", gluon.loss.SigmoidBinaryCrossEntropyLoss,
         {"from_sigmoid": True}, [1 / (1 + np.exp(-p)), b01]),
        ("KLDivLoss", gluon.loss.KLDivLoss, {"from_logits": False}, [p, dense]),
        ("HuberLoss", gluon.loss.HuberLoss, {"rho": 0.5}, [p, R.randn(4, 5)]),
        ("HingeLoss", gluon.loss.HingeLoss, {}, [p, sign]),
        ("SquaredHingeLoss", gluon.loss.SquaredHingeLoss, {}, [p, sign]),
        ("LogisticLoss", gluon.loss.LogisticLoss, {}, [p, sign]),
        ("TripletLoss", gluon.loss.TripletLoss, {}, [p, R.randn(4, 5), R.randn(4, 5)]),
        ("CosineEmbeddingLoss", gluon.loss.CosineEmbeddingLoss, {},
         [p, R.randn(4, 5), np.where(R.rand(4) > 0.5, 1.0, -1.0)]),
    ]


def _run(block, xs, head, train):
    """Output and the gradients of (inputs that want one, parameters)."""
    for x in xs:
        if x.grad is not None:
            x.grad[:] = 0
    with autograd.record(train_mode=train):
        out = block(*xs)
    out.backward(head)
    grads = [x.grad.asnumpy().copy() if x.grad is not None else None for x in xs]
    pgrads = {k: p.grad().asnumpy().copy() for k, p in block.collect_params().items()
              if p.grad_req != "null"}
    return out.asnumpy(), grads, pgrads


def _objective(block, xs, head, train):
    with autograd.train_mode() if train else autograd.predict_mode():
        return float((block(*xs).asnumpy() * head.asnumpy()).sum())


def _probe(block, arr, analytic, xs, head, train, what, rs):
    flat = arr.reshape(-1)
    idx = rs.choice(flat.size, min(N_PROBES, flat.size), replace=False)
    for i in idx:
        pos = np.unravel_index(i, arr.shape)
        v = arr[pos].asscalar()
        arr[pos] = v + EPS
        fp = _objective(block, xs, head, train)
        arr[pos] = v - EPS
        fm = _objective(block, xs, head, train)
        arr[pos] = v
        num = (fp - fm) / (2 * EPS)
        np.testing.assert_allclose(analytic[pos], num, rtol=1e-4, atol=1e-6,
                                   err_msg="%s at %s" % (what, pos))


def _check(make, arrays, grad_inputs, train):
    block = make()
    block.initialize(mx.init.Xavier())
    block.cast("float64")
    xs = [nd.array(a, dtype="float64") for a in arrays]
    block(*xs)  # finish deferred initialization
    for i in grad_inputs:
        xs[i].attach_grad()
    rs = np.random.RandomState(0)
    head = nd.array(rs.randn(*block(*xs).shape), dtype="float64")
    out, grads, pgrads = _run(block, xs, head, train)
    for i in grad_inputs:
        _probe(block, xs[i], grads[i], xs, head, train, "input %d" % i, rs)
    for k, p in block.collect_params().items():
        if p.grad_req != "null":
            _probe(block, p.data(), pgrads[k], xs, head, train, k, rs)
    block.hybridize()
    out_h, grads_h, pgrads_h = _run(block, xs, head, train)
    np.testing.assert_allclose(out_h, out, rtol=1e-10, atol=1e-12)
    for i in grad_inputs:
        np.testing.assert_allclose(grads_h[i], grads[i], rtol=1e-10, atol=1e-12)
    for k in pgrads:
        np.testing.assert_allclose(pgrads_h[k], pgrads[k], rtol=1e-10, atol=1e-12, err_msg=k)
    assert block._cached_op is not None


@pytest.mark.parametrize("name,make,arrays", _layers(), ids=[c[0] for c in _layers()])
def test_layer_gradients_numeric_and_hybridized(name, make, arrays):
    grad_inputs = [] if name == "Embedding" else [0]
    train = name in ("BatchNorm",)
    _check(make, arrays, grad_inputs, train)


@pytest.mark.parametrize("name,cls,kw,arrays", _losses(), ids=[c[0] for c in _losses()])
def test_loss_gradients_numeric_and_hybridized(name, cls, kw, arrays):
    grad_inputs = [0, 1, 2] if name == "TripletLoss" else [0]
    if name == "CosineEmbeddingLoss":
        grad_inputs = [0, 1]
    _check(lambda: cls(**kw), arrays, grad_inputs, False)
