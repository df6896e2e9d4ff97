"""mx.contrib.amp: op lists, amp.init's patched operators (imperative, symbolic and
hybridized Gluon), graph conversion (convert_symbol / convert_model /
convert_hybrid_block), loss scaling, and bad input. Float32 models (and NumPy) are the
oracle; graph layouts are those MXNet 1.9.1 produces for the same nets."""

import json

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon, nd
from oxnet.base import MXNetError, dtype_name
from oxnet.contrib import amp
from oxnet.contrib.amp import amp as amp_impl


@pytest.fixture
def amp_off():
    """amp.init patches mx.nd / mx.sym globally: undo it after the test."""
    amp_impl._restore()
    yield
    amp_impl._restore()


def _bf16_round(a):
    """float32 -> nearest bfloat16 (round to nearest even) -> float32, in NumPy."""
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return bits.astype(np.uint32).view(np.float32)


def _ops(sym):
    return [(n["op"], n["name"]) for n in json.loads(sym.tojson(remove_amp_cast=False))["nodes"]]


def _small_net():
    d = mx.sym.var("data")
    c = mx.sym.Convolution(d, num_filter=4, kernel=(3, 3), name="conv")
    b = mx.sym.BatchNorm(c, name="bn", fix_gamma=False)
    r = mx.sym.Activation(b, act_type="relu", name="relu")
    f = mx.sym.FullyConnected(r, num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(f, name="sm")


# ---------------------------------------------------------------------------------
# lists
# ---------------------------------------------------------------------------------
def test_lists_match_mxnet():
    assert amp.list_lp16_ops("bfloat16") == ["Convolution", "FullyConnected"]
    assert amp.list_lp16_ops("float16") == ["Convolution", "Deconvolution", "FullyConnected", "RNN"]
    assert amp.list_lp16_ops(mx.base.bfloat16) is amp.lists.symbol_bf16.BF16_FUNCS
    assert amp.list_lp16_ops(np.float16) is amp.lists.symbol_fp16.FP16_FUNCS
    assert amp.list_fp32_ops("float16") is amp.lists.symbol_fp16.FP32_FUNCS
    assert "BatchNorm" in amp.list_lp16_fp32_ops("bfloat16")
    assert amp.list_lp16_fp32_ops("float16") is amp.lists.symbol_fp16.FP16_FP32_FUNCS
    assert ("Activation", "act_type", ["softrelu"]) in amp.list_conditional_fp32_ops("bfloat16")
    for t in ("float16", "bfloat16"):
        assert {"dot", "batch_dot", "elemwise_add", "_Plus"} <= set(amp.list_widest_type_cast(t))
        assert amp.list_loss_output_functions(t) == [
            "SoftmaxOutput", "LinearRegressionOutput", "LogisticRegressionOutput",
            "MAERegressionOutput"]
    assert amp.list_lp16_use_fp32_params("float16") is None
    assert amp.list_lp16_use_fp32_params("bfloat16")["BatchNorm"] == \
        ["", "gamma", "beta", "moving_mean", "moving_var"]
    assert len(amp.list_fp32_ops("bfloat16")) == 438


@pytest.mark.parametrize("fn", ["list_lp16_ops", "list_fp32_ops", "list_lp16_fp32_ops",
                                "list_conditional_fp32_ops", "list_widest_type_cast",
                                "list_loss_output_functions", "list_lp16_use_fp32_params"])
def test_lists_bad_dtype(fn):
    with pytest.raises(MXNetError, match=fn):
        getattr(amp, fn)("int8")


# ---------------------------------------------------------------------------------
# convert_symbol
# ---------------------------------------------------------------------------------
def test_convert_symbol_graph_bf16():
    s = amp.convert_symbol(_small_net(), target_dtype="bfloat16")
    # MXNet 1.9.1's layout for this net
    assert _ops(s) == [
        ("null", "data"), ("amp_cast", "data_amp_cast_bfloat16"),
        ("null", "conv_weight"), ("amp_cast", "conv_weight_amp_cast_bfloat16"),
        ("null", "conv_bias"), ("amp_cast", "conv_bias_amp_cast_bfloat16"),
        ("Convolution", "conv"), ("null", "bn_gamma"), ("null", "bn_beta"),
        ("null", "bn_moving_mean"), ("null", "bn_moving_var"), ("BatchNorm", "bn"),
        ("Activation", "relu"), ("null", "fc_weight"), ("amp_cast", "fc_weight_amp_cast_bfloat16"),
        ("null", "fc_bias"), ("amp_cast", "fc_bias_amp_cast_bfloat16"),
        ("FullyConnected", "fc"), ("amp_cast", "fc_output_amp_cast_float32"),
        ("null", "sm_label"), ("SoftmaxOutput", "sm")]
    # without data_names every input counts as data: no __dtype__ is written
    assert not any("__dtype__" in v for v in s.attr_dict().values())
    # the default tojson (and save) leaves the casts out, as MXNet's
    plain = [n["op"] for n in json.loads(s.tojson())["nodes"]]
    assert "amp_cast" not in plain and plain.count("Convolution") == 1
    assert s.list_arguments() == _small_net().list_arguments()


def test_convert_symbol_optional_params_fp16():
    s = amp.convert_symbol(_small_net(), target_dtype="float16", data_names=["data", "sm_label"],
                           cast_optional_params=True)
    ops = _ops(s)
    assert ("amp_cast", "conv_weight_amp_cast_float16") not in ops
    assert ops[:4] == [("null", "data"), ("amp_cast", "data_amp_cast_float16"),
                       ("null", "conv_weight"), ("null", "conv_bias")]
    attrs = s.attr_dict()
    assert attrs["conv_weight"]["__dtype__"] == "2" and attrs["fc_bias"]["__dtype__"] == "2"
    assert attrs["bn_gamma"]["__dtype__"] == "0" and attrs["bn_moving_var"]["__dtype__"] == "0"
    assert "__dtype__" not in attrs.get("sm_label", {})


def test_convert_symbol_widest_conditional_and_excluded():
    d, w = mx.sym.var("data"), mx.sym.var("w")
    fc = mx.sym.FullyConnected(d, num_hidden=4, name="fc", no_bias=True)
    fc2 = mx.sym.FullyConnected(d, num_hidden=4, name="fc2", no_bias=True)
    a = mx.sym.elemwise_add(fc, w, name="add")
    sr = mx.sym.Activation(a, act_type="softrelu", name="sr")
    dt = mx.sym.dot(fc2, fc2, transpose_b=True, name="dt")
    s = amp.convert_symbol(mx.sym.Group([sr, dt]), target_dtype="float16")
    ops = _ops(s)
    assert ("amp_multicast", "fc_output_amp_multicast") in ops
    assert ("amp_cast", "add_output_amp_cast_float32") in ops       # softrelu runs in float32
    assert not any(o == "amp_multicast" and "fc2" in n for o, n in ops)   # dot(fp16, fp16)
    heads = json.loads(s.tojson(remove_amp_cast=False))["heads"]
    assert [ops[h[0]][1] for h in heads] == ["sr", "dt_0_amp_cast_float32"]   # outputs float32
    s2 = amp.convert_symbol(mx.sym.Group([sr, dt]), target_dtype="bfloat16",
                            excluded_sym_names=["fc2"])
    assert ("amp_cast", "fc2_weight_amp_cast_bfloat16") not in _ops(s2)
    rng = np.random.RandomState(3)
    args = {"data": nd.array(rng.randn(2, 5)), "w": nd.array(rng.randn(2, 4)),
            "fc_weight": nd.array(rng.randn(4, 5)), "fc2_weight": nd.array(rng.randn(4, 5))}
    ref = [o.asnumpy() for o in mx.sym.Group([sr, dt]).eval(mx.cpu(), **args)]
    for conv, tol in ((s, 3e-2), (s2, 6e-2)):
        outs = conv.eval(mx.cpu(), **args)
        for o, r in zip(outs, ref):
            assert o.dtype == np.float32
            np.testing.assert_allclose(o.asnumpy(), r, rtol=tol, atol=tol * np.abs(r).max())


def _model_params(rng):
    net = _small_net()
    shapes, _, aux_shapes = net.infer_shape(data=(2, 3, 6, 6))
    args = {k: nd.array(rng.randn(*v) * 0.5) for k, v in zip(net.list_arguments(), shapes)
            if k not in ("data", "sm_label")}
    aux = {k: nd.array(rng.rand(*v) + 0.5) for k, v in zip(net.list_auxiliary_states(), aux_shapes)}
    return net, args, aux


@pytest.mark.parametrize("target", ["float16", "bfloat16"])
@pytest.mark.parametrize("cop", [False, True])
def test_convert_model_matches_fp32(target, cop):
    rng = np.random.RandomState(0)
    net, args, aux = _model_params(rng)
    x = nd.array(rng.randn(2, 3, 6, 6))

    def run(sym, a, x_aux):
        ex = sym.bind(mx.cpu(), dict(a, data=x, sm_label=nd.zeros((2,))), aux_states=x_aux,
                      grad_req="null")
        return ex.forward(is_train=False)[0].asnumpy()
    ref = run(net, args, aux)
    sym, a2, x2 = amp.convert_model(net, dict(args), dict(aux), target_dtype=target,
                                    cast_optional_params=cop)
    lp = dtype_name(a2["conv_weight"].dtype)
    assert lp == (target if cop else "float32")
    assert dtype_name(a2["bn_gamma"].dtype) == "float32"
    assert dtype_name(x2["bn_moving_mean"].dtype) == "float32"
    out = run(sym, a2, x2)
    assert out.dtype == np.float32
    tol = 2e-2 if target == "bfloat16" else 2e-3
    np.testing.assert_allclose(out, ref, atol=tol)
    assert np.abs(out - ref).max() > 0     # it did compute in low precision


def test_convert_symbol_fc_numpy_oracle():
    x = np.random.RandomState(1).randn(3, 8).astype(np.float32)
    w = np.random.RandomState(2).randn(5, 8).astype(np.float32)
    s = mx.sym.FullyConnected(mx.sym.var("data"), mx.sym.var("w"), num_hidden=5, no_bias=True,
                              name="fc")
    conv = amp.convert_symbol(s, target_dtype="bfloat16")
    out = conv.eval(mx.cpu(), data=nd.array(x), w=nd.array(w))[0]
    assert out.dtype == np.float32           # the output is cast back
    expect = _bf16_round(_bf16_round(x) @ _bf16_round(w).T)
    np.testing.assert_allclose(out.asnumpy(), expect, rtol=1e-2, atol=1e-2)


def test_convert_symbol_bad_input():
    net = _small_net()
    with pytest.raises(MXNetError, match="convert_symbol.*target_dtype"):
        amp.convert_symbol(net, target_dtype="int8")
    with pytest.raises(MXNetError, match="convert_symbol.*'NoSuchOp'"):
        amp.convert_symbol(net, target_dtype_ops=["Convolution", "NoSuchOp"])
    with pytest.raises(MXNetError, match="convert_symbol.*'Bogus'"):
        amp.convert_symbol(net, fp32_ops=["Bogus"])
    with pytest.raises(MXNetError, match="two lists"):
        amp.convert_symbol(net, target_dtype_ops=["Convolution"], fp32_ops=["Convolution"])
    with pytest.raises(MXNetError, match="conditional_fp32_ops"):
        amp.convert_symbol(net, conditional_fp32_ops=[("Activation", "act_type", "relu")])
    with pytest.raises(MXNetError, match="data_names.*nope"):
        amp.convert_symbol(net, data_names=["data", "nope"])
    with pytest.raises(MXNetError, match="convert_symbol.*Symbol"):
        amp.convert_symbol(nd.ones((1,)))
    with pytest.raises(MXNetError, match="convert_model"):
        amp.convert_model(net, [], {})
    # nothing is lost: the symbol still converts after the errors
    assert ("Convolution", "conv") in _ops(amp.convert_symbol(net, target_dtype="bfloat16"))


_HYBRID_BLOCK_SCRIPT = r"""
import numpy as np
import oxnet as mx
from oxnet import gluon, nd
from oxnet.base import MXNetError, dtype_name
from oxnet.contrib import amp

rng = np.random.RandomState(4)
net = gluon.nn.HybridSequential()
with net.name_scope():
    net.add(gluon.nn.Conv2D(4, 3), gluon.nn.BatchNorm(), gluon.nn.Activation("relu"),
            gluon.nn.Dense(5))
net.initialize(mx.init.Xavier())
x = nd.array(rng.randn(2, 3, 6, 6))
try:
    amp.convert_hybrid_block(net, target_dtype="bfloat16", ctx=mx.cpu())
    raise AssertionError("an un-run block was converted")
except RuntimeError:
    pass
net.hybridize()
ref = net(x).asnumpy()
try:
    amp.convert_hybrid_block(gluon.nn.Block(), ctx=mx.cpu())
    raise AssertionError("a Block was converted")
except MXNetError as e:
    assert "convert_hybrid_block" in str(e)
for cop in (False, True):
    conv = amp.convert_hybrid_block(net, target_dtype="bfloat16", ctx=mx.cpu(),
                                    cast_optional_params=cop)
    out = conv(x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.asnumpy(), ref, atol=5e-2 * np.abs(ref).max())
    conv_w = [p for n, p in conv.collect_params().items() if n.endswith("conv0_weight")][0]
    assert dtype_name(conv_w.data().dtype) == ("bfloat16" if cop else "float32")
# amp.init + a hybridized net in inference mode
amp.init("bfloat16")
net2 = gluon.nn.HybridSequential()
with net2.name_scope():
    net2.add(gluon.nn.Conv2D(4, 3, in_channels=3), gluon.nn.BatchNorm(in_channels=4),
             gluon.nn.Activation("relu"), gluon.nn.Dense(5, in_units=64))
net2.initialize()
for (k, p), (k2, p2) in zip(sorted(net.collect_params().items()),
                            sorted(net2.collect_params().items())):
    p2.set_data(p.data())
net2.hybridize()
out = net2(x)
assert dtype_name(out.dtype) == "bfloat16"
np.testing.assert_allclose(out.astype("float32").asnumpy(), ref, atol=5e-2 * np.abs(ref).max())
print("OK")
"""


@pytest.mark.parametrize("fusion", ["1", "0"])
def test_convert_hybrid_block_and_hybridized_inference(fusion):
    """In a fresh interpreter (amp.init is global), with and without the CPU inference
    fusion (Convolution+BatchNorm as ``_sg_oxnet_conv`` with bfloat16 data and float32
    BatchNorm parameters)."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, OXNET_INFERENCE_FUSION=fusion)
    r = subprocess.run([sys.executable, "-c", _HYBRID_BLOCK_SCRIPT], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr


# ---------------------------------------------------------------------------------
# amp.init
# ---------------------------------------------------------------------------------
def test_init_imperative_bf16(amp_off):
    x = nd.array(np.random.RandomState(0).randn(4, 6))
    w = nd.array(np.random.RandomState(1).randn(3, 6))
    ref = nd.FullyConnected(x, w, num_hidden=3, no_bias=True).asnumpy()
    orig_fc, orig_add = nd.FullyConnected, nd.NDArray.__add__
    amp.init("bfloat16")
    assert nd.FullyConnected is not orig_fc and nd.op.FullyConnected is nd.FullyConnected
    y = nd.FullyConnected(x, w, num_hidden=3, no_bias=True)
    assert dtype_name(y.dtype) == "bfloat16"
    expect = _bf16_round(_bf16_round(x.asnumpy()) @ _bf16_round(w.asnumpy()).T)
    np.testing.assert_allclose(y.astype("float32").asnumpy(), expect, rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(y.astype("float32").asnumpy(), ref, rtol=5e-2, atol=5e-2)
    # float32 ops get float32; widest-type ops the widest input type
    assert nd.exp(y).dtype == np.float32
    assert nd.elemwise_add(y, nd.ones((4, 3))).dtype == np.float32
    assert dtype_name(nd.elemwise_add(y, y).dtype) == "bfloat16"
    ones = nd.ones((4, 3))
    for r in (y + ones, ones + y, y - ones, ones / y, y % ones):
        assert r.dtype == np.float32
    np.testing.assert_allclose((y + ones).asnumpy(), y.astype("float32").asnumpy() + 1)
    assert dtype_name((y + y).dtype) == "bfloat16"
    # conditional: softrelu in float32, relu left alone
    assert nd.Activation(y, act_type="softrelu").dtype == np.float32
    assert dtype_name(nd.Activation(y, act_type="relu").dtype) == "bfloat16"
    # the GEMM ops (widest type) run in bfloat16 on bfloat16 inputs
    b = nd.amp_cast(nd.array(np.random.RandomState(2).randn(3, 5)), dtype="bfloat16")
    d = nd.dot(y, b)
    assert dtype_name(d.dtype) == "bfloat16"
    np.testing.assert_allclose(d.astype("float32").asnumpy(),
                               y.astype("float32").asnumpy() @ b.astype("float32").asnumpy(),
                               rtol=2e-2, atol=5e-2)
    bd = nd.batch_dot(y.reshape((1, 4, 3)), b.reshape((1, 3, 5)))
    assert dtype_name(bd.dtype) == "bfloat16"
    # BatchNorm: bfloat16 data with float32 parameters
    bn = nd.BatchNorm(nd.amp_cast(nd.ones((2, 3, 2, 2)), dtype="bfloat16"), nd.ones((3,)),
                      nd.zeros((3,)), nd.zeros((3,)), nd.ones((3,)), fix_gamma=False)
    assert dtype_name(bn.dtype) == "bfloat16"
    np.testing.assert_allclose(bn.astype("float32").asnumpy(), np.full((2, 3, 2, 2), 1.0),
                               rtol=1e-2)
    # a second init does nothing (with a warning)
    with pytest.warns(UserWarning, match="already initialized"):
        amp.init("float16")
    assert dtype_name(nd.FullyConnected(x, w, num_hidden=3, no_bias=True).dtype) == "bfloat16"
    amp_impl._restore()
    assert nd.FullyConnected is orig_fc and nd.NDArray.__add__ is orig_add
    assert nd.FullyConnected(x, w, num_hidden=3, no_bias=True).dtype == np.float32


def test_init_fp16_imperative(amp_off):
    amp.init("float16")
    x = nd.array(np.random.RandomState(0).randn(2, 3))
    y = nd.FullyConnected(x, nd.ones((4, 3)), num_hidden=4, no_bias=True)
    assert y.dtype == np.float16
    np.testing.assert_allclose(y.asnumpy(), x.asnumpy().sum(1, keepdims=True).repeat(4, 1),
                               rtol=2e-3, atol=2e-3)
    assert nd.exp(y).dtype == np.float32


def test_init_symbolic_graph(amp_off):
    amp.init("float16")
    d = mx.sym.var("data")
    c = mx.sym.Convolution(d, num_filter=4, kernel=(3, 3), name="conv")
    b = mx.sym.BatchNorm(c, name="bn")
    r = mx.sym.Activation(b, act_type="softrelu", name="act")
    f = mx.sym.FullyConnected(r, num_hidden=3, name="fc")
    s = mx.sym.SoftmaxOutput(f + mx.sym.var("w"), name="sm")
    # the graph MXNet 1.9.1 builds after amp.init('float16')
    assert [o for o, _ in _ops(s)] == [
        "null", "amp_cast", "null", "amp_cast", "null", "amp_cast", "Convolution",
        "null", "null", "null", "null", "BatchNorm", "amp_cast", "Activation", "amp_cast",
        "null", "amp_cast", "null", "amp_cast", "FullyConnected", "null", "amp_multicast",
        "elemwise_add", "amp_cast", "null", "amp_cast", "SoftmaxOutput"]
    assert s.list_arguments() == ["data", "conv_weight", "conv_bias", "bn_gamma", "bn_beta",
                                  "fc_weight", "fc_bias", "w", "sm_label"]
    assert s.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]


def test_init_bad_input_leaves_nothing_patched(amp_off):
    orig = (nd.Convolution, mx.sym.Convolution, nd.exp, mx.sym._internal._plus)
    with pytest.raises(MXNetError, match="amp.init.*'NotAnOp'"):
        amp.init("bfloat16", target_precision_ops=["Convolution", "NotAnOp"])
    with pytest.raises(MXNetError, match="amp.init.*'Nope'"):
        amp.init("bfloat16", fp32_ops=["Nope"])
    with pytest.raises(MXNetError, match="amp.init.*'Gone'"):
        amp.init("bfloat16", conditional_fp32_ops=[("Gone", "act_type", ["relu"])])
    with pytest.raises(MXNetError, match="amp.init.*target_dtype"):
        amp.init("float64")
    assert (nd.Convolution, mx.sym.Convolution, nd.exp, mx.sym._internal._plus) == orig
    assert not amp_impl._amp_initialized
    # a valid init afterwards works, with a user list
    amp.init("bfloat16", target_precision_ops=["FullyConnected"], fp32_ops=["exp"],
             conditional_fp32_ops=[])
    y = nd.FullyConnected(nd.ones((2, 3)), nd.ones((4, 3)), num_hidden=4, no_bias=True)
    assert dtype_name(y.dtype) == "bfloat16"
    assert nd.exp(y).dtype == np.float32
    assert dtype_name(nd.sqrt(y).dtype) == "bfloat16"
    x = nd.ones((1, 1, 3, 3))
    assert nd.Convolution(x, nd.ones((1, 1, 1, 1)), kernel=(1, 1), num_filter=1,
                          no_bias=True).dtype == np.float32


def test_init_loss_output_scaled(amp_off):
    amp.init("bfloat16")
    x = nd.array([[1.0, 2.0, 0.5]])
    x.attach_grad()
    with autograd.record():
        out = nd.SoftmaxOutput(x, nd.array([1]))
    out.backward()
    p = np.exp([1.0, 2.0, 0.5]) / np.exp([1.0, 2.0, 0.5]).sum()
    p[1] -= 1
    np.testing.assert_allclose(x.grad.asnumpy()[0], p * amp_impl._loss_scaler.loss_scale,
                               rtol=1e-4)


def _cnn():
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Conv2D(6, 3, padding=1, in_channels=3), gluon.nn.BatchNorm(in_channels=6),
                gluon.nn.Activation("relu"), gluon.nn.MaxPool2D(2), gluon.nn.Dense(10, in_units=96))
    return net


def test_gluon_cnn_bf16_trains(amp_off):
    rng = np.random.RandomState(0)
    x = nd.array(rng.randn(8, 3, 8, 8))
    y = nd.array(rng.randint(0, 10, 8))
    ref_net = _cnn()
    ref_net.initialize(mx.init.Xavier(), force_reinit=True)
    params = {k.split("_", 1)[1]: p.data().copy() for k, p in ref_net.collect_params().items()}
    with autograd.record():          # training mode: BatchNorm uses the batch statistics
        ref_out = ref_net(x).asnumpy()

    amp.init("bfloat16")
    net = _cnn()
    net.initialize()
    for k, p in net.collect_params().items():
        p.set_data(params[k.split("_", 1)[1]])
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    amp.init_trainer(trainer)
    assert trainer._amp_loss_scaler is amp_impl._loss_scaler
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    losses = []
    for step in range(6):
        with autograd.record():
            out = net(x)
            loss = loss_fn(out, y)
            with amp.scale_loss(loss, trainer) as scaled:
                autograd.backward(scaled)
        if step == 0:
            assert dtype_name(out.dtype) == "bfloat16"
            np.testing.assert_allclose(out.astype("float32").asnumpy(), ref_out,
                                       atol=0.05 * np.abs(ref_out).max() + 0.05)
        trainer.step(8)
        losses.append(float(loss.mean().asscalar()))
    assert losses[-1] < 0.5 * losses[0], losses
    for p in net.collect_params().values():      # float32 master weights
        assert p.data().dtype == np.float32
        if p.grad_req != "null":
            assert p.grad().dtype == np.float32
    ops = [o for o, _ in _ops(net._cached_graph[1])]
    assert ops.count("amp_cast") >= 6 and "Convolution" in ops


def test_resnet18_bf16_two_steps(amp_off):
    from oxnet.gluon.model_zoo import vision
    amp.init("bfloat16")
    net = vision.resnet18_v1(classes=10)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
    amp.init_trainer(trainer)
    x = nd.array(np.random.RandomState(0).randn(2, 3, 32, 32))
    y = nd.array([1, 7])
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    losses = []
    for _ in range(2):
        with autograd.record():
            loss = loss_fn(net(x), y)
            with amp.scale_loss(loss, trainer) as scaled:
                autograd.backward(scaled)
        trainer.step(2)
        losses.append(float(loss.mean().asscalar()))
    assert all(np.isfinite(losses)) and losses[1] < losses[0]
    ops = [o for o, _ in _ops(net._cached_graph[1])]
    assert "amp_multicast" in ops            # the residual additions
    assert all(p.data().dtype == np.float32 for p in net.collect_params().values())


def test_trainer_without_init_and_unscale():
    net = gluon.nn.Dense(1, in_units=2, use_bias=False)
    net.initialize(mx.init.Constant(1.0))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1.0})
    amp.init_trainer(trainer)
    with autograd.record():
        loss = net(nd.array([[3.0, 4.0]])).sum()
        with amp.scale_loss([loss, loss], trainer) as scaled:
            assert isinstance(scaled, list) and len(scaled) == 2
            autograd.backward(scaled[0])
    amp.unscale(trainer)
    np.testing.assert_allclose(net.weight.grad().asnumpy(), [[3.0, 4.0]], rtol=1e-6)
    with pytest.raises(TypeError):
        amp.unscale(mx.optimizer.SGD())
    with pytest.raises(TypeError):
        amp.init_trainer("trainer")


def test_convert_bucketing_module():
    def sym_gen(key):
        fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")
        return mx.sym.SoftmaxOutput(fc, name="softmax"), ("data",), ("softmax_label",)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=5, context=mx.cpu())
    with pytest.raises(MXNetError, match="convert_bucketing_module"):
        amp.convert_bucketing_module(mod, target_dtype="bfloat16")
    mod.bind(data_shapes=[("data", (2, 5))], label_shapes=[("softmax_label", (2,))],
             for_training=False)
    mod.init_params(mx.init.Xavier())
    x = nd.array(np.random.RandomState(0).randn(2, 5))
    batch = mx.io.DataBatch([x], [nd.zeros((2,))], bucket_key=5,
                            provide_data=[("data", (2, 5))],
                            provide_label=[("softmax_label", (2,))])
    mod.forward(batch, is_train=False)
    ref = mod.get_outputs()[0].asnumpy()
    with pytest.raises(MXNetError, match="BucketingModule"):
        amp.convert_bucketing_module(object())
    for target, tol in (("bfloat16", 2e-2), ("float16", 2e-3)):
        conv = amp.convert_bucketing_module(mod, target_dtype=target)
        conv.bind(data_shapes=[("data", (2, 5))], label_shapes=[("softmax_label", (2,))],
                  for_training=False)
        conv.forward(batch, is_train=False)
        out = conv.get_outputs()[0]
        assert out.dtype == np.float32
        np.testing.assert_allclose(out.asnumpy(), ref, atol=tol)
        assert "amp_cast" in [o for o, _ in _ops(conv._buckets[5]._symbol)]
