"""MXNet 1.9.1 behaviours closed on the `conf` branch (NumPy is the oracle)."""
import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError


def _sparse_regression(m):
    x = mx.sym.var("data", stype="csr")
    v = mx.sym.var("v", shape=(m, 1), init=mx.init.Uniform(scale=.1), stype="row_sparse")
    y = mx.sym.Variable("label")
    return mx.sym.LinearRegressionOutput(data=mx.sym.dot(lhs=x, rhs=v), label=y, name="out")


def test_simple_bind_allocates_variable_stypes():
    sym = _sparse_regression(5)
    exe = sym.simple_bind(mx.cpu(), data=(4, 5), label=(4, 1))
    assert exe.arg_dict["data"].stype == "csr"
    assert exe.arg_dict["v"].stype == "row_sparse"
    assert exe.arg_dict["label"].stype == "default"
    # stype_dict overrides the attribute
    exe = sym.simple_bind(mx.cpu(), data=(4, 5), label=(4, 1), stype_dict={"label": "row_sparse"})
    assert exe.arg_dict["label"].stype == "row_sparse"
    # the sparse arguments still compute
    dense = np.arange(20, dtype=np.float32).reshape(4, 5) % 3
    vv = np.arange(5, dtype=np.float32).reshape(5, 1)
    mx.nd.array(dense).tostype("csr").copyto(exe.arg_dict["data"])
    mx.nd.array(vv).tostype("row_sparse").copyto(exe.arg_dict["v"])
    out = exe.forward()[0].asnumpy()
    np.testing.assert_allclose(out, dense @ vv, rtol=1e-6)


def test_simple_bind_bad_stype_dict():
    sym = _sparse_regression(5)
    with pytest.raises(MXNetError):
        sym.simple_bind(mx.cpu(), data=(4, 5), label=(4, 1), stype_dict={"label": "dense"})
    with pytest.raises(MXNetError):
        sym.simple_bind(mx.cpu(), data=(4, 5), label=(4, 1), stype_dict=["label"])


def test_module_params_keep_variable_stype():
    n, m = 8, 6
    data = mx.nd.zeros(shape=(n, m), stype="csr")
    label = mx.nd.zeros((n, 1))
    it = mx.io.NDArrayIter(data=data, label={"label": label}, batch_size=n,
                           last_batch_handle="discard")
    mod = mx.mod.Module(symbol=_sparse_regression(m), data_names=["data"], label_names=["label"])
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params()
    v = mod._arg_params["v"]
    assert v.stype == "row_sparse"
    vals = v.asnumpy()
    assert np.all(np.abs(vals) <= .1) and np.sum(vals) != 0
