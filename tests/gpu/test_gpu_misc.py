"""The "misc" CUDA family against the CPU: shape-only copies, strided layout ops,
argmax/argmin/pick and the optimizer updates (see op/cuda_misc.rs)."""

import numpy as np
import pytest

import oxnet as mx

from .common import FLOATS, GPU, INTS, TOL, both, rand, requires_gpu, same

pytestmark = requires_gpu


def _op(name):
    return getattr(mx.nd._internal if name.startswith("_") else mx.nd, name)


def _close(g, c, dtype, what=""):
    assert g.shape == c.shape and g.dtype == c.dtype, what
    if np.dtype(dtype).kind == "f":
        rtol, atol = TOL[str(np.dtype(dtype))]
        np.testing.assert_allclose(g, c, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(g, c, err_msg=what)


def grads_both(fn, *arrays, diff=None):
    """fn's output and the gradients of its inputs (those in `diff`, default all)
    under a random head gradient, on gpu(0) and on the CPU: compared here."""
    diff = range(len(arrays)) if diff is None else diff
    res = {}
    for ctx in (GPU, mx.cpu()):
        xs = [mx.nd.array(a, dtype=a.dtype).as_in_context(ctx) for a in arrays]
        for k in diff:
            xs[k].attach_grad()
        with mx.autograd.record():
            y = fn(*xs)
        head = mx.nd.array(rand(y.shape, y.dtype, seed=9), dtype=y.dtype).as_in_context(ctx)
        y.backward(head)
        res[ctx] = [y.asnumpy()] + [xs[k].grad.asnumpy() for k in diff]
    for k, (g, c) in enumerate(zip(res[GPU], res[mx.cpu()])):
        _close(g, c, g.dtype, f"output/gradient {k}")


# ---------------------------------------------------------------- shape-only copies

COPY_CASES = [
    ("Reshape", (2, 3, 4), dict(shape=(4, -1))),
    ("Reshape", (2, 3, 4), dict(shape=(0, -3))),
    ("Flatten", (2, 3, 4), {}),
    ("expand_dims", (2, 3), dict(axis=1)),
    ("squeeze", (2, 1, 3, 1), {}),
    ("squeeze", (2, 1, 3, 1), dict(axis=1)),
    ("BlockGrad", (3, 5), {}),
    ("make_loss", (3, 5), {}),
    ("MakeLoss", (3, 5), {}),
    ("stop_gradient", (4,), {}),
]


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("name,shape,kw", COPY_CASES)
def test_copy_ops(name, shape, kw, dtype):
    if name == "MakeLoss" and dtype not in FLOATS:
        pytest.skip("MakeLoss takes float inputs")
    x = rand(shape, dtype)
    g, c = both(lambda a: getattr(mx.nd, name)(a, **kw), x)
    same(g, c, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,shape,kw", COPY_CASES)
def test_copy_ops_grad(name, shape, kw, dtype):
    x = rand(shape, dtype)
    if name in ("BlockGrad", "stop_gradient"):
        # no gradient flows: compare the outputs of y * x (x's gradient is y)
        grads_both(lambda a: getattr(mx.nd, name)(a, **kw) * a, x)
    else:
        grads_both(lambda a: getattr(mx.nd, name)(a, **kw), x)


@pytest.mark.parametrize("dtype", FLOATS + ["int32"])
def test_reshape_like_and_identity_like_rhs(dtype):
    a, b = rand((2, 6), dtype), rand((3, 4), dtype, seed=1)
    g, c = both(lambda x, y: mx.nd.reshape_like(x, y), a, b)
    same(g, c, dtype)
    g, c = both(lambda x, y: mx.nd.reshape_like(x, y, lhs_begin=1, lhs_end=2, rhs_begin=0, rhs_end=2),
                rand((2, 12), dtype), rand((3, 4), dtype, seed=1))
    same(g, c, dtype)
    g, c = both(lambda x, y: mx.nd._internal._identity_with_attr_like_rhs(x, y), a, a.copy())
    same(g, c, dtype)


def test_reshape_inplace_view_then_write():
    x = mx.nd.array(np.arange(12, dtype="float32")).as_in_context(GPU)
    y = x.reshape((3, 4))
    z = mx.nd.Reshape(x, shape=(4, 3))
    x += 1
    np.testing.assert_array_equal(y.asnumpy().ravel(), np.arange(12) + 1)
    np.testing.assert_array_equal(z.asnumpy().ravel(), np.arange(12))


# ---------------------------------------------------------------- strided layout ops

LAYOUT_CASES = [
    ("SwapAxis", [(2, 3, 4)], dict(dim1=0, dim2=2)),
    ("SwapAxis", [(2, 3, 4)], dict(dim1=-1, dim2=1)),
    ("Concat", [(2, 3), (2, 5), (2, 1)], dict(dim=1, num_args=3)),
    ("Concat", [(2, 3, 4), (1, 3, 4)], dict(dim=0, num_args=2)),
    ("Concat", [(2, 3, 4), (2, 3, 2)], dict(dim=-1, num_args=2)),
    ("stack", [(2, 3), (2, 3), (2, 3)], dict(axis=1, num_args=3)),
    ("stack", [(4,), (4,)], dict(axis=-1, num_args=2)),
    ("stack", [(2, 3), (2, 3)], dict(axis=0, num_args=2)),
    ("slice", [(5, 6, 7)], dict(begin=(1, None, -1), end=(4, None, 0), step=(2, None, -2))),
    ("slice", [(5, 6)], dict(begin=(-3,), end=(None,))),
    ("slice", [(5, 6)], dict(begin=(0, 1), end=(5, 6), step=(1, 3))),
    ("slice_axis", [(4, 5, 6)], dict(axis=1, begin=1, end=4)),
    ("slice_axis", [(4, 5, 6)], dict(axis=-1, begin=-3, end=None)),
    ("tile", [(2, 3)], dict(reps=(2, 3))),
    ("tile", [(2, 3)], dict(reps=(2, 1, 2))),
    ("tile", [(2, 1, 3)], dict(reps=(3,))),
    ("repeat", [(2, 3)], dict(repeats=3)),
    ("repeat", [(2, 3, 2)], dict(repeats=2, axis=1)),
    ("reverse", [(3, 4, 5)], dict(axis=(0, 2))),
    ("reverse", [(3, 4)], dict(axis=1)),
    ("broadcast_to", [(2, 1, 3)], dict(shape=(2, 4, 3))),
    ("broadcast_to", [(1, 3)], dict(shape=(5, 0))),
    ("broadcast_axis", [(1, 3, 1)], dict(axis=(0, 2), size=(2, 4))),
    ("broadcast_like", [(1, 3), (4, 3)], {}),
]


def _layout(name, kw):
    def f(*xs):
        return getattr(mx.nd, name)(*xs, **kw)
    return f


@pytest.mark.parametrize("dtype", FLOATS + INTS + ["bool"])
@pytest.mark.parametrize("name,shapes,kw", LAYOUT_CASES)
def test_layout_ops(name, shapes, kw, dtype):
    xs = [rand(s, "uint8" if dtype == "bool" else dtype, seed=k).astype(dtype) for k, s in enumerate(shapes)]
    g, c = both(_layout(name, kw), *xs)
    same(g, c, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,shapes,kw", LAYOUT_CASES)
def test_layout_ops_grad(name, shapes, kw, dtype):
    xs = [rand(s, dtype, seed=k) for k, s in enumerate(shapes)]
    diff = [0] if name == "broadcast_like" else None
    grads_both(_layout(name, kw), *xs, diff=diff)


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("kw", [dict(num_outputs=3, axis=1), dict(num_outputs=2, axis=0),
                                dict(num_outputs=4, axis=-1, squeeze_axis=True)])
def test_split(kw, dtype):
    x = rand((4, 6, 4), dtype)
    cpu = mx.nd.split(mx.nd.array(x, dtype=dtype), **kw)
    gpu = mx.nd.split(mx.nd.array(x, dtype=dtype).as_in_context(GPU), **kw)
    assert len(cpu) == len(gpu) == kw["num_outputs"]
    for g, c in zip(gpu, cpu):
        assert g.context == GPU
        same(g, c, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_split_grad(dtype):
    x = rand((4, 6), dtype)
    grads_both(lambda a: mx.nd.split(a, num_outputs=3, axis=1)[1] * 2 + mx.nd.split(a, num_outputs=3, axis=1)[2], x)


def test_many_dimensions_merge():
    # 9-d input: axes merge before the kernel's 16-axis limit matters
    x = rand((2,) * 9, "float32")
    g, c = both(lambda a: mx.nd.tile(a, reps=(2,) * 9), x)
    same(g, c, "float32")
    g, c = both(lambda a: mx.nd.SwapAxis(a, dim1=0, dim2=8), x)
    same(g, c, "float32")


@pytest.mark.parametrize("dtype", FLOATS + INTS + ["bool"])
@pytest.mark.parametrize("kw", [dict(begin=(1, None), end=(3, None)), dict(begin=(None, -1), end=(None, 0), step=(1, -2)),
                                dict(begin=(0, 1, 2), end=(4, 5, 3))])
def test_slice_assign(kw, dtype):
    base = "uint8" if dtype == "bool" else dtype
    lhs = rand((4, 5, 3), base, seed=1).astype(dtype)
    region = mx.nd.slice(mx.nd.array(lhs, dtype=dtype), **kw).shape
    rhs = rand(region, base, seed=2).astype(dtype)
    g, c = both(lambda a, b: mx.nd._internal._slice_assign(a, b, **kw), lhs, rhs)
    same(g, c, dtype)
    g, c = both(lambda a: mx.nd._internal._slice_assign_scalar(a, scalar=7.0, **kw), lhs)
    same(g, c, dtype)


@pytest.mark.parametrize("dtype", FLOATS + ["int32"])
def test_setitem_on_gpu(dtype):
    x = rand((4, 6), dtype)
    ref = x.copy()
    a = mx.nd.array(x, dtype=dtype).as_in_context(GPU)
    a[1:3] = 5
    ref[1:3] = 5
    a[:, 2] = mx.nd.array(np.arange(4), dtype=dtype).as_in_context(GPU)
    ref[:, 2] = np.arange(4)
    a[0:2, 1:4] = a[2:4, 0:3]
    ref[0:2, 1:4] = ref[2:4, 0:3].copy()
    np.testing.assert_array_equal(a.asnumpy(), ref)


@pytest.mark.parametrize("dtype", FLOATS)
def test_slice_grads_through_slice_assign(dtype):
    x = rand((5, 6), dtype)
    grads_both(lambda a: mx.nd.slice(a, begin=(1, None), end=(4, None), step=(2, -1)), x)
    grads_both(lambda a: mx.nd.slice_axis(a, axis=1, begin=2, end=5), x)


@pytest.mark.parametrize("normalization,thresh", [("null", 0.0), ("batch", 0.0), ("valid", 0.5), ("valid", 100.0)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_makeloss_backward(normalization, thresh, dtype):
    x = rand((7, 3), dtype, 0, 1)
    grads_both(lambda a: mx.nd.MakeLoss(a, grad_scale=2.5, normalization=normalization, valid_thresh=thresh), x)


@pytest.mark.parametrize("cond_dtype", ["float32", "float16", "int32", "uint8", "bool"])
@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("rowwise", [False, True])
def test_where(rowwise, dtype, cond_dtype):
    x, y = rand((6, 4, 3), dtype, seed=1), rand((6, 4, 3), dtype, seed=2)
    cshape = (6,) if rowwise else (6, 4, 3)
    cond = (rand(cshape, "int32", seed=3) % 2).astype(cond_dtype)
    if cond_dtype == "float32" and not rowwise:
        cond[0, 0, :] = np.nan  # NaN counts as true
    g, c = both(lambda k, a, b: mx.nd.where(k, a, b), cond, x, y)
    same(g, c, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_where_grad(dtype):
    cond = (rand((5, 4), "int32", seed=3) % 2).astype(dtype)
    grads_both(lambda k, a, b: mx.nd.where(k, a, b), cond, rand((5, 4), dtype, seed=1), rand((5, 4), dtype, seed=2),
               diff=[1, 2])


PAD_CASES = [("constant", (0, 0, 0, 0, 1, 2, 2, 1), 1.5), ("edge", (0, 0, 0, 0, 2, 3, 1, 0), 0.0),
             ("reflect", (0, 0, 0, 0, 2, 1, 3, 3), 0.0), ("constant", (0, 0, 0, 0, 1, 0, 0, 1, 2, 2), -2.0),
             ("reflect", (0, 0, 0, 0, 1, 1, 2, 1, 1, 2), 0.0), ("edge", (0, 0, 0, 0, 0, 0, 4, 4, 1, 1), 0.0)]


@pytest.mark.parametrize("dtype", FLOATS + ["int32", "uint8"])
@pytest.mark.parametrize("mode,width,value", PAD_CASES)
def test_pad(mode, width, value, dtype):
    shape = (2, 3, 4, 5) if len(width) == 8 else (2, 2, 3, 4, 5)
    x = rand(shape, dtype)
    g, c = both(lambda a: mx.nd.Pad(a, mode=mode, pad_width=width, constant_value=value), x)
    same(g, c, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode,width,value", PAD_CASES)
def test_pad_grad(mode, width, value, dtype):
    shape = (2, 3, 4, 5) if len(width) == 8 else (2, 2, 3, 4, 5)
    grads_both(lambda a: mx.nd.Pad(a, mode=mode, pad_width=width, constant_value=value), rand(shape, dtype))


@pytest.mark.parametrize("dtype", FLOATS + ["int32"])
@pytest.mark.parametrize("axes", [(), (0,), (-1, 1)])
def test_slice_like(axes, dtype):
    x, like = rand((5, 6, 4), dtype), rand((3, 4, 2), dtype, seed=1)
    g, c = both(lambda a, b: mx.nd.slice_like(a, b, axes=axes), x, like)
    same(g, c, dtype)
    if dtype in FLOATS:
        grads_both(lambda a, b: mx.nd.slice_like(a, b, axes=axes), x, like, diff=[0])


@pytest.mark.parametrize("dtype", FLOATS + ["int64"])
@pytest.mark.parametrize("kw", [dict(indices=(0, 2, 5), axis=1), dict(indices=(), sections=2, axis=0),
                                dict(indices=(0, 1), axis=-1, squeeze_axis=False)])
def test_split_v2(kw, dtype):
    x = rand((4, 6, 3), dtype)
    cpu = mx.nd._internal._split_v2(mx.nd.array(x, dtype=dtype), **kw)
    gpu = mx.nd._internal._split_v2(mx.nd.array(x, dtype=dtype).as_in_context(GPU), **kw)
    cpu, gpu = (v if isinstance(v, (list, tuple)) else [v] for v in (cpu, gpu))
    assert len(cpu) == len(gpu)
    for a, b in zip(gpu, cpu):
        same(a, b, dtype)


# ---------------------------------------------------------------- argmax, pick

@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True), (-1, False), (2, True)])
def test_arg_reduce(name, axis, keepdims, dtype):
    x = rand((5, 7, 300), dtype, -4, 4)  # small integer range: many ties (first one wins)
    x = np.round(x).astype(dtype)
    g, c = both(lambda a: getattr(mx.nd, name)(a, axis=axis, keepdims=keepdims), x)
    same(g, c, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_arg_reduce_nan_and_inf(dtype):
    x = np.array([[1, np.nan, 3, np.nan], [-np.inf, -np.inf, -np.inf, -np.inf], [2, 5, 5, np.inf]], dtype=dtype)
    for name in ["argmax", "argmin"]:
        for axis in [None, 0, 1]:
            g, c = both(lambda a: getattr(mx.nd, name)(a, axis=axis), x)
            same(g, c, dtype)


@pytest.mark.parametrize("dtype", FLOATS + ["int32"])
def test_argmax_channel(dtype):
    x = np.round(rand((6, 10, 3), dtype, -3, 3)).astype(dtype)
    g, c = both(lambda a: mx.nd.argmax_channel(a), x)
    same(g, c, dtype)


def test_argmax_large_rows():
    x = rand((3, 100000), "float32", seed=5)
    g, c = both(lambda a: mx.nd.argmax(a, axis=1), x)
    same(g, c, "float32")
    g, c = both(lambda a: mx.nd.argmin(a), x)
    same(g, c, "float32")


@pytest.mark.parametrize("idx_dtype", ["float32", "float64", "float16", "int32", "int64", "uint8", "int8"])
@pytest.mark.parametrize("dtype", FLOATS + ["int32", "int64", "int8"])
@pytest.mark.parametrize("axis,keepdims,mode", [(-1, False, "clip"), (1, True, "wrap"), (0, False, "clip"),
                                                (0, False, "wrap")])
def test_pick(axis, keepdims, mode, dtype, idx_dtype):
    x = rand((4, 5, 3), dtype)
    ax = axis % 3
    rest = tuple(s for d, s in enumerate(x.shape) if d != ax)
    lo = 0 if idx_dtype == "uint8" else -9
    idx = rand(rest, "float64", lo, 9, seed=3)
    if idx_dtype.startswith("float"):
        idx = idx.astype(idx_dtype)  # fractional: truncated toward zero
    else:
        idx = np.trunc(idx).astype(idx_dtype)
    g, c = both(lambda a, i: mx.nd.pick(a, i, axis=axis, keepdims=keepdims, mode=mode), x, idx)
    same(g, c, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("axis,mode", [(-1, "clip"), (1, "wrap"), (0, "clip")])
def test_pick_grad(axis, mode, dtype):
    x = rand((4, 5, 3), dtype)
    ax = axis % 3
    rest = tuple(s for d, s in enumerate(x.shape) if d != ax)
    idx = np.trunc(rand(rest, "float64", -7, 7, seed=3)).astype("float32")
    grads_both(lambda a, i: mx.nd.pick(a, i, axis=axis, mode=mode), x, idx, diff=[0])


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_cross_entropy_style_loss_grad(dtype):
    # what gluon's SoftmaxCrossEntropyLoss records: log_softmax, pick, mean
    x, lab = rand((8, 10), dtype), np.arange(8).astype(dtype)
    grads_both(lambda a, l: -mx.nd.mean(mx.nd.pick(mx.nd.log_softmax(a), l, axis=-1)), x, lab, diff=[0])


# ---------------------------------------------------------------- topk, sort, argsort

def _ties(shape, dtype, seed=0):
    # few distinct values: many ties (broken by position, as on the CPU)
    return np.round(rand(shape, dtype, -3, 3, seed=seed)).astype(dtype)


@pytest.mark.parametrize("dtype", FLOATS + ["int32", "int64", "int8", "uint8"])
@pytest.mark.parametrize("ret_typ", ["indices", "value", "both", "mask"])
@pytest.mark.parametrize("axis,k,is_ascend", [(-1, 3, False), (1, 2, True), (0, 1, False), (None, 5, True),
                                              (-1, 0, False), (2, 7, True)])
def test_topk(axis, k, is_ascend, ret_typ, dtype):
    x = _ties((4, 5, 7), dtype)

    def f(a):
        r = mx.nd.topk(a, axis=axis, k=k, ret_typ=ret_typ, is_ascend=is_ascend)
        return mx.nd.concat(r[0].astype("float64"), r[1].astype("float64"), dim=0) if ret_typ == "both" else r

    g, c = both(f, x)
    same(g, c, "float64" if ret_typ == "both" else ("float32" if ret_typ == "indices" else dtype))


@pytest.mark.parametrize("idx_dtype", ["float32", "float64", "float16", "int32", "int64", "uint8"])
def test_topk_and_argsort_index_dtypes(idx_dtype):
    x = _ties((3, 40), "float32")
    g, c = both(lambda a: mx.nd.topk(a, k=10, dtype=idx_dtype), x)
    same(g, c, idx_dtype)
    g, c = both(lambda a: mx.nd.argsort(a, dtype=idx_dtype), x)
    same(g, c, idx_dtype)


@pytest.mark.parametrize("dtype", FLOATS + ["int32", "int64", "uint8"])
@pytest.mark.parametrize("axis,is_ascend", [(-1, True), (0, False), (None, True), (1, False)])
@pytest.mark.parametrize("shape", [(3, 9, 4), (2, 1000, 2), (2, 2048)])
def test_sort_argsort(shape, axis, is_ascend, dtype):
    if axis is None and np.prod(shape) > 2048:
        pytest.skip("flattened length above 2048 is not supported on GPU")
    x = _ties(shape, dtype, seed=4)
    g, c = both(lambda a: mx.nd.sort(a, axis=axis, is_ascend=is_ascend), x)
    same(g, c, dtype)
    g, c = both(lambda a: mx.nd.argsort(a, axis=axis, is_ascend=is_ascend), x)
    same(g, c, "float32")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_sort_nan(dtype):
    x = np.array([[3, np.nan, -1, np.inf, np.nan, -np.inf, 0, -0.0]], dtype=dtype)
    for is_ascend in [True, False]:
        g, c = both(lambda a: mx.nd.argsort(a, is_ascend=is_ascend), x)
        same(g, c, "float32")
        g, c = both(lambda a: mx.nd.topk(a, k=3, ret_typ="value", is_ascend=is_ascend), x)
        same(g, c, dtype)


def test_sort_longer_than_2048_is_a_clear_error():
    x = mx.nd.ones((3000,), ctx=GPU)
    with pytest.raises(mx.base.MXNetError) as e:
        mx.nd.sort(x).wait_to_read()
    assert "2048" in str(e.value)


@pytest.mark.parametrize("dtype", FLOATS)
def test_sort_topk_grad(dtype):
    x = rand((4, 9), dtype)  # distinct values
    grads_both(lambda a: mx.nd.sort(a, axis=1), x)
    grads_both(lambda a: mx.nd.topk(a, k=3, ret_typ="value", axis=0), x)


# ---------------------------------------------------------------- norm, all_finite, multi_sum_sq

@pytest.mark.parametrize("dtype", FLOATS + ["int32", "int64", "int8"])
@pytest.mark.parametrize("ord", [1, 2])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), ((0, 2), True), (-1, False)])
def test_norm(axis, keepdims, ord, dtype):
    x = rand((4, 5, 6), dtype, -2, 2)
    g, c = both(lambda a: mx.nd.norm(a, ord=ord, axis=axis, keepdims=keepdims), x)
    same(g, c, dtype)


@pytest.mark.parametrize("out_dtype", ["float16", "float32", "float64", "int32", "int64", "int8"])
def test_norm_out_dtype(out_dtype):
    x = rand((7, 9), "float32", -5, 5)
    g, c = both(lambda a: mx.nd.norm(a, axis=1, out_dtype=out_dtype), x)
    same(g, c, out_dtype)


def test_norm_float64_extremes():
    for v in [[1e200, 1e200], [1e-200, 1e-200, 0.0], [0.0, 0.0], [np.inf, 1.0], [np.nan, 1.0]]:
        g, c = both(lambda a: mx.nd.norm(a), np.array(v, dtype="float64"))
        same(g, c, "float64")
    g, c = both(lambda a: mx.nd.norm(a), np.array([1e30, 1e30], dtype="float32"))
    same(g, c, "float32")


@pytest.mark.parametrize("dtype", FLOATS)
def test_norm_grad(dtype):
    grads_both(lambda a: mx.nd.norm(a, axis=1), rand((4, 6), dtype, 0.5, 2))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("bad", [None, np.nan, np.inf, -np.inf])
def test_all_finite(bad, dtype):
    x = rand((3, 100), dtype)
    if bad is not None:
        x[2, 57] = bad
    g, c = both(lambda a: mx.nd.all_finite(a), x)
    same(g, c, "float32")
    y = rand((10,), "int32")
    g, c = both(lambda a, b, k: mx.nd.multi_all_finite(a, b, k, num_arrays=3), rand((5,), dtype), y, x)
    same(g, c, "float32")


def test_all_finite_without_init_keeps_the_output():
    for ctx in [GPU, mx.cpu()]:
        out = mx.nd.zeros((1,), ctx=ctx)
        mx.nd.all_finite(mx.nd.ones((4,), ctx=ctx), init_output=False, out=out)
        assert out.asnumpy()[0] == 0.0


@pytest.mark.parametrize("dtype", FLOATS + ["int32"])
def test_multi_sum_sq(dtype):
    xs = [rand((4, 7), dtype, seed=1), rand((100000,), dtype, seed=2), rand((1,), dtype, seed=3)]
    g, c = both(lambda a, b, d: mx.nd.multi_sum_sq(a, b, d, num_arrays=3), *xs)
    np.testing.assert_allclose(g.asnumpy(), c.asnumpy(), rtol=1e-5)


def test_reset_arrays():
    a = mx.nd.ones((3, 4), ctx=GPU)
    b = mx.nd.ones((5,), ctx=GPU, dtype="int32")
    mx.nd.reset_arrays(a, b, num_arrays=2)
    assert a.asnumpy().sum() == 0 and b.asnumpy().sum() == 0


@pytest.mark.parametrize("dtype", FLOATS + ["int32"])
@pytest.mark.parametrize("axes,keepdims", [((0, 1, 2), False), ((1,), False), ((0, 2), True), ((2,), True)])
def test_moments(axes, keepdims, dtype):
    x = rand((4, 6, 5), dtype)
    for k in range(2):
        g, c = both(lambda a: mx.nd.moments(a, axes=axes, keepdims=keepdims)[k], x)
        same(g, c, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("scalar", [1.0, 0.5, 3.0])
def test_smooth_l1(scalar, dtype):
    x = rand((200,), dtype, -3, 3)
    g, c = both(lambda a: mx.nd.smooth_l1(a, scalar=scalar), x)
    same(g, c, dtype)
    grads_both(lambda a: mx.nd.smooth_l1(a, scalar=scalar), x)


# ---------------------------------------------------------------- _arange, _eye, _linspace, Sequence*

@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("kw", [dict(start=0, stop=10), dict(start=2.5, stop=-3, step=-0.7), dict(start=5),
                                dict(start=1, stop=40, step=3, repeat=3), dict(start=-100, stop=300, step=7)])
def test_arange(kw, dtype):
    g = mx.nd.arange(ctx=GPU, dtype=dtype, **kw)
    c = mx.nd.arange(ctx=mx.cpu(), dtype=dtype, **kw)
    assert g.context == GPU
    same(g, c, dtype)


@pytest.mark.parametrize("dtype", FLOATS + ["int32", "uint8"])
@pytest.mark.parametrize("N,M,k", [(4, 0, 0), (3, 5, 1), (5, 3, -2), (2, 2, 5)])
def test_eye(N, M, k, dtype):
    same(mx.nd.eye(N, M, k, ctx=GPU, dtype=dtype), mx.nd.eye(N, M, k, ctx=mx.cpu(), dtype=dtype), dtype)


@pytest.mark.parametrize("dtype", FLOATS + ["int32"])
@pytest.mark.parametrize("kw", [dict(start=0, stop=1, num=11), dict(start=3, stop=-2, num=7, endpoint=False),
                                dict(start=1, stop=2, num=1)])
def test_linspace(kw, dtype):
    same(mx.nd.linspace(ctx=GPU, dtype=dtype, **kw), mx.nd.linspace(ctx=mx.cpu(), dtype=dtype, **kw), dtype)


SEQ_LENS = np.array([3, 0, 5, 1.7], dtype="float32")


@pytest.mark.parametrize("dtype", FLOATS + ["int32"])
@pytest.mark.parametrize("len_dtype", ["float32", "int32", "int64"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("use_len", [False, True])
def test_sequence_ops(use_len, axis, len_dtype, dtype):
    shape = (5, 4, 3) if axis == 0 else (4, 5, 3)
    x, lens = rand(shape, dtype), SEQ_LENS.astype(len_dtype)
    kw = dict(use_sequence_length=use_len, axis=axis)
    ops = [("SequenceMask", dict(kw, value=-1.5)), ("SequenceLast", kw)] + ([("SequenceReverse", kw)] if axis == 0 else [])
    for name, k in ops:
        if use_len:
            g, c = both(lambda a, l: getattr(mx.nd, name)(a, l, **k), x, lens)
        else:
            g, c = both(lambda a: getattr(mx.nd, name)(a, **k), x)
        same(g, c, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("axis", [0, 1])
def test_sequence_grads(axis, dtype):
    shape = (5, 4, 3) if axis == 0 else (4, 5, 3)
    x, lens = rand(shape, dtype), SEQ_LENS.astype(dtype)
    kw = dict(use_sequence_length=True, axis=axis)
    grads_both(lambda a, l: mx.nd.SequenceMask(a, l, **kw), x, lens, diff=[0])
    grads_both(lambda a, l: mx.nd.SequenceLast(a, l, **kw), x, lens, diff=[0])
    grads_both(lambda a: mx.nd.SequenceLast(a, axis=axis), x)
    if axis == 0:
        grads_both(lambda a, l: mx.nd.SequenceReverse(a, l, **kw), x, lens, diff=[0])


# ---------------------------------------------------------------- optimizer updates

def _common(clip=-1.0, wd=0.01, rescale=0.5):
    return dict(lr=0.1, wd=wd, rescale_grad=rescale, clip_gradient=clip)


# (name, number of states, kwargs, state initial values: "rand" or "pos")
UPDATES = [
    ("sgd_update", 0, _common()),
    ("sgd_update", 0, _common(clip=0.4)),
    ("sgd_mom_update", 1, dict(_common(), momentum=0.9)),
    ("sgd_mom_update", 1, dict(_common(clip=0.3), momentum=0.5)),
    ("nag_mom_update", 1, dict(_common(clip=0.5), momentum=0.9)),
    ("adam_update", 2, dict(_common(), beta1=0.8, beta2=0.99, epsilon=1e-6)),
    ("adam_update", 2, dict(_common(clip=0.2), beta1=0.9, beta2=0.999)),
    ("rmsprop_update", 1, dict(_common(), gamma1=0.9, epsilon=1e-6)),
    ("rmsprop_update", 1, dict(_common(clip=0.3), gamma1=0.95, clip_weights=1.0)),
    ("rmspropalex_update", 3, dict(_common(), gamma1=0.9, gamma2=0.8, epsilon=1e-4)),
    ("rmspropalex_update", 3, dict(_common(clip=0.3), clip_weights=0.8)),
    ("signsgd_update", 0, _common()),
    ("signum_update", 1, dict(_common(clip=0.5), momentum=0.9, wd_lh=0.02)),
    ("adagrad_update", 1, dict(_common(), epsilon=1e-6)),
    ("adagrad_update", 1, dict(_common(clip=0.2))),
    ("adadelta_update", 2, dict(wd=0.01, rescale_grad=0.5, clip_gradient=0.3, rho=0.8, epsilon=1e-4)),
    ("adadelta_update", 2, dict(wd=0.0, rescale_grad=1.0, rho=0.9)),
    ("ftrl_update", 2, dict(_common(), lamda1=0.01, beta=1.0)),
    ("ftrl_update", 2, dict(_common(clip=0.3), lamda1=0.5, beta=0.5)),
]

POSITIVE_STATES = {"rmsprop_update": [0], "rmspropalex_update": [0], "adagrad_update": [0], "adadelta_update": [0, 1],
                   "adam_update": [1], "ftrl_update": [1]}


def _run_steps(name, arrays, kw, steps=3, out_index=0, ctx=None, per_step=None):
    nds = [mx.nd.array(a, dtype=a.dtype).as_in_context(ctx) for a in arrays]
    op = getattr(mx.nd, name)
    outs = []
    for s in range(steps):
        kws = dict(kw, **(per_step(s) if per_step else {}))
        if out_index is None:
            outs.append(op(*nds, **kws))
        else:
            op(*nds, out=nds[out_index], **kws)
    res = [x.asnumpy() for x in nds] + [o.asnumpy() for o in outs]
    return res


def _compare_steps(name, arrays, kw, dtype, steps=3, out_index=0, per_step=None, tol=None):
    g = _run_steps(name, arrays, kw, steps, out_index, GPU, per_step)
    c = _run_steps(name, arrays, kw, steps, out_index, mx.cpu(), per_step)
    for k, (a, b) in enumerate(zip(g, c)):
        assert a.dtype == b.dtype and a.shape == b.shape
        rtol, atol = tol or TOL[str(a.dtype)]
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"{name}: array {k} after {steps} steps")


def _states(name, nstates, shape, dtype):
    st = []
    for k in range(nstates):
        if k in POSITIVE_STATES.get(name, []):
            st.append(rand(shape, dtype, 0.1, 1.0, seed=20 + k))
        else:
            st.append(rand(shape, dtype, -0.5, 0.5, seed=20 + k))
    return st


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", range(len(UPDATES)))
def test_update_in_place(case, dtype):
    name, nstates, kw = UPDATES[case]
    shape = (37, 29)
    w, g = rand(shape, dtype, -1, 1, seed=1), rand(shape, dtype, -2, 2, seed=2)
    tol = (1e-2, 1e-2) if dtype == "float16" else ((1e-4, 1e-5) if dtype == "float32" else None)
    _compare_steps(name, [w, g] + _states(name, nstates, shape, dtype), kw, dtype, tol=tol)


@pytest.mark.parametrize("dtype", FLOATS)
def test_update_to_new_output(dtype):
    # out is a new array: the weight input stays, the states still change
    shape = (50,)
    w, g, m = rand(shape, dtype, seed=1), rand(shape, dtype, seed=2), rand(shape, dtype, seed=3)
    tol = (1e-2, 1e-2) if dtype == "float16" else None
    _compare_steps("sgd_mom_update", [w, g, m], dict(_common(), momentum=0.9), dtype, out_index=None, tol=tol)


@pytest.mark.parametrize("wdtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("name,nstates,kw", [("mp_sgd_update", 0, _common(clip=0.5)),
                                             ("mp_sgd_mom_update", 1, dict(_common(), momentum=0.9)),
                                             ("mp_nag_mom_update", 1, dict(_common(clip=0.3), momentum=0.9))])
def test_mp_updates(name, nstates, kw, wdtype):
    shape = (33, 17)
    w32 = rand(shape, "float32", -1, 1, seed=1)
    w, g = w32.astype(wdtype), rand(shape, wdtype, -2, 2, seed=2)
    states = [rand(shape, "float32", -0.5, 0.5, seed=5) for _ in range(nstates)]
    _compare_steps(name, [w, g] + states + [w32], kw, wdtype, tol=(1e-5, 1e-6) if wdtype != "float16" else (2e-3, 2e-3))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("clip_grad", [-1.0, 0.3])
def test_ftml(clip_grad, dtype):
    shape = (40,)
    w, g = rand(shape, dtype, -1, 1, seed=1), rand(shape, dtype, -2, 2, seed=2)
    d, v, z = rand(shape, dtype, 0.1, 1, seed=3), rand(shape, dtype, 0.1, 1, seed=4), rand(shape, dtype, -1, 1, seed=5)
    kw = dict(lr=0.1, beta1=0.6, beta2=0.999, epsilon=1e-8, wd=0.01, rescale_grad=0.5, clip_grad=clip_grad)
    tol = (1e-2, 1e-2) if dtype == "float16" else ((1e-4, 1e-5) if dtype == "float32" else None)
    _compare_steps("ftml_update", [w, g, d, v, z], kw, dtype, per_step=lambda s: dict(t=s + 1), tol=tol)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("bias_correction", [True, False])
def test_lamb(bias_correction, dtype):
    shape = (30, 7)
    w, g = rand(shape, dtype, -1, 1, seed=1), rand(shape, dtype, -2, 2, seed=2)
    mean, var = rand(shape, dtype, -0.5, 0.5, seed=3), rand(shape, dtype, 0.1, 1, seed=4)
    kw = dict(beta1=0.9, beta2=0.999, epsilon=1e-6, bias_correction=bias_correction, wd=0.01, rescale_grad=0.5,
              clip_gradient=0.4)
    tol = (1e-2, 1e-2) if dtype == "float16" else ((1e-4, 1e-5) if dtype == "float32" else None)
    # phase 1 writes a new output (the update direction) and the states
    _compare_steps("lamb_update_phase1", [w, g, mean, var], kw, dtype, out_index=None,
                   per_step=lambda s: dict(t=s + 1), tol=tol)
    r1, r2 = np.array([1.5], dtype=dtype), np.array([0.5], dtype=dtype)
    for lo, hi in [(-1.0, -1.0), (2.0, -1.0), (-1.0, 1.0)]:
        _compare_steps("lamb_update_phase2", [w, g, r1, r2], dict(lr=0.1, lower_bound=lo, upper_bound=hi), dtype, tol=tol)
    z = np.array([0.0], dtype=dtype)
    _compare_steps("lamb_update_phase2", [w, g, z, r2], dict(lr=0.1), dtype, tol=tol)


def test_gluon_trainer_sgd_momentum_on_gpu():
    # a Dense layer trained 3 steps on GPU and CPU lands on the same weights
    def train(ctx):
        mx.random.seed(0)
        net = mx.gluon.nn.Dense(4, in_units=6)
        net.initialize(mx.init.Constant(0.1), ctx=ctx)
        tr = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3})
        x = mx.nd.array(rand((5, 6), "float32")).as_in_context(ctx)
        lab = mx.nd.array(np.array([0, 1, 2, 3, 1], dtype="float32")).as_in_context(ctx)
        loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
        for _ in range(3):
            with mx.autograd.record():
                loss = loss_fn(net(x), lab)
            loss.backward()
            tr.step(5)
        return [p.data().asnumpy() for p in net.collect_params().values()]

    try:
        g = train(GPU)
    except mx.base.MXNetError as e:  # FullyConnected may not have its CUDA path yet
        pytest.skip(str(e))
    for a, b in zip(g, train(mx.cpu())):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
