"""``mx.io.ImageRecordIter``: batches of decoded, augmented images from a ``.rec``
file, decoded and augmented in Rust (``oxnet-core``'s ``io::imgpipe``) on
``preprocess_threads`` threads with the GIL released, ``prefetch_buffer`` batches
ahead on a background thread.

Semantics kept from MXNet 1.9.1: output RGB, CHW, ``(pixel - mean) / std * scale``;
labels ``(batch,)`` or ``(batch, label_width)``; ``round_batch`` (default True)
completes the last batch with the first records and sets ``pad`` to their number,
and the next epoch then starts after them (as MXNet's batch loader does);
``num_parts``/``part_index`` give each worker a contiguous share of the records.
Differences: ``max_rotate_angle``/``max_shear_ratio``/``rotate`` (affine warps)
and ``mean_img`` computation are not implemented and raise ``MXNetError``; the
random streams differ from MXNet's (same seeds give the same batches in oxnet).
"""

import os
import queue
import atexit
import threading
import weakref

import numpy as np

from .. import _core
from .. import ndarray as nd
from ..base import MXNetError
from .. import recordio
from .io import DataBatch, DataDesc, DataIter

__all__ = ["ImageRecordIter", "ImageRecordUInt8Iter", "ImageRecordIter_v1",
           "ImageRecordUInt8Iter_v1"]


def _scan_offsets(path):
    """Byte offsets of every record of ``path`` (one sequential read in Rust)."""
    f = _core.RecordFile(path, "r")
    offs = []
    try:
        while True:
            pos = f.tell()
            if f.read() is None:
                break
            offs.append(pos)
    finally:
        f.close()
    return offs


