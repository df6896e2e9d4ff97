"""gluon.contrib.estimator: the Estimator's fit/evaluate loops, default metrics and
handlers, argument checks, logging lines, checkpoints (save, rotate, resume), early
stopping and the batch processor; training results checked against NumPy."""

import io
import logging
import os
import re

import numpy as np
import pytest

import oxnet as mx
from oxnet import gluon, nd
from oxnet.gluon import nn
from oxnet.gluon.contrib.estimator import (BatchProcessor, CheckpointHandler,
                                           EarlyStoppingHandler, Estimator, EpochEnd,
                                           GradientUpdateHandler, LoggingHandler,
                                           MetricHandler, StoppingHandler, ValidationHandler)
from oxnet.gluon.contrib.estimator import event_handler


def _data(n=12, batch=4, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, (n, 3)).astype(np.float32)
    y = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
    ds = gluon.data.ArrayDataset(nd.array(x), nd.array(y))
    return gluon.data.DataLoader(ds, batch_size=batch), x, y


def _est(net=None, lr=0.1, **kw):
    net = net or nn.Dense(2, in_units=3)
    net.initialize(mx.init.Constant(0.1), ctx=mx.cpu())
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr})
    return Estimator(net=net, loss=gluon.loss.L2Loss(), trainer=trainer, context=mx.cpu(),
                     **kw)


