"""mx.image.ImageDetIter and the detection augmenters (MXNet 1.9.1's label format:
``[header_width, object_width, ..., cls, xmin, ymin, xmax, ymax, ...]``, batch labels
padded with -1), checked with NumPy."""

import json
import os
import random

import numpy as np
import pytest

import oxnet as mx
from oxnet.image import detection as det

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "photos")
FOLDER = os.path.join(FIX, "folder")
IMAGES = [os.path.join(FOLDER, c, sorted(os.listdir(os.path.join(FOLDER, c)))[0])
          for c in sorted(os.listdir(FOLDER))]


def _objects(rng, num):
    xy = rng.rand(num, 2) * 0.6 + 0.2
    wh = rng.rand(num, 2) * 0.15 + 0.05
    boxes = np.clip(np.hstack([xy - wh, xy + wh]), 0, 1)
    cid = rng.randint(0, 20, size=num)
    return np.hstack([cid[:, None], boxes])


def _imglist(seed=0, counts=None):
    rng = np.random.RandomState(seed)
    counts = counts or [1 + i % 4 for i in range(len(IMAGES))]
    objs = [_objects(rng, n) for n in counts]
    return [[2, 5] + o.ravel().tolist() + [p] for o, p in zip(objs, IMAGES)], objs


def test_iter_labels_padded_with_minus_one():
    imglist, objs = _imglist()
    it = mx.image.ImageDetIter(4, (3, 64, 64), imglist=imglist, path_root="")
    assert it.label_shape == (4, 5)
    assert it.provide_label == [("label", (4, 4, 5))]
    labels, pads = [], []
    for b in it:
        assert b.data[0].shape == (4, 3, 64, 64)
        labels.append(b.label[0].asnumpy())
        pads.append(b.pad)
    assert pads == [0, 0, 0, 1]
    labels = np.concatenate(labels)
    for k, o in enumerate(objs):       # no crop/pad: the boxes are unchanged
        np.testing.assert_allclose(labels[k, :len(o)], o, rtol=1e-6)
        assert (labels[k, len(o):] == -1).all()


def test_iter_from_rec_and_lst(tmp_path):
    _, objs = _imglist(1)
    rec = mx.recordio.MXIndexedRecordIO(str(tmp_path / "d.idx"), str(tmp_path / "d.rec"), "w")
    lines = []
    for k, (o, p) in enumerate(zip(objs, IMAGES)):
        img = mx.image.imread(p, to_rgb=0).asnumpy()
        lab = [4, 5, 640, 480] + o.ravel().tolist()       # a 4-wide header
        rec.write_idx(k, mx.recordio.pack_img(mx.recordio.IRHeader(0, lab, k, 0), img))
        lines.append("\t".join([str(k)] + ["%r" % x for x in lab] + [os.path.relpath(p, FOLDER)]))
    rec.close()
    (tmp_path / "d.lst").write_text("\n".join(lines) + "\n")
    for kw in (dict(path_imgrec=str(tmp_path / "d.rec"), path_imgidx=str(tmp_path / "d.idx")),
               dict(path_imgrec=str(tmp_path / "d.rec")),
               dict(path_imglist=str(tmp_path / "d.lst"), path_root=FOLDER)):
        it = mx.image.ImageDetIter(5, (3, 32, 32), last_batch_handle="discard", **kw)
        got = np.concatenate([b.label[0].asnumpy() for b in it])
        assert got.shape == (15, max(len(o) for o in objs), 5)
        for k in range(15):
            np.testing.assert_allclose(got[k, :len(objs[k])], objs[k], rtol=1e-6)


