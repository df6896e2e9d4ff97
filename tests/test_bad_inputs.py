"""Bad inputs: every rejected call raises ``mx.base.MXNetError`` whose message names the
operator and what was wrong, and nothing is lost: the inputs keep their values and an
``out=`` array keeps its old value.

Covered: shape mismatch, dtype mismatch, inputs on different contexts (cpu(0) vs
cpu(1)), out-of-range axis, unknown keyword argument, bad parameter value or type,
missing required parameter, wrong ``out=`` shape / dtype / context, out-of-range index
with ``take(mode='raise')`` (raised at the next blocking call, as in MXNet), and a gpu
context on a machine without one."""

import numpy as np
import pytest

import oxnet as mx

nd = mx.nd


def _arr(shape=(2, 3), dtype="float32", ctx=None, offset=0):
    x = (np.arange(int(np.prod(shape))) + offset).astype(dtype).reshape(shape)
    return nd.array(x, ctx=ctx or mx.cpu(0), dtype=dtype)


def _snap(arrs):
    return [a.asnumpy().copy() for a in arrs]


def expect_error(fn, op, fragments=(), inputs=(), out=None):
    """Runs ``fn`` expecting an MXNetError naming ``op`` and every fragment; checks that
    ``inputs`` and ``out`` kept their values. Returns the message."""
    before = _snap(inputs)
    out_before = None if out is None else out.asnumpy().copy()
    with pytest.raises(mx.base.MXNetError) as ei:
        r = fn()
        # a deferred error surfaces at the next blocking call
        for x in (r if isinstance(r, (list, tuple)) else [r]):
            if isinstance(x, nd.NDArray):
                x.asnumpy()
    msg = str(ei.value)
    assert op in msg, "message does not name the operator %r: %s" % (op, msg)
    for f in fragments:
        assert f in msg, "message lacks %r: %s" % (f, msg)
    for a, b in zip(inputs, before):
        np.testing.assert_array_equal(a.asnumpy(), b)
    if out is not None:
        np.testing.assert_array_equal(out.asnumpy(), out_before)
    return msg


# Each case builds (callable, op name, message fragments, inputs, out) from fresh arrays.
# An out= array is passed to the rejected call wherever the op allows one, to check that
# a rejected call leaves it alone.


def _case_binary_shape(name):
    a, b, o = _arr((2, 3)), _arr((3, 2), offset=5), _arr((2, 3), offset=100)
    return (lambda: getattr(nd, name)(a, b, out=o), name, ["(2, 3)", "(3, 2)"], [a, b], o)


