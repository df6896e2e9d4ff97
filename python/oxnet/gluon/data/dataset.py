"""Datasets: indexable collections of samples (``Dataset``, ``SimpleDataset``,
``ArrayDataset``) and their lazy ``transform``/``transform_first`` views."""

from ...ndarray import NDArray


class Dataset:
    """Abstract dataset: implements ``__getitem__`` and ``__len__``."""

    def __getitem__(self, idx):
        raise TypeError("%s does not implement __getitem__" % type(self).__name__)

    def __len__(self):
        raise TypeError("%s does not implement __len__" % type(self).__name__)

    def filter(self, fn):
        """A dataset of the samples for which ``fn(sample)`` is true."""
        return SimpleDataset([s for s in self if fn(s)])

    def shard(self, num_shards, index):
        """The ``index``-th of ``num_shards`` contiguous shards (the first shards take
        one more sample when the length does not divide)."""
        if not 0 <= index < num_shards:
            raise ValueError("Shard index of out bound: %d out of %d" % (index, num_shards))
        n = len(self)
        size, rest = divmod(n, num_shards)
        start = index * size + min(index, rest)
        end = start + size + (1 if index < rest else 0)
        return _SampledDataset(self, list(range(start, end)))

    def take(self, count):
        """The first ``count`` samples (all when None)."""
        if count is None or count > len(self):
            count = len(self)
        return _SampledDataset(self, list(range(count)))

    def sample(self, sampler):
        """The samples at the indices ``sampler`` yields."""
        return _SampledDataset(self, list(sampler))

    def transform(self, fn, lazy=True):
        """A dataset whose samples are ``fn(*sample)`` (``fn(sample)`` for a
        non-tuple sample); computed on access when ``lazy``, else at once."""
        trans = _LazyTransformDataset(self, fn)
        if lazy:
            return trans
        return SimpleDataset([i for i in trans])

    def transform_first(self, fn, lazy=True):
        """Like ``transform`` but applies ``fn`` to the first element of each sample
        only (the data, leaving the label)."""
        return self.transform(_TransformFirst(fn), lazy)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]


class _TransformFirst:
    """Picklable ``lambda x, *args: (fn(x),) + args``."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, x, *args):
        if args:
            return (self._fn(x),) + args
        return self._fn(x)


class _SampledDataset(Dataset):
    def __init__(self, dataset, indices):
        self._dataset = dataset
        self._indices = indices

    def __len__(self):
        return len(self._indices)

    def __getitem__(self, idx):
        return self._dataset[self._indices[idx]]


class SimpleDataset(Dataset):
    """A dataset over a list (or any indexable with a length)."""

    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[idx]


class _LazyTransformDataset(Dataset):
    def __init__(self, data, fn):
        self._data = data
        self._fn = fn

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        item = self._data[idx]
        if isinstance(item, tuple):
            return self._fn(*item)
        return self._fn(item)


class ArrayDataset(Dataset):
    """Zips several arrays (NDArrays, NumPy arrays, lists) of equal length: sample
    ``i`` is ``(a[i], b[i], ...)``, or ``a[i]`` for one array. A 1-D NDArray is read
    through NumPy so that its samples are scalars, as in MXNet."""

    def __init__(self, *args):
        if not args:
            raise ValueError("Needs at least 1 arrays")
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            if len(data) != self._length:
                raise ValueError("All arrays must have the same length; array[0] has length "
                                 "%d while array[%d] has %d." % (self._length, i, len(data)))
            if isinstance(data, NDArray) and len(data.shape) == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __getitem__(self, idx):
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(data[idx] for data in self._data)

    def __len__(self):
        return self._length


class RecordFileDataset(Dataset):
    """A dataset over a RecordIO file: sample ``i`` is the raw bytes of the record
    at key ``i`` of the index (``filename`` with its extension replaced by
    ``.idx``). Picklable for worker processes (each reopens the file)."""

    def __init__(self, filename):
        import os
        from ... import recordio
        self.idx_file = os.path.splitext(filename)[0] + ".idx"
        self.filename = filename
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")

    def __getitem__(self, idx):
        return self._record.read_idx(self._record.keys[idx])

    def __len__(self):
        return len(self._record.keys)
