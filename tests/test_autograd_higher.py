"""Higher-order gradients: ``autograd.grad(..., create_graph=True)`` records the
backward pass, so its result can be differentiated again (MXNet 1.9.1's semantics:
recorded even outside ``record()``, ``retain_graph`` defaults to ``create_graph``,
an op whose gradient cannot be differentiated is an MXNetError naming it). Checked
against closed forms and against central differences of the first gradient."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd as ag
from oxnet.base import MXNetError
from oxnet.test_utils import assert_almost_equal

nd = mx.nd


def var(a, dtype="float64"):
    x = nd.array(np.asarray(a), dtype=dtype)
    x.attach_grad()
    return x


X = np.array([0.5, 1.0, 2.0])


def _sig(x):
    return 1 / (1 + np.exp(-x))


SECOND = {
    "sin": lambda x: -np.sin(x),
    "cos": lambda x: -np.cos(x),
    "log": lambda x: -1 / x ** 2,
    "exp": np.exp,
    "sigmoid": lambda x: _sig(x) * (1 - _sig(x)) * (1 - 2 * _sig(x)),
    "tanh": lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2),
    "relu": lambda x: np.zeros_like(x),
    "square": lambda x: np.full_like(x, 2.0),
    "sqrt": lambda x: -0.25 * x ** -1.5,
    "reciprocal": lambda x: 2 / x ** 3,
    "abs": lambda x: np.zeros_like(x),
    "log1p": lambda x: -1 / (1 + x) ** 2,
    "expm1": np.exp,
    "arctan": lambda x: -2 * x / (1 + x ** 2) ** 2,
}


@pytest.mark.parametrize("name", sorted(SECOND))
def test_second_derivative_of_unary_ops(name):
    x = var(X)
    with ag.record():
        y = getattr(nd, name)(x)
        g = ag.grad(y, [x], create_graph=True, retain_graph=True)[0]
    g.backward()
    assert_almost_equal(x.grad, SECOND[name](X), rtol=1e-7, atol=1e-10)


def test_third_derivative():
    x = var(X)
    with ag.record():
        y = nd.sin(x)
        g1 = ag.grad(y, [x], create_graph=True)[0]
        g2 = ag.grad(g1, [x], create_graph=True)[0]
    g2.backward()
    assert_almost_equal(g1, np.cos(X))
    assert_almost_equal(g2, -np.sin(X))
    assert_almost_equal(x.grad, -np.cos(X))


def test_create_graph_outside_record_still_records():
    # MXNet records the gradient graph whenever create_graph is set.
    x = var(X)
    with ag.record():
        y = nd.sin(x) * 3
    g = ag.grad(y, [x], create_graph=True)[0]
    assert_almost_equal(g, 3 * np.cos(X))
    g.backward()
    assert_almost_equal(x.grad, -3 * np.sin(X))


def test_retain_graph_follows_create_graph():
    x = var(X)
    with ag.record():
        y = x * x * x
    ag.grad(y, [x], create_graph=True)
    y.backward()  # the first graph was retained
    assert_almost_equal(x.grad, 3 * X ** 2)
    with ag.record():
        y = x * x
    ag.grad(y, [x])
    with pytest.raises(MXNetError, match="not in a computational graph"):
        y.backward()


rng = np.random.RandomState(7)
W = rng.uniform(-1, 1, (4, 5))
B = rng.uniform(-1, 1, (4,))
LABEL = np.array([0, 1, 2])


def _fc(x):
    w = nd.array(W.T, dtype="float64")
    return nd.FullyConnected(x * x, w, nd.array(B[:1].repeat(5), dtype="float64"), num_hidden=5)


EXPRESSIONS = {
    "broadcast_mul": lambda x: nd.broadcast_mul(x, nd.array(B, dtype="float64")) * x,
    "broadcast_div": lambda x: nd.broadcast_div(nd.array(B, dtype="float64"), x),
    "power": lambda x: nd.power(x, x),
    "pow_scalar": lambda x: x ** 3,
    "sum_axis": lambda x: nd.sum(x * x, axis=1),
    "mean_axis": lambda x: nd.mean(x ** 3, axis=0),
    "dot": lambda x: nd.dot(x * x, nd.array(W, dtype="float64")),
    "softmax": nd.softmax,
    "log_softmax": nd.log_softmax,
    "transpose": lambda x: nd.transpose(x * x),
    "reshape": lambda x: (x * x).reshape((4, 3)),
    "index": lambda x: (x * x)[1] * x[2],
    "maximum": lambda x: nd.maximum(x * x, x),
    "norm": nd.norm,
    "concat": lambda x: nd.concat(x * x, x, dim=0),
    "clip": lambda x: nd.clip(x * x, 0.5, 1.5),
    "Activation_tanh": lambda x: nd.Activation(x * x, act_type="tanh"),
    "Activation_sigmoid": lambda x: nd.Activation(x * x, act_type="sigmoid"),
    "Activation_softrelu": lambda x: nd.Activation(x * x, act_type="softrelu"),
    "Activation_softsign": lambda x: nd.Activation(x - 1, act_type="softsign") * x,
    "Activation_relu": lambda x: nd.Activation(x - 1, act_type="relu") * x,
    "FullyConnected": _fc,
    "pick_log_softmax": lambda x: nd.pick(nd.log_softmax(x * x), nd.array(LABEL, dtype="float64")),
}


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_hessian_vector_product_matches_central_differences(name):
    f = EXPRESSIONS[name]
    x0 = rng.uniform(0.6, 1.4, (3, 4))
    v = rng.uniform(-1, 1, (3, 4))
    x = var(x0)
    with ag.record():
        g = ag.grad(f(x), [x], create_graph=True)[0]
        s = (g * nd.array(v, dtype="float64")).sum()
    s.backward()

    def gv(xx):
        xa = var(xx)
        with ag.record():
            y = f(xa)
        y.backward()
        return float((xa.grad.asnumpy() * v).sum())

    eps = 1e-6
    num = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        xp, xm = x0.copy(), x0.copy()
        xp[i] += eps
        xm[i] -= eps
        num[i] = (gv(xp) - gv(xm)) / (2 * eps)
    assert_almost_equal(x.grad, num, rtol=1e-4, atol=1e-6)
    # the first gradient itself is unchanged by recording it
    assert_almost_equal(g, _first_grad(f, x0), rtol=1e-12, atol=1e-12)


def _first_grad(f, x0):
    x = var(x0)
    with ag.record():
        y = f(x)
    y.backward()
    return x.grad.asnumpy()


def test_gradient_penalty_reaches_dense_parameters():
    # WGAN-GP style: || d out / d x ||^2 differentiated w.r.t. the layer's weights.
    net = mx.gluon.nn.Dense(3, in_units=4)
    net.initialize(mx.init.Uniform(0.5))
    net.cast("float64")
    x0 = rng.uniform(-1, 1, (2, 4))
    x = var(x0)
    with ag.record():
        y = nd.tanh(net(x))
        g = ag.grad(y, [x], create_graph=True)[0]
        pen = (g * g).sum()
    pen.backward()
    w, b = net.weight.data().asnumpy(), net.bias.data().asnumpy()

    def penalty(wv):
        t = np.tanh(x0 @ wv.T + b)
        gx = (1 - t ** 2) @ wv
        return (gx ** 2).sum()

    eps = 1e-6
    num = np.zeros_like(w)
    for i in np.ndindex(w.shape):
        wp, wm = w.copy(), w.copy()
        wp[i] += eps
        wm[i] -= eps
        num[i] = (penalty(wp) - penalty(wm)) / (2 * eps)
    assert_almost_equal(net.weight.grad(), num, rtol=1e-5, atol=1e-8)


def test_op_without_second_gradient_is_named():
    x = var(rng.uniform(0.5, 1.5, (2, 3)))
    with ag.record():
        y = nd.LeakyReLU(x, act_type="elu")
        g = ag.grad(y, [x], create_graph=True)[0]
        s = (g * x).sum()
    with pytest.raises(MXNetError, match="_backward_LeakyReLU is non-differentiable"):
        s.backward()


class Cube(ag.Function):
    def forward(self, x):
        self.save_for_backward(x)
        return x * x * x

    def backward(self, dy):
        x, = self.saved_tensors
        return dy * 3 * x * x


def test_custom_function_backward_is_not_differentiable_again():
    x = var(X)
    with ag.record():
        y = Cube()(x)
        g = ag.grad(y, [x], create_graph=True)[0]
    assert_almost_equal(g, 3 * X ** 2)
    with pytest.raises(MXNetError, match="_backward_Cube is non-differentiable"):
        g.backward()
    assert_almost_equal(x.grad, np.zeros(3))  # nothing was written


def test_hybridized_block_backward_is_not_differentiable_again():
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(3, in_units=3))
    net.initialize()
    net.hybridize(inline_limit=0)  # recorded as one cached-graph node
    x = var(X.reshape(1, 3), dtype="float32")
    with ag.record():
        y = nd.sin(net(x))
        g = ag.grad(y, [x], create_graph=True)[0]
    with pytest.raises(MXNetError, match="_backward_.* is non-differentiable"):
        g.backward()


def test_inlined_hybridized_block_differentiates_twice():
    # A graph of at most inline_limit ops (2 by default) is recorded op by op, so
    # its gradient is differentiable again (MXNet 1.9.1 gives zeros here, as its
    # FullyConnected backward has no gradient).
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(3, in_units=3))
    net.initialize()
    net.hybridize()
    x = var(X.reshape(1, 3), dtype="float32")
    with ag.record():
        y = nd.sin(net(x))
        g = ag.grad(y, [x], create_graph=True)[0]
    g.backward()
    w, b = net[0].weight.data().asnumpy(), net[0].bias.data().asnumpy()
    z = X.reshape(1, 3) @ w.T + b
    assert_almost_equal(g, np.cos(z) @ w, rtol=1e-5, atol=1e-6)
    assert_almost_equal(x.grad, -(np.sin(z) * w.sum(1)) @ w, rtol=1e-4, atol=1e-6)


def test_gradient_not_depending_on_variable():
    x = var(X)
    with ag.record():
        y = x * 2
        g = ag.grad(y, [x], create_graph=True)[0]
    assert_almost_equal(g, np.full(3, 2.0))
    with pytest.raises(MXNetError):
        g.backward()
