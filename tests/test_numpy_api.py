"""mx.np / mx.npx against NumPy: creation, elementwise math with broadcasting and
MXNet's type promotion, reductions, shapes, indexing, printing, autograd."""
import numpy as onp
import pytest

import oxnet as mx
from oxnet import np, npx


def _rand(*shape):
    return onp.random.RandomState(0).uniform(-2, 2, size=shape).astype("float32")


def _check(mx_arr, expected, rtol=1e-5, atol=1e-6, dtype=None):
    assert isinstance(mx_arr, np.ndarray)
    expected = onp.asarray(expected)
    assert mx_arr.shape == expected.shape
    if dtype is not None:
        assert mx_arr.dtype == onp.dtype(dtype)
    onp.testing.assert_allclose(mx_arr.asnumpy(), expected, rtol=rtol, atol=atol)


def test_module_names():
    assert mx.np is mx.numpy and mx.npx is mx.numpy_extension
    import oxnet.numpy as m
    assert m.ndarray is np.ndarray


@pytest.mark.parametrize("fn,args", [
    ("zeros", ((2, 3),)), ("ones", ((4,),)), ("zeros", ((),)), ("ones", (0,)),
])
def test_creation_shapes(fn, args):
    a = getattr(np, fn)(*args)
    _check(a, getattr(onp, fn)(*args), dtype="float32")


def test_creation():
    _check(np.array([[1, 2], [3, 4]]), [[1, 2], [3, 4]], dtype="float32")
    _check(np.array(onp.arange(6, dtype="int32")), onp.arange(6), dtype="int32")
    _check(np.array(3.5), onp.array(3.5), dtype="float32")
    _check(np.full((2, 2), 7), onp.full((2, 2), 7.0), dtype="float32")
    _check(np.full((2,), 7, dtype="int64"), onp.full((2,), 7), dtype="int64")
    assert np.empty((3, 2)).shape == (3, 2)
    _check(np.arange(5), onp.arange(5), dtype="float32")
    _check(np.arange(1, 3, 0.5), onp.arange(1, 3, 0.5))
    _check(np.arange(10, 0, -3, dtype="int32"), onp.arange(10, 0, -3), dtype="int32")
    assert np.arange(3, 1).shape == (0,)
    _check(np.eye(3, 4, 1), onp.eye(3, 4, 1))
    _check(np.linspace(0, 1, 5), onp.linspace(0, 1, 5))
    x = np.array(_rand(2, 3))
    _check(np.zeros_like(x), onp.zeros((2, 3)))
    _check(np.ones_like(x, dtype="int32"), onp.ones((2, 3)), dtype="int32")
    _check(np.full_like(x, 2.5), onp.full((2, 3), 2.5))
    b = np.asarray(x)
    assert b is x


def test_repr_and_str():
    assert repr(np.array([1, 2])) == "array([1., 2.])"
    assert repr(np.array([1, 2], dtype="int32")) == "array([1, 2], dtype=int32)"
    assert repr(np.array([1, 2], dtype="float64")) == "array([1., 2.], dtype=float64)"
    assert repr(np.array(2.0)) == "array(2.)"
    assert repr(np.array([True, False], dtype="bool")) == "array([ True, False])"
    assert str(np.array([1, 2])) == "[1. 2.]"


def test_attributes_and_conversion():
    a_np = _rand(2, 3)
    a = np.array(a_np)
    assert a.shape == (2, 3) and a.ndim == 2 and a.size == 6
    assert a.dtype == onp.dtype("float32") and a.ctx == mx.cpu()
    nd = a.as_nd_ndarray()
    assert isinstance(nd, mx.nd.NDArray)
    nd[0, 0] = 5  # shares memory
    assert a[0, 0].item() == 5
    back = nd.as_np_ndarray()
    assert isinstance(back, np.ndarray)
    assert onp.array(a).shape == (2, 3)
    assert a.tolist() == a.asnumpy().tolist()
    assert float(np.array(2.5)) == 2.5 and int(np.array(3)) == 3
    with pytest.raises(TypeError):
        float(a)
    with pytest.raises(TypeError):
        len(np.array(1.0))
    _check(a.astype("int32"), a.asnumpy().astype("int32"), dtype="int32")
    c = a.copy()
    c[:] = 0
    assert a.asnumpy().any()


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "true_divide", "power",
                                  "maximum", "minimum", "hypot", "mod"])
