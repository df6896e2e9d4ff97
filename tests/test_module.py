"""mx.mod.Module (the classic symbolic training API): training matches MXNet 1.9.1
step for step (tests/fixtures/module/, written by MXNet's Module), an MLP learns the
MNIST subset, checkpoints and optimizer states round-trip, and the low-level calls
(bind, init_params, forward, backward, update, ...) against NumPy."""

import json
import logging
import os

import numpy as np
import pytest

import oxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "fixtures", "module")
MNIST_DIR = os.path.join(HERE, os.pardir, "data", "mnist-subset")


@pytest.fixture(scope="module")
def mnist():
    return mx.test_utils.get_mnist(path=MNIST_DIR)


def bn_mlp():
    """The net of make_module_fixtures.py."""
    x = mx.sym.flatten(mx.sym.var("data"))
    x = mx.sym.FullyConnected(x, num_hidden=16, name="fc1")
    x = mx.sym.BatchNorm(x, fix_gamma=False, name="bn1")
    x = mx.sym.Activation(x, act_type="relu", name="relu1")
    x = mx.sym.FullyConnected(x, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(x, name="softmax")


def initial_params():
    """The draws of make_module_fixtures.initial_params."""
    rng = np.random.RandomState(0)
    args = {"fc1_weight": rng.standard_normal((16, 784)) * 0.05,
            "fc1_bias": np.zeros(16), "bn1_gamma": np.ones(16), "bn1_beta": np.zeros(16),
            "fc2_weight": rng.standard_normal((10, 16)) * 0.3, "fc2_bias": np.zeros(10)}
    auxs = {"bn1_moving_mean": np.zeros(16), "bn1_moving_var": np.ones(16)}
    return ({k: mx.nd.array(v.astype("float32")) for k, v in args.items()},
            {k: mx.nd.array(v.astype("float32")) for k, v in auxs.items()})


def mlp(hidden=32):
    x = mx.sym.flatten(mx.sym.var("data"))
    x = mx.sym.FullyConnected(x, num_hidden=hidden, name="fc1")
    x = mx.sym.Activation(x, act_type="relu", name="relu1")
    x = mx.sym.FullyConnected(x, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(x, name="softmax")


SGD = {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4}


def test_fit_matches_mxnet_step_for_step(mnist):
    train = mx.io.NDArrayIter(mnist["train_data"][:500], mnist["train_label"][:500], 50)
    val = mx.io.NDArrayIter(mnist["test_data"][:200], mnist["test_label"][:200], 50)
    args, auxs = initial_params()
    mod = mx.mod.Module(bn_mlp(), context=mx.cpu())
    mod.fit(train, num_epoch=2, optimizer="sgd", optimizer_params=SGD, arg_params=args,
            aux_params=auxs)
    _, want_args, want_auxs = mx.model.load_checkpoint(os.path.join(FIX, "trained"), 2)
    got_args, got_auxs = mod.get_params()
    assert sorted(got_args) == sorted(want_args) and sorted(got_auxs) == sorted(want_auxs)
    for got, want in ((got_args, want_args), (got_auxs, want_auxs)):
        for k in want:
            np.testing.assert_allclose(got[k].asnumpy(), want[k].asnumpy(), rtol=1e-3,
                                       atol=1e-4, err_msg=k)
    with open(os.path.join(FIX, "trained.json")) as f:
        ref = json.load(f)
    assert mod.score(val, "acc")[0][1] == pytest.approx(ref["val_acc"], abs=0.011)
    np.testing.assert_allclose(mod.predict(val).asnumpy()[:5], ref["scores"], rtol=1e-3,
                               atol=1e-4)


def test_module_loads_mxnet_checkpoint_and_scores(mnist):
    mod = mx.mod.Module.load(os.path.join(FIX, "trained"), 2)
    assert mod.params_initialized and not mod.binded
    val = mx.io.NDArrayIter(mnist["test_data"][:200], mnist["test_label"][:200], 50)
    mod.bind(val.provide_data, val.provide_label, for_training=False)
    with open(os.path.join(FIX, "trained.json")) as f:
        ref = json.load(f)
    assert mod.score(val, mx.metric.Accuracy())[0][1] == pytest.approx(ref["val_acc"],
                                                                       abs=1e-9)


def test_mlp_learns_mnist_with_callbacks(mnist, tmp_path, caplog):
    np.random.seed(1)
    mx.random.seed(1)
    train = mx.io.NDArrayIter(mnist["train_data"], mnist["train_label"], 100, shuffle=True)
    val = mx.io.NDArrayIter(mnist["test_data"], mnist["test_label"], 100)
    mod = mx.mod.Module(mlp(), context=mx.cpu())
    prefix = str(tmp_path / "mlp")
    batches = []
    with caplog.at_level(logging.INFO):
        mod.fit(train, eval_data=val, eval_metric="acc", num_epoch=3, optimizer="sgd",
                optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
                initializer=mx.init.Xavier(),
                batch_end_callback=[mx.callback.Speedometer(100, 20),
                                    lambda p: batches.append((p.epoch, p.nbatch))],
                epoch_end_callback=mx.callback.do_checkpoint(prefix))
    assert batches[0] == (0, 0) and batches[-1] == (2, 39) and len(batches) == 120
    msgs = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("Epoch[0] Batch [0-20]\tSpeed: ") for m in msgs)
    assert sum(m.startswith("Epoch[2] Train-accuracy=") for m in msgs) == 1
    assert sum(m.startswith("Epoch[1] Time cost=") for m in msgs) == 1
    val_lines = [m for m in msgs if m.startswith("Epoch[2] Validation-accuracy=")]
    assert len(val_lines) == 1
    acc = float(val_lines[0].split("=")[1])
    assert acc > 0.85
    assert mod.score(val, "acc")[0][1] == pytest.approx(acc, abs=1e-6)
    assert sorted(os.listdir(tmp_path)) == ["mlp-0001.params", "mlp-0002.params",
                                            "mlp-0003.params", "mlp-symbol.json"]
    # the last checkpoint predicts what the module does
    loaded = mx.mod.Module.load(prefix, 3)
    loaded.bind(val.provide_data, val.provide_label, for_training=False)
    np.testing.assert_allclose(loaded.predict(val).asnumpy(), mod.predict(val).asnumpy(),
                               rtol=1e-5, atol=1e-6)


def _batches(mnist, n, batch):
    return mx.io.NDArrayIter(mnist["train_data"][:n], mnist["train_label"][:n], batch)


def test_optimizer_states_round_trip(mnist, tmp_path):
    sym = mlp(16)
    args, _ = mx.model.load_params(os.path.join(FIX, "trained"), 2)
    args = {"fc1_weight": args["fc1_weight"], "fc1_bias": args["fc1_bias"],
            "fc2_weight": args["fc2_weight"], "fc2_bias": args["fc2_bias"]}
    # four epochs in one go ...
    ref = mx.mod.Module(sym)
    ref.fit(_batches(mnist, 200, 50), num_epoch=4, optimizer_params=SGD, arg_params=args)
    # ... or two, a checkpoint with the momentum, and two more from it
    first = mx.mod.Module(sym)
    first.fit(_batches(mnist, 200, 50), num_epoch=2, optimizer_params=SGD, arg_params=args)
    prefix = str(tmp_path / "ck")
    first.save_checkpoint(prefix, 2, save_optimizer_states=True)
    assert os.path.exists(prefix + "-0002.states")
    results = {}
    for with_states in (True, False):
        second = mx.mod.Module.load(prefix, 2, load_optimizer_states=with_states)
        with pytest.warns(UserWarning, match="already initialized"):
            second.fit(_batches(mnist, 200, 50), num_epoch=4, begin_epoch=2,
                       optimizer_params=SGD)
        results[with_states] = second.get_params()[0]
    for k, v in ref.get_params()[0].items():
        np.testing.assert_allclose(results[True][k].asnumpy(), v.asnumpy(), rtol=1e-4,
                                   atol=1e-6, err_msg=k)
    # without the momentum the run differs
    assert not np.allclose(results[False]["fc1_weight"].asnumpy(),
                           ref.get_params()[0]["fc1_weight"].asnumpy(), rtol=1e-4, atol=1e-6)


def _linreg():
    x = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    return mx.sym.LinearRegressionOutput(x, name="lro")


def test_low_level_step_against_numpy():
    rng = np.random.RandomState(3)
    x = rng.standard_normal((4, 3)).astype("float32")
    y = rng.standard_normal((4, 2)).astype("float32")
    w = rng.standard_normal((2, 3)).astype("float32")
    b = rng.standard_normal((2,)).astype("float32")
    mod = mx.mod.Module(_linreg(), label_names=["lro_label"])
    assert mod.data_names == ["data"] and mod.label_names == ["lro_label"]
    assert mod.output_names == ["lro_output"]
    mod.bind(data_shapes=[("data", (4, 3))], label_shapes=[("lro_label", (4, 2))])
    assert mod.binded and mod.for_training
    assert mod.output_shapes == [("lro_output", (4, 2))]
    mod.init_params(arg_params={"fc_weight": mx.nd.array(w), "fc_bias": mx.nd.array(b)})
    mod.init_optimizer(optimizer="sgd", optimizer_params=(("learning_rate", 0.5),))
    batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])
    mod.forward(batch, is_train=True)
    pred = x @ w.T + b
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), pred, rtol=1e-5, atol=1e-6)
    mod.backward()
    mod.update()
    # LinearRegressionOutput's gradient is (pred - label) / outputs per example (2);
    # rescale_grad = 1 / batch
    g = (pred - y) / 2 / 4
    args, _ = mod.get_params()
    np.testing.assert_allclose(args["fc_weight"].asnumpy(), w - 0.5 * g.T @ x, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(args["fc_bias"].asnumpy(), b - 0.5 * g.sum(0), rtol=1e-5,
                               atol=1e-6)
    metric = mx.metric.MSE()
    mod.update_metric(metric, [mx.nd.array(y)])
    assert metric.get()[1] == pytest.approx(float(((pred - y) ** 2).mean()), rel=1e-5)
    # set_params copies into the executors; get_params gives them back
    mod.set_params({"fc_weight": mx.nd.zeros((2, 3)), "fc_bias": mx.nd.ones((2,))}, {})
    mod.forward(batch, is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), np.ones((4, 2)))
    np.testing.assert_array_equal(mod.get_params()[0]["fc_bias"].asnumpy(), np.ones(2))


