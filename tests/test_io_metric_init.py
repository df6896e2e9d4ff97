"""mx.init, mx.io (NDArrayIter), mx.metric and test_utils.get_mnist, against NumPy and
MXNet 1.9.1's documented behaviour."""

import os

import numpy as np
import pytest

import oxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
MNIST_DIR = os.path.join(HERE, os.pardir, "data", "mnist-subset")


# ---------------------------------------------------------------- initializers

def _init(init, name, shape):
    arr = mx.nd.zeros(shape)
    init(mx.init.InitDesc(name), arr)
    return arr.asnumpy()


def test_name_dispatch_bias_gamma_beta():
    init = mx.init.Uniform(0.5)
    assert (_init(init, "fc_bias", (4,)) == 0).all()
    assert (_init(init, "bn_gamma", (4,)) == 1).all()
    assert (_init(init, "bn_beta", (4,)) == 0).all()
    assert (_init(init, "q_min", (2,)) == 0).all()
    assert (_init(init, "q_max", (2,)) == 1).all()
    w = _init(init, "fc_weight", (50, 40))
    assert np.abs(w).max() <= 0.5 and w.std() > 0.2


def test_legacy_string_names_moving_stats():
    init = mx.init.Xavier()
    a = mx.nd.ones((3,))
    init("bn_moving_mean", a)
    assert (a.asnumpy() == 0).all()
    b = mx.nd.zeros((3,))
    init("bn_moving_var", b)
    assert (b.asnumpy() == 1).all()


def test_unknown_name_raises_and_leaves_array():
    arr = mx.nd.ones((2,))
    with pytest.raises(ValueError, match="Unknown initialization pattern for foo"):
        mx.init.Uniform()(mx.init.InitDesc("foo"), arr)
    assert (arr.asnumpy() == 1).all()


def test_init_attr_overrides_name():
    arr = mx.nd.zeros((3, 3))
    mx.init.Uniform()(mx.init.InitDesc("x_bias", {"__init__": mx.init.One()}), arr)
    assert (arr.asnumpy() == 1).all()
    mx.init.Uniform()(mx.init.InitDesc("x_weight", {"__init__": "zeros"}), arr)
    assert (arr.asnumpy() == 0).all()
    mx.init.Uniform()(mx.init.InitDesc("x_weight", {"__init__": '["constant", {"value": 2.5}]'}),
                      arr)
    assert (arr.asnumpy() == 2.5).all()


@pytest.mark.parametrize("rnd_type,factor_type,shape", [
    ("uniform", "avg", (64, 32, 3, 3)), ("gaussian", "in", (200, 100)),
    ("uniform", "out", (300, 20)), ("gaussian", "avg", (50, 40, 5))])
def test_xavier_scale(rnd_type, factor_type, shape):
    mx.random.seed(0)
    w = _init(mx.init.Xavier(rnd_type, factor_type, magnitude=2.24), "w_weight", shape)
    hw = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
    fan_in, fan_out = shape[1] * hw, shape[0] * hw
    factor = {"avg": (fan_in + fan_out) / 2, "in": fan_in, "out": fan_out}[factor_type]
    scale = np.sqrt(2.24 / factor)
    if rnd_type == "uniform":
        assert np.abs(w).max() <= scale
        np.testing.assert_allclose(w.std(), scale / np.sqrt(3), rtol=0.05)
    else:
        np.testing.assert_allclose(w.std(), scale, rtol=0.05)
    assert abs(w.mean()) < 0.05 * scale


def test_xavier_errors():
    with pytest.raises(ValueError, match="Xavier initializer cannot be applied to vector w_weight"):
        _init(mx.init.Xavier(), "w_weight", (5,))
    with pytest.raises(ValueError, match="Incorrect factor type"):
        _init(mx.init.Xavier(factor_type="bad"), "w_weight", (5, 5))
    with pytest.raises(ValueError, match="Unknown random type"):
        _init(mx.init.Xavier(rnd_type="bad"), "w_weight", (5, 5))


