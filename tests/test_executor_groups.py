"""Executor leftovers: monitor callbacks and mx.monitor.Monitor, shared_exec (shared
parameter and gradient arrays, kept through reshape), group2ctx placement; against
NumPy, the ungrouped run and the MXNet 1.9.1 oracle; bad input as MXNetError."""

import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import oxnet as mx

ORACLE = os.environ.get("MXNET_PYTHON", "/work/main/benches/.mxnet-venv/bin/python")


def _net():
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc1")
    act = mx.sym.Activation(fc, act_type="relu", name="relu1")
    sl = mx.sym.SliceChannel(act, num_outputs=3, axis=1, name="sl")
    return mx.sym.Group([sl[0], mx.sym.elemwise_add(sl[1], sl[2], name="add0")])


# ---- monitor --------------------------------------------------------------------------

def test_monitor_callback_sees_outputs_then_inputs_with_monitor_all():
    ex = _net().simple_bind(mx.cpu(), data=(2, 4))
    for a in ex.arg_arrays:
        a[:] = 0.5
    seen = []
    ex.set_monitor_callback(lambda name, arr: seen.append((name, arr.asnumpy().copy())))
    ex.forward(is_train=False)
    assert [n for n, _ in seen] == ["fc1_output", "relu1_output", "sl_output0", "sl_output1", "sl_output2",
                                    "add0_output"]
    np.testing.assert_allclose(seen[0][1], np.full((2, 3), 1.5))
    np.testing.assert_allclose(seen[-1][1], np.full((2, 1), 3.0))
    seen.clear()
    ex.set_monitor_callback(lambda name, arr: seen.append((name, arr.shape)), monitor_all=True)
    ex.forward(is_train=True)
    # as MXNet 1.9.1: a variable input under its own name, then as the node's input
    # (Activation has no input names: input0)
    assert [n for n, _ in seen] == ["data", "fc1_data", "fc1_weight", "fc1_weight", "fc1_bias", "fc1_bias",
                                    "fc1_output", "relu1_input0", "relu1_output", "sl_data", "sl_output0",
                                    "sl_output1", "sl_output2", "add0_lhs", "add0_rhs", "add0_output"]
    assert dict(seen)["fc1_weight"] == (3, 4)
    # backward: the gradients each node's backward gives its inputs. (MXNet's
    # elemwise_add passes its gradient on without a backward node, and it names
    # SliceChannel's `sl_backward_data`; here every node's backward is named alike.)
    seen.clear()
    ex.backward([mx.nd.ones((2, 1)), mx.nd.ones((2, 1))])
    assert seen == [("add0_backward_output0", (2, 1)), ("add0_backward_output1", (2, 1)),
                    ("sl_backward_output", (2, 3)), ("relu1_backward_output", (2, 3)),
                    ("fc1_backward_output0", (2, 4)), ("fc1_backward_output1", (3, 4)),
                    ("fc1_backward_output2", (3,))]
    # None removes the callback
    seen.clear()
    ex.set_monitor_callback(None)
    ex.forward()
    assert seen == []


def test_monitor_callback_raising_is_an_mxneterror_naming_the_node():
    ex = _net().simple_bind(mx.cpu(), data=(2, 4))

    def bad(name, arr):
        if name == "relu1_output":
            raise ValueError("boom")

    ex.set_monitor_callback(bad)
    with pytest.raises(mx.MXNetError, match=r"'relu1_output' of node 'relu1' \(operator Activation\).*boom"):
        ex.forward()
    with pytest.raises(mx.MXNetError, match="callback must be callable"):
        ex.set_monitor_callback(3)
    ex.set_monitor_callback(None)
    ex.arg_dict["data"][:] = 1
    out = ex.forward()
    assert out[0].shape == (2, 1)