def test_inputs_need_grad_and_fixed_params():
    rng = np.random.RandomState(4)
    x = rng.standard_normal((3, 3)).astype("float32")
    y = np.zeros((3, 2), "float32")
    mod = mx.mod.Module(_linreg(), label_names=["lro_label"], fixed_param_names=["fc_bias"])
    mod.bind([("data", (3, 3))], [("lro_label", (3, 2))], inputs_need_grad=True)
    mod.init_params(mx.init.Normal(1.0))
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    w = mod.get_params()[0]["fc_weight"].asnumpy().copy()
    b = mod.get_params()[0]["fc_bias"].asnumpy().copy()
    mod.forward_backward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]))
    pred = x @ w.T + b
    np.testing.assert_allclose(mod.get_input_grads()[0].asnumpy(), (pred - y) / 2 @ w,
                               rtol=1e-5, atol=1e-5)
    mod.update()
    np.testing.assert_array_equal(mod.get_params()[0]["fc_bias"].asnumpy(), b)
    assert not np.allclose(mod.get_params()[0]["fc_weight"].asnumpy(), w)


def test_two_contexts_match_one(mnist):
    args, _ = mx.model.load_params(os.path.join(FIX, "trained"), 2)
    args = {k: args[k] for k in ("fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias")}
    mods = []
    for ctx in (mx.cpu(0), [mx.cpu(0), mx.cpu(1)]):
        mod = mx.mod.Module(mlp(16), context=ctx)
        mod.fit(_batches(mnist, 200, 50), num_epoch=2, optimizer_params=SGD,
                arg_params=args)
        mods.append(mod)
    one, two = mods
    for k, v in one.get_params()[0].items():
        np.testing.assert_allclose(two.get_params()[0][k].asnumpy(), v.asnumpy(), rtol=1e-4,
                                   atol=1e-6, err_msg=k)
    batch = next(iter(_batches(mnist, 50, 50)))
    two.forward(batch, is_train=False)
    merged = two.get_outputs()[0]
    assert merged.shape == (50, 10)
    split = two.get_outputs(merge_multi_context=False)
    assert [a.shape for a in split[0]] == [(25, 10), (25, 10)]
    assert split[0][1].context == mx.cpu(1)
    one.forward(batch, is_train=False)
    np.testing.assert_allclose(merged.asnumpy(), one.get_outputs()[0].asnumpy(), rtol=1e-5,
                               atol=1e-6)


