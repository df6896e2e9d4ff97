"""mx.autograd: MXNet 1.9.1's semantics (scopes, grad_req, retain_graph, head
gradients, reuse, Function, errors) and a float64 central-difference check of the
gradient of every op that has one."""

import json

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd as ag
from oxnet.base import MXNetError
from oxnet.test_utils import (assert_almost_equal, check_numeric_gradient, numeric_grad,
                              rand_shape_2d, rand_shape_3d, rand_shape_nd)

nd = mx.nd


def var(a, dtype="float64", grad_req="write"):
    x = nd.array(np.asarray(a), dtype=dtype)
    x.attach_grad(grad_req)
    return x


# ---------------------------------------------------------------------------
# Scopes and flags


def test_flags_and_nested_scopes():
    assert not ag.is_recording() and not ag.is_training()
    with ag.record():
        assert ag.is_recording() and ag.is_training()
        with ag.pause():
            assert not ag.is_recording() and not ag.is_training()
            with ag.record(train_mode=False):
                assert ag.is_recording() and not ag.is_training()
            assert not ag.is_recording()
        with ag.predict_mode():
            assert ag.is_recording() and not ag.is_training()
        with ag.pause(train_mode=True):
            assert not ag.is_recording() and ag.is_training()
        assert ag.is_recording() and ag.is_training()
    assert not ag.is_recording() and not ag.is_training()
    with ag.train_mode():
        assert ag.is_training() and not ag.is_recording()
    assert not ag.is_training()


def test_set_flags_return_previous():
    assert ag.set_recording(True) is False
    assert ag.set_recording(False) is True
    assert ag.set_training(True) is False
    assert ag.set_training(False) is True


def test_scope_restores_after_exception():
    with pytest.raises(ValueError):
        with ag.record():
            raise ValueError("boom")
    assert not ag.is_recording() and not ag.is_training()


# ---------------------------------------------------------------------------
# Gradients and grad_req


def test_attach_grad_zero_buffer():
    x = nd.array([1.0, 2.0, 3.0])
    assert x.grad is None
    x.attach_grad()
    assert x.grad.dtype == np.float32
    assert_almost_equal(x.grad, np.zeros(3))
    assert x._fresh_grad is False


def test_chain_rule_and_fresh_grad():
    x = var([1.0, 2.0, 3.0])
    with ag.record():
        y = x * 2
        z = (y * y).sum()
    z.backward()
    assert_almost_equal(x.grad, 8 * np.array([1.0, 2.0, 3.0]))
    assert x._fresh_grad is True
    x._fresh_grad = False
    assert x._fresh_grad is False


def test_grad_req_write_overwrites_and_add_accumulates():
    x = var([1.0, 2.0, 3.0])
    w = var([1.0, 2.0, 3.0], grad_req="add")
    for _ in range(3):
        with ag.record():
            y = x * x
            v = w * w
        y.backward()
        v.backward()
    assert_almost_equal(x.grad, [2.0, 4.0, 6.0])
    assert_almost_equal(w.grad, [6.0, 12.0, 18.0])


def test_grad_req_null_only_is_error():
    x = var([1.0, 2.0], grad_req="null")
    with ag.record():
        y = x * 2
    with pytest.raises(MXNetError, match="no inputs in computation graph that require gradients"):
        y.backward()


def test_bad_grad_req():
    x = nd.array([1.0])
    with pytest.raises(MXNetError, match="grad_req"):
        x.attach_grad("sometimes")
    assert x.grad is None


def test_array_used_twice_sums_gradients():
    x = var([1.0, -2.0, 3.0])
    with ag.record():
        y = x * x + x * 3 + nd.exp(x)
    y.backward()
    xv = np.array([1.0, -2.0, 3.0])
    assert_almost_equal(x.grad, 2 * xv + 3 + np.exp(xv), rtol=1e-12)


def test_inputs_without_grad_are_constants():
    x = var([1.0, 2.0])
    c = nd.array([5.0, 7.0], dtype="float64")
    with ag.record():
        y = x * c + c
    y.backward()
    assert_almost_equal(x.grad, [5.0, 7.0])
    assert c.grad is None


def test_head_grads_and_multiple_heads():
    x = var([1.0, 2.0, 3.0])
    with ag.record():
        y = x * 2
        z = x * 3
    ag.backward([y, z], [nd.ones(3, dtype="float64"), nd.ones(3, dtype="float64") * 2])
    assert_almost_equal(x.grad, [8.0, 8.0, 8.0])
    with ag.record():
        y = x * x
    y.backward(nd.array([1.0, 10.0, 100.0], dtype="float64"))
    assert_almost_equal(x.grad, [2.0, 40.0, 600.0])