def test_msraprelu_normal_constant_one_zero():
    mx.random.seed(1)
    w = _init(mx.init.MSRAPrelu(factor_type="in", slope=0.0), "w_weight", (400, 300))
    np.testing.assert_allclose(w.std(), np.sqrt(2.0 / 300), rtol=0.05)
    assert mx.init.MSRAPrelu().dumps() == '["msraprelu", {"factor_type": "avg", "slope": 0.25}]'
    w = _init(mx.init.Normal(0.3), "w_weight", (300, 300))
    np.testing.assert_allclose(w.std(), 0.3, rtol=0.05)
    assert (_init(mx.init.Constant(3), "w_weight", (2, 2)) == 3).all()
    assert (_init(mx.init.One(), "w_weight", (2, 2)) == 1).all()
    assert (_init(mx.init.Zero(), "w_weight", (2, 2)) == 0).all()
    np.testing.assert_array_equal(_init(mx.init.Constant([1, 2]), "w_weight", (3, 2)),
                                  [[1, 2]] * 3)


def test_orthogonal_rows_orthonormal():
    w = _init(mx.init.Orthogonal(scale=2.0), "w_weight", (8, 4, 2, 2))
    m = w.reshape(8, 16) / 2.0
    np.testing.assert_allclose(m @ m.T, np.eye(8), atol=1e-5)
    w = _init(mx.init.Orthogonal(rand_type="normal"), "w_weight", (20, 5))
    np.testing.assert_allclose((w / 1.414).T @ (w / 1.414), np.eye(5), atol=1e-5)


def test_mixed_and_registry():
    init = mx.init.Mixed(["conv.*", ".*"], [mx.init.Constant(0.5), mx.init.One()])
    a = mx.nd.zeros((2,))
    init("conv0_weight", a)
    assert (a.asnumpy() == 0.5).all()
    init("fc_weight", a)
    assert (a.asnumpy() == 1).all()
    with pytest.raises(ValueError, match="did not match any pattern"):
        mx.init.Mixed(["x"], [mx.init.One()])("y", a)
    assert isinstance(mx.init.create("xavier"), mx.init.Xavier)
    assert isinstance(mx.init.create("zeros"), mx.init.Zero)
    x = mx.init.create(mx.init.Xavier(magnitude=2).dumps())
    assert x.magnitude == 2 and x.rnd_type == "uniform"
    with pytest.raises(ValueError, match="Cannot find initializer 'nope'"):
        mx.init.create("nope")

    @mx.init.register
    class Halves(mx.init.Initializer):
        def _init_weight(self, _, arr):
            arr[:] = 0.5
    assert (_init(mx.init.create("halves"), "w_weight", (2,)) == 0.5).all()
    assert mx.initializer is mx.init


def test_load_initializer(tmp_path):
    f = str(tmp_path / "p.params")
    mx.nd.save(f, {"arg:fc_weight": mx.nd.ones((2, 2)) * 3})
    init = mx.init.Load(f, default_init=mx.init.Zero())
    a = mx.nd.zeros((2, 2))
    init("fc_weight", a)
    assert (a.asnumpy() == 3).all()
    b = mx.nd.ones((2,))
    init("fc_bias", b)
    assert (b.asnumpy() == 0).all()
    with pytest.raises(ValueError, match="Shape mismatch"):
        init("fc_weight", mx.nd.zeros((3, 2)))


# ---------------------------------------------------------------- NDArrayIter

def _batches(it):
    return [(b.pad, [d.asnumpy().tolist() for d in b.data],
             [lb.asnumpy().tolist() for lb in (b.label or [])]) for b in it]


def test_ndarrayiter_pad():
    it = mx.io.NDArrayIter(np.arange(20).reshape(10, 2), np.arange(10), 3)
    assert it.provide_data == [mx.io.DataDesc("data", (3, 2))]
    assert it.provide_label[0].name == "softmax_label" and it.provide_label[0].shape == (3,)
    assert repr(it.provide_data[0]) == "DataDesc[data,(3, 2),<class 'numpy.float32'>,NCHW]"
    got = _batches(it)
    assert [g[0] for g in got] == [0, 0, 0, 2]
    assert got[3][1][0] == [[18, 19], [0, 1], [2, 3]]
    assert got[3][2][0] == [9, 0, 1]
    it.reset()
    assert len(_batches(it)) == 4