def test_predict_pads_merges_and_reshapes(mnist):
    mod = mx.mod.Module(mlp(8))
    mod.bind([("data", (64, 1, 28, 28))], [("softmax_label", (64,))], for_training=False)
    mod.init_params(mx.init.Xavier())
    it = mx.io.NDArrayIter(mnist["test_data"][:150], mnist["test_label"][:150], 64)
    out = mod.predict(it)
    assert out.shape == (150, 10)
    listed = mod.predict(it, always_output_list=True)
    assert isinstance(listed, list) and listed[0].shape == (150, 10)
    per_batch = mod.predict(it, merge_batches=False)
    assert [o[0].shape[0] for o in per_batch] == [64, 64, 22]
    assert mod.predict(it, num_batch=1).shape == (64, 10)
    seen = [(nb, outs[0].shape[0]) for outs, nb, _ in mod.iter_predict(it)]
    assert seen == [(0, 64), (1, 64), (2, 22)]
    # a batch of another size rebinds; a numpy batch works too
    x = mnist["test_data"][:10]
    small = mod.predict(x)
    assert small.shape == (10, 10)
    np.testing.assert_allclose(small.asnumpy(), out.asnumpy()[:10], rtol=1e-5, atol=1e-6)
    assert mod.data_shapes[0].shape == (10, 1, 28, 28)