def test_parse_label_rules():
    it = mx.image.ImageDetIter(1, (3, 16, 16), imglist=_imglist()[0][:2], path_root="")
    raw = [2, 6, 1, 0.1, 0.1, 0.5, 0.5, 9, 2, 0.6, 0.6, 0.5, 0.7, 9]   # 2nd box: xmax < xmin
    out = it._parse_label(mx.nd.array(raw))
    np.testing.assert_allclose(out, [[1, 0.1, 0.1, 0.5, 0.5, 9]], rtol=1e-6)
    with pytest.raises(RuntimeError, match="invalid"):
        it._parse_label([2, 5, 1, 0.1])
    with pytest.raises(RuntimeError, match="inconsistent"):
        it._parse_label([2, 5, 1, 0.1, 0.1, 0.5, 0.5, 3])
    with pytest.raises(RuntimeError, match="no valid label"):
        it._parse_label([2, 5, 1, 0.5, 0.1, 0.1, 0.5])
    with pytest.raises(RuntimeError, match="required"):
        it._check_valid_label(np.zeros((2, 4)))
    with pytest.raises(RuntimeError, match="Invalid label"):
        it._check_valid_label(np.array([[-1, 0.1, 0.1, 0.5, 0.5]]))


def test_reshape_and_sync_label_shape():
    a = mx.image.ImageDetIter(2, (3, 16, 16), imglist=_imglist(0, [1, 2, 3])[0], path_root="")
    b = mx.image.ImageDetIter(2, (3, 16, 16), imglist=_imglist(0, [5, 1])[0], path_root="")
    assert a.label_shape == (3, 5) and b.label_shape == (5, 5)
    assert a.sync_label_shape(b) is b
    assert a.label_shape == (5, 5) and a.provide_label[0][1] == (2, 5, 5)
    lab = next(iter(a)).label[0].asnumpy()
    assert lab.shape == (2, 5, 5) and (lab[0, 1:] == -1).all()
    with pytest.raises(ValueError, match="reduce"):
        a.reshape(label_shape=(2, 5))
    with pytest.raises(ValueError, match="width"):
        a.reshape(label_shape=(6, 6))
    a.reshape(data_shape=(3, 24, 20))     # as MXNet: the augmenters are not changed
    assert a.provide_data[0][1] == (2, 3, 24, 20) and a.data_shape == (3, 24, 20)
    with pytest.raises(mx.MXNetError, match="no image"):
        mx.image.ImageDetIter(2, (3, 16, 16), imglist=[], path_root="")


def test_horizontal_flip():
    src = mx.nd.array(np.random.RandomState(0).randint(0, 255, (20, 30, 3)), dtype=np.uint8)
    label = np.array([[3, 0.1, 0.2, 0.4, 0.9]], dtype=np.float32)
    out, lab = det.DetHorizontalFlipAug(1.0)(src, label.copy())
    np.testing.assert_array_equal(out.asnumpy(), src.asnumpy()[:, ::-1])
    np.testing.assert_allclose(lab, [[3, 0.6, 0.2, 0.9, 0.9]], rtol=1e-6)
    out, lab = det.DetHorizontalFlipAug(0.0)(src, label.copy())
    np.testing.assert_array_equal(lab, label)


def test_random_crop_keeps_objects_and_maps_boxes():
    rng = np.random.RandomState(3)
    src = mx.nd.array(rng.randint(0, 255, (120, 160, 3)), dtype=np.uint8)
    aug = det.DetRandomCropAug(min_object_covered=0.5, aspect_ratio_range=(0.5, 2),
                               area_range=(0.2, 0.8), min_eject_coverage=0.3)
    hits = 0
    for seed in range(40):
        label = _objects(rng, 3).astype(np.float32)
        random.seed(seed)
        prop = aug._random_crop_proposal(label, 120, 160)
        if not prop:
            continue
        hits += 1
        x, y, w, h, new = prop
        assert 0.2 * 120 * 160 <= w * h <= 0.8 * 120 * 160
        assert 0 <= x and x + w <= 160 and 0 <= y and y + h <= 120
        # NumPy oracle of the box mapping: pixel boxes clipped to the crop window
        px = label[:, 1:5] * [160, 120, 160, 120]
        cl = np.stack([np.clip(px[:, 0], x, x + w), np.clip(px[:, 1], y, y + h),
                       np.clip(px[:, 2], x, x + w), np.clip(px[:, 3], y, y + h)], 1)
        area = lambda b: np.maximum(0, b[:, 2] - b[:, 0]) * np.maximum(0, b[:, 3] - b[:, 1])
        keep = area(cl) / area(px) > 0.3
        want = (cl - [x, y, x, y]) / [w, h, w, h]
        np.testing.assert_allclose(new[:, 1:5], want[keep], atol=1e-5)
        np.testing.assert_array_equal(new[:, 0], label[keep, 0])
        # the augmenter crops the image to the proposal
        random.seed(seed)
        out, lab = aug(src, label)
        np.testing.assert_array_equal(out.asnumpy(), src.asnumpy()[y:y + h, x:x + w])
        np.testing.assert_allclose(lab, new)
    assert hits > 10
    with pytest.warns(UserWarning):
        bad = det.DetRandomCropAug(area_range=(0.5, 0.1))
    assert not bad.enabled and bad._random_crop_proposal(np.zeros((1, 5)), 10, 10) == ()