def test_monitor_interval_pattern_sort():
    ex = _net().simple_bind(mx.cpu(), data=(2, 4))
    for a in ex.arg_arrays:
        a[:] = 0.5
    mon = mx.monitor.Monitor(1, pattern=".*", sort=True)
    mon.install(ex)
    mon.tic()
    ex.forward()
    res = mon.toc()
    assert [r[1] for r in res] == sorted(r[1] for r in res)
    assert ("fc1_output" in [r[1] for r in res]) and ("fc1_weight" in [r[1] for r in res])
    d = {r[1]: r[2] for r in res}
    assert d["fc1_output"] == "1.5\t" and d["add0_output"] == "3.0\t" and d["data"] == "0.5\t"
    assert all(r[0] == 1 for r in res)
    mon2 = mx.monitor.Monitor(2, pattern="fc.*", stat_func=lambda x: [mx.nd.max(x), mx.nd.min(x)])
    mon2.install(ex)
    got = []
    for _ in range(3):
        mon2.tic()
        ex.forward()
        got.append(mon2.toc())
    assert got[1] == []
    assert [r[1] for r in got[0]] == ["fc1_output", "fc1_weight", "fc1_bias"]
    assert got[0][0][2] == "1.5\t1.5\t" and got[2][0][0] == 3


def test_monitor_toc_print_logs(caplog):
    ex = _net().simple_bind(mx.cpu(), data=(2, 4))
    mon = mx.monitor.Monitor(1, pattern="add0.*")
    mon.install(ex)
    mon.tic()
    ex.forward()
    with caplog.at_level(logging.INFO):
        mon.toc_print()
    assert "Batch:       1 add0_output" in caplog.text


def test_monitor_bad_input():
    with pytest.raises(mx.MXNetError, match="interval"):
        mx.monitor.Monitor(0)
    ex = _net().simple_bind(mx.cpu(), data=(2, 4))
    mon = mx.monitor.Monitor(1, stat_func=lambda x: 3.0)
    mon.install(ex)
    mon.tic()
    ex.forward()
    with pytest.raises(mx.MXNetError, match="stat_func must return an NDArray"):
        mon.toc()


MONITOR_SCENARIO = textwrap.dedent("""
    import sys, importlib
    mx = importlib.import_module(sys.argv[1])
    data = mx.sym.var('data')
    fc = mx.sym.FullyConnected(data, num_hidden=3, name='fc1')
    act = mx.sym.Activation(fc, act_type='relu', name='relu1')
    sl = mx.sym.SliceChannel(act, num_outputs=3, axis=1, name='sl')
    out = mx.sym.Group([sl[0], mx.sym.elemwise_add(sl[1], sl[2], name='add0')])
    ex = out.simple_bind(mx.cpu(), data=(2, 4))
    for a in ex.arg_arrays:
        a[:] = 0.5
    for sort, pattern in ((True, '.*'), (False, 'fc.*|sl_output1')):
        mon = mx.monitor.Monitor(2, pattern=pattern, sort=sort)
        mon.install(ex)
        for i in range(3):
            mon.tic(); ex.forward(); print(mon.toc())
""")


@pytest.mark.skipif(not os.path.exists(ORACLE), reason="MXNet 1.9.1 oracle not installed")
def test_monitor_same_as_mxnet(tmp_path):
    script = tmp_path / "scenario.py"
    script.write_text(MONITOR_SCENARIO)
    env = dict(os.environ, MXNET_SUBGRAPH_BACKEND="NONE")
    mine = subprocess.run([sys.executable, str(script), "oxnet"], capture_output=True, text=True, timeout=120)
    assert mine.returncode == 0, mine.stderr[-2000:]
    theirs = subprocess.run([ORACLE, str(script), "mxnet"], capture_output=True, text=True, timeout=300, env=env)
    assert theirs.returncode == 0, theirs.stderr[-2000:]
    assert mine.stdout == theirs.stdout


# ---- shared_exec ----------------------------------------------------------------------

def _fc():
    data = mx.sym.var("data")
    return mx.sym.FullyConnected(data, num_hidden=3, name="fc1")


