"""mx.gluon.model_zoo.vision against MXNet 1.9.1: parameter names, shapes and
structural names from a listing MXNet wrote (tests/fixtures/model_zoo/), outputs for
the same weights, loading a save_parameters file MXNet wrote, the pretrained-weights
store, and gluon.contrib.nn's concurrent containers."""

import gzip
import hashlib
import json
import os
import zipfile

import numpy as np
import pytest

import oxnet as mx
from oxnet.gluon.contrib.nn import Concurrent, HybridConcurrent, Identity
from oxnet.gluon.model_zoo import model_store, vision

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "fixtures", "model_zoo")

with gzip.open(os.path.join(FIX, "listing.json.gz"), "rt") as _f:
    LISTING = json.load(_f)


def seeded_value(rng, name, shape):
    """The same draws as make_zoo_fixtures.seeded_value."""
    if name.endswith("running_var") or name.endswith("gamma"):
        return rng.uniform(0.5, 1.5, shape).astype("float32")
    if name.endswith(("beta", "bias", "running_mean")):
        return (rng.standard_normal(shape) * 0.1).astype("float32")
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype("float32")


def _shape(p):
    return [d if d > 0 else 0 for d in (p.shape or ())]


def test_get_model_knows_every_mxnet_model():
    assert sorted(vision._models) == sorted(LISTING["models"])


@pytest.mark.parametrize("name", sorted(LISTING["models"]))
def test_parameter_names_and_shapes_match_mxnet(name):
    want = LISTING["models"][name]
    net = vision.get_model(name)
    prefix = net.prefix
    # same hint, the counter may differ (e.g. 'resnetv10_' vs 'resnetv12_')
    assert prefix.rstrip("_").rstrip("0123456789") == want["prefix"].rstrip("_").rstrip(
        "0123456789")
    got = [[k[len(prefix):], _shape(p), p.grad_req] for k, p in net.collect_params().items()]
    assert got == want["params"]
    assert sorted(net._collect_params_with_prefix()) == want["structural"]


@pytest.mark.parametrize("name", sorted(LISTING["repr"]))
def test_forward_shapes_and_repr_match_mxnet(name):
    want = LISTING["models"][name]
    net = vision.get_model(name)
    net.initialize()
    s = want["forward_size"]
    net(mx.nd.zeros((1, 3, s, s))).wait_to_read()
    assert [list(p.shape) for p in net.collect_params().values()] == want["shapes_after"]
    assert repr(net) == LISTING["repr"][name]


SEEDED = sorted(f[:-len("_io.npz")] for f in os.listdir(FIX)
                if f.endswith("_io.npz") and not f.startswith("mobilenet0.25_c10"))


def _seeded_net(name):
    io = np.load(os.path.join(FIX, "%s_io.npz" % name))
    net = vision.get_model(name, **json.loads(str(io["kwargs"])))
    net.initialize()
    x = np.random.RandomState(int(io["x_seed"])).standard_normal(
        tuple(io["x_shape"])).astype("float32")
    x = mx.nd.array(x)
    net(x)  # deferred initialization
    rng = np.random.RandomState(int(io["seed"]))
    plen = len(net.prefix)
    for k, p in net.collect_params().items():
        p.set_data(mx.nd.array(seeded_value(rng, k[plen:], p.shape)))
    return net, x, io["y"]


@pytest.mark.parametrize("name", SEEDED)
def test_outputs_match_mxnet_for_same_weights(name):
    net, x, want = _seeded_net(name)
    scale = np.abs(want).max()
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-4, atol=1e-5 * scale)
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-4, atol=1e-5 * scale)


def test_load_parameters_written_by_mxnet():
    io = np.load(os.path.join(FIX, "mobilenet0.25_c10_io.npz"))
    net = vision.mobilenet0_25(classes=10)
    net.load_parameters(os.path.join(FIX, "mobilenet0.25_c10.params"))
    np.testing.assert_allclose(net(mx.nd.array(io["x"])).asnumpy(), io["y"], rtol=1e-4,
                               atol=1e-5 * np.abs(io["y"]).max())
    # a net of another width does not take the file; nothing is loaded
    other = vision.mobilenet0_5(classes=10)
    other.initialize()
    other(mx.nd.array(io["x"]))
    before = other.features[0].weight.data().asnumpy()
    with pytest.raises(mx.base.MXNetError, match="shape"):
        other.load_parameters(os.path.join(FIX, "mobilenet0.25_c10.params"))
    np.testing.assert_array_equal(other.features[0].weight.data().asnumpy(), before)


