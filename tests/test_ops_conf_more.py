"""MXNet 1.9.1 operator behaviours closed on the `ops-conf` branch: PReLU's gamma
broadcasting, bilinear UpSampling, Dropout(p=1), gather_nd's IndexError, ravel's
unknown leading size, depth/space rearrangement checks, legacy zero-size shapes,
Reshape's partial shape inference, SyncBatchNorm, Proposal/MultiProposal, custom
ops on sparse arrays, oversized head gradients. NumPy is the oracle."""
import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError

from _gradcheck import grad_check


# ---- PReLU: gamma broadcast over the data's first two axes -------------------------

def _prelu_ref(x, gamma):
    """MXNet's rule: gamma's axes align from the right with the data's axes 0 and 1.
    Returns the output, gamma's gradient for unit head gradients and the slope of
    every element."""
    e = [1] * x.ndim
    s = gamma.ndim - 1
    for i in range(x.ndim - 1, -1, -1):
        if s >= 0 and i <= 1 and (x.shape[i] == gamma.shape[s] or gamma.shape[s] == 1):
            e[i] = gamma.shape[s]
            s -= 1
    assert s == -1
    slope = np.broadcast_to(gamma.reshape(e), x.shape)
    y = np.where(x > 0, x, x * slope)
    dgamma = np.where(x > 0, 0, x).sum(axis=tuple(a for a in range(x.ndim) if e[a] == 1), keepdims=True)
    return y, dgamma.reshape(gamma.shape), slope


@pytest.mark.parametrize("xs,gs", [((3, 4), (4,)), ((3, 4), (3, 4)), ((3, 4, 4, 5), (3, 4)),
                                   ((3, 4, 4, 5), (4,)), ((3, 4), (3,)), ((3, 4), (1,)),
                                   ((3, 4, 4, 5), (3, 1)), ((3, 4, 4, 5), (1, 4)), ((2, 3, 4), (3,))])
def test_prelu_gamma_shapes(xs, gs):
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, xs).astype(np.float32)
    gamma = rng.uniform(0.1, 0.5, gs).astype(np.float32)
    y_ref, dg_ref, slope = _prelu_ref(x, gamma)
    a, g = mx.nd.array(x), mx.nd.array(gamma)
    a.attach_grad()
    g.attach_grad()
    with mx.autograd.record():
        y = mx.nd.LeakyReLU(a, g, act_type="prelu")
    y.backward(mx.nd.ones(xs))
    np.testing.assert_allclose(y.asnumpy(), y_ref, rtol=1e-6)
    np.testing.assert_allclose(g.grad.asnumpy(), dg_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a.grad.asnumpy(), np.where(x > 0, 1, slope), rtol=1e-6)
    # symbols accept the same gamma
    s = mx.sym.LeakyReLU(mx.sym.var("x"), mx.sym.var("gamma"), act_type="prelu")
    assert s.infer_shape(x=xs, gamma=gs)[1] == [xs]


def test_prelu_gamma_numeric_gradient():
    rng = np.random.RandomState(1)
    x = rng.uniform(-1, 1, (2, 3, 2))
    x[np.abs(x) < 0.05] = 0.5
    gamma = rng.uniform(0.1, 0.5, (2, 3))
    grad_check(lambda v: mx.nd.LeakyReLU(v, mx.nd.array(gamma, dtype="float64"), act_type="prelu"), x)
    grad_check(lambda g: mx.nd.LeakyReLU(mx.nd.array(x, dtype="float64"), g, act_type="prelu"), gamma)


def test_prelu_gamma_default_and_bad():
    s = mx.sym.LeakyReLU(mx.sym.var("x"), act_type="prelu", name="p")
    args, _, _ = s.infer_shape(x=(2, 5, 3))
    assert args[1] == (5,)
    x = mx.nd.ones((3, 4, 4, 5))
    for gs in [(4, 4), (5,), (3, 4, 1, 1)]:
        with pytest.raises(MXNetError, match="LeakyReLU"):
            mx.nd.LeakyReLU(x, mx.nd.ones(gs), act_type="prelu").wait_to_read()


# ---- Reshape: the unknown input size from a known output -----------------------------

