"""gluon.Trainer details as MXNet 1.9.1: lr schedules step once per update on several
devices, the default update_on_kvstore, loading parameters drops the store's copy,
update()/allreduce_grads() refuse when the store runs the optimizer; and
contrib.amp's loss scaling (scaled gradients come out unscaled, overflow skips)."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon, nd
from oxnet.contrib import amp


def _step(trainer, x, grad_scale=1.0):
    with autograd.record():
        for w in x.list_data():
            (w * grad_scale + 1).backward()
    trainer.step(1)


@pytest.mark.parametrize("update_on_kvstore", [None, False])
def test_lr_schedule_two_devices(update_on_kvstore):
    x = gluon.Parameter("x", shape=(3,))
    x.initialize(ctx=[mx.cpu(0), mx.cpu(1)], init="zeros")
    sched = mx.lr_scheduler.FactorScheduler(2, factor=0.1, base_lr=1.0)
    kw = {} if update_on_kvstore is None else {"update_on_kvstore": update_on_kvstore}
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0, "lr_scheduler": sched}, **kw)
    lrs = []
    for _ in range(6):
        _step(trainer, x)
        lrs.append(trainer.learning_rate)
    np.testing.assert_allclose(lrs, [1, 1, 0.1, 0.1, 0.01, 0.01], rtol=1e-6)
    assert trainer._update_on_kvstore is (update_on_kvstore is None)
    # weights: both devices' gradients (1 each) summed, times the lr in force
    want = -2 * (1 + 1 + 0.1 + 0.1 + 0.01 + 0.01)
    for w in x.list_data():
        np.testing.assert_allclose(w.asnumpy(), np.full(3, want), rtol=1e-5)


def test_update_on_kvstore_refuses_manual_update_and_reset_on_load(tmp_path):
    params = gluon.ParameterDict()
    x = params.get("x", shape=(4,))
    params.initialize(ctx=[mx.cpu(0), mx.cpu(1)], init="zeros")
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.1}, kvstore="device")
    fname = str(tmp_path / "p.params")
    params.save(fname)
    _step(trainer, x)
    assert trainer._update_on_kvstore
    with pytest.raises(AssertionError):
        trainer.update(1)
    with pytest.raises(AssertionError):
        trainer.allreduce_grads()
    params.load(fname)
    assert trainer._kvstore is None and not trainer._kv_initialized
    _step(trainer, x)
    for w in x.list_data():
        np.testing.assert_allclose(w.asnumpy(), np.full(4, -0.2), rtol=1e-6)


def test_amp_loss_scaling():
    net = gluon.nn.Dense(1, in_units=2, use_bias=False)
    net.initialize(mx.init.Constant(1.0))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    amp.init_trainer(trainer)
    scaler = trainer._amp_loss_scaler
    assert scaler.loss_scale == 2.0 ** 16
    x = nd.array([[1.0, 2.0]])
    with autograd.record():
        loss = net(x).sum()
        with amp.scale_loss(loss, trainer) as scaled:
            np.testing.assert_allclose(scaled.asnumpy(), loss.asnumpy() * 2.0 ** 16)
            autograd.backward(scaled)
    trainer.step(1)
    # d loss / d w = x; the scale is undone by the trainer: w = 1 - 0.5 * x
    np.testing.assert_allclose(net.weight.data().asnumpy(), [[0.5, 0.0]], rtol=1e-6)
    # an overflowing step is skipped and the scale halves
    with autograd.record():
        loss = net(nd.array([[np.inf, 1.0]])).sum()
        with amp.scale_loss(loss, trainer) as scaled:
            autograd.backward(scaled)
    trainer.step(1)
    np.testing.assert_allclose(net.weight.data().asnumpy(), [[0.5, 0.0]], rtol=1e-6)
    assert scaler.loss_scale == 2.0 ** 15
    with pytest.raises(TypeError):
        amp.init_trainer(mx.optimizer.SGD())
    plain = gluon.Trainer(net.collect_params(), "sgd")
    with pytest.raises(AssertionError):
        with amp.scale_loss(loss, plain):
            pass


def test_amp_unscale():
    net = gluon.nn.Dense(1, in_units=2, use_bias=False)
    net.initialize(mx.init.Constant(1.0))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1.0})
    amp.init_trainer(trainer)
    with autograd.record():
        loss = net(nd.array([[3.0, 4.0]])).sum()
        with amp.scale_loss(loss, trainer) as scaled:
            autograd.backward(scaled)
    amp.unscale(trainer)
    np.testing.assert_allclose(net.weight.grad().asnumpy(), [[3.0, 4.0]], rtol=1e-6)
    trainer.step(1)
    np.testing.assert_allclose(net.weight.data().asnumpy(), [[-2.0, -3.0]], rtol=1e-6)


def test_custom_store_without_optimizer_sums_gradients():
    x = gluon.Parameter("x", shape=(5,))
    x.initialize(ctx=[mx.cpu(0), mx.cpu(1)], init="zeros")
    kv = mx.kv.create("teststore")
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0}, kvstore=kv)
    _step(trainer, x)
    assert trainer._update_on_kvstore is False
    for w in x.list_data():
        np.testing.assert_allclose(w.asnumpy(), np.full(5, -2.0))
    bad = gluon.Trainer([x], "sgd", kvstore=mx.kv.create("teststore"), update_on_kvstore=True)
    with pytest.raises(ValueError):
        bad._init_kvstore()
