"""NDArray creation, arithmetic, in-place semantics, copies, repr and pickle,
with NumPy as the oracle."""

import pickle

import numpy as np
import pytest

import oxnet as mx
from oxnet.test_utils import assert_almost_equal

DTYPES = ["float32", "float64", "float16", "uint8", "int8", "int32", "int64"]


def test_creation_shapes_and_defaults():
    a = mx.nd.empty((2, 3))
    assert a.shape == (2, 3) and a.dtype == np.float32 and a.context == mx.cpu(0)
    assert mx.nd.zeros((2, 3)).asnumpy().sum() == 0
    assert (mx.nd.ones(4).asnumpy() == 1).all() and mx.nd.ones(4).shape == (4,)
    assert (mx.nd.full((2, 2), 7).asnumpy() == 7).all()
    np.testing.assert_array_equal(mx.nd.arange(2, 11, 3).asnumpy(), np.arange(2, 11, 3, dtype=np.float32))
    np.testing.assert_array_equal(mx.nd.arange(3, repeat=2).asnumpy(), [0, 0, 1, 1, 2, 2])
    np.testing.assert_array_equal(mx.nd.eye(3, 4, 1).asnumpy(), np.eye(3, 4, 1))
    z = mx.nd.zeros_like(mx.nd.ones((2, 2), dtype="int32"))
    assert z.dtype == np.int32 and z.asnumpy().sum() == 0
    assert mx.nd.ones_like(z).asnumpy().sum() == 4


@pytest.mark.parametrize("dtype", DTYPES)
def test_array_roundtrip_dtypes(dtype):
    src = (np.arange(12).reshape(3, 4) % 7).astype(dtype)
    a = mx.nd.array(src, dtype=dtype)
    assert a.dtype == np.dtype(dtype).type
    np.testing.assert_array_equal(a.asnumpy(), src)
    assert a.asnumpy().dtype == np.dtype(dtype)


def test_array_defaults_to_float32_like_mxnet():
    assert mx.nd.array(np.arange(3, dtype=np.int64)).dtype == np.float32
    assert mx.nd.array([1, 2]).dtype == np.float32
    a = mx.nd.array([1, 2], dtype="int32")
    assert mx.nd.array(a).dtype == np.int32
    assert mx.nd.array(5).shape == ()


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "%", "**", "==", "!=", "<", "<=", ">", ">="])
def test_binary_operators_against_numpy(op):
    rng = np.random.RandomState(0)
    x = rng.uniform(0.5, 2, (3, 4)).astype(np.float32)
    y = rng.uniform(0.5, 2, (3, 4)).astype(np.float32)
    y[0, 0] = x[0, 0]
    a, b = mx.nd.array(x), mx.nd.array(y)
    f = eval("lambda p, q: p %s q" % op)
    assert_almost_equal(f(a, b), f(x, y).astype(np.float32), rtol=1e-5, atol=1e-6)
    assert_almost_equal(f(a, 1.5), f(x, np.float32(1.5)).astype(np.float32), rtol=1e-5, atol=1e-6)
    assert_almost_equal(f(1.5, a), f(np.float32(1.5), x).astype(np.float32), rtol=1e-5, atol=1e-6)
    # broadcasting
    assert_almost_equal(f(a, b[0:1]), f(x, y[0:1]).astype(np.float32), rtol=1e-5, atol=1e-6)


def test_unary_and_comparison_results_keep_dtype():
    a = mx.nd.array([[1, 2], [3, 4]], dtype="int32")
    assert (a == 2).dtype == np.int32
    np.testing.assert_array_equal((-a).asnumpy(), -np.array([[1, 2], [3, 4]]))
    np.testing.assert_array_equal((a / 2).asnumpy(), [[0, 1], [1, 2]])


def test_mod_follows_divisor_sign():
    x = np.array([-5, -3, 3, 5], dtype=np.float32)
    np.testing.assert_array_equal((mx.nd.array(x) % 3).asnumpy(), np.mod(x, 3))
    np.testing.assert_array_equal((mx.nd.array(x) % -3).asnumpy(), np.mod(x, -3))
    xi = x.astype(np.int32)
    np.testing.assert_array_equal((mx.nd.array(xi, dtype="int32") % 3).asnumpy(), np.mod(xi, 3))