@pytest.mark.parametrize("src,args,reverse,dst", [((2, 3, 5, 5), (0, -1), False, (2, 75)),
                                                  ((64, 1, 2, 3), (-4, 16, -1, -2), False, (16, 4, 1, 2, 3)),
                                                  ((2, 3, 5, 5), (5, 3, 0, -1), True, (5, 3, 5, 2))])
def test_reshape_infers_unknown_input_dim(src, args, reverse, dst):
    for i in range(len(src)):
        held = list(src)
        held[i] = 0
        net = mx.sym.elemwise_add(mx.sym.var("data").reshape(args, reverse=reverse), mx.sym.ones(shape=dst))
        ins, outs, _ = net.infer_shape(data=tuple(held))
        assert ins[0] == src and outs[0] == dst


# ---- UpSampling, bilinear: a grouped deconvolution -------------------------------------

def _deconv_ref(x, w, stride, pad):
    """Per channel transposed convolution: x (N, C, H, W), w (C, 1, k, k)."""
    n, c, h, wd = x.shape
    k = w.shape[2]
    full = np.zeros((n, c, (h - 1) * stride + k, (wd - 1) * stride + k))
    for i in range(h):
        for j in range(wd):
            full[:, :, i * stride:i * stride + k, j * stride:j * stride + k] += \
                x[:, :, i:i + 1, j:j + 1] * w[None, :, 0]
    oh, ow = (h - 1) * stride + k - 2 * pad, (wd - 1) * stride + k - 2 * pad
    return full[:, :, pad:pad + oh, pad:pad + ow]


