"""mx.image: decoding (Rust, no OpenCV), resizing with OpenCV's interpolation
codes, crops, augmenters and ImageIter; NumPy is the oracle."""

import os
import random

import numpy as np
import pytest

import oxnet as mx

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "photos")
JPG = os.path.join(FIX, "folder", "astronaut", "astronaut_000.jpg")


def _png_bytes(img):
    h, w, c = img.shape
    return mx._core.image_encode(img.tobytes(), h, w, c, ".png", 0, False)


def test_imdecode_channel_order_and_flags():
    rng = np.random.RandomState(0)
    img = rng.randint(0, 256, size=(7, 9, 3)).astype(np.uint8)
    buf = _png_bytes(img)  # PNG is lossless: exact pixels
    rgb = mx.image.imdecode(buf)
    assert rgb.dtype == np.uint8 and rgb.shape == (7, 9, 3)
    np.testing.assert_array_equal(rgb.asnumpy(), img)
    np.testing.assert_array_equal(mx.image.imdecode(buf, to_rgb=0).asnumpy(), img[:, :, ::-1])
    gray = mx.image.imdecode(buf, flag=0).asnumpy()
    assert gray.shape == (7, 9, 1)
    ref = img.astype(np.float64) @ np.array([0.299, 0.587, 0.114])
    assert np.abs(gray[:, :, 0] - ref).max() <= 1.0
    np.testing.assert_array_equal(mx.image.imdecode(bytearray(buf)).asnumpy(), img)


def test_imread_matches_imdecode_and_jpeg_is_close_to_source():
    a = mx.image.imread(JPG).asnumpy()
    b = mx.image.imdecode(open(JPG, "rb").read()).asnumpy()
    np.testing.assert_array_equal(a, b)
    # re-encode at high quality and decode: within JPEG tolerance
    h, w, c = a.shape
    jpg = mx._core.image_encode(a.tobytes(), h, w, c, ".jpg", 98, False)
    back = mx.image.imdecode(jpg).asnumpy()
    assert np.abs(back.astype(int) - a.astype(int)).mean() < 2.0


def test_imdecode_bad_input():
    with pytest.raises(mx.MXNetError, match="empty"):
        mx.image.imdecode(b"")
    with pytest.raises(mx.MXNetError, match="not a JPEG or PNG"):
        mx.image.imdecode(b"clearly not image content")
    data = open(JPG, "rb").read()
    with pytest.raises(mx.MXNetError):
        mx.image.imdecode(data[:200])  # cut inside the headers
    with pytest.raises(mx.MXNetError, match="cannot read image file"):
        mx.image.imread("/nonexistent/x.jpg")
    with pytest.raises(ValueError):
        mx.image.imdecode("a string")


def test_fuzz_decoder_never_crashes():
    data = bytearray(open(JPG, "rb").read())
    rng = random.Random(0)
    for _ in range(60):
        m = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            m[rng.randrange(3, len(m))] = rng.randrange(256)
        try:
            mx.image.imdecode(bytes(m))
        except mx.MXNetError:
            pass


def _np_bilinear(a, nh, nw):
    h, w = a.shape[:2]

    def axis(n, nn):
        f = (np.arange(nn) + 0.5) * n / nn - 0.5
        s = np.floor(f).astype(int)
        x = f - s
        x[s < 0] = 0
        s[s < 0] = 0
        hi = s >= n - 1
        x[hi] = 0
        s[hi] = n - 1
        return s, np.minimum(s + 1, n - 1), x

    y0, y1, fy = axis(h, nh)
    x0, x1, fx = axis(w, nw)
    a = a.astype(np.float64)
    top = a[y0][:, x0] * (1 - fx)[None, :, None] + a[y0][:, x1] * fx[None, :, None]
    bot = a[y1][:, x0] * (1 - fx)[None, :, None] + a[y1][:, x1] * fx[None, :, None]
    return top * (1 - fy)[:, None, None] + bot * fy[:, None, None]


def test_imresize_bilinear_and_nearest_match_numpy():
    rng = np.random.RandomState(1)
    src = rng.uniform(0, 255, size=(13, 17, 3)).astype(np.float32)
    for nh, nw in [(20, 31), (6, 5), (13, 17)]:
        out = mx.image.imresize(mx.nd.array(src), nw, nh, interp=1).asnumpy()
        np.testing.assert_allclose(out, _np_bilinear(src, nh, nw), rtol=1e-4, atol=1e-3)
        near = mx.image.imresize(mx.nd.array(src), nw, nh, interp=0).asnumpy()
        ys = np.minimum((np.arange(nh) * 13 / nh).astype(int), 12)
        xs = np.minimum((np.arange(nw) * 17 / nw).astype(int), 16)
        np.testing.assert_array_equal(near, src[ys][:, xs])
    u8 = mx.image.imresize(mx.nd.array(src.astype(np.uint8), dtype=np.uint8), 8, 8, interp=3)
    assert u8.dtype == np.uint8 and u8.shape == (8, 8, 3)
    area = mx.image.imresize(mx.nd.array(src[:12, :16]), 8, 6, interp=3).asnumpy()
    ref = src[:12, :16].reshape(6, 2, 8, 2, 3).mean(axis=(1, 3))
    np.testing.assert_allclose(area, ref, rtol=1e-4, atol=1e-3)
    # an unknown interpolation code is the op's error (MXNet: OpenCV fails in _cvimresize)
    for bad in (7, -1):
        with pytest.raises(mx.MXNetError):
            mx.image.imresize(mx.nd.array(src), 4, 4, interp=bad).asnumpy()
    with pytest.raises(mx.MXNetError):
        mx.image.imresize(mx.nd.array(src), 0, 4)


