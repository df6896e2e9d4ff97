"""Deformable convolutions (op/contrib_deform.rs): DeformableConvolution and
ModulatedDeformableConvolution, forward against a NumPy reference (bilinear
sampling at offset positions; v1 samples as MXNet 1.9.1's CPU kernel, checked on
values taken from MXNet), reductions to Convolution, numerical gradients of every
input, float32 against float64, symbols and bad inputs."""

import numpy as np
import pytest

import oxnet as mx
from _gradcheck import grad_check

nd = mx.nd


def bilinear(im, y, x):
    H, W = im.shape
    if y <= -1 or x <= -1 or y >= H or x >= W:
        return 0.0
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    ly, lx = y - y0, x - x0
    v = 0.0
    for yy, xx, w in [(y0, x0, (1 - ly) * (1 - lx)), (y0, x0 + 1, (1 - ly) * lx),
                      (y0 + 1, x0, ly * (1 - lx)), (y0 + 1, x0 + 1, ly * lx)]:
        if 0 <= yy < H and 0 <= xx < W:
            v += w * im[yy, xx]
    return v


def bilinear_v1(im, y, x):
    """DeformableConvolution's (v1) sampling in MXNet 1.9.1's CPU kernel: 0 outside
    [0, H) x [0, W); a point in the last row (column) band is clamped onto it."""
    H, W = im.shape
    if not (0 <= y < H and 0 <= x < W):
        return 0.0
    y0, x0 = int(y), int(x)
    if y0 >= H - 1:
        y0, y = H - 1, float(H - 1)
    if x0 >= W - 1:
        x0, x = W - 1, float(W - 1)
    y1, x1 = min(y0 + 1, H - 1), min(x0 + 1, W - 1)
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * im[y0, x0] + (1 - ly) * lx * im[y0, x1] + ly * (1 - lx) * im[y1, x0]
            + ly * lx * im[y1, x1])


def deform_ref(data, offset, mask, weight, bias, kernel, stride=(1, 1), pad=(0, 0), dilate=(1, 1), groups=1, dg=1):
    N, C, H, W = data.shape
    F = weight.shape[0]
    kh, kw = kernel
    OH = (H + 2 * pad[0] - dilate[0] * (kh - 1) - 1) // stride[0] + 1
    OW = (W + 2 * pad[1] - dilate[1] * (kw - 1) - 1) // stride[1] + 1
    K = kh * kw
    col = np.zeros((N, C, K, OH, OW))
    for n in range(N):
        for c in range(C):
            q = c // (C // dg)
            for i in range(kh):
                for j in range(kw):
                    k = i * kw + j
                    for oy in range(OH):
                        for ox in range(OW):
                            dy = offset[n, q * 2 * K + 2 * k, oy, ox]
                            dx = offset[n, q * 2 * K + 2 * k + 1, oy, ox]
                            m = 1.0 if mask is None else mask[n, q * K + k, oy, ox]
                            y = oy * stride[0] - pad[0] + i * dilate[0] + dy
                            x = ox * stride[1] - pad[1] + j * dilate[1] + dx
                            sample = bilinear_v1 if mask is None else bilinear
                            col[n, c, k, oy, ox] = m * sample(data[n, c], y, x)
    out = np.zeros((N, F, OH, OW))
    cg, fg = C // groups, F // groups
    for f in range(F):
        g = f // fg
        w = weight[f].reshape(cg * K)
        out[:, f] = np.einsum("r,nrhw->nhw", w, col[:, g * cg:(g + 1) * cg].reshape(N, cg * K, OH, OW))
        if bias is not None:
            out[:, f] += bias[f]
    return out


