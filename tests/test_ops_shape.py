"""Shape-family operators through the Python API (``mx.nd.<op>`` and fluent methods),
checked against NumPy. Where MXNet 1.9.1's shapes differ from NumPy's (special reshape
codes, ``split`` returning a list, ``squeeze_axis``...), the expected values were
confirmed with the MXNet 1.9.1 oracle."""

import numpy as np
import pytest

import oxnet as mx

DTYPES = ["float32", "float64", "int32", "int64", "uint8", "int8", "float16"]


def _np(shape, dtype="float32"):
    """Distinct, dtype-safe values (0..n-1 wrapped into int8/uint8 range)."""
    n = int(np.prod(shape))
    x = np.arange(n) % 100
    return x.astype(dtype).reshape(shape)


def _pair(shape, dtype="float32"):
    x = _np(shape, dtype)
    return x, mx.nd.array(x, dtype=dtype)


def _check(got, want):
    assert isinstance(got, mx.nd.NDArray)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.dtype(got.dtype) == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got.asnumpy(), want)


# ---------------------------------------------------------------------------
# reshape


@pytest.mark.parametrize("shape, kwargs, want", [
    ((2, 3, 4), dict(shape=(4, 6)), (4, 6)),
    ((2, 3, 4), dict(shape=(0, -1)), (2, 12)),
    ((2, 3, 4), dict(shape=(-1,)), (24,)),
    ((2, 3, 4), dict(shape=(-2,)), (2, 3, 4)),
    ((2, 3, 4), dict(shape=(2, -2)), (2, 3, 4)),
    ((2, 3, 4), dict(shape=(-3, 4)), (6, 4)),
    ((2, 3, 4), dict(shape=(-3, -2)), (6, 4)),
    ((2, 3, 4), dict(shape=(0, -3)), (2, 12)),
    ((2, 3, 4), dict(shape=(-4, 1, 2, -2)), (1, 2, 3, 4)),
    ((2, 3, 4), dict(shape=(-4, -1, 2, -2)), (1, 2, 3, 4)),
    ((2, 3, 4), dict(shape=(2, -4, -1, 3, 4)), (2, 1, 3, 4)),
    ((2, 3, 4), dict(shape=(0, 0, 0)), (2, 3, 4)),
    ((2, 3, 4), dict(shape=(-1, 0), reverse=True), (6, 4)),
    ((2, 3, 4), dict(shape=(0, 0, -1), reverse=True), (2, 3, 4)),
    ((10, 5, 4), dict(shape=(-1, 0), reverse=False), (40, 5)),
    ((10, 5, 4), dict(shape=(-1, 0), reverse=True), (50, 4)),
    ((2, 3, 4), dict(target_shape=(4, 6)), (4, 6)),
    ((2, 3, 4), dict(shape=(1, -1, 1)), (1, 24, 1)),
])
def test_reshape_op_special_codes(shape, kwargs, want):
    x, a = _pair(shape)
    got = mx.nd.reshape(a, **kwargs)
    _check(got, x.reshape(want))
    # the operator makes a copy: writing into it leaves the input alone
    got[:] = -7
    np.testing.assert_array_equal(a.asnumpy(), x)


@pytest.mark.parametrize("dtype", DTYPES)
def test_reshape_dtypes(dtype):
    x, a = _pair((3, 4, 5), dtype)
    _check(mx.nd.reshape(a, shape=(5, -1)), x.reshape(5, -1))
    _check(mx.nd.Reshape(a, shape=(-3, 0)), x.reshape(12, 5))


@pytest.mark.parametrize("args, kwargs, want", [
    (((4, 6),), {}, (4, 6)),
    ((4, 6), {}, (4, 6)),
    ((4, -1), {}, (4, 6)),
    (((-3, -2),), {}, (6, 4)),
    ((), dict(shape=(6, 4)), (6, 4)),
    ((-1, 0), dict(reverse=True), (6, 4)),
    (((0, -4, 3, 1, 0),), {}, (2, 3, 1, 4)),
])
def test_reshape_method_is_a_view(args, kwargs, want):
    x, a = _pair((2, 3, 4))
    v = a.reshape(*args, **kwargs)
    _check(v, x.reshape(want))
    # shares memory both ways
    v[:] = 5
    np.testing.assert_array_equal(a.asnumpy(), np.full((2, 3, 4), 5, np.float32))
    a[:] = mx.nd.array(x)
    np.testing.assert_array_equal(v.asnumpy(), x.reshape(want))
    v[0] = 100
    assert (a.asnumpy().reshape(-1)[:int(np.prod(want[1:]))] == 100).all()


