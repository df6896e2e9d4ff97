"""Shape inference with unknown dimensions (0 in MXNet's shapes, -1 under np_shape):
infer_shape_partial reports what is known, and known dimensions anywhere in the
graph complete the unknown ones, forward and backward, as MXNet 1.9.1 does."""

import warnings

import numpy as np
import pytest

import oxnet as mx


def shapes(sym, **kw):
    a, o, x = sym.infer_shape(**kw)
    return dict(zip(sym.list_arguments(), a)) if a is not None else None, o


def test_unknown_batch_flows_forward():
    x = mx.sym.var("x")
    y = mx.sym.FullyConnected(x, num_hidden=7, name="fc")
    a, o, _ = y.infer_shape_partial(x=(0, 4))
    assert dict(zip(y.list_arguments(), a)) == {"x": (0, 4), "fc_weight": (7, 4), "fc_bias": (7,)}
    assert o == [(0, 7)]
    c = mx.sym.Convolution(x, num_filter=6, kernel=(3, 3), stride=(2, 2), name="c")
    _, o, _ = c.infer_shape_partial(x=(0, 2, 9, 0))
    assert o == [(0, 6, 4, 0)]
    t = mx.sym.transpose(x, axes=(0, 2, 1))
    assert t.infer_shape_partial(x=(0, 3, 5))[1] == [(0, 5, 3)]
    r = mx.sym.reshape(x, shape=(-1, 6))
    assert r.infer_shape_partial(x=(0, 2, 3))[1] == [(0, 6)]


def test_elementwise_unknowns_complete_each_other():
    a = mx.sym.var("a", shape=(0, 4))
    b = mx.sym.var("b", shape=(3, 0))
    args, out = shapes(a * b)
    assert args == {"a": (3, 4), "b": (3, 4)} and out == [(3, 4)]


def test_known_output_completes_the_producer_input():
    a = mx.sym.var("a", shape=(0, 4))
    fc = mx.sym.FullyConnected(a, num_hidden=5, name="fc")
    c = mx.sym.var("c", shape=(6, 0))
    args, out = shapes(fc - c)
    assert args["a"] == (6, 4) and args["c"] == (6, 5) and out == [(6, 5)]
    # through a padded 3x3 convolution the spatial dimensions carry over too
    d = mx.sym.var("d", shape=(0, 2, 0, 0))
    cv = mx.sym.Convolution(d, num_filter=3, kernel=(3, 3), pad=(1, 1), name="cv")
    e = mx.sym.var("e", shape=(2, 3, 8, 7))
    args, _ = shapes(cv + e)
    assert args["d"] == (2, 2, 8, 7) and args["cv_weight"] == (3, 2, 3, 3)


def test_concat_and_split_backward():
    a = mx.sym.var("a", shape=(0, 3))
    b = mx.sym.var("b", shape=(0, 2))
    c = mx.sym.concat(a, b, dim=1)
    d = mx.sym.var("d", shape=(4, 0))
    args, _ = shapes(d + c)
    assert args == {"d": (4, 5), "a": (4, 3), "b": (4, 2)}
    s = mx.sym.split(mx.sym.var("s", shape=(0, 6, 0)), num_outputs=3, axis=1)
    t = mx.sym.var("t", shape=(5, 2, 7))
    args, _ = shapes(s[2] + t)
    assert args["s"] == (5, 6, 7)


def test_undetermined_stays_unknown_and_infer_shape_warns():
    x = mx.sym.var("x")
    y = mx.sym.var("y")
    z = mx.sym.batch_dot(x, y)
    assert z.infer_shape_partial(x=(0, 3, 4), y=(0, 4, 5))[1] == [(0, 3, 5)]
    # y's middle dimension must equal x's last, which the op does not reveal here
    assert z.infer_shape_partial(x=(0, 3, 4), y=(0, 0, 5))[1] == [()]
    # a broadcast does not decide the size of a dimension that is 1 on the other side
    w = mx.sym.broadcast_add(x, y)
    a, o, _ = w.infer_shape_partial(x=(0, 4), y=(1, 4))
    assert a == [(0, 4), (1, 4)] and o == [(0, 4)]
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        assert z.infer_shape(x=(0, 3, 4), y=(0, 4, 5)) == (None, None, None)
    assert any("Cannot decide shape" in str(r.message) for r in rec)


