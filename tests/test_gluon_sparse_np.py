"""Gluon with sparse storage and mx.np arrays, as MXNet 1.9.1: a Parameter's symbol
carries its storage type, SymbolBlock refuses row_sparse parameters, a hybridized block
takes csr inputs (storage fallback), clip_global_norm on row_sparse arrays, split_data
on mx.np arrays; test_utils.almost_equal on big arrays."""

import warnings

import numpy as np
import pytest

import oxnet as mx
from oxnet import gluon
from oxnet.ndarray.ndarray import _STORAGE_TYPE_STR_TO_ID


def test_parameter_var_storage_type():
    p = gluon.Parameter("weight", shape=(4, 4), stype="row_sparse", grad_stype="row_sparse")
    assert p.var().attr("__storage_type__") == str(_STORAGE_TYPE_STR_TO_ID["row_sparse"])
    q = gluon.Parameter("w2", shape=(4, 4))
    assert q.var().attr("__storage_type__") in (None, "0")


def test_symbol_block_refuses_row_sparse_params():
    data = mx.sym.var("data")
    weight = mx.sym.var("weight", stype="row_sparse")
    out = mx.sym.broadcast_add(mx.sym.dot(data, weight), mx.sym.var("bias"))
    with pytest.raises(AssertionError, match="row_sparse"):
        gluon.SymbolBlock(out, data)
    dense = mx.sym.broadcast_add(mx.sym.dot(data, mx.sym.var("weight")), mx.sym.var("bias"))
    gluon.SymbolBlock(dense, data)


class _Linear(gluon.HybridBlock):
    def __init__(self, units):
        super().__init__()
        with self.name_scope():
            self.w = self.params.get("w", shape=(units, units))

    def hybrid_forward(self, F, x, w):
        return F.dot(x, w)


class _Outer(gluon.HybridBlock):
    def __init__(self, units):
        super().__init__()
        with self.name_scope():
            self.net = _Linear(units)

    def hybrid_forward(self, F, x):
        return self.net(x) * x


@pytest.mark.parametrize("hybridize", [False, True])
def test_block_with_csr_input(hybridize):
    block = _Outer(3)
    block.initialize(mx.init.Constant(0.5))
    if hybridize:
        block.hybridize()
    x_np = np.array([[1, 0, 2], [0, 0, 3]], dtype="float32")
    x = mx.nd.array(x_np).tostype("csr")
    with mx.autograd.record():
        z = block(x) + block(x)
    z.backward()
    w = np.full((3, 3), 0.5, dtype="float32")
    np.testing.assert_allclose(z.asnumpy(), 2 * (x_np @ w) * x_np, rtol=1e-6)
    # d/dw sum(2 * (x @ w) * x) = 2 * x^T x
    np.testing.assert_allclose(block.net.w.grad().asnumpy(), 2 * x_np.T @ x_np, rtol=1e-6)


@pytest.mark.parametrize("stype", ["default", "row_sparse"])
def test_clip_global_norm_one_warning(stype):
    x1 = mx.nd.ones((3, 3)).tostype(stype)
    x2 = mx.nd.ones((4, 4)).tostype(stype)
    assert gluon.utils.clip_global_norm([x1, x2], 1.0) == 5.0
    np.testing.assert_allclose(x1.asnumpy(), np.ones((3, 3)) / 5, rtol=1e-6)
    x3 = mx.nd.array([1.0, 2.0, float("nan")]).tostype(stype)
    for check in (True, False):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            gluon.utils.clip_global_norm([x1, x3], 2.0, check_isfinite=check)
        assert len(w) == int(check), [str(m.message) for m in w]


def test_split_data_np_arrays():
    x = mx.np.random.uniform(size=(8, 7, 2))
    ref = x.asnumpy()
    for axis, n, even in ((0, 4, True), (1, 3, False), (1, 7, True)):
        parts = gluon.utils.split_data(x, n, axis, even_split=even)
        assert all(isinstance(p, mx.np.ndarray) for p in parts)
        for got, want in zip(parts, np.array_split(ref, n, axis=axis)):
            np.testing.assert_array_equal(got.asnumpy(), want)
    with pytest.raises(ValueError):
        gluon.utils.split_data(x, 3, 1)


