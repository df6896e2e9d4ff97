"""mx.operator and mx.nd.Custom: MXNet 1.9.1's custom operators (forward/backward
against NumPy, auxiliary states, need_top_grad, several outputs, the prop's defaults,
string keyword arguments, the training flag, req values) and the errors a bad prop
or a failing forward/backward raises."""

import warnings

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd as ag
from oxnet.base import MXNetError
from oxnet.operator import (CustomOp, CustomOpProp, NDArrayOp, NumpyOp, OperatorArguments,
                            get_all_registered_operators, get_operator_arguments, register)

nd = mx.nd
RNG = np.random.RandomState(7)


def _rand(*shape):
    return RNG.uniform(-1, 1, size=shape)


# ---------------------------------------------------------------------------
# Ops used below (registered once at import, as user code does)


class _Sqr(CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        aux[0][:] = aux[0] + 1
        self.assign(out_data[0], req[0], in_data[0] * in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], 2 * in_data[0] * out_grad[0])


@register("test_sqr")
class _SqrProp(CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def list_arguments(self):
        return ['data']

    def list_outputs(self):
        return ['output']

    def list_auxiliary_states(self):
        return ['count']

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [in_shape[0]]

    def create_operator(self, ctx, shapes, dtypes):
        return _Sqr()


class _SumProd(CustomOp):
    """(a + b, a * b): two outputs."""

    def forward(self, is_train, req, in_data, out_data, aux):
        a, b = in_data
        self.assign(out_data[0], req[0], a + b)
        self.assign(out_data[1], req[1], a * b)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        a, b = in_data
        gs, gp = out_grad
        self.assign(in_grad[0], req[0], gs + gp * b)
        self.assign(in_grad[1], req[1], gs + gp * a)


@register("test_sumprod")
class _SumProdProp(CustomOpProp):
    def list_arguments(self):
        return ['a', 'b']

    def list_outputs(self):
        return ['sum', 'prod']

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0], in_shape[0]]

    def create_operator(self, ctx, shapes, dtypes):
        return _SumProd()


class _SoftmaxLoss(CustomOp):
    """A loss layer: backward ignores out_grad (need_top_grad=False)."""

    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0]
        e = nd.exp(x - nd.max(x, axis=1, keepdims=True))
        self.assign(out_data[0], req[0], e / nd.sum(e, axis=1, keepdims=True))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_data[0] - in_data[1])
        self.assign(in_grad[1], req[1], nd.zeros_like(in_data[1]))


@register("test_softmax_loss")
class _SoftmaxLossProp(CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=False)

    def list_arguments(self):
        return ['data', 'label']

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _SoftmaxLoss()


_SEEN = {}


class _Scale(CustomOp):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, is_train, req, in_data, out_data, aux):
        _SEEN['forward'] = (is_train, ag.is_training(), ag.is_recording(), list(req))
        self.assign(out_data[0], req[0], in_data[0] * self.scale)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        _SEEN['backward_req'] = list(req)
        for i in range(len(in_grad)):
            self.assign(in_grad[i], req[i], out_grad[0] * self.scale)


@register("test_scale")
class _ScaleProp(CustomOpProp):
    """Identity times `scale`, on any number of same-shaped inputs summed; prop
    defaults for shape and type."""

    def __init__(self, scale='1', nin='1'):
        super().__init__()
        _SEEN['kwargs'] = (scale, nin)
        self.scale = float(scale)
        self.nin = int(nin)

    def list_arguments(self):
        return ['data%d' % i for i in range(self.nin)] if self.nin > 1 else ['data']

    def create_operator(self, ctx, shapes, dtypes):
        _SEEN['create'] = (ctx, shapes, dtypes)
        return _Scale(self.scale)


class _Const(CustomOp):
    def __init__(self, n):
        super().__init__()
        self.value = np.arange(n, dtype=np.float32)

    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], self.value)


