"""mx.onnx.export_model and mx.contrib.onnx (import_model, import_to_gluon,
get_model_metadata): oxnet's outputs against onnxruntime's, and round trips through
oxnet's importer; fixtures written by MXNet 1.9.1's own exporter (tests/data/onnx)."""

import os
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import oxnet as mx  # noqa: E402
from oxnet import gluon  # noqa: E402
from oxnet.base import MXNetError  # noqa: E402
from oxnet.gluon.model_zoo import vision  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "onnx")
TOL = 1e-4


def _ort_run(path, feeds):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _randomize(net, seed=0):
    """Random weights with non-trivial BatchNorm statistics, so that outputs are O(1)
    and the inference form of BatchNorm matters."""
    rng = np.random.RandomState(seed)
    for name, p in net.collect_params().items():
        if name.endswith(("running_mean", "moving_mean")):
            p.set_data(mx.nd.array(rng.uniform(-0.1, 0.1, p.shape)))
        elif name.endswith(("running_var", "moving_var")):
            p.set_data(mx.nd.array(rng.uniform(0.5, 1.5, p.shape)))
        elif name.endswith("gamma"):
            p.set_data(mx.nd.array(rng.uniform(0.8, 1.2, p.shape)))
        elif name.endswith("beta"):
            p.set_data(mx.nd.array(rng.uniform(-0.1, 0.1, p.shape)))


def _check_close(got, want, tol=TOL):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    diff = float(np.abs(got.astype(np.float64) - want).max()) if want.size else 0.0
    assert diff <= tol * max(1.0, float(np.abs(want).max())), diff


# ---- the model zoo ---------------------------------------------------------------------

# the smallest input each network accepts (its final fixed-size pooling decides)
_ZOO_SIZE = {"alexnet": 64, "inceptionv3": 299}
for _n in vision._models:
    if _n.startswith(("densenet", "squeezenet")):
        _ZOO_SIZE[_n] = 224


def _export_block(net, tmp_path, shape, name="m", **kw):
    prefix = str(tmp_path / name)
    net.export(prefix)
    path = str(tmp_path / (name + ".onnx"))
    out = mx.onnx.export_model(prefix + "-symbol.json", prefix + "-0000.params", [shape],
                               np.float32, path, **kw)
    assert out == path
    return path


@pytest.mark.parametrize("name", sorted(vision._models))
def test_model_zoo_exports_and_matches_onnxruntime(name, tmp_path):
    size = _ZOO_SIZE.get(name, 32)
    net = vision.get_model(name, classes=10)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = np.random.RandomState(1).uniform(-1, 1, (1, 3, size, size)).astype(np.float32)
    net(mx.nd.array(x))
    _randomize(net)
    want = net(mx.nd.array(x)).asnumpy()
    # the Symbol and the params in memory (the files' path: the tests below)
    sym = net(mx.sym.var("data"))
    params = {p.name: p.data() for p in net.collect_params().values()}
    path = mx.onnx.export_model(sym, params, [x.shape], np.float32, str(tmp_path / "m.onnx"))
    onnx.checker.check_model(path)
    got = _ort_run(path, {"data": x})[0]
    _check_close(got, want)


@pytest.mark.parametrize("opset", [12, 13, 14, 15, 16, 17, 18, 19, 20, 21])
def test_opset_dependent_ops_every_opset(opset, tmp_path):
    """The ops whose ONNX form changed across opsets (axes and split sizes as inputs from
    13 or 18, Softmax over one axis from 13, LayerNormalization from 17), at a dynamic
    batch size."""
    d = mx.sym.var("data")                                     # (N, 4, 6)
    parts = mx.sym.split(d, num_outputs=2, axis=1, squeeze_axis=False)
    a = mx.sym.softmax(parts[0], axis=1) + mx.sym.log_softmax(parts[1], axis=1)
    b = mx.sym.expand_dims(mx.sym.sum(a, axis=2), axis=1)      # (N, 1, 2)
    c = mx.sym.max(a, axis=(1,), keepdims=True) + mx.sym.mean(a, axis=1, keepdims=True)
    e = mx.sym.SliceChannel(d, num_outputs=4, axis=1, squeeze_axis=True)[2]  # (N, 6)
    e = mx.sym.squeeze(mx.sym.expand_dims(e, axis=2), axis=2)
    f = mx.sym.LayerNorm(mx.sym.slice_axis(d, axis=2, begin=1, end=5), name="ln")
    g = mx.sym.clip(mx.sym.prod(f, axis=-1), -2.0, 2.0)        # (N, 4)
    out = mx.sym.Concat(mx.sym.Flatten(b), mx.sym.Flatten(c), e, g, dim=1)
    params = {"ln_gamma": mx.nd.array([0.5, 1.0, 1.5, 2.0]),
              "ln_beta": mx.nd.array([0.1, -0.1, 0.2, 0.0])}
    path = mx.onnx.export_model(out, params, [(1, 4, 6)], np.float32,
                                str(tmp_path / "o.onnx"), opset_version=opset, dynamic=True)
    model = onnx.load(path)
    assert model.opset_import[0].version == opset
    onnx.checker.check_model(model)
    for n in (1, 3):
        x = np.random.RandomState(n).uniform(-1, 1, (n, 4, 6)).astype(np.float32)
        want = _oxnet_forward(out, dict(data=x, **{k: v.asnumpy() for k, v in params.items()}))
        _check_close(_ort_run(path, {"data": x})[0], want[0])
    sym2, arg2, aux2 = mx.contrib.onnx.import_model(path)
    x = np.random.RandomState(5).uniform(-1, 1, (2, 4, 6)).astype(np.float32)
    want = _oxnet_forward(out, dict(data=x, **{k: v.asnumpy() for k, v in params.items()}))
    got = _oxnet_forward(sym2, dict(data=x, **{k: v.asnumpy() for k, v in arg2.items()}))
    _check_close(got[0], want[0])


@pytest.mark.parametrize("opset", [12, 18])
def test_resnet_dynamic_batch(opset, tmp_path):
    net = vision.get_model("resnet18_v2", classes=7)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = np.random.RandomState(2).uniform(-1, 1, (3, 3, 32, 32)).astype(np.float32)
    net(mx.nd.array(x))
    _randomize(net, 3)
    want = net(mx.nd.array(x)).asnumpy()
    path = _export_block(net, tmp_path, (1, 3, 32, 32), opset_version=opset, dynamic=True)
    model = onnx.load(path)
    assert model.opset_import[0].version == opset
    onnx.checker.check_model(model)
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    _check_close(_ort_run(path, {"data": x})[0], want)     # batch 3 through a batch-1 export
    _check_close(_ort_run(path, {"data": x[:1]})[0], want[:1])


def _seed_cnn():
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Conv2D(channels=20, kernel_size=5, activation="relu"))
        net.add(gluon.nn.MaxPool2D(pool_size=2, strides=2))
        net.add(gluon.nn.Conv2D(channels=50, kernel_size=5, activation="relu"))
        net.add(gluon.nn.MaxPool2D(pool_size=2, strides=2))
        net.add(gluon.nn.Flatten())
        net.add(gluon.nn.Dense(500, activation="relu"))
        net.add(gluon.nn.Dense(10))
    return net


@pytest.mark.parametrize("opset", [12, 18])
def test_seed_cnn(opset, tmp_path):
    net = _seed_cnn()
    net.initialize(mx.init.Xavier(magnitude=2.24))
    net.hybridize()
    x = np.random.RandomState(4).uniform(0, 1, (4, 1, 28, 28)).astype(np.float32)
    want = net(mx.nd.array(x)).asnumpy()
    path = _export_block(net, tmp_path, (1, 1, 28, 28), opset_version=opset, dynamic=True)
    onnx.checker.check_model(path)
    _check_close(_ort_run(path, {"data": x})[0], want)
    # and back: Symbol + params into a Module
    sym, arg_params, aux_params = mx.contrib.onnx.import_model(path)
    mod = mx.mod.Module(sym, data_names=["data"], label_names=None)
    mod.bind(data_shapes=[("data", x.shape)], for_training=False)
    mod.set_params(arg_params, aux_params)
    mod.forward(mx.io.DataBatch([mx.nd.array(x)]), is_train=False)
    _check_close(mod.get_outputs()[0].asnumpy(), want)