def make(N=1, C=4, H=5, W=5, F=4, dg=1, groups=1, k=3, seed=0, out_hw=None):
    rng = np.random.RandomState(seed)
    OH, OW = out_hw or (H, W)
    data = rng.rand(N, C, H, W)
    offset = rng.rand(N, dg * 2 * k * k, OH, OW) * 1.6 - 0.8
    mask = rng.rand(N, dg * k * k, OH, OW)
    weight = rng.randn(F, C // groups, k, k) * 0.3
    bias = rng.randn(F)
    return data, offset, mask, weight, bias


def mdcn(data, offset, mask, weight, bias, **kw):
    args = [nd.array(v, dtype="float64") for v in (data, offset, mask, weight)]
    if bias is not None:
        args.append(nd.array(bias, dtype="float64"))
    return nd.contrib.ModulatedDeformableConvolution(*args, no_bias=bias is None, **kw)


@pytest.mark.parametrize("dg,groups,pad,dilate,stride", [(1, 1, (1, 1), (1, 1), (1, 1)), (2, 1, (2, 2), (2, 2), (1, 1)),
                                                        (1, 2, (1, 1), (1, 1), (2, 2))])
def test_modulated_forward(dg, groups, pad, dilate, stride):
    H = W = 6
    OH = (H + 2 * pad[0] - dilate[0] * 2 - 1) // stride[0] + 1
    data, offset, mask, weight, bias = make(N=2, H=H, W=W, dg=dg, groups=groups, out_hw=(OH, OH))
    kw = dict(kernel=(3, 3), num_filter=4, pad=pad, dilate=dilate, stride=stride, num_deformable_group=dg, num_group=groups)
    out = mdcn(data, offset, mask, weight, bias, **kw)
    ref = deform_ref(data, offset, mask, weight, bias, (3, 3), stride, pad, dilate, groups, dg)
    assert out.shape == ref.shape
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-10, atol=1e-12)


def test_deformable_v1_forward_and_reduction_to_convolution():
    data, offset, _, weight, bias = make(N=2, F=3)
    args = [nd.array(v, dtype="float64") for v in (data, offset, weight, bias)]
    out = nd.contrib.DeformableConvolution(*args, kernel=(3, 3), num_filter=3, pad=(1, 1))
    np.testing.assert_allclose(out.asnumpy(), deform_ref(data, offset, None, weight, bias, (3, 3), pad=(1, 1)), rtol=1e-10)
    # zero offsets (and unit masks) are an ordinary convolution
    zero = np.zeros_like(offset)
    conv = nd.Convolution(nd.array(data, dtype="float64"), nd.array(weight, dtype="float64"), nd.array(bias, dtype="float64"),
                          kernel=(3, 3), num_filter=3, pad=(1, 1)).asnumpy()
    out = nd.contrib.DeformableConvolution(nd.array(data, dtype="float64"), nd.array(zero, dtype="float64"),
                                           *args[2:], kernel=(3, 3), num_filter=3, pad=(1, 1))
    np.testing.assert_allclose(out.asnumpy(), conv, rtol=1e-10)
    out = mdcn(data, zero, np.ones((2, 9, 5, 5)), weight, bias, kernel=(3, 3), num_filter=3, pad=(1, 1))
    np.testing.assert_allclose(out.asnumpy(), conv, rtol=1e-10)


@pytest.mark.parametrize("which", ["data", "offset", "mask", "weight", "bias"])
def test_modulated_gradients(which):
    vals = dict(zip(["data", "offset", "mask", "weight", "bias"], make(C=2, F=2, H=4, W=4, dg=2, seed=3)))
    kw = dict(kernel=(3, 3), num_filter=2, pad=(1, 1), num_deformable_group=2)

    def fn(a):
        ins = [a if n == which else nd.array(vals[n], dtype="float64") for n in ["data", "offset", "mask", "weight", "bias"]]
        return nd.contrib.ModulatedDeformableConvolution(*ins, **kw)

    grad_check(fn, vals[which], h=1e-6, rtol=1e-4, atol=1e-6)


def test_deformable_v1_gradients_no_bias():
    data, offset, _, weight, _ = make(C=2, F=2, H=4, W=4, seed=5)
    kw = dict(kernel=(3, 3), num_filter=2, pad=(1, 1), no_bias=True)
    fd = nd.array(data, dtype="float64")
    fo = nd.array(offset, dtype="float64")
    fw = nd.array(weight, dtype="float64")
    grad_check(lambda a: nd.contrib.DeformableConvolution(a, fo, fw, **kw), data, rtol=1e-4, atol=1e-6)
    grad_check(lambda a: nd.contrib.DeformableConvolution(fd, a, fw, **kw), offset, rtol=1e-4, atol=1e-6)
    grad_check(lambda a: nd.contrib.DeformableConvolution(fd, fo, a, **kw), weight, rtol=1e-4, atol=1e-6)