def test_export_and_import_round_trip(tmp_path):
    net, x, want = _seeded_net("resnet18_v2")
    net.hybridize()
    net(x)
    net.export(str(tmp_path / "r18"))
    block = mx.gluon.SymbolBlock.imports(str(tmp_path / "r18-symbol.json"), ["data"],
                                         str(tmp_path / "r18-0000.params"))
    np.testing.assert_allclose(block(x).asnumpy(), want, rtol=1e-4,
                               atol=1e-5 * np.abs(want).max())


def test_get_model_errors():
    with pytest.raises(ValueError, match="(?s)Model resnet19_v1 is not supported.*resnet18_v1"):
        vision.get_model("ResNet19_v1")
    with pytest.raises(ValueError, match="Invalid number of layers: 20"):
        vision.get_resnet(1, 20)
    with pytest.raises(ValueError, match="Invalid resnet version: 3"):
        vision.get_resnet(3, 18)
    with pytest.raises(ValueError, match="SqueezeNet version 2.0"):
        vision.SqueezeNet("2.0")
    with pytest.raises(ValueError, match="Pretrained model for mobilenet0.30 is not available"):
        vision.get_mobilenet(0.3, pretrained=True)


def test_get_model_is_case_insensitive_and_passes_kwargs():
    net = vision.get_model("MobileNetV2_0.25", classes=7, prefix="mine_")
    assert isinstance(net, vision.MobileNetV2)
    assert net.prefix == "mine_"
    net.initialize()
    assert net(mx.nd.zeros((1, 3, 32, 32))).shape == (1, 7)
    assert "mine_output_pred_weight" in net.collect_params()


def test_pretrained_absent_offline_names_file_and_url(tmp_path, monkeypatch):
    monkeypatch.setenv("MXNET_GLUON_REPO", "file://%s/" % (tmp_path / "no_repo"))
    root = tmp_path / "models"
    with pytest.raises(mx.base.MXNetError) as e:
        vision.resnet18_v1(pretrained=True, root=str(root))
    msg = str(e.value)
    assert os.path.join(str(root), "resnet18_v1-a0666292.params") in msg
    assert "gluon/models/resnet18_v1-a0666292.zip" in msg
    assert os.listdir(root) == []  # nothing half-written left behind


def _publish(tmp_path, monkeypatch, name, net):
    """Saves ``net``'s weights as the published file of ``name`` (its SHA-1 put in
    the store's table)."""
    src = tmp_path / "src.params"
    net.save_parameters(str(src))
    sha1 = hashlib.sha1(src.read_bytes()).hexdigest()
    monkeypatch.setitem(model_store._model_sha1, name, sha1)
    return src, "%s-%s" % (name, sha1[:8])


def test_pretrained_found_in_root(tmp_path, monkeypatch):
    src_net = vision.mobilenet0_25()
    src_net.initialize(mx.init.Normal(0.1))
    src_net(mx.nd.zeros((1, 3, 32, 32)))
    src, file_name = _publish(tmp_path, monkeypatch, "mobilenet0.25", src_net)
    root = tmp_path / "models"
    root.mkdir()
    (root / (file_name + ".params")).write_bytes(src.read_bytes())
    monkeypatch.setenv("MXNET_GLUON_REPO", "file://%s/" % (tmp_path / "no_repo"))
    net = vision.get_model("mobilenet0.25", pretrained=True, root=str(root))
    for a, b in zip(net.collect_params().values(), src_net.collect_params().values()):
        np.testing.assert_array_equal(a.data().asnumpy(), b.data().asnumpy())