class _LM(gluon.HybridBlock):
    def __init__(self, vocab=40, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.emb = gluon.nn.Embedding(vocab, 16)
            self.rnn = gluon.rnn.LSTM(24, num_layers=2, layout="NTC")
            self.drop = gluon.nn.Dropout(0.3)
            self.out = gluon.nn.Dense(vocab, flatten=False)

    def hybrid_forward(self, F, x):
        return F.log_softmax(self.out(self.drop(self.rnn(self.emb(x)))))


@pytest.mark.parametrize("opset", [12, 13, 18])
def test_lstm_language_model(opset, tmp_path):
    net = _LM()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = np.random.RandomState(5).randint(0, 40, (3, 6)).astype(np.float32)
    want = net(mx.nd.array(x)).asnumpy()
    path = _export_block(net, tmp_path, x.shape, opset_version=opset, dynamic=True)
    onnx.checker.check_model(path)
    _check_close(_ort_run(path, {"data": x})[0], want)
    _check_close(_ort_run(path, {"data": x[:1]})[0], want[:1])
    blk = mx.contrib.onnx.import_to_gluon(path, mx.cpu())
    _check_close(blk(mx.nd.array(x)).asnumpy(), want)


class _BNNet(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.conv = gluon.nn.Conv2D(6, 3, padding=1)
            self.bn = gluon.nn.BatchNorm()
            self.bn_noscale = gluon.nn.BatchNorm(scale=False, center=False)
            self.dense = gluon.nn.Dense(8)
            self.bn_last = gluon.nn.BatchNorm(axis=-1)
            self.prelu = gluon.nn.PReLU()

    def hybrid_forward(self, F, x):
        y = self.bn_noscale(self.bn(self.conv(x)))
        return self.bn_last(self.prelu(self.dense(y)))


def test_hybridized_block_with_batchnorm(tmp_path):
    net = _BNNet()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = np.random.RandomState(6).uniform(-1, 1, (2, 3, 8, 8)).astype(np.float32)
    net(mx.nd.array(x))
    _randomize(net, 7)
    want = net(mx.nd.array(x)).asnumpy()
    path = _export_block(net, tmp_path, x.shape)
    onnx.checker.check_model(path)
    _check_close(_ort_run(path, {"data": x})[0], want)
    sym, arg_params, aux_params = mx.contrib.onnx.import_model(path)
    assert any(k.endswith("running_mean") for k in aux_params)
    blk = mx.contrib.onnx.import_to_gluon(path, mx.cpu())
    _check_close(blk(mx.nd.array(x)).asnumpy(), want)


def test_export_accepts_symbol_dict_and_lists(tmp_path):
    net = _BNNet()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = np.random.RandomState(8).uniform(-1, 1, (2, 3, 8, 8)).astype(np.float32)
    want = net(mx.nd.array(x)).asnumpy()
    prefix = str(tmp_path / "b")
    net.export(prefix)
    sym = mx.sym.load(prefix + "-symbol.json")
    saved = mx.nd.load(prefix + "-0000.params")
    arg = {k[4:]: v for k, v in saved.items() if k.startswith("arg:")}
    aux = {k[4:]: v for k, v in saved.items() if k.startswith("aux:")}
    both = dict(arg)
    both.update(aux)
    for params in (both, [arg, aux], saved):
        p = mx.onnx.export_model(sym, params, [x.shape], onnx_file_path=str(tmp_path / "b.onnx"))
        _check_close(_ort_run(p, {"data": x})[0], want)
    # the old argument names and the contrib path
    p = mx.contrib.onnx.export_model(sym=sym, params=both, input_shape=[x.shape],
                                     input_type=np.float32,
                                     onnx_file_path=str(tmp_path / "c.onnx"),
                                     run_shape_inference=True, verbose=False)
    _check_close(_ort_run(p, {"data": x})[0], want)
    assert "Convolution" in mx.onnx.get_operator_support()
    md = mx.contrib.onnx.get_model_metadata(p)
    assert md["input_tensor_data"] == [("data", x.shape)]
    assert md["output_tensor_data"][0][1] == want.shape


# ---- operator coverage (Symbol graphs, oxnet's executor as the oracle) -------------------

def _v(name):
    return mx.sym.var(name)


def _cases():
    d = _v("data")
    c = []

    def add(name, sym, shapes, params=None, dtype=np.float32, low=-1.0, high=1.0, rt=True):
        c.append(pytest.param(sym, shapes, params or {}, dtype, low, high, rt, id=name))

    add("fc_flatten", mx.sym.FullyConnected(d, num_hidden=5, name="fc"), {"data": (2, 3, 4)},
        {"fc_weight": (5, 12), "fc_bias": (5,)})
    add("fc_noflatten_nobias", mx.sym.FullyConnected(d, num_hidden=5, flatten=False,
                                                     no_bias=True, name="fc"),
        {"data": (2, 3, 4)}, {"fc_weight": (5, 4)})
    add("conv_group_dilate", mx.sym.Convolution(d, kernel=(3, 3), num_filter=4, num_group=2,
                                                stride=(2, 1), pad=(1, 2), dilate=(1, 2),
                                                name="cv"),
        {"data": (1, 4, 9, 9)}, {"cv_weight": (4, 2, 3, 3), "cv_bias": (4,)})
    add("conv1d", mx.sym.Convolution(d, kernel=(3,), num_filter=2, no_bias=True, name="cv"),
        {"data": (1, 3, 7)}, {"cv_weight": (2, 3, 3)})
    add("deconv", mx.sym.Deconvolution(d, kernel=(3, 3), num_filter=3, stride=(2, 2),
                                       pad=(1, 1), adj=(1, 1), name="dc"),
        {"data": (1, 2, 5, 5)}, {"dc_weight": (2, 3, 3, 3)})
    add("deconv_bias", mx.sym.Deconvolution(d, kernel=(2, 2), num_filter=2, stride=(2, 2),
                                            no_bias=False, name="dc"),
        {"data": (1, 2, 3, 3)}, {"dc_weight": (2, 2, 2, 2), "dc_bias": (2,)})
    add("deconv_target", mx.sym.Deconvolution(d, kernel=(3, 3), num_filter=2, stride=(2, 2),
                                              target_shape=(10, 10), name="dc"),
        {"data": (1, 2, 5, 5)}, {"dc_weight": (2, 2, 3, 3)}, rt=False)
    add("maxpool_full", mx.sym.Pooling(d, kernel=(3, 3), stride=(2, 2), pool_type="max",
                                       pooling_convention="full"), {"data": (1, 2, 8, 8)})
    add("maxpool_full_pad", mx.sym.Pooling(d, kernel=(2, 2), stride=(2, 2), pad=(1, 1),
                                           pool_type="max", pooling_convention="full"),
        {"data": (1, 2, 5, 5)})
    add("avgpool_full", mx.sym.Pooling(d, kernel=(3, 3), stride=(2, 2), pool_type="avg",
                                       pooling_convention="full"), {"data": (1, 2, 6, 6)})
    add("avgpool_full_pad", mx.sym.Pooling(d, kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                                           pool_type="avg", pooling_convention="full"),
        {"data": (1, 2, 6, 6)})
    add("avgpool_full_nopadcount", mx.sym.Pooling(d, kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                                                  pool_type="avg", pooling_convention="full",
                                                  count_include_pad=False),
        {"data": (1, 2, 6, 6)})
    add("sumpool_full", mx.sym.Pooling(d, kernel=(2, 2), stride=(2, 2), pool_type="sum",
                                       pooling_convention="full"), {"data": (1, 2, 5, 5)})
    add("avgpool_pad", mx.sym.Pooling(d, kernel=(3, 3), stride=(1, 1), pad=(1, 1),
                                      pool_type="avg"), {"data": (1, 2, 5, 5)})
    add("avgpool_nopadcount", mx.sym.Pooling(d, kernel=(3, 3), stride=(1, 1), pad=(1, 1),
                                             pool_type="avg", count_include_pad=False),
        {"data": (1, 2, 5, 5)})
    add("sumpool", mx.sym.Pooling(d, kernel=(2, 2), stride=(2, 2), pool_type="sum"),
        {"data": (1, 2, 4, 4)})
    add("global_max", mx.sym.Pooling(d, kernel=(1, 1), global_pool=True, pool_type="max"),
        {"data": (2, 3, 4, 5)})
    add("global_avg", mx.sym.Pooling(d, kernel=(1, 1), global_pool=True, pool_type="avg"),
        {"data": (2, 3, 4, 5)})
    for act in ("relu", "sigmoid", "tanh", "softrelu", "softsign"):
        add("act_" + act, mx.sym.Activation(d, act_type=act), {"data": (2, 5)})
    for act in ("leaky", "elu", "selu", "gelu"):
        add("leaky_" + act, mx.sym.LeakyReLU(d, act_type=act, slope=0.2), {"data": (2, 5)})
    add("prelu", mx.sym.LeakyReLU(d, act_type="prelu", name="pr"), {"data": (2, 3, 4)},
        {"pr_gamma": (3,)})
    add("softmax_axis1", mx.sym.softmax(d, axis=1), {"data": (2, 3, 4)})
    add("softmax_temp", mx.sym.softmax(d, temperature=2.0), {"data": (2, 3, 4)})
    add("log_softmax", mx.sym.log_softmax(d, axis=-1), {"data": (2, 3, 4)})
    add("softmax_output", mx.sym.SoftmaxOutput(d, name="softmax"), {"data": (2, 3, 4)})
    add("softmax_output_multi", mx.sym.SoftmaxOutput(d, multi_output=True, name="softmax"),
        {"data": (2, 3, 4)})
    add("concat", mx.sym.Concat(d, d * 2, dim=2), {"data": (2, 3, 4)})
    add("flatten", mx.sym.Flatten(d), {"data": (2, 3, 4)})
    for i, spec in enumerate([(0, -1), (-1, 4), (0, 0, 2, 2), (-2,), (-3, 4), (0, -4, 3, 1, -2),
                              (-1,), (2, -1, 0)]):
        add("reshape%d" % i, mx.sym.Reshape(d, shape=spec), {"data": (2, 3, 4)})
    add("reshape_reverse", mx.sym.Reshape(d, shape=(-1, 0), reverse=True), {"data": (2, 3, 4)})
    add("transpose", mx.sym.transpose(d, axes=(2, 0, 1)), {"data": (2, 3, 4)})
    add("transpose_default", mx.sym.transpose(d), {"data": (2, 3, 4)})
    add("swapaxes", mx.sym.SwapAxis(d, dim1=0, dim2=2), {"data": (2, 3, 4)})
    add("slice", mx.sym.slice(d, begin=(None, 1, 0), end=(None, 3, -1), step=(1, 1, 2)),
        {"data": (2, 4, 6)})
    add("slice_neg_step", mx.sym.slice(d, begin=(None, None), end=(None, None), step=(1, -1)),
        {"data": (2, 4)})
    add("slice_axis", mx.sym.slice_axis(d, axis=1, begin=1, end=None), {"data": (2, 4, 3)})
    add("slice_axis_neg", mx.sym.slice_axis(d, axis=-1, begin=-2, end=-1), {"data": (2, 4, 3)})
    x, y = _v("x"), _v("y")
    for op in ("elemwise_add", "elemwise_sub", "elemwise_mul", "elemwise_div"):
        add(op, getattr(mx.sym, op)(x, y), {"x": (2, 3), "y": (2, 3)}, low=0.5, high=2.0)
    for op in ("broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div",
               "broadcast_maximum", "broadcast_minimum", "broadcast_power", "broadcast_equal",
               "broadcast_greater", "broadcast_lesser_equal", "broadcast_not_equal"):
        add(op, getattr(mx.sym, op)(x, y), {"x": (2, 3, 4), "y": (1, 3, 1)}, low=0.5, high=2.0)
    add("scalar_ops", ((((d + 1) - 2) * 3 / 4) ** 2 + 1 / (d + 3) - (5 - d)) + (2 ** d),
        {"data": (2, 3)})
    add("scalar_minmax_cmp", mx.sym.maximum(d, 0.1) + mx.sym.minimum(d, 0.2) + (d > 0)
        + (d <= 0.5) + (d == 0.25), {"data": (2, 3)})
    add("clip", mx.sym.clip(d, -0.5, 0.5), {"data": (2, 3)})
    add("dropout", mx.sym.Dropout(d, p=0.5), {"data": (2, 3)})
    add("unary", mx.sym.exp(d) + mx.sym.log(mx.sym.abs(d) + 1) + mx.sym.sqrt(mx.sym.abs(d))
        + mx.sym.rsqrt(mx.sym.abs(d) + 1) + mx.sym.square(d) + mx.sym.negative(d)
        + mx.sym.floor(d) + mx.sym.ceil(d) + mx.sym.sin(d) + mx.sym.erf(d)
        + mx.sym.sign(d) + mx.sym.reciprocal(d + 2) + mx.sym.round(d * 3)
        + mx.sym.log1p(mx.sym.abs(d)) + mx.sym.expm1(d), {"data": (2, 3)}, rt=False)
    add("embedding", mx.sym.Embedding(d, input_dim=10, output_dim=4, name="emb"),
        {"data": (2, 3)}, {"emb_weight": (10, 4)}, low=0, high=9.99)
    add("embedding_int32", mx.sym.Embedding(d, input_dim=10, output_dim=4, name="emb"),
        {"data": (2, 3)}, {"emb_weight": (10, 4)}, dtype=np.int32, low=0, high=9.99)
    add("dot", mx.sym.dot(x, y), {"x": (2, 3), "y": (3, 4)})
    add("dot_t", mx.sym.dot(x, y, transpose_a=True, transpose_b=True), {"x": (3, 2),
                                                                       "y": (4, 3)})
    add("dot_nd", mx.sym.dot(x, y), {"x": (2, 2, 3), "y": (3, 4)})
    add("batch_dot", mx.sym.batch_dot(x, y, transpose_b=True), {"x": (2, 3, 4),
                                                               "y": (2, 5, 4)})
    add("sum_axis", mx.sym.sum(d, axis=1), {"data": (2, 3, 4)})
    add("mean_keep", mx.sym.mean(d, axis=(1, 2), keepdims=True), {"data": (2, 3, 4)})
    add("max_exclude", mx.sym.max(d, axis=1, exclude=True), {"data": (2, 3, 4)})
    add("min_all", mx.sym.min(d), {"data": (2, 3, 4)})
    add("sum_all", mx.sym.sum(d), {"data": (2, 3, 4)})
    add("prod", mx.sym.prod(d, axis=-1), {"data": (2, 3, 4)})
    add("norm", mx.sym.norm(d, axis=1), {"data": (2, 3, 4)})
    add("expand_squeeze", mx.sym.squeeze(mx.sym.expand_dims(d, axis=1), axis=1)
        + mx.sym.squeeze(mx.sym.expand_dims(d, axis=-1)), {"data": (2, 3)})
    add("cast", mx.sym.Cast(mx.sym.Cast(d * 4, dtype="int32"), dtype="float32"),
        {"data": (2, 3)})
    add("where", mx.sym.where(x > 0, x, y), {"x": (2, 3), "y": (2, 3)})
    add("argmax", mx.sym.argmax(d, axis=1) + mx.sym.argmin(d, axis=1, keepdims=False),
        {"data": (2, 5)})
    add("split", mx.sym.SliceChannel(d, num_outputs=3, axis=1)[1], {"data": (2, 6, 2)})
    add("split_squeeze", mx.sym.split(d, num_outputs=2, axis=2, squeeze_axis=True)[0],
        {"data": (2, 3, 2)})
    add("stack", mx.sym.stack(x, y, axis=1), {"x": (2, 3), "y": (2, 3)})
    add("tile", mx.sym.tile(d, reps=(2, 1, 3)), {"data": (2, 3)})
    add("broadcast_to", mx.sym.broadcast_to(d, shape=(2, 0, 4)), {"data": (1, 3, 1)})
    add("broadcast_axis", mx.sym.broadcast_axis(d, axis=2, size=3), {"data": (2, 3, 1)})
    add("broadcast_like", mx.sym.broadcast_like(x, y), {"x": (1, 3), "y": (2, 3)})
    add("zeros_ones_like", mx.sym.zeros_like(d) + mx.sym.ones_like(d) + d, {"data": (2, 3)})
    add("add_n", mx.sym.add_n(x, y, x), {"x": (2, 3), "y": (2, 3)})
    add("pad", mx.sym.Pad(d, mode="constant", pad_width=(0, 0, 0, 0, 1, 2, 2, 1),
                          constant_value=0.5), {"data": (1, 2, 3, 3)})
    add("pad_edge", mx.sym.Pad(d, mode="edge", pad_width=(0, 0, 0, 0, 1, 1, 1, 1)),
        {"data": (1, 2, 3, 3)})
    add("upsampling", mx.sym.UpSampling(d, scale=2, sample_type="nearest"),
        {"data": (1, 2, 3, 3)})
    add("lrn", mx.sym.LRN(d, nsize=3), {"data": (1, 5, 3, 3)})
    add("instancenorm", mx.sym.InstanceNorm(d, name="in"), {"data": (2, 3, 4, 4)},
        {"in_gamma": (3,), "in_beta": (3,)})
    add("layernorm", mx.sym.LayerNorm(d, name="ln"), {"data": (2, 3, 4)},
        {"ln_gamma": (4,), "ln_beta": (4,)})
    add("layernorm_axis1", mx.sym.LayerNorm(d, axis=1, name="ln"), {"data": (2, 3, 4)},
        {"ln_gamma": (3,), "ln_beta": (3,)}, rt=False)
    add("l2norm", mx.sym.L2Normalization(d), {"data": (2, 3, 4)}, rt=False)
    add("batchnorm_fixgamma", mx.sym.BatchNorm(d, name="bn"), {"data": (2, 3, 4)},
        {"bn_gamma": (3,), "bn_beta": (3,), "bn_moving_mean": (3,), "bn_moving_var": (3,)})
    add("identity_blockgrad", mx.sym.BlockGrad(d) + mx.sym.identity(d), {"data": (2, 3)})
    add("contrib_quadratic", mx.sym.contrib.quadratic(d, a=0.5, b=-1.0, c=2.0)
        + mx.sym.contrib.gradientmultiplier(d, scalar=0.1), {"data": (2, 3)}, rt=False)
    add("take", mx.sym.take(x, y, axis=1), {"x": (3, 5), "y": (2, 2)}, low=0, high=2.99,
        rt=False)
    add("softmax_activation", mx.sym.SoftmaxActivation(d) + mx.sym.SoftmaxActivation(
        d, mode="channel"), {"data": (2, 3, 4)})
    add("regression_outputs", mx.sym.LogisticRegressionOutput(d, name="lo")
        + mx.sym.LinearRegressionOutput(d, name="li"), {"data": (2, 3)})
    add("trig", mx.sym.tan(d) + mx.sym.arcsin(d * 0.5) + mx.sym.arccos(d * 0.5)
        + mx.sym.arctan(d) + mx.sym.sinh(d) + mx.sym.cosh(d) + mx.sym.arcsinh(d)
        + mx.sym.arctanh(d * 0.5) + mx.sym.arccosh(mx.sym.abs(d) + 1.5) + mx.sym.cos(d),
        {"data": (2, 3)}, rt=False)
    add("fill_ops", d + mx.sym.zeros((2, 3)) + mx.sym.ones((2, 3)) + mx.sym.full((2, 3), 0.5),
        {"data": (2, 3)}, rt=False)
    add("l2norm_channel", mx.sym.L2Normalization(d, mode="channel"), {"data": (2, 3, 4)},
        rt=False)
    add("l2norm_spatial", mx.sym.L2Normalization(d, mode="spatial"), {"data": (2, 3, 4)},
        rt=False)
    add("norm_l1", mx.sym.norm(d, ord=1, axis=1, keepdims=True), {"data": (2, 3, 4)})
    add("logical", mx.sym.logical_not(x > 0) + mx.sym.broadcast_logical_and(x > 0, y > 0)
        + mx.sym.broadcast_logical_or(x > 0, y > 0) + mx.sym.broadcast_logical_xor(x > 0, y > 0),
        {"x": (2, 3), "y": (2, 3)})
    add("losses_identity", mx.sym.make_loss(d) + mx.sym.stop_gradient(d), {"data": (2, 3)})
    add("more_unary", mx.sym.log2(mx.sym.abs(d) + 1) + mx.sym.log10(mx.sym.abs(d) + 1)
        + mx.sym.cbrt(d) + mx.sym.rcbrt(d + 2) + mx.sym.degrees(d) + mx.sym.radians(d)
        + mx.sym.trunc(d * 3) + mx.sym.fix(d * 3) + mx.sym.rint(d * 3)
        + mx.sym.broadcast_hypot(d, d * 2), {"data": (2, 3)}, rt=False)
    add("reverse", mx.sym.reverse(d, axis=1) + mx.sym.flip(d, axis=(0, 2)), {"data": (2, 3, 4)})
    add("repeat_axis", mx.sym.repeat(d, repeats=2, axis=1), {"data": (2, 3, 4)}, rt=False)
    add("repeat_flat", mx.sym.repeat(d, repeats=3), {"data": (2, 3)}, rt=False)
    add("one_hot", mx.sym.one_hot(d, depth=5, on_value=2.0, off_value=-1.0), {"data": (2, 3)},
        low=0, high=4.99)
    add("softmin", mx.sym.softmin(d, axis=1, temperature=2.0), {"data": (2, 3, 4)}, rt=False)
    add("depth_to_space", mx.sym.depth_to_space(d, block_size=2), {"data": (1, 8, 2, 3)})
    add("space_to_depth", mx.sym.space_to_depth(d, block_size=2), {"data": (1, 2, 4, 6)})
    add("reshape_like", mx.sym.reshape_like(x, y), {"x": (2, 6), "y": (3, 4)}, rt=False)
    add("topk_value", mx.sym.topk(d, k=2, ret_typ="value", axis=1), {"data": (2, 5, 3)})
    add("topk_indices_asc", mx.sym.topk(d, k=3, is_ascend=True), {"data": (2, 5)}, rt=False)
    add("topk_both", mx.sym.topk(d, k=2, ret_typ="both")[1], {"data": (2, 5)})
    add("sort_argsort", mx.sym.sort(d, axis=1) + mx.sym.argsort(d, axis=1, is_ascend=False),
        {"data": (2, 5)}, rt=False)
    add("argmax_channel", mx.sym.argmax_channel(d), {"data": (3, 5)}, rt=False)
    add("pick", mx.sym.pick(x, y, axis=1), {"x": (3, 5), "y": (3,)}, low=0, high=4.99,
        rt=False)
    add("pick_keep", mx.sym.pick(x, y, axis=0, keepdims=True), {"x": (3, 5), "y": (5,)},
        low=0, high=2.99, rt=False)
    add("sequence_mask", mx.sym.SequenceMask(x, y, use_sequence_length=True, value=-1.0),
        {"x": (4, 3, 2), "y": (3,)}, low=1, high=4.99, rt=False)
    add("sequence_mask_axis1", mx.sym.SequenceMask(x, y, use_sequence_length=True, axis=1),
        {"x": (3, 4), "y": (3,)}, low=1, high=4.99, rt=False)
    add("moments", mx.sym.broadcast_add(mx.sym.moments(d, axes=(1, 2))[1],
                                        mx.sym.moments(d, axes=(1,))[0].sum(axis=1)),
        {"data": (2, 3, 4)}, rt=False)
    add("moments_keep", mx.sym.moments(d, axes=(2,), keepdims=True)[0], {"data": (2, 3, 4)},
        rt=False)
    add("smooth_l1", mx.sym.smooth_l1(d * 2, scalar=1.5), {"data": (2, 5)}, rt=False)
    add("cumsum", mx.sym.cumsum(d, axis=1), {"data": (2, 5)})
    add("arange", mx.sym.broadcast_add(d, mx.sym.arange(0, 3)), {"data": (2, 3)}, rt=False)
    add("groupnorm", mx.sym.GroupNorm(d, num_groups=2, name="gn"), {"data": (2, 4, 3, 3)},
        {"gn_gamma": (2,), "gn_beta": (2,)}, rt=False)
    add("hard_sigmoid", mx.sym.hard_sigmoid(d), {"data": (2, 3)})
    add("slice_like", mx.sym.slice_like(x, y), {"x": (4, 5), "y": (2, 3)}, rt=False)
    return c


def _oxnet_forward(sym, feeds):
    args = {k: mx.nd.array(v, dtype=v.dtype) for k, v in feeds.items()}
    arg_names = sym.list_arguments()
    aux_names = sym.list_auxiliary_states()
    exe = sym.bind(mx.cpu(), {k: args[k] for k in arg_names},
                   aux_states={k: args[k] for k in aux_names}, grad_req="null")
    exe.forward(is_train=False)
    return [o.asnumpy() for o in exe.outputs]


@pytest.mark.parametrize("opset", [12, 18])
@pytest.mark.parametrize("sym,shapes,pshapes,dtype,low,high,roundtrip", _cases())
def test_op_export(sym, shapes, pshapes, dtype, low, high, roundtrip, opset, tmp_path):
    rng = np.random.RandomState(9)
    inputs = {k: rng.uniform(low, high, s).astype(dtype) for k, s in shapes.items()}
    params = {k: rng.uniform(0.5, 1.5, s).astype(np.float32) if k.endswith("var")
              else rng.uniform(-1, 1, s).astype(np.float32) for k, s in pshapes.items()}
    feeds = dict(inputs)
    feeds.update(params)
    arg_shapes, _, _ = sym.infer_shape_partial(**{k: v.shape for k, v in feeds.items()})
    for k, s in zip(sym.list_arguments(), arg_shapes):  # label inputs of the output layers
        if k not in feeds:
            feeds[k] = np.zeros(s, np.float32)
    want = _oxnet_forward(sym, feeds)
    names = [k for k in sym.list_arguments() if k in inputs]
    path = mx.onnx.export_model(sym, {k: mx.nd.array(v) for k, v in params.items()},
                                [inputs[k].shape for k in names], [dtype] * len(names),
                                str(tmp_path / "op.onnx"), opset_version=opset)
    onnx.checker.check_model(path)
    got = _ort_run(path, {k: inputs[k] for k in names})
    _check_close(got[0], want[0])
    if roundtrip:
        sym2, arg2, aux2 = mx.contrib.onnx.import_model(path)
        feeds2 = {k: v for k, v in inputs.items()}
        feeds2.update({k: v.asnumpy() for k, v in list(arg2.items()) + list(aux2.items())})
        _check_close(_oxnet_forward(sym2, feeds2)[0], want[0])


def test_dynamic_input_shapes_and_reshape_codes(tmp_path):
    d = mx.sym.var("data")
    sym = mx.sym.Reshape(mx.sym.Reshape(d, shape=(0, -3, 0)), shape=(-4, -1, 1, -2))
    sym = mx.sym.FullyConnected(mx.sym.Reshape(sym, shape=(0, -1)), num_hidden=3, name="fc")
    params = {"fc_weight": mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (3, 20))),
              "fc_bias": mx.nd.zeros((3,))}
    path = mx.onnx.export_model(sym, params, [(1, 2, 5, 2)], onnx_file_path=str(tmp_path / "d.onnx"),
                                dynamic=True, dynamic_input_shapes=[(None, 2, 5, 2)])
    model = onnx.load(path)
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param and [d.dim_value for d in dims[1:]] == [2, 5, 2]
    for n in (1, 4):
        x = np.random.RandomState(n).uniform(-1, 1, (n, 2, 5, 2)).astype(np.float32)
        want = _oxnet_forward(sym, dict(data=x, **{k: v.asnumpy() for k, v in params.items()}))
        _check_close(_ort_run(path, {"data": x})[0], want[0])


