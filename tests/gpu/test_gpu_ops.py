"""The CPU op checks re-run on gpu(0), against the CPU's results."""

import numpy as np
import pytest

import oxnet as mx

from .common import FLOATS, GPU, INTS, both, rand, requires_gpu, same

pytestmark = requires_gpu


def _op(name):
    """A registry op by name: the `_`-prefixed ones live in mx.nd._internal, as in MXNet."""
    return getattr(mx.nd._internal if name.startswith("_") else mx.nd, name)

UNARY_ANY = ["negative", "abs", "sign", "floor", "ceil", "round", "rint", "trunc", "fix", "square",
             "relu", "logical_not"]
UNARY_FLOAT = ["sqrt", "rsqrt", "cbrt", "rcbrt", "reciprocal", "exp", "expm1", "log", "log10", "log2",
               "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
               "arcsinh", "arccosh", "arctanh", "degrees", "radians", "sigmoid", "softsign"]
DOMAIN = {"sqrt": (0.1, 4), "rsqrt": (0.1, 4), "log": (0.1, 4), "log10": (0.1, 4), "log2": (0.1, 4),
          "log1p": (0.1, 4), "arcsin": (-0.9, 0.9), "arccos": (-0.9, 0.9), "arctanh": (-0.9, 0.9),
          "arccosh": (1.1, 4), "reciprocal": (0.5, 4), "rcbrt": (0.5, 4)}


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("name", UNARY_ANY)
def test_unary_any_dtype(name, dtype):
    x = rand((7, 33), dtype)
    g, c = both(getattr(mx.nd, name), x)
    same(g, c, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", UNARY_FLOAT)
def test_unary_float(name, dtype):
    lo, hi = DOMAIN.get(name, (-2, 2))
    x = rand((1000,), dtype, lo, hi)
    g, c = both(getattr(mx.nd, name), x)
    same(g, c, dtype)


BINARY = ["elemwise_add", "elemwise_sub", "elemwise_mul", "_maximum", "_minimum", "_equal",
          "_not_equal", "_greater", "_lesser_equal", "_logical_and", "_logical_xor"]


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("name", BINARY + ["elemwise_div", "_mod"])
def test_binary_same_shape(name, dtype):
    a, b = rand((5, 40), dtype, seed=1), rand((5, 40), dtype, seed=2)
    if name in ("elemwise_div", "_mod"):
        b = np.where(b == 0, 3, b).astype(dtype)
    g, c = both(lambda x, y: _op(name)(x, y), a, b)
    same(g, c, dtype)


@pytest.mark.parametrize("dtype", FLOATS + ["int32", "int64"])
@pytest.mark.parametrize("shapes", [((2, 3, 4), (3, 1)), ((1, 5), (4, 1)), ((2, 1, 3, 1, 2), (4, 1, 1, 1)),
                                    ((3,), (2, 1, 1, 3))])
@pytest.mark.parametrize("name", ["broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_maximum",
                                  "broadcast_greater", "broadcast_power"])
def test_broadcast(name, shapes, dtype):
    a, b = rand(shapes[0], dtype, 0.5, 2, seed=3), rand(shapes[1], dtype, 0.5, 2, seed=4)
    g, c = both(lambda x, y: getattr(mx.nd, name)(x, y), a, b)
    same(g, c, dtype)


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("name", ["_plus_scalar", "_minus_scalar", "_rminus_scalar", "_mul_scalar",
                                  "_rdiv_scalar", "_maximum_scalar", "_equal_scalar", "_rpower_scalar"])
def test_scalar(name, dtype):
    x = rand((300,), dtype, 0.5, 3)
    x = np.where(x == 0, 1, x).astype(dtype)
    g, c = both(lambda a: _op(name)(a, scalar=2), x)
    same(g, c, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_clip_and_operators(dtype):
    x = rand((64,), dtype)
    g, c = both(lambda a: mx.nd.clip(a * 2 + 1, -1.5, 2.5) / 3 - a ** 2, x)
    same(g, c, dtype)


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("axis,keepdims,exclude", [(None, False, False), (0, False, False), (1, True, False),
                                                   ((0, 2), False, False), ((1,), False, True), (-1, True, False)])
@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "nansum"])
def test_reductions(name, axis, keepdims, exclude, dtype):
    x = rand((6, 5, 7), dtype, 0.5, 1.5)
    g, c = both(lambda a: getattr(mx.nd, name)(a, axis=axis, keepdims=keepdims, exclude=exclude), x)
    same(g, c, dtype)


