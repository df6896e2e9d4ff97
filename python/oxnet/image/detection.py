"""``mx.image`` for object detection: ``ImageDetIter`` and the detection augmenters of
MXNet 1.9.1.

Label format (MXNet's): a flat float vector ``[header_width, object_width, <extra
header>..., obj0..., obj1..., ...]`` where each object is ``[class_id, xmin, ymin,
xmax, ymax, <extra>...]`` with coordinates normalised to [0, 1]. ``header_width`` is
usually 2 and ``object_width`` at least 5. Inside the iterator a label is the
``(num_objects, object_width)`` NumPy array; a batch label is
``(batch_size, max_objects, object_width)``, rows past an image's objects are -1.

A detection augmenter is called as ``aug(src, label) -> (src, label)`` with ``src`` an
HWC NDArray and ``label`` that NumPy array. Boxes whose width or height is not positive
are dropped when a label is parsed; an image left with no valid object is skipped.
"""

import json
import logging
import math
import random
import warnings

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError, numeric_types
from ..io import DataBatch
from ..ndarray import NDArray
from .image import (Augmenter, CastAug, ColorJitterAug, ColorNormalizeAug, ForceResizeAug,
                    HueJitterAug, LightingAug, RandomGrayAug, ResizeAug, copyMakeBorder,
                    fixed_crop)
from .imageiter import ImageIter

__all__ = ["DetAugmenter", "DetBorrowAug", "DetRandomSelectAug", "DetHorizontalFlipAug",
           "DetRandomCropAug", "DetRandomPadAug", "CreateMultiRandCropAugmenter",
           "CreateDetAugmenter", "ImageDetIter"]


class DetAugmenter(object):
    """Detection augmenter base class: ``__call__(src, label) -> (src, label)``."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        for k, v in self._kwargs.items():
            if isinstance(v, NDArray):
                v = v.asnumpy()
            if isinstance(v, np.ndarray):
                self._kwargs[k] = v.tolist()

    def dumps(self):
        """Saves the augmenter as a JSON string."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __call__(self, src, label):
        raise NotImplementedError("Must override implementation.")


class DetBorrowAug(DetAugmenter):
    """Applies an image-only ``Augmenter`` and leaves the label unchanged (for
    augmenters that do not move pixels: resize, colour, cast, normalise)."""

    def __init__(self, augmenter):
        if not isinstance(augmenter, Augmenter):
            raise TypeError("Borrowing from invalid Augmenter")
        super(DetBorrowAug, self).__init__(augmenter=augmenter.dumps())
        self.augmenter = augmenter

    def dumps(self):
        return [self.__class__.__name__.lower(), self.augmenter.dumps()]

    def __call__(self, src, label):
        return (self.augmenter(src), label)


class DetRandomSelectAug(DetAugmenter):
    """Skips with probability ``skip_prob``, otherwise applies one augmenter of
    ``aug_list`` chosen at random (an empty list always skips)."""

    def __init__(self, aug_list, skip_prob=0):
        super(DetRandomSelectAug, self).__init__(skip_prob=skip_prob)
        if not isinstance(aug_list, (list, tuple)):
            aug_list = [aug_list]
        for aug in aug_list:
            if not isinstance(aug, DetAugmenter):
                raise ValueError("Allow DetAugmenter in list only")
        if not aug_list:
            skip_prob = 1
        self.aug_list = list(aug_list)
        self.skip_prob = skip_prob

    def dumps(self):
        return [self.__class__.__name__.lower(), [x.dumps() for x in self.aug_list]]

    def __call__(self, src, label):
        if random.random() < self.skip_prob:
            return (src, label)
        random.shuffle(self.aug_list)
        return self.aug_list[0](src, label)