def test_ndarrayiter_pad_tiles_small_data():
    it = mx.io.NDArrayIter(np.arange(3), np.arange(3), 8)
    got = _batches(it)
    assert got == [(5, [[0, 1, 2, 0, 1, 2, 0, 1]], [[0, 1, 2, 0, 1, 2, 0, 1]])]


def test_ndarrayiter_discard_and_names():
    it = mx.io.NDArrayIter([np.arange(10), np.arange(10)], [np.arange(10)], 4,
                           last_batch_handle="discard")
    assert [d.name for d in it.provide_data] == ["_0_data", "_1_data"]
    got = _batches(it)
    assert len(got) == 2 and got[1][1] == [[4, 5, 6, 7], [4, 5, 6, 7]]


def test_ndarrayiter_roll_over_matches_mxnet():
    it = mx.io.NDArrayIter({"x": np.arange(10), "a": np.ones((10, 3))}, None, 4,
                           last_batch_handle="roll_over")
    assert [d.name for d in it.provide_data] == ["a", "x"]
    assert it.provide_label == []
    seen = []
    for _ in range(3):
        seen.append([(b.pad, b.data[1].asnumpy().tolist()) for b in it])
        it.reset()
    # MXNet 1.9.1: epoch 0 gives 2 batches; the 2 left over start epoch 1
    assert seen == [[(0, [0, 1, 2, 3]), (0, [4, 5, 6, 7])],
                    [(2, [8, 9, 0, 1]), (0, [2, 3, 4, 5]), (0, [6, 7, 8, 9])],
                    [(0, [0, 1, 2, 3]), (0, [4, 5, 6, 7])]]


def test_ndarrayiter_shuffle_uses_numpy_rng_like_mxnet():
    np.random.seed(3)
    it = mx.io.NDArrayIter(np.arange(7), np.arange(7) * 10, 3, shuffle=True)
    e0 = _batches(it)
    it.reset()
    e1 = _batches(it)
    # the values MXNet 1.9.1 gives for this seed
    assert [g[1][0] for g in e0] == [[4, 6, 5], [3, 1, 0], [2, 4, 6]]
    assert [g[1][0] for g in e1] == [[5, 6, 2], [0, 3, 4], [1, 5, 6]]
    for g in e0 + e1:
        assert [v * 10 for v in g[1][0]] == g[2][0]


def test_ndarrayiter_protocol_getpad_next():
    it = mx.io.NDArrayIter(np.arange(5), np.arange(5), 2)
    assert it.next().data[0].asnumpy().tolist() == [0, 1]
    assert it.iter_next()
    assert it.getdata()[0].asnumpy().tolist() == [2, 3]
    assert it.getindex() is None and it.getpad() == 0
    b = it.next()
    assert b.pad == 1 and b.data[0].asnumpy().tolist() == [4, 0]
    with pytest.raises(StopIteration):
        it.next()
    assert str(b) == "DataBatch: data shapes: [(2,)] label shapes: [(2,)]"


def test_ndarrayiter_bad_inputs():
    with pytest.raises(TypeError, match="Input must be NDArray"):
        mx.io.NDArrayIter("abc", np.arange(5), 2)
    with pytest.raises(ValueError, match="last_batch_handle"):
        mx.io.NDArrayIter(np.arange(5), np.arange(5), 2, last_batch_handle="foo")
    with pytest.raises(ValueError, match="at least as many examples"):
        mx.io.NDArrayIter(np.arange(5), np.arange(4), 2)
    # as MXNet: sources with more examples than the first data source are fine (the
    # first data source sets the count)
    it = mx.io.NDArrayIter(np.arange(4), np.arange(8) * 10, 2)
    assert [b.label[0].asnumpy().tolist() for b in it] == [[0, 10], [20, 30]]
    with pytest.raises(ValueError, match="batch_size"):
        mx.io.NDArrayIter(np.arange(5), np.arange(5), 0)


def test_ndarrayiter_keeps_dtype_of_ndarray_sources():
    it = mx.io.NDArrayIter(mx.nd.array(np.arange(6), dtype="int32"), batch_size=2, shuffle=True)
    assert next(iter(it)).data[0].dtype == np.int32


