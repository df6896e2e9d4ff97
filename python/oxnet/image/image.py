"""``mx.image``: decoding, resizing, cropping and the augmenters of MXNet 1.9.1.

Decoding (JPEG via ``zune-jpeg``, PNG via ``png``) and resizing run in Rust
(``oxnet-core``'s ``io::image`` / ``io::imgproc``) with the GIL released; there is
no OpenCV. Colour order: ``imdecode``/``imread`` give RGB by default and BGR with
``to_rgb=0`` (OpenCV's order). ``interp`` codes are OpenCV's, as MXNet passes them
to ``cv::resize``: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos-4, 9 auto
(bicubic to enlarge, area to shrink, bilinear otherwise), 10 random of 0-4.
Images are HWC NDArrays (``uint8`` from the decoder).
"""

import json
import numbers
import random

import numpy as np

from .. import _core
from .. import ndarray as nd
from ..base import MXNetError
from ..ndarray.interop import _adoptable
from ..ndarray import NDArray

__all__ = ["imread", "imdecode", "imresize", "scale_down", "resize_short", "fixed_crop",
           "random_crop", "center_crop", "color_normalize", "random_size_crop",
           "copyMakeBorder", "Augmenter", "SequentialAug", "ResizeAug", "ForceResizeAug",
           "RandomCropAug", "RandomSizedCropAug", "CenterCropAug", "RandomOrderAug",
           "BrightnessJitterAug", "ContrastJitterAug", "SaturationJitterAug",
           "HueJitterAug", "ColorJitterAug", "LightingAug", "ColorNormalizeAug",
           "RandomGrayAug", "HorizontalFlipAug", "CastAug", "CreateAugmenter"]


def _decode_np(buf, flag=1, to_rgb=True):
    """The decoded HWC ``uint8`` pixels, a NumPy array owning the decoder's buffer."""
    return _core.image_decode(bytes(buf), int(flag), bool(to_rgb))[0]


def _decoded_nd(buf, flag, to_rgb):
    """The decoded image as an NDArray on cpu(0) that takes the decoder's buffer over
    (a fresh array nothing else refers to: no copy)."""
    arr = _decode_np(buf, flag, to_rgb)
    if _adoptable(arr):
        return _core.from_numpy_zero_copy(arr, 1, 0)
    return nd.array(arr, dtype=np.uint8)


def _finish(arr, out):  # noqa: D401 - writes into out when given
    if out is not None:
        out[:] = arr
        return out
    return arr


def imread(filename, *args, **kwargs):
    """Reads an image file into an HWC ``uint8`` NDArray.

    Parameters
    ----------
    filename : str
    flag : {0, 1}, default 1
        1 for a three-channel colour image, 0 for grayscale.
    to_rgb : bool, default True
        True for RGB order, False for BGR (OpenCV's order).
    out : NDArray, optional
    """
    flag = args[0] if args else kwargs.pop("flag", 1)
    to_rgb = args[1] if len(args) > 1 else kwargs.pop("to_rgb", True)
    out = kwargs.pop("out", None)
    try:
        with open(filename, "rb") as f:
            buf = f.read()
    except OSError as e:
        raise MXNetError("imread: cannot read image file %s: %s" % (filename, e)) from None
    try:
        img = _decoded_nd(buf, flag, to_rgb)
    except MXNetError as e:
        raise MXNetError("%s (file %s)" % (e, filename)) from None
    return _finish(img, out)