@register("test_const")
class _ConstProp(CustomOpProp):
    def __init__(self, n):
        super().__init__()
        self.n = int(n)

    def list_arguments(self):
        return []

    def infer_shape(self, in_shape):
        return [], [(self.n,)], []

    def infer_type(self, in_type):
        return [], [np.float32], []

    def create_operator(self, ctx, shapes, dtypes):
        return _Const(self.n)


# ---------------------------------------------------------------------------
# forward / backward against NumPy


def test_forward_backward_and_aux_in_place():
    x_np = _rand(4, 5)
    x = nd.array(x_np, dtype='float64')
    count = nd.zeros((4, 5), dtype='float64')
    x.attach_grad()
    head = _rand(4, 5)
    with ag.record():
        y = nd.Custom(x, count, op_type='test_sqr')
    y.backward(nd.array(head, dtype='float64'))
    np.testing.assert_allclose(y.asnumpy(), x_np ** 2, rtol=1e-12)
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * x_np * head, rtol=1e-12)
    assert y.dtype == np.float64
    # the aux state is the caller's array, updated in place at each call
    np.testing.assert_array_equal(count.asnumpy(), np.ones((4, 5)))
    nd.Custom(x, count, op_type='test_sqr').wait_to_read()
    np.testing.assert_array_equal(count.asnumpy(), 2 * np.ones((4, 5)))


def test_inputs_by_keyword_and_chain_rule():
    x_np = _rand(3, 2)
    x = nd.array(x_np)
    x.attach_grad()
    count = nd.zeros((3, 2))
    with ag.record():
        y = nd.Custom(data=x, count=count, op_type='test_sqr')
        z = (y * 3).sum()
    z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * x_np, rtol=1e-5)


def test_multiple_outputs():
    a_np, b_np = _rand(2, 3), _rand(2, 3)
    a, b = nd.array(a_np), nd.array(b_np)
    a.attach_grad()
    b.attach_grad()
    gs, gp = _rand(2, 3), _rand(2, 3)
    with ag.record():
        s, p = nd.Custom(a, b, op_type='test_sumprod')
    ag.backward([s, p], [nd.array(gs), nd.array(gp)])
    np.testing.assert_allclose(s.asnumpy(), a_np + b_np, rtol=1e-5)
    np.testing.assert_allclose(p.asnumpy(), a_np * b_np, rtol=1e-5)
    np.testing.assert_allclose(a.grad.asnumpy(), gs + gp * b_np, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b.grad.asnumpy(), gs + gp * a_np, rtol=1e-5, atol=1e-6)
    # only one output used: the other's gradient is zero
    with ag.record():
        s, p = nd.Custom(a, b, op_type='test_sumprod')
    p.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), b_np, rtol=1e-5)


def test_need_top_grad_false_loss_layer():
    x_np = _rand(4, 3)
    label = np.eye(3)[[0, 2, 1, 0]]
    x = nd.array(x_np)
    x.attach_grad()
    with ag.record():
        prob = nd.Custom(x, nd.array(label), op_type='test_softmax_loss')
    prob.backward()
    e = np.exp(x_np - x_np.max(axis=1, keepdims=True))
    sm = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(prob.asnumpy(), sm, rtol=1e-5)
    np.testing.assert_allclose(x.grad.asnumpy(), sm - label, rtol=1e-5, atol=1e-6)
    prop = _SoftmaxLossProp()
    assert prop.need_top_grad_ is False
    # out_grad ids 0, in_data 1-2, out_data 3: no out_grad without need_top_grad
    assert prop.declare_backward_dependency([0], [1, 2], [3]) == [1, 2, 3]
    assert _SqrProp().declare_backward_dependency([0], [1], [2]) == [0, 1, 2]


