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


def test_get_children_of_a_multi_output_node_lists_its_inputs_once():
    data = mx.sym.Variable("data")
    w = mx.sym.Variable("w")
    sliced = mx.sym.SliceChannel(data, num_outputs=3, name="slice")
    assert sliced.get_children().list_outputs() == ["data"]
    assert mx.sym.Group([sliced[0], sliced[2]]).get_children().list_outputs() == ["data"]
    fc = mx.sym.FullyConnected(data, w, no_bias=True, num_hidden=2, name="fc")
    assert mx.sym.Group([sliced, fc]).get_children().list_outputs() == ["data", "data", "w"]
    concat = mx.sym.Concat(*list(sliced))
    assert concat.get_children().list_outputs() == ["slice_output0", "slice_output1", "slice_output2"]
    assert data.get_children() is None


def test_simple_bind_infers_shapes_with_type_dict():
    x = mx.sym.Variable("x")
    idx = mx.sym.Variable("idx")
    y = mx.sym.batch_take(x, idx)
    z = mx.sym.stop_gradient(y)
    exe = z.simple_bind(ctx=mx.cpu(), x=(4, 3), idx=(4,), type_dict={"x": np.float32, "idx": np.int32})
    assert exe.arg_dict["idx"].dtype == np.int32
    xv = np.arange(12, dtype=np.float32).reshape(4, 3)
    iv = np.array([2, 0, 1, 2], dtype=np.int32)
    out = exe.forward(x=mx.nd.array(xv), idx=mx.nd.array(iv, dtype=np.int32))[0].asnumpy()
    np.testing.assert_array_equal(out, xv[np.arange(4), iv])
    exe.backward()
    # the symbol itself is unchanged
    assert "__dtype__" not in y.attr_dict().get("idx", {})
    # batch_take has no gradient: binding it for training fails
    with pytest.raises(MXNetError):
        y.simple_bind(ctx=mx.cpu(), x=(4, 3), idx=(4,), type_dict={"x": np.float32, "idx": np.int32})
    with pytest.raises(MXNetError):
        z.simple_bind(ctx=mx.cpu(), x=(4, 3), idx=(4,), type_dict={"idx": "not-a-dtype"})