def imdecode(buf, *args, **kwargs):
    """Decodes an image (JPEG or PNG bytes) into an HWC ``uint8`` NDArray.

    Parameters
    ----------
    buf : bytes, bytearray, numpy.ndarray or NDArray
    flag : int, default 1
        1 colour (3 channels), 0 grayscale (1 channel).
    to_rgb : int, default 1
        1 for RGB order, 0 for BGR (OpenCV's order).
    out : NDArray, optional
    """
    if isinstance(buf, NDArray):
        buf = buf.asnumpy().astype(np.uint8).tobytes()
    elif not isinstance(buf, (bytes, bytearray, np.ndarray)):
        raise ValueError("buf must be of type bytes, bytearray or numpy.ndarray,"
                         "if you would like to input type str, please convert to bytes")
    elif isinstance(buf, np.ndarray):
        buf = buf.astype(np.uint8).tobytes()
    flag = args[0] if args else kwargs.pop("flag", 1)
    to_rgb = args[1] if len(args) > 1 else kwargs.pop("to_rgb", 1)
    out = kwargs.pop("out", None)
    return _finish(_decoded_nd(buf, flag, to_rgb), out)


def scale_down(src_size, size):
    """Scales ``size`` down to fit in ``src_size`` keeping its aspect ratio.

    >>> scale_down((640, 480), (720, 120))
    (640, 106)
    """
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def copyMakeBorder(src, top, bot, left, right, *args, **kwargs):
    """Pads an HWC image (OpenCV's ``copyMakeBorder``, the ``_cvcopyMakeBorder`` op).

    ``type``: 0 constant, 1 replicate, 2 reflect, 3 wrap, 4 reflect-101;
    ``value`` / ``values``: the fill of the constant border; ``out``: optional.
    """
    if args:
        kwargs["type"] = args[0]
    if "values" in kwargs:
        kwargs["values"] = tuple(int(v) for v in kwargs["values"])
    return nd._internal._cvcopyMakeBorder(src, top=top, bot=bot, left=left, right=right,
                                          **kwargs)


def _get_interp_method(interp, sizes=()):
    """The OpenCV interpolation code for MXNet's ``interp`` (resolves 9 and 10)."""
    if interp == 9:
        if sizes:
            assert len(sizes) == 4
            oh, ow, nh, nw = sizes
            if nh > oh and nw > ow:
                return 2
            if nh < oh and nw < ow:
                return 3
            return 1
        return 2
    if interp == 10:
        return random.randint(0, 4)
    if interp not in (0, 1, 2, 3, 4):
        raise ValueError("Unknown interp method %d" % interp)
    return interp


def imresize(src, w, h, *args, **kwargs):
    """Resizes an HWC image to ``w`` x ``h`` (the ``_cvimresize`` op).

    Parameters
    ----------
    src : NDArray
    w, h : int
        Target width and height.
    interp : int, default 1
        OpenCV's interpolation code (see the module docs); 9 and 10 are resolved here.
    out : NDArray, optional
    """
    interp = args[0] if args else kwargs.pop("interp", 1)
    if interp in (9, 10):
        interp = _get_interp_method(interp, (src.shape[0], src.shape[1], h, w))
    # any other code goes to the op, which rejects an unknown one with an MXNetError
    # (MXNet's _cvimresize fails in OpenCV the same way)
    return nd._internal._cvimresize(src, w=w, h=h, interp=interp, **kwargs)


def resize_short(src, size, interp=2):
    """Resizes the shorter edge to ``size`` (the longer edge keeps the aspect ratio)."""
    h, w, _ = src.shape
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    return imresize(src, new_w, new_h, interp=_get_interp_method(interp, (h, w, new_h, new_w)))


def fixed_crop(src, x0, y0, w, h, size=None, interp=2):
    """Crops ``src`` at ``(x0, y0)`` to ``w`` x ``h``, then resizes to ``size``."""
    if x0 < 0 or y0 < 0 or x0 + w > src.shape[1] or y0 + h > src.shape[0]:
        raise MXNetError("fixed_crop: region (x0=%d, y0=%d, w=%d, h=%d) is outside the "
                         "%dx%d image" % (x0, y0, w, h, src.shape[0], src.shape[1]))
    out = src[y0:y0 + h, x0:x0 + w]
    if size is not None and (w, h) != size:
        sizes = (h, w, size[1], size[0])
        out = imresize(out, *size, interp=_get_interp_method(interp, sizes))
    return out