def test_resize_short_crops_and_normalize():
    src = mx.nd.array(np.random.uniform(0, 255, (40, 60, 3)))
    assert mx.image.resize_short(src, 20).shape == (20, 30, 3)
    assert mx.image.scale_down((640, 480), (720, 120)) == (640, 106)
    out, (x0, y0, w, h) = mx.image.center_crop(src, (30, 20))
    assert (x0, y0, w, h) == (15, 10, 30, 20)
    np.testing.assert_array_equal(out.asnumpy(), src.asnumpy()[10:30, 15:45])
    out, (x0, y0, w, h) = mx.image.random_crop(src, (10, 10))
    np.testing.assert_array_equal(out.asnumpy(), src.asnumpy()[y0:y0 + 10, x0:x0 + 10])
    out, _ = mx.image.random_size_crop(src, (16, 16), 0.3, (0.75, 1.33))
    assert out.shape == (16, 16, 3)
    fixed = mx.image.fixed_crop(src, 1, 2, 5, 6)
    np.testing.assert_array_equal(fixed.asnumpy(), src.asnumpy()[2:8, 1:6])
    with pytest.raises(mx.MXNetError):
        mx.image.fixed_crop(src, 50, 0, 20, 5)
    mean, std = np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 4.0])
    normed = mx.image.color_normalize(src.copy(), mx.nd.array(mean), mx.nd.array(std))
    np.testing.assert_allclose(normed.asnumpy(), (src.asnumpy() - mean) / std, rtol=1e-5)


def test_copy_make_border_matches_numpy_pad():
    a = np.random.RandomState(2).randint(0, 255, (5, 6, 3)).astype(np.float32)
    modes = {1: "edge", 2: "symmetric", 3: "wrap", 4: "reflect"}
    for t, mode in modes.items():
        out = mx.image.copyMakeBorder(mx.nd.array(a), 2, 1, 3, 2, type=t).asnumpy()
        np.testing.assert_array_equal(out, np.pad(a, ((2, 1), (3, 2), (0, 0)), mode=mode))
    out = mx.image.copyMakeBorder(mx.nd.array(a), 1, 1, 1, 1, type=0, values=[7, 8, 9]).asnumpy()
    assert (out[0, 0] == [7, 8, 9]).all()


def test_augmenters_and_image_iter():
    src = mx.nd.array(np.random.uniform(0, 255, (50, 70, 3)))
    augs = mx.image.CreateAugmenter((3, 32, 32), resize=40, rand_crop=True, rand_resize=True,
                                    rand_mirror=True, mean=True, std=True, brightness=0.1,
                                    contrast=0.1, saturation=0.1, hue=0.1, pca_noise=0.1,
                                    rand_gray=0.2, inter_method=10)
    x = src
    for a in augs:
        x = a(x)
        a.dumps()
    assert x.shape == (32, 32, 3) and x.dtype == np.float32
    flipped = mx.image.HorizontalFlipAug(1.0)(src)
    np.testing.assert_array_equal(flipped.asnumpy(), src.asnumpy()[:, ::-1])
    assert mx.image.ForceResizeAug((10, 12))(src).shape == (12, 10, 3)
    assert mx.image.CastAug("float64")(src).dtype == np.float64

    lst = [[float(i % 3), os.path.join("folder", *p.split("/")[1:])]
           for i, p in enumerate(l.strip().split("\t")[2] for l in open(os.path.join(FIX, "train.lst")))]
    it = mx.image.ImageIter(4, (3, 32, 32), imglist=lst[:10], path_root=FIX, resize=40)
    batches = list(it)
    assert len(batches) == 3 and batches[-1].pad == 2
    assert batches[0].data[0].shape == (4, 3, 32, 32)
    np.testing.assert_array_equal(batches[0].label[0].asnumpy(), [0, 1, 2, 0])
    it = mx.image.ImageIter(5, (3, 24, 24), path_imgrec=os.path.join(FIX, "train.rec"),
                            path_imgidx=os.path.join(FIX, "train.idx"), resize=30,
                            shuffle=True)
    n = sum(b.data[0].shape[0] - b.pad for b in it)
    assert n == 45


def test_registry_image_ops():
    a = np.arange(2 * 5 * 4 * 3).reshape(2, 5, 4, 3).astype(np.float32)
    np.testing.assert_array_equal(mx.nd.image.flip_left_right(mx.nd.array(a)).asnumpy(),
                                  a[:, :, ::-1])
    np.testing.assert_array_equal(mx.nd.image.flip_top_bottom(mx.nd.array(a[0])).asnumpy(),
                                  a[0, ::-1])
    np.testing.assert_array_equal(mx.nd.image.crop(mx.nd.array(a), 1, 2, 2, 3).asnumpy(),
                                  a[:, 2:5, 1:3])
    r = mx.nd.image.resize(mx.nd.array(a[0]), size=(8, 10)).asnumpy()
    np.testing.assert_allclose(r, _np_bilinear(a[0], 10, 8), rtol=1e-4, atol=1e-3)
    with pytest.raises(mx.MXNetError, match="outside"):
        mx.nd.image.crop(mx.nd.array(a), 3, 0, 4, 2)
    with pytest.raises(mx.MXNetError, match="greater than 0"):
        mx.nd.image.resize(mx.nd.array(a[0]), size=(-1, 2))