def test_head_grad_shape_mismatch():
    x = var([1.0, 2.0, 3.0])
    with ag.record():
        y = x * 2
    with pytest.raises(MXNetError, match="head gradient 0 has shape"):
        ag.backward(y, nd.ones(2, dtype="float64"))
    assert_almost_equal(x.grad, np.zeros(3))
    # a bigger one is read as MXNet reads it: its first elements
    ag.backward(y, nd.array([1.0, 2.0, 3.0, 4.0], dtype="float64"))
    assert_almost_equal(x.grad, np.array([2.0, 4.0, 6.0]))
    with pytest.raises(MXNetError, match="same length"):
        ag.backward([y], [nd.ones(3), nd.ones(3)])


def test_retain_graph_and_second_backward():
    x = var([1.0, 2.0, 3.0])
    with ag.record():
        y = x * 2
    y.backward(retain_graph=True)
    y.backward()
    assert_almost_equal(x.grad, [2.0, 2.0, 2.0])
    with pytest.raises(MXNetError, match="retain_graph=True"):
        y.backward()


def test_backward_outside_graph_is_error():
    x = nd.array([1.0, 2.0])
    y = x * 2
    with pytest.raises(MXNetError, match="not in a computational graph"):
        y.backward()
    # recorded, but no input needs a gradient
    with ag.record():
        z = x * 2
    with pytest.raises(MXNetError, match="not in a computational graph"):
        z.backward()
    # attached, but the op ran outside record()
    w = var([1.0])
    v = w * 2
    with pytest.raises(MXNetError, match="not in a computational graph"):
        v.backward()


def test_op_without_gradient_names_op():
    x = var([[1.0, 5.0, 2.0]])
    with ag.record():
        y = nd.argmax_channel(x)
    with pytest.raises(MXNetError, match="Operator argmax_channel is non-differentiable"):
        y.backward()
    assert_almost_equal(x.grad, np.zeros((1, 3)))


def test_zero_gradient_ops():
    x = var([1.5, -2.5, 3.0])
    with ag.record():
        y = nd.floor(x) + nd.sign(x) + (x > 1) + nd.round(x) + nd.argmax(x, axis=0)
    y.backward()
    assert_almost_equal(x.grad, np.zeros(3))


def test_detach_stops_gradient():
    x = var([1.0, 2.0, 3.0])
    with ag.record():
        y = x * 2
        d = y.detach()
        z = d * x
    z.backward()
    assert_almost_equal(x.grad, [2.0, 4.0, 6.0])
    assert d.grad is None


def test_inplace_on_graph_arrays_while_recording():
    x = var([1.0, 2.0, 3.0])
    with ag.record():
        with pytest.raises(MXNetError, match="already in a computational graph"):
            x += 1
        y = x * 2
        with pytest.raises(MXNetError, match="already in a computational graph"):
            y += 1
        with pytest.raises(MXNetError, match="already in a computational graph"):
            x[:] = 5
        with pytest.raises(MXNetError, match="already in a computational graph"):
            nd.relu(y, out=y)
    assert_almost_equal(x, [1.0, 2.0, 3.0])
    assert_almost_equal(y, [2.0, 4.0, 6.0])
    y.backward()
    assert_almost_equal(x.grad, [2.0, 2.0, 2.0])
    # after backward the op outputs are out of the graph; variables stay in it
    with ag.record():
        y += 1
        with pytest.raises(MXNetError, match="already in a computational graph"):
            x += 1
    assert_almost_equal(y, [3.0, 5.0, 7.0])
    # outside record() in-place updates of variables are fine (optimizers)
    x -= x.grad
    assert_almost_equal(x, [-1.0, 0.0, 1.0])


def test_inplace_on_non_graph_array_while_recording():
    x = var([1.0, 2.0])
    with ag.record():
        t = nd.zeros(2, dtype="float64")
        t += x
        z = t * 3
    z.backward()
    assert_almost_equal(x.grad, [3.0, 3.0])


def test_views_are_recorded():
    # As in MXNet 1.9.1: reshape, x[i], x[a:b] and basic slicing are recorded
    # (the views share memory and carry a tape entry).
    x = var([[1.0, 2.0, 3.0]])
    with ag.record():
        y = x.reshape((3,))
        z = x[0]
        w = x[:, 1:]
        q = x[0, 1]
        yy = y * y
    outside = y * y  # not recorded: no graph
    yy.backward()
    assert_almost_equal(x.grad, [[2.0, 4.0, 6.0]])
    z.backward()
    assert_almost_equal(x.grad, [[1.0, 1.0, 1.0]])
    w.backward()
    assert_almost_equal(x.grad, [[0.0, 1.0, 1.0]])
    q.backward()
    assert_almost_equal(x.grad, [[0.0, 1.0, 0.0]])
    with pytest.raises(MXNetError, match="not in a computational graph"):
        outside.backward()
    with ag.record():
        v = x.reshape((3,))
    assert v._same_chunk(x)  # still a view
    x2 = nd.array([[1.0, 2.0]])
    with ag.record():
        u = x2.reshape((2,))  # not in a graph: nothing recorded
    with pytest.raises(MXNetError, match="not in a computational graph"):
        u.backward()