# ---------------------------------------------------------------- metrics

def test_accuracy():
    m = mx.metric.Accuracy()
    pred = mx.nd.array([[0.3, 0.7], [0, 1.0], [0.4, 0.6]])
    label = mx.nd.array([0, 1, 1])
    m.update([label], [pred])
    assert m.get() == ("accuracy", 2.0 / 3)
    m.update(mx.nd.array([0]), mx.nd.array([[0.9, 0.1]]))
    assert m.get()[1] == 0.75
    assert m.num_inst == 4 and m.global_num_inst == 4
    m.reset_local()
    assert np.isnan(m.get()[1]) and m.get_global()[1] == 0.75
    m.reset()
    assert np.isnan(m.get_global()[1])
    assert str(mx.metric.create("acc")) == "EvalMetric: {'accuracy': nan}"


def test_topk_f1_mae_mse_rmse_ce_perplexity():
    rng = np.random.RandomState(0)
    p = rng.rand(20, 5).astype(np.float32)
    lab = rng.randint(0, 5, 20)
    m = mx.metric.TopKAccuracy(top_k=3)
    m.update([mx.nd.array(lab)], [mx.nd.array(p)])
    top3 = np.argsort(-p, axis=1)[:, :3]
    assert m.get() == ("top_k_accuracy_3", (top3 == lab[:, None]).any(1).mean())
    with pytest.raises(ValueError, match="Please use Accuracy"):
        mx.metric.TopKAccuracy(top_k=1)

    y = rng.rand(10).astype(np.float32)
    yh = rng.rand(10).astype(np.float32)
    for name, fn in [("mae", lambda d: np.abs(d).mean()), ("mse", lambda d: (d ** 2).mean()),
                     ("rmse", lambda d: np.sqrt((d ** 2).mean()))]:
        m = mx.metric.create(name)
        m.update([mx.nd.array(y)], [mx.nd.array(yh)])
        np.testing.assert_allclose(m.get()[1], fn(y - yh), rtol=1e-6)

    probs = p / p.sum(1, keepdims=True)
    m = mx.metric.CrossEntropy()
    m.update([mx.nd.array(lab)], [mx.nd.array(probs)])
    ce = -np.log(probs[np.arange(20), lab] + 1e-12).mean()
    np.testing.assert_allclose(m.get()[1], ce, rtol=1e-5)
    m = mx.metric.Perplexity(ignore_label=None)
    m.update([mx.nd.array(lab)], [mx.nd.array(probs)])
    np.testing.assert_allclose(m.get()[1], np.exp(ce), rtol=1e-5)

    blab = np.array([1, 0, 1, 1, 0, 0])
    bpred = np.array([[0.2, 0.8], [0.6, 0.4], [0.7, 0.3], [0.1, 0.9], [0.3, 0.7], [0.9, 0.1]])
    m = mx.metric.F1()
    m.update([mx.nd.array(blab)], [mx.nd.array(bpred)])
    tp, fp, fn = 2, 1, 1
    prec, rec = tp / (tp + fp), tp / (tp + fn)
    np.testing.assert_allclose(m.get()[1], 2 * prec * rec / (prec + rec))
    with pytest.raises(ValueError, match="binary classification"):
        m.update([mx.nd.array([0, 1, 2])], [mx.nd.array(np.ones((3, 2)))])


