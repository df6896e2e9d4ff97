"""Bounding-box contrib ops (op/contrib_box.rs): box_nms (and its alias
box_non_maximum_suppression), box_iou, bipartite_matching, box_encode, box_decode.
NumPy references written here are the oracle."""

import numpy as np
import pytest

import oxnet as mx
from _gradcheck import grad_check

nd = mx.nd


# ---- references -----------------------------------------------------------------------

def iou_ref(a, b, fmt="corner"):
    """IoU of every box of a (..., 4) against every box of b (..., 4)."""
    def corners(x):
        if fmt == "center":
            return np.concatenate([x[..., :2] - x[..., 2:] / 2, x[..., :2] + x[..., 2:] / 2], -1)
        return x
    A = corners(a.reshape(-1, 4))[:, None, :]
    B = corners(b.reshape(-1, 4))[None, :, :]
    w = np.maximum(0, np.minimum(A[..., 2], B[..., 2]) - np.maximum(A[..., 0], B[..., 0]))
    h = np.maximum(0, np.minimum(A[..., 3], B[..., 3]) - np.maximum(A[..., 1], B[..., 1]))
    inter = w * h
    area = lambda X: np.maximum(0, X[..., 2] - X[..., 0]) * np.maximum(0, X[..., 3] - X[..., 1])
    union = area(A) + area(B) - inter
    out = np.where(inter > 0, inter / np.where(union == 0, 1, union), 0.0)
    return out.reshape(a.shape[:-1] + b.shape[:-1])


def to_center(b):
    return np.concatenate([(b[..., :2] + b[..., 2:]) / 2, b[..., 2:] - b[..., :2]], -1)


def nms_ref(data, thresh=0.5, valid=0.0, topk=-1, coord=2, score=1, cid=-1, bid=-1, force=False,
            in_format="corner", out_format="corner"):
    """Greedy NMS per batch; returns (out, kept input indices per batch)."""
    shape = data.shape
    d = data.reshape(-1, shape[-2], shape[-1])
    out = -np.ones_like(d)
    kept_all = []
    for b, rows in enumerate(d):
        idx = [i for i in range(len(rows)) if rows[i, score] > valid and (cid < 0 or rows[i, cid] != bid)]
        idx.sort(key=lambda i: -rows[i, score])  # stable: ties keep input order
        if topk >= 0:
            idx = idx[:topk]
        kept = []
        for i in idx:
            ok = True
            for j in kept:
                if not force and cid >= 0 and int(rows[i, cid]) != int(rows[j, cid]):
                    continue
                if iou_ref(rows[j, coord:coord + 4], rows[i, coord:coord + 4], in_format) > thresh:
                    ok = False
                    break
            if ok:
                kept.append(i)
        for k, i in enumerate(kept):
            out[b, k] = rows[i]
            if in_format != out_format:
                box = rows[i, coord:coord + 4]
                out[b, k, coord:coord + 4] = to_center(box) if out_format == "center" else np.concatenate(
                    [box[:2] - box[2:] / 2, box[:2] + box[2:] / 2])
        kept_all.append(kept)
    return out.reshape(shape), kept_all


BOXES = np.array([[0, 0.5, 0.1, 0.1, 0.2, 0.2], [1, 0.4, 0.1, 0.1, 0.2, 0.2],
                  [0, 0.3, 0.1, 0.1, 0.14, 0.14], [2, 0.6, 0.5, 0.5, 0.7, 0.8]])


# ---- box_nms ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("force,thresh,cid", [(True, 0.5, 0), (True, 0.1, 0), (False, 0.1, 0), (False, 0.5, -1)])
def test_box_nms_forward(dtype, force, thresh, cid):
    out = nd.contrib.box_nms(nd.array(BOXES, dtype=dtype), overlap_thresh=thresh, force_suppress=force, id_index=cid)
    assert out.dtype == np.dtype(dtype)
    ref, _ = nms_ref(BOXES, thresh=thresh, force=force, cid=cid)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-3, atol=1e-3)