def test_save_and_load_params(tmp_path):
    mod = mx.mod.Module(mlp(8))
    mod.bind([("data", (2, 1, 28, 28))], [("softmax_label", (2,))])
    mod.init_params(mx.init.Normal(0.5))
    fname = str(tmp_path / "p.params")
    mod.save_params(fname)
    assert sorted(mx.nd.load(fname)) == ["arg:fc1_bias", "arg:fc1_weight", "arg:fc2_bias",
                                         "arg:fc2_weight"]
    other = mx.mod.Module(mlp(8))
    other.bind([("data", (2, 1, 28, 28))], [("softmax_label", (2,))])
    other.init_params()
    other.load_params(fname)
    for k, v in mod.get_params()[0].items():
        np.testing.assert_array_equal(other.get_params()[0][k].asnumpy(), v.asnumpy())


# ---------------------------------------------------------------- bad use

def test_bad_names_and_order_of_calls(caplog):
    sym = mlp(4)
    with pytest.raises(ValueError, match="data_names=\\['x'\\].*'x' is not found"):
        mx.mod.Module(sym, data_names=["x"])
    with pytest.warns(UserWarning, match="label_names"):
        mx.mod.Module(sym, label_names=["lbl"])
    mod = mx.mod.Module(sym)
    batch = mx.io.DataBatch([mx.nd.ones((2, 1, 28, 28))], [mx.nd.ones((2,))])
    with pytest.raises(mx.base.MXNetError, match="bind"):
        mod.forward(batch)
    with pytest.raises(AssertionError, match="bind"):
        mod.init_params()
    with pytest.raises(ValueError, match="don't match names"):
        mod.bind([("pixels", (2, 1, 28, 28))])
    assert not mod.binded
    mod.bind([("data", (2, 1, 28, 28))], [("softmax_label", (2,))])
    with caplog.at_level(logging.WARNING):
        mod.bind([("data", (2, 1, 28, 28))], [("softmax_label", (2,))])
    assert "Already bound, ignoring bind()" in caplog.text
    with pytest.raises(mx.base.MXNetError, match="init_optimizer"):
        mod.init_optimizer()
    with pytest.raises(RuntimeError, match="fc2_bias is not presented"):
        mod.init_params(arg_params={"fc1_weight": mx.nd.zeros((4, 784)),
                                    "fc1_bias": mx.nd.zeros((4,)),
                                    "fc2_weight": mx.nd.zeros((10, 4))})
    good = {"fc1_weight": mx.nd.zeros((4, 784)), "fc1_bias": mx.nd.zeros((4,)),
            "fc2_weight": mx.nd.zeros((10, 4)), "fc2_bias": mx.nd.zeros((10,))}
    bad = dict(good, fc2_weight=mx.nd.zeros((10, 5)))
    with pytest.raises(mx.base.MXNetError, match="fc2_weight.*\\(10, 5\\).*\\(10, 4\\)"):
        mod.init_params(arg_params=bad)
    assert bad["fc2_weight"].shape == (10, 5)
    # names the network does not have are ignored by init_params (as in MXNet) ...
    mod.init_params(arg_params=dict(good, extra=mx.nd.zeros((1,))))
    # ... but not by set_params(allow_missing=True) unless allow_extra
    with pytest.raises(ValueError, match='Find name "extra"'):
        mod.set_params({"extra": mx.nd.zeros((1,))}, {}, allow_missing=True)
    mod.set_params({"extra": mx.nd.zeros((1,))}, {}, allow_missing=True, allow_extra=True)
    with pytest.warns(UserWarning, match="already initialized"):
        mod.init_params()
    mod.init_optimizer()
    with caplog.at_level(logging.WARNING):
        mod.init_optimizer()
    assert "optimizer already initialized" in caplog.text
    with pytest.raises(ValueError, match="num_epoch"):
        mod.fit(mx.io.NDArrayIter(np.zeros((4, 1, 28, 28)), np.zeros(4), 2))


