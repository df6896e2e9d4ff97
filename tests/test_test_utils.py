"""oxnet.test_utils: MXNet 1.9.1's helpers, checked with NumPy as the oracle."""

import os

import numpy as np
import pytest

import oxnet as mx
from oxnet import test_utils as tu
from oxnet.util import getenv


def test_default_tolerances_per_dtype():
    assert tu.default_rtols()[np.dtype(np.float16)] == 1e-2
    assert tu.default_rtols()[np.dtype(np.float32)] == 1e-4
    assert tu.default_atols()[np.dtype(np.float32)] == 1e-3
    assert tu.default_atols()[np.dtype(np.float64)] == 1e-20
    assert tu.default_rtols()[np.dtype(np.int32)] == 0
    assert tu.default_numeric_eps()[np.dtype(np.float32)] == 2.0 ** -9
    # the looser side wins; numbers count as float64
    a16, a32 = np.ones(2, np.float16), np.ones(2, np.float32)
    assert tu.get_tols(a16, a32, None, None) == (1e-2, 1e-1)
    assert tu.get_tols(a32, 1.0, None, None) == (1e-4, 1e-3)
    assert tu.get_tols(a32, a32, 0.5, {np.dtype(np.float32): 0.25}) == (0.5, 0.25)
    assert tu.effective_dtype(mx.nd.ones(2, dtype="float64")) == np.float64


def test_almost_equal_uses_float64_defaults_and_assert_uses_dtype_defaults():
    a = np.ones(3, np.float32)
    assert not tu.almost_equal(a, a + 5e-5)           # rtol 1e-5
    assert tu.almost_equal(a, a + 5e-5, rtol=1e-4)
    tu.assert_almost_equal(a, a + 5e-4)               # float32: rtol 1e-4, atol 1e-3
    tu.assert_almost_equal(mx.nd.array(a), a + 5e-4)  # NDArrays and NumPy mix
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(a, a + 1e-2)
    assert tu.almost_equal(np.ones(3), np.ones((2, 3)))   # broadcasts
    with pytest.raises(AssertionError, match="Shapes differ"):
        tu.assert_almost_equal(np.ones(3), np.ones((2, 3)), use_broadcast=False)


def test_assert_almost_equal_reports_the_worst_mismatch_with_names():
    a = np.arange(12.).reshape(3, 4)
    b = a + np.eye(3, 4)
    with pytest.raises(AssertionError) as e:
        tu.assert_almost_equal(a, b, names=("x", "y"), mismatches=(1, 2))
    msg = str(e.value)
    assert "exceeds tolerance" in msg and "x=" in msg and "y=" in msg
    assert "mismatch at least" in msg   # counted only up to mismatches[1]
    # NaN handling
    n = np.array([1.0, np.nan])
    tu.assert_almost_equal(n, n, equal_nan=True)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(n, n)
    tu.assert_allclose(n, n)                           # equal_nan defaults to True there
    tu.assert_almost_equal_ignore_nan(n, np.array([1.0, 7.0]))
    assert tu.almost_equal_ignore_nan(np.array([np.nan, 2.0]), np.array([3.0, 2.0]))


def test_assert_almost_equal_with_err_tolerates_a_fraction():
    a = np.zeros(10)
    b = a.copy()
    b[0] = 1
    tu.assert_almost_equal_with_err(a, b, etol=0.2)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_with_err(a, b, etol=0.05)


def test_environment_sets_and_restores_for_python_and_the_c_runtime():
    name = "OXNET_TEST_ENV_VAR_X"
    os.environ.pop(name, None)
    with tu.environment(name, "42"):
        assert os.environ[name] == "42" and getenv(name) == "42"
        with tu.environment({name: None}):
            assert name not in os.environ and getenv(name) is None
        assert getenv(name) == "42"
    assert getenv(name) is None

    @tu.environment(name, "7")
    def f():
        return getenv(name)
    assert f() == "7" and getenv(name) is None

    class Boom(Exception):
        pass
    with pytest.raises(Boom):
        with tu.environment(name, "1"):
            raise Boom()
    assert getenv(name) is None
    with pytest.raises(ValueError):
        with tu.environment(name):
            pass