# ---- the fused RNN operator (once oxnet has it) -------------------------------------------

def _has_rnn_op():
    try:
        mx._core.get_op("RNN")
        return True
    except Exception:
        return False


@pytest.mark.skipif(not _has_rnn_op(), reason="oxnet has no fused RNN operator yet")
@pytest.mark.parametrize("mode,bidir,layers", [("lstm", False, 2), ("gru", True, 1),
                                               ("rnn_tanh", False, 1), ("rnn_relu", True, 2)])
def test_fused_rnn_export(mode, bidir, layers, tmp_path):
    T, N, I, H = 5, 2, 4, 3
    D = 2 if bidir else 1
    G = {"lstm": 4, "gru": 3}.get(mode, 1)
    size = 0
    for layer in range(layers):
        in_l = I if layer == 0 else D * H
        size += D * (G * H * in_l + G * H * H + 2 * G * H)
    rng = np.random.RandomState(10)
    data, p, h0, c0 = (mx.sym.var(n) for n in ("data", "rnn_params", "h0", "c0"))
    ins = [data, p, h0] + ([c0] if mode == "lstm" else [])
    sym = mx.sym.RNN(*ins, state_size=H, num_layers=layers, bidirectional=bidir, mode=mode,
                     state_outputs=True, name="rnn")
    feeds = {"data": rng.uniform(-1, 1, (T, N, I)).astype(np.float32),
             "h0": rng.uniform(-1, 1, (layers * D, N, H)).astype(np.float32),
             "c0": rng.uniform(-1, 1, (layers * D, N, H)).astype(np.float32)}
    params = {"rnn_params": mx.nd.array(rng.uniform(-0.5, 0.5, (size,)))}
    want = _oxnet_forward(sym, dict(feeds, rnn_params=params["rnn_params"].asnumpy()))
    names = [n for n in sym.list_arguments() if n in feeds]
    path = mx.onnx.export_model(sym, params, [feeds[n].shape for n in names],
                                onnx_file_path=str(tmp_path / "rnn.onnx"))
    onnx.checker.check_model(path)
    got = _ort_run(path, {n: feeds[n] for n in names})
    for g, w in zip(got, want):
        _check_close(g, w)


