"""GridGenerator, BilinearSampler and SpatialTransformer (op/spatial.rs): forward
against NumPy (normalised grids, bilinear sampling with zero padding), gradients
against central differences, symbol shapes and bad inputs."""

import numpy as np
import pytest

import oxnet as mx
from _gradcheck import grad_check
from oxnet.base import MXNetError

nd = mx.nd


def affine_grid(theta, h, w):
    ys, xs = np.meshgrid(np.linspace(-1, 1, h), np.linspace(-1, 1, w), indexing="ij")
    pts = np.stack([xs.ravel(), ys.ravel(), np.ones(h * w)])
    return (theta.reshape(-1, 2, 3) @ pts).reshape(-1, 2, h, w)


def sample_ref(data, grid):
    N, C, H, W = data.shape
    out = np.zeros((N, C) + grid.shape[2:])
    for n in range(N):
        for i in range(grid.shape[2]):
            for j in range(grid.shape[3]):
                x = (grid[n, 0, i, j] + 1) * (W - 1) / 2
                y = (grid[n, 1, i, j] + 1) * (H - 1) / 2
                x0, y0 = int(np.floor(x)), int(np.floor(y))
                for yy, xx, wt in [(y0, x0, (1 - (y - y0)) * (1 - (x - x0))), (y0, x0 + 1, (1 - (y - y0)) * (x - x0)),
                                   (y0 + 1, x0, (y - y0) * (1 - (x - x0))), (y0 + 1, x0 + 1, (y - y0) * (x - x0))]:
                    if 0 <= yy < H and 0 <= xx < W:
                        out[n, :, i, j] += wt * data[n, :, yy, xx]
    return out


def test_grid_generator_affine_and_warp():
    theta = np.random.RandomState(0).randn(2, 6)
    g = nd.GridGenerator(nd.array(theta, dtype="float64"), transform_type="affine", target_shape=(3, 4)).asnumpy()
    np.testing.assert_allclose(g, affine_grid(theta, 3, 4), rtol=1e-10, atol=1e-12)
    grad_check(lambda t: nd.GridGenerator(t, transform_type="affine", target_shape=(3, 4)), theta)
    flow = np.random.RandomState(1).randn(1, 2, 3, 5)
    g = nd.GridGenerator(nd.array(flow, dtype="float64"), transform_type="warp").asnumpy()
    xs, ys = np.meshgrid(np.arange(5), np.arange(3))
    np.testing.assert_allclose(g[0, 0], (xs + flow[0, 0]) / 2.0 - 1, rtol=1e-10)
    np.testing.assert_allclose(g[0, 1], (ys + flow[0, 1]) / 1.0 - 1, rtol=1e-10)
    grad_check(lambda f: nd.GridGenerator(f, transform_type="warp"), flow)


def test_bilinear_sampler():
    rng = np.random.RandomState(2)
    data = rng.randn(2, 3, 4, 5)
    grid = rng.uniform(-1.2, 1.2, size=(2, 2, 3, 3))
    out = nd.BilinearSampler(nd.array(data, dtype="float64"), nd.array(grid, dtype="float64")).asnumpy()
    np.testing.assert_allclose(out, sample_ref(data, grid), rtol=1e-10, atol=1e-12)
    g_nd, d_nd = nd.array(grid, dtype="float64"), nd.array(data, dtype="float64")
    grad_check(lambda d: nd.BilinearSampler(d, g_nd), data)
    grad_check(lambda g: nd.BilinearSampler(d_nd, g), grid, rtol=1e-4, atol=1e-6)


def test_spatial_transformer():
    rng = np.random.RandomState(3)
    data = rng.randn(2, 2, 5, 6)
    loc = np.tile([0.7, 0.1, 0.05, -0.1, 0.8, 0.02], (2, 1)) + rng.uniform(-0.05, 0.05, (2, 6))
    out = nd.SpatialTransformer(nd.array(data, dtype="float64"), nd.array(loc, dtype="float64"), target_shape=(3, 4),
                                transform_type="affine", sampler_type="bilinear").asnumpy()
    np.testing.assert_allclose(out, sample_ref(data, affine_grid(loc, 3, 4)), rtol=1e-10, atol=1e-12)
    loc_nd, d_nd = nd.array(loc, dtype="float64"), nd.array(data, dtype="float64")
    kw = dict(target_shape=(3, 4), transform_type="affine", sampler_type="bilinear")
    grad_check(lambda d: nd.SpatialTransformer(d, loc_nd, **kw), data)
    grad_check(lambda l: nd.SpatialTransformer(d_nd, l, **kw), loc, rtol=1e-4, atol=1e-6)
    s = mx.sym.SpatialTransformer(mx.sym.var("data"), mx.sym.var("loc"), **kw)
    args, outs, _ = s.infer_shape(data=(2, 2, 5, 6))
    assert args == [(2, 2, 5, 6), (2, 6)] and outs == [(2, 2, 3, 4)]


def test_spatial_bad_inputs():
    with pytest.raises(MXNetError, match="GridGenerator"):
        nd.GridGenerator(nd.ones((2, 5)), transform_type="affine", target_shape=(2, 2))
    with pytest.raises(MXNetError, match="GridGenerator"):
        nd.GridGenerator(nd.ones((2, 6)), transform_type="affine")
    with pytest.raises(MXNetError, match="BilinearSampler"):
        nd.BilinearSampler(nd.ones((1, 1, 3, 3)), nd.ones((1, 3, 2, 2)))
    with pytest.raises(MXNetError, match="SpatialTransformer"):
        nd.SpatialTransformer(nd.ones((1, 1, 3, 3)), nd.ones((1, 4)), target_shape=(2, 2),
                              transform_type="affine", sampler_type="bilinear")