def nms_matrix_ref(data, thresh, valid, cid, force, fmt):
    """Greedy NMS of one batch from the full IoU matrix (for many boxes)."""
    iou = iou_ref(data[:, 2:6], data[:, 2:6], fmt)
    idx = [i for i in range(len(data)) if data[i, 1] > valid]
    idx.sort(key=lambda i: -data[i, 1])
    kept = []
    for i in idx:
        if all(iou[j, i] <= thresh or (not force and cid >= 0 and int(data[i, cid]) != int(data[j, cid]))
               for j in kept):
            kept.append(i)
    return kept


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("force,fmt", [(False, "corner"), (True, "corner"), (False, "center")])
def test_box_nms_many_boxes(dtype, force, fmt):
    # 1200 boxes of 6 classes, crowded enough that most suppress some others
    rng = np.random.RandomState(4)
    n = 1200
    xy = rng.uniform(0, 200, (n, 2))
    wh = rng.uniform(5, 40, (n, 2))
    boxes = np.concatenate([xy, xy + wh], 1) if fmt == "corner" else np.concatenate([xy, wh], 1)
    data = np.concatenate([rng.randint(0, 6, (n, 1)), rng.uniform(0, 1, (n, 1)), boxes], 1).astype(dtype)
    x = nd.array(data[None], dtype=dtype)
    x.attach_grad()
    with mx.autograd.record():
        out = nd.contrib.box_nms(x, overlap_thresh=0.45, valid_thresh=0.05, id_index=0, force_suppress=force,
                                 in_format=fmt, out_format=fmt)
    out.backward(nd.ones_like(out))
    kept = nms_matrix_ref(data.astype(np.float64), 0.45, 0.05, 0, force, fmt)
    assert 50 < len(kept) < n - 100
    want = -np.ones_like(data)
    want[:len(kept)] = data[kept]
    np.testing.assert_array_equal(out.asnumpy()[0], want)
    # the gradient reaches exactly the kept boxes
    grad = x.grad.asnumpy()[0]
    np.testing.assert_array_equal(np.nonzero(grad[:, 0])[0], np.sort(kept))


def test_box_nms_known_values():
    # force suppression: the 0.4 box overlaps the 0.5 box of the other class
    out = nd.contrib.box_nms(nd.array(BOXES), overlap_thresh=0.5, force_suppress=True, id_index=0)
    np.testing.assert_allclose(out.asnumpy(), [[2, 0.6, 0.5, 0.5, 0.7, 0.8], [0, 0.5, 0.1, 0.1, 0.2, 0.2],
                                               [0, 0.3, 0.1, 0.1, 0.14, 0.14], [-1] * 6], rtol=1e-6)


def test_box_nms_batches_topk_valid_background():
    rng = np.random.RandomState(0)
    data = np.concatenate([rng.randint(0, 3, (2, 3, 8, 1)), rng.rand(2, 3, 8, 1),
                           rng.rand(2, 3, 8, 2) * 0.5, rng.rand(2, 3, 8, 2) * 0.5 + 0.5], -1)
    for kw in [dict(topk=3), dict(valid=0.4), dict(cid=0, bid=1), dict(cid=0, force=True, thresh=0.2)]:
        ref, _ = nms_ref(data, **kw)
        args = dict(overlap_thresh=kw.get("thresh", 0.5), valid_thresh=kw.get("valid", 0.0), topk=kw.get("topk", -1),
                    id_index=kw.get("cid", -1), background_id=kw.get("bid", -1), force_suppress=kw.get("force", False))
        out = nd.contrib.box_nms(nd.array(data, dtype="float64"), **args)
        np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-12)


def test_box_nms_formats_and_positions():
    center = to_center(BOXES[:, 2:])
    boxes_c = np.concatenate([BOXES[:, :2], center], -1)
    ref_corner, _ = nms_ref(BOXES, thresh=0.1, cid=0)
    out = nd.contrib.box_nms(nd.array(boxes_c), overlap_thresh=0.1, id_index=0, in_format="center")
    np.testing.assert_allclose(out.asnumpy(), ref_corner, rtol=1e-5, atol=1e-6)
    ref_center, _ = nms_ref(BOXES, thresh=0.1, cid=0, out_format="center")
    out = nd.contrib.box_nms(nd.array(BOXES), overlap_thresh=0.1, id_index=0, out_format="center")
    np.testing.assert_allclose(out.asnumpy(), ref_center, rtol=1e-5, atol=1e-6)
    # columns moved: coordinates first, then id, then score
    moved = np.concatenate([BOXES[:, 2:], BOXES[:, :1], BOXES[:, 1:2]], -1)
    out = nd.contrib.box_nms(nd.array(moved), overlap_thresh=0.1, coord_start=0, score_index=5, id_index=4)
    ref, _ = nms_ref(moved, thresh=0.1, coord=0, score=5, cid=4)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-6)


