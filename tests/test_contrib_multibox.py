"""SSD multibox contrib ops (op/contrib_multibox.rs): MultiBoxPrior, MultiBoxTarget,
MultiBoxDetection. NumPy references written here are the oracle."""

import numpy as np
import pytest

import oxnet as mx

nd = mx.nd


def prior_ref(h, w, sizes, ratios, steps=(-1, -1), offsets=(0.5, 0.5), clip=False):
    sy, sx = steps if steps[0] > 0 and steps[1] > 0 else (1.0 / h, 1.0 / w)
    out = []
    for r in range(h):
        cy = (r + offsets[0]) * sy
        for c in range(w):
            cx = (c + offsets[1]) * sx
            whs = [(s * h / w * np.sqrt(ratios[0]) / 2, s / np.sqrt(ratios[0]) / 2) for s in sizes]
            whs += [(sizes[0] * h / w * np.sqrt(q) / 2, sizes[0] / np.sqrt(q) / 2) for q in ratios[1:]]
            for bw, bh in whs:
                out.append([cx - bw, cy - bh, cx + bw, cy + bh])
    out = np.array(out)[None]
    return np.clip(out, 0, 1) if clip else out


@pytest.mark.parametrize("kw", [dict(sizes=[0.75, 0.5, 0.25], ratios=[1, 2, 0.5]),
                                dict(sizes=(0.3,), ratios=(20, 2, 0.5), clip=True),
                                dict(sizes=[0.2, 0.1], ratios=[1], steps=(0.1, 0.2), offsets=(0.2, 0.7))])
def test_multibox_prior(kw):
    x = nd.zeros((2, 3, 5, 7))
    y = nd.contrib.MultiBoxPrior(x, **kw)
    ref = prior_ref(5, 7, list(kw["sizes"]), list(kw["ratios"]), kw.get("steps", (-1, -1)),
                    kw.get("offsets", (0.5, 0.5)), kw.get("clip", False))
    assert y.shape == ref.shape
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_multibox_prior_symbol_and_defaults():
    s = mx.sym.contrib.MultiBoxPrior(mx.sym.Variable("data"), sizes=(0.5, 0.25), ratios=(1, 2))
    _, out, _ = s.infer_shape(data=(1, 3, 4, 6))
    assert out == [(1, 4 * 6 * 3, 4)]
    y = nd.contrib.MultiBoxPrior(nd.zeros((1, 1, 2, 2)))
    np.testing.assert_allclose(y.asnumpy(), prior_ref(2, 2, [1.0], [1.0]), rtol=1e-6)


def test_multibox_prior_bad_inputs():
    with pytest.raises(mx.MXNetError, match="MultiBoxPrior.*4D"):
        nd.contrib.MultiBoxPrior(nd.zeros((3, 4)))
    with pytest.raises(mx.MXNetError, match="MultiBoxPrior.*steps"):
        nd.contrib.MultiBoxPrior(nd.zeros((1, 1, 3, 4)), steps=(0.1,))
    with pytest.raises(mx.MXNetError, match="MultiBoxPrior.*offsets"):
        nd.contrib.MultiBoxPrior(nd.zeros((1, 1, 3, 4)), offsets=(1.5, 0.5))
    with pytest.raises(mx.MXNetError, match="MultiBoxPrior"):
        nd.contrib.MultiBoxPrior(nd.zeros((1, 1, 3, 4)), sizes="(a, b)")