@pytest.mark.parametrize("name,fn", [
    ("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("abs", np.abs), ("sign", np.sign),
    ("floor", np.floor), ("ceil", np.ceil), ("square", np.square), ("sin", np.sin),
    ("cos", np.cos), ("tan", np.tan), ("tanh", np.tanh), ("log1p", np.log1p), ("expm1", np.expm1),
    ("rsqrt", lambda x: 1 / np.sqrt(x)), ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
    ("relu", lambda x: np.maximum(x, 0)), ("softsign", lambda x: x / (1 + np.abs(x))),
])
def test_unary_math(name, fn):
    x = np.linspace(-0.9, 2.7, 24).astype(np.float32).reshape(4, 6)
    if name in ("log", "sqrt", "rsqrt"):
        x = np.abs(x) + 0.1
    assert_almost_equal(getattr(mx.nd, name)(mx.nd.array(x)), fn(x), rtol=1e-5, atol=1e-6)
    # fluent form, where MXNet has one
    if name != "softsign":
        assert_almost_equal(getattr(mx.nd.array(x), name)(), fn(x), rtol=1e-5, atol=1e-6)


def test_round_is_half_away_from_zero_and_rint_half_even():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], dtype=np.float32)
    np.testing.assert_array_equal(mx.nd.round(mx.nd.array(x)).asnumpy(), [-3, -2, -1, 1, 2, 3])
    np.testing.assert_array_equal(mx.nd.rint(mx.nd.array(x)).asnumpy(), np.rint(x))


def test_clip_maximum_minimum_power():
    x = np.arange(-3, 4, dtype=np.float32)
    a = mx.nd.array(x)
    np.testing.assert_array_equal(mx.nd.clip(a, -1, 2).asnumpy(), np.clip(x, -1, 2))
    np.testing.assert_array_equal(a.clip(-1, 2).asnumpy(), np.clip(x, -1, 2))
    np.testing.assert_array_equal(mx.nd.maximum(a, 0).asnumpy(), np.maximum(x, 0))
    np.testing.assert_array_equal(mx.nd.minimum(1, a).asnumpy(), np.minimum(1, x))
    np.testing.assert_array_equal(mx.nd.maximum(a, a * 0).asnumpy(), np.maximum(x, 0))
    np.testing.assert_array_equal(mx.nd.power(2, a).asnumpy(), np.power(2, x))
    np.testing.assert_array_equal(mx.nd.greater(a, 0).asnumpy(), (x > 0).astype(np.float32))
    np.testing.assert_array_equal(mx.nd.greater(0, a).asnumpy(), (0 > x).astype(np.float32))
    np.testing.assert_array_equal(mx.nd.subtract(1, a).asnumpy(), 1 - x)


def test_inplace_ops_write_through_aliases():
    a = mx.nd.ones((2, 3))
    b = a
    c = a.copyto(mx.cpu())
    a += 1
    b *= 3
    c *= 3
    np.testing.assert_array_equal(a.asnumpy(), np.full((2, 3), 6))
    np.testing.assert_array_equal(c.asnumpy(), np.full((2, 3), 3))
    v = a[1:2]
    v -= 6
    np.testing.assert_array_equal(a.asnumpy(), [[6, 6, 6], [0, 0, 0]])
    v /= 2
    a %= 4
    np.testing.assert_array_equal(a.asnumpy(), [[2, 2, 2], [0, 0, 0]])


def test_inplace_broadcast_into_self():
    a = mx.nd.ones((2, 3))
    a += mx.nd.array([1, 2, 3])
    np.testing.assert_array_equal(a.asnumpy(), [[2, 3, 4], [2, 3, 4]])
    with pytest.raises(mx.base.MXNetError):
        b = mx.nd.ones((1, 3))
        b += mx.nd.ones((2, 3))


