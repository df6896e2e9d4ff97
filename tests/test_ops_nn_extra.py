"""Smaller NN layers and training utilities (op/nn_extra.rs): L2Normalization, LRN,
UpSampling (nearest), SVMOutput, softmax_cross_entropy, all_finite,
multi_all_finite, multi_sum_sq, reset_arrays, amp_cast, amp_multicast. NumPy
references written here are the oracle (values checked against MXNet 1.9.1)."""

import numpy as np
import pytest

import oxnet as mx
from _gradcheck import grad_check as _grad_check

nd = mx.nd


def rand(shape, seed=0, lo=-1.0, hi=1.0):
    return np.random.RandomState(seed).uniform(lo, hi, size=shape)


def grad_check(fn, x, h=1e-6, seed=1, rtol=1e-5):
    _grad_check(fn, x, h=h, rtol=rtol, seed=seed)

def l2n_ref(x, mode, eps=1e-10):
    if mode == "instance":
        axes = tuple(range(1, x.ndim))
    elif mode == "channel":
        axes = (1,)
    else:
        axes = tuple(range(2, x.ndim))
    return x / np.sqrt((x * x).sum(axis=axes, keepdims=True) + eps)


@pytest.mark.parametrize("mode", ["instance", "channel", "spatial"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_l2_normalization(mode, dtype):
    x = rand((2, 3, 4, 2)).astype(dtype)
    y = nd.L2Normalization(nd.array(x, dtype=dtype), mode=mode)
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_allclose(y.asnumpy(), l2n_ref(x, mode), rtol=1e-5)
    grad_check(lambda a: nd.L2Normalization(a, mode=mode), rand((2, 2, 3), seed=4))


def lrn_ref(x, alpha, beta, knorm, nsize):
    c = x.shape[1]
    half = nsize // 2
    sq = x * x
    s = np.zeros_like(x)
    for i in range(c):
        s[:, i] = sq[:, max(0, i - half):min(c, i + half + 1)].sum(axis=1)
    return x / (knorm + alpha / nsize * s) ** beta


def test_lrn():
    x = rand((2, 5, 3, 3), lo=-2, hi=2)
    for nsize in [3, 5]:
        y = nd.LRN(nd.array(x, dtype="float64"), alpha=0.1, beta=0.75, knorm=2, nsize=nsize)
        np.testing.assert_allclose(y.asnumpy(), lrn_ref(x, 0.1, 0.75, 2, nsize), rtol=1e-10)
    grad_check(lambda a: nd.LRN(a, alpha=0.5, beta=0.75, knorm=1, nsize=3), rand((1, 4, 2, 1), seed=2, lo=-2, hi=2))


def test_upsampling_nearest():
    x = rand((1, 2, 2, 3))
    y = nd.UpSampling(nd.array(x, dtype="float64"), scale=2, sample_type="nearest")
    np.testing.assert_array_equal(y.asnumpy(), x.repeat(2, axis=2).repeat(2, axis=3))
    x2 = rand((1, 1, 2, 3), seed=3)
    x4 = rand((1, 2, 4, 6), seed=3)
    y = nd.UpSampling(nd.array(x4, dtype="float64"), nd.array(x2, dtype="float64"), scale=1, sample_type="nearest")
    assert y.shape == (1, 3, 4, 6)
    np.testing.assert_array_equal(y.asnumpy()[:, :2], x4)
    np.testing.assert_array_equal(y.asnumpy()[:, 2], x2[:, 0].repeat(2, axis=1).repeat(2, axis=2))
    y = nd.UpSampling(nd.array(x), nd.array(x), scale=1, sample_type="nearest", multi_input_mode="sum")
    np.testing.assert_allclose(y.asnumpy(), 2 * x.astype("float32"))
    grad_check(lambda a: nd.UpSampling(a, scale=3, sample_type="nearest"), rand((1, 1, 2, 2)))
    # symbol with several inputs: each input's gradient sums its blocks
    s = mx.sym.UpSampling(mx.sym.var("a"), mx.sym.var("b"), scale=2, sample_type="nearest")
    a, b = nd.array(rand((1, 1, 2, 2))), nd.array(rand((1, 1, 1, 1), seed=5))
    ga, gb = nd.zeros((1, 1, 2, 2)), nd.zeros((1, 1, 1, 1))
    ex = s.bind(mx.cpu(), {"a": a, "b": b}, args_grad={"a": ga, "b": gb})
    ex.forward(is_train=True)
    ex.backward(ex.outputs)
    np.testing.assert_allclose(ga.asnumpy(), a.asnumpy() * 4, rtol=1e-6)
    np.testing.assert_allclose(gb.asnumpy(), b.asnumpy() * 16, rtol=1e-6)


@pytest.mark.parametrize("linear", [True, False])
def test_svm_output(linear):
    x = rand((6, 4), lo=0, hi=1).astype("float32")
    lab = np.array([0, 3, 1, 2, 2, 0])
    s = mx.sym.SVMOutput(data=mx.sym.var("x"), label=mx.sym.var("l"), use_linear=linear, margin=1.0)
    assert s.infer_shape(x=(6, 4))[0] == [(6, 4), (6,)]
    g = nd.zeros((6, 4))
    ex = s.bind(mx.cpu(), {"x": nd.array(x), "l": nd.array(lab)}, args_grad={"x": g})
    ex.forward(is_train=True)
    np.testing.assert_array_equal(ex.outputs[0].asnumpy(), x)
    ex.backward()
    m = (lab[:, None] == np.arange(4)) * 2.0 - 1
    want = -m * (1 - m * x > 0) if linear else -2 * m * np.maximum(1 - m * x, 0)
    np.testing.assert_allclose(g.asnumpy(), want, rtol=1e-6)


def test_softmax_cross_entropy():
    x = rand((5, 7), lo=-3, hi=3)
    lab = np.array([0, 6, 2, 2, 1])
    sm = np.exp(x - x.max(1, keepdims=True))
    sm /= sm.sum(1, keepdims=True)
    y = nd.softmax_cross_entropy(nd.array(x, dtype="float64"), nd.array(lab))
    assert y.shape == (1,)
    np.testing.assert_allclose(y.asnumpy(), [-np.log(sm[np.arange(5), lab]).sum()], rtol=1e-10)
    grad_check(lambda a: nd.softmax_cross_entropy(a, nd.array(lab[:2], dtype="float64")), x[:2])


def test_finite_sumsq_reset_amp():
    assert nd.all_finite(nd.array([1, np.inf])).asnumpy().tolist() == [0]
    assert nd.all_finite(nd.array([1, 2])).asnumpy().tolist() == [1]
    assert nd.multi_all_finite(nd.array([1.0]), nd.array([np.nan]), num_arrays=2).asnumpy().tolist() == [0]
    assert nd.multi_all_finite(nd.array([1.0]), nd.array([2.0])).asnumpy().tolist() == [1]
    r = nd.multi_sum_sq(nd.array([1, 2]), nd.array([3]), num_arrays=2)
    assert r.dtype == np.float32 and r.asnumpy().tolist() == [5, 9]
    x, z = nd.array([1.0, 2.0]), nd.array([[3, 4]], dtype="int32")
    nd.reset_arrays(x, z, num_arrays=2)
    assert x.asnumpy().tolist() == [0, 0] and z.asnumpy().tolist() == [[0, 0]]
    outs = nd.amp_multicast(nd.array([1], dtype="float16"), nd.array([1], dtype="float32"), num_outputs=2)
    assert [o.dtype for o in outs] == [np.float32, np.float32]
    outs = nd.amp_multicast(nd.array([1], dtype="float16"), nd.array([1], dtype="float32"), num_outputs=2, cast_narrow=True)
    assert [o.dtype for o in outs] == [np.float16, np.float16]
    assert nd.amp_cast(nd.array([1.5]), dtype="float16").dtype == np.float16
    assert nd.amp_cast(nd.array([1], dtype="int32"), dtype="float16").dtype == np.int32
    a = nd.array([1.0, 2.0], dtype="float16")
    a.attach_grad()
    with mx.autograd.record():
        y = nd.amp_cast(a, dtype="float32") * 3
    y.backward()
    assert a.grad.dtype == np.float16 and a.grad.asnumpy().tolist() == [3, 3]


def test_bad_inputs():
    with pytest.raises(mx.MXNetError, match="L2Normalization.*too few dimensions"):
        nd.L2Normalization(nd.ones((2, 3)), mode="spatial")
    with pytest.raises(mx.MXNetError, match="L2Normalization.*mode"):
        nd.L2Normalization(nd.ones((2, 3)), mode="bogus")
    with pytest.raises(mx.MXNetError, match="LRN.*odd"):
        nd.LRN(nd.ones((1, 2, 2, 2)), nsize=2)
    with pytest.raises(mx.MXNetError, match="UpSampling.*bilinear"):
        nd.UpSampling(nd.ones((1, 1, 2, 2)), scale=2, sample_type="bilinear")
    with pytest.raises(mx.MXNetError, match="UpSampling.*integer scale"):
        nd.UpSampling(nd.ones((1, 1, 4, 4)), nd.ones((1, 1, 3, 3)), scale=2, sample_type="nearest")
    with pytest.raises(mx.MXNetError, match="softmax_cross_entropy.*label"):
        nd.softmax_cross_entropy(nd.ones((2, 3)), nd.ones((3,)))
    with pytest.raises(mx.MXNetError, match="SVMOutput.*label"):
        nd.SVMOutput(nd.ones((2, 3)), nd.ones((3,)))
    with pytest.raises(mx.MXNetError, match="amp_multicast.*(num_outputs|input)"):
        nd.amp_multicast(nd.ones((2,)), num_outputs=2)
    with pytest.raises(mx.MXNetError, match="LRN.*floating-point"):
        nd.LRN(nd.ones((1, 2, 2, 2), dtype="int32"), nsize=1)


@pytest.mark.parametrize("stride,dilate,pad", [(1, 1, 0), (2, 1, 1), (2, 2, 1)])
def test_im2col_col2im(stride, dilate, pad):
    kw = {"kernel": (3, 3), "stride": (stride, stride), "dilate": (dilate, dilate), "pad": (pad, pad)}
    x = nd.array(rand((2, 3, 9, 8), seed=6))
    col = nd.im2col(x, **kw)
    w = nd.array(rand((4, 3, 3, 3), seed=7))
    conv = nd.Convolution(x, weight=w, num_filter=4, no_bias=True, **kw)
    n, f, ho, wo = conv.shape
    assert col.shape == (2, 27, ho * wo)
    via = np.einsum("nkl,fk->nfl", col.asnumpy(), w.asnumpy().reshape(4, -1)).reshape(n, f, ho, wo)
    np.testing.assert_allclose(via, conv.asnumpy(), rtol=1e-4, atol=1e-5)
    # col2im sums the blocks back: col2im(im2col(x)) = col2im(ones) * x
    im1 = nd.col2im(col, (9, 8), **kw)
    im2 = nd.col2im(nd.ones_like(col), (9, 8), **kw) * x
    np.testing.assert_allclose(im1.asnumpy(), im2.asnumpy(), rtol=1e-5, atol=1e-6)
    grad_check(lambda a: nd.im2col(a, **kw), rand((1, 1, 4, 5), seed=8))
    grad_check(lambda a: nd.col2im(a, (4, 5), **kw), nd.im2col(nd.array(rand((1, 1, 4, 5))), **kw).asnumpy())


def test_im2col_bad_inputs():
    with pytest.raises(mx.MXNetError, match="im2col.*kernel"):
        nd.im2col(nd.ones((1, 1, 4, 4)), kernel=(3,))
    with pytest.raises(mx.MXNetError, match="im2col.*larger than the padded input"):
        nd.im2col(nd.ones((1, 1, 2, 2)), kernel=(3, 3))
    with pytest.raises(mx.MXNetError, match="col2im.*must be"):
        nd.col2im(nd.ones((1, 5, 4)), output_size=(3, 3), kernel=(2, 2))


def groupnorm_ref(x, gamma, beta, g, eps):
    n = x.shape[0]
    xr = x.reshape(n, g, -1)
    mean = xr.mean(-1)
    std = np.sqrt(xr.var(-1) + eps)
    y = (xr - mean[..., None]) / std[..., None] * gamma[None, :, None] + beta[None, :, None]
    return y.reshape(x.shape), mean, std


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_group_norm(dtype):
    x = rand((2, 6, 3, 2), seed=9).astype(dtype)
    gamma, beta = rand((3,), seed=10).astype(dtype), rand((3,), seed=11).astype(dtype)
    y, mean, std = nd.GroupNorm(nd.array(x, dtype=dtype), nd.array(gamma, dtype=dtype), nd.array(beta, dtype=dtype),
                                num_groups=3, eps=1e-5, output_mean_var=True)
    ry, rm, rs = groupnorm_ref(x.astype("float64"), gamma, beta, 3, 1e-5)
    np.testing.assert_allclose(y.asnumpy(), ry, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mean.asnumpy(), rm, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(std.asnumpy(), rs, rtol=1e-4)
    single = nd.GroupNorm(nd.array(x, dtype=dtype), nd.array(gamma, dtype=dtype), nd.array(beta, dtype=dtype), num_groups=3)
    assert not isinstance(single, list) and single.shape == x.shape
    g64, b64 = nd.array(gamma, dtype="float64"), nd.array(beta, dtype="float64")
    grad_check(lambda a: nd.GroupNorm(a, g64, b64, num_groups=3), rand((1, 6, 2, 1), seed=12))
    xx = nd.array(rand((1, 6, 2, 1), seed=12), dtype="float64")
    grad_check(lambda a: nd.GroupNorm(xx, a, b64, num_groups=3), gamma.astype("float64"))
    grad_check(lambda a: nd.GroupNorm(xx, g64, a, num_groups=3), beta.astype("float64"))
    s = mx.sym.GroupNorm(mx.sym.var("d"), num_groups=3)
    assert s.infer_shape(d=(2, 6, 4))[0] == [(2, 6, 4), (3,), (3,)]


def test_group_norm_bad_inputs():
    with pytest.raises(mx.MXNetError, match="GroupNorm.*multiple of num_groups=4"):
        nd.GroupNorm(nd.ones((1, 6, 2)), nd.ones((4,)), nd.ones((4,)), num_groups=4)
    with pytest.raises(mx.MXNetError, match=r"GroupNorm.*gamma must have shape \(3,\)"):
        nd.GroupNorm(nd.ones((1, 6, 2)), nd.ones((6,)), nd.ones((3,)), num_groups=3)