def test_fit_matches_numpy_sgd():
    loader, x, y = _data()
    est = _est(train_metrics=mx.metric.MSE())
    est.logger.setLevel(logging.WARNING)
    est.fit(loader, epochs=2)
    w = np.full((2, 3), 0.1, np.float32)
    b = np.zeros((2,), np.float32)   # Dense keeps its zeros bias initializer
    for _ in range(2):
        for i in range(0, 12, 4):
            xb, yb = x[i:i + 4], y[i:i + 4]
            d = xb @ w.T + b - yb          # dL/dpred of L2Loss (0.5*err^2 per element, mean)
            gw = d.T @ xb / 2 / 4          # mean over 2 outputs, sum over batch / batch
            gb = d.sum(0) / 2 / 4
            w -= 0.1 * gw
            b -= 0.1 * gb
    np.testing.assert_allclose(est.net.weight.data().asnumpy(), w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(est.net.bias.data().asnumpy(), b, rtol=1e-5, atol=1e-6)
    # the training metric saw the last epoch's predictions
    assert est.train_metrics[0].name == "training mse"
    assert est.val_metrics[0].name == "validation mse"


def test_default_metrics_and_names():
    net = nn.Dense(4, in_units=3)
    est = Estimator(net, loss=gluon.loss.SoftmaxCrossEntropyLoss())
    names = [m.name for m in est.train_metrics]
    assert names[0] == "training accuracy" and names[1].startswith("training softmaxcrossentropyloss")
    assert isinstance(est.train_metrics[0], mx.metric.Accuracy)
    assert isinstance(est.train_metrics[1], mx.metric.Loss)
    assert [m.name for m in est.val_metrics] == [n.replace("training", "validation") for n in names]
    assert est.val_metrics[0] is not est.train_metrics[0]


def test_argument_checks():
    net = nn.Dense(2, in_units=3)
    loss = gluon.loss.L2Loss()
    with pytest.raises(ValueError):
        Estimator(net, loss="mse")
    with pytest.raises(ValueError):
        Estimator(net, loss=loss, train_metrics="acc")
    with pytest.raises(ValueError):
        Estimator(net, loss=loss, context="cpu")
    with pytest.raises(AssertionError):
        Estimator(net, loss=loss, context=[mx.gpu(100)])
    with pytest.raises(ValueError):
        Estimator(net, loss=loss, trainer="sgd")
    with pytest.warns(UserWarning, match="No trainer specified"):
        est = Estimator(net, loss=loss)
    with pytest.warns(UserWarning, match="Network already fully initialized"):
        Estimator(net, loss=loss, initializer=mx.init.Xavier(), trainer=est.trainer)
    loader, _, _ = _data()
    with pytest.raises(ValueError):
        est.fit(mx.io.NDArrayIter(nd.ones((4, 3)), nd.ones((4, 2)), batch_size=2), epochs=1)
    with pytest.raises(ValueError):
        est.fit(loader)                       # neither epochs nor batches
    with pytest.raises(ValueError):
        est.fit(loader, epochs=1, batches=2)  # both
    with pytest.raises(ValueError):
        est.fit(loader, epochs=1, event_handlers=[LoggingHandler(metrics=[mx.metric.RMSE()])])
    with pytest.raises(ValueError):
        LoggingHandler(log_interval="batch")


def test_default_handler_order():
    est = _est()
    early = EarlyStoppingHandler(monitor=est.val_metrics[0])
    hs = est._prepare_default_handlers(val_data=None, event_handlers=[early])
    kinds = [type(h) for h in hs]
    assert kinds == [GradientUpdateHandler, MetricHandler, EarlyStoppingHandler,
                     StoppingHandler, LoggingHandler] or \
        kinds == [GradientUpdateHandler, MetricHandler, StoppingHandler,
                  EarlyStoppingHandler, LoggingHandler]


def test_logging_lines():
    loader, _, _ = _data(n=20, batch=4)
    net = nn.Dense(2, in_units=3)
    net.initialize()
    est = Estimator(net, loss=gluon.loss.L2Loss(), train_metrics=mx.metric.MAE(),
                    trainer=gluon.Trainer(net.collect_params(), "sgd"))
    buf = io.StringIO()
    est.logger.handlers = [logging.StreamHandler(buf)]
    handler = LoggingHandler(log_interval=2, metrics=est.train_metrics)
    est.fit(loader, epochs=1, event_handlers=[handler])
    lines = buf.getvalue().splitlines()
    assert lines[0] == "Training begin: using optimizer SGD with current learning rate 0.0100 "
    assert lines[1] == "Train for 1 epochs."
    assert lines[2] == "[Epoch 0] Begin, current learning rate: 0.0100"
    batch = [l for l in lines if l.startswith("[Epoch 0][Batch")]
    assert len(batch) == 3     # batches 0, 2, 4 of 5
    assert re.match(r"\[Epoch 0\]\[Batch 2\]\[Samples 12\] time/interval: \d+\.\d{3}s "
                    r"training mae: \d+\.\d{4}$", batch[1])
    assert re.match(r"\[Epoch 0\] Finished in \d+\.\d{3}s, training mae: \d+\.\d{4}$", lines[-2])
    assert re.match(r"Train finished using total \d+s with 1 epochs. training mae: \d+\.\d{4}$",
                    lines[-1])
    assert handler.current_epoch == 1 and handler.batch_index == 0


def test_stopping_by_batches_and_custom_handler():
    loader, _, _ = _data(n=12, batch=4)

    class Count(EpochEnd):
        def __init__(self):
            self.n = 0

        def epoch_end(self, estimator, *args, **kwargs):
            self.n += 1
            return self.n == 2

    est = _est()
    est.logger.setLevel(logging.WARNING)
    stop = StoppingHandler()
    est.fit(loader, batches=7, event_handlers=[stop])
    assert stop.current_batch == 7 and stop.current_epoch == 3
    count = Count()
    est.fit(loader, epochs=10, event_handlers=[count])
    assert count.n == 2


def test_validation_and_evaluate():
    loader, x, y = _data()
    est = _est(train_metrics=mx.metric.MSE(), val_loss=gluon.loss.L1Loss())
    est.logger.setLevel(logging.WARNING)
    seen = []

    class Spy(EpochEnd):
        def epoch_end(self, estimator, *args, **kwargs):
            seen.append(estimator.val_metrics[0].get()[1])

    val = ValidationHandler(val_data=loader, eval_fn=est.evaluate, event_handlers=Spy())
    est.fit(loader, val_data=loader, epochs=2, event_handlers=[val])
    assert len(seen) == 2
    est.evaluate(loader)
    w = est.net.weight.data().asnumpy()
    b = est.net.bias.data().asnumpy()
    np.testing.assert_allclose(est.val_metrics[0].get()[1],
                               np.mean((x @ w.T + b - y) ** 2), rtol=1e-5)
    with pytest.raises(ValueError):
        est.evaluate([nd.ones((2, 3))])


def test_checkpoint_save_rotate_resume(tmp_path):
    loader, _, _ = _data(n=12, batch=4)
    est = _est(train_metrics=mx.metric.MSE())
    est.logger.setLevel(logging.ERROR)
    ck = CheckpointHandler(str(tmp_path), model_prefix="m", monitor=est.train_metrics[0],
                           save_best=True, mode="min", max_checkpoints=2)
    est.fit(loader, epochs=3, event_handlers=[ck])
    files = sorted(os.listdir(tmp_path))
    assert files == ["m-best.params", "m-best.states", "m-epoch1batch6.params",
                     "m-epoch1batch6.states", "m-epoch2batch9.params", "m-epoch2batch9.states"]
    saved = est.net.weight.data().asnumpy()

    est2 = _est(train_metrics=mx.metric.MSE())
    est2.logger.setLevel(logging.ERROR)
    ck2 = CheckpointHandler(str(tmp_path), model_prefix="m", max_checkpoints=2,
                            resume_from_checkpoint=True)
    est2.max_epoch = 5
    est2.max_batch = None
    ck2._resume_from_checkpoint(est2)
    np.testing.assert_allclose(est2.net.weight.data().asnumpy(), saved)
    assert est2.max_epoch == 2
    est2.fit(loader, epochs=5, event_handlers=[CheckpointHandler(
        str(tmp_path), model_prefix="m", max_checkpoints=2, resume_from_checkpoint=True)])
    assert est2.max_epoch == 2
    assert os.path.isfile(tmp_path / "m-epoch4batch15.params")
    with pytest.raises(ValueError):
        CheckpointHandler(str(tmp_path), save_best=True)     # save_best needs a monitor


def test_checkpoint_symbol_for_hybridized(tmp_path):
    loader, _, _ = _data()
    net = nn.HybridSequential()
    net.add(nn.Dense(2, in_units=3))
    net.hybridize()
    est = _est(net=net)
    est.logger.setLevel(logging.ERROR)
    est.fit(loader, batches=2, event_handlers=[CheckpointHandler(
        str(tmp_path), model_prefix="h", epoch_period=None, batch_period=1)])
    assert os.path.isfile(tmp_path / "h-symbol.json")
    sym = mx.sym.load(str(tmp_path / "h-symbol.json"))
    assert "data" in sym.list_arguments()


def test_early_stopping():
    loader, _, _ = _data()
    est = _est(train_metrics=mx.metric.MSE())
    est.logger.setLevel(logging.WARNING)
    # with mode='max', a decreasing MSE never improves after the first epoch
    es = EarlyStoppingHandler(monitor=est.train_metrics[0], patience=1, mode="max")
    est.fit(loader, epochs=10, event_handlers=[es])
    assert es.current_epoch == 2 and es.stopped_epoch == 1
    with pytest.raises(ValueError):
        EarlyStoppingHandler(monitor="mse")
    with pytest.raises(ValueError):
        EarlyStoppingHandler(monitor=mx.metric.CompositeEvalMetric())


def test_custom_batch_processor():
    loader, _, _ = _data()
    calls = []

    class Counting(BatchProcessor):
        def fit_batch(self, estimator, train_batch, batch_axis=0):
            calls.append(train_batch[0].shape)
            return super().fit_batch(estimator, train_batch, batch_axis)

    est = _est(batch_processor=Counting())
    est.logger.setLevel(logging.WARNING)
    est.fit(loader, epochs=1)
    assert calls == [(4, 3)] * 3
    with pytest.raises(ValueError):
        _est(batch_processor=object())


def test_handlers_must_be_event_handlers():
    with pytest.raises(ValueError):
        event_handler._check_event_handlers([object()])
