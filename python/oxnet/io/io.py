"""Data iterators after MXNet 1.9.1's ``mx.io``: ``DataDesc``, ``DataBatch``, the
``DataIter`` protocol and ``NDArrayIter`` over in-memory arrays.

``NDArrayIter`` keeps MXNet's batching exactly: sources sorted by name, shuffling with
NumPy's global generator (``np.random.shuffle`` of the index at construction and at
every ``reset``), and the three ways to treat the last, incomplete batch ('pad' fills
it from the start, 'discard' drops it, 'roll_over' carries it into the next epoch).
One difference: an unknown ``last_batch_handle`` raises ``ValueError`` (MXNet accepts
any string and then behaves like 'discard').
"""

from collections import OrderedDict, namedtuple

import numpy as np

from ..base import mx_real_t
from ..ndarray import NDArray, array, concat, tile


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """Name, shape, type and layout of one input or label of a data iterator.

    ``DataDesc('data', (64, 1, 28, 28))``; ``dtype`` defaults to float32 and ``layout``
    to 'NCHW' (the batch axis is where 'N' is)."""

    def __new__(cls, name, shape, dtype=mx_real_t, layout="NCHW"):
        ret = super().__new__(cls, name, shape)
        ret.dtype = dtype
        ret.layout = layout
        return ret

    def __repr__(self):
        return "DataDesc[%s,%s,%s,%s]" % (self.name, self.shape, self.dtype, self.layout)

    @staticmethod
    def get_batch_axis(layout):
        """The position of 'N' in ``layout`` (0 when the layout is None)."""
        if layout is None:
            return 0
        return layout.find("N")

    @staticmethod
    def get_list(shapes, types):
        """``DataDesc`` list from ``[(name, shape)]`` and an optional ``{name: dtype}``."""
        if types is not None:
            type_dict = dict(types)
            return [DataDesc(x[0], x[1], type_dict[x[0]]) for x in shapes]
        return [DataDesc(x[0], x[1]) for x in shapes]


class DataBatch:
    """One batch: lists of NDArrays ``data`` and ``label``, ``pad`` (the number of
    filler examples at the end), ``index``, ``bucket_key`` and the descriptions."""

    def __init__(self, data, label=None, pad=None, index=None, bucket_key=None,
                 provide_data=None, provide_label=None):
        if data is not None and not isinstance(data, (list, tuple)):
            raise TypeError("Data must be list of NDArrays")
        if label is not None and not isinstance(label, (list, tuple)):
            raise TypeError("Label must be list of NDArrays")
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self):
        data_shapes = [d.shape for d in self.data]
        label_shapes = [lb.shape for lb in self.label] if self.label else None
        return "{}: data shapes: {} label shapes: {}".format(
            self.__class__.__name__, data_shapes, label_shapes)


class DataIter:
    """The iterator protocol of MXNet: ``reset``, ``next`` (a ``DataBatch`` or
    ``StopIteration``), ``iter_next``, ``getdata``, ``getlabel``, ``getindex``,
    ``getpad``. Subclasses implement ``iter_next`` and the getters."""

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self):
        """Goes back to the start of the data."""

    def next(self):
        """The next batch; raises ``StopIteration`` at the end of the data."""
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(),
                             pad=self.getpad(), index=self.getindex())
        raise StopIteration

    def __next__(self):
        return self.next()

    def iter_next(self):
        """Moves to the next batch; False at the end."""
        return False

    def getdata(self):
        """The data of the current batch (a list of NDArrays)."""
        return None

    def getlabel(self):
        """The label of the current batch (a list of NDArrays)."""
        return None

    def getindex(self):
        """The indices of the current batch's examples (None when unknown)."""
        return None

    def getpad(self):
        """The number of filler examples in the current batch."""
        return 0


def _is_scipy_csr(x):
    try:
        import scipy.sparse as spsp
    except ImportError:
        return False
    return isinstance(x, spsp.csr_matrix)