class DetHorizontalFlipAug(DetAugmenter):
    """Flips the image left-right and mirrors the boxes, with probability ``p``."""

    def __init__(self, p):
        super(DetHorizontalFlipAug, self).__init__(p=p)
        self.p = p

    def __call__(self, src, label):
        if random.random() < self.p:
            src = nd.flip(src, axis=1)
            self._flip_label(label)
        return (src, label)

    def _flip_label(self, label):
        """Mirrors the x coordinates in place."""
        xmin = 1.0 - label[:, 3]
        label[:, 3] = 1.0 - label[:, 1]
        label[:, 1] = xmin


def _pair(value, what, name):
    if isinstance(value, (tuple, list)):
        return tuple(value)
    if not isinstance(value, numeric_types):
        raise TypeError("%s: %s must be a number or a (min, max) pair" % (name, what))
    logging.info("Using fixed %s: %s in %s", what, value, name)
    return (value, value)


def _areas(boxes):
    """Areas of ``[xmin, ymin, xmax, ymax, ...]`` rows (negative sizes count 0)."""
    return np.maximum(0, boxes[:, 2] - boxes[:, 0]) * np.maximum(0, boxes[:, 3] - boxes[:, 1])


class DetRandomCropAug(DetAugmenter):
    """Random crop that keeps objects: a crop of relative area in ``area_range`` and
    aspect ratio (w/h) in ``aspect_ratio_range`` is accepted when every object it
    touches keeps more than ``min_object_covered`` of its area; objects keeping no more
    than ``min_eject_coverage`` are dropped and the boxes are re-normalised to the crop.
    ``max_attempts`` proposals are tried before giving up (the image is left as is)."""

    def __init__(self, min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33),
                 area_range=(0.05, 1.0), min_eject_coverage=0.3, max_attempts=50):
        aspect_ratio_range = _pair(aspect_ratio_range, "aspect ratio", "DetRandomCropAug")
        area_range = _pair(area_range, "area range", "DetRandomCropAug")
        super(DetRandomCropAug, self).__init__(
            min_object_covered=min_object_covered, aspect_ratio_range=aspect_ratio_range,
            area_range=area_range, min_eject_coverage=min_eject_coverage,
            max_attempts=max_attempts)
        self.min_object_covered = min_object_covered
        self.min_eject_coverage = min_eject_coverage
        self.max_attempts = max_attempts
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.enabled = False
        if area_range[1] <= 0 or area_range[0] > area_range[1]:
            warnings.warn("Skip DetRandomCropAug due to invalid area_range: %s" % (area_range,))
        elif aspect_ratio_range[0] > aspect_ratio_range[1] or aspect_ratio_range[0] <= 0:
            warnings.warn("Skip DetRandomCropAug due to invalid aspect_ratio_range: %s"
                          % (aspect_ratio_range,))
        else:
            self.enabled = True

    def __call__(self, src, label):
        crop = self._random_crop_proposal(label, src.shape[0], src.shape[1])
        if crop:
            x, y, w, h, label = crop
            src = fixed_crop(src, x, y, w, h, None)
        return (src, label)

    def _intersect(self, boxes, xmin, ymin, xmax, ymax):
        """Boxes clipped to the window; rows that do not overlap it become 0."""
        out = boxes.copy()
        out[:, 0] = np.maximum(boxes[:, 0], xmin)
        out[:, 1] = np.maximum(boxes[:, 1], ymin)
        out[:, 2] = np.minimum(boxes[:, 2], xmax)
        out[:, 3] = np.minimum(boxes[:, 3], ymax)
        empty = (out[:, 0] >= out[:, 2]) | (out[:, 1] >= out[:, 3])
        out[empty, :] = 0
        return out

    def _check_satisfy_constraints(self, label, xmin, ymin, xmax, ymax, width, height):
        if (xmax - xmin) * (ymax - ymin) < 2:
            return False
        win = (float(xmin) / width, float(ymin) / height, float(xmax) / width,
               float(ymax) / height)
        areas = _areas(label[:, 1:])
        valid = np.flatnonzero(areas * width * height > 2)
        if valid.size < 1:
            return False
        inter = self._intersect(label[valid, 1:], *win)
        cover = _areas(inter) / areas[valid]
        cover = cover[cover > 0]
        return cover.size > 0 and np.amin(cover) > self.min_object_covered

    def _update_labels(self, label, crop_box, height, width):
        x0, y0 = float(crop_box[0]) / width, float(crop_box[1]) / height
        w, h = float(crop_box[2]) / width, float(crop_box[3]) / height
        out = label.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] - x0) / w
        out[:, (2, 4)] = (out[:, (2, 4)] - y0) / h
        out[:, 1:5] = np.clip(out[:, 1:5], 0, 1)
        cover = _areas(out[:, 1:]) * w * h / _areas(label[:, 1:])
        keep = (out[:, 3] > out[:, 1]) & (out[:, 4] > out[:, 2]) & (cover > self.min_eject_coverage)
        if not keep.any():
            return None
        return out[keep]

    def _random_crop_proposal(self, label, height, width):
        if not self.enabled or height <= 0 or width <= 0:
            return ()
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for _ in range(self.max_attempts):
            ratio = random.uniform(*self.aspect_ratio_range)
            if ratio <= 0:
                continue
            h = int(round(math.sqrt(min_area / ratio)))
            max_h = int(round(math.sqrt(max_area / ratio)))
            if round(max_h * ratio) > width:
                max_h = int((width + 0.4999999) / ratio)   # widest crop that still fits
            max_h = min(max_h, height)
            h = min(h, max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            area = w * h
            if area < min_area:                             # rounding fixes
                h += 1
                w = int(round(h * ratio))
                area = w * h
            if area > max_area:
                h -= 1
                w = int(round(h * ratio))
                area = w * h
            if not (min_area <= area <= max_area and 0 <= w <= width and 0 <= h <= height):
                continue
            y = random.randint(0, max(0, height - h))
            x = random.randint(0, max(0, width - w))
            if self._check_satisfy_constraints(label, x, y, x + w, y + h, width, height):
                new_label = self._update_labels(label, (x, y, w, h), height, width)
                if new_label is not None:
                    return (x, y, w, h, new_label)
        return ()


class DetRandomPadAug(DetAugmenter):
    """Random zoom-out: places the image in a larger canvas (relative area in
    ``area_range``, aspect ratio w/h in ``aspect_ratio_range``) filled with
    ``pad_val`` and re-normalises the boxes to it."""

    def __init__(self, aspect_ratio_range=(0.75, 1.33), area_range=(1.0, 3.0),
                 max_attempts=50, pad_val=(128, 128, 128)):
        if not isinstance(pad_val, (list, tuple)):
            if not isinstance(pad_val, numeric_types):
                raise TypeError("DetRandomPadAug: pad_val must be a number or a tuple")
            pad_val = (pad_val,)
        aspect_ratio_range = _pair(aspect_ratio_range, "aspect ratio", "DetRandomPadAug")
        area_range = _pair(area_range, "area range", "DetRandomPadAug")
        super(DetRandomPadAug, self).__init__(aspect_ratio_range=aspect_ratio_range,
                                              area_range=area_range, max_attempts=max_attempts,
                                              pad_val=pad_val)
        self.pad_val = pad_val
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.max_attempts = max_attempts
        self.enabled = False
        if area_range[1] <= 1.0 or area_range[0] > area_range[1]:
            warnings.warn("Skip DetRandomPadAug due to invalid parameters: %s" % (area_range,))
        elif aspect_ratio_range[0] <= 0 or aspect_ratio_range[0] > aspect_ratio_range[1]:
            warnings.warn("Skip DetRandomPadAug due to invalid aspect_ratio_range: %s"
                          % (aspect_ratio_range,))
        else:
            self.enabled = True

    def __call__(self, src, label):
        height, width = src.shape[0], src.shape[1]
        pad = self._random_pad_proposal(label, height, width)
        if pad:
            x, y, w, h, label = pad
            vals = tuple(self.pad_val) * (3 if len(self.pad_val) == 1 else 1)
            src = copyMakeBorder(src, y, h - y - height, x, w - x - width, 0, values=vals)
        return (src, label)

    def _update_labels(self, label, pad_box, height, width):
        out = label.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] * width + pad_box[0]) / pad_box[2]
        out[:, (2, 4)] = (out[:, (2, 4)] * height + pad_box[1]) / pad_box[3]
        return out

    def _random_pad_proposal(self, label, height, width):
        if not self.enabled or height <= 0 or width <= 0:
            return ()
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for _ in range(self.max_attempts):
            ratio = random.uniform(*self.aspect_ratio_range)
            if ratio <= 0:
                continue
            h = int(round(math.sqrt(min_area / ratio)))
            max_h = int(round(math.sqrt(max_area / ratio)))
            if round(h * ratio) < width:
                h = int((width + 0.499999) / ratio)          # wide enough for the image
            h = max(h, height)
            h = min(h, max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            if (h - height) < 2 or (w - width) < 2:
                continue                                     # too little padding to matter
            y = random.randint(0, max(0, h - height))
            x = random.randint(0, max(0, w - width))
            return (x, y, w, h, self._update_labels(label, (x, y, w, h), height, width))
        return ()


def CreateMultiRandCropAugmenter(min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33),
                                 area_range=(0.05, 1.0), min_eject_coverage=0.3,
                                 max_attempts=50, skip_prob=0):
    """A ``DetRandomSelectAug`` over several ``DetRandomCropAug``: each parameter may be
    a list (one value per crop augmenter; lists of length 1 are repeated), e.g.
    ``min_object_covered=[0.1, 0.3, 0.5]`` gives three croppers."""
    params = [min_object_covered, aspect_ratio_range, area_range, min_eject_coverage,
              max_attempts]
    params = [p if isinstance(p, list) else [p] for p in params]
    num = max(len(p) for p in params)
    for k, p in enumerate(params):
        if len(p) != num:
            if len(p) != 1:
                raise ValueError("CreateMultiRandCropAugmenter: parameter lists must have the "
                                 "same length or length 1, got %d and %d" % (len(p), num))
            params[k] = p * num
    augs = [DetRandomCropAug(min_object_covered=moc, aspect_ratio_range=arr, area_range=ar,
                             min_eject_coverage=mec, max_attempts=ma)
            for moc, arr, ar, mec, ma in zip(*params)]
    return DetRandomSelectAug(augs, skip_prob=skip_prob)