@pytest.mark.parametrize("shapes", [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1, 3), (2, 1)),
                                    ((), (2,)), ((3,), ())])
def test_binary_broadcast(name, shapes):
    a, b = _rand(*shapes[0]), _rand(*shapes[1]) + 3
    if name == "power":
        a = onp.abs(a) + 0.5
    res = getattr(np, name)(np.array(a), np.array(b))
    _check(res, getattr(onp, name)(a, b), rtol=1e-4, atol=1e-5, dtype="float32")


def test_operators_and_scalars():
    a_np, b_np = _rand(2, 3), _rand(3) + 3
    a, b = np.array(a_np), np.array(b_np)
    _check(a + b, a_np + b_np)
    _check(a - 1, a_np - 1)
    _check(1 - a, 1 - a_np)
    _check(2 * a, 2 * a_np)
    _check(a / b, a_np / b_np, rtol=1e-5)
    _check(1 / b, 1 / b_np, rtol=1e-5)
    _check(a ** 2, a_np ** 2, rtol=1e-5)
    _check(2 ** a, 2 ** a_np, rtol=1e-5)
    _check(-a, -a_np)
    _check(abs(a), abs(a_np))
    _check(a // b, a_np // b_np)
    _check(a % b, onp.mod(a_np, b_np), rtol=1e-5, atol=1e-5)
    _check(a @ np.array(_rand(3, 4)), a_np @ _rand(3, 4), rtol=1e-5)
    for op in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
        _check(getattr(a, op)(b), getattr(a_np, op)(b_np), dtype="bool")
    assert (a == None) is False  # noqa: E711 - as MXNet
    c = np.array(a_np)
    c += 1
    c *= b
    _check(c, (a_np + 1) * b_np, rtol=1e-5)


def test_type_promotion():
    i = np.array([1, 2, 3], dtype="int32")
    f = np.array([0.5, 0.5, 0.5])
    assert (i + f).dtype == onp.float32  # MXNet: int32 + float32 is float32
    assert (i + 1).dtype == onp.int32
    assert (i + 1.5).dtype == onp.float32
    _check(i + 1.5, [2.5, 3.5, 4.5])
    assert (i / 2).dtype == onp.float32
    _check(i / 2, [0.5, 1, 1.5])
    assert (i + np.array([1, 2, 3], dtype="int64")).dtype == onp.int64
    assert (f + np.array([1, 2, 3], dtype="float64")).dtype == onp.float64
    _check(i // 2, [0, 1, 1], dtype="int32")
    with pytest.raises(TypeError):
        i += 1.5


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "cos", "tanh", "abs",
                                  "negative", "square", "floor", "ceil", "sign", "log1p",
                                  "expm1", "arctan", "reciprocal", "trunc", "cbrt"])
def test_unary(name):
    a = _rand(3, 4)
    if name in ("log", "sqrt", "log1p", "reciprocal"):
        a = onp.abs(a) + 0.1
    _check(getattr(np, name)(np.array(a)), getattr(onp, name)(a), rtol=1e-5, atol=1e-6)


def test_unary_int_to_float():
    i = np.array([1, 4], dtype="int32")
    _check(np.sqrt(i), [1, 2], dtype="float32")
    _check(np.abs(np.array([-1, 2], dtype="int32")), [1, 2], dtype="int32")
    _check(np.logical_not(np.array([0, 1.0])), [True, False], dtype="bool")


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(name, axis, keepdims):
    a = _rand(2, 3, 4)
    res = getattr(np, name)(np.array(a), axis=axis, keepdims=keepdims)
    _check(res, getattr(onp, name)(a, axis=axis, keepdims=keepdims), rtol=1e-5, atol=1e-5)
    meth = getattr(np.array(a), name)(axis=axis, keepdims=keepdims)
    assert meth.shape == res.shape