def test_box_nms_alias_and_topk_zero():
    a = nd.contrib.box_non_maximum_suppression(nd.array(BOXES), overlap_thresh=0.1)
    b = nd.contrib.box_nms(nd.array(BOXES), overlap_thresh=0.1)
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    # topk=0 returns the input as it is
    np.testing.assert_array_equal(nd.contrib.box_nms(nd.array(BOXES), topk=0).asnumpy(), BOXES.astype("float32"))


def test_box_nms_backward_scatters_to_kept_boxes():
    data = np.array([BOXES] * 3)
    grad = np.random.RandomState(1).rand(3, 4, 6)
    _, kept = nms_ref(data, thresh=0.5, force=True, cid=0)
    expected = np.zeros_like(grad)
    for b, k in enumerate(kept):
        for pos, i in enumerate(k):
            expected[b, i] = grad[b, pos]
    # autograd
    x = nd.array(data)
    x.attach_grad()
    with mx.autograd.record():
        y = nd.contrib.box_nms(x, overlap_thresh=0.5, force_suppress=True, id_index=0)
    y.backward(nd.array(grad))
    np.testing.assert_allclose(x.grad.asnumpy(), expected, rtol=1e-6)
    # symbol executor
    sym = mx.sym.contrib.box_nms(mx.sym.Variable("data"), overlap_thresh=0.5, force_suppress=True, id_index=0)
    g = nd.empty(data.shape)
    exe = sym.bind(mx.cpu(), args=[nd.array(data)], args_grad=[g])
    exe.forward(is_train=True)
    exe.backward(nd.array(grad))
    np.testing.assert_allclose(g.asnumpy(), expected, rtol=1e-6)
    assert sym.list_outputs() == ["box_nms0_output"] or len(sym.list_outputs()) == 1


def test_box_nms_numerical_gradient():
    # well separated scores and boxes: small perturbations keep the selection
    data = np.array([[0, 0.9, 0.0, 0.0, 1.0, 1.0], [0, 0.5, 0.05, 0.05, 1.0, 1.0],
                     [0, 0.7, 2.0, 2.0, 3.0, 3.0]])
    grad_check(lambda a: nd.contrib.box_nms(a, overlap_thresh=0.5), data, h=1e-6)


def test_box_nms_bad_inputs():
    with pytest.raises(mx.MXNetError, match="box_nms.*dim >= 2"):
        nd.contrib.box_nms(nd.ones((6,)))
    with pytest.raises(mx.MXNetError, match="box_nms.*at least 5"):
        nd.contrib.box_nms(nd.ones((3, 4)))
    with pytest.raises(mx.MXNetError, match="box_nms.*score_index"):
        nd.contrib.box_nms(nd.ones((3, 6)), score_index=3)
    with pytest.raises(mx.MXNetError, match="box_nms.*coordinates"):
        nd.contrib.box_nms(nd.ones((3, 6)), coord_start=3)
    with pytest.raises(mx.MXNetError, match="box_nms.*id_index"):
        nd.contrib.box_nms(nd.ones((3, 6)), id_index=1)
    with pytest.raises(mx.MXNetError, match="box_nms.*floating"):
        nd.contrib.box_nms(nd.ones((3, 6), dtype="int32"))
    with pytest.raises(mx.MXNetError, match="box_nms"):
        nd.contrib.box_nms(nd.ones((3, 6)), in_format="xyxy")


# ---- box_iou -----------------------------------------------------------------------------