def random_crop(src, size, interp=2):
    """Randomly crops ``src`` to ``size`` (w, h), scaling down to fit when smaller.
    Returns the image and ``(x0, y0, w, h)``."""
    h, w, _ = src.shape
    new_w, new_h = scale_down((w, h), size)
    x0 = random.randint(0, w - new_w)
    y0 = random.randint(0, h - new_h)
    out = fixed_crop(src, x0, y0, new_w, new_h, size, interp)
    return out, (x0, y0, new_w, new_h)


def center_crop(src, size, interp=2):
    """Crops the centre of ``src`` to ``size`` (w, h). Returns the image and
    ``(x0, y0, w, h)``."""
    h, w, _ = src.shape
    new_w, new_h = scale_down((w, h), size)
    x0 = int((w - new_w) / 2)
    y0 = int((h - new_h) / 2)
    out = fixed_crop(src, x0, y0, new_w, new_h, size, interp)
    return out, (x0, y0, new_w, new_h)


def color_normalize(src, mean, std=None):
    """``(src - mean) / std``."""
    if mean is not None:
        src -= mean
    if std is not None:
        src /= std
    return src


def random_size_crop(src, size, area, ratio, interp=2, **kwargs):
    """Randomly crops a region of random area and aspect ratio, resized to ``size``.
    Returns the image and ``(x0, y0, w, h)``; falls back to a centre crop."""
    h, w, _ = src.shape
    src_area = h * w
    if "min_area" in kwargs:
        area = kwargs.pop("min_area")
    assert not kwargs, "unexpected keyword arguments for `random_size_crop`."
    if isinstance(area, numbers.Number):
        area = (area, 1.0)
    for _ in range(10):
        target_area = random.uniform(area[0], area[1]) * src_area
        log_ratio = (np.log(ratio[0]), np.log(ratio[1]))
        new_ratio = np.exp(random.uniform(*log_ratio))
        new_w = int(round(np.sqrt(target_area * new_ratio)))
        new_h = int(round(np.sqrt(target_area / new_ratio)))
        if new_w <= w and new_h <= h:
            x0 = random.randint(0, w - new_w)
            y0 = random.randint(0, h - new_h)
            out = fixed_crop(src, x0, y0, new_w, new_h, size, interp)
            return out, (x0, y0, new_w, new_h)
    return center_crop(src, size, interp)


class Augmenter(object):
    """Image augmenter base class."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        for k, v in self._kwargs.items():
            if isinstance(v, NDArray):
                v = v.asnumpy()
            if isinstance(v, np.ndarray):
                v = v.tolist()
                self._kwargs[k] = v

    def dumps(self):
        """Saves the augmenter as a JSON string."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, src):
        raise NotImplementedError("Must override implementation.")


class SequentialAug(Augmenter):
    """Applies a list of augmenters in order."""

    def __init__(self, ts):
        super(SequentialAug, self).__init__()
        self.ts = ts

    def dumps(self):
        return [self.__class__.__name__.lower(), [x.dumps() for x in self.ts]]

    def __call__(self, src):
        for aug in self.ts:
            src = aug(src)
        return src


class ResizeAug(Augmenter):
    """Resizes the shorter edge to ``size``."""

    def __init__(self, size, interp=2):
        super(ResizeAug, self).__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(Augmenter):
    """Resizes to ``size`` (w, h) regardless of the aspect ratio."""

    def __init__(self, size, interp=2):
        super(ForceResizeAug, self).__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        sizes = (src.shape[0], src.shape[1], self.size[1], self.size[0])
        return imresize(src, *self.size, interp=_get_interp_method(self.interp, sizes))