def test_composite_custom_and_errors():
    c = mx.metric.create(["acc", "mse"])
    assert isinstance(c, mx.metric.CompositeEvalMetric)
    c.update([mx.nd.array([1, 0])], [mx.nd.array([[0.0, 1.0], [1.0, 0.0]])])
    names, values = c.get()
    assert names == ["accuracy", "mse"] and values[0] == 1.0
    assert c.get_name_value()[0] == ("accuracy", 1.0)

    def myabs(label, pred):
        return np.abs(label - pred).sum()
    m = mx.metric.np(myabs)
    assert m.name == "myabs"
    m.update([mx.nd.array([1, 2])], [mx.nd.array([2, 4])])
    assert m.get() == ("myabs", 3.0)
    m = mx.metric.create(lambda lab, p: (float((lab == p).sum()), lab.size))
    assert m.name == "custom(<lambda>)"
    m.update([mx.nd.array([1, 2])], [mx.nd.array([1, 3])])
    assert m.get()[1] == 0.5
    with pytest.raises(ValueError, match="does not match shape of predictions"):
        mx.metric.Accuracy().update([mx.nd.array([1])], [mx.nd.array([1]), mx.nd.array([2])])
    with pytest.raises(ValueError, match="Cannot find metric"):
        mx.metric.create("nosuch")
    a = mx.metric.Accuracy(name="a", output_names=["o"], label_names=["l"])
    a.update_dict({"l": mx.nd.array([1]), "x": mx.nd.array([0])},
                  {"o": mx.nd.array([[0.0, 1.0]])})
    assert a.get() == ("a", 1.0)
    assert a.get_config()["metric"] == "Accuracy"


# ---------------------------------------------------------------- get_mnist

def test_get_mnist_from_path_env_and_cwd(monkeypatch, tmp_path):
    d = mx.test_utils.get_mnist(path=MNIST_DIR)
    assert d["train_data"].shape == (4000, 1, 28, 28) and d["train_data"].dtype == np.float32
    assert d["test_data"].shape == (1000, 1, 28, 28)
    assert d["train_label"].dtype == np.int8 and d["train_label"].shape == (4000,)
    assert 0.0 <= d["train_data"].min() and d["train_data"].max() == 1.0
    assert set(np.unique(d["train_label"])) == set(range(10))
    monkeypatch.setenv("OXNET_MNIST_DIR", MNIST_DIR)
    d2 = mx.test_utils.get_mnist()
    np.testing.assert_array_equal(d2["test_label"], d["test_label"])
    monkeypatch.delenv("OXNET_MNIST_DIR")
    monkeypatch.chdir(MNIST_DIR)
    d3 = mx.test_utils.get_mnist()
    np.testing.assert_array_equal(d3["train_data"][:5], d["train_data"][:5])


def test_get_mnist_missing_files_names_them(monkeypatch, tmp_path):
    monkeypatch.delenv("OXNET_MNIST_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(mx.base.MXNetError) as e:
        mx.test_utils.get_mnist()
    msg = str(e.value)
    assert "train-images-idx3-ubyte.gz" in msg and "OXNET_MNIST_DIR" in msg
    with pytest.raises(FileNotFoundError):
        mx.test_utils.get_mnist(path=str(tmp_path))


def test_idx_reader_rejects_bad_files(tmp_path):
    from oxnet._idx import read_idx
    bad = tmp_path / "bad.idx"
    bad.write_bytes(b"\x01\x02\x08\x01\x00\x00\x00\x05abc")
    with pytest.raises(mx.base.MXNetError, match="bad magic"):
        read_idx(str(bad))
    short = tmp_path / "short.idx"
    short.write_bytes(b"\x00\x00\x08\x01\x00\x00\x00\x05abc")
    with pytest.raises(mx.base.MXNetError, match="only 3 bytes"):
        read_idx(str(short))
    ok = tmp_path / "ok.idx"
    ok.write_bytes(b"\x00\x00\x0b\x02\x00\x00\x00\x01\x00\x00\x00\x02\x01\x00\xff\xff")
    np.testing.assert_array_equal(read_idx(str(ok)), [[256, -1]])


def test_metric_values_are_python_floats_as_in_mxnet():
    import json
    for m in (mx.metric.MSE(), mx.metric.MAE(), mx.metric.RMSE(), mx.metric.CrossEntropy()):
        if isinstance(m, mx.metric.CrossEntropy):
            m.update([mx.nd.array([0, 1])], [mx.nd.array([[0.3, 0.7], [0.6, 0.4]])])
        else:
            m.update([mx.nd.array([1.0, 2, 3])], [mx.nd.array([1.5, 2, 2])])
        name, value = m.get()
        assert isinstance(value, float)
        json.dumps(m.get())
    # MXNet 1.9.1's value for this batch
    assert abs(m.get()[1] - 1.0601317882537842) < 1e-12
