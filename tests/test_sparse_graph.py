"""Sparse storage in bound symbols (MXNet's storage-type inference at bind): output
and gradient storage types, graphs run on sparse storage (scatter ops), the refusal
of BatchNorm(fix_gamma=True) on sparse inputs, sparse head gradients, and
save/load under np_shape semantics. NumPy is the oracle; the expected storage types
were read off MXNet 1.9.1."""

import os

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError


def rsp(a):
    return mx.nd.array(a).tostype("row_sparse")


def rows(seed=0, shape=(6, 3), keep=(1, 4)):
    a = np.zeros(shape, dtype=np.float32)
    rng = np.random.RandomState(seed)
    for r in keep:
        a[r] = rng.uniform(-1, 1, size=shape[1:])
    return a


@pytest.mark.parametrize("make,out_st,grad_st", [
    (lambda x: mx.sym.relu(x), "row_sparse", "row_sparse"),
    (lambda x: mx.sym.abs(x), "row_sparse", "row_sparse"),
    (lambda x: mx.sym.sqrt(mx.sym.abs(x)), "row_sparse", "default"),
    (lambda x: mx.sym.exp(x), "default", "default"),
    (lambda x: mx.sym.sum(x), "default", "default"),
    (lambda x: mx.sym.relu(x) + 1, "default", "default"),
    (lambda x: mx.sym._internal._square_sum(x, axis=1, keepdims=True), "row_sparse", "row_sparse"),
    (lambda x: mx.sym.elemwise_add(mx.sym.relu(x), mx.sym.relu(x)), "row_sparse", "row_sparse"),
])
def test_simple_bind_storage_types_follow_mxnet(make, out_st, grad_st):
    x = mx.sym.var("x", stype="row_sparse")
    ex = make(x).simple_bind(mx.cpu(), x=(6, 3))
    assert ex.outputs[0].stype == out_st
    assert ex.grad_dict["x"].stype == grad_st


def test_forward_and_backward_values_on_sparse_outputs():
    a = rows()
    x = mx.sym.var("x")
    ex = mx.sym.relu(x).bind(mx.cpu(), {"x": rsp(a)}, args_grad={"x": mx.nd.zeros(a.shape, stype="row_sparse")})
    out = ex.forward(is_train=True)[0]
    assert out.stype == "row_sparse"
    np.testing.assert_allclose(out.asnumpy(), np.maximum(a, 0))
    og = rows(seed=1, keep=(1, 2))
    ex.backward([rsp(og)])  # a sparse head gradient is taken as its dense values
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), og * (a > 0))
    assert ex.grad_dict["x"].stype == "row_sparse"
    # inference forward: the node-by-node sparse run, the same values
    out = ex.forward(is_train=False)[0]
    np.testing.assert_allclose(out.asnumpy(), np.maximum(a, 0))
    ex.backward([mx.nd.array(og)])  # after an inference forward, backward still works
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), og * (a > 0))


def test_embedding_sparse_grad_gets_a_row_sparse_gradient_array():
    data = mx.sym.var("data")
    w = mx.sym.var("w")
    for sparse_grad, want in ((True, "row_sparse"), (False, "default")):
        e = mx.sym.Embedding(data, w, input_dim=10, output_dim=2, sparse_grad=sparse_grad)
        ex = e.simple_bind(mx.cpu(), grad_req={"data": "null", "w": "write"}, data=(4,))
        ex.arg_dict["data"][:] = np.array([1, 3, 3, 7])
        ex.arg_dict["w"][:] = np.arange(20, dtype=np.float32).reshape(10, 2)
        ex.forward(is_train=True)
        ex.backward([mx.nd.ones((4, 2))])
        g = ex.grad_dict["w"]
        assert g.stype == want
        expect = np.zeros((10, 2))
        for i in (1, 3, 3, 7):
            expect[i] += 1
        np.testing.assert_allclose(g.asnumpy(), expect)