def test_inference_module_refuses_backward():
    mod = mx.mod.Module(mlp(4))
    mod.bind([("data", (2, 1, 28, 28))], for_training=False)
    mod.init_params()
    mod.forward(mx.io.DataBatch([mx.nd.ones((2, 1, 28, 28))], None))
    assert mod.get_outputs()[0].shape == (2, 10)
    with pytest.raises(mx.base.MXNetError, match="for_training=False"):
        mod.backward()
    with pytest.raises(mx.base.MXNetError, match="inputs_need_grad"):
        mod.get_input_grads()


# ---------------------------------------------------------------- BucketingModule

def _bucket_sym(seq_len):
    x = mx.sym.mean(mx.sym.var("data"), axis=1)
    x = mx.sym.FullyConnected(x, num_hidden=8, name="fc1")
    x = mx.sym.BatchNorm(x, fix_gamma=False, name="bn1")
    x = mx.sym.Activation(x, act_type="relu", name="relu1")
    x = mx.sym.FullyConnected(x, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(x, name="softmax"), ("data",), ("softmax_label",)


class _BucketIter(mx.io.DataIter):
    """Batches of 6 sequences of 4 features, lengths from KEYS."""

    KEYS = [8, 5, 3, 5, 8, 3, 5]

    def __init__(self):
        super().__init__(6)
        rng = np.random.RandomState(9)
        self.batches = []
        for key in self.KEYS:
            x = rng.standard_normal((6, key, 4)).astype("float32") + key / 4.0
            y = rng.randint(0, 3, (6,)).astype("float32")
            self.batches.append(mx.io.DataBatch(
                [mx.nd.array(x)], [mx.nd.array(y)], pad=0, bucket_key=key,
                provide_data=[mx.io.DataDesc("data", (6, key, 4))],
                provide_label=[mx.io.DataDesc("softmax_label", (6,))]))
        self.cur = 0

    @property
    def provide_data(self):
        return [mx.io.DataDesc("data", (6, 8, 4))]

    @property
    def provide_label(self):
        return [mx.io.DataDesc("softmax_label", (6,))]

    def reset(self):
        self.cur = 0

    def next(self):
        if self.cur == len(self.batches):
            raise StopIteration
        self.cur += 1
        return self.batches[self.cur - 1]


def _bucket_init():
    rng = np.random.RandomState(5)
    args = {"fc1_weight": rng.standard_normal((8, 4)), "fc1_bias": np.zeros(8),
            "bn1_gamma": np.ones(8), "bn1_beta": np.zeros(8),
            "fc2_weight": rng.standard_normal((3, 8)), "fc2_bias": np.zeros(3)}
    auxs = {"bn1_moving_mean": np.zeros(8), "bn1_moving_var": np.ones(8)}
    return ({k: mx.nd.array(v.astype("float32")) for k, v in args.items()},
            {k: mx.nd.array(v.astype("float32")) for k, v in auxs.items()})


def test_bucketing_module_shares_parameters(tmp_path):
    args, auxs = _bucket_init()
    bucket = mx.mod.BucketingModule(_bucket_sym, default_bucket_key=8)
    assert list(bucket.data_names) == ["data"] and bucket.output_names == ["softmax_output"]
    bucket.fit(_BucketIter(), num_epoch=2, optimizer_params=SGD, arg_params=args,
               aux_params=auxs)
    assert sorted(bucket._buckets) == [3, 5, 8]
    # the same batches through one Module (rebinding on each new shape)
    ref = mx.mod.Module(_bucket_sym(8)[0])
    ref.fit(_BucketIter(), num_epoch=2, optimizer_params=SGD, arg_params=args,
            aux_params=auxs)
    got_args, got_auxs = bucket.get_params()
    want_args, want_auxs = ref.get_params()
    for got, want in ((got_args, want_args), (got_auxs, want_auxs)):
        assert sorted(got) == sorted(want)
        for k in want:
            np.testing.assert_allclose(got[k].asnumpy(), want[k].asnumpy(), rtol=1e-4,
                                       atol=1e-6, err_msg=k)
    # every bucket computes with the shared values
    it = _BucketIter()
    for batch in it.batches[:3]:
        bucket.forward(batch, is_train=False)
        ref.forward(batch, is_train=False)
        np.testing.assert_allclose(bucket.get_outputs()[0].asnumpy(),
                                   ref.get_outputs()[0].asnumpy(), rtol=1e-5, atol=1e-6)
    # checkpoint round trip
    prefix = str(tmp_path / "bk")
    bucket.save_checkpoint(prefix, 2)
    assert sorted(os.listdir(tmp_path)) == ["bk-0002.params", "bk-3-symbol.json",
                                            "bk-5-symbol.json", "bk-8-symbol.json",
                                            "bk.buckets"]
    loaded = mx.mod.BucketingModule.load(prefix, 2, sym_gen=_bucket_sym, default_bucket_key=8)
    loaded.bind(it.provide_data, it.provide_label, for_training=False)
    batch = it.batches[1]
    loaded.forward(batch)
    bucket.forward(batch, is_train=False)
    np.testing.assert_allclose(loaded.get_outputs()[0].asnumpy(),
                               bucket.get_outputs()[0].asnumpy(), rtol=1e-6)


def test_bucketing_module_errors():
    with pytest.raises(ValueError, match="default_bucket_key"):
        mx.mod.BucketingModule(_bucket_sym)
    bucket = mx.mod.BucketingModule(_bucket_sym, default_bucket_key=8)
    with pytest.raises(mx.base.MXNetError, match="bind"):
        bucket.switch_bucket(5, [("data", (6, 5, 4))])
    with pytest.raises(ValueError, match="sym_gen is required"):
        mx.mod.BucketingModule.load("nothing", 1)


def test_fit_with_monitor_logs_node_stats(mnist, caplog):
    mod = mx.mod.Module(mlp(4))
    mon = mx.monitor.Monitor(2, pattern="fc2.*")
    with caplog.at_level(logging.INFO):
        mod.fit(_batches(mnist, 200, 50), num_epoch=1, monitor=mon)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Batch:")]
    assert lines, [r.getMessage() for r in caplog.records]
    assert all("fc2" in m for m in lines)
    # batches 0 and 2 of the 4 are monitored (logged with the count after them, 1 and 3)
    assert sorted({int(m.split()[1]) for m in lines}) == [1, 3]


def test_symbol_without_labels_binds_with_a_label_iterator(mnist):
    x = mx.sym.FullyConnected(mx.sym.flatten(mx.sym.var("data")), num_hidden=3, name="fc")
    mod = mx.mod.Module(x, label_names=None)
    it = _batches(mnist, 100, 50)
    with pytest.warns(UserWarning, match="label_shapes don't match names"):
        mod.bind(it.provide_data, it.provide_label, for_training=False)
    mod.init_params()
    assert mod.predict(it).shape == (100, 3)


# ---------------------------------------------------------------- SequentialModule

def test_sequential_module_matches_one_module(mnist):
    args, _ = mx.model.load_params(os.path.join(FIX, "trained"), 2)
    args = {k: args[k] for k in ("fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias")}
    x = mx.sym.FullyConnected(mx.sym.flatten(mx.sym.var("data")), num_hidden=16, name="fc1")
    first = mx.sym.Activation(x, act_type="relu", name="relu1")
    second = mx.sym.SoftmaxOutput(
        mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=10, name="fc2"), name="softmax")
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(first, label_names=None))
    seq.add(mx.mod.Module(second), take_labels=True, auto_wiring=True)
    assert seq.data_names == ["data"] and seq.output_names == ["softmax_output"]
    seq.fit(_batches(mnist, 200, 50), num_epoch=2, optimizer_params=SGD, arg_params=args,
            allow_missing=False)
    ref = mx.mod.Module(mlp(16))
    ref.fit(_batches(mnist, 200, 50), num_epoch=2, optimizer_params=SGD, arg_params=args)
    got, want = seq.get_params()[0], ref.get_params()[0]
    assert sorted(got) == sorted(want)
    for k in want:
        np.testing.assert_allclose(got[k].asnumpy(), want[k].asnumpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=k)
    val = _batches(mnist, 100, 50)
    assert seq.score(val, "acc") == ref.score(val, "acc")
    assert seq.output_shapes == [("softmax_output", (50, 10))]