def test_reshape_method_view_of_view_and_of_row():
    x, a = _pair((4, 6))
    row = a[1]
    r = row.reshape((2, 3))
    _check(r, x[1].reshape(2, 3))
    r[1, 2] = -1
    assert a.asnumpy()[1, 5] == -1
    assert a.asnumpy()[2, 0] == x[2, 0]
    vv = a.reshape((3, 8)).reshape((24,))
    vv[23] = 42
    assert a.asnumpy()[3, 5] == 42


def test_reshape_method_errors():
    _, a = _pair((2, 3, 4))
    with pytest.raises(mx.base.MXNetError):
        a.reshape((7, 4))
    with pytest.raises(mx.base.MXNetError):
        a.reshape((-1, -1))
    with pytest.raises(TypeError):
        a.reshape((4, 6), bogus=1)


# ---------------------------------------------------------------------------
# transpose / swapaxes / expand_dims / squeeze / flatten


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8", "float16"])
@pytest.mark.parametrize("shape, axes", [
    ((2, 3), None), ((2, 3, 4), None), ((2, 3, 4), (1, 0, 2)), ((2, 3, 4), (2, 0, 1)),
    ((2, 3, 4, 5), (3, 1, 0, 2)), ((5,), None), ((2, 3, 4), (0, 1, 2)), ((1, 3, 1, 2), (2, 3, 0, 1)),
])
def test_transpose(dtype, shape, axes):
    x, a = _pair(shape, dtype)
    got = mx.nd.transpose(a) if axes is None else mx.nd.transpose(a, axes=axes)
    _check(got, np.transpose(x, axes))


def test_transpose_large_parallel_path():
    x = np.random.RandomState(0).rand(70, 33, 41).astype(np.float32)
    a = mx.nd.array(x)
    _check(mx.nd.transpose(a, axes=(2, 0, 1)), np.transpose(x, (2, 0, 1)))
    _check(mx.nd.transpose(a), np.transpose(x))
    y = np.random.RandomState(1).rand(300, 257)
    _check(mx.nd.transpose(mx.nd.array(y, dtype="float64")), y.T)


@pytest.mark.parametrize("shape, d1, d2", [
    ((2, 3, 4), 0, 2), ((2, 3, 4), 1, 1), ((2, 3, 4), -1, 0), ((2, 3), 0, 1), ((2, 3, 4, 5), 1, 3),
])
def test_swapaxes(shape, d1, d2):
    x, a = _pair(shape)
    _check(mx.nd.swapaxes(a, dim1=d1, dim2=d2), np.swapaxes(x, d1, d2))
    _check(mx.nd.SwapAxis(a, dim1=d1, dim2=d2), np.swapaxes(x, d1, d2))


def test_swapaxes_defaults_swap_0_0():
    x, a = _pair((2, 3, 4))
    _check(mx.nd.swapaxes(a), x)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3])
def test_expand_dims(axis):
    x, a = _pair((2, 3), "int32")
    _check(mx.nd.expand_dims(a, axis=axis), np.expand_dims(x, axis))


@pytest.mark.parametrize("shape, axis", [
    ((1, 2, 1, 3), None), ((1, 2, 1, 3), 0), ((1, 2, 1, 3), 2), ((1, 2, 1, 3), (0, 2)),
    ((1, 2, 1, 3), (0, -2)), ((2, 3), None), ((1, 1, 3), (-3,)),
])
def test_squeeze(shape, axis):
    x, a = _pair(shape)
    got = mx.nd.squeeze(a) if axis is None else mx.nd.squeeze(a, axis=axis)
    _check(got, np.squeeze(x, axis))


def test_squeeze_all_ones_keeps_one_dim():
    # MXNet never returns a 0-d array: squeezing (1, 1) gives (1,)
    x, a = _pair((1, 1))
    _check(mx.nd.squeeze(a), x.reshape(1))


@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 3), (4,), (2, 1, 3, 1), (0, 3)])
def test_flatten(shape):
    x, a = _pair(shape)
    want = x.reshape(shape[0], int(np.prod(shape[1:]))) if len(shape) > 1 else x.reshape(shape[0], 1)
    _check(mx.nd.flatten(a), want)
    _check(mx.nd.Flatten(a), want)
    _check(a.flatten(), want)