def test_scatter_ops_compute_only_stored_values():
    a = np.array([[1., 2.], [0, 0], [3., 0], [0, 0]], dtype=np.float32)
    b = np.array([[2., 0], [5, 5], [0, 0], [0, 0]], dtype=np.float32)
    l, r = mx.sym.var("l"), mx.sym.var("r")
    for rhs in (rsp(b), mx.nd.array(b), mx.nd.array(b).tostype("csr")):
        ex = mx.sym._internal._scatter_elemwise_div(l, r).bind(mx.cpu(), {"l": rsp(a), "r": rhs})
        out = ex.forward()[0]
        assert out.stype == "row_sparse"
        assert out.indices.asnumpy().tolist() == [0, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            expect = np.where(np.isin(np.arange(4), [0, 2])[:, None], a / b, 0)
        np.testing.assert_array_equal(out.asnumpy(), expect)
        imp = mx.nd._internal._scatter_elemwise_div(rsp(a), rhs)
        np.testing.assert_array_equal(imp.asnumpy(), expect)
    # dense: exactly elemwise_div
    d = mx.nd._internal._scatter_elemwise_div(mx.nd.array(a), mx.nd.array(b + 1))
    assert d.stype == "default"
    np.testing.assert_allclose(d.asnumpy(), a / (b + 1))
    for name, f in (("_scatter_plus_scalar", np.add), ("_scatter_minus_scalar", np.subtract)):
        op = getattr(mx.nd._internal, name)
        o = op(rsp(a), 9)
        assert o.stype == "row_sparse"
        np.testing.assert_array_equal(o.asnumpy(), np.where(np.isin(np.arange(4), [0, 2])[:, None], f(a, 9), 0))
        c = op(mx.nd.array(a).tostype("csr"), 9)
        assert c.stype == "csr"
        np.testing.assert_array_equal(c.asnumpy(), np.where(a != 0, f(a, 9), 0))
        np.testing.assert_array_equal(op(mx.nd.array(a), 9).asnumpy(), f(a, 9))
        s = getattr(mx.sym._internal, name)(l, 9)
        assert s.bind(mx.cpu(), {"l": rsp(a)}).forward()[0].stype == "row_sparse"
    with pytest.raises(MXNetError, match="_scatter_elemwise_div"):
        mx.nd._internal._scatter_elemwise_div(rsp(a), mx.nd.ones((4, 3))).wait_to_read()


def test_scatter_ops_have_the_dense_gradients():
    a, b = mx.nd.array([[1., 2.], [3, 4]]), mx.nd.array([[2., 4], [5, 5]])
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        y = mx.nd._internal._scatter_elemwise_div(a, b)
    y.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), 1 / b.asnumpy())
    np.testing.assert_allclose(b.grad.asnumpy(), -a.asnumpy() / b.asnumpy() ** 2)
    with mx.autograd.record():
        y = mx.nd._internal._scatter_minus_scalar(a, 3) * 2
    y.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), np.full((2, 2), 2.0))


def test_batchnorm_with_fix_gamma_refuses_sparse_inputs_at_bind():
    data = mx.sym.var("data")
    args = [rsp(np.ones((2, 3))), rsp(np.ones(3)), rsp(np.ones(3))]
    aux = [rsp(np.zeros(3)), rsp(np.ones(3))]
    for kw in ({"fix_gamma": True}, {"fix_gamma": True, "use_global_stats": True}):
        with pytest.raises(MXNetError, match="BatchNorm.*fix_gamma"):
            mx.sym.BatchNorm(data, **kw).bind(mx.cpu(), args=args, aux_states=aux)
    ex = mx.sym.BatchNorm(data, fix_gamma=False).bind(mx.cpu(), args=args, aux_states=aux)
    assert ex.forward()[0].shape == (2, 3)
    with pytest.raises(MXNetError, match="BatchNorm.*fix_gamma"):
        mx.nd.BatchNorm(*args, *aux, fix_gamma=True)


def test_symbol_functions_ignore_out():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    s = mx.sym.elemwise_add(a, b, out=a)
    assert s.list_arguments() == ["a", "b"]
    assert mx.sym.add_n(a, b, out=a).list_arguments() == ["a", "b"]


def test_gamma_gradient_at_its_poles():
    x = mx.nd.array([0.0, -1.0, 0.5])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.gammaln(x)
    y.backward()
    g = x.grad.asnumpy()
    assert g[0] == np.inf and g[1] == np.inf and np.isfinite(g[2])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.gamma(x)
    y.backward()
    assert x.grad.asnumpy()[0] == np.inf


@pytest.mark.parametrize("save_np,load_np", [(False, False), (True, False), (False, True), (True, True)])
def test_save_load_follows_np_shape_semantics(tmp_path, save_np, load_np):
    f = os.path.join(str(tmp_path), "x.params")
    shapes = [(2, 0, 1), (0,), (2, 1)] + ([()] if save_np else [])
    arrays = [mx.nd.array(np.arange(int(np.prod(s))).reshape(s)) for s in shapes]
    with mx.np_shape(save_np):
        mx.nd.save(f, arrays)
    with mx.np_shape(load_np):
        if save_np != load_np:
            with pytest.raises(MXNetError, match="np_shape"):
                mx.nd.load(f)
        else:
            back = mx.nd.load(f)
            assert [b.shape for b in back] == shapes
    with mx.np_shape(True):
        with pytest.raises(MXNetError, match="default storage"):
            mx.nd.save(f, [rsp(np.ones((2, 2)))])


def test_a_scalar_saved_outside_np_shape_loads_back(tmp_path):
    f = os.path.join(str(tmp_path), "scalar.params")
    with mx.np_shape(True):
        s = mx.nd.array(np.array(3.0))
    mx.nd.save(f, [s])
    assert mx.nd.load(f)[0].shape == ()