def test_reduction_details():
    i = np.array([[1, 2], [3, 4]], dtype="int32")
    assert np.mean(i).dtype == onp.float32
    _check(np.mean(i), 2.5)
    assert np.sum(i).shape == ()
    _check(np.sum(np.array([True, True, False], dtype="bool")), 2, dtype="int64")
    _check(np.sum(np.array(_rand(2, 3)), dtype="float64"), _rand(2, 3).sum(dtype="float64"),
           dtype="float64", rtol=1e-5)
    with pytest.raises(ValueError):
        np.max(np.zeros((0,)))
    with pytest.raises(ValueError):
        np.sum(np.ones((2, 3)), axis=2)
    a = _rand(3, 4)
    _check(np.argmax(np.array(a)), onp.argmax(a), dtype="int64")
    _check(np.argmin(np.array(a), axis=1), onp.argmin(a, axis=1), dtype="int64")
    _check(np.array(a).argmax(axis=0), onp.argmax(a, axis=0))


def test_shape_functions():
    a_np = _rand(2, 3, 4)
    a = np.array(a_np)
    _check(np.reshape(a, (4, -1)), a_np.reshape(4, -1))
    _check(a.reshape(6, 4), a_np.reshape(6, 4))
    _check(a.reshape((-1,)), a_np.reshape(-1))
    with pytest.raises(ValueError):
        a.reshape(5, -1)
    _check(np.transpose(a), a_np.transpose())
    _check(a.transpose(1, 0, 2), a_np.transpose(1, 0, 2))
    _check(a.T, a_np.T)
    _check(np.swapaxes(a, 0, 2), onp.swapaxes(a_np, 0, 2))
    _check(np.expand_dims(a, 1), onp.expand_dims(a_np, 1))
    _check(np.squeeze(np.ones((1, 3, 1))), onp.ones(3))
    with pytest.raises(ValueError):
        np.squeeze(a, axis=0)
    _check(np.broadcast_to(np.array(_rand(3, 1)), (2, 3, 4)),
           onp.broadcast_to(_rand(3, 1), (2, 3, 4)))
    with pytest.raises(ValueError):
        np.broadcast_to(a, (3, 3, 4))
    _check(np.ravel(a), a_np.ravel())
    _check(a.flatten(), a_np.flatten())
    _check(np.clip(a, -1, 1), onp.clip(a_np, -1, 1))
    _check(np.where(a > 0, a, np.zeros_like(a)), onp.where(a_np > 0, a_np, 0))
    _check(np.where(a > 0, 1.0, -1.0), onp.where(a_np > 0, 1.0, -1.0))


def test_join_split():
    a_np, b_np = _rand(2, 3), _rand(2, 3) + 1
    a, b = np.array(a_np), np.array(b_np)
    for axis in (0, 1, -1):
        _check(np.concatenate([a, b], axis=axis), onp.concatenate([a_np, b_np], axis=axis))
    _check(np.concatenate([a, b], axis=None), onp.concatenate([a_np, b_np], axis=None))
    for axis in (0, 1, 2, -1):
        _check(np.stack([a, b], axis=axis), onp.stack([a_np, b_np], axis=axis))
    with pytest.raises(ValueError):
        np.stack([a, np.ones((3,))])
    with pytest.raises(ValueError):
        np.concatenate([a, np.ones((3,))])
    x_np = _rand(6, 4)
    x = np.array(x_np)
    for got, want in zip(np.split(x, 3), onp.split(x_np, 3)):
        _check(got, want)
    for got, want in zip(np.split(x, [1, 3], axis=1), onp.split(x_np, [1, 3], axis=1)):
        _check(got, want)
    for got, want in zip(np.array_split(x, 4), onp.array_split(x_np, 4)):
        _check(got, want)
    with pytest.raises(ValueError):
        np.split(x, 4)


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (3,)), ((2, 3), (3, 4)),
                                   ((2, 3, 4), (4, 5)), ((2, 3), (4, 3, 5)), ((), (2, 2))])
def test_dot(sa, sb):
    a, b = _rand(*sa), _rand(*sb)
    _check(np.dot(np.array(a), np.array(b)), onp.dot(a, b), rtol=1e-4, atol=1e-5)


def test_dot_bad_shapes():
    with pytest.raises(ValueError):
        np.dot(np.ones((2, 3)), np.ones((2, 3)))