@pytest.mark.parametrize("scale", [1, 2, 3, 4])
def test_bilinear_upsampling(scale):
    c = 2
    k = 2 * scale - scale % 2
    sym = mx.sym.UpSampling(mx.sym.var("data"), mx.sym.var("weight"), sample_type="bilinear",
                            scale=scale, num_filter=c, num_args=2)
    args, outs, _ = sym.infer_shape(data=(1, c, 3, 4))
    assert args[1] == (c, 1, k, k)
    assert outs[0] == (1, c, 3 * scale, 4 * scale)
    rng = np.random.RandomState(scale)
    x = rng.rand(2, c, 3, 4)
    w = rng.rand(c, 1, k, k)
    y = mx.nd.UpSampling(mx.nd.array(x), mx.nd.array(w), sample_type="bilinear", scale=scale,
                         num_filter=c, num_args=2)
    np.testing.assert_allclose(y.asnumpy(), _deconv_ref(x, w, scale, scale // 2), rtol=1e-5, atol=1e-6)

    def up(d, wt):
        return mx.nd.UpSampling(d, wt, sample_type="bilinear", scale=scale, num_filter=c, num_args=2)
    grad_check(lambda d: up(d, mx.nd.array(w, dtype="float64")), x[:1])
    grad_check(lambda wt: up(mx.nd.array(x[:1], dtype="float64"), wt), w)


def test_bilinear_upsampling_bad_inputs():
    x, w = mx.nd.ones((1, 2, 3, 3)), mx.nd.ones((2, 1, 4, 4))
    with pytest.raises(MXNetError, match="UpSampling.*num_args"):
        mx.nd.UpSampling(x, sample_type="bilinear", scale=2, num_filter=2, num_args=1)
    with pytest.raises(MXNetError, match="UpSampling.*num_filter"):
        mx.nd.UpSampling(x, w, sample_type="bilinear", scale=2, num_args=2)
    with pytest.raises(MXNetError, match="UpSampling"):
        mx.nd.UpSampling(x, mx.nd.ones((2, 1, 3, 3)), sample_type="bilinear", scale=2,
                         num_filter=2, num_args=2)


# ---- Dropout -------------------------------------------------------------------------

def test_dropout_p1_is_nan_as_mxnet():
    x = mx.nd.ones((10, 10))
    with mx.autograd.train_mode():
        y = mx.nd.Dropout(x, p=1.0)
    assert np.isnan(y.asnumpy()).all()
    assert np.isnan(mx.nd.Dropout(x, p=1.0, mode="always").asnumpy()).all()
    # outside training it is the identity
    np.testing.assert_array_equal(mx.nd.Dropout(x, p=1.0).asnumpy(), x.asnumpy())
    with mx.autograd.train_mode():
        y = mx.nd.Dropout(x, p=0.5)
    assert set(np.unique(y.asnumpy())) <= {0.0, 2.0}


def test_dropout_second_order_gradient():
    x = mx.nd.array(np.random.RandomState(0).rand(4, 5))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Dropout(x, p=0.5)
        hg = mx.nd.ones_like(x) * 3
        g = mx.autograd.grad(heads=y, variables=x, head_grads=hg, create_graph=True, retain_graph=True)[0]
        g2 = mx.autograd.grad(heads=g, variables=x, head_grads=mx.nd.ones_like(x),
                              create_graph=True, retain_graph=True)[0]
    kept = y.asnumpy() != 0
    np.testing.assert_allclose(g.asnumpy(), np.where(kept, 6.0, 0.0))
    np.testing.assert_array_equal(g2.asnumpy(), np.zeros((4, 5)))


def test_backward_dropout_gradient_is_its_mask():
    og = mx.nd.array(np.random.RandomState(1).rand(3, 4))
    mask = mx.nd.array((np.arange(12).reshape(3, 4) % 3 == 0) * 2.0)
    og.attach_grad()
    with mx.autograd.record():
        d = mx.nd._internal._backward_Dropout(og, mask, p=0.5)
    w = mx.nd.array(np.random.RandomState(2).rand(3, 4))
    d.backward(w)
    np.testing.assert_allclose(og.grad.asnumpy(), w.asnumpy() * mask.asnumpy())


# ---- gather_nd: IndexError, negative indices --------------------------------------------

def test_gather_nd_out_of_bounds_is_index_error():
    data = mx.nd.array([[0, 1, 2], [3, 4, 5]])
    for ind in ([[0, 1, 0], [0, 1, 3]], [[0, 1, 0], [0, 1, -5]], [[-3, 0, 0], [0, 0, 0]]):
        out = mx.nd.gather_nd(data, mx.nd.array(ind))
        with pytest.raises(IndexError, match="out of bounds"):
            out.asnumpy()
        with pytest.raises(MXNetError):
            mx.nd.gather_nd(data, mx.nd.array(ind)).wait_to_read()
    got = mx.nd.gather_nd(data, mx.nd.array([[0, 1, -1], [0, 1, -2]])).asnumpy()
    np.testing.assert_array_equal(got, np.array([[0, 1, 2], [3, 4, 5]])[[0, 1, -1], [0, 1, -2]])


# ---- ravel_multi_index / unravel_index: unknown leading size ----------------------------

def test_ravel_unravel_leading_minus_one():
    rng = np.random.RandomState(0)
    shape = (7, 5, 4)
    idx = np.stack([rng.randint(0, s, 30) for s in shape])
    flat = np.ravel_multi_index(idx, shape)
    for lead in (-1, 7):
        sh = (lead,) + shape[1:]
        np.testing.assert_array_equal(mx.nd.ravel_multi_index(mx.nd.array(idx), shape=sh).asnumpy(), flat)
        np.testing.assert_array_equal(mx.nd.unravel_index(mx.nd.array(flat), shape=sh).asnumpy(), idx)
    with pytest.raises(MXNetError, match="ravel_multi_index"):
        mx.nd.ravel_multi_index(mx.nd.array(idx), shape=(7, -1, 4))
    with pytest.raises(MXNetError, match="unravel_index"):
        mx.nd.unravel_index(mx.nd.array(flat), shape=(7, 5, 0))


# ---- depth_to_space / space_to_depth: no zero dimension ----------------------------------

@pytest.mark.parametrize("op,shape", [("depth_to_space", (2, 4, 0, 3)), ("depth_to_space", (0, 4, 2, 3)),
                                      ("space_to_depth", (2, 0, 4, 4)), ("space_to_depth", (0, 1, 4, 4))])
def test_depth_space_zero_dims_raise(op, shape):
    with mx.np_shape():
        x = mx.nd.zeros(shape)
        with pytest.raises(MXNetError, match=op):
            getattr(mx.nd, op)(x, 2)


# ---- zeros/ones outside NumPy shapes -------------------------------------------------------

def test_zero_size_and_scalar_creation_needs_np_shape():
    for f in (mx.nd.zeros, mx.nd.ones):
        for shape in [(), (0, 1, 3, 0), 0, (2, 0)]:
            with pytest.raises(MXNetError, match="unknown"):
                f(shape)
        with mx.np_shape():
            assert f(()).shape == ()
            np.testing.assert_array_equal(f((0, 1, 0, 4)).asnumpy(), np.zeros((0, 1, 0, 4)))
    assert mx.nd.ones((2, 3)).shape == (2, 3)
    # other creations of such arrays are MXNet's too
    assert mx.nd.empty((2, 0)).shape == (2, 0)
    assert mx.nd.array(np.zeros((2, 0))).shape == (2, 0)
    assert mx.nd.full((2, 0), 1.0).shape == (2, 0)
    assert mx.np.zeros(()).shape == () and mx.np.ones((2, 0)).shape == (2, 0)


# ---- SyncBatchNorm ---------------------------------------------------------------------------

def _bn_ref(x, gamma, beta, eps):
    axes = (0,) + tuple(range(2, x.ndim))
    mean = x.mean(axis=axes)
    var = x.var(axis=axes)
    sh = [1] * x.ndim
    sh[1] = -1
    xh = (x - mean.reshape(sh)) / np.sqrt(var.reshape(sh) + eps)
    return xh * gamma.reshape(sh) + beta.reshape(sh), mean, var, xh


@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 5)])
def test_sync_batch_norm_matches_batch_norm(shape):
    rng = np.random.RandomState(0)
    x = rng.rand(*shape).astype(np.float32)
    c = shape[1]
    gamma, beta = rng.rand(c).astype(np.float32) + 0.5, rng.rand(c).astype(np.float32)
    og = rng.rand(*shape).astype(np.float32)
    a, g, b = mx.nd.array(x), mx.nd.array(gamma), mx.nd.array(beta)
    mm, mv = mx.nd.zeros(c), mx.nd.ones(c)
    for v in (a, g, b):
        v.attach_grad()
    with mx.autograd.record():
        y, mean, var = mx.nd.contrib.SyncBatchNorm(a, g, b, mm, mv, eps=1e-5, momentum=0.9, fix_gamma=False,
                                                   output_mean_var=True, key="k")
    y.backward(mx.nd.array(og))
    y_ref, mean_ref, var_ref, xh = _bn_ref(x.astype(np.float64), gamma, beta, 1e-5)
    np.testing.assert_allclose(y.asnumpy(), y_ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mean.asnumpy(), mean_ref, rtol=1e-5)
    np.testing.assert_allclose(var.asnumpy(), var_ref, rtol=1e-4)
    axes = (0,) + tuple(range(2, x.ndim))
    np.testing.assert_allclose(g.grad.asnumpy(), (og * xh).sum(axis=axes), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(b.grad.asnumpy(), og.sum(axis=axes), rtol=1e-5)
    # the moving statistics follow the batch's (biased variance)
    np.testing.assert_allclose(mm.asnumpy(), 0.1 * mean_ref, rtol=1e-5)
    np.testing.assert_allclose(mv.asnumpy(), 0.9 + 0.1 * var_ref, rtol=1e-5)
    # the data gradient is BatchNorm's
    a2 = mx.nd.array(x)
    a2.attach_grad()
    with mx.autograd.record():
        y2 = mx.nd.BatchNorm(a2, g, b, mx.nd.zeros(c), mx.nd.ones(c), eps=1e-5, fix_gamma=False)
    y2.backward(mx.nd.array(og))
    np.testing.assert_allclose(a.grad.asnumpy(), a2.grad.asnumpy(), rtol=1e-5, atol=1e-6)


def test_sync_batch_norm_inference_and_numeric_gradient():
    rng = np.random.RandomState(3)
    x = rng.rand(3, 2, 4)
    mm, mv = np.array([0.3, 0.6]), np.array([0.5, 2.0])
    out = mx.nd.contrib.SyncBatchNorm(mx.nd.array(x), mx.nd.ones(2), mx.nd.zeros(2), mx.nd.array(mm),
                                      mx.nd.array(mv), key="inf", eps=1e-3)
    np.testing.assert_allclose(out.asnumpy(), (x - mm[None, :, None]) / np.sqrt(mv[None, :, None] + 1e-3),
                               rtol=1e-5)

    def f(v):
        with mx.autograd.train_mode():
            return mx.nd.contrib.SyncBatchNorm(v, mx.nd.array([1.5, 0.5], dtype="float64"),
                                               mx.nd.zeros(2, dtype="float64"), mx.nd.zeros(2, dtype="float64"),
                                               mx.nd.ones(2, dtype="float64"), fix_gamma=False, key="g")
    grad_check(f, x, rtol=1e-4, atol=1e-6)


def test_sync_batch_norm_symbol_and_bad_inputs():
    s = mx.sym.contrib.SyncBatchNorm(mx.sym.var("data"), key="a", name="sbn")
    assert s.list_arguments() == ["data", "sbn_gamma", "sbn_beta"]
    assert s.list_auxiliary_states() == ["sbn_moving_mean", "sbn_moving_var"]
    assert s.infer_shape(data=(2, 3, 4))[0] == [(2, 3, 4), (3,), (3,)]
    s = mx.sym.contrib.SyncBatchNorm(mx.sym.var("data"), key="a", output_mean_var=True, name="sbn")
    assert s.list_outputs() == ["sbn_output", "sbn_mean", "sbn_var"]
    v = mx.nd.ones(3)
    with pytest.raises(MXNetError, match="key"):
        mx.nd.contrib.SyncBatchNorm(mx.nd.ones((2, 3)), v, v, v, v)
    with pytest.raises(MXNetError, match="ndev"):
        mx.nd.contrib.SyncBatchNorm(mx.nd.ones((2, 3)), v, v, v, v, key="k", ndev=2)
    with pytest.raises(MXNetError, match="SyncBatchNorm"):
        mx.nd.contrib.SyncBatchNorm(mx.nd.ones((3,)), v, v, v, v, key="k")
    with pytest.raises(MXNetError, match="SyncBatchNorm"):
        mx.nd.contrib.SyncBatchNorm(mx.nd.ones((2, 4)), v, v, v, v, key="k")


# ---- Proposal / MultiProposal ------------------------------------------------------------------

def _anchors_ref(stride, ratios, scales):
    out = []
    base = float(stride)
    ctr = 0.5 * (base - 1)
    for r in ratios:
        ws = np.floor(np.sqrt(np.floor(base * base / r)) + 0.5)
        hs = np.floor(ws * r + 0.5)
        for s in scales:
            w, h = ws * s, hs * s
            out.append([ctr - 0.5 * (w - 1), ctr - 0.5 * (h - 1), ctr + 0.5 * (w - 1), ctr + 0.5 * (h - 1)])
    return np.array(out, np.float32)


def _proposal_ref(cls, bbox, info, stride, scales, ratios, pre, post, thr, min_size):
    """One image, NumPy: decode, clip, mark small and padded boxes, sort, NMS."""
    f = np.float32
    na = len(scales) * len(ratios)
    _, h, w = cls.shape
    anc = _anchors_ref(stride, ratios, scales)
    sy, sx = np.meshgrid(np.arange(h) * stride, np.arange(w) * stride, indexing="ij")
    shifts = np.stack([sx, sy, sx, sy], -1).astype(f)          # (h, w, 4)
    boxes = (shifts[:, :, None, :] + anc[None, None]).reshape(-1, 4)  # (h*w*na, 4)
    d = bbox.reshape(na, 4, h, w).transpose(2, 3, 0, 1).reshape(-1, 4).astype(f)
    bw = boxes[:, 2] - boxes[:, 0] + f(1)
    bh = boxes[:, 3] - boxes[:, 1] + f(1)
    cx = boxes[:, 0] + f(0.5) * (bw - f(1))
    cy = boxes[:, 1] + f(0.5) * (bh - f(1))
    pcx, pcy = d[:, 0] * bw + cx, d[:, 1] * bh + cy
    pw, ph = np.exp(d[:, 2]) * bw, np.exp(d[:, 3]) * bh
    p = np.stack([pcx - f(0.5) * (pw - f(1)), pcy - f(0.5) * (ph - f(1)),
                  pcx + f(0.5) * (pw - f(1)), pcy + f(0.5) * (ph - f(1))], 1)
    p[:, 0::2] = np.clip(p[:, 0::2], 0, info[1] - 1)
    p[:, 1::2] = np.clip(p[:, 1::2], 0, info[0] - 1)
    score = cls[na:].transpose(1, 2, 0).reshape(-1).astype(f).copy()
    rows = np.repeat(np.arange(h), w * na)
    cols = np.tile(np.repeat(np.arange(w), na), h)
    score[(rows >= int(info[0] / stride)) | (cols >= int(info[1] / stride))] = -1
    ms = f(min_size * info[2])
    small = (p[:, 2] - p[:, 0] + 1 < ms) | (p[:, 3] - p[:, 1] + 1 < ms)
    p[small, :2] -= ms / 2
    p[small, 2:] += ms / 2
    score[small] = -1
    pre = len(score) if pre <= 0 else min(pre, len(score))
    order = np.argsort(-score, kind="stable")[:pre]
    p, score = p[order], score[order]
    area = (p[:, 2] - p[:, 0] + 1) * (p[:, 3] - p[:, 1] + 1)
    keep, alive = [], np.ones(pre, bool)
    for i in range(pre):
        if len(keep) >= min(post, pre):
            break
        if not alive[i]:
            continue
        keep.append(i)
        iw = np.maximum(0, np.minimum(p[i, 2], p[i + 1:, 2]) - np.maximum(p[i, 0], p[i + 1:, 0]) + 1)
        ih = np.maximum(0, np.minimum(p[i, 3], p[i + 1:, 3]) - np.maximum(p[i, 1], p[i + 1:, 1]) + 1)
        inter = iw * ih
        alive[i + 1:] &= ~(inter / (area[i] + area[i + 1:] - inter) > thr)
    sel = [keep[i % len(keep)] for i in range(post)]
    return p[sel], score[sel]


def _proposal_inputs(rng, n, na, h, w, stride):
    cls = rng.rand(n, 2 * na, h, w).astype(np.float32)
    bbox = (rng.rand(n, 4 * na, h, w).astype(np.float32) - 0.5)
    info = np.array([[rng.randint(h * stride // 2, h * stride), rng.randint(w * stride // 2, w * stride),
                      rng.randint(70, 100) / 100.0] for _ in range(n)], np.float32)
    return cls, bbox, info


@pytest.mark.parametrize("pre,post", [(200, 40), (-1, 30), (50, 80)])
def test_multi_proposal_matches_numpy(pre, post):
    rng = np.random.RandomState(pre + post)
    stride, scales, ratios = 16, (8, 16), (0.5, 1, 2)
    cls, bbox, info = _proposal_inputs(rng, 3, 6, 9, 11, stride)
    kw = dict(feature_stride=stride, scales=scales, ratios=ratios, rpn_pre_nms_top_n=pre,
              rpn_post_nms_top_n=post, threshold=0.6, rpn_min_size=16, output_score=True)
    rois, score = mx.nd.contrib.MultiProposal(mx.nd.array(cls), mx.nd.array(bbox), mx.nd.array(info), **kw)
    assert rois.shape == (3 * post, 5) and score.shape == (3 * post, 1)
    for b in range(3):
        p_ref, s_ref = _proposal_ref(cls[b], bbox[b], info[b], stride, scales, ratios, pre, post, 0.6, 16)
        got = rois.asnumpy()[b * post:(b + 1) * post]
        np.testing.assert_array_equal(got[:, 0], b)
        np.testing.assert_allclose(got[:, 1:], p_ref, rtol=1e-5, atol=1e-3)
        np.testing.assert_allclose(score.asnumpy()[b * post:(b + 1) * post, 0], s_ref, rtol=1e-6)
        one, one_s = mx.nd.contrib.Proposal(mx.nd.array(cls[b:b + 1]), mx.nd.array(bbox[b:b + 1]),
                                            mx.nd.array(info[b:b + 1]), **kw)
        np.testing.assert_array_equal(one.asnumpy()[:, 1:], got[:, 1:])
        np.testing.assert_array_equal(one.asnumpy()[:, 0], 0)
    # one visible output without output_score
    kw["output_score"] = False
    out = mx.nd.contrib.MultiProposal(mx.nd.array(cls), mx.nd.array(bbox), mx.nd.array(info), **kw)
    assert isinstance(out, mx.nd.NDArray) and out.shape == (3 * post, 5)


def test_proposal_gradient_is_zero_and_symbol_shapes():
    rng = np.random.RandomState(5)
    cls, bbox, info = _proposal_inputs(rng, 2, 3, 4, 5, 16)
    sym = mx.sym.contrib.MultiProposal(cls_prob=mx.sym.var("cls_prob"), bbox_pred=mx.sym.var("bbox_pred"),
                                       im_info=mx.sym.var("im_info"), scales=(8,), ratios=(0.5, 1, 2),
                                       rpn_post_nms_top_n=7, name="prop")
    args, outs, _ = sym.infer_shape(cls_prob=(2, 6, 4, 5))
    assert args == [(2, 6, 4, 5), (2, 12, 4, 5), (2, 3)] and outs == [(14, 5)]
    assert sym.list_outputs() == ["prop_output"]
    arrays = [mx.nd.array(v) for v in (cls, bbox, info)]
    for v in arrays:
        v.attach_grad()
    with mx.autograd.record():
        r = mx.nd.contrib.MultiProposal(*arrays, scales=(8,), ratios=(0.5, 1, 2), rpn_post_nms_top_n=7)
    r.backward()
    for v in arrays:
        np.testing.assert_array_equal(v.grad.asnumpy(), 0)


def test_proposal_bad_inputs():
    cls, bbox, info = _proposal_inputs(np.random.RandomState(0), 2, 3, 4, 5, 16)
    kw = dict(scales=(8,), ratios=(0.5, 1, 2))
    with pytest.raises(MXNetError, match="Proposal.*batch"):
        mx.nd.contrib.Proposal(mx.nd.array(cls), mx.nd.array(bbox), mx.nd.array(info), **kw)
    with pytest.raises(MXNetError, match="MultiProposal.*anchors"):
        mx.nd.contrib.MultiProposal(mx.nd.array(cls), mx.nd.array(bbox), mx.nd.array(info), scales=(8, 16))
    with pytest.raises(MXNetError, match="bbox_pred"):
        mx.nd.contrib.MultiProposal(mx.nd.array(cls), mx.nd.array(bbox[:, :8]), mx.nd.array(info), **kw)
    with pytest.raises(MXNetError, match="im_info"):
        mx.nd.contrib.MultiProposal(mx.nd.array(cls), mx.nd.array(bbox), mx.nd.array(info[:, :2]), **kw)
    big = info.copy()
    big[0, 0] = 10000
    with pytest.raises(MXNetError, match="im_info"):
        mx.nd.contrib.MultiProposal(mx.nd.array(cls), mx.nd.array(bbox), mx.nd.array(big), **kw).asnumpy()
    with pytest.raises(MXNetError, match="rpn_post_nms_top_n"):
        mx.nd.contrib.MultiProposal(mx.nd.array(cls), mx.nd.array(bbox), mx.nd.array(info),
                                    rpn_post_nms_top_n=0, **kw)


# ---- custom operators on sparse arrays (imperative) ------------------------------------------

class _SqrCSR(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        assert isinstance(out_data[0], mx.nd.sparse.CSRNDArray)
        inp = in_data[0]
        self.assign(out_data[0], req[0],
                    mx.nd.sparse.csr_matrix((inp.data * inp.data, inp.indices, inp.indptr), shape=inp.shape))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        assert out_grad[0].stype == "default" and in_grad[0].stype == "csr"
        self.assign(in_grad[0], req[0], 2 * mx.nd.sparse.elemwise_mul(in_data[0], out_grad[0]))


@mx.operator.register("ops_conf_sqr_csr")
class _SqrCSRProp(mx.operator.CustomOpProp):
    def list_arguments(self):
        return ["data"]

    def infer_storage_type(self, in_stype):
        return ["csr"], ["csr"], []

    def infer_storage_type_backward(self, ograd_stype, in_stype, out_stype, igrad_stype, aux_stype):
        return ["default"], ["csr"], ["csr"], ["csr"], []

    def create_operator(self, ctx, shapes, dtypes):
        return _SqrCSR()


def test_custom_op_csr_imperative():
    x = np.random.RandomState(0).uniform(-1, 1, (4, 10)).astype(np.float32)
    x[np.abs(x) < 0.5] = 0
    a = mx.nd.array(x).tostype("csr")
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(a, op_type="ops_conf_sqr_csr")
    assert y.stype == "csr"
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), x * x, rtol=1e-6)
    assert a.grad.stype == "csr"
    np.testing.assert_allclose(a.grad.asnumpy(), 2 * x, rtol=1e-6)


def test_custom_op_default_storage_rejects_sparse():
    @mx.operator.register("ops_conf_plain")
    class _Prop(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return _SqrCSR()
    with pytest.raises(MXNetError, match="infer_storage_type"):
        mx.nd.Custom(mx.nd.ones((2, 2)).tostype("csr"), op_type="ops_conf_plain")


# ---- head gradients bigger than the head ----------------------------------------------------------

def test_oversized_head_gradient_reads_leading_elements():
    a = mx.nd.array(np.arange(6).reshape(3, 2))
    a.attach_grad()
    with mx.autograd.record():
        y = a * 2
    hg = np.arange(1, 9, dtype=np.float32).reshape(4, 2)
    y.backward(mx.nd.array(hg))
    np.testing.assert_allclose(a.grad.asnumpy(), 2 * hg[:3])
    with mx.autograd.record():
        y = a * 2
    with pytest.raises(MXNetError, match="head gradient"):
        y.backward(mx.nd.ones((2, 2)))


# ---- arange(infer_range=True): the length from the consumers --------------------------------

def test_arange_infer_range_in_a_symbol():
    s = mx.sym.arange(start=2, stop=None, step=0.5, infer_range=True)
    s = mx.sym.elemwise_add(s, mx.sym.zeros(shape=[5]))
    assert s.infer_shape()[1] == [(5,)]
    exe = s.bind(ctx=mx.cpu(), args={})
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), 2 + 0.5 * np.arange(5))
    with pytest.raises(MXNetError, match="_arange.*infer_range"):
        mx.nd._internal._arange(start=0, infer_range=True)
    with pytest.raises(ValueError, match="deprecated"):   # MXNet's nd.arange refuses it
        mx.nd.arange(0, infer_range=True)