def test_kwargs_reach_prop_as_strings_and_defaults():
    x_np = _rand(2, 3)
    x = nd.array(x_np, dtype='float64')
    y = nd.Custom(x, scale=2.5, op_type='test_scale')
    assert _SEEN['kwargs'] == ('2.5', '1')
    # the prop's default infer_shape/infer_type: the first input's shape and dtype
    assert y.shape == (2, 3) and y.dtype == np.float64
    np.testing.assert_allclose(y.asnumpy(), 2.5 * x_np)
    ctx, shapes, dtypes = _SEEN['create']
    assert ctx == mx.cpu() and shapes == [[2, 3]] and dtypes == [1]  # float64's code
    nd.Custom(x, x, nin=2, op_type='test_scale').wait_to_read()
    assert _SEEN['kwargs'] == ('1', '2')


def test_no_input_op():
    with ag.record():
        y = nd.Custom(n=5, op_type='test_const')
    np.testing.assert_array_equal(y.asnumpy(), np.arange(5, dtype=np.float32))


def test_training_flag_recording_paused_and_reqs():
    a, b = nd.array(_rand(2, 2)), nd.array(_rand(2, 2))
    a.attach_grad()
    nd.Custom(a, op_type='test_scale').wait_to_read()
    assert _SEEN['forward'] == (False, False, False, ['write'])
    with ag.record():
        y = nd.Custom(a, b, nin=2, scale=3, op_type='test_scale')
    assert _SEEN['forward'] == (True, True, False, ['write'])
    y.backward()
    # b is not in the graph: its gradient is not asked for
    assert _SEEN['backward_req'] == ['write', 'null']
    np.testing.assert_allclose(a.grad.asnumpy(), 3 * np.ones((2, 2)))
    with ag.record(train_mode=False):
        nd.Custom(a, op_type='test_scale').wait_to_read()
    assert _SEEN['forward'][:3] == (False, False, False)


def test_out_argument():
    x_np = _rand(2, 3)
    out = nd.zeros((2, 3))
    r = nd.Custom(nd.array(x_np), nd.zeros((2, 3)), op_type='test_sqr', out=out)
    np.testing.assert_allclose(out.asnumpy(), x_np ** 2, rtol=1e-5)
    assert r is out or np.array_equal(r.asnumpy(), out.asnumpy())
    with pytest.raises(MXNetError, match='test_sqr'):
        nd.Custom(nd.array(x_np), nd.zeros((2, 3)), op_type='test_sqr', out=nd.zeros((3, 2)))


# ---------------------------------------------------------------------------
# assign and the prop's defaults


def test_assign_reqs():
    op = CustomOp()
    dst = nd.ones((2,))
    op.assign(dst, 'null', nd.array([5, 6]))
    np.testing.assert_array_equal(dst.asnumpy(), [1, 1])
    op.assign(dst, 'write', nd.array([5, 6]))
    np.testing.assert_array_equal(dst.asnumpy(), [5, 6])
    op.assign(dst, 'inplace', np.array([2, 3]))
    np.testing.assert_array_equal(dst.asnumpy(), [2, 3])
    op.assign(dst, 'add', nd.array([1, 1]))
    np.testing.assert_array_equal(dst.asnumpy(), [3, 4])
    with pytest.raises(MXNetError):
        op.assign(dst, 'bogus', nd.array([1, 1]))


def test_prop_defaults():
    p = CustomOpProp()
    assert p.need_top_grad_ is True
    assert p.list_arguments() == ['data']
    assert p.list_outputs() == ['output']
    assert p.list_auxiliary_states() == []
    ishape, oshape, ashape = p.infer_shape([[2, 3]])
    assert list(ishape) == [[2, 3]] and list(oshape) == [[2, 3]] and list(ashape) == []
    itype, otype, atype = p.infer_type([np.float16])
    assert otype == [np.float16] and atype == []
    assert p.infer_storage_type(['default']) == (['default'], ['default'], [])
    with pytest.raises(AssertionError):
        p.infer_storage_type(['csr'])
    got = p.infer_storage_type_backward(['default'], ['default'], ['default'], ['undefined'], [])
    assert [list(g) for g in got] == [['default'], ['default'], ['default'], ['default'], []]
    with pytest.raises(AssertionError):
        p.infer_storage_type_backward(['csr'], ['default'], ['default'], ['default'], [])
    assert isinstance(p.create_operator(mx.cpu(), [[2]], [0]), CustomOp)