def test_copyto_and_contexts():
    a = mx.nd.array([[1, 2], [3, 4]])
    b = a.copyto(mx.cpu(1))
    assert b.context == mx.cpu(1)
    np.testing.assert_array_equal(b.asnumpy(), a.asnumpy())
    c = mx.nd.zeros((2, 2), ctx=mx.cpu(2))
    a.copyto(c)
    np.testing.assert_array_equal(c.asnumpy(), a.asnumpy())
    assert a.as_in_context(mx.cpu(0)) is a
    assert a.as_in_context(mx.cpu(3)).context == mx.cpu(3)
    d = a.copy()
    d += 1
    np.testing.assert_array_equal(a.asnumpy(), [[1, 2], [3, 4]])
    # a cast on copy into another dtype
    e = mx.nd.zeros((2, 2), dtype="int32")
    a.copyto(e)
    np.testing.assert_array_equal(e.asnumpy(), [[1, 2], [3, 4]])


def test_with_context_sets_default():
    with mx.Context("cpu", 2):
        assert mx.current_context() == mx.cpu(2)
        assert mx.nd.zeros((1,)).context == mx.cpu(2)
    assert mx.current_context() == mx.cpu(0)
    assert mx.context.num_gpus() == mx.num_gpus() >= 0
    assert str(mx.gpu(1)) == "gpu(1)" and repr(mx.cpu()) == "cpu(0)"


def test_astype_and_cast():
    a = mx.nd.array([1.7, -2.2, 0.0])
    assert a.astype("int32").dtype == np.int32
    np.testing.assert_array_equal(a.astype("int32").asnumpy(), [1, -2, 0])
    np.testing.assert_array_equal(mx.nd.cast(a, dtype="float64").asnumpy(), a.asnumpy().astype(np.float64))
    assert a.astype(np.float32, copy=False) is a
    h = a.astype("float16")
    assert h.dtype == np.float16
    np.testing.assert_array_equal(h.asnumpy(), np.array([1.7, -2.2, 0], dtype=np.float16))


def test_repr_matches_mxnet():
    assert repr(mx.nd.ones((1, 2))) == "\n[[1. 1.]]\n<NDArray 1x2 @cpu(0)>"
    assert repr(mx.nd.ones((3,), ctx=mx.cpu(1))) == "\n[1. 1. 1.]\n<NDArray 3 @cpu(1)>"


def test_pickle_roundtrip():
    a = mx.nd.array(np.arange(6).reshape(2, 3), ctx=mx.cpu(1), dtype="int64")
    b = pickle.loads(pickle.dumps(a))
    # MXNet's pickle state is the single-array .params bytes; loading puts it on cpu(0)
    assert b.context == mx.cpu(0) and b.dtype == np.int64
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    assert set(a.__getstate__()) == {"handle"}
    assert isinstance(a.__getstate__()["handle"], bytearray)  # as MXNet's ctypes2buffer


def test_setstate_loads_values_into_an_array_made_alike():
    src = mx.nd.array([[1.5, -2], [3, 4]])
    dst = mx.nd.zeros((2, 2))
    dst.__setstate__(src.__getstate__())
    np.testing.assert_array_equal(dst.asnumpy(), src.asnumpy())
    # MXNet's state for mx.nd.arange(1, ctx=mx.gpu()) loads without a GPU (onto cpu(0))
    gpu_state = {"handle": bytearray(
        b"\xc9\xfa\x93\xf9\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00"
        b"\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")}
    if mx.context.num_gpus() == 0:
        a = mx.nd.arange(1) + 5
        a.__setstate__(gpu_state)
        np.testing.assert_array_equal(a.asnumpy(), [0.0])


def test_setstate_refuses_what_it_cannot_rebind():
    state = mx.nd.ones((3,), dtype="int32").__getstate__()
    for dst in [mx.nd.zeros((2,), dtype="int32"), mx.nd.zeros((3,)), mx.nd.zeros((3,), ctx=mx.cpu(1), dtype="int32")]:
        before = dst.asnumpy().copy()
        with pytest.raises(mx.base.MXNetError, match="__setstate__"):
            dst.__setstate__(state)
        np.testing.assert_array_equal(dst.asnumpy(), before)
    with pytest.raises(mx.base.MXNetError):
        mx.nd.zeros((3,)).__setstate__({"handle": None})
    with pytest.raises(mx.base.MXNetError):
        mx.nd.zeros((3,)).__setstate__({"handle": bytearray(b"\x01\x02")})