# ---- import: MXNet 1.9.1's exports, hand-built graphs, bad files -------------------------

@pytest.mark.parametrize("name", ["mxnet_seed_cnn", "mxnet_small_resnet",
                                  "mxnet_mobilenetv2_0.25", "mxnet_kitchen_sink"])
def test_import_models_exported_by_mxnet(name):
    """Files written by MXNet 1.9.1's mx.onnx.export_model (make_mxnet_fixtures.py), with
    MXNet's outputs for fixed inputs."""
    path = os.path.join(DATA, name + ".onnx")
    ref = np.load(os.path.join(DATA, name + ".npz"))
    want = ref["y"]
    md = mx.contrib.onnx.get_model_metadata(path)
    names = [n for n, _ in md["input_tensor_data"]]
    feeds = {n: ref["x"] if n == "data" and "x" in ref.files else ref[n] for n in names}
    for n, shape in md["input_tensor_data"]:
        assert feeds[n].shape == shape
    blk = mx.contrib.onnx.import_to_gluon(path, mx.cpu())
    _check_close(blk(*[mx.nd.array(feeds[n]) for n in names]).asnumpy(), want)
    sym, arg_params, aux_params = mx.contrib.onnx.import_model(path)
    mod = mx.mod.Module(sym, data_names=names, label_names=None)
    mod.bind(data_shapes=[(n, feeds[n].shape) for n in names], for_training=False)
    mod.set_params(arg_params, aux_params)
    mod.forward(mx.io.DataBatch([mx.nd.array(feeds[n]) for n in names]), is_train=False)
    _check_close(mod.get_outputs()[0].asnumpy(), want)
    # and the file's own meaning, by onnxruntime
    _check_close(_ort_run(path, feeds)[0], want)