def test_float16_sum_accumulates_in_float32():
    x = np.full((100000,), 0.1, dtype="float16")
    g, c = both(lambda a: mx.nd.sum(a), x)
    np.testing.assert_allclose(g.asnumpy().astype("float64"), c.asnumpy().astype("float64"), rtol=1e-3)


@pytest.mark.parametrize("src", FLOATS + INTS + ["bool"])
@pytest.mark.parametrize("dst", FLOATS + INTS + ["bool"])
def test_cast(src, dst):
    x = rand((50,), src if src != "bool" else "uint8", -300, 300).astype(src)
    g, c = both(lambda a: a.astype(dst), x)
    same(g, c, dst)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,axis", [("softmax", -1), ("softmax", 0), ("log_softmax", 1), ("softmin", -1)])
def test_softmax(name, axis, dtype):
    x = rand((4, 9, 3), dtype)
    g, c = both(lambda a: getattr(mx.nd, name)(a, axis=axis), x)
    same(g, c, dtype)


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_creation_on_gpu(dtype):
    for fn, ref in [(lambda: mx.nd.zeros((3, 4), ctx=GPU, dtype=dtype), np.zeros((3, 4), dtype)),
                    (lambda: mx.nd.ones((3, 4), ctx=GPU, dtype=dtype), np.ones((3, 4), dtype)),
                    (lambda: mx.nd.full((5,), 7, ctx=GPU, dtype=dtype), np.full((5,), 7, dtype))]:
        a = fn()
        assert a.context == GPU and a.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(a.asnumpy(), ref)


# Ops without a CUDA kernel (each checked to be one, below) and a call of each.
HOST_CANDIDATES = [
    ("smooth_l1", lambda x: mx.nd.smooth_l1(x, scalar=1.0)),
    ("gammaln", lambda x: mx.nd.gammaln(mx.nd.abs(x) + 1)),
    ("erf", lambda x: mx.nd.erf(x)),
    ("hard_sigmoid", lambda x: mx.nd.hard_sigmoid(x)),
]


def _host_op():
    missing = set(mx._core.ops_without_cuda()) if hasattr(mx, "_core") else set()
    for name, fn in HOST_CANDIDATES:
        if name in missing:
            return name, fn
    pytest.fail("every candidate op got a CUDA kernel: add another op from _core.ops_without_cuda() here")


def test_op_without_cuda_kernel_runs_on_the_host_and_matches_the_cpu():
    name, fn = _host_op()
    x = rand((3, 17), "float32", seed=4)
    g, c = both(fn, x)
    same(g, c, "float32")


def test_op_without_cuda_kernel_is_a_clear_error_when_the_host_path_is_off(monkeypatch):
    name, fn = _host_op()
    monkeypatch.setenv("OXNET_CUDA_HOST_FALLBACK", "0")
    x = mx.nd.ones((2, 3), ctx=GPU)
    with pytest.raises(mx.base.MXNetError) as e:
        fn(x).wait_to_read()
    assert name in str(e.value) and "gpu(0)" in str(e.value)
    np.testing.assert_array_equal(x.asnumpy(), np.ones((2, 3)))


def test_mixed_contexts_are_an_error():
    with pytest.raises(mx.base.MXNetError) as e:
        mx.nd.ones((2,), ctx=GPU) + mx.nd.ones((2,))
    assert "gpu(0)" in str(e.value) and "cpu(0)" in str(e.value)


@pytest.mark.parametrize("dtype", FLOATS + ["int8", "int64"])
@pytest.mark.parametrize("axes", [None, (1, 0, 2), (2, 0, 1)])
def test_transpose(axes, dtype):
    x = rand((3, 4, 5), dtype)
    g, c = both(lambda a: mx.nd.transpose(a) if axes is None else mx.nd.transpose(a, axes=axes), x)
    same(g, c, dtype)


@pytest.mark.parametrize("idx_dtype", ["float32", "int32", "int64"])
@pytest.mark.parametrize("axis,mode", [(0, "clip"), (1, "wrap"), (-1, "clip")])
def test_take(axis, mode, idx_dtype):
    x = rand((4, 5, 6), "float32")
    idx = np.array([[0, 3], [7, -2]], dtype=idx_dtype)
    g, c = both(lambda a, i: mx.nd.take(a, i, axis=axis, mode=mode), x, idx)
    same(g, c, "float32")


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8"])
def test_one_hot(dtype):
    idx = np.array([0, 2, 5, 1], dtype="float32")
    g, c = both(lambda i: mx.nd.one_hot(i, 4, on_value=3, off_value=-1 if dtype != "uint8" else 0, dtype=dtype), idx)
    same(g, c, dtype)