class ImageRecordIter(DataIter):
    """Iterates on image RecordIO files (see the module docs for the parameters,
    which are MXNet's)."""

    _UINT8 = False

    def __init__(self, path_imgrec=None, data_shape=None, batch_size=1, path_imgidx="",
                 path_imglist="", label_width=1, shuffle=False, seed=0, num_parts=1,
                 part_index=0, resize=-1, rand_crop=False, rand_mirror=False, mirror=False,
                 max_random_scale=1.0, min_random_scale=1.0, max_aspect_ratio=0.0,
                 min_aspect_ratio=None, max_rotate_angle=0, max_shear_ratio=0.0,
                 rotate=-1, brightness=0.0, contrast=0.0, saturation=0.0, pca_noise=0.0,
                 mean_r=0.0, mean_g=0.0, mean_b=0.0, mean_a=0.0, std_r=1.0, std_g=1.0,
                 std_b=1.0, std_a=1.0, scale=1.0, mean_img="", preprocess_threads=4,
                 prefetch_buffer=4, round_batch=True, dtype=None, inter_method=1,
                 seed_aug=None, data_name="data", label_name="softmax_label",
                 verbose=True, **kwargs):
        super(ImageRecordIter, self).__init__(batch_size)
        if not path_imgrec:
            raise MXNetError("ImageRecordIter: path_imgrec is required")
        if data_shape is None or len(data_shape) != 3:
            raise MXNetError("ImageRecordIter: data_shape must be (channels, height, width)")
        c, h, w = (int(x) for x in data_shape)
        if c not in (1, 3):
            raise MXNetError("ImageRecordIter: data_shape[0] must be 1 or 3 channels, got %d "
                             "(file %s)" % (c, path_imgrec))
        if max_rotate_angle or max_shear_ratio or (rotate is not None and rotate > 0):
            raise MXNetError("ImageRecordIter: rotation and shear augmentation "
                             "(max_rotate_angle, max_shear_ratio, rotate) are not supported "
                             "by oxnet yet")
        if mean_img and not os.path.exists(mean_img):
            raise MXNetError("ImageRecordIter: mean_img %s does not exist (oxnet does not "
                             "compute it; save one with mx.nd.save)" % mean_img)
        if not os.path.exists(path_imgrec):
            raise MXNetError("ImageRecordIter: cannot open %s" % path_imgrec)
        if inter_method not in (0, 1, 2, 3, 4, 9, 10):
            raise MXNetError("ImageRecordIter: unknown inter_method %d" % inter_method)
        self.path_imgrec = path_imgrec
        self.data_shape = (c, h, w)
        self.batch_size = int(batch_size)
        self.label_width = int(label_width)
        self.shuffle = bool(shuffle)
        self.round_batch = bool(round_batch)
        self.threads = max(1, int(preprocess_threads))
        self.prefetch = max(1, int(prefetch_buffer))
        self._dtype = np.dtype(dtype) if dtype is not None else (
            np.dtype(np.uint8) if self._UINT8 else np.dtype(np.float32))
        self.data_name, self.label_name = data_name, label_name
        self.mean_img = None
        if mean_img:
            loaded = nd.load(mean_img)
            arr = list(loaded.values())[0] if isinstance(loaded, dict) else loaded[0]
            self.mean_img = arr.asnumpy().astype(np.float32)
        if self._UINT8:
            mean = [0.0] * 4
            std = [1.0] * 4
            scale = 1.0
        else:
            mean = [mean_r, mean_g, mean_b, mean_a]
            std = [std_r, std_g, std_b, std_a]
        if min_aspect_ratio is None:
            min_aspect_ratio = max_aspect_ratio
        self._ints = [c, h, w, int(resize), int(bool(rand_crop)), int(bool(rand_mirror)),
                      int(bool(mirror)), int(inter_method), self.label_width]
        self._floats = [float(max_random_scale), float(min_random_scale),
                        float(max_aspect_ratio), float(min_aspect_ratio), float(brightness),
                        float(contrast), float(saturation), float(pca_noise), float(scale)] + \
            [float(x) for x in mean] + [float(x) for x in std]

        if path_imgidx and os.path.exists(path_imgidx):
            idx = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
            offsets = [idx.idx[k] for k in idx.keys]
            idx.close()
        else:
            offsets = _scan_offsets(path_imgrec)
        if num_parts > 1:
            if not 0 <= part_index < num_parts:
                raise MXNetError("ImageRecordIter: part_index %d is not in [0, %d)" %
                                 (part_index, num_parts))
            n = len(offsets)
            offsets = offsets[n * part_index // num_parts:n * (part_index + 1) // num_parts]
        if len(offsets) == 0:
            raise MXNetError("ImageRecordIter: %s holds no records" % path_imgrec)
        if self.round_batch and len(offsets) < self.batch_size:
            raise MXNetError("ImageRecordIter: number of input must be bigger than batch size "
                             "(%d records, batch_size %d)" % (len(offsets), self.batch_size))
        self._offsets = offsets
        self._order = list(range(len(offsets)))
        self._rng = np.random.RandomState(seed)
        self._aug_rng = np.random.RandomState(seed if seed_aug is None else seed_aug)
        self._file = _core.RecordFile(path_imgrec, "r")
        self._lock = threading.Lock()
        self._start = 0
        self._queue = None
        self._thread = None
        self._stop = None
        self._batch = None
        if self.label_width > 1:
            lshape = (self.batch_size, self.label_width)
        else:
            lshape = (self.batch_size,)
        self._label_shape = lshape
        self.reset()

    @property
    def provide_data(self):
        return [DataDesc(self.data_name, (self.batch_size,) + self.data_shape, self._dtype)]

    @property
    def provide_label(self):
        return [DataDesc(self.label_name, self._label_shape, np.float32)]

    # -- producer -----------------------------------------------------------------
    def _epoch_plan(self):
        """The list of (record indices, pad) of one epoch, from position ``_start``."""
        n = len(self._order)
        plan = []
        pos = self._start
        carry = 0
        while pos < n:
            idx = self._order[pos:pos + self.batch_size]
            pos += len(idx)
            pad = self.batch_size - len(idx)
            if pad:
                if self.round_batch:
                    idx = idx + [self._order[k % n] for k in range(pad)]
                    carry = pad % n
                else:
                    idx = idx + [idx[-1]] * pad
            plan.append((idx, pad))
        return plan, carry

    def _make_batch(self, idx, pad):
        offs = [self._offsets[i] for i in idx]
        with self._lock:
            recs = self._file.read_at(offs)
        names = ["%s record %d (offset %d)" % (self.path_imgrec, i, self._offsets[i]) for i in idx]
        seeds = [int(s) for s in self._aug_rng.randint(0, 2 ** 63 - 1, size=len(idx),
                                                       dtype=np.int64)]
        c, h, w = self.data_shape
        # one staging buffer per iterator (one producer at a time; nd.array copies out
        # of it), so its pages are not faulted in again for every batch
        data = getattr(self, "_staging", None)
        if data is None or data.shape != (self.batch_size, c, h, w):
            data = self._staging = np.empty((self.batch_size, c, h, w), dtype=np.float32)
        label = np.empty((self.batch_size, self.label_width), dtype=np.float32)
        _core.image_record_batch(recs, names, seeds, self._ints, self._floats, self.threads,
                                 data, label)
        if self.mean_img is not None:
            data -= self.mean_img.reshape((1,) + self.mean_img.shape[-3:])[:, :c, :h, :w]
        if self._dtype != np.float32:
            data = data.astype(self._dtype)
        label = label.reshape(self._label_shape)
        return DataBatch([nd.array(data, dtype=self._dtype)], [nd.array(label)], pad=pad,
                         provide_data=self.provide_data, provide_label=self.provide_label)

    @staticmethod
    def _put(q, item, stop):
        """Puts ``item`` unless ``stop`` is set first (never blocks a ``reset``)."""
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def _producer(self, plan, q, stop):
        try:
            for idx, pad in plan:
                if stop.is_set():
                    return
                self._put(q, self._make_batch(idx, pad), stop)
        except BaseException as e:  # noqa: BLE001 - handed to the consumer
            self._put(q, e, stop)
            return
        self._put(q, None, stop)

    def _stop_producer(self):
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None

    def reset(self):
        """Restarts from the first batch (after records already used to pad)."""
        self._stop_producer()
        if self.shuffle:
            self._rng.shuffle(self._order)
        plan, carry = self._epoch_plan()
        self._next_start = carry
        self._start = 0
        self._queue = queue.Queue(maxsize=self.prefetch)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._producer, args=(plan, self._queue, self._stop),
                                        daemon=True, name="oxnet-ImageRecordIter")
        self._thread.start()
        _LIVE.add(self)
        self._done = False

    def iter_next(self):
        if self._done:
            return False
        item = self._queue.get()
        if item is None:
            self._done = True
            self._start = self._next_start
            self._thread.join()
            self._thread = None
            return False
        if isinstance(item, BaseException):
            self._done = True
            self._thread.join()
            self._thread = None
            if isinstance(item, MXNetError):
                raise MXNetError(str(item))
            raise item
        self._batch = item
        return True

    def next(self):
        if self.iter_next():
            return self._batch
        raise StopIteration

    def getdata(self):
        return self._batch.data

    def getlabel(self):
        return self._batch.label

    def getpad(self):
        return self._batch.pad

    def getindex(self):
        return None

    def __del__(self):
        try:
            self._stop_producer()
            self._file.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


_LIVE = weakref.WeakSet()


@atexit.register
def _stop_all_producers():
    """Joins the prefetch threads before the interpreter finalises: a daemon thread
    coming back from the Rust decoder after that would be unwound through Rust frames
    and abort the process ("FATAL: exception not rethrown")."""
    for it in list(_LIVE):
        try:
            it._stop_producer()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


class ImageRecordUInt8Iter(ImageRecordIter):
    """``ImageRecordIter`` giving ``uint8`` pixels without normalisation."""

    _UINT8 = True


ImageRecordIter_v1 = ImageRecordIter
ImageRecordUInt8Iter_v1 = ImageRecordUInt8Iter