def test_grad_function():
    x = var([1.0, 2.0, 3.0])
    with ag.record():
        y = x * x
    g = ag.grad(y, x, retain_graph=True)
    assert isinstance(g, list) and len(g) == 1
    assert_almost_equal(g[0], [2.0, 4.0, 6.0])
    assert_almost_equal(x.grad, np.zeros(3))
    g2 = ag.grad([y], [x], head_grads=[nd.array([1.0, 0.0, 2.0], dtype="float64")])
    assert_almost_equal(g2[0], [2.0, 0.0, 12.0])
    with pytest.raises(MXNetError, match="retain_graph"):
        ag.grad(y, x)


def test_grad_of_unmarked_variable():
    x = var([1.0, 2.0])
    c = nd.array([1.0, 2.0])
    with ag.record():
        y = x * 2
    with pytest.raises(MXNetError, match="variable 0 is not marked"):
        ag.grad(y, [c])


def test_mark_variables():
    x = nd.array([1.0, 2.0], dtype="float64")
    g = nd.zeros(2, dtype="float64")
    ag.mark_variables([x], [g], grad_reqs="add")
    for _ in range(2):
        with ag.record():
            y = x * 5
        y.backward()
    assert_almost_equal(g, [10.0, 10.0])
    with pytest.raises(MXNetError, match="gradient buffer of shape"):
        ag.mark_variables(x, nd.zeros(3))
    with pytest.raises(MXNetError, match="2 variables, 1 gradients"):
        ag.mark_variables([x, x], [g])


def test_train_mode_flag_reaches_backward():
    x = var([1.0])
    seen = []

    class Probe(ag.Function):
        def forward(self, a):
            return a * 1

        def backward(self, dy):
            seen.append(ag.is_training())
            return dy

    for mode in (True, False):
        with ag.record():
            y = Probe()(x)
        y.backward(train_mode=mode)
    assert seen == [True, False]


def test_variable_as_head():
    x = var([1.0, 2.0])
    x.backward()
    assert_almost_equal(x.grad, [1.0, 1.0])


def test_float32_variable():
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with ag.record():
        y = nd.sigmoid(x).sum()
    y.backward()
    s = 1 / (1 + np.exp(-np.array([1.0, 2.0])))
    assert x.grad.dtype == np.float32
    assert_almost_equal(x.grad, s * (1 - s), rtol=1e-6)


# ---------------------------------------------------------------------------
# Function


class Sigmoid(ag.Function):
    def forward(self, x):
        y = 1 / (1 + nd.exp(-x))
        self.save_for_backward(y)
        return y

    def backward(self, dy):
        y, = self.saved_tensors
        return dy * y * (1 - y)


def test_function_custom_backward():
    xv = np.array([-1.0, 0.5, 2.0])
    x = var(xv)
    with ag.record():
        y = Sigmoid()(x)
        z = (y * 3).sum()
    z.backward()
    s = 1 / (1 + np.exp(-xv))
    assert_almost_equal(x.grad, 3 * s * (1 - s), rtol=1e-12)


def test_function_multiple_inputs_outputs():
    class MulAdd(ag.Function):
        def forward(self, a, b):
            self.save_for_backward(a, b)
            return a * b, a + b

        def backward(self, g1, g2):
            a, b = self.saved_tensors
            return g1 * b + g2, g1 * a + g2

    a, b = var([1.0, 2.0]), var([3.0, 4.0])
    with ag.record():
        p, s = MulAdd()(a, b)
        out = p * 2 + s
    out.backward()
    assert_almost_equal(a.grad, 2 * np.array([3.0, 4.0]) + 1)
    assert_almost_equal(b.grad, 2 * np.array([1.0, 2.0]) + 1)


def test_function_errors():
    class Bad(ag.Function):
        def forward(self, a):
            return a * 2

        def backward(self, dy):
            return dy, dy

    x = var([1.0])
    with ag.record():
        y = Bad()(x)
    with pytest.raises(MXNetError, match="Bad.backward must return exactly"):
        y.backward()

    class Raises(ag.Function):
        def forward(self, a):
            return a * 2

        def backward(self, dy):
            raise RuntimeError("custom failure")

    with ag.record():
        y = Raises()(x)
    with pytest.raises(MXNetError, match="custom failure"):
        y.backward()
    f = Sigmoid()
    with ag.record():
        f(x)
    with pytest.raises(AssertionError, match="only be called once"):
        f(x)