def test_assert_exception_and_retry():
    tu.assert_exception(int, ValueError, "x")
    with pytest.raises(AssertionError):
        tu.assert_exception(int, ValueError, "3")
    calls = []

    @tu.retry(3)
    def flaky():
        calls.append(1)
        assert len(calls) >= 2
    flaky()
    assert len(calls) == 2


def test_np_reduce_collapse_sum_like_and_random_helpers():
    x = np.random.rand(2, 3, 4)
    np.testing.assert_allclose(tu.np_reduce(x, (0, 2), True, np.sum),
                               x.sum(axis=(0, 2), keepdims=True))
    np.testing.assert_allclose(tu.np_reduce(x, 1, False, np.max), x.max(axis=1))
    np.testing.assert_allclose(tu.collapse_sum_like(x, (3, 1)), x.sum(axis=(0, 2)).reshape(3, 1))
    assert tu.random_arrays((2, 3)).dtype == np.float32
    assert [a.shape for a in tu.random_arrays((2,), ())] == [(2,), ()]
    assert sorted(tu.random_sample(list(range(5)), 5)) == list(range(5))
    s = tu.rand_shape_nd(3, dim=4)
    assert len(s) == 3 and all(1 <= d <= 4 for d in s)
    assert all(0 <= d <= 2 for d in tu.rand_shape_2d(2, 2, allow_zero_size=True))
    r = tu.rand_ndarray((2, 3), dtype="float16")
    assert r.shape == (2, 3) and r.dtype == np.float16
    rs = tu.rand_ndarray((6, 3), stype="row_sparse", density=0.5)
    assert rs.stype == "row_sparse" and rs.shape == (6, 3)
    cs, (indptr, indices, data) = tu.rand_sparse_ndarray((4, 5), "csr", density=0.5)
    assert cs.stype == "csr" and indptr.shape == (5,) and indices.shape == data.shape
    pl = tu.rand_ndarray((8, 64), stype="csr", density=0.1, distribution="powerlaw")
    assert pl.data.shape[0] == int(8 * 64 * 0.1)
    with pytest.raises(ValueError, match="storage type"):
        tu.rand_ndarray((2, 3), stype="bogus")
    np.testing.assert_array_equal(tu.create_vector(4).asnumpy(), np.arange(4))
    np.testing.assert_array_equal(tu.create_2d_tensor(2, 3).asnumpy(), [[0, 0, 0], [1, 1, 1]])


def test_matrices_with_real_eigenvalues():
    m = tu.new_matrix_with_real_eigvals_nd((2, 4, 4))
    for a in m:
        assert np.allclose(np.linalg.eigvals(a).imag, 0, atol=1e-8)
    s = tu.new_sym_matrix_with_real_eigvals_nd((3, 3, 3))
    np.testing.assert_allclose(s, np.swapaxes(s, -1, -2))


def test_generator_checks():
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda q: q, 4)
    assert buckets[0] == (0.0, 0.25) and probs == [0.25] * 4
    pvals = tu.verify_generator(lambda n: np.random.uniform(size=n), buckets, probs,
                                nsamples=20000, nrepeat=3)
    assert len(pvals) == 3
    with pytest.raises(AssertionError, match="Generator test fails"):
        tu.verify_generator(lambda n: np.random.uniform(0, 0.5, size=n), buckets, probs,
                            nsamples=20000, nrepeat=3)
    assert tu.mean_check(lambda n: np.random.normal(2, 1, size=n), 2, 1, nsamples=20000)
    assert tu.var_check(lambda n: np.random.normal(0, 3, size=n), 3, nsamples=20000)