def test_sequential_module_errors():
    seq = mx.mod.SequentialModule()
    with pytest.raises(ValueError, match="empty SequentialModule"):
        seq.bind([("data", (2, 3))])
    with pytest.raises(ValueError, match='Unknown meta "take_label"'):
        seq.add(mx.mod.Module(mlp(2)), take_label=True)
    a = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc")
    b = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc")
    seq.add(mx.mod.Module(a, label_names=None))
    seq.add(mx.mod.Module(b, label_names=None))
    with pytest.raises(ValueError, match="don't match names"):
        seq.bind([("data", (2, 3))])  # without auto_wiring the names must match
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(a, label_names=None))
    seq.add(mx.mod.Module(b, label_names=None), auto_wiring=True)
    seq.bind([("data", (2, 3))])
    with pytest.raises(ValueError, match='Duplicated parameter names: name "fc_weight"'):
        seq.init_params()


def test_modules_without_states():
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(mlp(2)), take_labels=True)
    seq.bind([("data", (2, 1, 28, 28))], [("softmax_label", (2,))])
    seq.init_params()
    assert seq.get_states(merge_multi_context=False) == []
    seq.set_states()
    with pytest.raises(AssertionError, match="no states"):
        seq.get_states()
    with pytest.raises(AssertionError, match="no states"):
        seq.set_states(value=1)