def _hand_model(opset=13):
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.RandomState(11)
    W = rng.uniform(-1, 1, (6, 4)).astype(np.float32)
    E = rng.uniform(-1, 1, (10, 6)).astype(np.float32)
    inits = [numpy_helper.from_array(W, "W"), numpy_helper.from_array(E, "E"),
             numpy_helper.from_array(np.array([0, 2, 5], np.int64), "idx"),
             numpy_helper.from_array(np.array([1, 0], np.int64), "starts"),
             numpy_helper.from_array(np.array([4, 2], np.int64), "ends"),
             numpy_helper.from_array(np.array([1, 2], np.int64), "axes"),
             numpy_helper.from_array(np.array([-1, 3], np.int64), "shape"),
             numpy_helper.from_array(np.array([1], np.int64), "ax1"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["mm"]),                    # (2,3,4)
        helper.make_node("Mul", ["mm", "half"], ["mh"]),
        helper.make_node("Relu", ["mh"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1]),       # (2,4,3)
        helper.make_node("Slice", ["t", "starts", "ends", "axes"], ["s"]),  # (2,3,2)
        helper.make_node("Reshape", ["s", "shape"], ["rs"]),                # (4,3)
        helper.make_node("Gather", ["E", "idx"], ["g"]),                    # (3,6)
        helper.make_node("ReduceMean", ["g"], ["gm"], axes=[1], keepdims=0) if opset < 18
        else helper.make_node("ReduceMean", ["g", "ax1"], ["gm"], keepdims=0),
        helper.make_node("Softmax", ["r"], ["sm"], axis=-1),
        helper.make_node("ReduceSum", ["sm", "ax1"], ["ss"], keepdims=1) if opset >= 13
        else helper.make_node("ReduceSum", ["sm"], ["ss"], axes=[1], keepdims=1),
        helper.make_node("Concat", ["sm", "ss"], ["cc"], axis=1),
        helper.make_node("Sigmoid", ["cc"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes, "hand", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 6])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 4, 4]),
         helper.make_tensor_value_info("rs", TensorProto.FLOAT, [4, 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    return model


@pytest.mark.parametrize("opset", [11, 13, 18])
def test_import_hand_built_graph(opset, tmp_path):
    model = _hand_model(opset)
    onnx.checker.check_model(model)
    path = str(tmp_path / "hand.onnx")
    onnx.save(model, path)
    x = np.random.RandomState(12).uniform(-1, 1, (2, 3, 6)).astype(np.float32)
    want = _ort_run(path, {"x": x})
    blk = mx.contrib.onnx.import_to_gluon(path, mx.cpu())
    got = blk(mx.nd.array(x))
    _check_close(got[0].asnumpy(), want[0])
    _check_close(got[1].asnumpy(), want[1])


def _tiny_model(op_type="Relu", opset=13, domain=""):
    from onnx import TensorProto, helper
    node = helper.make_node(op_type, ["x"], ["y"], name="my_node", domain=domain)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                          [1, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])])
    imports = [helper.make_opsetid("", opset)]
    if domain:
        imports.append(helper.make_opsetid(domain, 1))
    model = helper.make_model(graph, opset_imports=imports)
    model.ir_version = 7
    return model


