"""Executors: bind / simple_bind, forward in one Rust call with a planned buffer
reuse, backward through the registry's gradients with grad_req write/add/null,
reshape, and the symbol test utilities. NumPy is the oracle."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import _core
from oxnet.test_utils import (check_numeric_gradient, check_symbolic_backward,
                              check_symbolic_forward)


def _registered(*names):
    ops = {n for n, _ in _core.list_ops()}
    return all(n in ops for n in names)


def _net():
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    return mx.sym.sum(x * y + mx.sym.exp(x), axis=1, name="out"), x, y


def test_bind_forward_outputs_and_dicts():
    s, _, _ = _net()
    xv = np.random.uniform(-1, 1, (3, 4)).astype(np.float32)
    yv = np.random.uniform(-1, 1, (3, 4)).astype(np.float32)
    ex = s.bind(mx.cpu(), {"x": mx.nd.array(xv), "y": mx.nd.array(yv)})
    out = ex.forward()
    assert out is ex.outputs and len(out) == 1
    np.testing.assert_allclose(out[0].asnumpy(), (xv * yv + np.exp(xv)).sum(1), rtol=1e-5)
    assert set(ex.arg_dict) == {"x", "y"} and ex.grad_dict == {} and ex.aux_dict == {}
    assert list(ex.output_dict) == ["out_output"]
    # new values through forward(**kwargs); the outputs are the same arrays, updated
    ex.forward(x=mx.nd.array(yv), y=xv)
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), (xv * yv + np.exp(yv)).sum(1), rtol=1e-5)
    ex2 = s.bind(mx.cpu(), [mx.nd.array(xv), mx.nd.array(yv)])
    np.testing.assert_allclose(ex2.forward()[0].asnumpy(), (xv * yv + np.exp(xv)).sum(1), rtol=1e-5)


def test_simple_bind_allocates_from_shapes_and_types():
    s, _, _ = _net()
    ex = s.simple_bind(mx.cpu(), x=(2, 5), y=(2, 5))
    assert ex.arg_dict["x"].shape == (2, 5) and ex.grad_dict["y"].shape == (2, 5)
    assert ex.outputs[0].shape == (2,)
    ex64 = s.simple_bind(mx.cpu(), grad_req="null", type_dict={"x": np.float64}, x=(2, 5), y=(2, 5))
    assert ex64.arg_dict["y"].dtype == np.float64 and ex64.grad_dict == {}
    with pytest.raises(mx.MXNetError, match="'y'"):
        mx.sym.elemwise_add(mx.sym.Variable("x"), mx.sym.sum(mx.sym.Variable("y"))).simple_bind(
            mx.cpu(), x=(1,))


def test_memory_plan_reuses_dead_buffers():
    x = mx.sym.Variable("x")
    s = x
    for _ in range(6):
        s = mx.sym.tanh(s) * 0.5
    ex = s.simple_bind(mx.cpu(), grad_req="null", x=(64, 64))
    planned, naive = ex.planned_bytes()
    assert naive == 12 * 64 * 64 * 4
    assert planned <= 3 * 64 * 64 * 4 < naive
    xv = np.random.uniform(-1, 1, (64, 64)).astype(np.float32)
    want = xv
    for _ in range(6):
        want = np.tanh(want) * 0.5
    np.testing.assert_allclose(ex.forward(x=xv)[0].asnumpy(), want, rtol=1e-5)
    # with gradients the forward values are kept for backward
    ex_t = s.simple_bind(mx.cpu(), x=(64, 64))
    assert ex_t.planned_bytes()[0] == naive
    assert "bytes" in ex.debug_str()


def test_backward_write_add_null():
    s, _, _ = _net()
    xv = np.random.uniform(-1, 1, (3, 4))
    yv = np.random.uniform(-1, 1, (3, 4))
    head = np.random.uniform(-1, 1, (3,))
    gx = (yv + np.exp(xv)) * head[:, None]
    gy = xv * head[:, None]
    check_symbolic_backward(s, [xv, yv], [head], [gx, gy], rtol=1e-4, atol=1e-5)
    check_symbolic_backward(s, {"x": xv, "y": yv}, [head], {"x": gx, "y": gy}, rtol=1e-4, atol=1e-5,
                            grad_req="add")
    g = check_symbolic_backward(s, [xv, yv], [head], {"x": gx}, rtol=1e-4, atol=1e-5,
                                grad_req={"x": "write", "y": "null"})
    assert set(g) == {"x"}
    # add accumulates over two backward passes
    ex = s.simple_bind(mx.cpu(), grad_req="add", x=(3, 4), y=(3, 4))
    ex.forward(is_train=True, x=xv, y=yv)
    ex.backward(mx.nd.array(head))
    ex.backward(mx.nd.array(head))
    np.testing.assert_allclose(ex.grad_dict["y"].asnumpy(), 2 * gy, rtol=1e-4, atol=1e-5)


def test_shared_input_gradients_sum_and_default_head_grads():
    x = mx.sym.Variable("x")
    s = x * x + x
    ex = s.simple_bind(mx.cpu(), x=(4,))
    xv = np.array([1.0, -2.0, 3.0, 0.5], np.float32)
    ex.forward(is_train=True, x=xv)
    ex.backward()
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), 2 * xv + 1, rtol=1e-6)


def test_check_symbolic_forward_and_numeric_gradient():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    s = mx.sym.Group([mx.sym.tanh(a) * b, mx.sym.sum(a / (b * b + 1), axis=0)])
    av, bv = np.random.uniform(-1, 1, (3, 2)), np.random.uniform(-1, 1, (3, 2))
    check_symbolic_forward(s, [av, bv], [np.tanh(av) * bv, (av / (bv * bv + 1)).sum(0)], rtol=1e-5)
    check_numeric_gradient(s, [av, bv], dtype=np.float64)
    with pytest.raises(AssertionError):
        check_symbolic_forward(s, [av, bv], [np.tanh(av), (av / (bv * bv + 1)).sum(0)])


def test_reshape_shares_unchanged_arrays():
    s, _, _ = _net()
    ex = s.simple_bind(mx.cpu(), x=(4, 3), y=(4, 3))
    ex2 = ex.reshape(x=(2, 3), y=(2, 3))
    assert ex2.arg_dict["x"].shape == (2, 3) and ex2.outputs[0].shape == (2,)
    xv = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(ex2.forward(x=xv, y=xv)[0].asnumpy(), np.full(2, 3 * (1 + np.e)), rtol=1e-5)
    with pytest.raises(mx.MXNetError, match="allow_up_sizing"):
        ex.reshape(x=(8, 3), y=(8, 3))
    big = ex.reshape(allow_up_sizing=True, x=(8, 3), y=(8, 3))
    assert big.outputs[0].shape == (8,)


def test_bind_errors():
    s, _, _ = _net()
    x = mx.nd.ones((2, 3))
    # MXNet raises ValueError for a missing array: the error is both.
    with pytest.raises(ValueError, match="'y'"):
        s.bind(mx.cpu(), {"x": x})
    with pytest.raises(mx.MXNetError, match="'y'"):
        s.bind(mx.cpu(), [x])
    with pytest.raises(mx.MXNetError, match="grad_req"):
        s.simple_bind(mx.cpu(), grad_req="sometimes", x=(2, 3), y=(2, 3))
    with pytest.raises(mx.MXNetError, match="grad_req"):
        s.simple_bind(mx.cpu(), grad_req={"x": "bogus"}, x=(2, 3), y=(2, 3))
    with pytest.raises(mx.MXNetError, match=r"\(2, 4\)"):
        s.bind(mx.cpu(), {"x": x, "y": mx.nd.ones((2, 4))})
    # As in MXNet, a dict may name more arrays than the symbol uses.
    np.testing.assert_allclose(s.bind(mx.cpu(), {"x": x, "y": x, "z": x}).forward()[0].asnumpy(),
                               s.bind(mx.cpu(), {"x": x, "y": x}).forward()[0].asnumpy())
    ex = s.bind(mx.cpu(), {"x": x, "y": x})
    # nothing to differentiate: backward is a no-op, as in MXNet (a Module without
    # parameters runs backward on such executors)
    ex.forward(is_train=True)
    ex.backward()
    assert ex.grad_dict == {}
    np.testing.assert_array_equal(x.asnumpy(), np.ones((2, 3)))


def _mlp_numpy_step(x, label, w1, b1, w2, b2, lr):
    h = x @ w1.T + b1
    r = np.maximum(h, 0)
    z = r @ w2.T + b2
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    dz = p.copy()
    dz[np.arange(len(label)), label.astype(int)] -= 1
    gw2, gb2 = dz.T @ r, dz.sum(0)
    dr = dz @ w2
    dh = dr * (h > 0)
    gw1, gb1 = dh.T @ x, dh.sum(0)
    return p, [w1 - lr * gw1, b1 - lr * gb1, w2 - lr * gw2, b2 - lr * gb2]


def test_mlp_trains_one_step_like_numpy():
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu")
    fc2 = mx.sym.FullyConnected(act, num_hidden=3, name="fc2")
    net = mx.sym.SoftmaxOutput(fc2, name="softmax")
    ex = net.simple_bind(mx.cpu(), data=(5, 4))
    rng = np.random.RandomState(0)
    vals = {"data": rng.uniform(-1, 1, (5, 4)), "softmax_label": np.array([0, 2, 1, 1, 0]),
            "fc1_weight": rng.uniform(-.5, .5, (8, 4)), "fc1_bias": rng.uniform(-.1, .1, 8),
            "fc2_weight": rng.uniform(-.5, .5, (3, 8)), "fc2_bias": rng.uniform(-.1, .1, 3)}
    for k, v in vals.items():
        ex.arg_dict[k][:] = v.astype(np.float32)
    out = ex.forward(is_train=True)[0].asnumpy()
    ex.backward()
    params = ["fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"]
    for k in params:
        mx.nd.sgd_update(ex.arg_dict[k], ex.grad_dict[k], lr=0.1, out=ex.arg_dict[k])
    p, new = _mlp_numpy_step(vals["data"], vals["softmax_label"],
                             *[vals[k] for k in params], lr=0.1)
    np.testing.assert_allclose(out, p, rtol=1e-4, atol=1e-5)
    for k, want in zip(params, new):
        np.testing.assert_allclose(ex.arg_dict[k].asnumpy(), want, rtol=1e-4, atol=1e-5)


def test_lenet_trains_one_step_like_numpy():
    data = mx.sym.Variable("data")
    c1 = mx.sym.Convolution(data, kernel=(3, 3), num_filter=2, name="conv1")
    a1 = mx.sym.Activation(c1, act_type="relu")
    p1 = mx.sym.Pooling(a1, pool_type="max", kernel=(2, 2), stride=(2, 2))
    f = mx.sym.Flatten(p1)
    fc = mx.sym.FullyConnected(f, num_hidden=3, name="fc")
    net = mx.sym.SoftmaxOutput(fc, name="softmax")
    ex = net.simple_bind(mx.cpu(), data=(2, 1, 6, 6))
    assert ex.arg_dict["conv1_weight"].shape == (2, 1, 3, 3) and ex.arg_dict["fc_weight"].shape == (3, 8)
    rng = np.random.RandomState(1)
    vals = {k: rng.uniform(-.5, .5, a.shape) for k, a in ex.arg_dict.items()}
    vals["softmax_label"] = np.array([2, 0])
    for k, v in vals.items():
        ex.arg_dict[k][:] = v.astype(np.float32)
    out = ex.forward(is_train=True)[0].asnumpy()
    ex.backward()
    x, w, b = vals["data"], vals["conv1_weight"], vals["conv1_bias"]
    conv = np.zeros((2, 2, 4, 4))
    for i in range(4):
        for j in range(4):
            conv[:, :, i, j] = np.einsum("nchw,kchw->nk", x[:, :, i:i + 3, j:j + 3], w) + b
    r = np.maximum(conv, 0)
    pool = r.reshape(2, 2, 2, 2, 2, 2).max(axis=(3, 5))
    flat = pool.reshape(2, 8)
    z = flat @ vals["fc_weight"].T + vals["fc_bias"]
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(out, p, rtol=1e-4, atol=1e-5)
    dz = p.copy()
    dz[[0, 1], [2, 0]] -= 1
    np.testing.assert_allclose(ex.grad_dict["fc_weight"].asnumpy(), dz.T @ flat, rtol=1e-4, atol=1e-5)
    dflat = (dz @ vals["fc_weight"]).reshape(2, 2, 2, 2)
    mask = (r.reshape(2, 2, 2, 2, 2, 2) == pool[:, :, :, None, :, None])
    dr = (mask * dflat[:, :, :, None, :, None]).reshape(2, 2, 4, 4) * (conv > 0)
    gw = np.zeros_like(w)
    for i in range(4):
        for j in range(4):
            gw += np.einsum("nk,nchw->kchw", dr[:, :, i, j], x[:, :, i:i + 3, j:j + 3])
    np.testing.assert_allclose(ex.grad_dict["conv1_weight"].asnumpy(), gw, rtol=1e-4, atol=1e-5)
    mx.nd.sgd_update(ex.arg_dict["conv1_weight"], ex.grad_dict["conv1_weight"], lr=0.1,
                     out=ex.arg_dict["conv1_weight"])
    np.testing.assert_allclose(ex.arg_dict["conv1_weight"].asnumpy(), w - 0.1 * gw, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------
# MXNet's executor leniencies that MXNet code relies on


def test_backward_ignores_extra_head_grads_and_casts_their_dtype():
    x = mx.sym.Variable("x")
    y = x * 2
    xa = mx.nd.array([1.0, 2.0, 3.0])
    gx = mx.nd.zeros((3,))
    ex = y.bind(mx.cpu(), args={"x": xa}, args_grad={"x": gx})
    ex.forward(is_train=True)
    # a second head gradient for a one-output symbol is ignored, as in MXNet
    ex.backward([mx.nd.ones((3,)), mx.nd.ones((5,))])
    np.testing.assert_allclose(gx.asnumpy(), [2, 2, 2])
    # an int32 head gradient is copied into the float32 output's dtype
    ex.forward(is_train=True)
    ex.backward(mx.nd.array([1, 2, 3], dtype="int32"))
    np.testing.assert_allclose(gx.asnumpy(), [2, 4, 6])


def test_grad_req_dict_and_simple_bind_ignore_names_that_are_not_arguments():
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    y = x * w
    ex = y.bind(mx.cpu(), args={"x": mx.nd.ones((2,)), "w": mx.nd.ones((2,)) * 3},
                args_grad={"x": mx.nd.zeros((2,)), "w": mx.nd.zeros((2,))},
                grad_req={"x": "write", "w": "null", "b": "write"})
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones((2,)))
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), [3, 3])
    assert "w" not in ex.grad_dict
    # simple_bind: only tuple shapes count; other keywords (axis=1, mode='clip') are ignored
    ex = y.simple_bind(mx.cpu(), x=(2, 3), w=(2, 3), axis=1, mode="clip", other=(4,))
    assert ex.arg_dict["x"].shape == (2, 3) and ex.arg_dict["w"].shape == (2, 3)


def test_reshape_shrunk_array_views_the_old_memory():
    # MXNet: an argument that shrinks is a view of the original array's first elements
    x = mx.sym.Variable("x")
    y = mx.sym.FullyConnected(x, num_hidden=4, name="fc")
    exe = y.simple_bind(mx.cpu(), x=(5, 4), grad_req="null")
    exe.arg_dict["x"][:] = 1
    exe.arg_dict["fc_weight"][:] = 1
    exe.arg_dict["fc_bias"][:] = 0
    small = exe.reshape(x=(3, 4))
    assert small.arg_dict["fc_weight"] is exe.arg_dict["fc_weight"]
    small.forward()
    np.testing.assert_array_equal(small.outputs[0].asnumpy(), np.full((3, 4), 4.0))
    small.arg_dict["x"][:] = 2
    np.testing.assert_array_equal(exe.arg_dict["x"].asnumpy()[:, 0], [2, 2, 2, 1, 1])
    big = exe.reshape(allow_up_sizing=True, x=(7, 4))
    assert big.arg_dict["x"].shape == (7, 4)
    with pytest.raises(mx.MXNetError, match="larger"):
        exe.reshape(x=(7, 4))


def test_debug_str_reports_mb_allocated_where_mxnet_code_parses_it():
    x = mx.sym.Variable("data")
    y = (x * x) * x
    ex = y.simple_bind(mx.cpu(), data=(1024, 1024))
    planned, _ = ex.planned_bytes()
    line = ex.debug_str().split("\n")[-3]
    assert line == "Total %d MB allocated" % (planned >> 20)
    assert int(line.split()[1]) >= 4   # at least the 4 MB intermediate x * x
    mod = mx.mod.Module(y, data_names=["data"], label_names=None)
    mod.bind(data_shapes=[("data", (1024, 1024))])
    assert mod._total_exec_bytes == int(mod._execs[0].debug_str().split("\n")[-3].split()[1])
