"""``mx.io.CSVIter`` and ``MNISTIter``: iterators over files MXNet's
C++ iterators read, with MXNet 1.9.1's batching.

Batching (MXNet's batch loader): with ``round_batch`` (default) the last batch is
completed with the first examples, ``pad`` is their number and the next epoch starts
after them; without it ``pad`` is the number of missing examples and those slots keep
the previous batch's values. Labels of shape ``(1,)`` come out as ``(batch,)``.

``LibSVMIter`` (CSR batches) is in ``libsvm.py``.
"""

import gzip
import os
import struct

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from .io import DataBatch, DataDesc, _BatchIter

__all__ = ["CSVIter", "MNISTIter"]


class _ArrayBatchLoader(_BatchIter):
    """MXNet's batch loader over in-memory example arrays."""

    def __init__(self, data, label, batch_size, round_batch, data_name="data",
                 label_name="softmax_label", dtype=np.float32):
        super(_ArrayBatchLoader, self).__init__(batch_size)
        self._data = data
        self._label = label
        self.batch_size = int(batch_size)
        self.round_batch = bool(round_batch)
        self._n = data.shape[0]
        if self._n == 0:
            raise MXNetError("%s: the input holds no examples" % type(self).__name__)
        self._dtype = np.dtype(dtype)
        self._data_name, self._label_name = data_name, label_name
        self._buf_d = np.zeros((self.batch_size,) + data.shape[1:], dtype=self._dtype)
        lshape = label.shape[1:]
        if lshape == (1,):
            lshape = ()
        self._buf_l = np.zeros((self.batch_size,) + lshape, dtype=np.float32)
        self._pos = 0
        self._overflow = 0
        self._batch = None

    @property
    def provide_data(self):
        return [DataDesc(self._data_name, self._buf_d.shape, self._dtype)]

    @property
    def provide_label(self):
        return [DataDesc(self._label_name, self._buf_l.shape, np.float32)]

    def reset(self):
        if not self.round_batch or self._overflow == 0:
            self._pos = 0
        self._overflow = 0
        self._batch = None

    def _take(self, k, top):
        self._buf_d[top] = self._data[k]
        self._buf_l[top] = self._label[k].reshape(self._buf_l.shape[1:])

    def iter_next(self):
        if self._overflow:
            return False
        top = 0
        while self._pos < self._n and top < self.batch_size:
            self._take(self._pos, top)
            self._pos += 1
            top += 1
        if top == 0:
            return False
        pad = 0
        if top < self.batch_size:
            if self.round_batch:
                if self._n < self.batch_size - top:
                    raise MXNetError("number of input must be bigger than batch size")
                self._pos = 0
                while top < self.batch_size:
                    self._take(self._pos, top)
                    self._pos += 1
                    top += 1
                    pad += 1
                self._overflow = pad
            else:
                pad = self.batch_size - top
        self._batch = DataBatch([nd.array(self._buf_d, dtype=self._dtype)],
                                [nd.array(self._buf_l)], pad=pad,
                                provide_data=self.provide_data, provide_label=self.provide_label)
        return True


def _read_csv(path, shape, dtype, what):
    try:
        arr = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)
    except OSError as e:
        raise MXNetError("CSVIter: cannot read %s %s: %s" % (what, path, e)) from None
    except ValueError as e:
        raise MXNetError("CSVIter: %s %s does not parse as CSV: %s" % (what, path, e)) from None
    size = int(np.prod(shape))
    if arr.shape[1] != size:
        raise MXNetError("CSVIter: %s %s has %d columns per row but the shape %s needs %d"
                         % (what, path, arr.shape[1], tuple(shape), size))
    return arr.astype(dtype).reshape((arr.shape[0],) + tuple(shape))


class CSVIter(_ArrayBatchLoader):
    """Iterates over CSV files: ``data_csv`` rows reshaped to ``data_shape``, and
    ``label_csv`` rows to ``label_shape`` (labels are 0 without ``label_csv``)."""

    def __init__(self, data_csv, data_shape, label_csv=None, label_shape=(1,), batch_size=1,
                 round_batch=True, prefetch_buffer=4, dtype="float32", ctx="cpu",
                 data_name="data", label_name="softmax_label", **kwargs):
        dtype = np.dtype(dtype or "float32")
        data = _read_csv(data_csv, data_shape, dtype, "data_csv")
        if label_csv and label_csv != "NULL":
            label = _read_csv(label_csv, label_shape, np.float32, "label_csv")
            if label.shape[0] != data.shape[0]:
                raise MXNetError("CSVIter: %s has %d rows but %s has %d" %
                                 (data_csv, data.shape[0], label_csv, label.shape[0]))
        else:
            label = np.zeros((data.shape[0],) + tuple(label_shape), dtype=np.float32)
        super(CSVIter, self).__init__(data, label, batch_size, round_batch, data_name,
                                      label_name, dtype)


def _open_maybe_gz(path):
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        path = path + ".gz"
    try:
        return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")
    except OSError as e:
        raise MXNetError("MNISTIter: cannot open %s: %s" % (path, e)) from None


def _read_idx(path, what):
    with _open_maybe_gz(path) as f:
        raw = f.read()
    if len(raw) < 8:
        raise MXNetError("MNISTIter: %s %s is not an IDX file (too short)" % (what, path))
    magic = struct.unpack(">I", raw[:4])[0]
    ndim = magic & 0xFF
    if (magic >> 8) != 0x08 or ndim < 1 or ndim > 4:
        raise MXNetError("MNISTIter: %s %s has a bad IDX magic number 0x%08x" % (what, path, magic))
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    body = raw[4 + 4 * ndim:]
    if len(body) < int(np.prod(dims)):
        raise MXNetError("MNISTIter: %s %s is truncated" % (what, path))
    return np.frombuffer(body, dtype=np.uint8, count=int(np.prod(dims))).reshape(dims)


class MNISTIter(_ArrayBatchLoader):
    """Iterates over MNIST's IDX files: images scaled to [0, 1], ``(batch, 1, 28, 28)``
    or ``(batch, 784)`` with ``flat``; the last partial batch is dropped (as MXNet)."""

    def __init__(self, image="./train-images-idx3-ubyte", label="./train-labels-idx1-ubyte",
                 batch_size=128, shuffle=True, flat=False, seed=0, silent=False, num_parts=1,
                 part_index=0, prefetch_buffer=4, data_shape=None, ctx="cpu",
                 data_name="data", label_name="softmax_label", **kwargs):
        imgs = _read_idx(image, "image").astype(np.float32) / 255.0
        labs = _read_idx(label, "label").astype(np.float32)
        if imgs.shape[0] != labs.shape[0]:
            raise MXNetError("MNISTIter: %s has %d images but %s has %d labels"
                             % (image, imgs.shape[0], label, labs.shape[0]))
        n = imgs.shape[0]
        if num_parts > 1:
            a, b = n * part_index // num_parts, n * (part_index + 1) // num_parts
            imgs, labs = imgs[a:b], labs[a:b]
        if shuffle:
            perm = np.random.RandomState(seed).permutation(imgs.shape[0])
            imgs, labs = imgs[perm], labs[perm]
        keep = (imgs.shape[0] // int(batch_size)) * int(batch_size)
        imgs, labs = imgs[:keep], labs[:keep]
        if flat:
            imgs = imgs.reshape(imgs.shape[0], -1)
        else:
            imgs = imgs.reshape((imgs.shape[0], 1) + imgs.shape[1:])
        super(MNISTIter, self).__init__(imgs, labs.reshape(-1, 1), batch_size, False,
                                        data_name, label_name)