_EIGVAL = np.array([55.46, 4.794, 1.148])
_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009],
                    [-0.5808, -0.0045, -0.8140],
                    [-0.5836, -0.6948, 0.4203]])


def CreateDetAugmenter(data_shape, resize=0, rand_crop=0, rand_pad=0, rand_gray=0,
                       rand_mirror=False, mean=None, std=None, brightness=0, contrast=0,
                       saturation=0, pca_noise=0, hue=0, inter_method=2,
                       min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33),
                       area_range=(0.05, 3.0), min_eject_coverage=0.3, max_attempts=50,
                       pad_val=(127, 127, 127)):
    """MXNet's standard detection augmenter list: resize, random crop (probability
    ``rand_crop``), mirror, random pad (probability ``rand_pad``, area up to
    ``area_range[1]``), forced resize to ``data_shape``, cast to float32, colour
    jitter, hue, PCA lighting noise, random gray, normalisation (``mean``/``std`` True
    for the ImageNet values)."""
    auglist = []
    if resize > 0:
        auglist.append(DetBorrowAug(ResizeAug(resize, inter_method)))
    if rand_crop > 0:
        auglist.append(CreateMultiRandCropAugmenter(
            min_object_covered, aspect_ratio_range, area_range, min_eject_coverage,
            max_attempts, skip_prob=(1 - rand_crop)))
    if rand_mirror > 0:
        auglist.append(DetHorizontalFlipAug(0.5))
    if rand_pad > 0:   # as late as possible: padding makes the image larger
        pad_aug = DetRandomPadAug(aspect_ratio_range, (1.0, area_range[1]), max_attempts,
                                  pad_val)
        auglist.append(DetRandomSelectAug([pad_aug], 1 - rand_pad))
    auglist.append(DetBorrowAug(ForceResizeAug((data_shape[2], data_shape[1]), inter_method)))
    auglist.append(DetBorrowAug(CastAug()))
    if brightness or contrast or saturation:
        auglist.append(DetBorrowAug(ColorJitterAug(brightness, contrast, saturation)))
    if hue:
        auglist.append(DetBorrowAug(HueJitterAug(hue)))
    if pca_noise > 0:
        auglist.append(DetBorrowAug(LightingAug(pca_noise, _EIGVAL, _EIGVEC)))
    if rand_gray > 0:
        auglist.append(DetBorrowAug(RandomGrayAug(rand_gray)))
    if mean is True:
        mean = np.array([123.68, 116.28, 103.53])
    elif mean is not None:
        assert isinstance(mean, (np.ndarray, NDArray)) and mean.shape[0] in [1, 3]
    if std is True:
        std = np.array([58.395, 57.12, 57.375])
    elif std is not None:
        assert isinstance(std, (np.ndarray, NDArray)) and std.shape[0] in [1, 3]
    if mean is not None or std is not None:
        auglist.append(DetBorrowAug(ColorNormalizeAug(mean, std)))
    return auglist


