"""image.normalize and image.to_tensor (op/image_tensor.rs) against NumPy, the
gradient of normalize (1/std per channel) and bad inputs."""

import numpy as np
import pytest

import oxnet as mx
from _gradcheck import grad_check
from oxnet.base import MXNetError

nd = mx.nd


def test_normalize():
    x = np.random.RandomState(0).rand(2, 3, 4, 5)
    mean, std = np.array([0.1, 0.2, 0.3]), np.array([2.0, 0.5, 1.0])
    got = nd.image.normalize(nd.array(x, dtype="float64"), mean=tuple(mean), std=tuple(std)).asnumpy()
    np.testing.assert_allclose(got, (x - mean[:, None, None]) / std[:, None, None], rtol=1e-10)
    got = nd.image.normalize(nd.array(x[0]), mean=1.0, std=2.0).asnumpy()
    np.testing.assert_allclose(got, (x[0] - 1) / 2, rtol=1e-5, atol=1e-7)
    grad_check(lambda a: nd.image.normalize(a, mean=tuple(mean), std=tuple(std)), x[:, :, :2, :2])
    s = mx.sym.image.normalize(mx.sym.var("data"), mean=(0, 1, 2), std=(3, 2, 1))
    assert s.infer_shape(data=(3, 4, 4))[1] == [(3, 4, 4)]


def test_to_tensor():
    img = np.random.RandomState(1).randint(0, 256, size=(2, 4, 5, 3)).astype(np.uint8)
    got = nd.image.to_tensor(nd.array(img, dtype="uint8"))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.asnumpy(), np.transpose(img, (0, 3, 1, 2)) / 255.0, rtol=1e-6)
    np.testing.assert_allclose(nd.image.to_tensor(nd.array(img[0], dtype="uint8")).asnumpy(),
                               np.transpose(img[0], (2, 0, 1)) / 255.0, rtol=1e-6)


def test_fast_paths_match_the_general_ones():
    # uint8 images and float32 tensors take direct loops; the values are those of the
    # general (f64) path exactly, and out= onto the input itself still works
    rs = np.random.RandomState(2)
    img = rs.randint(0, 256, size=(3, 7, 9, 3)).astype(np.uint8)
    fast = nd.image.to_tensor(nd.array(img, dtype="uint8")).asnumpy()
    slow = nd.image.to_tensor(nd.array(img, dtype="int32")).asnumpy()
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_array_equal(fast, (np.transpose(img, (0, 3, 1, 2)) / 255.0).astype(np.float32))
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    want = ((fast.astype(np.float64) - np.array(mean)[:, None, None])
            / np.array(std)[:, None, None]).astype(np.float32)
    x = nd.array(fast)
    got = nd.image.normalize(x, mean=mean, std=std).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    nd.image.normalize(x, mean=mean, std=std, out=x)
    np.testing.assert_array_equal(x.asnumpy(), got)


def test_bad_inputs():
    with pytest.raises(MXNetError, match="normalize"):
        nd.image.normalize(nd.ones((3, 4)), mean=0.0, std=1.0)
    with pytest.raises(MXNetError, match="normalize"):
        nd.image.normalize(nd.ones((3, 4, 4)), mean=(0.0, 1.0), std=1.0)
    with pytest.raises(MXNetError, match="to_tensor"):
        nd.image.to_tensor(nd.ones((4, 4)))


def resize_ref(x, oh, ow, align=True):
    N, C, H, W = x.shape
    if (oh, ow) == (H, W):
        return x.copy()

    def src(o, out, inp):
        if align:
            r = (inp - 1) / (out - 1) * o if out > 1 else 0.0
        else:
            r = max(inp / out * (o + 0.5) - 0.5, 0.0)
        i = min(int(np.floor(r)), inp - 1)
        return i, int(i < inp - 1), r - i

    y = np.zeros((N, C, oh, ow))
    for i in range(oh):
        a, da, ly = src(i, oh, H)
        for j in range(ow):
            b, db, lx = src(j, ow, W)
            y[:, :, i, j] = ((1 - ly) * ((1 - lx) * x[:, :, a, b] + lx * x[:, :, a, b + db])
                             + ly * ((1 - lx) * x[:, :, a + da, b] + lx * x[:, :, a + da, b + db]))
    return y


def test_bilinear_resize():
    x = np.random.RandomState(6).rand(2, 2, 5, 6)
    for oh, ow in [(3, 4), (9, 11), (5, 6), (1, 1)]:
        got = nd.contrib.BilinearResize2D(nd.array(x, dtype="float64"), height=oh, width=ow).asnumpy()
        np.testing.assert_allclose(got, resize_ref(x, oh, ow), rtol=1e-10, atol=1e-12)
    got = nd.contrib.BilinearResize2D(nd.array(x, dtype="float64"), height=8, width=3, align_corners=False).asnumpy()
    np.testing.assert_allclose(got, resize_ref(x, 8, 3, align=False), rtol=1e-10, atol=1e-12)
    assert nd.contrib.BilinearResize2D(nd.array(x), mode="to_even_up").shape == (2, 2, 6, 6)
    assert nd.contrib.BilinearResize2D(nd.array(x), mode="to_odd_down").shape == (2, 2, 5, 5)
    assert nd.contrib.BilinearResize2D(nd.array(x), scale_height=0.5, scale_width=2.0, mode="odd_scale").shape == (2, 2, 3, 12)
    assert nd.contrib.BilinearResize2D(nd.array(x), nd.ones((1, 1, 4, 4)), mode="like").shape == (2, 2, 4, 4)
    grad_check(lambda a: nd.contrib.BilinearResize2D(a, height=7, width=4), x)
    grad_check(lambda a: nd.contrib.BilinearResize2D(a, height=3, width=8, align_corners=False), x)
    with pytest.raises(MXNetError, match="BilinearResize2D"):
        nd.contrib.BilinearResize2D(nd.ones((2, 3, 4)), height=2, width=2)
    with pytest.raises(MXNetError, match="BilinearResize2D"):
        nd.contrib.BilinearResize2D(nd.ones((1, 1, 4, 4)), mode="odd_scale")
