"""Graph-level behaviour of binding and recording, as MXNet 1.9.1 has it (node
counts and names read from MXNet 1.9.1; values checked with NumPy):
common subexpression elimination and Executor.get_optimized_symbol, the memory
plan of a graph whose heads stop the gradient, hybridize's inline_limit with
autograd.get_symbol, and Symbol._gen_atomic_symbol."""

import json
import re

import numpy as np
import pytest

import oxnet as mx
from oxnet import nd
from oxnet.base import MXNetError


def bind_both(sym, monkeypatch, **arrays):
    """(executor without CSE, executor with CSE), both with gradients."""
    exes = []
    for flag in ("0", "1"):
        monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", flag)
        exes.append(sym.simple_bind(mx.cpu(), grad_req="write",
                                    **{k: v.shape for k, v in arrays.items()}))
    for ex in exes:
        outs = ex.forward(is_train=True, **arrays)
        ex.backward([nd.ones_like(o) for o in outs])
    return exes


def internals(ex):
    return len(ex.get_optimized_symbol().get_internals().list_outputs())


def test_cse_merges_equal_nodes(monkeypatch):
    a, b = mx.sym.var("a"), mx.sym.var("b")
    av, bv = np.random.uniform(size=(3, 4)), np.random.uniform(size=(3, 4))
    arrays = {"a": nd.array(av), "b": nd.array(bv)}
    sym = mx.sym.elemwise_add(mx.sym.elemwise_add(a, b, name="s1"), mx.sym.elemwise_add(a, b, name="s2"),
                              name="top")
    plain, cse = bind_both(sym, monkeypatch, **arrays)
    assert internals(plain) == 5 and internals(cse) == 4
    assert cse.get_optimized_symbol().get_internals().list_outputs() == ["a", "b", "s1_output", "top_output"]
    np.testing.assert_allclose(cse.outputs[0].asnumpy(), 2 * (av + bv), rtol=1e-6)
    for g0, g1 in zip(plain.grad_arrays, cse.grad_arrays):
        np.testing.assert_allclose(g1.asnumpy(), 2 * np.ones((3, 4)))
        np.testing.assert_allclose(g0.asnumpy(), g1.asnumpy())
    # different attributes (a + 1 and a + 2) stay apart
    sym = mx.sym.elemwise_add(a + 1, a + 2)
    plain, cse = bind_both(sym, monkeypatch, a=arrays["a"])
    assert internals(plain) == internals(cse) == 4


def test_cse_copies_heads_it_merged(monkeypatch):
    a = mx.sym.var("a")
    d = a + 1
    g = mx.sym.Group([mx.sym.elemwise_mul(a, d, name="m1"), mx.sym.elemwise_mul(a, d, name="m2")])
    av = np.random.uniform(size=(2, 3))
    plain, cse = bind_both(g, monkeypatch, a=nd.array(av))
    assert cse.get_optimized_symbol().list_outputs() == ["m1_output", "m1_0_copy_output"]
    assert internals(plain) == internals(cse) == 4
    for o in cse.outputs:
        np.testing.assert_allclose(o.asnumpy(), av * (av + 1), rtol=1e-6)
    # the two outputs are distinct arrays
    assert cse.outputs[0] is not cse.outputs[1]
    np.testing.assert_allclose(cse.grad_arrays[0].asnumpy(), plain.grad_arrays[0].asnumpy(), rtol=1e-6)
    # a head merged into another node's head keeps that node's name
    e = mx.sym.Group([mx.sym.exp(a, name="e1") + 0, mx.sym.exp(a, name="e2")])
    _, cse = bind_both(e, monkeypatch, a=nd.array(av))
    assert cse.get_optimized_symbol().list_outputs()[1] == "e1_output"


def test_cse_never_merges_random_ops(monkeypatch):
    a = mx.sym.var("a")
    av = nd.array(np.ones((50, 50)))
    for sym in [mx.sym.Dropout(a, p=0.5) + mx.sym.Dropout(a, p=0.5),
                mx.sym.random.uniform_like(a) + mx.sym.random.uniform_like(a)]:
        plain, cse = bind_both(sym, monkeypatch, a=av)
        assert internals(plain) == internals(cse) == 4
    monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", "1")
    u = mx.sym.Group([mx.sym.random.uniform_like(a, name="u1"), mx.sym.random.uniform_like(a, name="u2")])
    ex = u.bind(mx.cpu(), {"a": av})
    o1, o2 = [o.asnumpy() for o in ex.forward()]
    assert not np.array_equal(o1, o2)


def total_mb(ex):
    return int(re.search(r"Total (\d+) MB allocated", ex.debug_str()).group(1))