# ---------------------------------------------------------------------------
# concat / stack / split


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8"])
@pytest.mark.parametrize("shapes, dim", [
    ([(2, 3), (2, 2)], 1), ([(2, 3), (1, 3)], 0), ([(2, 3), (2, 3), (2, 3)], -1),
    ([(2, 3, 4), (2, 1, 4), (2, 5, 4)], 1), ([(2, 3, 4), (2, 3, 1)], 2), ([(3,), (4,)], 0),
    ([(2, 3)], 0), ([(0, 3), (2, 3)], 0),
])
def test_concat(dtype, shapes, dim):
    xs = [_np(s, dtype) + i for i, s in enumerate(shapes)]
    arrs = [mx.nd.array(x, dtype=dtype) for x in xs]
    want = np.concatenate(xs, axis=dim)
    _check(mx.nd.concat(*arrs, dim=dim), want)
    _check(mx.nd.Concat(*arrs, dim=dim, num_args=len(arrs)), want)
    _check(mx.nd.concatenate(arrs, axis=dim), want)


def test_concat_default_dim_is_1():
    x, y = _np((2, 3)), _np((2, 2)) + 10
    _check(mx.nd.concat(mx.nd.array(x), mx.nd.array(y)), np.concatenate([x, y], 1))


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_stack(axis):
    xs = [_np((2, 3)) + 10 * i for i in range(3)]
    arrs = [mx.nd.array(x) for x in xs]
    _check(mx.nd.stack(*arrs, axis=axis), np.stack(xs, axis=axis))


def test_stack_default_axis_and_dtype():
    xs = [_np((4,), "int32") * k for k in (1, 2)]
    _check(mx.nd.stack(*[mx.nd.array(x, dtype="int32") for x in xs]), np.stack(xs))


@pytest.mark.parametrize("shape, n, axis, squeeze", [
    ((2, 6), 3, 1, False), ((2, 6), 2, 0, False), ((2, 6), 2, 0, True), ((4, 6), 1, 1, False),
    ((2, 6), 3, -1, False), ((3, 2, 4), 3, 0, True), ((3, 2, 4), 4, 2, True), ((2, 6), 6, 1, True),
])
def test_split(shape, n, axis, squeeze):
    x, a = _pair(shape)
    got = mx.nd.split(a, num_outputs=n, axis=axis, squeeze_axis=squeeze)
    want = np.split(x, n, axis=axis)
    if squeeze:
        want = [np.squeeze(w, axis=axis) for w in want]
    if n == 1:
        # one output: MXNet returns the array itself, not a list
        _check(got, want[0])
        return
    assert isinstance(got, list) and len(got) == n
    for g, w in zip(got, want):
        _check(g, w)
    same = mx.nd.SliceChannel(a, num_outputs=n, axis=axis, squeeze_axis=squeeze)
    for g, w in zip(same, want):
        _check(g, w)
    fluent = a.split(num_outputs=n, axis=axis, squeeze_axis=squeeze)
    for g, w in zip(fluent, want):
        _check(g, w)


def test_split_default_axis_is_1():
    x, a = _pair((2, 4))
    got = mx.nd.split(a, num_outputs=2)
    for g, w in zip(got, np.split(x, 2, axis=1)):
        _check(g, w)


# ---------------------------------------------------------------------------
# slice / slice_axis


@pytest.mark.parametrize("begin, end, step", [
    ((0, 1), (2, 3), None),
    ((None, 1), (None, None), None),
    ((1, 2, 3), (None, 0, 0), (-1, -1, -2)),
    ((-1, -2), (None, -1), None),
    ((0, 0, 0), (2, 3, 4), (1, 2, 3)),
    ((0, 2), (2, 1), None),
    ((None, None, None), (None, None, None), (None, None, -1)),
    ((1,), (2,), None),
    ((None, None, 3), (None, None, None), (1, -1, -1)),
    ((0,), (None,), (2,)),
])
@pytest.mark.parametrize("dtype", ["float32", "int32", "float64"])
def test_slice(begin, end, step, dtype):
    x, a = _pair((2, 3, 4), dtype)
    kw = dict(begin=begin, end=end)
    if step is not None:
        kw["step"] = step
    key = tuple(slice(b, e, s) for b, e, s in zip(begin, end, step or (None,) * len(begin)))
    _check(mx.nd.slice(a, **kw), x[key])
    _check(mx.nd.crop(a, **kw), x[key])
    _check(a.slice(**kw), x[key])


