"""mx.image.imrotate / random_rotate and the Rotate / RandomRotation transforms:
against a NumPy BilinearSampler (MXNet's sampling: zero padding, x -> (x + 1)(W - 1)/2)
and scipy.ndimage.rotate; gradients; bad inputs."""

import numpy as np
import pytest
import scipy.ndimage

import oxnet as mx
from oxnet.gluon.data.vision import transforms as T
from oxnet.image.rotate import _bilinear_sample


def _np_bilinear(data, grid):
    n, c, h, w = data.shape
    x = (grid[:, 0] + 1) * (w - 1) / 2
    y = (grid[:, 1] + 1) * (h - 1) / 2
    x0, y0 = np.floor(x), np.floor(y)
    out = np.zeros((n, c) + x.shape[1:], dtype=np.float64)
    for dy in (0, 1):
        for dx in (0, 1):
            xi, yi = x0 + dx, y0 + dy
            wgt = (1 - np.abs(x - xi)) * (1 - np.abs(y - yi))
            ok = (xi >= 0) & (xi <= w - 1) & (yi >= 0) & (yi <= h - 1)
            xc = np.clip(xi, 0, w - 1).astype(int)
            yc = np.clip(yi, 0, h - 1).astype(int)
            vals = data[np.arange(n)[:, None, None, None], np.arange(c)[None, :, None, None],
                        yc[:, None], xc[:, None]]
            out += vals * (wgt * ok)[:, None]
    return out


def _np_rotate(img, deg):
    """Rotation of (N, C, H, W) by MXNet's grid, through the NumPy sampler."""
    n, c, h, w = img.shape
    rad = np.deg2rad(np.asarray(deg, dtype=np.float64)).reshape(-1, 1, 1)
    rows = np.arange(h)[:, None] - (h - 1) / 2 + np.zeros((1, w))
    cols = np.arange(w)[None, :] - (w - 1) / 2 + np.zeros((h, 1))
    x = (cols * np.cos(rad) - rows * np.sin(rad)) / ((w - 1) / 2)
    y = (cols * np.sin(rad) + rows * np.cos(rad)) / ((h - 1) / 2)
    return _np_bilinear(img, np.stack([x, y], axis=1))


def test_bilinear_sample_matches_numpy_including_outside():
    rs = np.random.RandomState(0)
    data = rs.rand(2, 3, 5, 7).astype(np.float32)
    grid = rs.uniform(-1.4, 1.4, (2, 2, 4, 6)).astype(np.float32)
    got = _bilinear_sample(mx.nd.array(data), mx.nd.array(grid)).asnumpy()
    np.testing.assert_allclose(got, _np_bilinear(data, grid), rtol=1e-5, atol=1e-6)


def test_imrotate_matches_scipy_and_numpy():
    xlin = np.linspace(0, 0.5, 30)[:, None]
    ylin = np.linspace(0, 0.5, 60)[None, :]
    img = (xlin + ylin)[None].astype(np.float32)                       # (1, 30, 60)
    got = mx.image.imrotate(mx.nd.array(img), 6).asnumpy()
    ref = scipy.ndimage.rotate(img[0], 6, axes=(1, 0), reshape=False, order=1,
                               mode="constant", prefilter=False)
    np.testing.assert_allclose(got[0, 10:20, 20:40], ref[10:20, 20:40], atol=1e-5)
    np.testing.assert_allclose(got, _np_rotate(img[None], [6])[0], rtol=1e-4, atol=1e-5)
    # a batch, one angle per image, and one angle for the whole batch
    rs = np.random.RandomState(1)
    batch = rs.rand(4, 2, 9, 13).astype(np.float32)
    angles = np.array([-30, 0, 45, 200], dtype=np.float32)
    got = mx.image.imrotate(mx.nd.array(batch), mx.nd.array(angles)).asnumpy()
    np.testing.assert_allclose(got, _np_rotate(batch, angles), rtol=1e-4, atol=1e-5)
    got = mx.image.imrotate(mx.nd.array(batch), 17).asnumpy()
    np.testing.assert_allclose(got, _np_rotate(batch, [17] * 4), rtol=1e-4, atol=1e-5)


def test_imrotate_quarter_turns_move_pixels_exactly():
    img = mx.nd.array([[[0., 0., 0.], [0., 0., 1.], [0., 0., 0.]]])
    want = {90: (0, 1), 180: (1, 0), 270: (2, 1), 360: (1, 2)}
    for deg, (i, j) in want.items():
        out = np.zeros((1, 3, 3), dtype=np.float32)
        out[0, i, j] = 1
        np.testing.assert_allclose(mx.image.imrotate(img, deg).asnumpy(), out, atol=1e-6)