@pytest.mark.parametrize("sa,sb", [((3, 4), (5, 4)), ((2, 2, 4), (3, 4)), ((1, 4), (2, 1, 2, 4))])
def test_box_iou(sa, sb):
    rng = np.random.RandomState(3)
    xy_a, wh_a = rng.rand(*sa[:-1], 2) * 10, rng.rand(*sa[:-1], 2) * 5 + 0.1
    xy_b, wh_b = rng.rand(*sb[:-1], 2) * 10, rng.rand(*sb[:-1], 2) * 5 + 0.1
    ca, cb = np.concatenate([xy_a, wh_a], -1), np.concatenate([xy_b, wh_b], -1)
    la = np.concatenate([xy_a - wh_a / 2, xy_a + wh_a / 2], -1)
    lb = np.concatenate([xy_b - wh_b / 2, xy_b + wh_b / 2], -1)
    ref = iou_ref(la, lb)
    out = nd.contrib.box_iou(nd.array(la, dtype="float64"), nd.array(lb, dtype="float64"), format="corner")
    assert out.shape == sa[:-1] + sb[:-1]
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-10, atol=1e-12)
    out = nd.contrib.box_iou(nd.array(ca, dtype="float64"), nd.array(cb, dtype="float64"), format="center")
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-10, atol=1e-12)


def test_box_iou_no_gradient_and_bad_inputs():
    a = nd.array([[0, 0, 1, 1]])
    a.attach_grad()
    with mx.autograd.record():
        y = nd.contrib.box_iou(a, nd.array([[0.5, 0.5, 2, 2]]))
    y.backward()
    np.testing.assert_array_equal(a.grad.asnumpy(), np.zeros((1, 4)))
    with pytest.raises(mx.MXNetError, match="box_iou.*must be 4"):
        nd.contrib.box_iou(nd.ones((2, 5)), nd.ones((2, 4)))
    with pytest.raises(mx.MXNetError, match="box_iou.*dim >= 2"):
        nd.contrib.box_iou(nd.ones((4,)), nd.ones((2, 4)))


# ---- bipartite_matching ---------------------------------------------------------------------

def bm_ref(s, thresh, ascend, topk=-1):
    rows, cols = -np.ones(s.shape[0]), -np.ones(s.shape[1])
    order = np.argsort(s.ravel(), kind="stable")
    if not ascend:
        order = np.argsort(-s.ravel(), kind="stable")
    count = 0
    for k in order:
        r, c = divmod(k, s.shape[1])
        if rows[r] == -1 and cols[c] == -1:
            if (not ascend and s.flat[k] > thresh) or (ascend and s.flat[k] < thresh):
                rows[r], cols[c] = c, r
                count += 1
                if 0 < topk < count:
                    break
            else:
                break
    return rows, cols


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_bipartite_matching_known(dtype):
    s = nd.array([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]], dtype=dtype)
    a, b = nd.contrib.bipartite_matching(s, threshold=1e-12, is_ascend=False)
    np.testing.assert_array_equal(a.asnumpy(), [1, -1, 0])
    np.testing.assert_array_equal(b.asnumpy(), [2, 0])
    a, b = nd.contrib.bipartite_matching(s, threshold=100, is_ascend=True)
    np.testing.assert_array_equal(a.asnumpy(), [-1, 0, 1])
    np.testing.assert_array_equal(b.asnumpy(), [1, 2])


def test_bipartite_matching_batched_random():
    s = np.random.RandomState(5).rand(3, 6, 4)
    for thresh, asc, topk in [(0.3, False, -1), (0.7, True, -1), (0.0, False, 2)]:
        a, b = nd.contrib.bipartite_matching(nd.array(s, dtype="float64"), threshold=thresh, is_ascend=asc, topk=topk)
        assert a.shape == (3, 6) and b.shape == (3, 4)
        for i in range(3):
            r, c = bm_ref(s[i], thresh, asc, topk)
            np.testing.assert_array_equal(a.asnumpy()[i], r)
            np.testing.assert_array_equal(b.asnumpy()[i], c)


def test_bipartite_matching_bad_inputs():
    with pytest.raises(mx.MXNetError, match="bipartite_matching.*dim >= 2"):
        nd.contrib.bipartite_matching(nd.ones((3,)), threshold=0.1)
    with pytest.raises(mx.MXNetError, match="bipartite_matching.*threshold"):
        nd.contrib.bipartite_matching(nd.ones((3, 3)))


# ---- box_encode / box_decode ------------------------------------------------------------------

