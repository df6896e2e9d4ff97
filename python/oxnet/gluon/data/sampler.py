"""Samplers: iterables of indices (``SequentialSampler``, ``RandomSampler``) and of
index batches (``BatchSampler``)."""

import numpy as np


class Sampler:
    """Base class of samplers: ``__iter__`` yields indices, ``__len__`` counts them."""

    def __iter__(self):
        raise TypeError("%s does not implement __iter__" % type(self).__name__)

    def __len__(self):
        raise TypeError("%s does not implement __len__" % type(self).__name__)


class SequentialSampler(Sampler):
    """Indices ``start, start + 1, ..., start + length - 1``."""

    def __init__(self, length, start=0):
        self._length = length
        self._start = start

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self):
        return self._length


class RandomSampler(Sampler):
    """A random permutation of ``0 .. length - 1`` (NumPy's global generator), new at
    every iteration."""

    def __init__(self, length):
        self._length = length

    def __iter__(self):
        indices = np.arange(self._length)
        np.random.shuffle(indices)
        return iter(indices.tolist())

    def __len__(self):
        return self._length


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size``.

    ``last_batch``: 'keep' yields the short last batch, 'discard' drops it, 'rollover'
    carries its indices into the first batch of the next iteration."""

    def __init__(self, sampler, batch_size, last_batch="keep"):
        if last_batch not in ("keep", "discard", "rollover"):
            raise ValueError("last_batch must be one of 'keep', 'discard', or 'rollover', "
                             "but got %s" % last_batch)
        if int(batch_size) <= 0:
            raise ValueError("batch_size must be positive, got %r" % (batch_size,))
        self._sampler = sampler
        self._batch_size = int(batch_size)
        self._last_batch = last_batch
        self._prev = []

    def __iter__(self):
        batch, self._prev = self._prev, []
        for i in self._sampler:
            batch.append(i)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == "keep":
                yield batch
            elif self._last_batch == "rollover":
                self._prev = batch

    def __len__(self):
        n = len(self._sampler)
        if self._last_batch == "keep":
            return (n + self._batch_size - 1) // self._batch_size
        if self._last_batch == "discard":
            return n // self._batch_size
        return (len(self._prev) + n) // self._batch_size


class IntervalSampler(Sampler):
    """Samples ``0, interval, 2*interval, ...``, then (with ``rollover``) starts again
    at 1, 2, ... until every index of ``range(length)`` was visited.

    >>> list(IntervalSampler(13, interval=3))
    [0, 3, 6, 9, 12, 1, 4, 7, 10, 2, 5, 8, 11]
    """

    def __init__(self, length, interval, rollover=True):
        assert interval < length, \
            "Interval {} must be smaller than length {}".format(interval, length)
        self._length = length
        self._interval = interval
        self._rollover = rollover

    def __iter__(self):
        for i in range(self._interval if self._rollover else 1):
            for j in range(i, self._length, self._interval):
                yield j

    def __len__(self):
        return self._length if self._rollover else len(range(0, self._length, self._interval))