def test_slice_1d_negative_step():
    x, a = _pair((10,))
    _check(mx.nd.slice(a, begin=(8,), end=(None,), step=(-3,)), x[8::-3])
    _check(mx.nd.slice(a, begin=(None,), end=(None,), step=(-3,)), x[::-3])
    _check(mx.nd.slice(a, begin=(None,), end=(2,), step=(-3,)), x[:2:-3])


@pytest.mark.parametrize("axis, begin, end", [
    (1, 1, 3), (-1, -3, None), (2, 0, -1), (0, 1, 2), (0, 0, None), (1, -2, -1),
])
def test_slice_axis(axis, begin, end):
    x, a = _pair((2, 3, 4))
    key = [slice(None)] * 3
    key[axis] = slice(begin, end)
    want = x[tuple(key)]
    _check(mx.nd.slice_axis(a, axis=axis, begin=begin, end=end), want)
    _check(a.slice_axis(axis=axis, begin=begin, end=end), want)


# ---------------------------------------------------------------------------
# tile / repeat / reverse


@pytest.mark.parametrize("reps", [(2,), (2, 2), (2, 1, 3), (1, 1), (3, 1, 1, 2), (1,)])
@pytest.mark.parametrize("dtype", ["float32", "int32", "float64"])
def test_tile(reps, dtype):
    x, a = _pair((2, 3), dtype)
    _check(mx.nd.tile(a, reps=reps), np.tile(x, reps))
    _check(a.tile(reps=reps), np.tile(x, reps))


def test_tile_large():
    x = np.random.RandomState(3).rand(130, 257).astype(np.float32)
    _check(mx.nd.tile(mx.nd.array(x), reps=(2, 3)), np.tile(x, (2, 3)))


@pytest.mark.parametrize("repeats, axis", [(2, None), (2, 1), (3, 0), (2, -2), (1, -1), (4, 2)])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_repeat(repeats, axis, dtype):
    x, a = _pair((2, 3, 2), dtype)
    kw = {} if axis is None else dict(axis=axis)
    _check(mx.nd.repeat(a, repeats=repeats, **kw), np.repeat(x, repeats, axis=axis))
    _check(a.repeat(repeats=repeats, **kw), np.repeat(x, repeats, axis=axis))


@pytest.mark.parametrize("axis", [0, 1, 2, (0, 2), (0, 1, 2), (2, 0), ()])
@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8"])
def test_reverse_and_flip(axis, dtype):
    x, a = _pair((2, 3, 4), dtype)
    want = np.flip(x, axis) if axis != () else x
    _check(mx.nd.reverse(a, axis=axis), want)
    _check(mx.nd.flip(a, axis=axis), want)
    _check(a.flip(axis=axis), want)


def test_reverse_large():
    x = np.random.RandomState(4).rand(100, 700).astype(np.float32)
    _check(mx.nd.reverse(mx.nd.array(x), axis=1), x[:, ::-1])
    _check(mx.nd.reverse(mx.nd.array(x), axis=(0, 1)), x[::-1, ::-1])


# ---------------------------------------------------------------------------
# broadcast_to / broadcast_axis / broadcast_like


@pytest.mark.parametrize("shape, target, want", [
    ((1, 3), (2, 3), (2, 3)),
    ((1, 3), (2, 0), (2, 3)),
    ((3, 1), (3, 5), (3, 5)),
    ((1, 1, 4), (2, 3, 4), (2, 3, 4)),
    ((2, 1, 1), (0, 4, 5), (2, 4, 5)),
    ((2, 3), (2, 3), (2, 3)),
    ((1,), (6,), (6,)),
])
@pytest.mark.parametrize("dtype", ["float32", "int32", "float64"])
def test_broadcast_to(shape, target, want, dtype):
    x, a = _pair(shape, dtype)
    _check(mx.nd.broadcast_to(a, shape=target), np.broadcast_to(x, want))


def test_broadcast_to_large():
    x = np.random.RandomState(5).rand(1, 300).astype(np.float32)
    _check(mx.nd.broadcast_to(mx.nd.array(x), shape=(400, 300)), np.broadcast_to(x, (400, 300)))
    y = x.reshape(300, 1)
    _check(mx.nd.broadcast_to(mx.nd.array(y), shape=(300, 400)), np.broadcast_to(y, (300, 400)))