def _cases():
    c = {}
    # -- shape mismatch ---------------------------------------------------------
    for name in ["broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div",
                 "broadcast_maximum", "broadcast_equal", "broadcast_greater", "broadcast_mod"]:
        c["shape-" + name] = lambda name=name: _case_binary_shape(name)
    c["shape-elemwise_add"] = lambda: _case_binary_shape("elemwise_add")
    c["shape-elemwise_mul"] = lambda: _case_binary_shape("elemwise_mul")

    def op_plus():
        a, b = _arr((2, 3)), _arr((3, 2))
        return (lambda: a + b, "broadcast_add", ["(2, 3)", "(3, 2)"], [a, b], None)
    c["shape-operator+"] = op_plus

    def op_iadd():
        a, b = _arr((2, 3)), _arr((3, 2))
        return (lambda: a.__iadd__(b), "broadcast_add", ["(2, 3)", "(3, 2)"], [a, b], None)
    c["shape-operator+="] = op_iadd

    def op_iadd_grow():
        # the result (2, 3) does not fit the in-place target (2, 1)
        a, b = _arr((2, 1)), _arr((2, 3))
        return (lambda: a.__iadd__(b), "broadcast_add", ["(2, 1)", "(2, 3)"], [a, b], None)
    c["shape-operator+=-grows"] = op_iadd_grow

    def concat():
        a, b, o = _arr((2, 3)), _arr((3, 2)), _arr((5, 3), offset=9)
        return (lambda: nd.concat(a, b, dim=0, out=o), "Concat", ["(2, 3)", "(3, 2)", "dim=0"], [a, b], o)
    c["shape-concat"] = concat

    def stack():
        a, b = _arr((2, 3)), _arr((3, 2))
        return (lambda: nd.stack(a, b), "stack", ["(2, 3)", "(3, 2)"], [a, b], None)
    c["shape-stack"] = stack

    def where():
        cnd, x, y = _arr((2, 3)), _arr((2, 3)), _arr((3, 2))
        return (lambda: nd.where(cnd, x, y), "where", ["(2, 3)", "(3, 2)"], [cnd, x, y], None)
    c["shape-where"] = where

    def where_cond():
        cnd, x, y = _arr((3,)), _arr((2, 3)), _arr((2, 3))
        return (lambda: nd.where(cnd, x, y), "where", ["(3,)", "(2, 3)"], [cnd, x, y], None)
    c["shape-where-condition"] = where_cond

    def pick():
        a, i = _arr((2, 3)), nd.array([0, 1, 2])
        return (lambda: nd.pick(a, i), "pick", ["(3,)", "(2, 3)"], [a, i], None)
    c["shape-pick"] = pick

    def reshape():
        a = _arr((2, 3))
        return (lambda: nd.reshape(a, shape=(4, 2)), "Reshape", ["(4, 2)", "(2, 3)"], [a], None)
    c["shape-reshape"] = reshape

    def broadcast_to():
        a, o = _arr((2, 3)), _arr((4, 3))
        return (lambda: nd.broadcast_to(a, shape=(4, 3), out=o), "broadcast_to", ["(2, 3)", "(4, 3)"], [a], o)
    c["shape-broadcast_to"] = broadcast_to

    def broadcast_like():
        a, b = _arr((2, 3)), _arr((4, 5))
        return (lambda: nd.broadcast_like(a, b), "broadcast_like", ["(2, 3)", "(4, 5)"], [a, b], None)
    c["shape-broadcast_like"] = broadcast_like

    def broadcast_axis():
        a = _arr((2, 3))
        return (lambda: nd.broadcast_axis(a, axis=0, size=3), "broadcast_axis",
                ["axis 0", "size 2"], [a], None)
    c["shape-broadcast_axis-not-1"] = broadcast_axis

    def split():
        a = _arr((2, 3))
        return (lambda: nd.split(a, num_outputs=2, axis=1), "SliceChannel",
                ["num_outputs=2", "(2, 3)"], [a], None)
    c["shape-split-indivisible"] = split

    def squeeze():
        a = _arr((2, 3))
        return (lambda: nd.squeeze(a, axis=0), "squeeze", ["axis 0", "(2, 3)"], [a], None)
    c["shape-squeeze-non-unit"] = squeeze

    def setitem():
        a, v = _arr((2, 3)), _arr((3, 3))
        return (lambda: a.__setitem__(slice(0, 1), v), "broadcast_to", ["(3, 3)", "(1, 3)"], [a, v], None)
    c["shape-setitem"] = setitem

    def dot_shape():
        a, b, o = _arr((2, 3)), _arr((4, 3)), _arr((2, 4), offset=3)
        return (lambda: nd.dot(a, b, out=o), "dot", ["(2, 3)", "(4, 3)"], [a, b], o)
    c["shape-dot"] = dot_shape

    def batch_dot_shape():
        a, b = _arr((2, 3, 4)), _arr((3, 4, 5))
        return (lambda: nd.batch_dot(a, b), "batch_dot", ["(2, 3, 4)", "(3, 4, 5)"], [a, b], None)
    c["shape-batch_dot"] = batch_dot_shape

    # -- dtype mismatch ---------------------------------------------------------
    def dt(name, other="int32"):
        def f():
            a, b = _arr((2, 3)), _arr((2, 3), other)
            o = _arr((2, 3), offset=50)
            return (lambda: getattr(nd, name)(a, b, out=o), name, ["float32", other], [a, b], o)
        return f
    for name in ["broadcast_add", "broadcast_mul", "elemwise_add", "elemwise_sub", "broadcast_lesser"]:
        c["dtype-" + name] = dt(name)
    c["dtype-broadcast_add-f64"] = dt("broadcast_add", "float64")

    def dt_op():
        a, b = _arr((2, 3)), _arr((2, 3), "int32")
        return (lambda: a * b, "broadcast_mul", ["float32", "int32"], [a, b], None)
    c["dtype-operator*"] = dt_op

    def dt_concat():
        a, b = _arr((2, 3)), _arr((2, 3), "int32")
        return (lambda: nd.concat(a, b, dim=0), "Concat", ["float32", "int32"], [a, b], None)
    c["dtype-concat"] = dt_concat

    def dt_stack():
        a, b = _arr((2, 3)), _arr((2, 3), "float64")
        return (lambda: nd.stack(a, b), "stack", ["float32", "float64"], [a, b], None)
    c["dtype-stack"] = dt_stack

    def dt_where():
        cnd, x, y = _arr((2, 3)), _arr((2, 3)), _arr((2, 3), "int32")
        return (lambda: nd.where(cnd, x, y), "where", ["float32", "int32"], [cnd, x, y], None)
    c["dtype-where"] = dt_where

    def dt_dot():
        a, b = _arr((2, 3)), _arr((3, 2), "float64")
        return (lambda: nd.dot(a, b), "dot", ["float32", "float64"], [a, b], None)
    c["dtype-dot"] = dt_dot

    def dt_dot_int():
        a, b = _arr((2, 3), "int32"), _arr((3, 2), "int32")
        return (lambda: nd.dot(a, b), "dot", ["int32"], [a, b], None)
    c["dtype-dot-int-unsupported"] = dt_dot_int

    def dt_softmax():
        a = _arr((2, 3), "int32")
        return (lambda: nd.softmax(a), "softmax", ["int32"], [a], None)
    c["dtype-softmax-int"] = dt_softmax

    # -- different contexts -----------------------------------------------------
    def ctx(name):
        def f():
            a, b = _arr((2, 3)), _arr((2, 3), ctx=mx.cpu(1))
            return (lambda: getattr(nd, name)(a, b), name, ["cpu(0)", "cpu(1)"], [a, b], None)
        return f
    for name in ["broadcast_add", "elemwise_mul", "broadcast_maximum"]:
        c["ctx-" + name] = ctx(name)

    def ctx_op():
        a, b = _arr((2, 3)), _arr((2, 3), ctx=mx.cpu(1))
        return (lambda: a - b, "broadcast_sub", ["cpu(0)", "cpu(1)"], [a, b], None)
    c["ctx-operator-"] = ctx_op

    def ctx_concat():
        a, b = _arr((2, 3)), _arr((2, 3), ctx=mx.cpu(1))
        return (lambda: nd.concat(a, b), "Concat", ["cpu(0)", "cpu(1)"], [a, b], None)
    c["ctx-concat"] = ctx_concat

    def ctx_stack():
        a, b = _arr((2, 3)), _arr((2, 3), ctx=mx.cpu(1))
        return (lambda: nd.stack(a, b), "stack", ["cpu(0)", "cpu(1)"], [a, b], None)
    c["ctx-stack"] = ctx_stack

    def ctx_where():
        cnd, x, y = _arr((2, 3)), _arr((2, 3)), _arr((2, 3), ctx=mx.cpu(1))
        return (lambda: nd.where(cnd, x, y), "where", ["cpu(0)", "cpu(1)"], [cnd, x, y], None)
    c["ctx-where"] = ctx_where

    def ctx_take():
        a, i = _arr((2, 3)), nd.array([0, 1], ctx=mx.cpu(1))
        return (lambda: nd.take(a, i), "take", ["cpu(0)", "cpu(1)"], [a, i], None)
    c["ctx-take"] = ctx_take

    def ctx_out():
        a, b, o = _arr((2, 3)), _arr((2, 3)), _arr((2, 3), ctx=mx.cpu(1), offset=7)
        return (lambda: nd.broadcast_add(a, b, out=o), "broadcast_add", ["cpu(1)", "cpu(0)"], [a, b], o)
    c["ctx-out"] = ctx_out

    def ctx_out_reduce():
        a, o = _arr((2, 3), ctx=mx.cpu(1)), _arr((1,), offset=3)
        return (lambda: nd.sum(a, out=o), "sum", ["cpu(0)", "cpu(1)"], [a], o)
    c["ctx-out-sum"] = ctx_out_reduce

    # -- out-of-range axis ------------------------------------------------------
    def ax(fn, op, frag, shape=(2, 3)):
        def f():
            a = _arr(shape)
            return (lambda: fn(a), op, frag, [a], None)
        return f
    idx = lambda: nd.array([0, 1])  # noqa: E731
    axis_cases = {
        "sum": (lambda a: nd.sum(a, axis=2), ["2", "(2, 3)"]),
        "sum-neg": (lambda a: nd.sum(a, axis=-3), ["-3", "(2, 3)"]),
        "mean": (lambda a: nd.mean(a, axis=(0, 5)), ["5"]),
        "max": (lambda a: nd.max(a, axis=2), ["2"]),
        "min": (lambda a: nd.min(a, axis=7), ["7"]),
        "prod": (lambda a: nd.prod(a, axis=2, exclude=True), ["2"]),
        "norm": (lambda a: nd.norm(a, axis=3), ["3"]),
        "argmax": (lambda a: nd.argmax(a, axis=4), ["4"]),
        "argmin": (lambda a: nd.argmin(a, axis=-3), ["-3"]),
        "softmax": (lambda a: nd.softmax(a, axis=2), ["2"]),
        "log_softmax": (lambda a: nd.log_softmax(a, axis=5), ["5"]),
        "transpose": (lambda a: nd.transpose(a, axes=(0, 2)), ["(0, 2)"]),
        "expand_dims": (lambda a: nd.expand_dims(a, axis=3), ["3"]),
        "squeeze": (lambda a: nd.squeeze(a, axis=4), ["4"]),
        "Concat": (lambda a: nd.concat(a, a, dim=2), ["2"]),
        "stack": (lambda a: nd.stack(a, a, axis=4), ["4"]),
        "SliceChannel": (lambda a: nd.split(a, num_outputs=1, axis=2), ["2"]),
        "slice_axis": (lambda a: nd.slice_axis(a, axis=2, begin=0, end=1), ["2"]),
        "take": (lambda a: nd.take(a, idx(), axis=2), ["2"]),
        "pick": (lambda a: nd.pick(a, idx(), axis=3), ["3"]),
        "topk": (lambda a: nd.topk(a, axis=3), ["3"]),
        "sort": (lambda a: nd.sort(a, axis=2), ["2"]),
        "argsort": (lambda a: nd.argsort(a, axis=-3), ["-3"]),
        "reverse": (lambda a: nd.reverse(a, axis=2), ["2"]),
        "SwapAxis": (lambda a: nd.swapaxes(a, dim1=0, dim2=5), ["5"]),
        "repeat": (lambda a: nd.repeat(a, repeats=2, axis=2), ["2"]),
        "broadcast_axis": (lambda a: nd.broadcast_axis(a, axis=3, size=2), ["3"]),
    }
    for op, (fn, frag) in axis_cases.items():
        c["axis-" + op] = ax(fn, op.split("-")[0], frag)

    # -- unknown keyword argument ----------------------------------------------
    def kw(fn, op, name):
        def f():
            a = _arr((2, 3))
            return (lambda: fn(a), op, [name], [a], None)
        return f
    c["kwarg-sum"] = kw(lambda a: nd.sum(a, foo=1), "sum", "foo")
    c["kwarg-transpose"] = kw(lambda a: nd.transpose(a, bogus=(1, 0)), "transpose", "bogus")
    c["kwarg-reshape"] = kw(lambda a: nd.reshape(a, shape=(3, 2), bogus=1), "Reshape", "bogus")
    c["kwarg-concat"] = kw(lambda a: nd.concat(a, a, bogus=1), "Concat", "bogus")
    c["kwarg-take"] = kw(lambda a: nd.take(a, nd.array([0]), foo=1), "take", "foo")
    c["kwarg-topk"] = kw(lambda a: nd.topk(a, kk=1), "topk", "kk")
    c["kwarg-softmax"] = kw(lambda a: nd.softmax(a, axes=1), "softmax", "axes")
    # (Flatten, broadcast_add and other parameterless ops ignore extra keyword
    # arguments, as MXNet 1.9.1 does: see tests/test_ops_layout.py)
    c["kwarg-fluent-sum"] = kw(lambda a: a.sum(axsi=1), "sum", "axsi")

    # -- bad parameter value / type ---------------------------------------------
    bad = {
        "sum-axis-str": (lambda a: nd.sum(a, axis="x"), "sum", ["axis"]),
        "sum-axis-float": (lambda a: nd.sum(a, axis=1.5), "sum", ["axis", "1.5"]),
        "sum-keepdims-str": (lambda a: nd.sum(a, keepdims="maybe"), "sum", ["keepdims", "maybe"]),
        "sum-exclude-none": (lambda a: nd.sum(a, exclude=None), "sum", ["exclude"]),
        "argmax-axis-tuple": (lambda a: nd.argmax(a, axis=(0, 1)), "argmax", ["axis"]),
        "topk-k-str": (lambda a: nd.topk(a, k="x"), "topk", ["k"]),
        "topk-k-too-big": (lambda a: nd.topk(a, k=4), "topk", ["k", "4"]),
        "topk-ret_typ": (lambda a: nd.topk(a, ret_typ="foo"), "topk", ["ret_typ", "foo"]),
        "topk-ret_typ-int": (lambda a: nd.topk(a, ret_typ=3), "topk", ["ret_typ"]),
        "topk-is_ascend": (lambda a: nd.topk(a, is_ascend="yes"), "topk", ["is_ascend"]),
        "take-mode": (lambda a: nd.take(a, nd.array([0]), mode="bogus"), "take", ["mode", "bogus"]),
        "take-axis-str": (lambda a: nd.take(a, nd.array([0]), axis="z"), "take", ["axis"]),
        "pick-mode": (lambda a: nd.pick(a, nd.array([0, 1]), mode="raise"), "pick", ["mode"]),
        "softmax-temperature": (lambda a: nd.softmax(a, temperature="hot"), "softmax", ["temperature"]),
        "softmax-dtype": (lambda a: nd.softmax(a, dtype="int32"), "softmax", ["dtype", "int32"]),
        "one_hot-depth-str": (lambda a: nd.one_hot(a, depth="three"), "one_hot", ["depth"]),
        "one_hot-depth-neg": (lambda a: nd.one_hot(a, depth=-1), "one_hot", ["depth", "-1"]),
        "one_hot-dtype": (lambda a: nd.one_hot(a, depth=3, dtype="nope"), "one_hot", ["dtype", "nope"]),
        "one_hot-on_value": (lambda a: nd.one_hot(a, depth=3, on_value="hi"), "one_hot", ["on_value"]),
        "argsort-dtype": (lambda a: nd.argsort(a, dtype="notadtype"), "argsort", ["dtype", "notadtype"]),
        "cast-dtype": (lambda a: nd.cast(a, dtype="nope"), "Cast", ["dtype", "nope"]),
        "reshape-shape-str": (lambda a: nd.reshape(a, shape="abc"), "Reshape", ["shape"]),
        "reshape-two-minus-one": (lambda a: nd.reshape(a, shape=(-1, -1)), "Reshape", ["-1"]),
        "reshape-bad-code": (lambda a: nd.reshape(a, shape=(-5,)), "Reshape", ["-5"]),
        "tile-reps-str": (lambda a: nd.tile(a, reps="x"), "tile", ["reps"]),
        "tile-reps-neg": (lambda a: nd.tile(a, reps=(-1,)), "tile", ["reps", "-1"]),
        "repeat-float": (lambda a: nd.repeat(a, repeats=1.5), "repeat", ["repeats", "1.5"]),
        "repeat-neg": (lambda a: nd.repeat(a, repeats=-1), "repeat", ["repeats", "-1"]),
        "norm-ord-str": (lambda a: nd.norm(a, ord="fro"), "norm", ["ord"]),
        "norm-ord-3": (lambda a: nd.norm(a, ord=3), "norm", ["ord", "3"]),
        "split-zero": (lambda a: nd.split(a, num_outputs=0), "SliceChannel", ["num_outputs", "0"]),
        "slice-step-zero": (lambda a: nd.slice(a, begin=(0,), end=(1,), step=(0,)), "slice", ["step"]),
        "slice-len-mismatch": (lambda a: nd.slice(a, begin=(0,), end=(1, 2)), "slice", ["begin", "end"]),
        "slice-too-many-axes": (lambda a: nd.slice(a, begin=(0, 0, 0), end=(1, 1, 1)), "slice", ["(2, 3)"]),
        "slice_axis-begin": (lambda a: nd.slice_axis(a, axis=0, begin=3, end=4), "slice_axis", ["begin=3"]),
        "transpose-repeat": (lambda a: nd.transpose(a, axes=(0, 0)), "transpose", ["(0, 0)"]),
        "sum-dup-axes": (lambda a: nd.sum(a, axis=(0, 0)), "sum", ["0"]),
        "swapaxes-str": (lambda a: nd.swapaxes(a, dim1="x"), "SwapAxis", ["dim1"]),
        "broadcast_axis-len": (lambda a: nd.broadcast_axis(a, axis=(0, 1), size=(2,)), "broadcast_axis",
                               ["size"]),
        # missing required parameters / inputs
        "one_hot-no-depth": (lambda a: nd.one_hot(a), "one_hot", ["depth"]),
        "expand_dims-no-axis": (lambda a: nd.expand_dims(a), "expand_dims", ["axis"]),
        "slice-no-begin": (lambda a: nd.slice(a), "slice", ["begin"]),
        "reshape-no-shape": (lambda a: nd.reshape(a), "Reshape", ["shape"]),
        "broadcast_add-no-rhs": (lambda a: nd.broadcast_add(a), "broadcast_add", ["rhs"]),
    }
    for k, (fn, op, frag) in bad.items():
        def one(fn=fn, op=op, frag=frag):
            a = _arr((2, 3))
            return (lambda: fn(a), op, frag, [a], None)
        c["param-" + k] = one

    # -- wrong out= ------------------------------------------------------------
    def out_case(fn, op, frag, oshape, odtype="float32", octx=None):
        def f():
            a, b = _arr((2, 3)), _arr((2, 3), offset=1)
            o = _arr(oshape, odtype, ctx=octx, offset=11)
            return (lambda: fn(a, b, o), op, frag, [a, b], o)
        return f
    out_cases = {
        "shape-broadcast_add": (lambda a, b, o: nd.broadcast_add(a, b, out=o), "broadcast_add",
                                ["(3, 2)", "(2, 3)"], (3, 2)),
        "shape-elemwise_add": (lambda a, b, o: nd.elemwise_add(a, b, out=o), "elemwise_add",
                               ["(6,)", "(2, 3)"], (6,)),
        "shape-sum": (lambda a, b, o: nd.sum(a, axis=1, out=o), "sum", ["(3,)", "(2,)"], (3,)),
        "shape-sum-all": (lambda a, b, o: nd.sum(a, out=o), "sum", ["(3,)", "(1,)"], (3,)),
        "shape-transpose": (lambda a, b, o: nd.transpose(a, out=o), "transpose",
                            ["(2, 3)", "(3, 2)"], (2, 3)),
        "shape-topk": (lambda a, b, o: nd.topk(a, k=2, out=o), "topk", ["(3, 3)", "(2, 2)"], (3, 3)),
        "shape-softmax": (lambda a, b, o: nd.softmax(a, out=o), "softmax", ["(3, 2)"], (3, 2)),
        "shape-concat": (lambda a, b, o: nd.concat(a, b, dim=0, out=o), "Concat",
                         ["(4, 4)", "(4, 3)"], (4, 4)),
        "shape-take": (lambda a, b, o: nd.take(a, nd.array([0, 1, 1]), out=o), "take",
                       ["(2, 3)", "(3, 3)"], (2, 3)),
        "shape-reshape": (lambda a, b, o: nd.reshape(a, shape=(3, 2), out=o), "Reshape",
                          ["(2, 3)", "(3, 2)"], (2, 3)),
        "dtype-broadcast_add": (lambda a, b, o: nd.broadcast_add(a, b, out=o), "broadcast_add",
                                ["int32", "float32"], (2, 3), "int32"),
        "dtype-sum": (lambda a, b, o: nd.sum(a, axis=1, out=o), "sum",
                      ["float64", "float32"], (2,), "float64"),
        "ctx-transpose": (lambda a, b, o: nd.transpose(a, out=o), "transpose", ["cpu(1)", "cpu(0)"], (3, 2),
                          "float32", mx.cpu(1)),
    }
    for k, args in out_cases.items():
        c["out-" + k] = out_case(*args)

    # -- take(mode='raise') out of range: raised at the next blocking call ----------
    def take_raise(idx, frag):
        def f():
            a = _arr((2, 3))
            i = nd.array(idx)
            return (lambda: nd.take(a, i, mode="raise"), "take", frag, [a, i], None)
        return f
    c["take-raise-high"] = take_raise([0, 5], ["5", "axis 0", "size 2"])
    c["take-raise-neg"] = take_raise([-1], ["-1"])

    def take_raise_axis1():
        a, i = _arr((2, 3)), nd.array([[0, 3]], dtype="int64")
        return (lambda: nd.take(a, i, axis=1, mode="raise"), "take", ["3", "axis 1", "size 3"], [a, i], None)
    c["take-raise-axis1"] = take_raise_axis1

    def take_raise_out():
        a, i, o = _arr((2, 3)), nd.array([0, 7]), _arr((2, 3), offset=40)
        return (lambda: (nd.take(a, i, mode="raise", out=o), o)[1], "take", ["7"], [a, i], o)
    c["take-raise-out"] = take_raise_out
    return c


