"""mx.model checkpoints (save_checkpoint / load_checkpoint / load_params) against
files written by MXNet 1.9.1 (tests/fixtures/checkpoint/), and mx.callback's log
lines in MXNet's formats."""

import json
import logging
import os
import re

import numpy as np
import pytest

import oxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "fixtures", "checkpoint")


def _run(sym, arg_params, aux_params, x):
    args = dict(arg_params)
    args["data"] = mx.nd.array(x)
    args["softmax_label"] = mx.nd.zeros((x.shape[0],))
    exe = sym.bind(mx.cpu(), args=args, aux_states=dict(aux_params), grad_req="null")
    return exe.forward(is_train=False)[0].asnumpy()


def test_load_checkpoint_written_by_mxnet():
    sym, arg_params, aux_params = mx.model.load_checkpoint(os.path.join(FIX, "small"), 3)
    assert isinstance(sym, mx.sym.Symbol)
    assert sorted(arg_params) == ["bn0_beta", "bn0_gamma", "conv0_bias", "conv0_weight",
                                  "fc0_bias", "fc0_weight"]
    assert sorted(aux_params) == ["bn0_moving_mean", "bn0_moving_var"]
    assert arg_params["conv0_weight"].shape == (4, 3, 3, 3)
    assert arg_params["fc0_weight"].shape == (5, 36)
    io = np.load(os.path.join(FIX, "small_io.npz"))
    np.testing.assert_allclose(_run(sym, arg_params, aux_params, io["x"]), io["y"],
                               rtol=1e-5, atol=1e-6)


def test_save_load_round_trip(tmp_path):
    sym, arg_params, aux_params = mx.model.load_checkpoint(os.path.join(FIX, "small"), 3)
    prefix = str(tmp_path / "net")
    mx.model.save_checkpoint(prefix, 12, sym, arg_params, aux_params)
    assert os.path.exists(prefix + "-symbol.json")
    assert os.path.exists(prefix + "-0012.params")
    raw = mx.nd.load(prefix + "-0012.params")
    assert sorted(raw) == sorted(["arg:" + k for k in arg_params] +
                                 ["aux:" + k for k in aux_params])
    sym2, arg2, aux2 = mx.model.load_checkpoint(prefix, 12)
    assert sym2.tojson() == sym.tojson()
    for src, dst in ((arg_params, arg2), (aux_params, aux2)):
        assert sorted(src) == sorted(dst)
        for k in src:
            np.testing.assert_array_equal(src[k].asnumpy(), dst[k].asnumpy())
    arg3, aux3 = mx.model.load_params(prefix, 12)
    assert sorted(arg3) == sorted(arg_params) and sorted(aux3) == sorted(aux_params)


def test_save_checkpoint_without_symbol_and_empty(tmp_path, caplog):
    prefix = str(tmp_path / "only")
    mx.model.save_checkpoint(prefix, 0, None, {"w": mx.nd.ones((2,))}, {})
    assert not os.path.exists(prefix + "-symbol.json")
    arg, aux = mx.model.load_params(prefix, 0)
    assert list(arg) == ["w"] and aux == {}
    mx.model.save_checkpoint(prefix, 1, None, {}, {})
    with caplog.at_level(logging.WARNING):
        assert mx.model.load_params(prefix, 1) == ({}, {})
    assert "is empty" in caplog.text


def test_load_missing_checkpoint_raises(tmp_path):
    with pytest.raises(mx.base.MXNetError, match="nope-0001.params"):
        mx.model.load_params(str(tmp_path / "nope"), 1)


def test_load_params_without_names_raises(tmp_path):
    prefix = str(tmp_path / "lst")
    mx.nd.save(prefix + "-0001.params", [mx.nd.ones((2,))])
    with pytest.raises(ValueError, match="arg:"):
        mx.model.load_params(prefix, 1)


def test_do_checkpoint_period(tmp_path, caplog):
    sym, arg_params, aux_params = mx.model.load_checkpoint(os.path.join(FIX, "small"), 3)
    prefix = str(tmp_path / "cb")
    cb = mx.callback.do_checkpoint(prefix, period=2)
    with caplog.at_level(logging.INFO):
        for epoch in range(4):
            cb(epoch, sym, arg_params, aux_params)
    files = sorted(os.listdir(tmp_path))
    assert files == ["cb-0002.params", "cb-0004.params", "cb-symbol.json"]
    assert 'Saved checkpoint to "%s-0002.params"' % prefix in caplog.text