def test_indexing():
    a_np = _rand(4, 5, 6)
    a = np.array(a_np)
    for key in [0, -1, (1, 2), (1, 2, 3), slice(1, 3), (slice(None), 2),
                (Ellipsis, 1), (1, slice(None, None, 2)), onp.array([0, 2]), [1, 3]]:
        _check(a[key], a_np[key])
    _check(a[np.array([3, 0], dtype="int64")], a_np[[3, 0]])
    assert a[1, 2, 3].shape == ()
    b = np.zeros((3, 4))
    b[1] = 2
    b[:, 0] = np.array([7, 8, 9])
    want = onp.zeros((3, 4))
    want[1] = 2
    want[:, 0] = [7, 8, 9]
    _check(b, want)
    s = np.array(1.0)
    s[()] = 5
    assert s.item() == 5.0
    with pytest.raises(IndexError):
        s[0]
    with pytest.raises(NotImplementedError):
        a[a > 0, 1]  # a boolean mask inside a tuple key is not built
    assert [x.shape for x in np.ones((2, 3))] == [(3,), (3,)]


def test_random():
    mx.random.seed(1)
    u = np.random.uniform(size=(100, 10))
    assert u.shape == (100, 10) and u.dtype == onp.float32
    v = u.asnumpy()
    assert (v >= 0).all() and (v < 1).all() and 0.4 < v.mean() < 0.6
    assert np.random.uniform(2, 3).shape == ()
    n = np.random.normal(1.0, 2.0, size=(2000,)).asnumpy()
    assert abs(n.mean() - 1.0) < 0.2 and abs(n.std() - 2.0) < 0.2
    r = np.random.randint(0, 5, size=(50,))
    assert r.dtype == onp.int64
    assert set(r.asnumpy().tolist()) <= set(range(5))
    with pytest.raises(NotImplementedError):
        np.random.uniform(np.zeros(2), 1)


def test_autograd():
    x = np.array(_rand(3, 4))
    x.attach_grad()
    with mx.autograd.record():
        y = (x * x + 2 * x).sum()
    y.backward()
    _check(x.grad, 2 * x.asnumpy() + 2, rtol=1e-5)


def test_npx_switches_and_ops():
    assert not npx.is_np_array()
    npx.set_np()
    try:
        assert npx.is_np_array() and npx.is_np_shape()
    finally:
        npx.reset_np()
    assert not npx.is_np_array() and not npx.is_np_shape()

    @mx.util.use_np
    def inside():
        return npx.is_np_array(), mx.util.is_np_shape()
    assert inside() == (True, True)
    from oxnet.test_utils import use_np
    assert use_np is mx.util.use_np
    a = _rand(2, 5)
    _check(npx.relu(np.array(a)), onp.maximum(a, 0))
    _check(npx.sigmoid(np.array(a)), 1 / (1 + onp.exp(-a)), rtol=1e-5)
    e = onp.exp(a - a.max(axis=-1, keepdims=True))
    _check(npx.softmax(np.array(a)), e / e.sum(-1, keepdims=True), rtol=1e-5)
    _check(npx.log_softmax(np.array(a)), onp.log(e / e.sum(-1, keepdims=True)), rtol=1e-4,
           atol=1e-5)
    _check(npx.one_hot(np.array([0, 2]), 3), onp.eye(3)[[0, 2]])


def test_gluon_split_data_np():
    x = np.random.uniform(size=(12, 5, 3))
    parts = mx.gluon.utils.split_data(x, 4, batch_axis=1, even_split=False)
    assert all(isinstance(p, np.ndarray) for p in parts)
    _check(np.concatenate(parts, axis=1), x.asnumpy())


