"""``mx.image.ImageIter``: a Python image iterator over a ``.rec`` file, a ``.lst``
file plus an image folder, or an in-memory list, with ``mx.image`` augmenters.

Batching follows MXNet 1.9.1: ``last_batch_handle`` 'pad' fills the last batch
from the start of the data, 'discard' drops it, 'roll_over' keeps the partial batch
and completes it with the start of the next epoch.
"""

import logging
import numbers
import os
import random

from .. import ndarray as nd
from .. import recordio
from ..base import MXNetError
from ..io import DataBatch, DataIter
from .image import CreateAugmenter, imdecode

__all__ = ["ImageIter"]


class ImageIter(DataIter):
    """Image data iterator with a large number of augmentation choices.

    Supports reading from a ``.rec`` file (``path_imgrec``, random access with
    ``path_imgidx``), from a ``.lst`` file and a root folder (``path_imglist`` +
    ``path_root``), or from ``imglist`` (``[[label, path], ...]``). Extra keyword
    arguments go to ``CreateAugmenter`` when ``aug_list`` is None.
    """

    def __init__(self, batch_size, data_shape, label_width=1,
                 path_imgrec=None, path_imglist=None, path_root=None, path_imgidx=None,
                 shuffle=False, part_index=0, num_parts=1, aug_list=None, imglist=None,
                 data_name="data", label_name="softmax_label", dtype="float32",
                 last_batch_handle="pad", **kwargs):
        super(ImageIter, self).__init__()
        assert path_imgrec or path_imglist or (isinstance(imglist, list))
        assert dtype in ["int32", "float32", "int64", "float64"], dtype + " label not supported"
        if path_imgrec:
            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
                self.imgidx = list(self.imgrec.keys)
            else:
                self.imgrec = recordio.MXRecordIO(path_imgrec, "r")
                self.imgidx = None
        else:
            self.imgrec = None

        imgkeys = []
        if path_imglist:
            imglist = {}
            with open(path_imglist) as fin:
                for n, line in enumerate(iter(fin.readline, "")):
                    parts = line.strip().split("\t")
                    if parts == [""]:
                        continue
                    if len(parts) < 3:
                        raise MXNetError("%s line %d: expected 'index<TAB>label(s)<TAB>path', "
                                         "got %r" % (path_imglist, n + 1, line))
                    try:
                        label = nd.array([float(x) for x in parts[1:-1]], dtype=dtype)
                        key = int(parts[0])
                    except ValueError:
                        raise MXNetError("%s line %d: cannot parse %r" %
                                         (path_imglist, n + 1, line)) from None
                    imglist[key] = (label, parts[-1])
                    imgkeys.append(key)
            self.imglist = imglist
        elif isinstance(imglist, list):
            result = {}
            index = 1
            for img in imglist:
                key = str(index)
                index += 1
                if len(img) > 2:
                    label = nd.array(img[:-1], dtype=dtype)
                elif isinstance(img[0], numbers.Number):
                    label = nd.array([img[0]], dtype=dtype)
                else:
                    label = nd.array(img[0], dtype=dtype)
                result[key] = (label, img[-1])
                imgkeys.append(str(key))
            self.imglist = result
        else:
            self.imglist = None
        self.path_root = path_root

        self.check_data_shape(data_shape)
        self.provide_data = [(data_name, (batch_size,) + tuple(data_shape))]
        if label_width > 1:
            self.provide_label = [(label_name, (batch_size, label_width))]
        else:
            self.provide_label = [(label_name, (batch_size,))]
        self.batch_size = batch_size
        self.data_shape = tuple(data_shape)
        self.label_width = label_width
        self.shuffle = shuffle
        if self.imgrec is None:
            self.seq = imgkeys
        elif shuffle or num_parts > 1 or path_imgidx:
            assert self.imgidx is not None
            self.seq = self.imgidx
        else:
            self.seq = None

        if num_parts > 1:
            assert part_index < num_parts
            n = len(self.seq)
            c = n // num_parts
            self.seq = self.seq[part_index * c:(part_index + 1) * c]
        if aug_list is None:
            self.auglist = CreateAugmenter(data_shape, **kwargs)
        else:
            self.auglist = aug_list
        self.cur = 0
        self._allow_read = True
        self.last_batch_handle = last_batch_handle
        self.num_image = len(self.seq) if self.seq is not None else None
        self._cache_data = None
        self._cache_label = None
        self._cache_idx = None
        self.reset()

    def reset(self):
        """Resets the iterator to the beginning of the data."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.last_batch_handle != "roll_over" or self._cache_data is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur = 0
            self._allow_read = True

    def hard_reset(self):
        """Resets the iterator, dropping rolled-over data."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.imgrec is not None:
            self.imgrec.reset()
        self.cur = 0
        self._allow_read = True
        self._cache_data = None
        self._cache_label = None
        self._cache_idx = None

    def next_sample(self):
        """Reads the next (label, encoded image) pair."""
        if self._allow_read is False:
            raise StopIteration
        if self.seq is not None:
            if self.cur < self.num_image:
                idx = self.seq[self.cur]
            else:
                if self.last_batch_handle != "discard":
                    self.cur = 0
                raise StopIteration
            self.cur += 1
            if self.imgrec is not None:
                s = self.imgrec.read_idx(idx)
                header, img = recordio.unpack(s)
                if self.imglist is None:
                    return header.label, img
                return self.imglist[idx][0], img
            label, fname = self.imglist[idx]
            return label, self.read_image(fname)
        s = self.imgrec.read()
        if s is None:
            if self.last_batch_handle != "discard":
                self.imgrec.reset()
            raise StopIteration
        header, img = recordio.unpack(s)
        return header.label, img

    def _batchify(self, batch_data, batch_label, start=0):
        i = start
        batch_size = self.batch_size
        try:
            while i < batch_size:
                label, s = self.next_sample()
                data = self.imdecode(s)
                try:
                    self.check_valid_image(data)
                except RuntimeError as e:
                    logging.debug("Invalid image, skipping:  %s", str(e))
                    continue
                data = self.augmentation_transform(data)
                assert i < batch_size, "Batch size must be multiples of augmenter output length"
                batch_data[i] = self.postprocess_data(data)
                batch_label[i] = label
                i += 1
        except StopIteration:
            if not i:
                raise StopIteration from None
        return i

    def next(self):
        """Returns the next batch of data."""
        batch_size = self.batch_size
        c, h, w = self.data_shape
        if self._cache_data is not None:
            batch_data = self._cache_data
            batch_label = self._cache_label
            i = self._cache_idx
        else:
            batch_data = nd.zeros((batch_size, c, h, w))
            batch_label = nd.empty(self.provide_label[0][1])
            i = self._batchify(batch_data, batch_label)
        pad = batch_size - i
        if pad != 0:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._cache_data is None:
                self._cache_data = batch_data
                self._cache_label = batch_label
                self._cache_idx = i
                raise StopIteration
            _ = self._batchify(batch_data, batch_label, i)
            if self.last_batch_handle == "pad":
                self._allow_read = False
            else:
                self._cache_data = None
                self._cache_label = None
                self._cache_idx = None
        return DataBatch([batch_data], [batch_label], pad=pad)

    def check_data_shape(self, data_shape):
        """Checks that ``data_shape`` is (3, H, W)."""
        if not len(data_shape) == 3:
            raise ValueError("data_shape should have length 3, with dimensions CxHxW")
        if not data_shape[0] == 3:
            raise ValueError("This iterator expects inputs to have 3 channels.")

    def check_valid_image(self, data):
        """Checks that the decoded image is not empty."""
        if len(data[0].shape) == 0:
            raise RuntimeError("Data shape is wrong")

    def imdecode(self, s):
        """Decodes one image, naming it in the error when it is broken."""
        def locate():
            if self.seq is not None:
                idx = self.seq[(self.cur % self.num_image) - 1]
            else:
                idx = "%d" % self.cur
            if self.imglist is not None:
                _, fname = self.imglist[idx]
                msg = "filename: {}".format(fname)
            else:
                msg = "index: {}".format(idx)
            return "Broken image " + msg
        try:
            img = imdecode(s)
        except Exception as e:  # noqa: BLE001 - re-raised with the record named
            raise RuntimeError("{}, {}".format(locate(), e)) from None
        return img

    def read_image(self, fname):
        """Reads the bytes of image ``fname`` under ``path_root``."""
        with open(os.path.join(self.path_root or "", fname), "rb") as fin:
            img = fin.read()
        return img

    def augmentation_transform(self, data):
        """Applies the augmenters."""
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum):
        """HWC to CHW."""
        return nd.transpose(datum, axes=(2, 0, 1))