def test_np_shape_uses_minus_one_and_none():
    x = mx.sym.var("x")
    y = mx.sym.var("y")
    z = mx.sym.dot(x, y)
    with mx.np_shape(True):
        assert z.infer_shape_partial(x=(-1, 3, 4), y=(4, 5))[1] == [(-1, 3, 5)]
        a, o, _ = mx.sym.sin(x).infer_shape_partial()
        assert a == [None] and o == [None]
    a, o, _ = mx.sym.sin(x).infer_shape_partial()
    assert a == [()] and o == [()]


def test_partial_dims_are_checked_against_what_an_op_derives():
    # FullyConnected derives its weight from the data: a weight declared (0, 5)
    # cannot take the (3, 4) the data implies.
    x = mx.sym.var("x", shape=(2, 4))
    w = mx.sym.var("w", shape=(0, 5))
    y = mx.sym.FullyConnected(x, weight=w, num_hidden=3, no_bias=True)
    with pytest.raises(mx.base.MXNetError, match="shape inconsistent"):
        y.infer_shape_partial()
    w2 = mx.sym.var("w", shape=(0, 4))
    y2 = mx.sym.FullyConnected(x, weight=w2, num_hidden=3, no_bias=True)
    assert y2.infer_shape()[0] == [(2, 4), (3, 4)]


def test_partial_then_full_bind():
    x = mx.sym.var("x", shape=(0, 3))
    y = mx.sym.FullyConnected(x, num_hidden=2, name="fc")
    ex = y.simple_bind(mx.cpu(), x=(4, 3))
    assert ex.outputs[0].shape == (4, 2)


def test_partial_shape_flows_back_through_cast():
    d = mx.sym.var("data", shape=(2, 0, 8, 8))
    w = mx.sym.var("w")
    c = mx.sym.Convolution(mx.sym.cast(d, dtype="float16"), weight=mx.sym.cast(w, dtype="float16"),
                           num_filter=4, kernel=(3, 3), no_bias=True)
    a, o, _ = c.infer_shape_partial()
    assert dict(zip(c.list_arguments(), a)) == {"data": (2, 0, 8, 8), "w": (4, 0, 3, 3)}
    assert o == [(2, 4, 6, 6)]


def test_slices_of_unknown_axes_stay_unknown():
    v = mx.sym.var("v", shape=(0, 8))
    assert mx.sym.slice(v, begin=(1, 2), end=(4, 6)).infer_shape_partial()[1] == [(0, 4)]
    assert mx.sym.slice_axis(v, axis=0, begin=1, end=3).infer_shape_partial()[1] == [(0, 8)]
    assert mx.sym.slice_axis(v, axis=1, begin=1, end=3).infer_shape_partial()[1] == [(0, 2)]


def test_shape_parameters_with_unknown_dims_take_the_consumers_shape():
    b = mx.sym.transpose(mx.sym.ones(shape=(-1, -1))) + mx.sym.zeros(shape=(3, 4))
    out = b.bind(mx.cpu(), {}).forward()[0]
    assert out.shape == (3, 4)
    np.testing.assert_array_equal(out.asnumpy(), np.ones((3, 4)))
    b = mx.sym.ones(shape=(-1, 4)) * mx.sym.var("x")
    out = b.bind(mx.cpu(), {"x": mx.nd.array(np.full((2, 4), 3.0))}).forward()[0]
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 4), 3.0))
    m = mx.sym.transpose(mx.sym.ones(shape=(3, -1))) + mx.sym.ones(shape=(2, -1))
    assert m.bind(mx.cpu(), {}).forward()[0].shape == (2, 3)


def test_bound_zero_size_arrays():
    x = mx.sym.var("x")
    with mx.np_shape(True):
        for sym, shape, want in [(mx.sym.contrib.index_array(x), (0, 0, 0), (0, 0, 0, 3)),
                                 (mx.sym.contrib.index_array(x), (2, 0), (2, 0, 2)),
                                 (mx.sym.sum(x, axis=1), (0, 3), (0,)),
                                 (x * 2, (0, 3), (0, 3))]:
            ex = sym.bind(mx.cpu(), {"x": mx.nd.array(np.zeros(shape))})
            assert ex.forward()[0].shape == want