def test_more_functions():
    a_np, b_np = _rand(2, 3), _rand(2, 3) + 3
    a, b = np.array(a_np), np.array(b_np)
    _check(np.divide(a, b), a_np / b_np, rtol=1e-5)
    _check(np.remainder(a, b), onp.remainder(a_np, b_np), rtol=1e-5, atol=1e-5)
    _check(np.floor_divide(a, b), onp.floor_divide(a_np, b_np))
    _check(np.floor_divide(np.array([7, -7], dtype="int32"), 2), [3, -4], dtype="int32")
    m1, m2 = a_np > 0, b_np > 3
    for name in ("logical_and", "logical_or", "logical_xor"):
        _check(getattr(np, name)(np.array(m1, dtype="bool"), np.array(m2, dtype="bool")),
               getattr(onp, name)(m1, m2), dtype="bool")
    for name in ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal"):
        _check(getattr(np, name)(a, 0.5), getattr(onp, name)(a_np, 0.5), dtype="bool")
    _check(np.amax(a, axis=1), onp.amax(a_np, axis=1))
    _check(np.amin(a), onp.amin(a_np))
    _check(np.identity(3, dtype="int32"), onp.identity(3), dtype="int32")
    assert np.empty_like(a).shape == (2, 3) and np.empty_like(a, dtype="int8").dtype == onp.int8
    _check(np.full((2, 3), np.array([1.0, 2.0, 3.0])), onp.full((2, 3), [1.0, 2.0, 3.0]))
    c = np.copy(a)
    c[0, 0] = 100
    assert a.asnumpy()[0, 0] != 100
    assert np.shape(a) == (2, 3) and np.ndim(a) == 2 and np.size(a) == 6
    for name in ("arcsin", "arccos", "arctanh"):
        x = _rand(5) / 3
        _check(getattr(np, name)(np.array(x)), getattr(onp, name)(x), rtol=1e-5)
    for name in ("sinh", "cosh", "tan", "arcsinh", "degrees", "radians", "rint", "fix",
                 "log2", "log10"):
        x = onp.abs(_rand(5)) + 1.1
        _check(getattr(np, name)(np.array(x)), getattr(onp, name)(x), rtol=1e-5)
    _check(np.arccosh(np.array([1.5, 2.0])), onp.arccosh([1.5, 2.0]), rtol=1e-5)
    out = np.zeros((2, 3))
    res = np.add(a, b, out=out)
    assert res is out
    _check(out, a_np + b_np)
    mx.random.seed(3)
    assert np.random.rand(2, 3).shape == (2, 3)
    assert np.random.randn(4).shape == (4,)
    _check(npx.activation(np.array(a_np), act_type="tanh"), onp.tanh(a_np), rtol=1e-5)


def test_not_built_raises():
    a = np.ones((2, 2))
    with pytest.raises(NotImplementedError):
        np.add(a, a, where=True)
    with pytest.raises(NotImplementedError):
        np.clip(a, np.zeros((2, 2)), 1)
    with pytest.raises(NotImplementedError):
        np.where(a > 0)
    with pytest.raises(NotImplementedError):
        np.reshape(a, (4,), order="F")
    with pytest.raises(TypeError):
        np.array(["a", "b"])
    with pytest.raises(AttributeError):
        np.fft  # noqa: B018 - not built: absent, never approximated


def test_random_choice_shuffle():
    mx.random.seed(5)
    c = np.random.choice(5, size=(200,))
    assert c.dtype == onp.int64 and c.shape == (200,)
    assert set(c.asnumpy().tolist()) == set(range(5))
    assert np.random.choice(3).shape == ()
    pool = np.array([10.0, 20.0, 30.0])
    w = np.random.choice(pool, 300, p=np.array([0.0, 0.5, 0.5])).asnumpy()
    assert set(w.tolist()) == {20.0, 30.0}
    perm = np.random.choice(7, 7, replace=False).asnumpy()
    assert sorted(perm.tolist()) == list(range(7))
    with pytest.raises(ValueError):
        np.random.choice(3, 4, replace=False)
    with pytest.raises(ValueError):
        np.random.choice(pool, 2, p=np.array([0.5, 0.6, 0.1]))
    with pytest.raises(TypeError):
        np.random.choice(3, shape=(2,))
    x = np.arange(10)
    np.random.shuffle(x)
    assert sorted(x.asnumpy().tolist()) == list(range(10))


def test_reshape_errors_are_mxnet_errors():
    a = np.ones((10, 10))
    for bad in ((1,), (-1, 3)):
        with pytest.raises(mx.base.MXNetError):
            a.reshape(bad)
        with pytest.raises(ValueError):
            np.reshape(a, bad)