def test_shared_exec_shares_named_params_and_grads_and_reshape_keeps_them():
    sym = _fc()
    buf = {}
    names = ["fc1_weight", "fc1_bias"]
    ex1 = sym.simple_bind(mx.cpu(), data=(2, 4), shared_arg_names=names, shared_buffer=buf)
    assert sorted(buf) == ["data", "grad of data"]
    ex1.arg_dict["fc1_weight"][:] = 0.5
    ex2 = sym.simple_bind(mx.cpu(), data=(5, 4), shared_exec=ex1, shared_arg_names=names, shared_buffer=buf)
    assert ex2.arg_dict["fc1_weight"].asnumpy()[0, 0] == 0.5
    ex1.arg_dict["fc1_weight"][:] = 0.25
    assert ex2.arg_dict["fc1_weight"].asnumpy()[0, 0] == 0.25
    ex1.grad_dict["fc1_weight"][:] = 7
    assert ex2.grad_dict["fc1_weight"].asnumpy()[0, 0] == 7
    # the larger data replaced the buffer's entry; a smaller one is a view of it
    assert buf["data"].shape == (5, 4) and ex2.arg_dict["data"].shape == (5, 4)
    ex3 = sym.simple_bind(mx.cpu(), data=(1, 4), shared_exec=ex1, shared_arg_names=names, shared_buffer=buf)
    ex3.arg_dict["data"][:] = 3
    assert buf["data"].asnumpy()[0, 0] == 3 and buf["data"].shape == (5, 4)
    # training through ex2 updates the weights ex1 sees
    ex2.arg_dict["data"][:] = 1
    ex2.forward(is_train=True)
    ex2.backward(mx.nd.ones((5, 3)))
    np.testing.assert_allclose(ex1.grad_dict["fc1_weight"].asnumpy(), np.full((3, 4), 5.0))
    r = ex2.reshape(data=(3, 4))
    ex1.arg_dict["fc1_weight"][:] = 0.125
    assert r.arg_dict["fc1_weight"].asnumpy()[0, 0] == 0.125
    r.forward(data=mx.nd.ones((3, 4)))
    np.testing.assert_allclose(r.outputs[0].asnumpy(), np.full((3, 3), 0.5 + ex1.arg_dict["fc1_bias"].asnumpy()[0]))


def test_shared_exec_without_names_or_buffer_shares_nothing():
    sym = _fc()
    ex1 = sym.simple_bind(mx.cpu(), data=(2, 4))
    ex1.arg_dict["fc1_weight"][:] = 0.5
    for kw in ({}, {"shared_arg_names": ["fc1_weight"]}):
        ex = sym.simple_bind(mx.cpu(), data=(2, 4), shared_exec=ex1, **kw)
        assert ex.arg_dict["fc1_weight"].asnumpy()[0, 0] == 0.0
    args = {n: mx.nd.ones(a.shape) for n, a in ex1.arg_dict.items()}
    exb = sym.bind(mx.cpu(), args, shared_exec=ex1)
    assert exb.arg_dict["fc1_weight"].asnumpy()[0, 0] == 1.0


def test_shared_exec_bad_input():
    sym = _fc()
    buf = {}
    ex1 = sym.simple_bind(mx.cpu(), data=(2, 4), shared_arg_names=["fc1_weight"], shared_buffer=buf)
    with pytest.raises(mx.MXNetError, match=r"'fc1_weight' has shape \(3, 4\) float32 in shared_exec but this graph "
                                            r"needs \(3, 6\)"):
        sym.simple_bind(mx.cpu(), data=(2, 6), shared_exec=ex1, shared_arg_names=["fc1_weight"], shared_buffer=buf)
    # names that are not arguments are ignored, as in MXNet
    ex = sym.simple_bind(mx.cpu(), data=(2, 4), shared_exec=ex1, shared_arg_names=["nope"], shared_buffer=buf)
    assert ex.arg_dict["fc1_weight"] is not ex1.arg_dict["fc1_weight"]
    with pytest.raises(mx.MXNetError, match="shared_exec must be an Executor"):
        sym.simple_bind(mx.cpu(), data=(2, 4), shared_exec="x")
    with pytest.raises(mx.MXNetError, match="shared_exec must be an Executor"):
        sym.bind(mx.cpu(), {n: a for n, a in ex1.arg_dict.items()}, shared_exec=1)
    with pytest.raises(mx.MXNetError, match="shared_buffer must be a dict"):
        sym.simple_bind(mx.cpu(), data=(2, 4), shared_buffer=[])
    assert ex1.arg_dict["fc1_weight"].shape == (3, 4)


# ---- group2ctx ------------------------------------------------------------------------