@pytest.mark.parametrize("axis, size, want", [
    ((0, 2), (2, 4), (2, 3, 4)), (2, 5, (1, 3, 5)), (0, 3, (3, 3, 1)), ((2,), (2,), (1, 3, 2)),
    ((), (), (1, 3, 1)),
])
def test_broadcast_axis(axis, size, want):
    x, a = _pair((1, 3, 1))
    _check(mx.nd.broadcast_axis(a, axis=axis, size=size), np.broadcast_to(x, want))
    _check(mx.nd.broadcast_axes(a, axis=axis, size=size), np.broadcast_to(x, want))
    _check(a.broadcast_axes(axis=axis, size=size), np.broadcast_to(x, want))


@pytest.mark.parametrize("lshape, rshape, kw, want", [
    ((1, 3), (4, 3), {}, (4, 3)),
    ((1, 3, 1), (2, 3, 5), {}, (2, 3, 5)),
    ((1, 3), (4, 3, 5), dict(lhs_axes=(0,), rhs_axes=(2,)), (5, 3)),
    ((1, 3, 1), (7, 6), dict(lhs_axes=(0, 2), rhs_axes=(1, 0)), (6, 3, 7)),
    ((1, 3), (4, 5, 2), dict(lhs_axes=(-2,), rhs_axes=(-1,)), (2, 3)),
])
def test_broadcast_like(lshape, rshape, kw, want):
    x, a = _pair(lshape)
    r = mx.nd.ones(rshape)
    _check(mx.nd.broadcast_like(a, r, **kw), np.broadcast_to(x, want))
    _check(a.broadcast_like(r, **kw), np.broadcast_to(x, want))


def test_broadcast_ops_are_copies():
    x, a = _pair((1, 3))
    b = mx.nd.broadcast_to(a, shape=(2, 3))
    b[:] = 0
    np.testing.assert_array_equal(a.asnumpy(), x)


def test_broadcast_to_method_extends_rank():
    x, a = _pair((3,))
    _check(a.broadcast_to((2, 3)), np.broadcast_to(x, (2, 3)))
    y, b = _pair((3, 1))
    _check(b.broadcast_to((2, 3, 4)), np.broadcast_to(y, (2, 3, 4)))


def test_broadcast_like_method_extends_rank():
    x, a = _pair((3,))
    _check(a.broadcast_like(mx.nd.ones((2, 3))), np.broadcast_to(x, (2, 3)))


# ---------------------------------------------------------------------------
# fluent methods of the family


def test_fluent_shape_methods():
    x, a = _pair((2, 3, 4))
    _check(a.T, x.T)
    _check(a.transpose(), x.T)
    _check(a.transpose(axes=(2, 0, 1)), x.transpose(2, 0, 1))
    _check(a.swapaxes(0, 1), x.swapaxes(0, 1))
    _check(a.expand_dims(1), x[:, None])
    _check(a.reshape((2, 1, 3, 1, 4)).squeeze(), x)
    _check(a.flatten(), x.reshape(2, 12))
    _check(a.tile(reps=(2,)), np.tile(x, 2))
    _check(a.repeat(repeats=2, axis=0), np.repeat(x, 2, 0))
    _check(a.flip(axis=0), x[::-1])
    _check(a.slice_axis(axis=1, begin=0, end=2), x[:, :2])
    _check(a.slice(begin=(1, 1), end=(2, 3)), x[1:2, 1:3])
    m = _np((2, 3))
    _check(mx.nd.array(m).T, m.T)
    v = _np((5,))
    _check(mx.nd.array(v).T, v)


def test_ops_on_views_read_the_view():
    x, a = _pair((4, 3, 2))
    v = a[1:3]
    _check(mx.nd.transpose(v), x[1:3].T)
    _check(mx.nd.flip(a[2], axis=0), x[2][::-1])
    _check(mx.nd.concat(a[0], a[3], dim=0), np.concatenate([x[0], x[3]], 0))
    r = a.reshape((6, 4))
    _check(mx.nd.slice_axis(r, axis=1, begin=1, end=3), x.reshape(6, 4)[:, 1:3])


def test_out_argument_for_shape_ops():
    x, a = _pair((2, 3))
    out = mx.nd.zeros((3, 2))
    res = mx.nd.transpose(a, out=out)
    assert res is out or res.shape == (3, 2)
    np.testing.assert_array_equal(out.asnumpy(), x.T)
    out2 = mx.nd.zeros((2, 6))
    mx.nd.tile(a, reps=(1, 2), out=out2)
    np.testing.assert_array_equal(out2.asnumpy(), np.tile(x, (1, 2)))