def test_import_errors_name_node_and_opset(tmp_path):
    p = str(tmp_path / "u.onnx")
    onnx.save(_tiny_model("NonZero"), p)
    with pytest.raises(MXNetError, match="my_node.*NonZero"):
        mx.contrib.onnx.import_model(p)
    onnx.save(_tiny_model("Relu", opset=99), p)
    with pytest.raises(MXNetError, match="opset 99"):
        mx.contrib.onnx.import_model(p)
    onnx.save(_tiny_model("Foo", domain="com.example"), p)
    with pytest.raises(MXNetError, match="my_node.*Foo"):
        mx.contrib.onnx.import_model(p)
    with pytest.raises(MXNetError):
        mx.contrib.onnx.import_model(str(tmp_path / "missing.onnx"))
    data = open(os.path.join(DATA, "mxnet_small_resnet.onnx"), "rb").read()
    with open(p, "wb") as f:
        f.write(data[:len(data) // 3])
    with pytest.raises(MXNetError, match="not a valid ONNX model|no graph|truncated"):
        mx.contrib.onnx.import_model(p)
    with open(p, "wb") as f:
        f.write(b"")
    with pytest.raises(MXNetError):
        mx.contrib.onnx.import_to_gluon(p, mx.cpu())


_FUZZ = r"""
import sys, numpy as np, oxnet as mx
from oxnet.base import MXNetError
data = open(sys.argv[1], 'rb').read()
rng = np.random.RandomState(0)
cases = [data[:n] for n in rng.randint(0, len(data), 40)]
for _ in range(60):
    b = bytearray(data)
    for p in rng.randint(0, len(b), rng.randint(1, 8)):
        b[p] = rng.randint(0, 256)
    cases.append(bytes(b))
ok = err = 0
for c in cases:
    try:
        sym, arg, aux = mx.contrib.onnx.import_model(c)
        ok += 1
    except MXNetError:
        err += 1
print('ok', ok, 'err', err)
"""


@pytest.mark.parametrize("name", ["mxnet_small_resnet", "mxnet_kitchen_sink"])
def test_fuzz_truncated_and_flipped_files_never_crash(name):
    """Truncations and byte flips of real model files: an MXNetError or a model, never
    a crash of the process (run in a child process to see one)."""
    path = os.path.join(DATA, name + ".onnx")
    r = subprocess.run([sys.executable, "-c", _FUZZ, path], capture_output=True, text=True,
                       timeout=600, env=dict(os.environ))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "err" in r.stdout


def test_export_errors(tmp_path):
    d = mx.sym.var("data")
    sym = mx.sym.erfinv(mx.sym.relu(d), name="my_erfinv")
    p = str(tmp_path / "e.onnx")
    with pytest.raises(MXNetError, match="erfinv.*my_erfinv|my_erfinv.*erfinv"):
        mx.onnx.export_model(sym, {}, [(2, 5)], onnx_file_path=p)
    fc = mx.sym.FullyConnected(d, num_hidden=3, name="fc")
    with pytest.raises(MXNetError, match="input shapes"):
        mx.onnx.export_model(fc, {"fc_weight": mx.nd.zeros((3, 4)), "fc_bias": mx.nd.zeros(3)},
                             [(2, 4), (3, 3)], onnx_file_path=p)
    with pytest.raises(MXNetError, match="opset"):
        mx.onnx.export_model(fc, {"fc_weight": mx.nd.zeros((3, 4)), "fc_bias": mx.nd.zeros(3)},
                             [(2, 4)], onnx_file_path=p, opset_version=7)
    with pytest.raises(MXNetError, match="fc_weight|fc_bias"):
        mx.onnx.export_model(fc, {"fc_bias": mx.nd.zeros(3)}, [(2, 4)], onnx_file_path=p)
    with pytest.raises(MXNetError):
        mx.onnx.export_model(str(tmp_path / "nope-symbol.json"), {}, [(2, 4)],
                             onnx_file_path=p)
    with pytest.raises(MXNetError, match="in_shapes"):
        mx.onnx.export_model(fc, {}, None, onnx_file_path=p)


def test_import_from_pytorch_if_available(tmp_path):
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4),
                                torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                                torch.nn.Flatten(), torch.nn.Linear(4, 5)).eval()
    x = torch.randn(1, 3, 8, 8)
    path = str(tmp_path / "pt.onnx")
    torch.onnx.export(model, x, path, input_names=["x"], output_names=["y"], opset_version=13)
    blk = mx.contrib.onnx.import_to_gluon(path, mx.cpu())
    _check_close(blk(mx.nd.array(x.numpy())).asnumpy(), model(x).detach().numpy())


def _np_rnn(mode, x, params, h0, c0, H, L, D):
    """NumPy reference of MXNet's fused RNN op (cuDNN's layout: per layer and direction
    W_i2h then W_h2h, then all the biases; LSTM gates i, f, g, o; GRU gates r, z, n with
    the reset applied after the recurrent matmul)."""
    G = {"lstm": 4, "gru": 3}.get(mode, 1)
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    T, N, I = x.shape
    off = 0
    W = {}
    for layer in range(L):
        in_l = I if layer == 0 else D * H
        for d in range(D):
            wi = params[off:off + G * H * in_l].reshape(G * H, in_l)
            off += G * H * in_l
            wh = params[off:off + G * H * H].reshape(G * H, H)
            off += G * H * H
            W[layer, d] = [wi, wh]
    for layer in range(L):
        for d in range(D):
            W[layer, d] += [params[off:off + G * H], params[off + G * H:off + 2 * G * H]]
            off += 2 * G * H
    inp = x
    hn, cn = [], []
    for layer in range(L):
        outs = []
        for d in range(D):
            wi, wh, bi, bh = W[layer, d]
            h = h0[layer * D + d]
            c = c0[layer * D + d] if c0 is not None else None
            ys = [None] * T
            for t in (range(T) if d == 0 else reversed(range(T))):
                gi = inp[t] @ wi.T + bi
                gh = h @ wh.T + bh
                if mode == "lstm":
                    g = gi + gh
                    i, f, cc, o = (g[:, k * H:(k + 1) * H] for k in range(4))
                    c = sig(f) * c + sig(i) * np.tanh(cc)
                    h = sig(o) * np.tanh(c)
                elif mode == "gru":
                    r = sig(gi[:, :H] + gh[:, :H])
                    z = sig(gi[:, H:2 * H] + gh[:, H:2 * H])
                    n = np.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
                    h = (1 - z) * n + z * h
                else:
                    h = np.tanh(gi + gh) if mode == "rnn_tanh" else np.maximum(gi + gh, 0)
                ys[t] = h
            outs.append(np.stack(ys))
            hn.append(h)
            cn.append(c)
        inp = np.concatenate(outs, axis=-1)
    return inp, np.stack(hn), (np.stack(cn) if c0 is not None else None)