def test_scalar_access_and_conversions():
    a = mx.nd.array([3.5])
    s = a.asscalar()
    assert isinstance(s, np.float32) and s == 3.5
    assert mx.nd.array([7], dtype="int64").asscalar() == 7
    with pytest.raises(ValueError):
        mx.nd.ones((2,)).asscalar()
    assert np.asarray(mx.nd.ones((2, 2))).shape == (2, 2)
    assert mx.nd.array([[1, 2]]).tolist() == [[1.0, 2.0]]
    assert len(mx.nd.ones((4, 2))) == 4
    assert bool(mx.nd.array([1])) and not bool(mx.nd.array([0]))
    with pytest.raises(ValueError):
        bool(mx.nd.ones((2,)))
    assert [x.shape for x in mx.nd.ones((3, 2))] == [(2,)] * 3


def test_properties():
    a = mx.nd.ones((2, 3, 4), dtype="float64")
    assert a.size == 24 and a.ndim == 3 and a.dtype == np.float64
    assert a.T.shape == (4, 3, 2) if hasattr(mx.nd, "transpose") else True
    assert a.stype == "default"


def test_random_reproducible_and_in_range():
    mx.random.seed(42)
    x = mx.nd.random.uniform(-1, 3, shape=(1000,)).asnumpy()
    n = mx.nd.random.normal(2, 0.5, shape=(20000,)).asnumpy()
    r = mx.nd.random.randint(0, 10, shape=(1000,)).asnumpy()
    mx.random.seed(42)
    np.testing.assert_array_equal(x, mx.nd.random.uniform(-1, 3, shape=(1000,)).asnumpy())
    assert x.min() >= -1 and x.max() < 3 and abs(x.mean() - 1) < 0.15
    assert abs(n.mean() - 2) < 0.02 and abs(n.std() - 0.5) < 0.02
    assert r.dtype == np.int32 and r.min() >= 0 and r.max() <= 9 and len(set(r.tolist())) == 10
    mx.random.seed(7, ctx=mx.cpu(1))
    y = mx.nd.random.uniform(shape=(5,), ctx=mx.cpu(1)).asnumpy()
    mx.random.seed(7, ctx=mx.cpu(1))
    np.testing.assert_array_equal(y, mx.nd.random.uniform(shape=(5,), ctx=mx.cpu(1)).asnumpy())


def test_generated_functions_have_mxnet_signatures_and_docs():
    import inspect
    sig = str(inspect.signature(mx.nd.clip))
    assert sig.startswith("(data=None, a_min=_Null, a_max=_Null, out=None, name=None")
    assert "a_min : float, required" in mx.nd.clip.__doc__
    assert mx.nd._internal._plus_scalar is not None
    out = mx.nd.zeros((2,))
    r = mx.nd.exp(mx.nd.zeros((2,)), out=out)
    assert r is out and (out.asnumpy() == 1).all()
    # positional parameters after the inputs
    np.testing.assert_array_equal(mx.nd.clip(mx.nd.array([-5, 5]), -1, 1).asnumpy(), [-1, 1])


def test_pool_reuses_blocks():
    n = 1 << 20
    a = mx.nd.ones((n,))
    b = mx.nd.ones((n,))
    mx.nd.waitall()
    for _ in range(3):
        c = a + b
        c.wait_to_read()
        del c
    before = mx._core.pool_stats()
    for _ in range(20):
        c = a + b
        c.wait_to_read()
        del c
    after = mx._core.pool_stats()
    assert after["os_allocs"] == before["os_allocs"]
    assert after["reuses"] >= before["reuses"] + 20


def test_cast_to_integer_types_wraps_as_mxnet():
    # MXNet 1.9.1 (C casts): truncate, then wrap modulo the type's range
    src = np.array([-5, 300, -300, 7])
    for dt in ("int32", "int64", "float32", "float64"):
        a = mx.nd.array(src, dtype=dt)
        np.testing.assert_array_equal(a.astype("uint8").asnumpy(), [251, 44, 212, 7])
        np.testing.assert_array_equal(a.astype("int8").asnumpy(), [-5, 44, -44, 7])
    np.testing.assert_array_equal(mx.nd.array([-1.5, 2.7]).astype("int32").asnumpy(), [-1, 2])
