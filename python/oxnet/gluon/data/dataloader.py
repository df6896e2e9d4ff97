"""``DataLoader``: batches of a ``Dataset``, loaded in parallel.

With ``num_workers > 0`` batches are loaded by that many worker *processes*, as in
MXNet: a ``multiprocessing`` pool created with the ``fork`` start method, so the
workers inherit the dataset and ``batchify_fn`` (nothing is pickled to start them,
and datasets defined in unguarded scripts or notebooks work). Each task sent to a
worker is the list of sample indices of one batch; the worker returns the batch with
its NDArrays as NumPy arrays (lists and tuples kept), and the parent turns those back
into NDArrays on ``cpu_shared(0)`` as in MXNet (``cpu_pinned(pin_device_id)`` with
``pin_memory``). Batches come back in order, up to ``prefetch`` requested ahead. A
worker's exception is raised again in the parent, with the worker's traceback
attached as its cause. The workers are terminated when the loader is collected, or
at interpreter exit.

Forking is safe after oxnet has run operations: the Rust core registers
``pthread_atfork`` handlers that drain the engine before any fork of the process and
give the child a fresh compute pool and engine (the parent's threads do not exist in
the child). The same holds for a user's own ``os.fork()`` or ``multiprocessing``
with the ``fork`` start method. GPU work cannot be used in a forked child.

``thread_pool=True`` uses worker threads instead (NDArray operations run in the Rust
engine without the GIL, so threads overlap too); batches are then not copied.
"""

import multiprocessing
import multiprocessing.pool
import os
import pickle
import signal
import threading
import traceback
import warnings
import weakref
from collections import deque

import numpy as np

from ... import context
from ...base import MXNetError
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


def default_mp_batchify_fn(data):
    """The batchify function of worker processes and threads (``num_workers > 0``):
    stacks like :func:`default_batchify_fn`, into NDArrays on ``cpu_shared(0)`` as
    MXNet does."""
    shared = context.Context("cpu_shared", 0)
    if isinstance(data[0], NDArray):
        return nd.stack(*data).as_in_context(shared)
    if isinstance(data[0], tuple):
        return [default_mp_batchify_fn(list(i)) for i in zip(*data)]
    arr = np.asarray(data)
    return nd.array(arr, ctx=shared, dtype=arr.dtype)


def _as_in_context(data, ctx):
    if isinstance(data, NDArray):
        return data.as_in_context(ctx)
    if isinstance(data, (list, tuple)):
        return [_as_in_context(d, ctx) for d in data]
    return data


# ---------------------------------------------------------------------------
# Worker processes


class _Array:
    """An NDArray on its way from a worker process, as a NumPy array."""

    __slots__ = ("data",)

    def __init__(self, data):
        self.data = data

    def __reduce__(self):
        return (_Array, (self.data,))


class _Failure:
    """An exception raised in a worker process, with the worker's traceback."""

    def __init__(self, exc, trace, pid, mxnet_error=None):
        self.exc = exc
        self.trace = trace
        self.pid = pid
        self.mxnet_error = mxnet_error

    def exception(self):
        """The exception to raise in the parent."""
        exc = self.exc if self.mxnet_error is None else MXNetError(self.mxnet_error)
        exc.__cause__ = _RemoteTraceback(
            "\nin DataLoader worker process %d:\n%s" % (self.pid, self.trace))
        return exc


class _RemoteTraceback(Exception):
    """The traceback of a worker's exception (shown as the cause of the re-raised
    exception)."""

    def __str__(self):
        return self.args[0]


def _to_host(batch):
    """A worker's batch with every NDArray replaced by an ``_Array`` (NumPy)."""
    if isinstance(batch, NDArray):
        return _Array(batch.asnumpy())
    if isinstance(batch, list):
        return [_to_host(b) for b in batch]
    if isinstance(batch, tuple):
        items = [_to_host(b) for b in batch]
        return type(batch)(*items) if hasattr(batch, "_fields") else tuple(items)
    if isinstance(batch, dict):
        return type(batch)((k, _to_host(v)) for k, v in batch.items())
    return batch


def _from_host(batch, ctx):
    """The inverse of ``_to_host`` in the parent: NDArrays again, on ``ctx`` (as in
    MXNet, whose workers pass NDArrays in shared memory: ``cpu_shared(0)`` unless
    pinned)."""
    if isinstance(batch, _Array):
        return nd.array(batch.data, ctx=ctx, dtype=batch.data.dtype)
    if isinstance(batch, list):
        return [_from_host(b, ctx) for b in batch]
    if isinstance(batch, tuple):
        items = [_from_host(b, ctx) for b in batch]
        return type(batch)(*items) if hasattr(batch, "_fields") else tuple(items)
    if isinstance(batch, dict):
        return type(batch)((k, _from_host(v, ctx)) for k, v in batch.items())
    return batch


# Per worker process: set by the pool's initializer from arguments the forked worker
# inherits (never pickled).
_worker_dataset = None
_worker_batchify_fn = None


def _worker_initializer(dataset, batchify_fn):
    global _worker_dataset, _worker_batchify_fn  # pylint: disable=global-statement
    _worker_dataset = dataset
    _worker_batchify_fn = batchify_fn
    # Ctrl-C is for the parent, which terminates the pool.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _worker_fn(samples):
    """Loads one batch in a worker process."""
    try:
        return _to_host(_worker_batchify_fn([_worker_dataset[i] for i in samples]))
    except Exception as e:  # pylint: disable=broad-except
        trace = traceback.format_exc()
        try:
            pickle.dumps(e)
        except Exception:  # pylint: disable=broad-except
            # not picklable: the same message, as an MXNetError for oxnet's errors
            if isinstance(e, MXNetError):
                return _Failure(None, trace, os.getpid(), str(e))
            e = RuntimeError("%s: %s" % (type(e).__name__, e))
        return _Failure(e, trace, os.getpid())