def test_bucketing_load_dict():
    args, auxs = _bucket_init()
    mod = mx.mod.BucketingModule.load_dict({8: _bucket_sym(8)[0]}, _bucket_sym, 8, args, auxs)
    it = _BucketIter()
    mod.bind(it.provide_data, it.provide_label, for_training=False)
    got = mod.get_params()[0]
    for k in args:
        np.testing.assert_array_equal(got[k].asnumpy(), args[k].asnumpy())
    with pytest.raises(ValueError, match="sym_dict needs to be provided"):
        mx.mod.BucketingModule.load_dict(None, _bucket_sym, 8, args, auxs)


# ---- group2ctxs (model parallelism) ---------------------------------------------------
def _grouped_sum():
    with mx.AttrScope(ctx_group="dev1"):
        a = mx.sym.Variable("a") * 2
    with mx.AttrScope(ctx_group="dev2"):
        b = mx.sym.Variable("b")
        c = a + b
    return c


@pytest.mark.parametrize("ctxs, group2ctxs, grad_ctxs", [
    ([mx.cpu(0)], {"dev1": mx.cpu(1), "dev2": mx.cpu(2)}, [mx.cpu(1), mx.cpu(2)]),
    ([mx.cpu(0), mx.cpu(1)], [{"dev1": mx.cpu(2), "dev2": mx.cpu(3)},
                              {"dev1": mx.cpu(4), "dev2": mx.cpu(5)}], None),
    ([mx.cpu(0), mx.cpu(1)], {"dev1": mx.cpu(2), "dev2": [mx.cpu(3)]}, None),
    ([mx.cpu(0), mx.cpu(1)], {"dev1": [mx.cpu(2), mx.cpu(2)], "dev2": [mx.cpu(3), mx.cpu(4)]},
     None),
])
def test_module_group2ctxs_places_groups_and_matches_ungrouped(ctxs, group2ctxs, grad_ctxs):
    shape = (2, 5)
    a = np.random.uniform(-1, 1, shape).astype(np.float32)
    b = np.random.uniform(-1, 1, shape).astype(np.float32)
    head = np.random.uniform(-1, 1, shape).astype(np.float32)
    grads = []
    for g2c in (group2ctxs, None):
        mod = mx.mod.Module(_grouped_sum(), context=ctxs, data_names=["a", "b"],
                            label_names=None, group2ctxs=g2c)
        mod.bind(data_shapes=[("a", shape), ("b", shape)], inputs_need_grad=True)
        mod.init_params()
        mod.forward(mx.io.DataBatch(data=[mx.nd.array(a), mx.nd.array(b)]), is_train=True)
        np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), 2 * a + b, rtol=1e-6)
        mod.backward([mx.nd.array(head)])
        grads.append(mod.get_input_grads())
    if grad_ctxs is not None:
        assert [g.context for g in grads[0]] == grad_ctxs
    np.testing.assert_allclose(grads[0][0].asnumpy(), 2 * head, rtol=1e-6)
    np.testing.assert_allclose(grads[0][1].asnumpy(), head, rtol=1e-6)
    for g, h in zip(grads[0], grads[1]):
        np.testing.assert_array_equal(g.asnumpy(), h.asnumpy())


