"""Geometric and colour transforms of ``gluon.data.vision.transforms`` on (H, W, C)
or (N, H, W, C) images: Resize, CenterCrop, RandomResizedCrop, CropResize,
RandomCrop, the flips, the colour jitters and RandomLighting, RandomApply; and
Rotate / RandomRotation on (C, H, W) or (N, C, H, W) float32 tensors (after
ToTensor, as in MXNet; :func:`oxnet.image.imrotate`).

Resize, crops and flips are the registry's ``_image_*`` ops (``F.image.*``);
random choices use Python's ``random`` / NumPy's global generator. Colour
transforms compute in float32 and give back the input's dtype (uint8 rounded and
saturated).
"""

import random

import numpy as np

from .... import image
from .... import ndarray as nd
from ....base import MXNetError, numeric_types
from ...block import Block, HybridBlock
from ...nn import Sequential

__all__ = ["Resize", "CenterCrop", "RandomResizedCrop", "CropResize", "RandomCrop",
           "RandomFlipLeftRight", "RandomFlipTopBottom", "RandomBrightness",
           "RandomContrast", "RandomSaturation", "RandomHue", "RandomColorJitter",
           "RandomLighting", "RandomApply", "Rotate", "RandomRotation"]


def _pair(size, what):
    if isinstance(size, numeric_types):
        return (int(size), int(size))
    size = tuple(size)
    if len(size) != 2:
        raise MXNetError("%s: size must be an int or (width, height), got %s" % (what, size))
    return size


class Resize(HybridBlock):
    """Resizes to ``size`` (w, h); an int with ``keep_ratio`` resizes the shorter
    edge. ``interpolation``: OpenCV's codes (1 bilinear)."""

    def __init__(self, size, keep_ratio=False, interpolation=1):
        super(Resize, self).__init__()
        self._keep = keep_ratio
        self._size = size
        self._interpolation = interpolation

    def hybrid_forward(self, F, x):
        size = self._size
        if isinstance(size, numeric_types):
            size = (size,) if self._keep else (size, size)
        return F.image.resize(x, size=tuple(size), keep_ratio=self._keep,
                              interp=self._interpolation)


class CenterCrop(Block):
    """Crops the centre to ``size`` (w, h), resizing when the image is smaller."""

    def __init__(self, size, interpolation=1):
        super(CenterCrop, self).__init__()
        self._args = (_pair(size, "CenterCrop"), interpolation)

    def forward(self, x):
        return image.center_crop(x, *self._args)[0]


class RandomResizedCrop(Block):
    """Crops a random area (``scale`` of the image) of random aspect ``ratio`` and
    resizes it to ``size``."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=1):
        super(RandomResizedCrop, self).__init__()
        self._args = (_pair(size, "RandomResizedCrop"), scale, ratio, interpolation)

    def forward(self, x):
        return image.random_size_crop(x, *self._args)[0]


class CropResize(HybridBlock):
    """Crops ``(x, y, width, height)`` and optionally resizes to ``size``."""

    def __init__(self, x, y, width, height, size=None, interpolation=None):
        super(CropResize, self).__init__()
        self._x, self._y, self._width, self._height = x, y, width, height
        self._size = size
        self._interpolation = interpolation

    def hybrid_forward(self, F, x):
        out = F.image.crop(x, self._x, self._y, self._width, self._height)
        if self._size:
            size = self._size
            if isinstance(size, numeric_types):
                size = (size, size)
            interp = 1 if self._interpolation is None else self._interpolation
            out = F.image.resize(out, size=tuple(size), keep_ratio=False, interp=interp)
        return out


class RandomCrop(Block):
    """Randomly crops to ``size`` (w, h) after an optional constant ``pad``
    (an int or (left/right... as OpenCV: top, bot, left, right))."""

    def __init__(self, size, pad=None, pad_value=0, interpolation=1):
        super(RandomCrop, self).__init__()
        self._args = (_pair(size, "RandomCrop"), interpolation)
        if isinstance(pad, numeric_types):
            pad = (pad, pad, pad, pad)
        self._pad = pad
        self._pad_value = pad_value

    def forward(self, x):
        if self._pad:
            x = image.copyMakeBorder(x, *self._pad, type=0, value=self._pad_value)
        return image.random_crop(x, *self._args)[0]


class RandomFlipLeftRight(Block):
    """Flips left-right with probability 0.5."""

    def forward(self, x):
        if random.random() < 0.5:
            return nd.image.flip_left_right(x)
        return x


class RandomFlipTopBottom(Block):
    """Flips top-bottom with probability 0.5."""

    def forward(self, x):
        if random.random() < 0.5:
            return nd.image.flip_top_bottom(x)
        return x


_GRAY = np.array([0.299, 0.587, 0.114], dtype=np.float32)


def _back(out, like):
    dt = np.dtype(like.dtype)
    if dt.kind in "ui":
        info = np.iinfo(dt)
        out = np.clip(np.rint(out), info.min, info.max)
    return nd.array(out.astype(dt), dtype=dt, ctx=like.context)


def _brightness(a, alpha):
    return a * alpha


def _contrast(a, alpha):
    axes = tuple(range(a.ndim - 3, a.ndim))
    gray = np.mean(a @ _GRAY[: a.shape[-1]] if a.shape[-1] == 3 else a, axis=axes[:-1],
                   keepdims=True)
    if a.shape[-1] == 3:
        gray = gray[..., None]
    return a * alpha + gray * (1.0 - alpha)


def _saturation(a, alpha):
    if a.shape[-1] != 3:
        return a
    gray = (a @ _GRAY)[..., None]
    return a * alpha + gray * (1.0 - alpha)


_TYIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
_ITYIQ = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])


def _hue(a, alpha):
    if a.shape[-1] != 3:
        return a
    u, w = np.cos(alpha * np.pi), np.sin(alpha * np.pi)
    bt = np.array([[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]])
    t = np.dot(np.dot(_ITYIQ, bt), _TYIQ).T.astype(np.float32)
    return a @ t


class _ColorJitter(Block):
    _fn = None

    def __init__(self, amount):
        super(_ColorJitter, self).__init__()
        if amount < 0:
            raise ValueError("%s: the jitter must be >= 0, got %s" % (type(self).__name__, amount))
        self._amount = amount

    def _alpha(self):
        return 1.0 + random.uniform(-self._amount, self._amount)

    def forward(self, x):
        a = x.asnumpy().astype(np.float32)
        return _back(type(self)._fn(a, self._alpha()), x)


class RandomBrightness(_ColorJitter):
    """Multiplies by ``1 + U(-brightness, brightness)``."""

    _fn = staticmethod(_brightness)


class RandomContrast(_ColorJitter):
    """Blends with the mean gray level by ``1 + U(-contrast, contrast)``."""

    _fn = staticmethod(_contrast)


class RandomSaturation(_ColorJitter):
    """Blends with each pixel's gray level by ``1 + U(-saturation, saturation)``."""

    _fn = staticmethod(_saturation)