class RandomCropAug(Augmenter):
    """Random crop to ``size`` (w, h)."""

    def __init__(self, size, interp=2):
        super(RandomCropAug, self).__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        return random_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """Random crop of random area and aspect ratio, resized to ``size``."""

    def __init__(self, size, area, ratio, interp=2, **kwargs):
        super(RandomSizedCropAug, self).__init__(size=size, area=area, ratio=ratio,
                                                 interp=interp)
        self.size = size
        if "min_area" in kwargs:
            self.area = kwargs.pop("min_area")
        else:
            self.area = area
        self.ratio = ratio
        self.interp = interp
        assert not kwargs, "unexpected keyword arguments for `RandomSizedCropAug`."

    def __call__(self, src):
        return random_size_crop(src, self.size, self.area, self.ratio, self.interp)[0]


class CenterCropAug(Augmenter):
    """Centre crop to ``size`` (w, h)."""

    def __init__(self, size, interp=2):
        super(CenterCropAug, self).__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp

    def __call__(self, src):
        return center_crop(src, self.size, self.interp)[0]


class RandomOrderAug(Augmenter):
    """Applies a list of augmenters in a random order."""

    def __init__(self, ts):
        super(RandomOrderAug, self).__init__()
        self.ts = ts

    def dumps(self):
        return [self.__class__.__name__.lower(), [x.dumps() for x in self.ts]]

    def __call__(self, src):
        random.shuffle(self.ts)
        for t in self.ts:
            src = t(src)
        return src


class BrightnessJitterAug(Augmenter):
    """Random brightness jitter: ``src * (1 + U(-b, b))``."""

    def __init__(self, brightness):
        super(BrightnessJitterAug, self).__init__(brightness=brightness)
        self.brightness = brightness

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.brightness, self.brightness)
        src *= alpha
        return src


class ContrastJitterAug(Augmenter):
    """Random contrast jitter around the image's mean gray level."""

    def __init__(self, contrast):
        super(ContrastJitterAug, self).__init__(contrast=contrast)
        self.contrast = contrast
        self.coef = nd.array([[[0.299, 0.587, 0.114]]])

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.contrast, self.contrast)
        gray = src * self.coef
        gray = (3.0 * (1.0 - alpha) / gray.size) * nd.sum(gray)
        src *= alpha
        src += gray
        return src


class SaturationJitterAug(Augmenter):
    """Random saturation jitter towards each pixel's gray level."""

    def __init__(self, saturation):
        super(SaturationJitterAug, self).__init__(saturation=saturation)
        self.saturation = saturation
        self.coef = nd.array([[[0.299, 0.587, 0.114]]])

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.saturation, self.saturation)
        gray = src * self.coef
        gray = nd.sum(gray, axis=2, keepdims=True)
        gray *= (1.0 - alpha)
        src *= alpha
        src += gray
        return src