def _is_csr(x):
    return getattr(x, "stype", "default") == "csr"


def _take_rows(v, idx):
    """Rows ``idx`` of a source (a CSRNDArray stays CSR)."""
    if _is_csr(v):
        from ..ndarray import sparse
        return sparse.csr_matrix(v.asscipy()[idx], ctx=v.context, dtype=v.dtype)
    return array(v.asnumpy()[idx], v.context, dtype=v.dtype)


def _init_data(data, allow_empty, default_name):
    """Normalizes the ``data``/``label`` argument to a name-sorted list of
    ``(name, NDArray)``."""
    if data is None:
        if not allow_empty:
            raise ValueError("NDArrayIter: data must be given")
        data = []
    if isinstance(data, (np.ndarray, NDArray)) or _is_scipy_csr(data):
        data = [data]
    if isinstance(data, (list, tuple)):
        if not allow_empty and len(data) == 0:
            raise ValueError("NDArrayIter: data must not be empty")
        if len(data) == 1:
            data = OrderedDict([(default_name, data[0])])
        else:
            data = OrderedDict([("_%d_%s" % (i, default_name), d) for i, d in enumerate(data)])
    if not isinstance(data, dict):
        raise TypeError("Input must be NDArray, numpy.ndarray, h5py.Dataset "
                        "a list of them or dict with them as values")
    out = {}
    for k, v in data.items():
        if not isinstance(v, NDArray):
            try:
                v = array(v)
            except Exception as exc:
                raise TypeError("Invalid type '%s' for %s, should be NDArray, numpy.ndarray "
                                "or h5py.Dataset" % (type(v), k)) from exc
        out[k] = v
    return list(sorted(out.items()))