@pytest.mark.parametrize("mode,bidir,layers,zero_states", [
    ("lstm", False, 2, False), ("lstm", True, 1, False), ("lstm", False, 2, True),
    ("gru", True, 2, False), ("gru", False, 1, True), ("rnn_tanh", False, 1, False),
    ("rnn_relu", True, 1, False)])
@pytest.mark.parametrize("opset", [12, 18])
def test_rnn_translation_against_numpy(mode, bidir, layers, zero_states, opset, tmp_path):
    """The RNN -> ONNX LSTM/GRU/RNN translation (used once oxnet has the fused RNN op),
    run by onnxruntime against a NumPy reference of MXNet's RNN."""
    from onnx import helper
    from oxnet.onnx import _export_ops
    from oxnet.onnx._export import ExportContext
    T, N, I, H = 4, 2, 3, 5
    D = 2 if bidir else 1
    G = {"lstm": 4, "gru": 3}.get(mode, 1)
    size = sum(D * (G * H * (I if k == 0 else D * H) + G * H * H + 2 * G * H)
               for k in range(layers))
    rng = np.random.RandomState(13)
    x = rng.uniform(-1, 1, (T, N, I)).astype(np.float32)
    params = rng.uniform(-0.5, 0.5, (size,)).astype(np.float32)
    h0 = rng.uniform(-1, 1, (layers * D, N, H)).astype(np.float32)
    c0 = rng.uniform(-1, 1, (layers * D, N, H)).astype(np.float32) if mode == "lstm" else None
    ctx = ExportContext(opset, False, {"p": params})
    if zero_states:  # begin states from zeros ops: left out of the ONNX node
        h0[:] = 0
        ctx.zeros.add("h0")
        if c0 is not None:
            c0[:] = 0
            ctx.zeros.add("c0")
    ctx.initializers["p"] = params
    ins = ["x", "p", "h0"] + (["c0"] if mode == "lstm" else [])
    for nm, v in (("x", x), ("h0", h0), ("c0", c0)):
        if v is not None:
            ctx.shapes[nm] = v.shape
    outs = ["y", "hn"] + (["cn"] if mode == "lstm" else [])
    _export_ops.get("RNN")(ctx, "rnn", ins, outs,
                           {"mode": mode, "state_size": str(H), "num_layers": str(layers),
                            "bidirectional": str(bidir), "state_outputs": "True"})
    from onnx import numpy_helper
    f32 = onnx.TensorProto.FLOAT
    g = helper.make_graph(
        ctx.nodes, "rnn",
        [helper.make_tensor_value_info(n, f32, list(ctx.shapes[n])) for n in ins if n != "p"],
        [helper.make_tensor_value_info(n, f32, None) for n in outs],
        [numpy_helper.from_array(v, k) for k, v in ctx.initializers.items() if k != "p"])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    path = str(tmp_path / "rnn.onnx")
    onnx.save(model, path)
    feeds = {"x": x, "h0": h0}
    if c0 is not None:
        feeds["c0"] = c0
    got = _ort_run(path, feeds)
    want = _np_rnn(mode, x.astype(np.float64), params.astype(np.float64), h0, c0, H, layers, D)
    for g_, w_ in zip(got, want):
        _check_close(g_, w_)


def test_verbose_and_missing_onnx_package(tmp_path, monkeypatch, capsys):
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc")
    params = {"fc_weight": mx.nd.ones((3, 4)), "fc_bias": mx.nd.zeros(3)}
    p = mx.onnx.export_model(fc, params, [(2, 4)], onnx_file_path=str(tmp_path / "v.onnx"),
                             verbose=True)
    assert "FullyConnected" in capsys.readouterr().out
    np.testing.assert_allclose(_ort_run(p, {"data": np.ones((2, 4), np.float32)})[0],
                               np.full((2, 3), 4.0), rtol=1e-6)
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(MXNetError, match="pip install"):
        mx.onnx.export_model(fc, params, [(2, 4)], onnx_file_path=str(tmp_path / "w.onnx"))
    with pytest.raises(MXNetError, match="pip install"):
        mx.contrib.onnx.import_model(p)