class HueJitterAug(Augmenter):
    """Random hue jitter (a rotation in YIQ space)."""

    def __init__(self, hue):
        super(HueJitterAug, self).__init__(hue=hue)
        self.hue = hue
        self.tyiq = np.array([[0.299, 0.587, 0.114],
                              [0.596, -0.274, -0.321],
                              [0.211, -0.523, 0.311]])
        self.ityiq = np.array([[1.0, 0.956, 0.621],
                               [1.0, -0.272, -0.647],
                               [1.0, -1.107, 1.705]])

    def __call__(self, src):
        alpha = random.uniform(-self.hue, self.hue)
        u = np.cos(alpha * np.pi)
        w = np.sin(alpha * np.pi)
        bt = np.array([[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]])
        t = np.dot(np.dot(self.ityiq, bt), self.tyiq).T
        src = nd.dot(src, nd.array(t))
        return src


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitter in a random order."""

    def __init__(self, brightness, contrast, saturation):
        ts = []
        if brightness > 0:
            ts.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            ts.append(ContrastJitterAug(contrast))
        if saturation > 0:
            ts.append(SaturationJitterAug(saturation))
        super(ColorJitterAug, self).__init__(ts)


class LightingAug(Augmenter):
    """AlexNet-style PCA lighting noise."""

    def __init__(self, alphastd, eigval, eigvec):
        super(LightingAug, self).__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd = alphastd
        self.eigval = eigval
        self.eigvec = eigvec

    def __call__(self, src):
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        rgb = np.dot(self.eigvec * alpha, self.eigval)
        src += nd.array(rgb)
        return src


class ColorNormalizeAug(Augmenter):
    """``(src - mean) / std``."""

    def __init__(self, mean, std):
        super(ColorNormalizeAug, self).__init__(mean=mean, std=std)
        self.mean = mean if mean is None or isinstance(mean, NDArray) else nd.array(mean)
        self.std = std if std is None or isinstance(std, NDArray) else nd.array(std)

    def __call__(self, src):
        return color_normalize(src, self.mean, self.std)


class RandomGrayAug(Augmenter):
    """Converts to gray with probability ``p``."""

    def __init__(self, p):
        super(RandomGrayAug, self).__init__(p=p)
        self.p = p
        self.mat = nd.array([[0.21, 0.21, 0.21],
                             [0.72, 0.72, 0.72],
                             [0.07, 0.07, 0.07]])

    def __call__(self, src):
        if random.random() < self.p:
            src = nd.dot(src, self.mat)
        return src


class HorizontalFlipAug(Augmenter):
    """Flips left-right with probability ``p``."""

    def __init__(self, p):
        super(HorizontalFlipAug, self).__init__(p=p)
        self.p = p

    def __call__(self, src):
        if random.random() < self.p:
            src = nd.flip(src, axis=1)
        return src


class CastAug(Augmenter):
    """Casts to ``typ`` (float32 by default)."""

    def __init__(self, typ="float32"):
        super(CastAug, self).__init__(type=typ)
        self.typ = typ

    def __call__(self, src):
        return src.astype(self.typ)


def CreateAugmenter(data_shape, resize=0, rand_crop=False, rand_resize=False, rand_mirror=False,
                    mean=None, std=None, brightness=0, contrast=0, saturation=0, hue=0,
                    pca_noise=0, rand_gray=0, inter_method=2):
    """Creates MXNet's standard augmenter list (see ``mx.image.CreateAugmenter``)."""
    auglist = []
    if resize > 0:
        auglist.append(ResizeAug(resize, inter_method))
    crop_size = (data_shape[2], data_shape[1])
    if rand_resize:
        assert rand_crop
        auglist.append(RandomSizedCropAug(crop_size, 0.08, (3.0 / 4.0, 4.0 / 3.0), inter_method))
    elif rand_crop:
        auglist.append(RandomCropAug(crop_size, inter_method))
    else:
        auglist.append(CenterCropAug(crop_size, inter_method))
    if rand_mirror:
        auglist.append(HorizontalFlipAug(0.5))
    auglist.append(CastAug())
    if brightness or contrast or saturation:
        auglist.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        auglist.append(HueJitterAug(hue))
    if pca_noise > 0:
        eigval = np.array([55.46, 4.794, 1.148])
        eigvec = np.array([[-0.5675, 0.7192, 0.4009],
                           [-0.5808, -0.0045, -0.8140],
                           [-0.5836, -0.6948, 0.4203]])
        auglist.append(LightingAug(pca_noise, eigval, eigvec))
    if rand_gray > 0:
        auglist.append(RandomGrayAug(rand_gray))
    if mean is True:
        mean = nd.array([123.68, 116.28, 103.53])
    elif mean is not None:
        assert isinstance(mean, (np.ndarray, NDArray)) and mean.shape[0] in [1, 3]
    if std is True:
        std = nd.array([58.395, 57.12, 57.375])
    elif std is not None:
        assert isinstance(std, (np.ndarray, NDArray)) and std.shape[0] in [1, 3]
    if mean is not None or std is not None:
        auglist.append(ColorNormalizeAug(mean, std))
    return auglist