class RandomHue(_ColorJitter):
    """Rotates the hue by ``U(-hue, hue)`` half-turns (in YIQ space)."""

    _fn = staticmethod(_hue)

    def _alpha(self):
        return random.uniform(-self._amount, self._amount)


class RandomColorJitter(Block):
    """Brightness, contrast, saturation and hue jitter in a random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super(RandomColorJitter, self).__init__()
        self._ts = []
        if brightness:
            self._ts.append(RandomBrightness(brightness))
        if contrast:
            self._ts.append(RandomContrast(contrast))
        if saturation:
            self._ts.append(RandomSaturation(saturation))
        if hue:
            self._ts.append(RandomHue(hue))

    def forward(self, x):
        a = x.asnumpy().astype(np.float32)
        order = list(self._ts)
        random.shuffle(order)
        for t in order:
            a = type(t)._fn(a, t._alpha())
        return _back(a, x)


class RandomLighting(Block):
    """AlexNet-style PCA lighting noise with standard deviation ``alpha``."""

    _EIGVAL = np.array([55.46, 4.794, 1.148])
    _EIGVEC = np.array([[-0.5675, 0.7192, 0.4009],
                        [-0.5808, -0.0045, -0.8140],
                        [-0.5836, -0.6948, 0.4203]])

    def __init__(self, alpha):
        super(RandomLighting, self).__init__()
        self._alpha = alpha

    def forward(self, x):
        a = x.asnumpy().astype(np.float32)
        if a.shape[-1] == 3:
            alpha = np.random.normal(0, self._alpha, size=(3,))
            a = a + np.dot(self._EIGVEC * alpha, self._EIGVAL).astype(np.float32)
        return _back(a, x)


class RandomApply(Sequential):
    """Applies ``transforms`` with probability ``p``."""

    def __init__(self, transforms, p=0.5):
        super(RandomApply, self).__init__()
        self.transforms = transforms
        self.p = p

    def forward(self, x, *args):
        if self.p < random.random():
            return x
        return self.transforms(x)


def _check_float32(x):
    if np.dtype(x.dtype) != np.float32:
        raise TypeError("This transformation only supports float32. Consider calling it "
                        "after ToTensor")


class Rotate(Block):
    """Rotates a (C, H, W) tensor or an (N, C, H, W) batch (``float32``) by
    ``rotation_degrees`` counter-clockwise; see :func:`oxnet.image.imrotate` for
    ``zoom_in`` / ``zoom_out``."""

    def __init__(self, rotation_degrees, zoom_in=False, zoom_out=False):
        super().__init__()
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def forward(self, x):
        _check_float32(x)
        return image.imrotate(x, *self._args)


class RandomRotation(Block):
    """With probability ``rotate_with_proba``, rotates a (C, H, W) tensor or each
    image of an (N, C, H, W) batch (``float32``) by an angle drawn uniformly from
    ``angle_limits`` = (low, high) degrees; see :func:`oxnet.image.random_rotate`."""

    def __init__(self, angle_limits, zoom_in=False, zoom_out=False, rotate_with_proba=1.0):
        super().__init__()
        lower, upper = angle_limits
        if lower >= upper:
            raise ValueError("`angle_limits` must be an ascending tuple of float numbers")
        if not 0 <= rotate_with_proba <= 1:
            raise ValueError("Probability of rotating the image should be between 0 and 1")
        self._args = (angle_limits, zoom_in, zoom_out)
        self._rotate_with_proba = rotate_with_proba

    def forward(self, x):
        if np.random.random() > self._rotate_with_proba:
            return x
        _check_float32(x)
        return image.random_rotate(x, *self._args)