def encode_ref(samples, matches, anchors, refs, means, stds):
    t = np.zeros_like(anchors)
    m = np.zeros_like(anchors)
    for b in range(anchors.shape[0]):
        for i in range(anchors.shape[1]):
            if samples[b, i] <= 0.5:
                continue
            r, a = refs[b, int(matches[b, i])], anchors[b, i]
            rw, rh, aw, ah = r[2] - r[0], r[3] - r[1], a[2] - a[0], a[3] - a[1]
            v = np.array([(r[0] + rw / 2 - a[0] - aw / 2) / aw, (r[1] + rh / 2 - a[1] - ah / 2) / ah,
                          np.log(rw / aw), np.log(rh / ah)])
            t[b, i] = (v - means) / stds
            m[b, i] = 1
    return t, m


def decode_ref(x, anchors, stds, clip=-1, fmt="center"):
    a = anchors[0]
    if fmt == "corner":
        a = np.concatenate([(a[:, :2] + a[:, 2:]) / 2, a[:, 2:] - a[:, :2]], -1)
    ox = x[..., 0] * stds[0] * a[:, 2] + a[:, 0]
    oy = x[..., 1] * stds[1] * a[:, 3] + a[:, 1]
    dw, dh = x[..., 2] * stds[2], x[..., 3] * stds[3]
    if clip > 0:
        dw, dh = np.minimum(dw, clip), np.minimum(dh, clip)
    ow, oh = np.exp(dw) * a[:, 2] / 2, np.exp(dh) * a[:, 3] / 2
    return np.stack([ox - ow, oy - oh, ox + ow, oy + oh], -1)


def test_box_encode():
    rng = np.random.RandomState(7)
    anchors = np.concatenate([rng.rand(2, 5, 2), rng.rand(2, 5, 2) + 1], -1)
    refs = np.concatenate([rng.rand(2, 3, 2), rng.rand(2, 3, 2) + 1], -1)
    samples = (rng.rand(2, 5) > 0.4).astype("float64")
    matches = rng.randint(0, 3, (2, 5)).astype("float64")
    means, stds = np.array([0.1, 0.0, -0.1, 0.2]), np.array([0.1, 0.1, 0.2, 0.2])
    t, m = nd.contrib.box_encode(*[nd.array(v, dtype="float64") for v in (samples, matches, anchors, refs, means, stds)])
    rt, rm = encode_ref(samples, matches, anchors, refs, means, stds)
    np.testing.assert_allclose(t.asnumpy(), rt, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(m.asnumpy(), rm)


@pytest.mark.parametrize("fmt,clip", [("center", -1), ("corner", -1), ("corner", 0.3)])
def test_box_decode(fmt, clip):
    rng = np.random.RandomState(8)
    x = rng.randn(2, 4, 4)
    anchors = np.concatenate([rng.rand(1, 4, 2), rng.rand(1, 4, 2) + 1], -1)
    y = nd.contrib.box_decode(nd.array(x, dtype="float64"), nd.array(anchors, dtype="float64"), 0.1, 0.1, 0.2, 0.2,
                              clip=clip, format=fmt)
    np.testing.assert_allclose(y.asnumpy(), decode_ref(x, anchors, [0.1, 0.1, 0.2, 0.2], clip, fmt), rtol=1e-10)


def test_box_encode_decode_bad_inputs():
    with pytest.raises(mx.MXNetError, match="box_encode.*samples"):
        nd.contrib.box_encode(nd.ones((2,)), nd.ones((1, 2)), nd.ones((1, 2, 4)), nd.ones((1, 2, 4)), nd.ones(4), nd.ones(4))
    with pytest.raises(mx.MXNetError, match="box_encode.*stds"):
        nd.contrib.box_encode(nd.ones((1, 2)), nd.ones((1, 2)), nd.ones((1, 2, 4)), nd.ones((1, 2, 4)), nd.ones(4), nd.ones(3))
    with pytest.raises(mx.MXNetError, match="box_encode.*out of range"):
        nd.contrib.box_encode(nd.ones((1, 2)), nd.array([[0, 5]]), nd.ones((1, 2, 4)), nd.ones((1, 2, 4)),
                              nd.ones(4), nd.ones(4))[0].asnumpy()
    with pytest.raises(mx.MXNetError, match="box_decode.*data"):
        nd.contrib.box_decode(nd.ones((2, 4)), nd.ones((1, 2, 4)))
    with pytest.raises(mx.MXNetError, match="box_decode.*anchors"):
        nd.contrib.box_decode(nd.ones((1, 2, 4)), nd.ones((1, 3, 4)))