def test_arange_like():
    x = mx.nd.ones((2, 3), dtype="float64")
    cases = [({}, np.arange(6.0).reshape(2, 3)), ({"axis": 1}, np.arange(3.0)),
             ({"axis": -2, "start": 1, "step": 2}, np.array([1.0, 3.0])),
             ({"repeat": 2}, np.repeat(np.arange(3.0), 2).reshape(2, 3)),
             ({"start": 1.5, "step": 0.5, "repeat": 4}, (1.5 + 0.5 * (np.arange(6) // 4)).reshape(2, 3))]
    for kw, want in cases:
        out = mx.nd.contrib.arange_like(x, **kw)
        assert out.dtype == np.float64
        np.testing.assert_array_equal(out.asnumpy(), want)
    out = mx.nd.contrib.arange_like(mx.nd.ones((2, 3), dtype="int32"))
    assert out.dtype == np.int32 and out.asnumpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    assert mx.sym.contrib.arange_like(mx.sym.var("d"), axis=1).infer_shape(d=(2, 5))[1] == [(5,)]
    a = mx.nd.ones((3,))
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.contrib.arange_like(a) * 2
    y.backward()
    np.testing.assert_array_equal(a.grad.asnumpy(), 0)
    with pytest.raises(MXNetError, match="arange_like.*axis"):
        mx.nd.contrib.arange_like(x, axis=2)