class _FakeModule:
    def __init__(self):
        self.calls = []

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False):
        self.calls.append((prefix, epoch, save_optimizer_states))


def test_module_checkpoint_period():
    mod = _FakeModule()
    cb = mx.callback.module_checkpoint(mod, "p", period=3, save_optimizer_states=True)
    for epoch in range(7):
        cb(epoch)
    assert mod.calls == [("p", 3, True), ("p", 6, True)]


def _metric(acc_pairs):
    m = mx.metric.Accuracy()
    for pred, label in acc_pairs:
        m.update([mx.nd.array(label)], [mx.nd.array(pred)])
    return m


def _param(epoch, nbatch, metric):
    return mx.model.BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=metric,
                                  locals=None)


def test_batch_end_param_fields():
    p = _param(1, 2, None)
    assert (p.epoch, p.nbatch, p.eval_metric, p.locals) == (1, 2, None, None)
    assert type(p).__name__ == "BatchEndParams"


def test_log_train_metric(caplog):
    m = _metric([([[0.1, 0.9], [0.8, 0.2]], [1, 1])])
    cb = mx.callback.log_train_metric(period=2, auto_reset=True)
    with caplog.at_level(logging.INFO):
        cb(_param(3, 1, m))
        assert caplog.text == ""
        cb(_param(3, 2, m))
    assert caplog.records[-1].getMessage() == "Iter[3] Batch[2] Train-accuracy=0.500000"
    # auto_reset cleared the local state, the global one is kept
    assert m.get_name_value()[0][0] == "accuracy"
    assert m.num_inst == 0 and m.global_num_inst == 2


def test_speedometer_lines(caplog):
    m = _metric([([[0.1, 0.9], [0.8, 0.2]], [1, 0])])
    sp = mx.callback.Speedometer(batch_size=4, frequent=2)
    with caplog.at_level(logging.INFO):
        for nbatch in range(5):
            sp(_param(0, nbatch, m))
    msgs = [r.getMessage() for r in caplog.records]
    assert len(msgs) == 2
    pat = r"Epoch\[0\] Batch \[%d-%d\]\tSpeed: (\d+\.\d\d|inf) samples/sec\taccuracy=%s"
    assert re.fullmatch(pat % (0, 2, "1.000000"), msgs[0]), msgs[0]
    # auto_reset: the second line counts only batches since the first (none updated)
    assert re.fullmatch(pat % (2, 4, "nan"), msgs[1]), msgs[1]


def test_speedometer_no_reset_and_no_metric(caplog):
    m = _metric([([[0.1, 0.9]], [1])])
    sp = mx.callback.Speedometer(batch_size=1, frequent=1, auto_reset=False)
    sp2 = mx.callback.Speedometer(batch_size=1, frequent=1)
    with caplog.at_level(logging.INFO):
        sp(_param(2, 0, m))
        sp(_param(2, 1, m))
        sp2(_param(5, 0, None))
        sp2(_param(5, 1, None))
        # a smaller batch count means a new epoch: the timer restarts, nothing logged
        sp2(_param(6, 0, None))
    msgs = [r.getMessage() for r in caplog.records]
    assert len(msgs) == 2
    assert re.fullmatch(r"Epoch\[2\] Batch \[0-1\]\tSpeed: \S+ samples/sec\taccuracy=1\.000000",
                        msgs[0]), msgs[0]
    assert re.fullmatch(r"Iter\[5\] Batch \[1\]\tSpeed: \S+ samples/sec", msgs[1]), msgs[1]


def test_progress_bar(caplog):
    bar = mx.callback.ProgressBar(total=4, length=8)
    with caplog.at_level(logging.INFO):
        bar(_param(0, 1, None))
        bar(_param(0, 3, None))
    msgs = [r.getMessage() for r in caplog.records]
    assert msgs == ["[==------] 25%\r", "[======--] 75%\r"]


