"""ROIPooling, contrib.ROIAlign and contrib.PSROIPooling (op/roi.rs) against NumPy
references of MXNet's definitions, gradients (central differences for the
averaging ops, the arg max for ROIPooling), and bad inputs."""

import numpy as np
import pytest

import oxnet as mx
from _gradcheck import grad_check
from oxnet.base import MXNetError

nd = mx.nd


def bilinear(im, y, x):
    H, W = im.shape
    if y < -1 or y > H or x < -1 or x > W:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    yl, xl = int(y), int(x)
    if yl >= H - 1:
        yl = yh = H - 1
        y = float(yl)
    else:
        yh = yl + 1
    if xl >= W - 1:
        xl = xh = W - 1
        x = float(xl)
    else:
        xh = xl + 1
    ly, lx = y - yl, x - xl
    return (1 - ly) * (1 - lx) * im[yl, xl] + (1 - ly) * lx * im[yl, xh] + ly * (1 - lx) * im[yh, xl] + ly * lx * im[yh, xh]


def roi_align_ref(data, rois, ph, pw, scale, ratio):
    R, C = rois.shape[0], data.shape[1]
    out = np.zeros((R, C, ph, pw))
    for r in range(R):
        b = int(rois[r, 0])
        sw, sh, ew, eh = rois[r, 1:] * scale
        rw, rh = max(ew - sw, 1.0), max(eh - sh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = ratio if ratio > 0 else int(np.ceil(rh / ph))
        gw = ratio if ratio > 0 else int(np.ceil(rw / pw))
        for c in range(C):
            for i in range(ph):
                for j in range(pw):
                    v = 0.0
                    for iy in range(gh):
                        y = sh + i * bh + (iy + 0.5) * bh / gh
                        for ix in range(gw):
                            x = sw + j * bw + (ix + 0.5) * bw / gw
                            v += bilinear(data[b, c], y, x)
                    out[r, c, i, j] = v / (gh * gw)
    return out


def roi_pool_ref(data, rois, ph, pw, scale):
    R, C, H, W = rois.shape[0], data.shape[1], data.shape[2], data.shape[3]
    out = np.zeros((R, C, ph, pw))
    rnd = lambda v: int(np.sign(v) * np.floor(abs(v) + 0.5))  # noqa: E731
    for r in range(R):
        b = int(rois[r, 0])
        sw, sh, ew, eh = [rnd(v * scale) for v in rois[r, 1:]]
        rh, rw = max(eh - sh + 1, 1), max(ew - sw + 1, 1)
        for i in range(ph):
            hs = min(max(int(np.floor(i * rh / ph)) + sh, 0), H)
            he = min(max(int(np.ceil((i + 1) * rh / ph)) + sh, 0), H)
            for j in range(pw):
                ws = min(max(int(np.floor(j * rw / pw)) + sw, 0), W)
                we = min(max(int(np.ceil((j + 1) * rw / pw)) + sw, 0), W)
                if he > hs and we > ws:
                    out[r, :, i, j] = data[b, :, hs:he, ws:we].max(axis=(1, 2))
    return out


def psroi_ref(data, rois, scale, od, ps):
    R, H, W = rois.shape[0], data.shape[2], data.shape[3]
    out = np.zeros((R, od, ps, ps))
    for r in range(R):
        b = int(rois[r, 0])
        sw, sh = np.round(rois[r, 1]) * scale, np.round(rois[r, 2]) * scale
        ew, eh = (np.round(rois[r, 3]) + 1) * scale, (np.round(rois[r, 4]) + 1) * scale
        rw, rh = max(ew - sw, 0.1), max(eh - sh, 0.1)
        for c in range(od):
            for i in range(ps):
                hs = min(max(int(np.floor(i * rh / ps + sh)), 0), H)
                he = min(max(int(np.ceil((i + 1) * rh / ps + sh)), 0), H)
                for j in range(ps):
                    ws = min(max(int(np.floor(j * rw / ps + sw)), 0), W)
                    we = min(max(int(np.ceil((j + 1) * rw / ps + sw)), 0), W)
                    if he > hs and we > ws:
                        out[r, c, i, j] = data[b, (c * ps + i) * ps + j, hs:he, ws:we].mean()
    return out


ROIS = np.array([[0, 1.1, 1.3, 6.2, 5.7], [1, 0.0, 2.1, 3.9, 7.2], [1, 2.5, 0.5, 2.5, 0.5]])


def test_roi_align():
    data = np.random.RandomState(0).randn(2, 3, 8, 7)
    for ratio in (-1, 2):
        got = nd.contrib.ROIAlign(nd.array(data, dtype="float64"), nd.array(ROIS, dtype="float64"), pooled_size=(2, 3),
                                  spatial_scale=1.0, sample_ratio=ratio).asnumpy()
        np.testing.assert_allclose(got, roi_align_ref(data, ROIS, 2, 3, 1.0, ratio), rtol=1e-10, atol=1e-12)
    rois = nd.array(ROIS, dtype="float64")
    grad_check(lambda d: nd.contrib.ROIAlign(d, rois, pooled_size=(2, 2), spatial_scale=1.0, sample_ratio=2), data)
    # position-sensitive: bin (i, j) of output channel c reads channel c*PH*PW + i*PW + j.
    ps = np.random.RandomState(1).randn(2, 8, 6, 6)
    got = nd.contrib.ROIAlign(nd.array(ps), nd.array(ROIS), pooled_size=(2, 2), spatial_scale=1.0,
                              position_sensitive=True).asnumpy()
    full = roi_align_ref(ps, ROIS, 2, 2, 1.0, -1)
    want = np.stack([np.stack([np.stack([full[:, c * 4 + i * 2 + j, i, j] for j in range(2)], -1)
                               for i in range(2)], -2) for c in range(2)], 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("ps", [False, True])
def test_roi_align_many_rois_forward_and_adjoint(dtype, ps):
    # many ROIs, some of them off the map or of an absent image (zero output), in
    # float32 and float64; the gradient is the forward's adjoint: <A d, g> = <d, A^T g>
    rng = np.random.RandomState(3)
    data = rng.randn(2, 8, 11, 13)
    n = 40
    xy = rng.uniform(-4, 12, (n, 2))
    rois = np.concatenate([rng.randint(-1, 3, (n, 1)), xy, xy + rng.uniform(0, 9, (n, 2))], axis=1)
    kw = dict(pooled_size=(2, 2), spatial_scale=0.9, sample_ratio=-1 if ps else 2, position_sensitive=ps)
    d, r = nd.array(data, dtype=dtype), nd.array(rois, dtype=dtype)
    d.attach_grad()
    with mx.autograd.record():
        out = nd.contrib.ROIAlign(d, r, **kw)
    g = rng.randn(*out.shape)
    out.backward(nd.array(g, dtype=dtype))
    ref_rois = np.array(rois, dtype=dtype).astype(np.float64)
    absent = (ref_rois[:, 0] < 0) | (ref_rois[:, 0] >= 2)
    ref_rois[absent, 0] = 0
    full = roi_align_ref(np.array(data, dtype=dtype).astype(np.float64), ref_rois, 2, 2, 0.9, -1 if ps else 2)
    full[absent] = 0
    if ps:
        want = np.stack([np.stack([np.stack([full[:, c * 4 + i * 2 + j, i, j] for j in range(2)], -1)
                                   for i in range(2)], -2) for c in range(2)], 1)
    else:
        want = full
    tol = 1e-10 if dtype == "float64" else 1e-4
    np.testing.assert_allclose(out.asnumpy(), want, rtol=tol, atol=tol)
    lhs = (out.asnumpy().astype(np.float64) * g).sum()
    rhs = (data * d.grad.asnumpy().astype(np.float64)).sum()
    np.testing.assert_allclose(lhs, rhs, rtol=tol * 10)


def test_roi_pooling():
    data = np.random.RandomState(2).randn(2, 3, 8, 7)
    got = nd.ROIPooling(nd.array(data, dtype="float64"), nd.array(ROIS, dtype="float64"), pooled_size=(2, 3),
                        spatial_scale=1.0).asnumpy()
    np.testing.assert_allclose(got, roi_pool_ref(data, ROIS, 2, 3, 1.0))
    x = nd.array(data)
    x.attach_grad()
    with mx.autograd.record():
        y = nd.ROIPooling(x, nd.array(ROIS[:1]), pooled_size=(1, 1), spatial_scale=1.0)
    y.backward()
    want = np.zeros_like(data)
    for c in range(3):
        sub = data[0, c, 1:7, 1:7]
        k = np.unravel_index(np.argmax(sub), sub.shape)
        want[0, c, 1 + k[0], 1 + k[1]] = 1
    np.testing.assert_allclose(x.grad.asnumpy(), want)


def test_psroi_pooling():
    data = np.random.RandomState(3).randn(2, 2 * 9, 10, 10)
    rois = np.array([[0, 10, 22, 100, 130], [1, 20, 15, 150, 160]])
    got = nd.contrib.PSROIPooling(nd.array(data, dtype="float64"), nd.array(rois, dtype="float64"), spatial_scale=0.0625,
                                  output_dim=2, pooled_size=3).asnumpy()
    np.testing.assert_allclose(got, psroi_ref(data, rois, 0.0625, 2, 3), rtol=1e-10)
    r = nd.array(rois, dtype="float64")
    grad_check(lambda d: nd.contrib.PSROIPooling(d, r, spatial_scale=0.0625, output_dim=2, pooled_size=3), data[:, :, :6, :6])



def roi_pool_ref_typed(data, rois, ph, pw, scale, dt):
    """ROIPooling as MXNet computes its bins: in the data's type (`dt`), with the
    float32 spatial_scale; rows of rois with a batch index outside [0, N) stay 0."""
    N, C, H, W = data.shape
    out = np.zeros((rois.shape[0], C, ph, pw), dtype=dt)
    nonempty = np.zeros((rois.shape[0], ph, pw), dtype=bool)
    sc = dt(np.float32(scale))
    rnd = lambda v: int(np.sign(v) * np.floor(abs(v) + 0.5))  # noqa: E731
    for r in range(rois.shape[0]):
        b = rois[r, 0]
        if b < 0 or b >= N:
            continue
        sw, sh, ew, eh = [rnd(dt(v) * sc) for v in rois[r, 1:]]
        bh, bw = dt(max(eh - sh + 1, 1)) / dt(ph), dt(max(ew - sw + 1, 1)) / dt(pw)
        for i in range(ph):
            hs = min(max(int(np.floor(dt(i) * bh)) + sh, 0), H)
            he = min(max(int(np.ceil(dt(i + 1) * bh)) + sh, 0), H)
            for j in range(pw):
                ws = min(max(int(np.floor(dt(j) * bw)) + sw, 0), W)
                we = min(max(int(np.ceil(dt(j + 1) * bw)) + sw, 0), W)
                if he > hs and we > ws:
                    out[r, :, i, j] = data[int(b), :, hs:he, ws:we].max(axis=(1, 2))
                    nonempty[r, i, j] = True
    return out, nonempty


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_roi_pooling_many_rois(dtype):
    # more (roi, channel) planes than threads, ROIs partly outside the map and
    # with batch indices outside [0, N) (zero output, no gradient)
    rs = np.random.RandomState(6)
    dt = np.dtype(dtype).type
    data = rs.standard_normal((3, 16, 20, 18)).astype(dtype)
    R = 60
    xy = rs.uniform(-10, 70, (R, 2))
    rois = np.concatenate([rs.randint(-1, 4, (R, 1)), xy, xy + rs.uniform(0, 50, (R, 2))], axis=1).astype(dtype)
    og = rs.standard_normal((R, 16, 3, 2)).astype(dtype)
    x = nd.array(data, dtype=dtype)
    x.attach_grad()
    with mx.autograd.record():
        y = nd.ROIPooling(x, nd.array(rois, dtype=dtype), pooled_size=(3, 2), spatial_scale=0.25)
    y.backward(nd.array(og, dtype=dtype))
    want, nonempty = roi_pool_ref_typed(data, rois, 3, 2, 0.25, dt)
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y.asnumpy(), want)
    # each non-empty bin's gradient lands on one cell holding the bin's max
    gx = x.grad.asnumpy().astype("float64")
    mask = nonempty[:, None, :, :]
    np.testing.assert_allclose(gx.sum(), (og * mask).sum(dtype="float64"), rtol=1e-5)
    np.testing.assert_allclose((gx * data).sum(), (og.astype("float64") * want * mask).sum(), rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_psroi_pooling_many_rois_and_adjoint(dtype):
    rs = np.random.RandomState(7)
    od, ps = 4, 3
    data = rs.standard_normal((2, od * ps * ps, 15, 17)).astype(dtype)
    R = 50
    xy = rs.randint(-8, 60, (R, 2))
    rois = np.concatenate([rs.randint(0, 2, (R, 1)), xy, xy + rs.randint(0, 40, (R, 2))], axis=1).astype(dtype)
    og = rs.standard_normal((R, od, ps, ps)).astype(dtype)
    x = nd.array(data, dtype=dtype)
    x.attach_grad()
    with mx.autograd.record():
        y = nd.contrib.PSROIPooling(x, nd.array(rois, dtype=dtype), spatial_scale=0.25, output_dim=od, pooled_size=ps)
    y.backward(nd.array(og, dtype=dtype))
    tol = 1e-5 if dtype == "float32" else 1e-12
    want = psroi_ref(data.astype("float64"), rois.astype("float64"), 0.25, od, ps)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=tol, atol=tol)
    # the backward is the adjoint of the (linear) forward
    lhs = (y.asnumpy().astype("float64") * og).sum()
    rhs = (data.astype("float64") * x.grad.asnumpy()).sum()
    np.testing.assert_allclose(lhs, rhs, rtol=tol)


def test_psroi_pooling_bounds_in_the_data_type():
    # as in MXNet, the bin bounds are computed in the data's type with the float32
    # spatial_scale: (9 + 1) * 0.1f is 1 in float32 (one cell) but above 1 in
    # float64 (ceil: two cells)
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    for dtype, want in (("float64", 2.5), ("float32", 0.0)):
        y = nd.contrib.PSROIPooling(nd.array(x, dtype=dtype), nd.array([[0, 0, 0, 9, 9]], dtype=dtype),
                                    spatial_scale=0.1, output_dim=1, pooled_size=1)
        assert y.asnumpy().ravel().tolist() == [want]


def rroi_ref(data, rois, ph, pw, scale, ratio):
    R, C = rois.shape[0], data.shape[1]
    out = np.zeros((R, C, ph, pw))
    for r in range(R):
        b = int(rois[r, 0])
        cx, cy, rw, rh = rois[r, 1:5] * scale
        t = rois[r, 5] * np.pi / 180
        rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = ratio if ratio > 0 else int(np.ceil(rh / ph))
        gw = ratio if ratio > 0 else int(np.ceil(rw / pw))
        for c in range(C):
            for i in range(ph):
                for j in range(pw):
                    v = 0.0
                    for iy in range(gh):
                        yy = -rh / 2 + i * bh + (iy + 0.5) * bh / gh
                        for ix in range(gw):
                            xx = -rw / 2 + j * bw + (ix + 0.5) * bw / gw
                            v += bilinear(data[b, c], yy * np.cos(t) - xx * np.sin(t) + cy,
                                          xx * np.cos(t) + yy * np.sin(t) + cx)
                    out[r, c, i, j] = v / (gh * gw)
    return out


def test_rroi_align():
    data = np.random.RandomState(4).randn(2, 2, 9, 8)
    rois = np.array([[0, 4.0, 4.5, 5.0, 3.0, 30.0], [1, 3.0, 2.0, 2.5, 6.0, 120.0]])
    for ratio in (-1, 2):
        got = nd.contrib.RROIAlign(nd.array(data, dtype="float64"), nd.array(rois, dtype="float64"), pooled_size=(2, 3),
                                   spatial_scale=1.0, sampling_ratio=ratio).asnumpy()
        np.testing.assert_allclose(got, rroi_ref(data, rois, 2, 3, 1.0, ratio), rtol=1e-10, atol=1e-12)
    with pytest.raises(MXNetError, match="RROIAlign"):
        nd.contrib.RROIAlign(nd.ones((1, 2, 4, 4)), nd.ones((2, 5)), pooled_size=(2, 2), spatial_scale=1.0)


def test_roi_bad_inputs():
    with pytest.raises(MXNetError, match="ROIAlign"):
        nd.contrib.ROIAlign(nd.ones((1, 2, 4, 4)), nd.ones((2, 4)), pooled_size=(2, 2), spatial_scale=1.0)
    with pytest.raises(MXNetError, match="ROIPooling"):
        nd.ROIPooling(nd.ones((2, 4, 4)), nd.ones((2, 5)), pooled_size=(2, 2), spatial_scale=1.0)
    with pytest.raises(MXNetError, match="PSROIPooling"):
        nd.contrib.PSROIPooling(nd.ones((1, 5, 4, 4)), nd.ones((1, 5)), spatial_scale=1.0, output_dim=2, pooled_size=2)