def test_random_pad_places_image_in_canvas():
    rng = np.random.RandomState(4)
    src = mx.nd.array(rng.randint(0, 255, (40, 50, 3)), dtype=np.uint8)
    label = np.array([[1, 0.2, 0.3, 0.6, 0.8]], dtype=np.float32)
    aug = det.DetRandomPadAug(area_range=(1.5, 3.0), pad_val=(7, 8, 9))
    random.seed(0)
    x, y, w, h, new = aug._random_pad_proposal(label, 40, 50)
    random.seed(0)
    out, lab = aug(src, label)
    out = out.asnumpy()
    assert out.shape == (h, w, 3) and h >= 40 + 2 and w >= 50 + 2
    np.testing.assert_array_equal(out[y:y + 40, x:x + 50], src.asnumpy())
    mask = np.ones((h, w), bool)
    mask[y:y + 40, x:x + 50] = False
    assert (out[mask] == [7, 8, 9]).all()
    # the box stays on the same pixels
    np.testing.assert_allclose(lab[:, 1:5] * [w, h, w, h],
                               label[:, 1:5] * [50, 40, 50, 40] + [x, y, x, y], rtol=1e-5)
    np.testing.assert_allclose(lab, new)


def test_select_borrow_multi_crop_and_create():
    src = mx.nd.ones((10, 10, 3), dtype=np.uint8)
    label = np.array([[0, 0.1, 0.1, 0.9, 0.9]], dtype=np.float32)
    flip = det.DetHorizontalFlipAug(1.0)
    out, lab = det.DetRandomSelectAug([flip], skip_prob=1)(src, label.copy())
    np.testing.assert_array_equal(lab, label)
    assert det.DetRandomSelectAug([]).skip_prob == 1
    with pytest.raises(ValueError):
        det.DetRandomSelectAug([mx.image.CastAug()])
    with pytest.raises(TypeError):
        det.DetBorrowAug(flip)
    out, lab = det.DetBorrowAug(mx.image.CastAug())(src, label)
    assert out.dtype == np.float32 and lab is label
    multi = det.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.3, 0.5],
                                             area_range=(0.1, 1.0), max_attempts=[10])
    assert len(multi.aug_list) == 3
    assert [a.min_object_covered for a in multi.aug_list] == [0.1, 0.3, 0.5]
    assert all(a.max_attempts == 10 and a.area_range == (0.1, 1.0) for a in multi.aug_list)
    with pytest.raises(ValueError):
        det.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.2], max_attempts=[1, 2, 3])
    augs = det.CreateDetAugmenter((3, 32, 32), resize=40, rand_crop=0.5, rand_pad=0.5,
                                  rand_mirror=True, mean=True, std=True, brightness=0.1,
                                  hue=0.1, pca_noise=0.1, rand_gray=0.1)
    kinds = [type(a).__name__ if not isinstance(a, det.DetBorrowAug)
             else type(a.augmenter).__name__ for a in augs]
    assert kinds == ["ResizeAug", "DetRandomSelectAug", "DetHorizontalFlipAug",
                     "DetRandomSelectAug", "ForceResizeAug", "CastAug", "ColorJitterAug",
                     "HueJitterAug", "LightingAug", "RandomGrayAug", "ColorNormalizeAug"]
    assert augs[1].skip_prob == 0.5 and augs[3].aug_list[0].area_range == (1.0, 3.0)
    json.dumps([a.dumps() for a in augs])


