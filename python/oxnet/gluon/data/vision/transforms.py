"""Image transforms as Blocks: ``ToTensor``, ``Normalize``, ``Cast``, ``Compose``.
They take NDArrays in MXNet's layouts: (H, W, C) or (N, H, W, C) images for
ToTensor, (C, H, W) or (N, C, H, W) tensors for Normalize."""

import numpy as np

from ....base import MXNetError, numeric_types
from ...block import Block, HybridBlock
from ...nn import Lambda, Sequential

__all__ = ["Compose", "Cast", "ToTensor", "Normalize"]


class Compose(Sequential):
    """Applies ``transforms`` in order (plain callables are wrapped in Lambda)."""

    def __init__(self, transforms):
        super().__init__(prefix="")
        with self.name_scope():
            for t in transforms:
                if not isinstance(t, Block):
                    t = Lambda(t)
                self.add(t)


class Cast(HybridBlock):
    """Casts the input to ``dtype``."""

    def __init__(self, dtype="float32"):
        super().__init__()
        self._dtype = dtype

    def hybrid_forward(self, F, x):
        return F.cast(x, dtype=self._dtype)


class _RankDependent(HybridBlock):
    """A transform whose graph depends on the input's rank (3 or 4 axes), which a
    traced symbol does not know: ``hybridize()`` leaves it running imperatively
    (same results), so hybridizing a ``Compose`` holding it works as in MXNet."""

    def hybridize(self, active=True, **kwargs):
        self._active = False


class ToTensor(_RankDependent):
    """(H, W, C) or (N, H, W, C) values in [0, 255] -> float32 (C, H, W) or
    (N, C, H, W) in [0, 1]."""

    def __init__(self):
        super().__init__()

    def hybrid_forward(self, F, x):
        nd_ = len(x.shape)
        if nd_ not in (3, 4):
            raise MXNetError("ToTensor: expected a (H, W, C) or (N, H, W, C) image, got shape %s"
                             % (x.shape,))
        # one op, as MXNet's (image.to_tensor: float32 v / 255, channel-planar)
        return F.image.to_tensor(x)


class Normalize(_RankDependent):
    """``(x - mean) / std`` per channel of a (C, H, W) or (N, C, H, W) tensor;
    ``mean``/``std`` are numbers or one value per channel."""

    def __init__(self, mean=0.0, std=1.0):
        super().__init__()
        self._mean = mean
        self._std = std

    @staticmethod
    def _check_values(v, c, what):
        v = np.asarray(v, dtype=np.float64).ravel()
        if v.size not in (1, c):
            raise MXNetError("Normalize: %s has %d values for %d channels" % (what, v.size, c))
        return v.tolist()

    def _per_channel(self, F, v, c, ndim, ctx, what):
        if isinstance(v, numeric_types):
            return float(v)
        v = np.asarray(v, dtype=np.float32).ravel()
        if v.size not in (1, c):
            raise MXNetError("Normalize: %s has %d values for %d channels" % (what, v.size, c))
        shape = (-1, 1, 1) if ndim == 3 else (1, -1, 1, 1)
        # one constant per channel count, rank and device (made once, reused per sample)
        key = (what, c, ndim, str(ctx), F.__name__)
        cache = self.__dict__.setdefault("_constants", {})
        if key not in cache:
            cache[key] = F.array(np.broadcast_to(v, (c,)).reshape(shape), ctx=ctx)
        return cache[key]

    def hybrid_forward(self, F, x):
        ndim = len(x.shape)
        if ndim not in (3, 4):
            raise MXNetError("Normalize: expected a (C, H, W) or (N, C, H, W) tensor, got shape "
                             "%s" % (x.shape,))
        c = x.shape[0] if ndim == 3 else x.shape[1]
        if c in (1, 3) and x.dtype in (np.float32, np.float64, np.float16):
            # one op, as MXNet's (image.normalize; it takes 1 or 3 channels)
            cache = self.__dict__.setdefault("_op_values", {})
            if c not in cache:
                cache[c] = (tuple(self._check_values(self._mean, c, "mean")),
                            tuple(self._check_values(self._std, c, "std")))
            m, sd = cache[c]
            return F.image.normalize(x, mean=m, std=sd)
        mean = self._per_channel(F, self._mean, c, ndim, x.context, "mean")
        std = self._per_channel(F, self._std, c, ndim, x.context, "std")
        out = F.broadcast_sub(x, mean) if not isinstance(mean, float) else x - mean
        return F.broadcast_div(out, std) if not isinstance(std, float) else out / std


from .image_transforms import (Resize, CenterCrop, RandomResizedCrop, CropResize,  # noqa: E402,F401
                               RandomCrop, RandomFlipLeftRight, RandomFlipTopBottom,
                               RandomBrightness, RandomContrast, RandomSaturation, RandomHue,
                               RandomColorJitter, RandomLighting, RandomApply, Rotate,
                               RandomRotation)

__all__ += ["Resize", "CenterCrop", "RandomResizedCrop", "CropResize", "RandomCrop",
            "RandomFlipLeftRight", "RandomFlipTopBottom", "RandomBrightness", "RandomContrast",
            "RandomSaturation", "RandomHue", "RandomColorJitter", "RandomLighting",
            "RandomApply", "Rotate", "RandomRotation"]
