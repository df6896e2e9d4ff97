"""``mx.image.imrotate`` and ``random_rotate``: rotation of (C, H, W) or (N, C, H, W)
``float32`` images about their centre, as in MXNet 1.9.1.

MXNet builds a sampling grid (the output's pixel coordinates rotated, normalised to
[-1, 1]) and samples the image bilinearly with ``BilinearSampler``, zeros outside.
The registry has no ``BilinearSampler`` yet, so :func:`_bilinear_sample` composes the
same sampling from registry ops (``floor``, ``clip``, ``take`` on the flattened image
and the four corner weights); it matches ``BilinearSampler`` (zero padding, the
``(x + 1) * (W - 1) / 2`` mapping) and has gradients through ``take``. When the
registry gains ``BilinearSampler`` this becomes one call to it.
"""

from numbers import Number

import numpy as np

from .. import ndarray as nd
from ..ndarray import NDArray

__all__ = ["imrotate", "random_rotate"]


def _bilinear_sample(data, grid):
    """``BilinearSampler(data, grid)``: ``data`` (N, C, H, W), ``grid`` (N, 2, Ho, Wo)
    holding x then y in [-1, 1]; returns (N, C, Ho, Wo), zero where a corner falls
    outside the image."""
    n, c, h, w = data.shape
    ho, wo = grid.shape[2], grid.shape[3]
    x = (grid[:, 0] + 1) * ((w - 1) / 2.0)          # (N, Ho, Wo) pixel coordinates
    y = (grid[:, 1] + 1) * ((h - 1) / 2.0)
    x0 = nd.floor(x)
    y0 = nd.floor(y)
    wx1 = x - x0                                      # weight of the right column
    wy1 = y - y0                                      # weight of the lower row
    flat = data.reshape((n * c * h * w,))
    # first element of each (n, c) plane, as (N, C, 1)
    base = nd.arange(n * c, ctx=data.context, dtype="float64").reshape((n, c, 1)) * (h * w)
    out = None
    for dy, wy in ((0, 1 - wy1), (1, wy1)):
        for dx, wx in ((0, 1 - wx1), (1, wx1)):
            xi = x0 + dx
            yi = y0 + dy
            inside = (xi >= 0) * (xi <= w - 1) * (yi >= 0) * (yi <= h - 1)
            pix = (nd.clip(yi, 0, h - 1) * w + nd.clip(xi, 0, w - 1)).astype("float64")
            idx = nd.broadcast_add(base, pix.reshape((n, 1, ho * wo)))
            vals = nd.take(flat, idx.astype("int64")).reshape((n, c, ho, wo))
            weight = (wy * wx * inside).expand_dims(axis=1)
            term = nd.broadcast_mul(vals, weight.astype(data.dtype))
            out = term if out is None else out + term
    return out


def imrotate(src, rotation_degrees, zoom_in=False, zoom_out=False):
    """Rotates ``src`` counter-clockwise by ``rotation_degrees`` about its centre
    (bilinear sampling, zeros where the rotated image does not reach).

    Parameters
    ----------
    src : NDArray
        A (C, H, W) image or an (N, C, H, W) batch, ``float32``.
    rotation_degrees : float or NDArray
        One angle (for an image or for every image of a batch), or an NDArray of N
        angles for a batch.
    zoom_in : bool
        Scale the result up so that no zero padding shows.
    zoom_out : bool
        Scale the result down so that the whole rotated image shows.

    Returns
    -------
    NDArray
        The rotated image(s), the shape of ``src``.
    """
    if zoom_in and zoom_out:
        raise ValueError("`zoom_in` and `zoom_out` cannot be both True")
    if np.dtype(src.dtype) != np.float32:
        raise TypeError("Only `float32` images are supported by this function")
    single = src.ndim == 3
    if single:
        if not isinstance(rotation_degrees, Number):
            raise TypeError("When a single image is passed the rotation angle is "
                            "required to be a scalar.")
        src = src.expand_dims(axis=0)
    elif src.ndim != 4:
        raise ValueError("Only 3D and 4D are supported by this function")
    ctx = src.context
    if isinstance(rotation_degrees, Number):
        rotation_degrees = nd.full((src.shape[0],), float(rotation_degrees), ctx=ctx)
    elif not isinstance(rotation_degrees, NDArray):
        rotation_degrees = nd.array(rotation_degrees, ctx=ctx)
    if rotation_degrees.shape != (src.shape[0],):
        raise ValueError("The number of images must be equal to the number of rotation "
                         "angles")
    rad = (rotation_degrees.as_in_context(ctx).astype("float32") * (np.pi / 180)) \
        .reshape((-1, 1, 1))                                           # (N, 1, 1)
    _, _, h, w = src.shape
    hscale = (h - 1) / 2.0
    wscale = (w - 1) / 2.0
    # the output grid, centred on the image: rows vary along H, columns along W
    rows = (nd.arange(h, ctx=ctx).reshape((1, h, 1)) - hscale).broadcast_to((1, h, w))
    cols = (nd.arange(w, ctx=ctx).reshape((1, 1, w)) - wscale).broadcast_to((1, h, w))
    cos, sin = nd.cos(rad), nd.sin(rad)
    # rotate, then normalise (after the rotation, to keep the aspect ratio)
    x = (nd.broadcast_mul(cols, cos) - nd.broadcast_mul(rows, sin)) / wscale
    y = (nd.broadcast_mul(cols, sin) + nd.broadcast_mul(rows, cos)) / hscale
    grid = nd.stack(x, y, axis=1)                                      # (N, 2, H, W)
    if zoom_in or zoom_out:
        # where the rotated corners land: the scale that fits them (zoom_out) or
        # that fills the frame (zoom_in)
        rho = float(np.sqrt(h * h + w * w))
        corner = float(np.arctan(h / w))
        arad = nd.abs(rad)
        max_x = nd.maximum(nd.abs(rho * nd.cos(corner + arad)),
                           nd.abs(rho * nd.cos(corner - arad)))
        max_y = nd.maximum(nd.abs(rho * nd.sin(corner + arad)),
                           nd.abs(rho * nd.sin(corner - arad)))
        if zoom_out:
            scale = nd.maximum(max_x / w, max_y / h)
        else:
            scale = nd.minimum(w / max_x, h / max_y)
        grid = nd.broadcast_mul(grid, scale.reshape((-1, 1, 1, 1)))
    out = _bilinear_sample(src, grid)
    return out[0] if single else out


def random_rotate(src, angle_limits, zoom_in=False, zoom_out=False):
    """Rotates ``src`` (a (C, H, W) image or an (N, C, H, W) batch, ``float32``) by
    angles drawn uniformly from ``angle_limits`` = (low, high) degrees, one per
    image; see :func:`imrotate`."""
    if src.ndim == 3:
        degrees = np.random.uniform(*angle_limits)
    else:
        degrees = nd.array(np.random.uniform(*angle_limits, size=src.shape[0]),
                           ctx=src.context)
    return imrotate(src, degrees, zoom_in=zoom_in, zoom_out=zoom_out)