class ImageDetIter(ImageIter):
    """Image iterator with detection labels (see the module docs for the format).

    The sources are those of ``ImageIter`` (``.rec`` with the labels in the record
    headers, ``.lst`` + ``path_root``, or ``imglist`` of ``[label..., path]``). All
    labels are read once at construction to find the largest object count, which
    sets ``label_shape = (max_objects, object_width)``; ``reshape``/``sync_label_shape``
    enlarge it (e.g. to match a validation iterator). Extra keyword arguments go to
    ``CreateDetAugmenter`` when ``aug_list`` is None.
    """

    def __init__(self, batch_size, data_shape, path_imgrec=None, path_imglist=None,
                 path_root=None, path_imgidx=None, shuffle=False, part_index=0, num_parts=1,
                 aug_list=None, imglist=None, data_name="data", label_name="label",
                 last_batch_handle="pad", **kwargs):
        super(ImageDetIter, self).__init__(
            batch_size=batch_size, data_shape=data_shape, path_imgrec=path_imgrec,
            path_imglist=path_imglist, path_root=path_root, path_imgidx=path_imgidx,
            shuffle=shuffle, part_index=part_index, num_parts=num_parts, aug_list=[],
            imglist=imglist, data_name=data_name, label_name=label_name,
            last_batch_handle=last_batch_handle)
        if aug_list is None:
            self.auglist = CreateDetAugmenter(data_shape, **kwargs)
        else:
            self.auglist = aug_list
        label_shape = self._estimate_label_shape()
        self.provide_label = [(label_name, (self.batch_size,) + label_shape)]
        self.label_shape = label_shape

    def _check_valid_label(self, label):
        """Raises RuntimeError unless ``label`` is (1+, 5+) with a valid object."""
        if len(label.shape) != 2 or label.shape[1] < 5:
            raise RuntimeError("Label with shape (1+, 5+) required, %s received." % str(label))
        valid = (label[:, 0] >= 0) & (label[:, 3] > label[:, 1]) & (label[:, 4] > label[:, 2])
        if not valid.any():
            raise RuntimeError("Invalid label occurs.")

    def _estimate_label_shape(self):
        """Reads every label once: ``(max objects, object width)``."""
        max_count, width = 0, None
        self.reset()
        try:
            while True:
                label, _ = self.next_sample()
                label = self._parse_label(label)
                max_count = max(max_count, label.shape[0])
                width = label.shape[1]
        except StopIteration:
            pass
        self.reset()
        if width is None:
            raise MXNetError("ImageDetIter: the data holds no image, so the label shape "
                             "cannot be estimated")
        return (max_count, width)

    def _parse_label(self, label):
        """The flat label as an ``(objects, object_width)`` array of the valid boxes."""
        if isinstance(label, NDArray):
            label = label.asnumpy()
        raw = np.asarray(label, dtype=np.float64).ravel()
        if raw.size < 7:
            raise RuntimeError("Label shape is invalid: " + str(raw.shape))
        header_width = int(raw[0])
        obj_width = int(raw[1])
        if obj_width < 5 or header_width < 2 or header_width > raw.size:
            raise RuntimeError("Label header (header width %d, object width %d) is invalid"
                               % (header_width, obj_width))
        if (raw.size - header_width) % obj_width != 0:
            raise RuntimeError("Label shape %s inconsistent with annotation width %d."
                               % (str(raw.shape), obj_width))
        out = raw[header_width:].reshape((-1, obj_width)).astype(np.float32)
        valid = (out[:, 3] > out[:, 1]) & (out[:, 4] > out[:, 2])
        if not valid.any():
            raise RuntimeError("Encounter sample with no valid label.")
        return out[valid]

    def reshape(self, data_shape=None, label_shape=None):
        """Changes the data shape and/or enlarges the label shape."""
        if data_shape is not None:
            self.check_data_shape(data_shape)
            self.provide_data = [(self.provide_data[0][0], (self.batch_size,) + tuple(data_shape))]
            self.data_shape = tuple(data_shape)
        if label_shape is not None:
            self.check_label_shape(label_shape)
            self.provide_label = [(self.provide_label[0][0], (self.batch_size,) + tuple(label_shape))]
            self.label_shape = tuple(label_shape)

    def _batchify(self, batch_data, batch_label, start=0):
        i = start
        batch_size = self.batch_size
        try:
            while i < batch_size:
                label, s = self.next_sample()
                data = self.imdecode(s)
                try:
                    self.check_valid_image([data])
                    label = self._parse_label(label)
                    data, label = self.augmentation_transform(data, label)
                    self._check_valid_label(label)
                except RuntimeError as e:
                    logging.debug("Invalid image, skipping:  %s", str(e))
                    continue
                batch_data[i] = self.postprocess_data(data)
                rows = np.full(batch_label.shape[1:], -1, dtype=np.float32)
                n = min(label.shape[0], rows.shape[0])
                rows[:n] = label[:n]
                batch_label[i] = nd.array(rows)
                i += 1
        except StopIteration:
            if not i:
                raise StopIteration from None
        return i

    def next(self):
        """Returns the next batch (labels padded with -1)."""
        batch_size = self.batch_size
        c, h, w = self.data_shape
        if self._cache_data is not None:
            batch_data, batch_label, i = self._cache_data, self._cache_label, self._cache_idx
        else:
            batch_data = nd.zeros((batch_size, c, h, w))
            batch_label = nd.full(self.provide_label[0][1], -1)
            i = self._batchify(batch_data, batch_label)
        pad = batch_size - i
        if pad != 0:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._cache_data is None:
                self._cache_data, self._cache_label, self._cache_idx = batch_data, batch_label, i
                raise StopIteration
            self._batchify(batch_data, batch_label, i)
            if self.last_batch_handle == "pad":
                self._allow_read = False
            else:
                self._cache_data = self._cache_label = self._cache_idx = None
        return DataBatch([batch_data], [batch_label], pad=pad)

    def augmentation_transform(self, data, label):
        """Applies the detection augmenters."""
        for aug in self.auglist:
            data, label = aug(data, label)
        return (data, label)

    def check_label_shape(self, label_shape):
        """Checks that ``label_shape`` is (objects, width), not fewer objects and the
        same width."""
        if not len(label_shape) == 2:
            raise ValueError("label_shape should have length 2")
        if label_shape[0] < self.label_shape[0]:
            raise ValueError("Attempts to reduce label count from %d to %d, not allowed."
                             % (self.label_shape[0], label_shape[0]))
        if label_shape[1] != self.provide_label[0][1][2]:
            raise ValueError("label_shape object width inconsistent: %d vs %d."
                             % (self.provide_label[0][1][2], label_shape[1]))

    def sync_label_shape(self, it, verbose=False):
        """Makes this iterator and ``it`` use the same (larger) label shape; returns
        ``it``."""
        assert isinstance(it, ImageDetIter), "Synchronize with invalid iterator."
        train, val = self.label_shape, it.label_shape
        assert train[1] == val[1], "object width mismatch."
        max_count = max(train[0], val[0])
        if max_count > train[0]:
            self.reshape(None, (max_count, train[1]))
        if max_count > val[0]:
            it.reshape(None, (max_count, val[1]))
        if verbose and max_count > min(train[0], val[0]):
            logging.info("Resized label_shape to (%d, %d).", max_count, train[1])
        return it

    def draw_next(self, color=None, thickness=2, mean=None, std=None, clip=True,
                  waitKey=None, window_name="draw_next", id2labels=None):
        """Yields augmented images (BGR ``uint8``, as MXNet's) with the boxes drawn.

        Drawing is done with NumPy (no OpenCV needed); class names (``id2labels``) are
        not written on the image. With ``waitKey`` the image is also shown with
        OpenCV's ``imshow`` when ``cv2`` can be imported."""
        count = 0
        while True:
            try:
                label, s = self.next_sample()
            except StopIteration:
                return
            data = self.imdecode(s)
            try:
                self.check_valid_image([data])
                label = self._parse_label(label)
            except RuntimeError as e:
                logging.debug("Invalid image, skipping:  %s", str(e))
                continue
            count += 1
            data, label = self.augmentation_transform(data, label)
            image = data.asnumpy().astype(np.float64)
            if std is True:
                std = np.array([58.395, 57.12, 57.375])
            if std is not None:
                image *= np.asarray(std.asnumpy() if isinstance(std, NDArray) else std)
            if mean is True:
                mean = np.array([123.68, 116.28, 103.53])
            if mean is not None:
                image += np.asarray(mean.asnumpy() if isinstance(mean, NDArray) else mean)
            image = image[:, :, ::-1].copy()          # RGB -> BGR
            if clip:
                image = np.clip(image, 0, 255)
            image = image.astype(np.uint8)
            height, width = image.shape[:2]
            bgr = None if color is None else np.asarray(color)[::-1]
            t = max(1, int(thickness))
            for row in label:
                x1 = int(row[1] * width)
                if x1 < 0:
                    continue
                y1, x2, y2 = int(row[2] * height), int(row[3] * width), int(row[4] * height)
                c = np.random.rand(3) * 255 if bgr is None else bgr
                x1, x2 = max(0, x1), min(width - 1, x2)
                y1, y2 = max(0, y1), min(height - 1, y2)
                image[y1:y1 + t, x1:x2 + 1] = c
                image[max(y1, y2 - t + 1):y2 + 1, x1:x2 + 1] = c
                image[y1:y2 + 1, x1:x1 + t] = c
                image[y1:y2 + 1, max(x1, x2 - t + 1):x2 + 1] = c
            if waitKey is not None:
                try:
                    import cv2
                    cv2.imshow(window_name, image)
                    cv2.waitKey(waitKey)
                except ImportError:
                    warnings.warn("Unable to import cv2, not showing the image")
            yield image