def test_full_augmentation_runs_and_boxes_stay_normalised():
    random.seed(1)
    np.random.seed(1)
    imglist, _ = _imglist(2)
    it = mx.image.ImageDetIter(3, (3, 48, 48), imglist=imglist, path_root="", resize=64,
                               rand_crop=1, rand_pad=1, rand_mirror=True, rand_gray=0.1,
                               mean=True, std=True, brightness=0.1, contrast=0.1,
                               saturation=0.1, hue=0.1, pca_noise=0.1, inter_method=10,
                               min_object_covered=0.5, aspect_ratio_range=(0.5, 2),
                               area_range=(0.3, 3.0))
    n = 0
    for b in it:
        lab = b.label[0].asnumpy()
        real = lab[lab[:, :, 0] >= 0]
        assert real.size and ((real[:, 1:5] >= -1e-6) & (real[:, 1:5] <= 1 + 1e-6)).all()
        assert (real[:, 3] > real[:, 1]).all() and (real[:, 4] > real[:, 2]).all()
        n += 1
    assert n == 5


def test_draw_next_draws_boxes():
    imglist, _ = _imglist(0, [1] * len(IMAGES))
    it = mx.image.ImageDetIter(1, (3, 40, 40), imglist=imglist[:2], path_root="")
    images = list(it.draw_next(color=(255, 0, 0), thickness=1))
    assert len(images) == 2 and images[0].dtype == np.uint8 and images[0].shape == (40, 40, 3)
    box = imglist[0][3:7]
    x1, y1 = int(box[0] * 40), int(box[1] * 40)
    assert images[0][y1, x1].tolist() == [0, 0, 255]     # BGR of the given RGB colour


def test_crop_and_pad_proposals_equal_mxnet_1_9_1():
    """MXNet 1.9.1's proposals (tests/fixtures/detection) for 180 random crops and 180
    pads, drawn from the same Python ``random`` state, are ours exactly."""
    import sys
    here = os.path.join(os.path.dirname(__file__), "fixtures", "detection")
    want = json.load(open(os.path.join(here, "mxnet_proposals.json")))
    assert want.pop("mxnet") == "1.9.1"
    sys.path.insert(0, here)
    try:
        from make_det_fixture import proposals
    finally:
        sys.path.remove(here)
    got = proposals(mx)
    for kind in ("crop", "pad"):
        assert len(got[kind]) == len(want[kind]) == 180
        hits = 0
        for g, w in zip(got[kind], want[kind]):
            assert g[:4] == w[:4] and len(g) == len(w)
            if len(w) > 4:
                hits += 1
                assert g[4] == w[4]
                np.testing.assert_allclose(g[5], w[5], atol=1e-6)
        assert hits > 100


def test_detiter_batches_equal_mxnet_1_9_1():
    """ImageDetIter, plain and with random crop/pad/mirror after random.seed(0): the
    labels and pads MXNet 1.9.1 gave (tests/fixtures/detection/mxnet_detiter.json) are
    ours exactly; pixels agree within JPEG-decoder/resize tolerance (channel means)."""
    import sys
    here = os.path.join(os.path.dirname(__file__), "fixtures", "detection")
    want = json.load(open(os.path.join(here, "mxnet_detiter.json")))
    assert want.pop("mxnet") == "1.9.1"
    sys.path.insert(0, here)
    try:
        from make_det_fixture import detiter_batches
    finally:
        sys.path.remove(here)
    got = detiter_batches(mx, FOLDER)
    for name in ("plain", "aug"):
        assert len(got[name]) == len(want[name]) == 4
        for (gl, gm, gp), (wl, wm, wp) in zip(got[name], want[name]):
            np.testing.assert_allclose(gl, wl, atol=1e-5)
            assert gp == wp
            assert np.abs(np.array(gm) - np.array(wm)).max() < 1.5