def test_default_dtype_switch():
    assert not mx.util.is_np_default_dtype()
    npx.set_np(dtype=True)
    try:
        assert mx.util.is_np_default_dtype()
        assert np.zeros((2,)).dtype == onp.float64
        assert np.array([1, 2]).dtype == onp.float64
        assert np.random.uniform(size=3).dtype == onp.float64
        assert (np.array([1, 2], dtype="int32") / 2).dtype == onp.float64
        assert repr(np.ones(2)) == "array([1., 1.])"
        assert repr(np.ones(2, dtype="float32")) == "array([1., 1.], dtype=float32)"
    finally:
        npx.reset_np()
    assert not mx.util.is_np_default_dtype() and np.zeros((2,)).dtype == onp.float32

    @mx.util.use_np_default_dtype
    def make():
        return np.ones((1,)).dtype
    assert make() == onp.float64 and np.ones((1,)).dtype == onp.float32
    with mx.util.np_default_dtype(True):
        assert np.arange(3).dtype == onp.float64
    from oxnet.test_utils import use_np_array, use_np_shape  # noqa: F401


def test_copy_and_pickle():
    import copy
    import pickle
    a = np.arange(4)
    for b in (copy.deepcopy(a), pickle.loads(pickle.dumps(a))):
        assert isinstance(b, np.ndarray)
        _check(b, onp.arange(4), dtype="float32")
        b[0] = 9
        assert a.asnumpy()[0] == 0


@pytest.mark.parametrize("sa,sb", [((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 3), (3,)),
                                   ((3,), (3,)), ((5, 2, 3), (3, 4)), ((5, 2, 3), (1, 3, 4)),
                                   ((2, 1, 2, 3), (4, 3, 2))])
def test_matmul(sa, sb):
    a, b = _rand(*sa), _rand(*sb)
    _check(np.matmul(np.array(a), np.array(b)), onp.matmul(a, b), rtol=1e-4, atol=1e-5)
    _check(np.array(a) @ np.array(b), a @ b, rtol=1e-4, atol=1e-5)


def test_matmul_errors():
    with pytest.raises(ValueError):
        np.matmul(np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError):
        np.matmul(np.ones((2, 3)), 2.0)


def test_array_manipulation_more():
    a_np = onp.array([[3, 1, 2], [0, 5, 4]], dtype="float32")
    a = np.array(a_np)
    _check(np.tile(a, (2, 1)), onp.tile(a_np, (2, 1)))
    _check(np.tile(a, 2), onp.tile(a_np, 2))
    _check(np.repeat(a, 2), onp.repeat(a_np, 2))
    _check(np.repeat(a, 3, axis=1), onp.repeat(a_np, 3, axis=1))
    _check(a.repeat(2, axis=0), a_np.repeat(2, axis=0))
    _check(np.flip(a), onp.flip(a_np))
    _check(np.flip(a, axis=1), onp.flip(a_np, axis=1))
    for axis in (-1, 0, None):
        _check(np.sort(a, axis=axis), onp.sort(a_np, axis=axis))
        _check(np.argsort(a, axis=axis), onp.argsort(a_np, axis=axis), dtype="int64")
        _check(np.cumsum(a, axis=axis), onp.cumsum(a_np, axis=axis))
    b = a.copy()
    b.sort(axis=1)
    _check(b, onp.sort(a_np, axis=1))
    _check(np.take(a, [2, 0], axis=1), onp.take(a_np, [2, 0], axis=1))
    _check(np.take(a, np.array([4, 1], dtype="int64")), onp.take(a_np, [4, 1]))
    _check(np.take(a, 1, axis=0), onp.take(a_np, 1, axis=0))
    _check(np.take(a, [5, -1], axis=1, mode="clip"), onp.take(a_np, [5, -1], axis=1, mode="clip"))
    with pytest.raises(IndexError):
        np.take(a, [3], axis=1)
    x = np.array(_rand(2, 3, 4))
    _check(np.moveaxis(x, 0, -1), onp.moveaxis(x.asnumpy(), 0, -1))
    _check(np.moveaxis(x, [0, 1], [2, 0]), onp.moveaxis(x.asnumpy(), [0, 1], [2, 0]))
    _check(np.around(np.array([0.5, 1.5, -2.5, 2.4])), onp.around([0.5, 1.5, -2.5, 2.4]))
    with pytest.raises(NotImplementedError):
        np.around(a, 2)


