"""Deformable convolutions (op/contrib_deform.rs): DeformableConvolution and
ModulatedDeformableConvolution, forward against a NumPy reference (bilinear
sampling at offset positions), reductions to Convolution, numerical gradients of
every input, symbols and bad inputs."""

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
                            col[n, c, k, oy, ox] = m * bilinear(data[n, c], y, x)
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