def test_modulated_symbol():
    v = {n: mx.sym.Variable(n) for n in ["data", "offset", "mask", "weight", "bias"]}
    s = mx.sym.contrib.ModulatedDeformableConvolution(name="dcn", num_filter=4, kernel=(3, 3), pad=(1, 1),
                                                       num_deformable_group=2, **v)
    assert s.list_arguments() == ["data", "offset", "mask", "weight", "bias"]
    arg, out, _ = s.infer_shape(data=(2, 4, 5, 6))
    assert arg == [(2, 4, 5, 6), (2, 36, 5, 6), (2, 18, 5, 6), (4, 4, 3, 3), (4,)]
    assert out == [(2, 4, 5, 6)]
    data, offset, mask, weight, bias = make(N=2, W=6, dg=2)
    arrays = [nd.array(x) for x in (data, offset, mask, weight, bias)]
    grads = [nd.zeros(x.shape) for x in arrays]
    exe = s.bind(mx.cpu(), args=arrays, args_grad=grads)
    out = exe.forward(is_train=True)[0]
    ref = deform_ref(data, offset, mask, weight, bias, (3, 3), pad=(1, 1), dg=2)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-4, atol=1e-5)
    exe.backward(nd.ones(out.shape))
    # the bias gradient is the sum of the output gradient
    np.testing.assert_allclose(grads[4].asnumpy(), np.full(4, 2 * 5 * 6), rtol=1e-6)


def test_deformable_bad_inputs():
    d, o, m, w = nd.ones((1, 4, 5, 5)), nd.ones((1, 18, 5, 5)), nd.ones((1, 9, 5, 5)), nd.ones((4, 4, 3, 3))
    kw = dict(kernel=(3, 3), num_filter=4, pad=(1, 1), no_bias=True)
    with pytest.raises(mx.MXNetError, match="ModulatedDeformableConvolution.*offset"):
        nd.contrib.ModulatedDeformableConvolution(d, nd.ones((1, 9, 5, 5)), m, w, **kw)
    with pytest.raises(mx.MXNetError, match="ModulatedDeformableConvolution.*mask"):
        nd.contrib.ModulatedDeformableConvolution(d, o, nd.ones((1, 18, 5, 5)), w, **kw)
    with pytest.raises(mx.MXNetError, match="ModulatedDeformableConvolution.*weight"):
        nd.contrib.ModulatedDeformableConvolution(d, o, m, nd.ones((4, 4, 2, 2)), **kw)
    with pytest.raises(mx.MXNetError, match="DeformableConvolution.*2-D"):
        nd.contrib.DeformableConvolution(nd.ones((1, 4, 5)), nd.ones((1, 6, 5)), nd.ones((4, 4, 3)), kernel=(3,),
                                         num_filter=4, no_bias=True)
    with pytest.raises(mx.MXNetError, match="DeformableConvolution.*num_deformable_group"):
        nd.contrib.DeformableConvolution(d, nd.ones((1, 54, 5, 5)), w, kernel=(3, 3), num_filter=4, pad=(1, 1),
                                         num_deformable_group=3, no_bias=True)
    with pytest.raises(mx.MXNetError, match="DeformableConvolution.*floating"):
        nd.contrib.DeformableConvolution(nd.ones((1, 4, 5, 5), dtype="int32"), nd.ones((1, 18, 5, 5), dtype="int32"),
                                         nd.ones((4, 4, 3, 3), dtype="int32"), kernel=(3, 3), num_filter=4,
                                         pad=(1, 1), no_bias=True)


# (y, x) of the one sample -> MXNet 1.9.1's output, data gradient {index: value} and
# offset gradient (dy, dx), for a 1x1 kernel on data (1..16)**1.5 in a 4x4 plane.
V1_FIXTURES = [
    ((0.3, 1.25), 7.090081691741943, {1: 0.525, 2: 0.175, 5: 0.225, 6: 0.075}, (12.2324, 2.8044)),
    ((0.0, 1.25), 3.420358180999756, {1: 0.75, 2: 0.25}, (12.2324, 2.3677)),
    ((2.5, 1.25), 43.32444381713867, {9: 0.375, 10: 0.125, 13: 0.375, 14: 0.125}, (20.9733, 5.2858)),
    ((3.5, 1.25), 53.81108856201172, {13: 0.75, 14: 0.25}, (0.0, 5.7115)),
    ((1.25, 3.5), 27.362865447998047, {7: 0.75, 11: 0.25}, (18.9418, 0.0)),
    ((3.5, 3.5), 64.0, {15: 1.0}, (0.0, 0.0)),
    ((-0.2, 1.25), 0.0, {}, (0.0, 0.0)),
    ((1.25, -0.2), 0.0, {}, (0.0, 0.0)),
    ((4.0, 1.25), 0.0, {}, (0.0, 0.0)),
    ((1.25, 4.0), 0.0, {}, (0.0, 0.0)),
]