def _fork_pool(num_workers, dataset, batchify_fn):
    """A pool of forked worker processes that inherit ``dataset`` and
    ``batchify_fn``."""
    ctx = multiprocessing.get_context("fork")
    main = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        with warnings.catch_warnings():
            # Python 3.12+ warns that forking a multi-threaded process may deadlock the
            # child (a lock held by another thread stays locked there). The threads
            # here are oxnet's compute threads, which its fork handlers account for:
            # the engine is drained before the fork (no compute thread holds a lock)
            # and the child builds a fresh compute pool and engine. The workers only
            # run the dataset, batchify_fn and oxnet operations.
            warnings.filterwarnings("ignore", category=DeprecationWarning,
                                    message=r".*fork\(\).*")
            return ctx.Pool(num_workers, initializer=_worker_initializer,
                            initargs=(dataset, batchify_fn))
    finally:
        if main:
            signal.signal(signal.SIGINT, old)


# ---------------------------------------------------------------------------
# Worker threads


def _thread_worker_fn(samples, dataset, batchify_fn):
    return batchify_fn([dataset[i] for i in samples])


class _MultiWorkerIter:
    """One pass over the batches, loaded by the loader's workers, in order."""

    def __init__(self, loader):
        self._loader = loader  # keeps the loader, hence its pool, alive
        self._pool = loader._worker_pool
        self._threads = loader._thread_pool
        self._timeout = loader._timeout
        self._pinned = context.cpu_pinned(loader._pin_device_id) if loader._pin_memory \
            else None
        self._iter = iter(loader._batch_sampler)
        self._pending = deque()
        for _ in range(loader._prefetch):
            self._push_next()

    def _push_next(self):
        samples = next(self._iter, None)
        if samples is None:
            return
        if self._threads:
            args = (samples, self._loader._dataset, self._loader._batchify_fn)
            self._pending.append(self._pool.apply_async(_thread_worker_fn, args))
        else:
            self._pending.append(self._pool.apply_async(_worker_fn, (samples,)))

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader._batch_sampler)

    def __next__(self):
        self._push_next()
        if not self._pending:
            raise StopIteration
        ret = self._pending.popleft()
        try:
            batch = ret.get(self._timeout)
        except multiprocessing.TimeoutError:
            raise multiprocessing.TimeoutError(
                "DataLoader: a worker %s gave no batch within timeout=%s s (a slow dataset "
                "or transform: raise `timeout`)"
                % ("thread" if self._threads else "process", self._timeout)) from None
        if self._threads:
            return _as_in_context(batch, self._pinned) if self._pinned is not None else batch
        if isinstance(batch, _Failure):
            raise batch.exception()
        return _from_host(batch, self._pinned or context.Context("cpu_shared", 0))

    next = __next__


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
        Turns a list of samples into a batch (default: stack into NDArrays;
        ``default_mp_batchify_fn`` when ``num_workers > 0``).
    num_workers : int
        Worker processes (forked, see the module doc), or threads with
        ``thread_pool``; 0 loads in the caller.
    pin_memory : bool
        Return batches in pinned host memory (``cpu_pinned(pin_device_id)``).
    prefetch : int
        Batches requested ahead (default ``2 * num_workers``).
    thread_pool : bool
        Use worker threads instead of processes.
    timeout : int
        Seconds to wait for a worker's batch before raising
        ``multiprocessing.TimeoutError``.
    try_nopython : bool
        Accepted for MXNet compatibility (no effect).
    auto_reload : bool
        Accepted for MXNet compatibility: batches are requested when an epoch starts.
    """

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None,
                 last_batch=None, batch_sampler=None, batchify_fn=None, num_workers=0,
                 pin_memory=False, pin_device_id=0, prefetch=None, thread_pool=False,
                 timeout=120, try_nopython=None, auto_reload=True):
        self._dataset = dataset
        # MXNet's auto_reload prefetches the next epoch's first batches when one ends;
        # batches are the same either way (oxnet requests them when iteration starts).
        self._auto_reload = auto_reload
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        self._thread_pool = thread_pool
        self._timeout = timeout
        if not timeout > 0:
            raise AssertionError("timeout must be positive, given %s" % (timeout,))
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
        if batchify_fn is None:
            batchify_fn = default_mp_batchify_fn if self._num_workers > 0 \
                else default_batchify_fn
        self._batchify_fn = batchify_fn
        self._worker_pool = None
        if self._num_workers > 0:
            if thread_pool:
                pool = multiprocessing.pool.ThreadPool(self._num_workers)
            else:
                pool = _fork_pool(self._num_workers, dataset, batchify_fn)
            self._worker_pool = pool
            # Terminates the workers when the loader is collected, or at exit.
            self._finalizer = weakref.finalize(self, pool.terminate)

    def _pin(self, batch):
        if self._pin_memory:
            return _as_in_context(batch, context.cpu_pinned(self._pin_device_id))
        return batch

    def __iter__(self):
        if self._num_workers == 0:
            return self._same_thread_iter()
        return _MultiWorkerIter(self)

    def _same_thread_iter(self):
        for batch in self._batch_sampler:
            yield self._pin(self._batchify_fn([self._dataset[idx] for idx in batch]))

    def __len__(self):
        return len(self._batch_sampler)


__all__ = ["DataLoader", "default_batchify_fn", "default_mp_batchify_fn"]
