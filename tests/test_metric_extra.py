"""mx.metric additions: PCC (multi-class MCC), PearsonCorrelation's macro/micro
averages, and create() from a get_config() dict or its JSON; NumPy as the oracle."""

import json

import numpy as np
import pytest

import oxnet as mx
from oxnet import nd


def _np_mcc_k(cm):
    n = cm.sum()
    x, y = cm.sum(1), cm.sum(0)
    return (np.trace(cm) * n - (x * y).sum()) / np.sqrt(((n * n - (x * x).sum()) *
                                                          (n * n - (y * y).sum())))


def test_pcc_binary_equals_mcc_and_multiclass_matches_numpy():
    rng = np.random.RandomState(0)
    label = rng.randint(0, 2, 40)
    pred = rng.uniform(size=(40, 2))
    pcc, mcc = mx.metric.create("pcc"), mx.metric.create("mcc")
    pcc.update([nd.array(label)], [nd.array(pred)])
    mcc.update([nd.array(label)], [nd.array(pred)])
    np.testing.assert_allclose(pcc.get()[1], mcc.get()[1], rtol=1e-6)
    # 4 classes, given as indices, over two updates; the matrix grows as classes appear
    pcc = mx.metric.PCC()
    la, pa = rng.randint(0, 4, 50), rng.randint(0, 4, 50)
    pcc.update([nd.array(la[:25])], [nd.array(pa[:25])])
    pcc.update([nd.array(la[25:])], [nd.array(pa[25:])])
    cm = np.zeros((4, 4))
    np.add.at(cm, (pa, la), 1)
    np.testing.assert_allclose(pcc.get()[1], _np_mcc_k(cm), rtol=1e-6)
    pcc.reset_local()
    assert np.isnan(pcc.get()[1])
    np.testing.assert_allclose(pcc.get_global()[1], _np_mcc_k(cm), rtol=1e-6)


@pytest.mark.parametrize("average", ["macro", "micro"])
def test_pearson_averages(average):
    rng = np.random.RandomState(1)
    a, b = rng.uniform(size=(3, 4)), rng.uniform(size=(3, 4))
    c, d = rng.uniform(size=(5, 4)), rng.uniform(size=(5, 4))
    m = mx.metric.create("pearsonr", average=average)
    assert np.isnan(m.get()[1])
    m.update([nd.array(a)], [nd.array(b)])
    m.update([nd.array(c)], [nd.array(d)])
    r1 = np.corrcoef(b.ravel(), a.ravel())[0, 1]
    r2 = np.corrcoef(d.ravel(), c.ravel())[0, 1]
    rall = np.corrcoef(np.concatenate([b.ravel(), d.ravel()]),
                       np.concatenate([a.ravel(), c.ravel()]))[0, 1]
    want = (r1 + r2) / 2 if average == "macro" else rall
    np.testing.assert_allclose(m.get()[1], want, rtol=1e-5)


def test_create_from_config_and_json():
    for metric in [mx.metric.Accuracy(axis=0), mx.metric.PCC(),
                   mx.metric.create(["acc", "f1"]), mx.metric.Perplexity(-1)]:
        cfg = metric.get_config()
        again = mx.metric.create(json.dumps(cfg))
        assert type(again) is type(metric)
        assert again.get_config() == cfg
        assert mx.metric.create(dict(cfg)).get_config() == cfg
    with pytest.raises(ValueError):
        mx.metric.create('{"metric": "nosuchmetric"}')


def _np_f1(label, pred):
    p = pred.argmax(1)
    tp = ((p == 1) & (label == 1)).sum()
    fp = ((p == 1) & (label == 0)).sum()
    fn = ((p == 0) & (label == 1)).sum()
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    return 2 * prec * rec / (prec + rec) if prec + rec else 0.0


@pytest.mark.parametrize("average", ["macro", "micro"])
def test_f1_global_survives_reset_local(average):
    rng = np.random.RandomState(2)
    batches = [(rng.randint(0, 2, 10), rng.uniform(size=(10, 2))) for _ in range(4)]
    m = mx.metric.F1(average=average)
    for label, pred in batches:
        m.update([nd.array(label)], [nd.array(pred)])
        m.reset_local()
    if average == "macro":
        want = np.mean([_np_f1(l, p) for l, p in batches])
    else:
        want = _np_f1(np.concatenate([l for l, _ in batches]),
                      np.concatenate([p for _, p in batches]))
    np.testing.assert_allclose(m.get_global()[1], want, rtol=1e-6)
    assert np.isnan(m.get()[1])
    label, pred = batches[0]
    m.update([nd.array(label)], [nd.array(pred)])
    np.testing.assert_allclose(m.get()[1], _np_f1(label, pred), rtol=1e-6)


def test_perplexity_clips_out_of_range_labels_and_ignores_padding():
    # MXNet picks with mode='clip': a label >= classes reads the last class, and the
    # ignore_label (-1, padding) is left out of the count
    pred = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3], [0.25, 0.25, 0.5]], np.float32)
    label = np.array([7, -1, 1], np.float32)
    m = mx.metric.Perplexity(ignore_label=-1)
    m.update([nd.array(label)], [nd.array(pred)])
    want = np.exp(-(np.log(0.5) + np.log(0.25)) / 2)
    assert abs(m.get()[1] - want) < 1e-6
    m = mx.metric.Perplexity(ignore_label=None)
    m.update([nd.array([5.0, 0.0])], [nd.array(pred[:2])])
    assert abs(m.get()[1] - np.exp(-(np.log(0.5) + np.log(0.6)) / 2)) < 1e-6