def test_function_outside_record_is_plain():
    x = var([0.0])
    y = Sigmoid()(x)
    assert_almost_equal(y, [0.5])
    with pytest.raises(MXNetError, match="not in a computational graph"):
        y.backward()


# ---------------------------------------------------------------------------
# test_utils


def test_numeric_grad_core():
    g = numeric_grad(lambda loc: [loc[0] ** 3], [np.array([1.0, 2.0])], eps=1e-6,
                     dtype=np.float64)
    assert_almost_equal(g[0], [3.0, 12.0], rtol=1e-6)


def test_rand_shapes():
    assert len(rand_shape_2d()) == 2 and len(rand_shape_3d()) == 3
    s = rand_shape_nd(4, dim=3)
    assert len(s) == 4 and all(1 <= d <= 3 for d in s)


def test_check_numeric_gradient_detects_wrong_gradient():
    class Wrong(ag.Function):
        def forward(self, a):
            return a * a

        def backward(self, dy):
            return dy * 3

    with pytest.raises(AssertionError):
        check_numeric_gradient(lambda a: Wrong()(a), [np.array([1.0, 2.0])])


# ---------------------------------------------------------------------------
# Numerical checks of every op's gradient (float64 central differences)

R = np.random.RandomState(0)


def rn(*shape):
    return R.uniform(-1.0, 1.0, size=shape)


def pos(*shape):
    return R.uniform(0.5, 2.0, size=shape)


def unit(*shape):
    return R.uniform(-0.8, 0.8, size=shape)


def away(*shape):
    """Values at least 0.1 from zero."""
    v = R.uniform(0.1, 1.0, size=shape)
    return v * np.where(R.rand(*shape) < 0.5, -1, 1)


