"""What monitors see, named as MXNet 1.9.1 names it (the expectations were read from
MXNet 1.9.1 itself): Executor.set_monitor_callback (forward and backward),
mx.mon.Monitor on a Module, gluon's register_op_hook, and the raw-handle idiom
MXNet callbacks use (``NDArray(ctypes.cast(arr, NDArrayHandle))``)."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import nd
from oxnet.gluon import nn


def monitored(sym, monitor_all, train=False, backward=False, **shapes):
    ex = sym.simple_bind(mx.cpu(), grad_req="write" if backward else "null", **shapes)
    seen = []
    ex.set_monitor_callback(lambda name, arr: seen.append(name), monitor_all=monitor_all)
    ex.forward(is_train=train or backward)
    if backward:
        seen.append("|")
        ex.backward()
    mx.nd.waitall()
    return seen


def test_inputs_use_the_ops_input_names_or_input_i():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    # sqrt and sum have no input names in MXNet (input0); broadcast_mul has lhs/rhs;
    # a variable input is reported under its own name first.
    s = mx.sym.broadcast_mul(mx.sym.sqrt(x, name="r"), mx.sym.sum(y, axis=0, keepdims=True, name="s"),
                             name="m")
    assert monitored(s, True, x=(2, 3), y=(4, 3)) == [
        "x", "r_input0", "r_output", "y", "s_input0", "s_output", "m_lhs", "m_rhs", "m_output"]
    c = mx.sym.concat(x, mx.sym.transpose(y, name="t"), dim=0, name="c")
    assert monitored(c, True, x=(2, 3), y=(3, 2)) == [
        "y", "t_input0", "t_output", "x", "c_arg0", "c_arg1", "c_output"]


@pytest.mark.parametrize("op", ["exp", "relu", "sigmoid", "tanh", "abs", "floor", "square",
                                "sum", "mean", "max", "norm", "argmax", "sort", "topk",
                                "shape_array", "zeros_like", "BlockGrad", "make_loss", "Flatten",
                                "transpose", "SoftmaxActivation", "softmin", "hard_sigmoid"])
def test_ops_without_input_names_report_input0(op):
    sym = getattr(mx.sym, op)(mx.sym.var("x"), name="n")
    assert monitored(sym, True, x=(2, 3))[:2] == ["x", "n_input0"]


@pytest.mark.parametrize("sym", [
    mx.sym.Activation(mx.sym.var("x"), act_type="relu", name="n"),
    mx.sym.Cast(mx.sym.var("x"), dtype="float16", name="n"),
    mx.sym.clip(mx.sym.var("x"), 0, 1, name="n"),
    mx.sym.expand_dims(mx.sym.var("x"), axis=0, name="n"),
    mx.sym.slice_axis(mx.sym.var("x"), axis=0, begin=0, end=1, name="n"),
    mx.sym.broadcast_to(mx.sym.var("x"), shape=(2, 3), name="n"),
    mx.sym.Reshape(mx.sym.var("x"), shape=(-1,), name="n"),
    mx.sym.identity(mx.sym.var("x"), name="n"),
    mx.sym.random.uniform_like(mx.sym.var("x"), name="n"),
    mx.sym.stop_gradient(mx.sym.var("x"), name="n"),
    mx.sym.var("x") * 2,
    mx.sym.var("x") / 2,
    mx.sym.var("x") > 1,
])
def test_more_ops_without_input_names(sym):
    names = monitored(sym, True, x=(2, 3))
    assert names[0] == "x" and names[1] == sym.name + "_input0", names


def test_named_inputs():
    x = mx.sym.var("x")
    cases = [
        (mx.sym.LeakyReLU(x, name="n"), ["x", "n_data"]),
        (mx.sym.softmax(x, name="n"), ["x", "n_data"]),
        (mx.sym.tile(x, reps=(2,), name="n"), ["x", "n_data"]),
        (mx.sym.reverse(x, axis=0, name="n"), ["x", "n_data"]),
        (mx.sym.SliceChannel(x, num_outputs=3, name="n"), ["x", "n_data", "n_output0", "n_output1",
                                                            "n_output2"]),
    ]
    for sym, want in cases:
        assert monitored(sym, True, x=(2, 3))[:len(want)] == want


def test_hidden_outputs_are_reported():
    x = mx.sym.var("x")
    assert monitored(mx.sym.Dropout(mx.sym.LeakyReLU(x, name="lr"), p=0.5, name="do"), False,
                     train=True, x=(2, 3)) == ["lr_output", "do_output", "do_mask"]
    assert monitored(mx.sym.LayerNorm(x, name="ln"), False, train=True, x=(2, 3)) == [
        "ln_output", "ln_mean", "ln_std"]
    # the output names of those outputs, where they are visible
    assert mx.sym.BatchNorm(x, output_mean_var=True, name="bn").list_outputs() == [
        "bn_output", "bn_mean", "bn_var"]
    assert mx.sym.LeakyReLU(x, act_type="rrelu", name="r").list_outputs() == ["r_output", "r_mask"]
    assert mx.sym.contrib.box_nms(x, name="nms").list_outputs() == ["nms_output0"]


def test_backward_reports_each_nodes_input_gradients():
    x = mx.sym.var("x")
    net = mx.sym.LinearRegressionOutput(
        mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=2, name="fc"), act_type="tanh",
                          name="act"), name="out")
    assert monitored(net, False, backward=True, x=(2, 3), out_label=(2, 2)) == [
        "fc_output", "act_output", "out_output", "|",
        "out_backward_output0", "out_backward_output1", "act_backward_output",
        "fc_backward_output0", "fc_backward_output1", "fc_backward_output2"]


def test_backward_monitor_values_are_the_gradients():
    x = mx.sym.var("x")
    w = mx.sym.var("w")
    net = mx.sym.make_loss(mx.sym.sum(mx.sym.dot(x, w, name="d"), name="s"), name="l")
    xv, wv = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4) / 10
    ex = net.bind(mx.cpu(), {"x": nd.array(xv), "w": nd.array(wv)},
                  args_grad={"x": nd.zeros((2, 3)), "w": nd.zeros((3, 4))})
    got = {}
    ex.set_monitor_callback(lambda name, arr: got.__setitem__(name, arr.asnumpy()))
    ex.forward(is_train=True)
    ex.backward()
    np.testing.assert_allclose(got["d_backward_output0"], np.ones((2, 4)) @ wv.T, rtol=1e-6)
    np.testing.assert_allclose(got["d_backward_output1"], xv.T @ np.ones((2, 4)), rtol=1e-6)
    np.testing.assert_allclose(ex.grad_dict["w"].asnumpy(), got["d_backward_output1"])


def test_module_monitor_sees_outputs_arguments_and_gradients():
    data = mx.sym.var("data")
    net = mx.sym.LinearRegressionOutput(
        mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=2, name="fc"), act_type="tanh",
                          name="act"), name="out")
    mod = mx.mod.Module(net, label_names=["out_label"], context=mx.cpu())
    it = mx.io.NDArrayIter(nd.ones((1, 3)), nd.ones((1, 2)), batch_size=1, label_name="out_label")
    mod.bind(it.provide_data, it.provide_label, for_training=True)
    mod.init_params()
    mon = mx.mon.Monitor(1, pattern=".*", sort=True)
    mod.install_monitor(mon)
    mon.tic()
    mod.forward_backward(next(iter(it)))
    assert [r[1] for r in mon.toc()] == [
        "act_backward_output", "act_output", "data", "fc_backward_output0", "fc_backward_output1",
        "fc_backward_output2", "fc_bias", "fc_output", "fc_weight", "out_backward_output0",
        "out_backward_output1", "out_label", "out_output"]


def test_raw_handle_idiom_gives_the_array_back():
    ns = {}
    exec("from oxnet.operator import *", ns)
    ctypes, handle_type, array_type = ns["ctypes"], ns["NDArrayHandle"], ns["NDArray"]
    x = mx.sym.var("x")
    ex = mx.sym.negative(x, name="neg").bind(mx.cpu(), {"x": nd.array([1.0, -2.0])})
    mins = {}

    def callback(name, arr):
        a = array_type(ctypes.cast(arr, handle_type), writable=False)
        mins[name] = nd.min(a).asscalar()

    ex.set_monitor_callback(callback, monitor_all=True)
    ex.forward()
    assert mins == {"x": -2.0, "neg_input0": -2.0, "neg_output": -1.0}
    a = nd.array([5.0, 6.0])
    b = array_type(ctypes.cast(a, handle_type))
    b[:] = 1.0  # shares the memory
    np.testing.assert_array_equal(a.asnumpy(), [1.0, 1.0])
    with pytest.raises(mx.base.MXNetError, match="live NDArray"):
        array_type(ctypes.c_void_p(12345))


def hook_names(net, monitor_all, x):
    seen = []
    net.register_op_hook(lambda name, op, arr: seen.append((name, op)), monitor_all)
    net(x)
    mx.nd.waitall()
    return seen


def test_op_hook_reports_visible_outputs_and_named_inputs():
    net = nn.HybridSequential(prefix="h_")
    with net.name_scope():
        net.add(nn.Dense(2), nn.Activation("relu"), nn.Dropout(0.5), nn.BatchNorm())
    net.initialize()
    net.hybridize()
    x = nd.ones((2, 3, 4))
    assert hook_names(net, True, x) == [
        ("h_dense0_fwd_data", "FullyConnected"), ("h_dense0_fwd_weight", "FullyConnected"),
        ("h_dense0_fwd_bias", "FullyConnected"), ("h_dense0_fwd_output", "FullyConnected"),
        ("h_relu0_fwd_input0", "Activation"), ("h_relu0_fwd_output", "Activation"),
        ("h_dropout0_fwd_data", "Dropout"), ("h_dropout0_fwd_output", "Dropout"),
        ("h_batchnorm0_fwd_data", "BatchNorm"), ("h_batchnorm0_fwd_gamma", "BatchNorm"),
        ("h_batchnorm0_fwd_beta", "BatchNorm"), ("h_batchnorm0_fwd_moving_mean", "BatchNorm"),
        ("h_batchnorm0_fwd_moving_var", "BatchNorm"), ("h_batchnorm0_fwd_output", "BatchNorm")]
    assert [n for n, _ in hook_names(net, False, x)] == [
        "h_dense0_fwd_output", "h_relu0_fwd_output", "h_dropout0_fwd_output",
        "h_batchnorm0_fwd_output"]
    # while recording too, and the values are those of the call
    got = []
    net.register_op_hook(lambda name, op, arr: got.append(arr.asnumpy()), False)
    with mx.autograd.record():
        out = net(x)
    np.testing.assert_allclose(got[-1], out.asnumpy())