def test_imrotate_zoom():
    img = np.ones((1, 1, 20, 40), dtype=np.float32)
    plain = mx.image.imrotate(mx.nd.array(img), 30).asnumpy()
    zin = mx.image.imrotate(mx.nd.array(img), 30, zoom_in=True).asnumpy()
    zout = mx.image.imrotate(mx.nd.array(img), 30, zoom_out=True).asnumpy()
    # zoom_in: no zero padding shows inside; the corner pixels (MXNet scales by the
    # corners of the H x W frame, half a pixel beyond the corner pixels' centres)
    # are sampled half inside
    assert zin[..., 1:-1, 1:-1].min() > 0.99 and zin.min() > 0.8
    # zoom_out: the whole rotated image shows, so there is more padding than without
    assert (zout < 0.5).sum() > (plain < 0.5).sum()
    # zero rotation with zoom is the identity
    np.testing.assert_allclose(
        mx.image.imrotate(mx.nd.array(img), 0, zoom_out=True).asnumpy(), img, atol=1e-5)


def test_imrotate_gradient_is_the_sampling_weights():
    rs = np.random.RandomState(2)
    data = mx.nd.array(rs.rand(1, 1, 6, 8).astype(np.float32))
    data.attach_grad()
    with mx.autograd.record():
        out = mx.image.imrotate(data, 25)
    out.backward()
    # d(sum of out)/d(data[p]) = sum of the weights with which p is sampled
    eye = np.eye(48, dtype=np.float64).reshape(48, 1, 6, 8)
    want = _np_rotate(eye, [25] * 48).reshape(48, -1).sum(axis=1).reshape(1, 1, 6, 8)
    np.testing.assert_allclose(data.grad.asnumpy(), want, rtol=1e-4, atol=1e-5)


def test_imrotate_bad_inputs():
    img = mx.nd.ones((3, 4, 5))
    with pytest.raises(ValueError, match="cannot be both True"):
        mx.image.imrotate(img, 3, zoom_in=True, zoom_out=True)
    with pytest.raises(TypeError, match="float32"):
        mx.image.imrotate(mx.nd.ones((3, 4, 5), dtype="uint8"), 3)
    with pytest.raises(TypeError, match="scalar"):
        mx.image.imrotate(img, mx.nd.array([1, 2]))
    with pytest.raises(ValueError, match="number of rotation angles"):
        mx.image.imrotate(mx.nd.ones((2, 3, 4, 5)), mx.nd.array([1, 2, 3]))
    with pytest.raises(ValueError, match="3D and 4D"):
        mx.image.imrotate(mx.nd.ones((4, 5)), 3)


def test_random_rotate_draws_angles_in_limits():
    rs = np.random.RandomState(3)
    batch = rs.rand(3, 1, 7, 9).astype(np.float32)
    np.random.seed(5)
    got = mx.image.random_rotate(mx.nd.array(batch), (-20, 20)).asnumpy()
    np.random.seed(5)
    angles = np.random.uniform(-20, 20, size=3)
    np.testing.assert_allclose(got, _np_rotate(batch, angles), rtol=1e-4, atol=1e-5)
    single = mx.image.random_rotate(mx.nd.array(batch[0]), (-5, 5))
    assert single.shape == (1, 7, 9)


def test_rotate_transforms():
    x = mx.nd.array(np.random.RandomState(4).rand(2, 3, 8, 8).astype(np.float32))
    np.testing.assert_allclose(T.Rotate(40)(x).asnumpy(), _np_rotate(x.asnumpy(), [40, 40]),
                               rtol=1e-4, atol=1e-5)
    assert T.Rotate(10)(x[0]).shape == (3, 8, 8)
    with pytest.raises(TypeError, match="after ToTensor"):
        T.Rotate(10)(mx.nd.ones((3, 4, 4), dtype="uint8"))
    assert T.RandomRotation((-10, 10), rotate_with_proba=0.0)(x) is x
    assert T.RandomRotation((-10, 10))(x).shape == x.shape
    with pytest.raises(ValueError, match="between 0 and 1"):
        T.RandomRotation((-10, 10), rotate_with_proba=1.5)
    with pytest.raises(ValueError, match="ascending"):
        T.RandomRotation((10, -10))
    with pytest.raises(TypeError, match="after ToTensor"):
        T.RandomRotation((-10, 10))(mx.nd.ones((3, 4, 4), dtype="uint8"))