CASES = {
    # binary, same shape and broadcast
    "elemwise_add": (lambda a, b: nd.elemwise_add(a, b), [rn(2, 3), rn(2, 3)]),
    "elemwise_sub": (lambda a, b: nd.elemwise_sub(a, b), [rn(2, 3), rn(2, 3)]),
    "elemwise_mul": (lambda a, b: nd.elemwise_mul(a, b), [rn(2, 3), rn(2, 3)]),
    "elemwise_div": (lambda a, b: nd.elemwise_div(a, b), [rn(2, 3), pos(2, 3)]),
    "broadcast_add": (lambda a, b: nd.broadcast_add(a, b), [rn(2, 3), rn(1, 3)]),
    "broadcast_sub": (lambda a, b: nd.broadcast_sub(a, b), [rn(2, 1, 4), rn(3, 1)]),
    "broadcast_mul": (lambda a, b: nd.broadcast_mul(a, b), [rn(2, 3, 1), rn(1, 4)]),
    "broadcast_div": (lambda a, b: nd.broadcast_div(a, b), [rn(2, 3), pos(2, 1)]),
    "broadcast_power": (lambda a, b: nd.broadcast_power(a, b), [pos(2, 3), rn(3)]),
    "_power": (lambda a, b: a ** b, [pos(2, 3), rn(2, 3)]),
    "broadcast_maximum": (lambda a, b: nd.broadcast_maximum(a, b), [rn(2, 3), rn(1, 3)]),
    "broadcast_minimum": (lambda a, b: nd.broadcast_minimum(a, b), [rn(2, 3), rn(2, 1)]),
    "_maximum": (lambda a, b: nd.maximum(a, b), [rn(2, 3), rn(2, 3)]),
    "_minimum": (lambda a, b: nd.minimum(a, b), [rn(2, 3), rn(2, 3)]),
    "broadcast_mod": (lambda a, b: nd.broadcast_mod(a, b), [rn(2, 3) * 3, pos(1, 3)]),
    "broadcast_hypot": (lambda a, b: nd.broadcast_hypot(a, b), [away(2, 3), away(1, 3)]),
    "arith_ops": (lambda a, b: (a + b) * (a - b) / (b * b + 1), [rn(3, 2), rn(3, 2)]),
    # scalar
    "_plus_scalar": (lambda a: a + 2, [rn(4)]),
    "_minus_scalar": (lambda a: a - 2, [rn(4)]),
    "_rminus_scalar": (lambda a: 2 - a, [rn(4)]),
    "_mul_scalar": (lambda a: a * 3, [rn(4)]),
    "_div_scalar": (lambda a: a / 3, [rn(4)]),
    "_rdiv_scalar": (lambda a: 3 / a, [pos(4)]),
    "_power_scalar": (lambda a: a ** 2.5, [pos(4)]),
    "_rpower_scalar": (lambda a: 2.0 ** a, [rn(4)]),
    "_mod_scalar": (lambda a: a % 1.7, [pos(4)]),
    "_rmod_scalar": (lambda a: 5 % a, [R.uniform(1.1, 1.6, size=4)]),
    "_maximum_scalar": (lambda a: nd.maximum(a, 0.05), [away(5)]),
    "_minimum_scalar": (lambda a: nd.minimum(a, 0.05), [away(5)]),
    "_hypot_scalar": (lambda a: nd._internal._hypot_scalar(a, scalar=2.0), [rn(4)]),
    "clip": (lambda a: nd.clip(a, -0.5, 0.5), [np.array([-0.9, -0.3, 0.1, 0.45, 0.8])]),
    # unary
    "negative": (lambda a: -a, [rn(3)]),
    "abs": (nd.abs, [away(4)]),
    "sqrt": (nd.sqrt, [pos(4)]),
    "rsqrt": (nd.rsqrt, [pos(4)]),
    "cbrt": (nd.cbrt, [pos(4)]),
    "rcbrt": (nd.rcbrt, [pos(4)]),
    "square": (nd.square, [rn(4)]),
    "reciprocal": (nd.reciprocal, [pos(4)]),
    "exp": (nd.exp, [rn(4)]),
    "expm1": (nd.expm1, [rn(4)]),
    "log": (nd.log, [pos(4)]),
    "log10": (nd.log10, [pos(4)]),
    "log2": (nd.log2, [pos(4)]),
    "log1p": (nd.log1p, [pos(4)]),
    "sin": (nd.sin, [rn(4)]),
    "cos": (nd.cos, [rn(4)]),
    "tan": (nd.tan, [unit(4)]),
    "arcsin": (nd.arcsin, [unit(4)]),
    "arccos": (nd.arccos, [unit(4)]),
    "arctan": (nd.arctan, [rn(4)]),
    "sinh": (nd.sinh, [rn(4)]),
    "cosh": (nd.cosh, [rn(4)]),
    "tanh": (nd.tanh, [rn(4)]),
    "arcsinh": (nd.arcsinh, [rn(4)]),
    "arccosh": (nd.arccosh, [R.uniform(1.5, 3.0, size=4)]),
    "arctanh": (nd.arctanh, [unit(4)]),
    "degrees": (nd.degrees, [rn(4)]),
    "radians": (nd.radians, [rn(4)]),
    "sigmoid": (nd.sigmoid, [rn(4)]),
    "relu": (nd.relu, [away(6)]),
    "softsign": (nd.softsign, [rn(4)]),
    # reductions
    "sum": (lambda a: nd.sum(a, axis=1), [rn(2, 3, 2)]),
    "sum_all": (lambda a: nd.sum(a), [rn(2, 3)]),
    "sum_exclude_keepdims": (lambda a: nd.sum(a, axis=(0, 2), exclude=True, keepdims=True), [rn(2, 3, 2)]),
    "mean": (lambda a: nd.mean(a, axis=(0, -1)), [rn(2, 3, 2)]),
    "nansum": (lambda a: nd.nansum(a, axis=0), [rn(3, 2)]),
    "prod": (lambda a: nd.prod(a, axis=1, keepdims=True), [away(2, 3)]),
    "nanprod": (lambda a: nd.nanprod(a), [away(2, 3)]),
    "max": (lambda a: nd.max(a, axis=1), [rn(3, 4)]),
    "min": (lambda a: nd.min(a, axis=0), [rn(3, 4)]),
    "norm": (lambda a: nd.norm(a), [rn(2, 3)]),
    "norm_axis": (lambda a: nd.norm(a, axis=1, keepdims=True), [rn(2, 3)]),
    "norm_ord1": (lambda a: nd.norm(a, ord=1, axis=0), [away(2, 3)]),
    # shape
    "Reshape": (lambda a: nd.reshape(a, shape=(3, -1)), [rn(2, 3)]),
    "Flatten": (lambda a: nd.flatten(a), [rn(2, 3, 2)]),
    "expand_dims": (lambda a: nd.expand_dims(a, axis=1), [rn(2, 3)]),
    "squeeze": (lambda a: nd.squeeze(a), [rn(2, 1, 3)]),
    "reshape_like": (lambda a, b: nd.reshape_like(a, b), [rn(2, 3), rn(3, 2)]),
    "transpose": (lambda a: nd.transpose(a, axes=(1, 2, 0)), [rn(2, 3, 4)]),
    "transpose_default": (lambda a: nd.transpose(a), [rn(2, 3)]),
    "SwapAxis": (lambda a: nd.swapaxes(a, dim1=0, dim2=2), [rn(2, 3, 4)]),
    "Concat": (lambda a, b: nd.concat(a, b, dim=1), [rn(2, 3), rn(2, 1)]),
    "stack": (lambda a, b: nd.stack(a, b, axis=1), [rn(2, 3), rn(2, 3)]),
    "SliceChannel": (lambda a: nd.split(a, num_outputs=3, axis=1), [rn(2, 3, 2)]),
    "SliceChannel_squeeze": (lambda a: nd.split(a, num_outputs=2, axis=0, squeeze_axis=True), [rn(2, 3)]),
    "slice": (lambda a: nd.slice(a, begin=(0, 1), end=(2, None), step=(1, 2)), [rn(3, 5)]),
    "slice_neg_step": (lambda a: nd.slice(a, begin=(None, 4), end=(None, 0), step=(1, -2)), [rn(2, 5)]),
    "slice_axis": (lambda a: nd.slice_axis(a, axis=1, begin=1, end=-1), [rn(2, 4)]),
    "tile": (lambda a: nd.tile(a, reps=(2, 1, 3)), [rn(2, 3)]),
    "repeat": (lambda a: nd.repeat(a, repeats=2, axis=1), [rn(2, 3)]),
    "repeat_flat": (lambda a: nd.repeat(a, repeats=3), [rn(2, 2)]),
    "reverse": (lambda a: nd.reverse(a, axis=1), [rn(2, 3)]),
    "broadcast_to": (lambda a: nd.broadcast_to(a, shape=(2, 3, 4)), [rn(1, 3, 1)]),
    "broadcast_axis": (lambda a: nd.broadcast_axis(a, axis=(0, 2), size=(2, 3)), [rn(1, 2, 1)]),
    "broadcast_like": (lambda a, b: nd.broadcast_like(a, b), [rn(1, 3), rn(4, 3)]),
    "where": (lambda x, y: nd.where(nd.array([[1, 0, 1], [0, 0, 1]], dtype="float64"), x, y), [rn(2, 3), rn(2, 3)]),
    "where_1d_cond": (lambda x, y: nd.where(nd.array([0, 1], dtype="float64"), x, y), [rn(2, 3), rn(2, 3)]),
    "_copy": (lambda a: nd.identity(a) * 2, [rn(3)]),
    "copy_method": (lambda a: a.copy() * 2, [rn(3)]),
    # indexing
    "take": (lambda a: nd.take(a, nd.array([2, 0, 2, 1]), axis=0), [rn(3, 2)]),
    "take_axis1_clip": (lambda a: nd.take(a, nd.array([[0, 5], [-1, 1]]), axis=1), [rn(2, 3, 2)]),
    "take_wrap": (lambda a: nd.take(a, nd.array([4, -1]), axis=0, mode="wrap"), [rn(3, 2)]),
    "pick": (lambda a: nd.pick(a, nd.array([0, 2, 1]), axis=1), [rn(3, 3)]),
    "pick_axis0_keepdims": (lambda a: nd.pick(a, nd.array([1, 0, 1, 1]), axis=0, keepdims=True), [rn(2, 4)]),
    # softmax
    "softmax": (lambda a: nd.softmax(a), [rn(2, 4)]),
    "softmax_axis0_temp": (lambda a: nd.softmax(a, axis=0, temperature=2.0), [rn(3, 2)]),
    "log_softmax": (lambda a: nd.log_softmax(a, axis=1), [rn(2, 4)]),
    "softmin": (lambda a: nd.softmin(a, temperature=0.5), [rn(2, 3)]),
    # linalg
    "dot": (lambda a, b: nd.dot(a, b), [rn(2, 3), rn(3, 4)]),
    "dot_ta": (lambda a, b: nd.dot(a, b, transpose_a=True), [rn(3, 2), rn(3, 4)]),
    "dot_tb": (lambda a, b: nd.dot(a, b, transpose_b=True), [rn(2, 3), rn(4, 3)]),
    "dot_tatb": (lambda a, b: nd.dot(a, b, transpose_a=True, transpose_b=True), [rn(3, 2), rn(4, 3)]),
    "dot_nd": (lambda a, b: nd.dot(a, b), [rn(2, 2, 3), rn(3, 2, 2)]),
    "dot_vec": (lambda a, b: nd.dot(a, b), [rn(3), rn(3)]),
    "batch_dot": (lambda a, b: nd.batch_dot(a, b), [rn(2, 2, 3), rn(2, 3, 4)]),
    "batch_dot_ta": (lambda a, b: nd.batch_dot(a, b, transpose_a=True), [rn(2, 3, 2), rn(2, 3, 4)]),
    "batch_dot_tb": (lambda a, b: nd.batch_dot(a, b, transpose_b=True), [rn(2, 2, 3), rn(2, 4, 3)]),
    "batch_dot_tatb": (lambda a, b: nd.batch_dot(a, b, transpose_a=True, transpose_b=True), [rn(2, 3, 2), rn(2, 4, 3)]),
    "_linalg_gemm2": (lambda a, b: nd.linalg.gemm2(a, b, alpha=1.5), [rn(2, 3), rn(3, 4)]),
    "_linalg_gemm2_batch_t": (lambda a, b: nd.linalg.gemm2(a, b, transpose_a=True, transpose_b=True),
                              [rn(2, 3, 2), rn(2, 4, 3)]),
    "_linalg_gemm": (lambda a, b, c: nd.linalg.gemm(a, b, c, alpha=0.5, beta=2.0),
                     [rn(2, 3), rn(3, 4), rn(2, 4)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_numeric_gradient(name):
    fn, location = CASES[name]
    check_numeric_gradient(fn, location, rtol=1e-5, atol=1e-7, dtype=np.float64)


def test_gemm2_gradient_with_row_axis_0():
    an, bn = rn(3, 2, 4), rn(4, 2, 5)
    a, b = var(an), var(bn)
    with ag.record():
        y = nd.linalg.gemm2(a, b, axis=0)
    assert y.shape == (3, 2, 5)
    np.testing.assert_allclose(y.asnumpy(), np.einsum("ijk,kjl->ijl", an, bn), rtol=1e-5)
    head = rn(3, 2, 5)
    y.backward(nd.array(head, dtype=y.dtype))
    np.testing.assert_allclose(a.grad.asnumpy(), np.einsum("ijl,kjl->ijk", head, bn), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b.grad.asnumpy(), np.einsum("ijk,ijl->kjl", an, head), rtol=1e-5, atol=1e-6)


def test_cast_gradient_returns_to_input_dtype():
    x = var([1.0, 2.0])
    with ag.record():
        y = nd.cast(x, dtype="float32") * 3
    assert y.dtype == np.float32
    y.backward()
    assert x.grad.dtype == np.float64
    assert_almost_equal(x.grad, [3.0, 3.0])


def test_take_gradient_accumulates_duplicates():
    a = var(np.zeros((3, 2)))
    with ag.record():
        y = nd.take(a, nd.array([1, 1, 1, 0]))
    y.backward()
    assert_almost_equal(a.grad, [[1, 1], [3, 3], [0, 0]])


def test_max_gradient_goes_to_every_tie():
    a = var([[1.0, 3.0, 3.0]])
    with ag.record():
        y = nd.max(a, axis=1)
    y.backward()
    assert_almost_equal(a.grad, [[0.0, 1.0, 1.0]])


def test_gradient_on_deep_chain():
    # a long graph exercises the iterative topological sort
    x = var([0.5])
    with ag.record():
        y = x
        for _ in range(3000):
            y = y * 1.0001
    y.backward()
    assert_almost_equal(x.grad, [1.0001 ** 3000], rtol=1e-9)


# ---- get_symbol ------------------------------------------------------------------------

def test_get_symbol_gives_mxnets_graph_and_names():
    """Nodes, names and attributes as MXNet 1.9.1's get_symbol gives them for this
    program (checked with the oracle), and the symbol computes the recorded value."""
    x, w = nd.array(np.arange(6).reshape(2, 3) / 6), nd.array(np.arange(12).reshape(4, 3) / 12)
    x.attach_grad()
    w.attach_grad()
    with ag.record():
        y = nd.FullyConnected(x, w, no_bias=True, num_hidden=4)
        z = nd.relu(y) * 2 + x.sum()
    s = ag.get_symbol(z)
    assert isinstance(s, mx.sym.Symbol)
    assert s.list_arguments() == ["var0", "var1"]
    assert s.list_outputs() == ["node_4_output"]
    nodes = json.loads(s.tojson())["nodes"]
    assert [(n["op"], n["name"], n.get("attrs"), n["inputs"]) for n in nodes] == [
        ("null", "var0", None, []),
        ("null", "var1", None, []),
        ("FullyConnected", "node_0", {"no_bias": "True", "num_hidden": "4"}, [[0, 0, 0], [1, 0, 0]]),
        ("relu", "node_1", None, [[2, 0, 0]]),
        ("_mul_scalar", "node_2", {"scalar": "2.0"}, [[3, 0, 0]]),
        ("sum", "node_3", None, [[0, 0, 0]]),
        ("broadcast_add", "node_4", None, [[4, 0, 0], [5, 0, 0]]),
    ]
    assert s.infer_shape(var0=(2, 3), var1=(4, 3))[1] == [(2, 4)]
    out = s.bind(mx.cpu(), {"var0": x, "var1": w}).forward()[0]
    assert_almost_equal(out.asnumpy(), z.asnumpy())


def test_get_symbol_constants_and_multi_output_ops():
    """Inputs recorded without a graph become variables named after the attached ones
    (MXNet: var0, var1, then null2, null3); an output index of a multi-output op is
    kept; the history of an attached variable alone is that variable."""
    x, c = nd.array([1.0, 2.0]), nd.array([10.0, 20.0])
    w, d = nd.array([3.0, 4.0]), nd.array([5.0, 6.0])
    x.attach_grad()
    w.attach_grad()
    with ag.record():
        z = ((x * c) + w) * d + c
        q = nd.relu(z)
    s = ag.get_symbol(q)
    assert s.list_arguments() == ["var0", "null2", "var1", "null3"]
    assert s.list_outputs() == ["node_4_output"]
    out = s.bind(mx.cpu(), {"var0": x, "null2": c, "var1": w, "null3": d}).forward()[0]
    assert_almost_equal(out.asnumpy(), q.asnumpy())

    m = nd.array([[1.0, 2.0], [3.0, 4.0]])
    m.attach_grad()
    with ag.record():
        a, b = nd.split(m * c, num_outputs=2, axis=0)
        r = b - a
    s = ag.get_symbol(r)
    nodes = json.loads(s.tojson())["nodes"]
    assert nodes[3]["op"] == "SliceChannel" and nodes[3]["attrs"] == {"axis": "0", "num_outputs": "2"}
    assert nodes[4]["inputs"] == [[3, 1, 0], [3, 0, 0]]
    assert_almost_equal(s.bind(mx.cpu(), {"var0": m, "null1": c}).forward()[0].asnumpy(), r.asnumpy())
    assert ag.get_symbol(m).list_arguments() == ["var0"]


def test_get_symbol_errors():
    x = nd.array([1.0, 2.0])
    with pytest.raises(MXNetError, match="not part of a computation graph"):
        ag.get_symbol(x)
    x.attach_grad()
    with ag.record():
        z = x * 2
    z.backward()  # frees the graph, as in MXNet
    with pytest.raises(MXNetError, match="not part of a computation graph"):
        ag.get_symbol(z)
    with ag.record():
        z = x * 2
    z.backward(retain_graph=True)
    assert ag.get_symbol(z).list_arguments() == ["var0"]
    with ag.record():
        y = Sigmoid()(x)
    with pytest.raises(MXNetError, match="autograd.Function"):
        ag.get_symbol(y)
    np.testing.assert_array_equal(x.asnumpy(), [1.0, 2.0])


def test_relu_gradient_at_nan_and_inf():
    # As MXNet 1.9.1: nd.relu's gradient is NaN where its input is NaN (so a NaN is not
    # silently hidden from the optimizer), 1 at +inf, 0 at -inf and 0; Activation's relu
    # gives 0 at NaN.
    x = nd.array([np.nan, 2.0, -1.0, np.inf, -np.inf, 0.0])
    x.attach_grad()
    with ag.record():
        y = nd.relu(x)
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [np.nan, 1, 0, 1, 0, 0])
    with ag.record():
        y = nd.Activation(x, act_type="relu")
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [0, 1, 0, 1, 0, 0])


def test_mod_gradients_are_zero_on_integer_types_as_in_mxnet():
    for dtype, want in [("int32", 0.0), ("int64", 0.0), ("float32", 1.0)]:
        a = mx.nd.array([5, 7, 9], dtype=dtype)
        a.attach_grad()
        with ag.record():
            y = a % 4
        y.backward()
        np.testing.assert_array_equal(a.grad.asnumpy(), want)
    # through casts, with a head gradient of exactly 1 (it reaches the int32 node as 1)
    x, z = mx.sym.Variable("x"), mx.sym.Variable("z")
    c = mx.sym.broadcast_mod(mx.sym.cast(x, dtype="int32"), mx.sym.cast(z, dtype="int32"))
    gx, gz = mx.nd.full((1, 3), 7.0), mx.nd.full((2, 1), 7.0)
    exe = c.bind(mx.cpu(), args={"x": mx.nd.array([[5, 7, 9]]), "z": mx.nd.array([[2], [3]])},
                 args_grad=[gx, gz])
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((2, 3))])
    np.testing.assert_array_equal(gx.asnumpy(), 0)
    np.testing.assert_array_equal(gz.asnumpy(), 0)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), [[1, 1, 1], [2, 1, 0]])
