"""``DataLoader``: batches of a ``Dataset``, loaded in parallel.

``num_workers > 0`` loads batches on that many worker threads while the consumer
works, up to ``prefetch`` batches ahead, and yields them in order. NDArray operations
run in the Rust engine without holding the GIL, so threads load in parallel.
MXNet forks worker processes instead; oxnet does not: a forked copy of a process
whose compute threads are running cannot use them, and spawned processes would re-run
an unguarded script. ``thread_pool`` is accepted for compatibility (threads are used
either way).
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ... import context
from ...ndarray import NDArray
from ... import ndarray as nd
from .sampler import BatchSampler, RandomSampler, SequentialSampler


def default_batchify_fn(data):
    """Stacks a list of samples into a batch: NDArrays with ``nd.stack``, tuples
    element-wise (a list of batches), anything else through ``numpy.asarray`` into an
    NDArray of the same dtype."""
    if isinstance(data[0], NDArray):
        return nd.stack(*data)
    if isinstance(data[0], tuple):
        return [default_batchify_fn(list(i)) for i in zip(*data)]
    arr = np.asarray(data)
    return nd.array(arr, dtype=arr.dtype)


default_mp_batchify_fn = default_batchify_fn


def _as_in_context(data, ctx):
    if isinstance(data, NDArray):
        return data.as_in_context(ctx)
    if isinstance(data, (list, tuple)):
        return [_as_in_context(d, ctx) for d in data]
    return data


def _thread_fn(dataset, batchify_fn, samples):
    return batchify_fn([dataset[i] for i in samples])


class DataLoader:
    """Loads batches from a dataset.

    Parameters
    ----------
    dataset : Dataset
        Source of samples (``dataset[i]``, ``len(dataset)``).
    batch_size : int
        Samples per batch (not with ``batch_sampler``).
    shuffle : bool
        Shuffle the samples every epoch (not with ``sampler``).
    sampler : Sampler
        Yields sample indices (not with ``shuffle``).
    last_batch : {'keep', 'discard', 'rollover'}
        What to do with the last, incomplete batch (default 'keep').
    batch_sampler : Sampler
        Yields lists of indices; replaces batch_size/shuffle/sampler/last_batch.
    batchify_fn : callable
        Turns a list of samples into a batch (default: stack into NDArrays).
    num_workers : int
        Worker threads; 0 loads in the caller.
    pin_memory : bool
        Return batches in pinned host memory (``cpu_pinned(pin_device_id)``).
    prefetch : int
        Batches loaded ahead (default ``2 * num_workers``).
    thread_pool : bool
        Accepted for compatibility; workers are threads.
    timeout : int
        Seconds to wait for a worker's batch before raising.
    """

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None,
                 last_batch=None, batch_sampler=None, batchify_fn=None, num_workers=0,
                 pin_memory=False, pin_device_id=0, prefetch=None, thread_pool=False,
                 timeout=120, try_nopython=None):
        self._dataset = dataset
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        self._thread_pool = thread_pool
        self._timeout = timeout
        if batch_sampler is None:
            if batch_size is None:
                raise ValueError("batch_size must be specified unless batch_sampler is "
                                 "specified")
            if sampler is None:
                sampler = RandomSampler(len(dataset)) if shuffle else \
                    SequentialSampler(len(dataset))
            elif shuffle:
                raise ValueError("shuffle must not be specified if sampler is specified")
            batch_sampler = BatchSampler(sampler, batch_size,
                                         last_batch if last_batch else "keep")
        elif batch_size is not None or shuffle or sampler is not None or \
                last_batch is not None:
            raise ValueError("batch_size, shuffle, sampler and last_batch must not be "
                             "specified if batch_sampler is specified.")
        self._batch_sampler = batch_sampler
        self._num_workers = num_workers if num_workers >= 0 else 0
        self._prefetch = max(0, int(prefetch) if prefetch is not None
                             else 2 * self._num_workers)
        self._batchify_fn = batchify_fn if batchify_fn is not None else default_batchify_fn
        self._worker_pool = None
        if self._num_workers > 0:
            self._worker_pool = ThreadPoolExecutor(max_workers=self._num_workers)

    def _pin(self, batch):
        if self._pin_memory:
            return _as_in_context(batch, context.cpu_pinned(self._pin_device_id))
        return batch

    def __iter__(self):
        if self._num_workers == 0:
            return self._same_thread_iter()
        return self._worker_iter()

    def _same_thread_iter(self):
        for batch in self._batch_sampler:
            yield self._pin(self._batchify_fn([self._dataset[idx] for idx in batch]))

    def _submit(self, samples):
        return self._worker_pool.submit(_thread_fn, self._dataset, self._batchify_fn, samples)

    def _get(self, fut):
        try:
            return fut.result(self._timeout)
        except TimeoutError:
            raise RuntimeError("DataLoader: a worker gave no batch within timeout=%s s"
                               % self._timeout) from None

    def _worker_iter(self):
        pending = []
        it = iter(self._batch_sampler)
        depth = max(1, self._prefetch)
        for samples in it:
            pending.append(self._submit(samples))
            if len(pending) >= depth:
                break
        while pending:
            fut = pending.pop(0)
            nxt = next(it, None)
            if nxt is not None:
                pending.append(self._submit(nxt))
            yield self._pin(self._get(fut))

    def __len__(self):
        return len(self._batch_sampler)

    def __del__(self):
        pool = getattr(self, "_worker_pool", None)
        if pool is None:
            return
        pool.shutdown(wait=False)
        self._worker_pool = None


__all__ = ["DataLoader", "default_batchify_fn", "default_mp_batchify_fn"]