@pytest.mark.parametrize("pos,out,dgrad,ograd", V1_FIXTURES)
def test_deformable_v1_borders_match_mxnet(pos, out, dgrad, ograd):
    data = nd.array((np.arange(1, 17, dtype=np.float32) ** 1.5).reshape(1, 1, 4, 4))
    off = np.zeros((1, 2, 4, 4), np.float32)
    off[0, :, 0, 0] = pos
    off = nd.array(off)
    data.attach_grad()
    off.attach_grad()
    with mx.autograd.record():
        y = nd.contrib.DeformableConvolution(data, off, nd.ones((1, 1, 1, 1)), kernel=(1, 1), num_filter=1, no_bias=True)
    g = np.zeros((1, 1, 4, 4), np.float32)
    g[0, 0, 0, 0] = 1
    y.backward(nd.array(g))
    np.testing.assert_allclose(y.asnumpy()[0, 0, 0, 0], out, rtol=1e-6)
    want = np.zeros(16)
    for i, v in dgrad.items():
        want[i] = v
    np.testing.assert_allclose(data.grad.asnumpy().ravel(), want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(off.grad.asnumpy()[0, :, 0, 0], ograd, rtol=1e-4, atol=1e-4)


def test_deformable_v1_large_offsets_against_reference():
    # offsets of several pixels: many samples fall outside or in the clamped band
    rng = np.random.RandomState(7)
    data, _, _, weight, bias = make(N=2, C=4, H=7, W=6, F=3, seed=7)
    offset = rng.randn(2, 18, 7, 6) * 3
    kw = dict(kernel=(3, 3), num_filter=3, pad=(1, 1))
    ref = deform_ref(data, offset, None, weight, bias, (3, 3), pad=(1, 1))
    for dtype, tol in (("float64", 1e-10), ("float32", 2e-5)):
        args = [nd.array(v, dtype=dtype) for v in (data, offset, weight, bias)]
        out = nd.contrib.DeformableConvolution(*args, **kw)
        np.testing.assert_allclose(out.asnumpy(), ref, rtol=tol, atol=tol)
    fd, fo, fw = (nd.array(v, dtype="float64") for v in (data, offset, weight))
    grad_check(lambda a: nd.contrib.DeformableConvolution(a, fo, fw, no_bias=True, **kw), data, rtol=1e-4, atol=1e-6)
    grad_check(lambda a: nd.contrib.DeformableConvolution(fd, a, fw, no_bias=True, **kw), offset, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("modulated", [False, True])
def test_deformable_float32_matches_float64(modulated):
    # the float32 path (what models run) against the float64 one, forward and every gradient
    data, offset, mask, weight, bias = make(N=2, C=6, H=9, W=8, F=4, dg=2, groups=2, seed=11)
    offset = offset * 3
    names = ["data", "offset"] + (["mask"] if modulated else []) + ["weight", "bias"]
    vals = dict(zip(["data", "offset", "mask", "weight", "bias"], (data, offset, mask, weight, bias)))
    og = np.random.RandomState(12).randn(2, 4, 9, 8)
    op = nd.contrib.ModulatedDeformableConvolution if modulated else nd.contrib.DeformableConvolution
    res = {}
    for dtype in ("float32", "float64"):
        args = [nd.array(vals[n], dtype=dtype) for n in names]
        for a in args:
            a.attach_grad()
        with mx.autograd.record():
            out = op(*args, kernel=(3, 3), num_filter=4, pad=(1, 1), num_deformable_group=2, num_group=2)
        out.backward(nd.array(og, dtype=dtype))
        res[dtype] = [out.asnumpy()] + [a.grad.asnumpy() for a in args]
    for a, b in zip(res["float32"], res["float64"]):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3 * max(1.0, np.abs(b).max()))
    if not modulated:
        ref = deform_ref(data, offset, None, weight, bias, (3, 3), pad=(1, 1), groups=2, dg=2)
        np.testing.assert_allclose(res["float64"][0], ref, rtol=1e-10, atol=1e-10)
