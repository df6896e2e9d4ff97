"""mx.nd.contrib / mx.sym.contrib foreach, while_loop and cond (MXNet 1.9.1's control
flow): forward values and gradients against NumPy and unrolled loops, symbolic
against imperative, JSON round trips of the subgraph nodes, hybridized blocks,
partial shape inference through a loop, and the errors bad inputs raise."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import gluon
from oxnet.base import MXNetError

nd = mx.nd
sym = mx.sym
RNG = np.random.RandomState(3)


def _a(*shape):
    return RNG.uniform(-1, 1, size=shape).astype(np.float32)


def _bind(s, args, grads=None):
    return s.bind(mx.cpu(), args={k: nd.array(v) for k, v in args.items()},
                  args_grad=None if grads is None else {k: nd.zeros(v.shape) for k, v in grads.items()})


# ---------------------------------------------------------------------------
# imperative forms

def test_nd_foreach_values_and_gradients_match_numpy():
    x, s0, w = _a(4, 3), _a(3), _a(3)
    X, S, W = nd.array(x), nd.array(s0), nd.array(w)
    for a in (X, S, W):
        a.attach_grad()
    with mx.autograd.record():
        outs, states = nd.contrib.foreach(lambda d, st: (d * st[0] + W, [st[0] * 0.5 + d]), X, [S])
        loss = outs.sum() + states[0].sum()
    loss.backward()
    # NumPy unrolled loop and its gradient by hand
    s, ys = s0.copy(), []
    for t in range(4):
        ys.append(x[t] * s + w)
        s = s * 0.5 + x[t]
    np.testing.assert_allclose(outs.asnumpy(), np.stack(ys), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(states[0].asnumpy(), s, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(W.grad.asnumpy(), np.full(3, 4.0), rtol=1e-5)
    # d loss / d s0: s_t = 0.5^t s0 + ..., outputs use s_t (t=0..3), final state s_4
    ds0 = sum(x[t] * 0.5 ** t for t in range(4)) + 0.5 ** 4
    np.testing.assert_allclose(S.grad.asnumpy(), ds0, rtol=1e-5, atol=1e-6)


def test_nd_while_loop_pads_to_max_iterations_and_cond_picks_a_branch():
    outs, (i, s) = nd.contrib.while_loop(lambda i, s: i <= 5, lambda i, s: ([i + s], [i + 1, s + i]),
                                         (nd.array([1], dtype="int64"), nd.array([0], dtype="int64")),
                                         max_iterations=8)
    assert outs[0].shape == (8, 1) and outs[0].dtype == np.int64
    np.testing.assert_array_equal(outs[0].asnumpy()[:5, 0], [1, 3, 6, 10, 15])
    np.testing.assert_array_equal(outs[0].asnumpy()[5:, 0], 0)
    assert i.asscalar() == 6 and s.asscalar() == 15
    empty, v = nd.contrib.while_loop(lambda i: i > 9, lambda i: (i, i + 1), nd.array([0]), max_iterations=3)
    assert empty == [] and v.asscalar() == 0
    a = nd.array([2.0])
    assert nd.contrib.cond(a > 1, lambda: a * 10, lambda: a - 1).asscalar() == 20
    assert nd.contrib.cond(a > 3, lambda: a * 10, lambda: a - 1).asscalar() == 1
    with pytest.raises(ValueError, match="max_iterations"):
        nd.contrib.while_loop(lambda i: i < 3, lambda i: (None, [i + 1]), [nd.array([0])])


# ---------------------------------------------------------------------------
# symbolic forms

def _foreach_sym():
    data, state, free = sym.var("data"), sym.var("state"), sym.var("free")
    outs, states = sym.contrib.foreach(lambda d, st: (d * st[0] + free, [st[0] * 0.5 + d]), data, [state])
    return sym.Group([outs * 2, states[0]])


def test_sym_foreach_matches_imperative_values_and_gradients():
    g = _foreach_sym()
    assert sorted(g.list_arguments()) == ["data", "free", "state"]
    x, s0, w = _a(5, 3), _a(3), _a(3)
    og = [nd.array(_a(5, 3)), nd.array(_a(3))]
    ex = _bind(g, {"data": x, "state": s0, "free": w}, {"data": x, "state": s0, "free": w})
    ex.forward(is_train=True)
    ex.backward(og)
    X, S, W = nd.array(x), nd.array(s0), nd.array(w)
    for a in (X, S, W):
        a.attach_grad()
    with mx.autograd.record():
        outs, states = nd.contrib.foreach(lambda d, st: (d * st[0] + W, [st[0] * 0.5 + d]), X, [S])
        heads = [outs * 2, states[0]]
    mx.autograd.backward(heads, og)
    for e, i in zip(ex.outputs, heads):
        np.testing.assert_allclose(e.asnumpy(), i.asnumpy(), rtol=1e-5, atol=1e-6)
    for name, arr in (("data", X), ("state", S), ("free", W)):
        np.testing.assert_allclose(ex.grad_dict[name].asnumpy(), arr.grad.asnumpy(), rtol=1e-5, atol=1e-5)


def test_sym_foreach_json_round_trip_and_shapes():
    g = _foreach_sym()
    js = g.tojson()
    assert '"op": "_foreach"' in js and '"subgraphs"' in js
    again = sym.load_json(js)
    assert again.tojson() == js
    args, outs, _ = again.infer_shape(data=(6, 2), state=(2,))
    assert dict(zip(again.list_arguments(), args))["free"] == (2,)
    assert outs == [(6, 2), (2,)]
    x, s0, w = _a(6, 2), _a(2), _a(2)
    r1 = _bind(g, {"data": x, "state": s0, "free": w}).forward()
    r2 = _bind(again, {"data": x, "state": s0, "free": w}).forward()
    for a, b in zip(r1, r2):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy())
    # partial shapes: the unknown batch stays unknown through the loop
    d = sym.var("d", shape=(0, 3, 4))
    o, _ = sym.contrib.foreach(lambda x, st: (x + st[0], [st[0] * 2]), d, [sym.var("st")])
    _, oshape, _ = o.infer_shape_partial()
    assert oshape[0] == (0, 3, 4)


def test_sym_while_loop_against_numpy_with_gradient():
    i, s, a = sym.var("i"), sym.var("s"), sym.var("a")
    outs, (fi, fs) = sym.contrib.while_loop(lambda i, s: i < 4, lambda i, s: ([s * a], [i + 1, s * a + 1]),
                                            (i, s), max_iterations=6)
    g = sym.Group([outs[0], fs])
    a0, s0 = _a(3), _a(3)
    ex = _bind(g, {"i": np.zeros(1, np.float32), "s": s0, "a": a0}, {"s": s0, "a": a0})
    ex.forward(is_train=True)
    og = [nd.array(_a(6, 3)), nd.array(_a(3))]
    ex.backward(og)
    cur, rows = s0.copy(), []
    for _ in range(4):
        rows.append(cur * a0)
        cur = cur * a0 + 1
    want = np.concatenate([np.stack(rows), np.zeros((2, 3), np.float32)])
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ex.outputs[1].asnumpy(), cur, rtol=1e-5, atol=1e-6)
    # gradient by the imperative loop under autograd
    S, A = nd.array(s0), nd.array(a0)
    S.attach_grad()
    A.attach_grad()
    with mx.autograd.record():
        o, (_, f) = nd.contrib.while_loop(lambda i, s: i < 4, lambda i, s: ([s * A], [i + 1, s * A + 1]),
                                          (nd.zeros((1,)), S), max_iterations=6)
    mx.autograd.backward([o[0], f], og)
    np.testing.assert_allclose(ex.grad_dict["s"].asnumpy(), S.grad.asnumpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ex.grad_dict["a"].asnumpy(), A.grad.asnumpy(), rtol=1e-4, atol=1e-5)


def test_sym_cond_both_branches_and_gradient():
    a, b = sym.var("a"), sym.var("b")
    out = sym.contrib.cond((a * b).sum() < 0.5, lambda: a * b * 3, lambda: a - b)
    js = out.tojson()
    assert sym.load_json(js).tojson() == js
    for av in (np.full((2, 2), 0.1, np.float32), np.full((2, 2), 2.0, np.float32)):
        bv = np.full((2, 2), 0.5, np.float32)
        ex = _bind(out, {"a": av, "b": bv}, {"a": av, "b": bv})
        ex.forward(is_train=True)
        ex.backward([nd.ones((2, 2))])
        small = (av * bv).sum() < 0.5
        np.testing.assert_allclose(ex.outputs[0].asnumpy(), av * bv * 3 if small else av - bv, rtol=1e-6)
        np.testing.assert_allclose(ex.grad_dict["a"].asnumpy(), bv * 3 if small else np.ones_like(av), rtol=1e-6)
        np.testing.assert_allclose(ex.grad_dict["b"].asnumpy(), av * 3 if small else -np.ones_like(av), rtol=1e-6)


def test_nested_loops_and_outer_symbols_are_cut():
    # the body uses an op output from outside the loop: it becomes an input
    x, y = sym.var("x"), sym.var("y")
    shift = y * 2
    outs, _ = sym.contrib.foreach(lambda d, st: (d + shift, st), x, [])
    assert sorted(outs.list_arguments()) == ["x", "y"]
    xv, yv = _a(3, 2), _a(2)
    r = _bind(outs, {"x": xv, "y": yv}).forward()[0].asnumpy()
    np.testing.assert_allclose(r, xv + yv * 2, rtol=1e-6)

    def inner(d, st):
        o, s2 = sym.contrib.foreach(lambda e, t: (e * 2 + t[0], [t[0] + e]), d, st)
        return o, s2
    data, st = sym.var("data"), sym.var("st")
    o, s = sym.contrib.foreach(inner, data, [st])
    g = sym.Group([o, s[0]])
    assert sym.load_json(g.tojson()).tojson() == g.tojson()
    dv, sv = _a(2, 3, 4), _a(4)
    res = _bind(g, {"data": dv, "st": sv}).forward()
    cur, rows = sv.copy(), []
    for t in range(2):
        inner_rows = []
        for k in range(3):
            inner_rows.append(dv[t, k] * 2 + cur)
            cur = cur + dv[t, k]
        rows.append(np.stack(inner_rows))
    np.testing.assert_allclose(res[0].asnumpy(), np.stack(rows), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res[1].asnumpy(), cur, rtol=1e-5, atol=1e-6)


class _Loop(gluon.HybridBlock):
    def hybrid_forward(self, F, data, state):
        outs, states = F.contrib.foreach(lambda d, st: (d * st[0], [st[0] + d]), data, [state])
        c = F.contrib.cond(states[0].sum() > 0, lambda: outs * 2, lambda: outs * 3)
        _, (n,) = F.contrib.while_loop(lambda n: (n < 3).prod(), lambda n: (None, [n + 1]), [states[0]],
                                       max_iterations=4)
        return c, n


def test_hybridized_block_matches_imperative_with_gradients():
    x, s0 = _a(3, 2), _a(2)
    results = []
    for hybrid in (False, True):
        net = _Loop()
        net.initialize()
        if hybrid:
            net.hybridize()
        X, S = nd.array(x), nd.array(s0)
        X.attach_grad()
        with mx.autograd.record():
            c, n = net(X, S)
            loss = c.sum() + n.sum()
        loss.backward()
        results.append((c.asnumpy(), n.asnumpy(), X.grad.asnumpy()))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------
# errors

def test_bad_inputs_raise_errors_naming_the_op():
    data, state = sym.var("data"), sym.var("state")
    outs, states = sym.contrib.foreach(lambda d, st: (d, [st[0] * d]), data, [state])
    g = sym.Group([outs, states[0]])
    # the state changes shape inside the loop: (3,) * (4, 3)-rows broadcast is an error
    with pytest.raises(MXNetError, match="_foreach"):
        g.infer_shape(data=(2, 4), state=(3,))
    # a state whose shape the body changes
    o2, s2 = sym.contrib.foreach(lambda d, st: (d, [sym.concat(st[0], d, dim=0)]), data, [state])
    with pytest.raises(MXNetError, match="_foreach.*loop state 0"):
        _bind(s2[0], {"data": _a(2, 3), "state": _a(3)}).forward()
    # max_iterations missing
    with pytest.raises(ValueError, match="max_iterations"):
        sym.contrib.while_loop(lambda i: i < 3, lambda i: (None, [i + 1]), [sym.var("i")])
    # the generated operator without subgraphs
    with pytest.raises(MXNetError, match="_while_loop"):
        sym._internal._while_loop(sym.var("z"), num_args=3, num_outputs=1, num_out_data=0,
                                  max_iterations=2, cond_input_locs=(0,), func_input_locs=(0,),
                                  func_var_locs=(0,)).infer_shape(z=(1,))
    # a loop condition that is not a scalar
    i = sym.var("i")
    _, (fi,) = sym.contrib.while_loop(lambda i: i < 3, lambda i: (None, [i + 1]), [i], max_iterations=5)
    with pytest.raises(MXNetError, match="_while_loop.*scalar"):
        _bind(fi, {"i": np.zeros(2, np.float32)}).forward()[0].asnumpy()
    # branches that disagree
    a = sym.var("a")
    bad = sym.contrib.cond(a.sum() > 0, lambda: a, lambda: sym.concat(a, a, dim=0))
    with pytest.raises(MXNetError, match="_cond.*branch"):
        bad.infer_shape(a=(2,))
    # a corrupted location in the JSON
    js = g.tojson().replace('"in_data_locs": "[0]"', '"in_data_locs": "[7]"')
    with pytest.raises(MXNetError, match="_foreach"):
        sym.load_json(js)