def test_stopped_gradient_plans_no_backward_memory():
    data = mx.sym.var("data")
    out = data
    for _ in range(6):
        out = out * out
    shape = (4, 1, 256, 256)  # 1 MB of float32
    with_grad = out.simple_bind(mx.cpu(), data=shape)
    no_grad = out.simple_bind(mx.cpu(), data=shape, grad_req="null")
    stopped = mx.sym.stop_gradient(out).simple_bind(mx.cpu(), data=shape)
    # with gradients every product is kept for the backward pass; none is read
    # when the heads stop the gradient
    assert total_mb(with_grad) == 6
    assert total_mb(stopped) == total_mb(no_grad) == 2
    x = np.random.uniform(0.5, 1.0, size=shape).astype(np.float32)
    stopped.arg_dict["data"][:] = x
    stopped.grad_dict["data"][:] = 7.0
    y = stopped.forward(is_train=True)[0].asnumpy()
    np.testing.assert_allclose(y, x ** 64, rtol=1e-4)
    stopped.backward()
    np.testing.assert_array_equal(stopped.grad_dict["data"].asnumpy(), np.zeros(shape))
    with_grad.forward(is_train=True, data=nd.array(x))
    with_grad.backward([nd.ones(shape)])
    np.testing.assert_allclose(with_grad.grad_dict["data"].asnumpy(), 64 * x ** 63, rtol=1e-3)


def three_dense():
    net = mx.gluon.nn.HybridSequential(prefix="net_")
    with net.name_scope():
        for _ in range(3):
            net.add(mx.gluon.nn.Dense(4))
    net.initialize(mx.init.Uniform())
    return net


def recorded_ops(net, x):
    with mx.autograd.record():
        y = net(x)
    sym = mx.autograd.get_symbol(y)
    nodes = json.loads(sym.tojson())["nodes"]
    y.backward()
    return [n["op"] for n in nodes if n["op"] != "null"], sym, y


def test_inline_limit_and_get_symbol():
    net = three_dense()
    x = nd.array(np.random.uniform(size=(2, 5)))
    net.hybridize(inline_limit=3)
    ops, _, y_inline = recorded_ops(net, x)
    assert ops == ["FullyConnected"] * 3
    grads_inline = [p.grad().asnumpy() for p in net.collect_params().values()]
    net.hybridize(inline_limit=2)
    ops, sym, y = recorded_ops(net, x)
    assert ops == ["_CachedOp"]
    assert len(sym.list_arguments()) == 7
    assert sym.list_outputs()[0].endswith("_net_dense2_fwd_output")
    np.testing.assert_allclose(y.asnumpy(), y_inline.asnumpy(), rtol=1e-6)
    for p, g in zip(net.collect_params().values(), grads_inline):
        np.testing.assert_allclose(p.grad().asnumpy(), g, rtol=1e-5)
    # the _CachedOp node runs the block's graph: its inputs are the graph's, in order
    params = {p.name: p.data() for p in net.collect_params().values()}
    graph_inputs = net(mx.sym.var("data")).list_inputs()
    args = {n: (x if g == "data" else params[g]) for n, g in zip(sym.list_arguments(), graph_inputs)}
    out = sym.bind(mx.cpu(), args).forward()[0]
    np.testing.assert_allclose(out.asnumpy(), y.asnumpy(), rtol=1e-6)


def test_default_inline_limit_and_static_alloc():
    net = mx.gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(3))
    net.initialize()
    x = nd.ones((2, 4))
    net.hybridize()  # inline_limit 2: one FullyConnected is inlined
    assert recorded_ops(net, x)[0] == ["FullyConnected"]
    net.hybridize(static_alloc=True)  # never inlined
    assert recorded_ops(net, x)[0] == ["_CachedOp"]
    net.hybridize(inline_limit=0)
    assert recorded_ops(net, x)[0] == ["_CachedOp"]


def test_gen_atomic_symbol_and_compose():
    data, p, h0 = mx.sym.var("data"), mx.sym.var("param"), mx.sym.var("h0")
    rnn = mx.sym.RNN(data, p, h0, state_size=10, num_layers=2, bidirectional=True,
                     state_outputs=True, mode="gru", name="r")
    a = rnn._gen_atomic_symbol()
    assert a.name == ""
    assert a.list_outputs() == ["output", "state_output"]
    assert a.list_arguments() == []
    attrs = {"state_outputs": "True", "mode": "gru", "bidirectional": "True", "num_layers": "2",
             "state_size": "10"}
    assert a.attr_dict() == {"": attrs}
    node = json.loads(a.tojson())["nodes"]
    assert len(node) == 1 and node[0]["op"] == "RNN" and node[0]["name"] == "" and node[0]["inputs"] == []
    q = a(data=data, parameters=p, state=h0, name="q")
    assert q.list_outputs() == ["q_output", "q_state_output"]
    assert q.list_arguments() == ["data", "param", "h0"]
    assert q.attr_dict() == {"q": attrs}
    assert a.list_arguments() == []  # calling it did not change it
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc", attr={"lr_mult": "2"})._gen_atomic_symbol()
    assert fc.attr_dict() == {"": {"num_hidden": "3", "__lr_mult__": "2", "lr_mult": "2"}}
    f2 = fc(data, name="f2")
    assert f2.list_arguments() == ["data", "f2_weight", "f2_bias"]
    assert fc().list_arguments() == ["data", "weight", "bias"]
    ex = f2.bind(mx.cpu(), {"data": nd.ones((2, 4)), "f2_weight": nd.ones((3, 4)), "f2_bias": nd.zeros((3,))})
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), 4 * np.ones((2, 3)))
    with pytest.raises(MXNetError, match="nongrouped"):
        mx.sym.Group([data + 1, data * 2])._gen_atomic_symbol()
    with pytest.raises(MXNetError, match="variable"):
        data._gen_atomic_symbol()
    with pytest.raises(MXNetError, match="no inputs yet"):
        fc.infer_shape()