def test_predicates_and_stats():
    v = onp.array([1.0, onp.nan, onp.inf, -onp.inf, 0.0], dtype="float32")
    for name in ("isnan", "isinf", "isfinite"):
        _check(getattr(np, name)(np.array(v)), getattr(onp, name)(v), dtype="bool")
    _check(np.isnan(np.array([1, 2], dtype="int32")), [False, False], dtype="bool")
    m = onp.array([[1, 0, 2], [3, 4, 5]], dtype="float32")
    for axis in (None, 0, 1):
        for name in ("all", "any"):
            _check(getattr(np, name)(np.array(m), axis=axis), getattr(onp, name)(m, axis=axis),
                   dtype="bool")
    assert bool(np.array(m).any()) and not bool(np.array(m).all())
    assert bool(np.all(np.zeros((0,)))) and not bool(np.any(np.zeros((0,))))
    a = _rand(3, 4)
    for axis in (None, 0, 1, (0, 1)):
        for ddof in (0, 1):
            _check(np.var(np.array(a), axis=axis, ddof=ddof), onp.var(a, axis=axis, ddof=ddof),
                   rtol=1e-4, atol=1e-5)
            _check(np.std(np.array(a), axis=axis, ddof=ddof), onp.std(a, axis=axis, ddof=ddof),
                   rtol=1e-4, atol=1e-5)
    _check(np.array(a).std(axis=1, keepdims=True), a.std(axis=1, keepdims=True), rtol=1e-4)


def test_numpy_ufuncs_dispatch():
    x_np = onp.array([1.0, 2.0], dtype="float32")
    x = np.array(x_np)
    res = onp.ones(2) + x
    assert isinstance(res, np.ndarray) and res.dtype == onp.float64
    _check(res, onp.ones(2) + x_np)
    _check(onp.exp(x), onp.exp(x_np), rtol=1e-6)
    _check(onp.ones(2) / x, 1 / x_np, rtol=1e-6)
    _check(onp.zeros(2) < x, [True, True], dtype="bool")
    with pytest.raises(TypeError):
        onp.add.reduce(x)
    assert onp.asarray(x).dtype == onp.float32 and float(onp.sum(x)) == 3.0
    with pytest.raises(IndexError):
        np.ones((2, 3))[np.array([1.0, 0.0])]  # float index arrays, as NumPy


def test_boolean_mask_indexing():
    a_np = onp.arange(12, dtype="float32").reshape(3, 4)
    a = np.array(a_np)
    _check(a[a > 5], a_np[a_np > 5])
    rows = onp.array([True, False, True])
    _check(a[np.array(rows, dtype="bool")], a_np[rows])
    _check(a[rows], a_np[rows])
    b, b_np = a.copy(), a_np.copy()
    b[b > 8] = 0
    b_np[b_np > 8] = 0
    _check(b, b_np)
    b[np.array(rows, dtype="bool")] = -1
    b_np[rows] = -1
    _check(b, b_np)
    with pytest.raises(IndexError):
        a[np.array([True, False], dtype="bool")]
    with pytest.raises(NotImplementedError):
        b[b > 0] = np.ones((3,))
    a.attach_grad()
    with mx.autograd.record():
        y = (a[a > 2] * 2).sum()
    y.backward()
    _check(a.grad, onp.where(a_np > 2, 2.0, 0.0))


def test_linalg():
    rs = onp.random.RandomState(2)
    m = (rs.rand(2, 3, 3) + 2 * onp.eye(3)).astype("float32")
    x = np.array(m)
    _check(np.linalg.inv(x), onp.linalg.inv(m), rtol=1e-4, atol=1e-5)
    _check(np.linalg.det(x), onp.linalg.det(m), rtol=1e-4)
    sign, logdet = np.linalg.slogdet(x)
    want = onp.linalg.slogdet(m)
    _check(sign, want[0])
    _check(logdet, want[1], rtol=1e-4)
    v = rs.rand(4, 5).astype("float32") - 0.5
    for kw in ({}, {"axis": 1}, {"axis": 0, "keepdims": True}, {"ord": "fro"},
               {"ord": 1, "axis": 1}, {"axis": (0, 1)}):
        _check(np.linalg.norm(np.array(v), **kw), onp.linalg.norm(v, **kw), rtol=1e-5)
    with pytest.raises(NotImplementedError):
        np.linalg.norm(np.array(v), ord=2)
    with pytest.raises(NotImplementedError):
        np.linalg.norm(np.array(v), ord=onp.inf)
    with pytest.raises(onp.linalg.LinAlgError):
        np.linalg.inv(np.ones((2, 3)))