def test_pretrained_fetched_from_repo(tmp_path, monkeypatch):
    src_net = vision.squeezenet1_1()
    src_net.initialize()
    src_net(mx.nd.zeros((1, 3, 224, 224)))
    src, file_name = _publish(tmp_path, monkeypatch, "squeezenet1.1", src_net)
    repo = tmp_path / "repo"
    (repo / "gluon" / "models").mkdir(parents=True)
    with zipfile.ZipFile(repo / "gluon" / "models" / (file_name + ".zip"), "w") as zf:
        zf.write(src, file_name + ".params")
    monkeypatch.setenv("MXNET_GLUON_REPO", "file://%s" % repo)  # no trailing '/'
    root = tmp_path / "store"
    path = model_store.get_model_file("squeezenet1.1", root=str(root))
    assert path == os.path.join(str(root), file_name + ".params")
    assert os.listdir(root) == [file_name + ".params"]
    net = vision.squeezenet1_1(pretrained=True, root=str(root))
    w = net.output[0].weight.data().asnumpy()
    np.testing.assert_array_equal(w, src_net.output[0].weight.data().asnumpy())
    model_store.purge(root=str(root))
    assert os.listdir(root) == []


def test_default_root_follows_mxnet_home():
    assert vision._common.DEFAULT_ROOT == os.path.join(mx.base.data_dir(), "models")
    assert mx.base.data_dir_default() == os.path.join(os.path.expanduser("~"), ".mxnet")


# ---------------------------------------------------------------- contrib.nn

def _concurrent(cls, axis):
    net = cls(axis=axis)
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(3, in_units=4, flatten=False))
        net.add(mx.gluon.nn.Dense(2, in_units=4, flatten=False))
        net.add(Identity())
    net.initialize(mx.init.Normal(1.0))
    return net


@pytest.mark.parametrize("cls", [Concurrent, HybridConcurrent])
def test_concurrent_concatenates_children(cls):
    net = _concurrent(cls, -1)
    x = np.random.RandomState(0).standard_normal((5, 4)).astype("float32")
    d0, d1 = net[0], net[1]
    want = np.concatenate([
        x @ d0.weight.data().asnumpy().T + d0.bias.data().asnumpy(),
        x @ d1.weight.data().asnumpy().T + d1.bias.data().asnumpy(), x], axis=-1)
    np.testing.assert_allclose(net(mx.nd.array(x)).asnumpy(), want, rtol=1e-5, atol=1e-6)
    if cls is HybridConcurrent:
        net.hybridize()
        np.testing.assert_allclose(net(mx.nd.array(x)).asnumpy(), want, rtol=1e-5,
                                   atol=1e-6)
    assert sorted(net.collect_params()) == sorted(
        [net.prefix + n for n in ("dense0_weight", "dense0_bias", "dense1_weight",
                                  "dense1_bias")])


def test_concurrent_mismatched_outputs_raise():
    net = HybridConcurrent(axis=0)
    net.add(Identity())
    net.add(mx.gluon.nn.Dense(3, in_units=4, flatten=False))
    net.initialize()
    x = mx.nd.ones((2, 4))
    with pytest.raises(mx.base.MXNetError, match="(?i)concat"):
        net(x).wait_to_read()
    np.testing.assert_array_equal(x.asnumpy(), np.ones((2, 4)))


# ---------------------------------------------------------------- gluon.nn extras

LAYERS = np.load(os.path.join(FIX, "layers.npz"))


@pytest.mark.parametrize("hybrid", [False, True])
def test_group_norm_matches_mxnet(hybrid):
    gn = mx.gluon.nn.GroupNorm(num_groups=3)
    assert repr(gn) == "GroupNorm(eps=1e-05, num_groups=3, center=True, scale=True)"
    assert [(k[len(gn.prefix):], p.shape) for k, p in gn.collect_params().items()] == [
        ("gamma", (3,)), ("beta", (3,))]
    gn.initialize()
    gn.gamma.set_data(mx.nd.array([0.5, 2.0, -1.0]))
    gn.beta.set_data(mx.nd.array([0.1, -0.2, 0.3]))
    if hybrid:
        gn.hybridize()
    np.testing.assert_allclose(gn(mx.nd.array(LAYERS["x"])).asnumpy(), LAYERS["groupnorm"],
                               rtol=1e-4, atol=1e-5)


def test_group_norm_bad_groups():
    gn = mx.gluon.nn.GroupNorm(num_groups=4)
    gn.initialize()
    x = mx.nd.ones((2, 6, 3))
    with pytest.raises(mx.base.MXNetError, match="GroupNorm.*num_groups=4"):
        gn(x)
    np.testing.assert_array_equal(x.asnumpy(), np.ones((2, 6, 3)))
    with pytest.raises(mx.base.MXNetError, match="num_groups must be positive"):
        mx.gluon.nn.GroupNorm(num_groups=0)