def test_almost_equal_big_arrays():
    from oxnet.test_utils import almost_equal, assert_almost_equal
    a = np.random.RandomState(0).rand(3 * (1 << 18) + 5).astype("float32")
    b = a.copy()
    assert almost_equal(a, b, rtol=1e-5, atol=1e-6)
    b[-1] += 1.0  # a mismatch in the last piece
    assert not almost_equal(a, b, rtol=1e-5, atol=1e-6)
    with pytest.raises(AssertionError):
        assert_almost_equal(a, b, rtol=1e-5, atol=1e-6)
    b = a.copy()
    b[5] = np.nan
    a2 = b.copy()
    assert almost_equal(a2, b, equal_nan=True) and not almost_equal(a2, b)


def test_row_sparse_clip_under_mxnet_alias_warns_once():
    # imported as mxnet.ndarray.sparse, the module's __spec__ names the alias: a
    # function-level relative import there would add ImportWarnings
    import subprocess
    import sys
    code = (
        "import warnings, oxnet.compat; oxnet.compat.install()\n"
        "import mxnet as mx, mxnet.ndarray.sparse\n"
        "x = mx.nd.array([1.0, 2.0]).tostype('row_sparse')\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    mx.gluon.utils.clip_global_norm([x], 1.0, check_isfinite=False)\n"
        "    y = x * 2\n"
        "print(len(w), [str(m.message) for m in w])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith("0 "), out


def test_hybrid_block_np_input_is_a_clear_error():
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize()
    with pytest.raises(mx.base.MXNetError, match="mx.np.ndarray"):
        net(mx.np.ones((1, 3)))
    out = net(mx.np.ones((1, 3)).as_nd_ndarray()).as_np_ndarray()
    assert isinstance(out, mx.np.ndarray) and out.shape == (1, 2)


def test_almost_equal_big_arrays_tolerance_and_inf():
    from oxnet.test_utils import almost_equal
    a = np.random.RandomState(1).rand(2 * (1 << 18) + 3).astype("float32")
    b = a * (1 + 1e-7)  # within rtol, not equal
    assert almost_equal(a, b, rtol=1e-5, atol=0)
    assert not almost_equal(a, a + 1e-3, rtol=1e-5, atol=1e-6)
    a[7] = b[7] = np.inf
    assert almost_equal(a, b, rtol=1e-5, atol=0)
    b[7] = -np.inf
    assert not almost_equal(a, b, rtol=1e-5, atol=0)


def test_split_and_load_array_types():
    data = np.arange(12, dtype="float32").reshape(6, 2)
    parts = gluon.utils.split_and_load(data, [mx.cpu(0), mx.cpu(1)])
    assert all(isinstance(p, mx.nd.NDArray) for p in parts)
    assert [p.context for p in parts] == [mx.cpu(0), mx.cpu(1)]
    with mx.util.np_array(True):
        parts = gluon.utils.split_and_load(data, [mx.cpu(0), mx.cpu(1)])
    assert all(isinstance(p, mx.np.ndarray) for p in parts)
    np.testing.assert_array_equal(parts[1].asnumpy(), data[3:])
    parts = gluon.utils.split_and_load(mx.np.array(data), [mx.cpu(0), mx.cpu(1), mx.cpu(2)])
    assert all(isinstance(p, mx.np.ndarray) for p in parts)
    assert parts[2].ctx == mx.cpu(2)
    np.testing.assert_array_equal(parts[2].asnumpy(), data[4:])
    parts = gluon.utils.split_and_load([[1, 2], [3, 4]], [mx.cpu(0)])
    assert isinstance(parts[0], mx.nd.NDArray) and parts[0].shape == (2, 2)