def test_module_group2ctxs_bad_inputs():
    sym = _grouped_sum()
    with pytest.raises(mx.MXNetError, match="one dict per context"):
        mx.mod.Module(sym, context=[mx.cpu(0), mx.cpu(1)], data_names=["a", "b"],
                      label_names=None, group2ctxs=[{"dev1": mx.cpu(1), "dev2": mx.cpu(2)}])
    with pytest.raises(mx.MXNetError, match="needs 1 or 2 contexts"):
        mx.mod.Module(sym, context=[mx.cpu(0), mx.cpu(1)], data_names=["a", "b"],
                      label_names=None, group2ctxs={"dev1": [mx.cpu(1)] * 3, "dev2": mx.cpu(2)})
    mod = mx.mod.Module(sym, context=[mx.cpu(0)], data_names=["a", "b"], label_names=None,
                        group2ctxs={"dev1": mx.cpu(1)})
    with pytest.raises(mx.MXNetError, match="group 'dev2'"):
        mod.bind(data_shapes=[("a", (2, 5)), ("b", (2, 5))])


def test_bucketing_module_group2ctxs_binds():
    def sym_gen(key):
        with mx.AttrScope(ctx_group="dev1"):
            fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=4, name="fc1")
        with mx.AttrScope(ctx_group="dev2"):
            out = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(fc, num_hidden=3, name="fc2"),
                                       mx.sym.Variable("label"), name="softmax")
        return out, ("data",), ("label",)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=10, context=[mx.cpu(0)],
                                 group2ctxs=[{"dev1": mx.cpu(1), "dev2": mx.cpu(2)}])
    mod.bind(data_shapes=[("data", (5, 6))], label_shapes=[("label", (5,))],
             inputs_need_grad=True)
    mod.init_params()
    mod.forward(mx.io.DataBatch(data=[mx.nd.ones((5, 6))], label=[mx.nd.zeros((5,))],
                                bucket_key=10, provide_data=[("data", (5, 6))],
                                provide_label=[("label", (5,))]))
    assert mod.get_outputs()[0].shape == (5, 3)
    assert mod._curr_module._execs[0].arg_dict["fc2_weight"].context == mx.cpu(2)


def test_bucketing_module_names_arguments_alike_in_every_bucket():
    # MXNet calls sym_gen under a fresh NameManager: automatic names do not drift
    def sym_gen(key):
        embed = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=20, output_dim=4)
        fc = mx.sym.FullyConnected(mx.sym.Reshape(embed, shape=(-1, 4)), num_hidden=3)
        out = mx.sym.SoftmaxOutput(fc, mx.sym.Reshape(mx.sym.Variable("softmax_label"),
                                                      shape=(-1,)), name="softmax")
        return out, ("data",), ("softmax_label",)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=6, context=[mx.cpu(0)])
    mod.bind([("data", (2, 6))], [("softmax_label", (2, 6))])
    mod.init_params()
    assert mod.symbol.list_arguments()[1] == "embedding0_weight"
    mod.switch_bucket(3, [("data", (2, 3))], [("softmax_label", (2, 3))])
    assert mod.symbol.list_arguments() == mod._buckets[6].symbol.list_arguments()
    assert mod.symbol.list_arguments()[2] == "fullyconnected0_weight"