def test_batchnorm_relu_matches_mxnet():
    bn = mx.gluon.nn.BatchNormReLU(momentum=0.8)
    bn.initialize()
    x = mx.nd.array(LAYERS["x"])
    bn(x)
    assert repr(bn) == ("BatchNormReLU(axis=1, eps=1e-05, momentum=0.8, fix_gamma=False, "
                        "use_global_stats=False, in_channels=6)")
    assert sorted(k[len(bn.prefix):] for k in bn.collect_params()) == [
        "beta", "gamma", "running_mean", "running_var"]
    assert bn.prefix.startswith("batchnormrelu")
    bn.gamma.set_data(mx.nd.array(LAYERS["bn_gamma"]))
    bn.beta.set_data(mx.nd.array(LAYERS["bn_beta"]))
    with mx.autograd.record():
        y = bn(x)
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), LAYERS["bnrelu_train"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn.running_mean.data().asnumpy(), LAYERS["bnrelu_running_mean"],
                               rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(bn.running_var.data().asnumpy(), LAYERS["bnrelu_running_var"],
                               rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(bn(x).asnumpy(), LAYERS["bnrelu_infer"], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("hybrid", [False, True])
def test_reflection_pad_matches_mxnet(hybrid):
    x = mx.nd.array(LAYERS["x"])
    for padding, key in ((2, "pad2"), ((0, 0, 0, 0, 1, 3, 0, 2), "pad_asym")):
        pad = mx.gluon.nn.ReflectionPad2D(padding)
        if hybrid:
            pad.hybridize()
        np.testing.assert_array_equal(pad(x).asnumpy(), LAYERS[key])
    assert repr(mx.gluon.nn.ReflectionPad2D(1)) == "ReflectionPad2D(\n\n)"


def test_reflection_pad_bad_input():
    x = mx.nd.ones((1, 1, 3, 3))
    with pytest.raises(mx.base.MXNetError, match="ReflectionPad2D.*smaller than.*3"):
        mx.gluon.nn.ReflectionPad2D(3)(x)
    with pytest.raises(mx.base.MXNetError, match="ReflectionPad2D.*4-D"):
        mx.gluon.nn.ReflectionPad2D(1)(mx.nd.ones((3, 3)))
    with pytest.raises(mx.base.MXNetError, match="ReflectionPad2D: padding"):
        mx.gluon.nn.ReflectionPad2D((1, 1, 0, 0, 1, 1, 1, 1))
    np.testing.assert_array_equal(x.asnumpy(), np.ones((1, 1, 3, 3)))


@pytest.mark.parametrize("hybrid", [False, True])
def test_pixel_shuffle_matches_mxnet(hybrid):
    from oxnet.gluon.contrib.nn import PixelShuffle1D, PixelShuffle2D, PixelShuffle3D
    for cls, factor, key in ((PixelShuffle1D, 3, "1"), (PixelShuffle2D, (2, 3), "2"),
                             (PixelShuffle3D, (2, 3, 2), "3")):
        layer = cls(factor)
        if hybrid:
            layer.hybridize()
        y = layer(mx.nd.array(LAYERS["ps_x" + key]))
        np.testing.assert_array_equal(y.asnumpy(), LAYERS["ps" + key])
    assert [repr(PixelShuffle1D(3)), repr(PixelShuffle2D((2, 3))),
            repr(PixelShuffle3D(2))] == list(LAYERS["ps_reprs"])


def test_pixel_shuffle_bad_input():
    from oxnet.gluon.contrib.nn import PixelShuffle2D
    x = mx.nd.ones((1, 6, 2, 2))
    with pytest.raises(mx.base.MXNetError, match="PixelShuffle2D.*divisible by 4"):
        PixelShuffle2D(2)(x)
    with pytest.raises(mx.base.MXNetError, match="PixelShuffle2D: factor"):
        PixelShuffle2D((2, 2, 2))
    np.testing.assert_array_equal(x.asnumpy(), np.ones((1, 6, 2, 2)))