CASES = _cases()


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_rejected_and_nothing_is_lost(case):
    fn, op, frags, inputs, out = CASES[case]()
    expect_error(fn, op, frags, inputs, out)
    # the engine is still usable afterwards
    mx.nd.waitall()
    assert (nd.ones((2,)) + 1).asnumpy().tolist() == [2, 2]
    for a in inputs:
        if a.context == mx.cpu(0):
            np.testing.assert_array_equal((a * 1).asnumpy(), a.asnumpy())


def test_out_aliasing_an_input_is_left_alone_on_rejection():
    a = _arr((2, 3))
    before = a.asnumpy().copy()
    with pytest.raises(mx.base.MXNetError, match="sum"):
        nd.sum(a, axis=5, out=a)
    with pytest.raises(mx.base.MXNetError, match="broadcast_add"):
        nd.broadcast_add(a, _arr((3, 3)), out=a)
    with pytest.raises(mx.base.MXNetError, match="transpose"):
        nd.transpose(a, out=a)
    np.testing.assert_array_equal(a.asnumpy(), before)


def test_take_raise_error_does_not_poison_later_work():
    a = _arr((2, 3))
    r = nd.take(a, nd.array([9]), mode="raise")
    dependent = r + 1
    with pytest.raises(mx.base.MXNetError, match="take"):
        dependent.asnumpy()  # errors propagate to dependent results, as in MXNet
    mx.nd.waitall()
    ok = nd.take(a, nd.array([1]), mode="raise")
    np.testing.assert_array_equal(ok.asnumpy(), a.asnumpy()[[1]])
    # waitall raises a pending deferred error once, then the engine is clean
    nd.take(a, nd.array([9]), mode="raise")
    with pytest.raises(mx.base.MXNetError, match="take"):
        mx.nd.waitall()
    mx.nd.waitall()