class NDArrayIter(DataIter):
    """Iterates over NDArrays or NumPy arrays in batches.

    Parameters
    ----------
    data : array or list of arrays or dict of str to array
        The input data (first axis: examples).
    label : array or list of arrays or dict of str to array, optional
        The labels.
    batch_size : int
        Batch size.
    shuffle : bool, optional
        Shuffles the examples at construction and at every ``reset``.
    last_batch_handle : str, optional
        'pad' (default), 'discard' or 'roll_over'.
    data_name, label_name : str, optional
        Names of a single data / label source.
    layout : str, optional
        Layout of the data (where 'N', the batch axis, is).
    """

    def __init__(self, data, label=None, batch_size=1, shuffle=False,
                 last_batch_handle="pad", data_name="data", label_name="softmax_label",
                 layout="NCHW"):
        super().__init__(batch_size)
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise ValueError("NDArrayIter: last_batch_handle must be 'pad', 'discard' or "
                             "'roll_over', got %r" % (last_batch_handle,))
        if int(batch_size) <= 0:
            raise ValueError("NDArrayIter: batch_size must be positive, got %r" % (batch_size,))
        self.data = _init_data(data, allow_empty=False, default_name=data_name)
        self.label = _init_data(label, allow_empty=True, default_name=label_name)
        # as MXNet: the first data source sets the number of examples; other sources
        # may hold more (the extra rows are not used) but not fewer
        n = self.data[0][1].shape[0]
        for k, v in self.data + self.label:
            if v.shape[0] < n:
                raise ValueError("NDArrayIter: every source needs at least as many examples "
                                 "along axis 0 as the first data source: %s has %d, %s has %d"
                                 % (self.data[0][0], n, k, v.shape[0]))
        if last_batch_handle != "discard" and any(_is_csr(v) for _, v in self.data + self.label):
            raise NotImplementedError("`NDArrayIter` only supports ``CSRNDArray`` with "
                                      "`last_batch_handle` set to `discard`.")
        self.idx = np.arange(n)
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.batch_size = int(batch_size)
        self.cursor = -self.batch_size
        self.num_data = n
        self.reset()
        self.data_list = [x[1] for x in self.data] + [x[1] for x in self.label]
        self.num_source = len(self.data_list)
        self._cache_data = None
        self._cache_label = None
        self.layout = layout

    def _descs(self, sources):
        axis = self.layout.find("N")
        return [DataDesc(k, tuple(list(v.shape[:axis]) + [self.batch_size]
                                  + list(v.shape[axis + 1:])), v.dtype, layout=self.layout)
                for k, v in sources]

    @property
    def provide_data(self):
        """Name, shape and dtype of each data source, as ``DataDesc``."""
        return self._descs(self.data)

    @property
    def provide_label(self):
        """Name, shape and dtype of each label source, as ``DataDesc``."""
        return self._descs(self.label)

    def hard_reset(self):
        """Goes back to the start, dropping any rolled-over examples."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache_data = None
        self._cache_label = None

    def reset(self):
        if self.shuffle:
            self._shuffle_data()
        if (self.last_batch_handle == "roll_over"
                and self.num_data - self.batch_size < self.cursor < self.num_data):
            # the examples left over from the last batch start the next epoch
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size

    def iter_next(self):
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self):
        if not self.iter_next():
            raise StopIteration
        data = self.getdata()
        label = self.getlabel()
        if data[0].shape[self.layout.find("N")] != self.batch_size:
            # incomplete last batch ('discard', 'roll_over'): keep it for the next epoch
            self._cache_data = data
            self._cache_label = label
            raise StopIteration
        return DataBatch(data=data, label=label, pad=self.getpad(), index=None)

    def _getdata(self, sources, start=None, end=None):
        start = 0 if start is None else start
        if end is None:
            end = sources[0][1].shape[0] if sources else 0
        return [x[1][start:end] for x in sources]

    @staticmethod
    def _concat(first, second):
        if first and second:
            return [concat(first[i], second[i], dim=0) for i in range(len(first))]
        return first or second or []

    @staticmethod
    def _tile(data, repeats):
        return [tile(d, reps=[repeats] + [1] * (len(d.shape) - 1)) for d in data]

    def _batchify(self, sources):
        if self.cursor >= self.num_data:
            raise ValueError("NDArrayIter: the iterator is at its end; call reset()")
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            cache = self._cache_data if self._cache_data is not None else self._cache_label
            if cache is None:
                raise ValueError("NDArrayIter: roll_over expected examples kept from the "
                                 "previous epoch")
            second = self._getdata(sources, end=self.cursor + self.batch_size)
            if self._cache_data is not None:
                self._cache_data = None
            else:
                self._cache_label = None
            return self._concat(cache, second)
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            pad = self.batch_size - self.num_data + self.cursor
            first = self._getdata(sources, start=self.cursor)
            if pad > self.num_data:
                second = self._tile(self._getdata(sources, end=self.num_data),
                                    pad // self.num_data)
                if pad % self.num_data:
                    second = self._concat(second,
                                          self._getdata(sources, end=pad % self.num_data))
            else:
                second = self._getdata(sources, end=pad)
            return self._concat(first, second)
        end = min(self.cursor + self.batch_size, self.num_data)
        return self._getdata(sources, self.cursor, end)

    def getdata(self):
        return self._batchify(self.data)

    def getlabel(self):
        return self._batchify(self.label)

    def getpad(self):
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            return -self.cursor
        return 0

    def _shuffle_data(self):
        np.random.shuffle(self.idx)
        self.data = [(k, _take_rows(v, self.idx)) for k, v in self.data]
        self.label = [(k, _take_rows(v, self.idx)) for k, v in self.label]

class _BatchIter(DataIter):
    """A DataIter whose ``iter_next`` builds ``self._batch``: the accessors read it."""

    def next(self):
        if self.iter_next():
            return self._batch
        raise StopIteration

    def getdata(self):
        return self._batch.data[0]

    def getlabel(self):
        return self._batch.label[0]

    def getpad(self):
        return self._batch.pad

    def getindex(self):
        return self._batch.index