def test_registry_queries():
    ops = get_all_registered_operators()
    assert isinstance(ops, list) and 'Activation' in ops and 'add_n' in ops
    args = get_operator_arguments('Activation')
    assert isinstance(args, OperatorArguments)
    assert args.names == ['data', 'act_type'] and args.narg == 2
    assert args.types == ['NDArray-or-Symbol',
                          "{'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}, required"]
    concat = get_operator_arguments('Concat')
    assert concat.types[0] == 'NDArray-or-Symbol[]' and concat.names[1:] == ['num_args', 'dim']
    with pytest.raises(MXNetError):
        get_operator_arguments('NoSuchOperator')


def test_register_checks():
    with pytest.raises(MXNetError):
        register('test_not_a_prop')(object)

    @register('test_rereg')
    class A(CustomOpProp):
        pass

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')

        @register('test_rereg')
        class B(CustomOpProp):
            pass
    assert any('overriding' in str(x.message) for x in w)
    assert mx.operator._registry.get('test_rereg') is B


# ---------------------------------------------------------------------------
# Errors name the op_type


class _Boom(CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        if _SEEN.get('boom') == 'forward':
            raise ValueError("forward went wrong")
        if _SEEN.get('boom') == 'shape':
            out_data[0][:] = nd.dot(in_data[0], in_data[0])  # (2, 3) x (2, 3): bad shapes
        self.assign(out_data[0], req[0], in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        raise RuntimeError("backward went wrong")


@register("test_boom")
class _BoomProp(CustomOpProp):
    def __init__(self, mode='ok'):
        super().__init__()
        self.mode = mode
        if mode == 'ctor':
            raise KeyError('bad kwarg')

    def infer_shape(self, in_shape):
        if self.mode == 'nouts':
            return in_shape, [in_shape[0], in_shape[0]], []
        if self.mode == 'inshape':
            return [[9, 9]], [in_shape[0]], []
        if self.mode == 'three':
            return (in_shape,)
        return in_shape, [in_shape[0]], []

    def infer_type(self, in_type):
        if self.mode == 'intype':
            return [np.int32], [np.int32], []
        return super().infer_type(in_type)

    def create_operator(self, ctx, shapes, dtypes):
        if self.mode == 'create':
            return None
        return _Boom()


@pytest.mark.parametrize('mode', ['ctor', 'nouts', 'inshape', 'three', 'intype', 'create'])
def test_bad_prop_raises_naming_op_type(mode):
    with pytest.raises(MXNetError, match="test_boom"):
        nd.Custom(nd.ones((2, 3)), mode=mode, op_type='test_boom')


def test_forward_and_backward_errors():
    x = nd.ones((2, 3))
    x.attach_grad()
    try:
        _SEEN['boom'] = 'forward'
        with pytest.raises(MXNetError, match="test_boom.*forward went wrong"):
            nd.Custom(x, op_type='test_boom').wait_to_read()
        _SEEN['boom'] = 'shape'
        with pytest.raises(MXNetError, match="test_boom"):
            nd.Custom(x, op_type='test_boom').wait_to_read()
    finally:
        _SEEN['boom'] = None
    with ag.record():
        y = nd.Custom(x, op_type='test_boom')
    with pytest.raises(MXNetError, match="backward went wrong"):
        y.backward()


def test_bad_calls():
    x = nd.ones((2, 3))
    with pytest.raises(MXNetError, match="op_type"):
        nd.Custom(x)
    with pytest.raises(MXNetError, match="no_such_custom_op"):
        nd.Custom(x, op_type='no_such_custom_op')
    with pytest.raises(MXNetError, match="test_sqr"):
        nd.Custom(x, op_type='test_sqr')  # the aux state is missing
    with pytest.raises(MXNetError, match="test_sqr"):
        nd.Custom(x, x, x, op_type='test_sqr')
    with pytest.raises(MXNetError, match="test_sqr"):
        nd.Custom(x, count=x, data=x, op_type='test_sqr')
    with pytest.raises(MXNetError, match="test_sqr"):
        nd.Custom(x, nd.ones((3, 3)), op_type='test_sqr')  # aux of the wrong shape
    with pytest.raises(MXNetError, match="test_sqr"):
        nd.Custom(x, [1, 2], op_type='test_sqr')


# ---------------------------------------------------------------------------
# The deprecated PythonOp family runs as custom operators


class _NumpyTwice(NumpyOp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def forward(self, in_data, out_data):
        assert isinstance(in_data[0], np.ndarray)
        out_data[0][:] = 2 * in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = 2 * out_grad[0]


class _NDArrayCube(NDArrayOp):
    def forward(self, in_data, out_data):
        out_data[0][:] = in_data[0] ** 3

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = 3 * in_data[0] ** 2 * out_grad[0]


@pytest.mark.parametrize('cls,f,df', [
    (NumpyOp, lambda x: x, lambda x: np.ones_like(x)),
    (_NumpyTwice, lambda x: 2 * x, lambda x: 2 * np.ones_like(x)),
    (_NDArrayCube, lambda x: x ** 3, lambda x: 3 * x ** 2),
])
def test_legacy_python_ops(cls, f, df):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        op = cls()
    x_np = _rand(5)
    x = nd.array(x_np)
    x.attach_grad()
    with ag.record():
        y = nd.Custom(x, op_type=op._op_type())
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), f(x_np).astype(np.float32), rtol=1e-5)
    np.testing.assert_allclose(x.grad.asnumpy(), df(x_np), rtol=1e-5)
    assert op.need_top_grad() is True
    if not hasattr(mx.sym, 'Custom'):
        with pytest.raises(MXNetError, match="sym.Custom"):
            op.get_symbol(mx.sym.Variable('x'))


# ---------------------------------------------------------------------------
# _CustomSpec: the checked calls a symbolic Custom op will make (the Rust hook's contract)


def test_custom_spec_contract():
    spec = mx.operator._CustomSpec('test_sumprod', {})
    assert (spec.arguments, spec.outputs, spec.aux_states) == (['a', 'b'], ['sum', 'prod'], [])
    assert spec.need_top_grad is True
    assert spec.infer_shape([(2, 3), [2, 3]]) == [[(2, 3), (2, 3)], [(2, 3), (2, 3)], []]
    assert spec.infer_type([np.float64, np.float64]) == [[np.dtype('float64')] * 2,
                                                         [np.dtype('float64')] * 2, []]
    # ids: out_grad 0-1, in_data 2-3, out_data 4-5
    assert spec.backward_dependency() == [0, 1, 2, 3, 4, 5]
    loss = mx.operator._CustomSpec('test_softmax_loss', {})
    assert loss.need_top_grad is False and loss.backward_dependency() == [1, 2, 3]
    a, b = nd.array([1., 2.]), nd.array([3., 4.])
    op = spec.create_operator(mx.cpu(), [(2,), (2,)], [np.float32, np.float32])
    s, p = nd.zeros((2,)), nd.zeros((2,))
    spec.forward(op, True, ['write', 'write'], [a, b], [s, p], [])
    np.testing.assert_allclose(p.asnumpy(), [3, 8])
    ga, gb = nd.ones((2,)), nd.zeros((2,))
    spec.backward(op, ['add', 'write'], [nd.ones((2,)), nd.ones((2,))], [a, b], [s, p],
                  [ga, gb], [])
    np.testing.assert_allclose(ga.asnumpy(), [1 + 1 + 3, 1 + 1 + 4])
    np.testing.assert_allclose(gb.asnumpy(), [2, 3])
    with pytest.raises(MXNetError, match='test_sumprod'):
        spec.infer_shape([(2, 3)])
    scale = mx.operator._CustomSpec('test_scale', {'scale': 2, 'nin': 1})
    assert _SEEN['kwargs'] == ('2', '1')
    assert scale.arguments == ['data']