def test_multibox_target_known():
    anchors = nd.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8]]).reshape((1, -1, 4))
    cls_pred = nd.array(list(range(10))).reshape((1, -1, 2))
    label = nd.array([1, 0.1, 0.1, 0.5, 0.6]).reshape((1, -1, 5))
    loc, mask, cls = nd.contrib.MultiBoxTarget(anchors, label, cls_pred, overlap_threshold=0.5,
                                               negative_mining_ratio=3, negative_mining_thresh=0.4)
    # anchor 0 matches the label (IoU 0.2, best pair); anchor 1 is the one mined negative
    ax, ay, aw, ah = 0.2, 0.3, 0.2, 0.2
    gx, gy, gw, gh = 0.3, 0.35, 0.4, 0.5
    ref = [(gx - ax) / aw / 0.1, (gy - ay) / ah / 0.1, np.log(gw / aw) / 0.2, np.log(gh / ah) / 0.2, 0, 0, 0, 0]
    np.testing.assert_allclose(loc.asnumpy(), [ref], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(mask.asnumpy(), [[1, 1, 1, 1, 0, 0, 0, 0]])
    np.testing.assert_array_equal(cls.asnumpy(), [[2, 0]])


def test_multibox_target_threshold_ignore_and_padding():
    anchors = nd.array([[0, 0, 0.5, 0.5], [0.5, 0.5, 1, 1], [0, 0, 0.45, 0.5], [0.6, 0, 1, 0.3]]).reshape((1, 4, 4))
    # two images: one ground truth + padding; no ground truth at all
    label = nd.array([[[0, 0, 0, 0.5, 0.5], [-1, -1, -1, -1, -1]],
                      [[-1, -1, -1, -1, -1], [-1, -1, -1, -1, -1]]])
    cls_pred = nd.zeros((2, 3, 4))
    loc, mask, cls = nd.contrib.MultiBoxTarget(anchors, label, cls_pred, overlap_threshold=0.5, ignore_label=-7)
    # without mining every unmatched anchor is negative; anchor 2 passes the threshold (IoU 0.9)
    np.testing.assert_array_equal(cls.asnumpy(), [[1, 0, 1, 0], [-7, -7, -7, -7]])
    np.testing.assert_array_equal(mask.asnumpy()[0], [1] * 4 + [0] * 4 + [1] * 4 + [0] * 4)
    np.testing.assert_array_equal(loc.asnumpy()[1], np.zeros(16))
    # with mining at a ratio of 0.5 one negative is kept for the two positives, the
    # other unmatched anchor is ignored
    _, _, cls = nd.contrib.MultiBoxTarget(anchors, label, cls_pred, overlap_threshold=0.5,
                                          negative_mining_ratio=0.5, negative_mining_thresh=0.5)
    c = cls.asnumpy()[0]
    assert sorted(c.tolist()) == [-1, 0, 1, 1]


def test_multibox_target_bad_inputs():
    a, l, p = nd.zeros((1, 2, 4)), nd.zeros((1, 1, 5)), nd.zeros((1, 3, 2))
    with pytest.raises(mx.MXNetError, match="MultiBoxTarget.*anchor"):
        nd.contrib.MultiBoxTarget(nd.zeros((2, 2, 4)), l, p)
    with pytest.raises(mx.MXNetError, match="MultiBoxTarget.*label"):
        nd.contrib.MultiBoxTarget(a, nd.zeros((1, 1, 4)), p)
    with pytest.raises(mx.MXNetError, match="MultiBoxTarget.*cls_pred"):
        nd.contrib.MultiBoxTarget(a, l, nd.zeros((1, 3, 5)))
    with pytest.raises(mx.MXNetError, match="MultiBoxTarget.*variances"):
        nd.contrib.MultiBoxTarget(a, l, p, variances=(0.1, 0.2))


def det_ref(prob, loc, anchors, threshold=0.01, clip=True, nms=0.5, force=False, v=(0.1, 0.1, 0.2, 0.2), topk=-1):
    B, C, N = prob.shape
    out = -np.ones((B, N, 6))
    for b in range(B):
        dets = []
        for i in range(N):
            j = 1 + int(np.argmax(prob[b, 1:, i]))
            s = prob[b, j, i]
            if s < threshold:
                continue
            a, l = anchors[0, i], loc[b, i * 4:i * 4 + 4]
            aw, ah, ax, ay = a[2] - a[0], a[3] - a[1], (a[0] + a[2]) / 2, (a[1] + a[3]) / 2
            ox, oy = l[0] * v[0] * aw + ax, l[1] * v[1] * ah + ay
            ow, oh = np.exp(l[2] * v[2]) * aw / 2, np.exp(l[3] * v[3]) * ah / 2
            box = np.array([ox - ow, oy - oh, ox + ow, oy + oh])
            dets.append([j - 1, s] + list(np.clip(box, 0, 1) if clip else box))
        dets.sort(key=lambda d: -d[1])
        if topk > 0:
            dets = dets[:topk]
        for i in range(len(dets)):
            if dets[i][0] < 0:
                continue
            for k in range(i + 1, len(dets)):
                if dets[k][0] >= 0 and (force or dets[k][0] == dets[i][0]):
                    x, y = np.array(dets[i][2:]), np.array(dets[k][2:])
                    inter = max(0, min(x[2], y[2]) - max(x[0], y[0])) * max(0, min(x[3], y[3]) - max(x[1], y[1]))
                    u = (x[2] - x[0]) * (x[3] - x[1]) + (y[2] - y[0]) * (y[3] - y[1]) - inter
                    if (inter / u if u > 0 else 0) >= nms:
                        dets[k][0] = -1
        for i, d in enumerate(dets):
            out[b, i] = d
    return out


@pytest.mark.parametrize("kw", [dict(), dict(force_suppress=True), dict(clip=False, nms_topk=3), dict(threshold=0.4)])
def test_multibox_detection(kw):
    rng = np.random.RandomState(2)
    prob = rng.rand(2, 3, 6)
    prob /= prob.sum(1, keepdims=True)
    loc = rng.randn(2, 24) * 0.5
    anchors = np.concatenate([rng.rand(1, 6, 2) * 0.5, rng.rand(1, 6, 2) * 0.5 + 0.5], -1)
    y = nd.contrib.MultiBoxDetection(nd.array(prob, dtype="float64"), nd.array(loc, dtype="float64"),
                                     nd.array(anchors, dtype="float64"), **kw)
    ref = det_ref(prob, loc, anchors, threshold=kw.get("threshold", 0.01), clip=kw.get("clip", True),
                  force=kw.get("force_suppress", False), topk=kw.get("nms_topk", -1))
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-10, atol=1e-12)


def test_multibox_detection_bad_inputs():
    p, l, a = nd.zeros((1, 3, 2)), nd.zeros((1, 8)), nd.zeros((1, 2, 4))
    with pytest.raises(mx.MXNetError, match="MultiBoxDetection.*loc_pred"):
        nd.contrib.MultiBoxDetection(p, nd.zeros((1, 7)), a)
    with pytest.raises(mx.MXNetError, match="MultiBoxDetection.*anchor"):
        nd.contrib.MultiBoxDetection(p, l, nd.zeros((1, 3, 4)))
    with pytest.raises(mx.MXNetError, match="MultiBoxDetection.*background_id"):
        nd.contrib.MultiBoxDetection(p, l, a, background_id=5)