def test_view_inputs_survive_rejection():
    a = _arr((4, 3))
    v = a[1:3]
    before = a.asnumpy().copy()
    with pytest.raises(mx.base.MXNetError, match="broadcast_add"):
        v += _arr((3, 3))
    with pytest.raises(mx.base.MXNetError, match="broadcast_add"):
        a.reshape((3, 4)).__iadd__(_arr((4, 3)))
    np.testing.assert_array_equal(a.asnumpy(), before)


# -- gpu contexts on a machine without a GPU ------------------------------------

no_gpu = pytest.mark.skipif(mx.context.num_gpus() > 0, reason="a GPU is present")


@no_gpu
@pytest.mark.parametrize("make", [
    lambda: nd.zeros((2, 3), ctx=mx.gpu(0)),
    lambda: nd.ones((2, 3), ctx=mx.gpu(0)),
    lambda: nd.empty((2,), ctx=mx.gpu(0)),
    lambda: nd.full((2,), 3, ctx=mx.gpu(0)),
    lambda: nd.arange(3, ctx=mx.gpu(0)),
    lambda: nd.array([1, 2], ctx=mx.gpu(0)),
    lambda: nd.random.uniform(shape=(2,), ctx=mx.gpu(0)),
], ids=["zeros", "ones", "empty", "full", "arange", "array", "uniform"])
def test_gpu_context_is_rejected(make):
    with pytest.raises(mx.base.MXNetError, match=r"gpu\(0\)"):
        make().asnumpy()


@no_gpu
def test_copy_to_gpu_is_rejected_and_source_kept():
    a = _arr((2, 3))
    before = a.asnumpy().copy()
    for f in (lambda: a.copyto(mx.gpu(0)), lambda: a.as_in_context(mx.gpu(0)),
              lambda: a.copyto(mx.gpu(1))):
        with pytest.raises(mx.base.MXNetError, match=r"gpu\([01]\)"):
            f()
    np.testing.assert_array_equal(a.asnumpy(), before)


@no_gpu
def test_gpu_error_names_the_operator():
    with pytest.raises(mx.base.MXNetError, match="_zeros"):
        nd.zeros((2, 3), ctx=mx.gpu(0))


# -- known gaps ------------------------------------------------------------------


def test_bool_param_rejects_int_other_than_0_1():
    a = _arr((2, 3))
    with pytest.raises(mx.base.MXNetError, match="keepdims"):
        nd.sum(a, axis=1, keepdims=2)


def test_bad_tuple_item_names_op_and_param():
    a = _arr((2, 3))
    expect_error(lambda: nd.transpose(a, axes=(0, "a")), "transpose", ["axes"], [a])
