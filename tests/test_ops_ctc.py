"""CTCLoss (op/ctc.rs; aliases ctc_loss, contrib.CTCLoss, contrib.ctc_loss): the loss
against a brute-force sum over every alignment (NumPy), both blank conventions,
data and label lengths, the gradient against central differences, symbols, the
Gluon loss and bad inputs."""

import itertools

import numpy as np
import pytest

import oxnet as mx
from _gradcheck import grad_check
from oxnet.base import MXNetError

nd = mx.nd


def brute_ctc(acts, label, blank):
    """-log sum over all paths of length T collapsing to `label` (acts: (T, C))."""
    T, C = acts.shape
    p = np.exp(acts - acts.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    total = 0.0
    for path in itertools.product(range(C), repeat=T):
        out, prev = [], None
        for s in path:
            if s != prev and s != blank:
                out.append(s)
            prev = s
        if out == list(label):
            total += np.prod([p[t, s] for t, s in enumerate(path)])
    return -np.log(total)


def test_ctc_matches_brute_force_blank_first_and_last():
    rng = np.random.RandomState(0)
    acts = rng.randn(4, 2, 3)
    # blank first: classes 1, 2; padded with 0.
    labels = np.array([[1, 2, 0], [2, 0, 0]])
    out = nd.CTCLoss(nd.array(acts, dtype="float64"), nd.array(labels)).asnumpy()
    ref = [brute_ctc(acts[:, 0], [1, 2], 0), brute_ctc(acts[:, 1], [2], 0)]
    np.testing.assert_allclose(out, ref, rtol=1e-10)
    # blank last: classes 0, 1; padded with -1.
    labels = np.array([[0, 1, -1], [1, 1, -1]])
    out = nd.ctc_loss(nd.array(acts), nd.array(labels), blank_label="last").asnumpy()
    ref = [brute_ctc(acts[:, 0], [0, 1], 2), brute_ctc(acts[:, 1], [1, 1], 2)]
    np.testing.assert_allclose(out, ref, rtol=1e-5)


def test_ctc_lengths():
    rng = np.random.RandomState(1)
    acts = rng.randn(5, 2, 3)
    labels = np.array([[1, 2, 1], [2, 2, 1]])
    out = nd.contrib.CTCLoss(nd.array(acts, dtype="float64"), nd.array(labels),
                             nd.array([3, 5]), nd.array([2, 1]),
                             use_data_lengths=True, use_label_lengths=True).asnumpy()
    ref = [brute_ctc(acts[:3, 0], [1, 2], 0), brute_ctc(acts[:, 1], [2], 0)]
    np.testing.assert_allclose(out, ref, rtol=1e-10)


def test_ctc_gradient():
    rng = np.random.RandomState(2)
    acts = rng.randn(4, 2, 4)
    label = nd.array([[1, 3], [2, 0]])
    grad_check(lambda d: nd.CTCLoss(d, label), acts, rtol=1e-5, atol=1e-8)
    lens = nd.array([3, 4])
    grad_check(lambda d: nd.contrib.ctc_loss(d, label, lens, use_data_lengths=True), acts, rtol=1e-5, atol=1e-8)


def test_ctc_gradient_is_softmax_minus_occupancy_and_zero_past_length():
    acts = nd.array(np.random.RandomState(3).randn(3, 1, 3))
    acts.attach_grad()
    with mx.autograd.record():
        loss = nd.CTCLoss(acts, nd.array([[1]]), nd.array([2]), use_data_lengths=True)
    loss.backward()
    g = acts.grad.asnumpy()
    np.testing.assert_allclose(g[2], 0)
    np.testing.assert_allclose(g[:2].sum(-1), 0, atol=1e-6)


def test_ctc_symbol_and_gluon():
    data, label = mx.sym.var("data"), mx.sym.var("label")
    s = mx.sym.CTCLoss(data, label)
    acts = np.random.RandomState(4).randn(3, 2, 3)
    labels = np.array([[1, 2], [1, 0]])
    ex = s.bind(mx.cpu(), {"data": nd.array(acts), "label": nd.array(labels)})
    ex.forward()
    want = [brute_ctc(acts[:, 0], [1, 2], 0), brute_ctc(acts[:, 1], [1], 0)]
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), want, rtol=1e-5)
    # Gluon: NTC layout, blank last, labels padded with -1.
    pred = np.transpose(acts, (1, 0, 2))
    loss = mx.gluon.loss.CTCLoss()(nd.array(pred), nd.array([[0, 1], [0, -1]])).asnumpy()
    want = [brute_ctc(acts[:, 0], [0, 1], 2), brute_ctc(acts[:, 1], [0], 2)]
    np.testing.assert_allclose(loss, want, rtol=1e-5)


def test_ctc_bad_inputs():
    with pytest.raises(MXNetError, match="CTCLoss"):
        nd.CTCLoss(nd.ones((3, 2)), nd.ones((2, 2)))
    with pytest.raises(MXNetError, match="CTCLoss"):
        nd.CTCLoss(nd.ones((3, 2, 4)), nd.ones((3, 2)))
    with pytest.raises(MXNetError, match="CTCLoss"):
        nd.CTCLoss(nd.ones((3, 2, 4)), nd.array([[1, 7], [1, 1]])).asnumpy()


def test_ctc_label_equal_to_blank_is_accepted_as_mxnet():
    # MXNet does not reject a label equal to the blank; with uniform activations the
    # loss depends only on the label's length and repeats.
    acts = nd.ones((6, 1, 4))
    a = nd.CTCLoss(acts, nd.array([[3, 2]]), blank_label="last").asnumpy()
    b = nd.CTCLoss(acts, nd.array([[1, 2]]), blank_label="last").asnumpy()
    assert np.isfinite(a).all() and a.shape == (1,)
    assert b[0] > 0