def test_symbolic_checks_with_mxnet_signatures():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    s = x * y + x
    a, b = np.random.rand(2, 3), np.random.rand(2, 3)
    out = tu.check_symbolic_forward(s, [a, b], [a * b + a])
    # MXNet returns the executor's outputs
    assert isinstance(out[0], mx.nd.NDArray)
    np.testing.assert_allclose(out[0].asnumpy(), a * b + a, rtol=1e-5)
    tu.check_symbolic_backward(s, {"x": a, "y": b}, [np.ones((2, 3))],
                               {"x": b + 1, "y": a})
    tu.check_symbolic_backward(s, [a, b], [np.ones((2, 3))], [b + 1, a], grad_req="add")
    with pytest.raises(AssertionError):
        tu.check_symbolic_forward(s, [a, b], [a * b])
    tu.check_numeric_gradient(mx.sym.tanh(x) * y, [a, b], dtype=np.float64)
    ex = (x * x).bind(mx.cpu(), {"x": mx.nd.array(a)})
    g = tu.numeric_grad(ex, {"x": a}, eps=1e-4, dtype=np.float64)
    np.testing.assert_allclose(g["x"], 2 * a, rtol=1e-3)


def test_check_consistency_compares_dtypes():
    x = mx.sym.var("x")
    s = mx.sym.tanh(x) * 2
    gt = tu.check_consistency(s, [{"ctx": mx.cpu(), "x": (2, 3),
                                   "type_dict": {"x": np.float64}},
                                  {"ctx": mx.cpu(), "x": (2, 3),
                                   "type_dict": {"x": np.float32}}])
    assert "x" in gt and gt["x"].shape == (2, 3)


def test_discard_stderr_and_misc():
    with tu.discard_stderr():
        os.write(2, b"this goes nowhere\n")
    assert list(tu.list_gpus()) == list(range(mx.context.num_gpus()))
    with tu.environment("CD_JOB", "1"):
        assert tu.is_cd_run()
    a = mx.nd.ones(3)
    assert tu.same_array(a, a) and not tu.same_array(a, a.copy())
    assert tu.same(mx.nd.ones(2), np.ones(2))
    ctx = tu.default_context()
    tu.set_default_context(mx.cpu(1))
    try:
        assert tu.default_context() == mx.cpu(1)
    finally:
        tu.set_default_context(ctx)


def test_mnist_helpers_fail_clearly_offline(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OXNET_MNIST_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match="cannot be downloaded"):
        tu.get_mnist_iterator(10, (784,))


def test_download_of_an_unreachable_url_names_it(tmp_path):
    with pytest.raises(OSError, match="doesnotexist.invalid"):
        tu.download("http://doesnotexist.invalid/x.bin", dirname=str(tmp_path), retries=0)
    existing = tmp_path / "kept.txt"
    existing.write_text("x")
    assert tu.download("http://doesnotexist.invalid/kept.txt",
                       fname=str(existing)) == str(existing)


def test_check_symbolic_dtype_asnumpy_keeps_numpy_dtypes():
    data, length = mx.sym.Variable("data"), mx.sym.Variable("length")
    sym = mx.sym.broadcast_add(data, mx.sym.Cast(length, dtype="float64"))
    d = np.random.uniform(size=(2, 3))  # float64
    n = np.array([1, 2, 3], dtype=np.int32)
    outs = tu.check_symbolic_forward(sym, {"data": d, "length": n}, [d + n], dtype="asnumpy")
    assert outs[0].dtype == np.float64
    grads = tu.check_symbolic_backward(sym, {"data": d, "length": n}, [np.ones((2, 3))],
                                       {"data": np.ones((2, 3))},
                                       grad_req={"data": "write", "length": "null"},
                                       dtype="asnumpy")
    assert grads["data"].dtype == np.float64


def test_assert_almost_equal_float16_ndarrays_compare_in_float32():
    # two float16 NDArrays are compared as MXNet's allclose operator does, in float32
    # arithmetic: 1 vs 1 + 2**-10 (one float16 ulp) within atol 1e-3
    a = mx.nd.ones((4,), dtype="float16")
    b = mx.nd.ones((4,), dtype="float16") + 2.0 ** -10
    tu.assert_almost_equal(a, b, rtol=0, atol=1e-3)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(a, b, rtol=0, atol=5e-4)
    big = mx.nd.random.uniform(shape=(256, 256), dtype="float16")
    tu.assert_almost_equal(big, big.copy(), rtol=1e-6, atol=0)