def _node_cases():
    from onnx import helper
    r = np.random.RandomState(14)
    f = lambda *s: r.uniform(-1, 1, s).astype(np.float32)  # noqa: E731
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    c = []

    def add(name, op, ins, inits, opset=13, n_out=1, **attrs):
        """ins: {name: array} graph inputs; inits: {name: array} initializers."""
        node = helper.make_node(op, list(ins) + list(inits), ["y%d" % k for k in range(n_out)],
                                name="n_" + name, **attrs)
        c.append(pytest.param(node, ins, inits, opset, id=name))

    add("gemm_general", "Gemm", {"a": f(3, 4)}, {"b": f(4, 5), "c": f(5)}, alpha=0.5, beta=2.0)
    add("gemm_transA", "Gemm", {"a": f(4, 3)}, {"b": f(5, 4)}, transA=1, transB=1)
    add("gemm_fc_noT", "Gemm", {"a": f(3, 4)}, {"b": f(4, 5), "c": f(5)})
    add("matmul_3d", "MatMul", {"a": f(2, 3, 4), "b": f(2, 4, 5)}, {})
    add("matmul_4d", "MatMul", {"a": f(2, 2, 3, 4), "b": f(2, 2, 4, 5)}, {})
    add("matmul_const", "MatMul", {"a": f(2, 3, 4)}, {"b": f(4, 5)})
    add("sum3", "Sum", {"a": f(2, 3), "b": f(2, 3), "c": f(2, 3)}, {})
    add("mean2", "Mean", {"a": f(2, 3), "b": f(2, 3)}, {})
    add("max3", "Max", {"a": f(2, 3), "b": f(2, 3)}, {"c": f(2, 3)})
    add("add_bcast_const", "Add", {"a": f(2, 3, 4, 4)}, {"b": f(3, 1, 1)})
    add("sub_scalar_left", "Sub", {"b": f(2, 3)}, {"a": np.array(2.0, np.float32)})
    add("div", "Div", {"a": f(2, 3)}, {"b": np.full((2, 3), 2.0, np.float32)})
    add("pow_scalar", "Pow", {"a": np.abs(f(2, 3)) + 0.1}, {"b": np.array(1.5, np.float32)})
    add("expand", "Expand", {"a": f(3, 1)}, {"s": i64(2, 3, 4)})
    add("tile", "Tile", {"a": f(2, 3)}, {"r": i64(2, 2)})
    add("softmax_coerce", "Softmax", {"a": f(2, 3, 4)}, {}, opset=11, axis=1)
    add("logsoftmax_last", "LogSoftmax", {"a": f(2, 3, 4)}, {}, opset=11, axis=2)
    add("flatten_axis2", "Flatten", {"a": f(2, 3, 4, 5)}, {}, axis=2)
    add("flatten_axis0", "Flatten", {"a": f(2, 3, 4)}, {}, axis=0)
    add("split_unequal", "Split", {"a": f(2, 6)}, {"s": i64(2, 4)}, n_out=2, axis=1)
    add("split_attr", "Split", {"a": f(2, 6)}, {}, opset=11, n_out=3, axis=-1)
    add("squeeze_attr", "Squeeze", {"a": f(2, 1, 3)}, {}, opset=11, axes=[1])
    add("unsqueeze_neg", "Unsqueeze", {"a": f(2, 3)}, {"ax": i64(-1, 0)})
    add("slice_opset9", "Slice", {"a": f(4, 5)}, {}, opset=9, starts=[1, 0], ends=[3, 4],
        axes=[0, 1])
    add("slice_steps", "Slice", {"a": f(4, 6)},
        {"s": i64(0, 5), "e": i64(4, 0), "ax": i64(0, 1), "st": i64(2, -2)})
    add("clip_attr", "Clip", {"a": f(2, 3)}, {}, opset=10, min=-0.3, max=0.4)
    add("clip_min_only", "Clip", {"a": f(2, 3)}, {"lo": np.array(-0.2, np.float32)}, opset=13)
    add("pad_attr", "Pad", {"a": f(1, 2, 3, 3)}, {}, opset=10, pads=[0, 0, 1, 2, 0, 0, 2, 1],
        value=0.5)
    add("pad_reflect", "Pad", {"a": f(1, 2, 4, 4)}, {"p": i64(0, 0, 1, 1, 0, 0, 1, 1)},
        mode="reflect")
    add("prelu_scalar", "PRelu", {"a": f(2, 3)}, {"s": np.array([0.2], np.float32)})
    add("prelu_channel", "PRelu", {"a": f(2, 3, 4, 4)}, {"s": f(3, 1, 1)})
    add("elu", "Elu", {"a": f(2, 3)}, {}, alpha=0.7)
    add("selu", "Selu", {"a": f(2, 3)}, {})
    add("softplus", "Softplus", {"a": f(2, 3)}, {})
    add("gelu", "Gelu", {"a": f(2, 3)}, {}, opset=20)
    add("leaky", "LeakyRelu", {"a": f(2, 3)}, {}, alpha=0.3)
    add("where_cmp", "Where", {"c": f(2, 3) > 0, "a": f(2, 3), "b": f(2, 3)}, {})
    add("argmax", "ArgMax", {"a": f(2, 5)}, {}, axis=1, keepdims=0)
    add("reduce_max_attr", "ReduceMax", {"a": f(2, 3, 4)}, {}, axes=[1, 2], keepdims=0)
    add("reduce_l2", "ReduceL2", {"a": f(2, 3, 4)}, {}, axes=[2], keepdims=1)
    add("reduce_sum_noaxes_keep", "ReduceSum", {"a": f(2, 3)}, {}, keepdims=1)
    add("reduce_mean_18", "ReduceMean", {"a": f(2, 3, 4)}, {"ax": i64(-1)}, opset=18,
        keepdims=0)
    add("convtranspose", "ConvTranspose", {"a": f(1, 2, 4, 4)}, {"w": f(2, 3, 3, 3), "b": f(3)},
        strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])
    add("conv_asym_pads", "Conv", {"a": f(1, 2, 5, 5)}, {"w": f(3, 2, 3, 3)},
        pads=[0, 1, 1, 0])
    add("avgpool_exclude_pad", "AveragePool", {"a": f(1, 2, 5, 5)}, {}, kernel_shape=[3, 3],
        pads=[1, 1, 1, 1])
    add("maxpool_asym", "MaxPool", {"a": f(1, 2, 5, 5)}, {}, kernel_shape=[2, 2],
        pads=[0, 0, 1, 1], strides=[2, 2])
    add("globalmax", "GlobalMaxPool", {"a": f(1, 2, 3, 3)}, {})
    add("instancenorm", "InstanceNormalization", {"a": f(2, 3, 4)}, {"s": f(3), "b": f(3)})
    add("layernorm", "LayerNormalization", {"a": f(2, 3, 4)}, {"s": f(4), "b": f(4)},
        opset=17)
    add("lrn", "LRN", {"a": f(1, 5, 3, 3)}, {}, size=3, alpha=1e-3, beta=0.7, bias=1.5)
    add("resize_nearest", "Resize", {"a": f(1, 2, 3, 3)},
        {"roi": np.zeros(0, np.float32), "sc": np.array([1, 1, 2, 2], np.float32)},
        mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    add("cast_int", "Cast", {"a": f(2, 3) * 5}, {}, to=int(onnx.TensorProto.INT32))
    add("equal_and", "And", {"a": f(2, 3) > 0, "b": f(2, 3) > 0}, {})
    add("not", "Not", {"a": f(2, 3) > 0}, {})
    add("transpose_default", "Transpose", {"a": f(2, 3, 4)}, {})
    add("round", "Round", {"a": np.array([[0.5, 1.5, -2.5], [2.4, -0.6, 3.5]], np.float32)}, {})
    add("topk_smallest", "TopK", {"a": f(2, 6)}, {"k": i64(3)}, n_out=2, axis=1, largest=0)
    add("onehot", "OneHot", {"a": np.array([[0, 3], [2, 1]], np.int64)},
        {"d": i64(4), "v": np.array([0.0, 5.0], np.float32)})
    add("gather_axis1", "Gather", {"a": f(3, 5)}, {"i": i64(4, 0, 2)}, axis=1)
    add("gather_scalar", "Gather", {"a": f(3, 5)}, {"i": np.array(1, np.int64)}, axis=0)
    add("constant_of_shape", "ConstantOfShape", {}, {"s": i64(2, 3)},
        value=onnx.helper.make_tensor("v", onnx.TensorProto.FLOAT, [1], [1.5]))
    return c


@pytest.mark.parametrize("node,ins,inits,opset", _node_cases())
def test_import_onnx_node(node, ins, inits, opset, tmp_path):
    """One ONNX node, hand-built: oxnet's import against onnxruntime."""
    from onnx import helper, numpy_helper
    np_to = helper.np_dtype_to_tensor_dtype
    g_ins = [helper.make_tensor_value_info(k, np_to(v.dtype), list(v.shape)) for k, v in ins.items()]
    g_inits = [numpy_helper.from_array(v, k) for k, v in inits.items()]
    if not ins:  # a graph needs an input: add an unused one
        g_ins = [helper.make_tensor_value_info("unused", onnx.TensorProto.FLOAT, [1])]
    model = helper.make_model(helper.make_graph([node], "t", g_ins, [], g_inits),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    model = onnx.shape_inference.infer_shapes(model)   # the outputs' types and shapes
    for o in node.output:
        model.graph.output.append([v for v in model.graph.value_info if v.name == o][0])
    path = str(tmp_path / "n.onnx")
    onnx.save(model, path)
    feeds = dict(ins) if ins else {"unused": np.zeros(1, np.float32)}
    want = _ort_run(path, feeds)
    sym, arg_params, aux_params = mx.contrib.onnx.import_model(path)
    args = {k: mx.nd.array(v.astype(np.float32) if v.dtype == np.bool_ else v,
                           dtype=np.float32 if v.dtype == np.bool_ else v.dtype)
            for k, v in feeds.items() if k in sym.list_arguments()}
    args.update(arg_params)
    exe = sym.bind(mx.cpu(), args, aux_states=aux_params, grad_req="null")
    exe.forward(is_train=False)
    for got, w in zip(exe.outputs, want):
        got = got.asnumpy()
        if w.dtype == np.bool_:
            w = w.astype(np.float32)
        _check_close(got.astype(np.float64), w.astype(np.float64))


def test_group_outputs_and_shared_head(tmp_path):
    d = mx.sym.var("data")
    a = mx.sym.relu(d, name="a")
    out = mx.sym.Group([a, mx.sym.sigmoid(d, name="b"), a])
    path = mx.onnx.export_model(out, {}, [(2, 3)], onnx_file_path=str(tmp_path / "g.onnx"))
    x = np.random.RandomState(15).uniform(-1, 1, (2, 3)).astype(np.float32)
    got = _ort_run(path, {"data": x})
    assert len(got) == 3
    _check_close(got[0], np.maximum(x, 0))
    _check_close(got[1], 1 / (1 + np.exp(-x)))
    _check_close(got[2], np.maximum(x, 0))
    sym, _, _ = mx.contrib.onnx.import_model(path)
    res = _oxnet_forward(sym, {"data": x})
    assert len(res) == 3
    _check_close(res[1], got[1])


def test_constant_parameter_arithmetic_is_folded(tmp_path):
    """Params flattened and concatenated in the graph (as Gluon's fused RNN layers pass
    their weights) become one initializer."""
    w1, w2, d = mx.sym.var("w1"), mx.sym.var("w2"), mx.sym.var("data")
    flat = mx.sym.concat(mx.sym.reshape(w1, shape=(-1,)), mx.sym.reshape(w2, shape=(-1,)),
                         dim=0)
    out = mx.sym.broadcast_add(d, flat)
    rng = np.random.RandomState(16)
    params = {"w1": mx.nd.array(rng.uniform(-1, 1, (2, 3))),
              "w2": mx.nd.array(rng.uniform(-1, 1, (4,)))}
    path = mx.onnx.export_model(out, params, [(2, 10)], onnx_file_path=str(tmp_path / "f.onnx"))
    model = onnx.load(path)
    assert [n.op_type for n in model.graph.node] == ["Add"]
    x = rng.uniform(-1, 1, (2, 10)).astype(np.float32)
    want = x + np.concatenate([params["w1"].asnumpy().ravel(), params["w2"].asnumpy()])
    _check_close(_ort_run(path, {"data": x})[0], want)
