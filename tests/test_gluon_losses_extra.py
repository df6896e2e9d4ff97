"""PoissonNLLLoss, SDMLLoss and CTCLoss's argument checks against NumPy formulas,
with gradients checked numerically."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon, nd

MXNetError = mx.base.MXNetError


def _np_poisson(pred, target, from_logits, full):
    if from_logits:
        loss = np.exp(pred) - target * pred
    else:
        loss = pred - target * np.log(pred + 1e-08)
    if full:
        st = target * np.log(target) - target + 0.5 * np.log(2 * target * np.pi)
        loss = loss + st * (target > 1)
    return loss.mean()


@pytest.mark.parametrize("from_logits,full", [(True, False), (False, False), (False, True)])
def test_poisson_nll_matches_numpy(from_logits, full):
    rng = np.random.RandomState(3)
    pred = rng.uniform(0.5, 3, (4, 5)).astype(np.float32)
    target = rng.uniform(0.5, 4, (4, 5)).astype(np.float32)
    loss = gluon.loss.PoissonNLLLoss(from_logits=from_logits, compute_full=full)
    out = loss(nd.array(pred), nd.array(target))
    np.testing.assert_allclose(out.asscalar(), _np_poisson(pred, target, from_logits, full),
                               rtol=1e-5)


def test_poisson_nll_gradient():
    rng = np.random.RandomState(0)
    pred = rng.uniform(0.5, 2, (3, 2))
    target = rng.uniform(0.5, 3, (3, 2))
    x = nd.array(pred)
    x.attach_grad()
    with autograd.record():
        y = gluon.loss.PoissonNLLLoss(from_logits=True)(x, nd.array(target))
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), (np.exp(pred) - target) / pred.size,
                               rtol=1e-4)


def _np_sdml(x1, x2, smooth=0.3):
    n = x1.shape[0]
    d = ((x1[:, None, :] - x2[None, :, :]) ** 2).sum(2)
    z = -d
    logp = z - z.max(1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
    lab = np.eye(n) * (1 - smooth) + (1 - np.eye(n)) * smooth / (n - 1)
    return (lab * (np.log(lab + 1e-12) - logp)).sum(1)


def test_sdml_matches_numpy_and_gradient():
    rng = np.random.RandomState(1)
    x1 = rng.uniform(-1, 1, (4, 3))
    x2 = rng.uniform(-1, 1, (4, 3))
    loss = gluon.loss.SDMLLoss()
    out = loss(nd.array(x1), nd.array(x2))
    assert out.shape == (4,)
    np.testing.assert_allclose(out.asnumpy(), _np_sdml(x1, x2), rtol=1e-4, atol=1e-6)
    a = nd.array(x1)
    a.attach_grad()
    with autograd.record():
        s = loss(a, nd.array(x2)).sum()
    s.backward()
    eps = 1e-3
    num = np.zeros_like(x1)
    for i in range(x1.shape[0]):
        for j in range(x1.shape[1]):
            p, m = x1.copy(), x1.copy()
            p[i, j] += eps
            m[i, j] -= eps
            num[i, j] = (_np_sdml(p, x2).sum() - _np_sdml(m, x2).sum()) / (2 * eps)
    np.testing.assert_allclose(a.grad.asnumpy(), num, rtol=1e-2, atol=1e-3)


def test_sdml_bad_input():
    with pytest.raises(MXNetError, match="SDMLLoss"):
        gluon.loss.SDMLLoss()(nd.ones((4, 3)), nd.ones((3, 3)))


def test_ctc_loss_layout_checks():
    with pytest.raises(MXNetError, match="layout"):
        gluon.loss.CTCLoss(layout="NCT")
    with pytest.raises(MXNetError, match="layout"):
        gluon.loss.CTCLoss(label_layout="TT")
    assert gluon.loss.CTCLoss(label_layout="TN")._batch_axis == 1


@pytest.mark.skipif(not hasattr(nd, "CTCLoss"), reason="the CTCLoss operator is not built")
def test_ctc_loss_value():
    # one frame per label symbol, two classes + blank: the loss of a certain path
    pred = np.log(np.array([[[0.9, 0.05, 0.05], [0.05, 0.9, 0.05]]], np.float32))
    loss = gluon.loss.CTCLoss()(nd.array(pred), nd.array([[0, 1]]))
    np.testing.assert_allclose(loss.asnumpy(), [-np.log(0.9 * 0.9)], rtol=1e-4)