def test_log_validation_metrics(caplog):
    cb = mx.callback.LogValidationMetricsCallback()
    m = _metric([([[0.1, 0.9], [0.8, 0.2]], [1, 1])])
    with caplog.at_level(logging.INFO):
        cb(_param(4, 0, None))
        cb(_param(4, 0, m))
    assert [r.getMessage() for r in caplog.records] == ["Epoch[4] Validation-accuracy=0.500000"]


# ---------------------------------------------------------------- FeedForward

def _mnist():
    return mx.test_utils.get_mnist(path=os.path.join(HERE, os.pardir, "data", "mnist-subset"))


def _softmax_regression():
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.flatten(mx.sym.var("data")),
                                                      num_hidden=10, name="fc"),
                                name="softmax")


def test_feedforward_matches_mxnet(caplog, tmp_path):
    with open(os.path.join(FIX, "feedforward.json")) as f:
        ref = json.load(f)
    d = _mnist()
    x, y = d["train_data"][:1000], d["train_label"][:1000]
    xt, yt = d["test_data"][:300], d["test_label"][:300]
    rng = np.random.RandomState(0)
    args = {"fc_weight": mx.nd.array(rng.standard_normal((10, 784)).astype("float32") * 0.01),
            "fc_bias": mx.nd.zeros(10)}
    calls = []
    with pytest.warns(DeprecationWarning, match="FeedForward has been deprecated"):
        model = mx.model.FeedForward(_softmax_regression(), num_epoch=2, epoch_size=7,
                                     learning_rate=0.1, momentum=0.9, arg_params=args)
    with caplog.at_level(logging.INFO):
        model.fit(mx.io.NDArrayIter(x, y, 100), eval_data=mx.io.NDArrayIter(xt, yt, 100),
                  batch_end_callback=lambda p: calls.append([p.epoch, p.nbatch]))
    assert calls == ref["calls"]
    assert [r.getMessage() for r in caplog.records
            if "Time cost" not in r.getMessage()] == ref["log"]
    np.testing.assert_allclose(model.arg_params["fc_bias"].asnumpy(), ref["bias"], rtol=1e-4,
                               atol=1e-6)
    assert model.score(mx.io.NDArrayIter(xt, yt, 100)) == pytest.approx(ref["score"])
    pred = model.predict(xt[:250])
    assert pred.shape == (250, 10)
    np.testing.assert_allclose(pred[:2], ref["pred2"], rtol=1e-4, atol=1e-6)
    out, data, label = model.predict(mx.io.NDArrayIter(xt[:250], yt[:250], 100),
                                     return_data=True)
    assert out.shape == (250, 10) and data.shape == (250, 1, 28, 28) and label.shape == (250,)
    np.testing.assert_array_equal(label, yt[:250])
    # save / load
    prefix = str(tmp_path / "ff")
    model.save(prefix)
    assert sorted(os.listdir(tmp_path)) == ["ff-0002.params", "ff-symbol.json"]
    with pytest.warns(DeprecationWarning):
        loaded = mx.model.FeedForward.load(prefix, 2)
    assert loaded.begin_epoch == 2
    np.testing.assert_allclose(loaded.predict(xt[:250]), pred, rtol=1e-6)


def test_feedforward_create_from_numpy_and_errors():
    d = _mnist()
    np.random.seed(0)
    with pytest.warns(DeprecationWarning):
        model = mx.model.FeedForward.create(_softmax_regression(), d["train_data"][:2000],
                                            d["train_label"][:2000], num_epoch=3,
                                            learning_rate=0.1, momentum=0.9,
                                            initializer=mx.init.Xavier())
    assert model.score(mx.io.NDArrayIter(d["test_data"], d["test_label"], 100)) > 0.8
    with pytest.raises(ValueError, match="y must be specified"):
        model.fit(d["train_data"][:10])
    with pytest.raises(ValueError, match="numbers of data points and labels not equal"):
        model.fit(d["train_data"][:10], d["train_label"][:9])
    with pytest.raises(TypeError, match="X must be DataIter"):
        model.predict([1, 2, 3])
    a = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    dup = mx.sym.FullyConnected(a, num_hidden=2, name="fc")
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="duplicated"):
        mx.model.FeedForward(dup)
