"""mx.sym.Custom: custom operators (mx.operator) as graph nodes: inference through
the prop, forward/backward through the executor and hybridized blocks, auxiliary
states written in place, JSON round trip, and errors from the user's code."""

import numpy as np
import pytest

import oxnet as mx


class _Scale(mx.operator.CustomOp):
    def __init__(self, k):
        self.k = k

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * in_data[1] * self.k)
        self.assign(out_data[1], req[1], in_data[0] + self.k)
        aux[0][:] = aux[0] + 1

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * in_data[1] * self.k + out_grad[1])
        self.assign(in_grad[1], req[1], out_grad[0] * in_data[0] * self.k)


@mx.operator.register("test_sym_scale")
class _ScaleProp(mx.operator.CustomOpProp):
    def __init__(self, k="2"):
        super().__init__(need_top_grad=True)
        self.k = float(k)

    def list_arguments(self):
        return ["a", "b"]

    def list_outputs(self):
        return ["prod", "shifted"]

    def list_auxiliary_states(self):
        return ["count"]

    def infer_shape(self, in_shape):
        return [in_shape[0], in_shape[0]], [in_shape[0], in_shape[0]], [(1,)]

    def create_operator(self, ctx, shapes, dtypes):
        return _Scale(self.k)


def _bind(sym, a, b):
    ex = sym.simple_bind(mx.cpu(), a=a.shape, b=b.shape)
    ex.arg_dict["a"][:] = mx.nd.array(a)
    ex.arg_dict["b"][:] = mx.nd.array(b)
    return ex


def test_names_inference_and_json():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    c = mx.sym.Custom(a, b=b, k=3, op_type="test_sym_scale", name="sc")
    assert c.list_outputs() == ["sc_prod", "sc_shifted"]
    assert c.list_arguments() == ["a", "b"] and c.list_auxiliary_states() == ["sc_count"]
    args, outs, aux = c.infer_shape(a=(2, 3))
    assert args == [(2, 3), (2, 3)] and outs == [(2, 3), (2, 3)] and aux == [(1,)]
    assert c.infer_type(a="float64")[1] == [np.float64, np.float64]
    c2 = mx.sym.load_json(c.tojson())
    assert c2.tojson() == c.tojson() and c2.list_auxiliary_states() == ["sc_count"]
    assert mx.sym.Custom(a, b, op_type="test_sym_scale").name.startswith("custom")


def test_executor_forward_backward_and_aux():
    rng = np.random.RandomState(0)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    c = mx.sym.Custom(mx.sym.var("a"), mx.sym.var("b"), k=3, op_type="test_sym_scale", name="sc")
    loss = mx.sym.sum(c[0] * 2) + mx.sym.sum(c[1])
    ex = _bind(loss, a, b)
    ex.forward(is_train=True)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), [(a * b * 6).sum() + (a + 3).sum()], rtol=1e-5)
    ex.backward()
    np.testing.assert_allclose(ex.grad_dict["a"].asnumpy(), 6 * b + 1, rtol=1e-5)
    np.testing.assert_allclose(ex.grad_dict["b"].asnumpy(), 6 * a, rtol=1e-5)
    ex.forward(is_train=False)
    assert ex.aux_dict["sc_count"].asnumpy()[0] == 2


class _Mul(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * in_data[1])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * in_data[1])
        self.assign(in_grad[1], req[1], out_grad[0] * in_data[0])


@mx.operator.register("test_sym_mul")
class _MulProp(mx.operator.CustomOpProp):
    def list_arguments(self):
        return ["lhs", "rhs"]

    def create_operator(self, ctx, shapes, dtypes):
        return _Mul()


def test_in_a_hybridized_block():
    class Net(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x, y):
            return F.Custom(x, y, op_type="test_sym_mul") * 1

    net = Net()
    net.hybridize()
    x, y = mx.nd.array([[1.0, 2.0]]), mx.nd.array([[3.0, 4.0]])
    x.attach_grad()
    with mx.autograd.record():
        out = net(x, y)
    out.backward()
    np.testing.assert_allclose(out.asnumpy(), [[3.0, 8.0]])
    np.testing.assert_allclose(x.grad.asnumpy(), [[3.0, 4.0]])


class _Broken(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        raise ValueError("boom in forward")


@mx.operator.register("test_sym_broken")
class _BrokenProp(mx.operator.CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return _Broken()


def test_errors_name_the_op_type_and_keep_the_executor_usable():
    x = mx.sym.var("x")
    with pytest.raises(mx.MXNetError, match="unknown input"):
        mx.sym.Custom(x, bogus=x, op_type="test_sym_scale")
    bad = mx.sym.Custom(x, op_type="test_sym_broken")
    ex = bad.simple_bind(mx.cpu(), x=(2,))
    with pytest.raises(mx.MXNetError, match="test_sym_broken.*boom in forward"):
        ex.forward()
        ex.outputs[0].asnumpy()
    with pytest.raises(mx.MXNetError):
        mx.sym.Custom(x, op_type="test_sym_not_registered")
    good = mx.sym.Custom(x, x, op_type="test_sym_scale")
    ex = good.simple_bind(mx.cpu(), x=(2,))
    ex.forward()
    assert ex.outputs[1].shape == (2,)