def _grouped():
    with mx.AttrScope(ctx_group="dev1"):
        data = mx.sym.var("data")
        fc1 = mx.sym.FullyConnected(data, num_hidden=4, name="fc1")
    with mx.AttrScope(ctx_group="dev2"):
        act = mx.sym.Activation(fc1, act_type="tanh", name="act")
        fc2 = mx.sym.FullyConnected(act, num_hidden=2, name="fc2")
    return fc2


def test_group2ctx_places_arrays_and_matches_the_ungrouped_run():
    sym = _grouped()
    g2c = {"dev1": mx.cpu(1), "dev2": mx.cpu(2)}
    ex = sym.simple_bind(mx.cpu(0), data=(3, 5), group2ctx=g2c)
    assert {k: v.context for k, v in ex.arg_dict.items()} == {
        "data": mx.cpu(1), "fc1_weight": mx.cpu(1), "fc1_bias": mx.cpu(1), "fc2_weight": mx.cpu(2),
        "fc2_bias": mx.cpu(2)}
    assert ex.outputs[0].context == mx.cpu(2)
    ref = sym.simple_bind(mx.cpu(0), data=(3, 5))
    rs = np.random.RandomState(0)
    for n in ex.arg_dict:
        v = rs.rand(*ex.arg_dict[n].shape).astype(np.float32) - 0.5
        ex.arg_dict[n][:] = v
        ref.arg_dict[n][:] = v
    for e in (ex, ref):
        e.forward(is_train=True)
        e.backward(mx.nd.ones((3, 2)))
    np.testing.assert_array_equal(ex.outputs[0].asnumpy(), ref.outputs[0].asnumpy())
    for n in ref.grad_dict:
        assert ex.grad_dict[n].context == ex.arg_dict[n].context
        np.testing.assert_array_equal(ex.grad_dict[n].asnumpy(), ref.grad_dict[n].asnumpy())
    # bind with arrays on the default context: copies are inserted
    args = {n: a.copyto(mx.cpu(0)) for n, a in ref.arg_dict.items()}
    grads = {n: mx.nd.zeros(a.shape) for n, a in ref.arg_dict.items()}
    exb = sym.bind(mx.cpu(0), args, args_grad=grads, grad_req="add", group2ctx=g2c)
    exb.forward(is_train=True)
    exb.backward(mx.nd.ones((3, 2)))
    exb.forward(is_train=True)
    exb.backward(mx.nd.ones((3, 2)))
    np.testing.assert_array_equal(exb.outputs[0].asnumpy(), ref.outputs[0].asnumpy())
    for n in ref.grad_dict:
        np.testing.assert_allclose(grads[n].asnumpy(), 2 * ref.grad_dict[n].asnumpy(), rtol=1e-6)
    # reshape keeps the placement
    r = ex.reshape(data=(2, 5))
    assert r.outputs[0].context == mx.cpu(2) and r.arg_dict["fc2_weight"] is ex.arg_dict["fc2_weight"]


def test_group2ctx_bad_input():
    sym = _grouped()
    with pytest.raises(mx.MXNetError, match="group 'dev2' of .* not found in group2ctx"):
        sym.simple_bind(mx.cpu(0), data=(3, 5), group2ctx={"dev1": mx.cpu(1)})
    args = {"data": mx.nd.ones((3, 5)), "fc1_weight": mx.nd.ones((4, 5)), "fc1_bias": mx.nd.ones((4,)),
            "fc2_weight": mx.nd.ones((2, 4)), "fc2_bias": mx.nd.ones((2,))}
    with pytest.raises(mx.MXNetError, match=r"group 'dev1' of node 'fc1' \(FullyConnected\) is not found"):
        sym.bind(mx.cpu(0), args, group2ctx={"devX": mx.cpu(1), "dev2": mx.cpu(2)})
    with pytest.raises(mx.MXNetError, match="context of group 'dev1' must be a Context"):
        sym.bind(mx.cpu(0), args, group2ctx={"dev1": "cpu(1)"})
    with pytest.raises(mx.MXNetError, match="group2ctx must be a dict"):
        sym.bind(mx.cpu(0), args, group2ctx=[("dev1", mx.cpu(1))])
    np.testing.assert_array_equal(args["fc1_weight"].asnumpy(), np.ones((4, 5)))
    # without group2ctx the groups are ignored
    out = sym.bind(mx.cpu(0), args).forward()[0]
    assert out.context == mx.cpu(0)
