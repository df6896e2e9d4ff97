"""``DataLoader``: batches of a ``Dataset``, loaded in parallel.

With ``num_workers > 0`` batches are loaded by that many worker *processes*, as in
MXNet, started with ``fork`` so the workers inherit the dataset and ``batchify_fn``
(nothing is pickled to start them, and datasets defined in unguarded scripts or
notebooks work). The processes are oxnet's own small pool (``_workers.py``: a private
pipe pair per worker, no process-shared lock, no handler thread; see there why not
``multiprocessing.Pool``). Each task sent to a worker is the list of sample indices of
one batch and a shared-memory segment of the parent's (``_shm.py``) to write the
batch into: the default batchify functions stack straight into it, other NDArrays of
the batch are copied in, and only their places (offset, shape, dtype; lists, tuples
and dicts kept) come back through the pipe. The parent's batch NDArrays, on
``cpu_shared(0)`` as in MXNet, take that memory over without a copy, and the segment
is used again once they are all gone (``cpu_pinned(pin_device_id)`` with
``pin_memory``: copied there). What does not fit comes through the pipe as NumPy
arrays. Batches come back in order, up to ``prefetch`` requested ahead. A worker's exception is raised again in the
parent, with the worker's traceback attached as its cause. A worker that dies or gives
no batch within ``timeout`` seconds makes ``next()`` raise (``MXNetError``, or
``multiprocessing.TimeoutError``) naming the worker; it is replaced by a fresh worker
and the iterator goes on with the next batch. The workers are stopped when the loader
is collected, or at interpreter exit.

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
import threading
import weakref
from collections import deque

import numpy as np

from ... import _core
from ... import context
from ...ndarray import NDArray
from ...ndarray.interop import _ADOPTABLE, _adoptable
from ... import ndarray as nd
from . import _shm
from ._workers import WorkerPool, _Failure, failure_from
from .sampler import BatchSampler, RandomSampler, SequentialSampler


def _stack_in_arena(data):
    """In a worker process loading into a shared-memory slot: ``nd.stack(*data)``
    written straight into the slot (adopted there by the parent, no copy on the way),
    or ``None`` when the samples or the slot do not allow it."""
    arena = _shm.current()
    if arena is None or arena.mem is None:
        return None
    first = data[0]
    dtype = np.dtype(first.dtype)
    if dtype.name not in _ADOPTABLE or first.stype != "default":
        return None
    cpu = context.cpu(0)
    shape = first.shape
    for d in data:
        if not isinstance(d, NDArray) or d.shape != shape or d.dtype != first.dtype \
                or d.stype != "default" or d.context != cpu:
            return None
    view, offset = arena.alloc((len(data),) + tuple(shape), dtype)
    if view is None:
        return None
    out = _core.from_numpy_zero_copy(view, cpu.device_typeid, 0)
    arena.owned[id(out)] = (out, offset)
    return nd.stack(*data, out=out)


def _numpy_in_arena(arr):
    """``arr`` copied into the worker's shared-memory slot, as an NDArray over it
    (``None`` outside a worker or when it does not fit)."""
    arena = _shm.current()
    if arena is None or arena.mem is None or not _adoptable(arr):
        return None
    view, offset = arena.alloc(arr.shape, arr.dtype)
    if view is None:
        return None
    np.copyto(view, arr)
    out = _core.from_numpy_zero_copy(view, context.cpu(0).device_typeid, 0)
    arena.owned[id(out)] = (out, offset)
    return out


def default_batchify_fn(data):
    """Stacks a list of samples into a batch: NDArrays with ``nd.stack``, tuples
    element-wise (a list of batches), anything else through ``numpy.asarray`` into an
    NDArray of the same dtype."""
    if isinstance(data[0], NDArray):
        out = _stack_in_arena(data)
        return out if out is not None else nd.stack(*data)
    if isinstance(data[0], tuple):
        return [default_batchify_fn(list(i)) for i in zip(*data)]
    arr = np.asarray(data)
    out = _numpy_in_arena(arr)
    return out if out is not None else nd.array(arr, dtype=arr.dtype)


def default_mp_batchify_fn(data):
    """The batchify function of worker processes and threads (``num_workers > 0``):
    stacks like :func:`default_batchify_fn`, into NDArrays on ``cpu_shared(0)`` as
    MXNet does. In a worker process the stacked arrays are written straight into the
    shared memory that hands the batch to the parent (see ``_shm``)."""
    if isinstance(data[0], NDArray):
        out = _stack_in_arena(data)
        if out is not None:
            return out
        return nd.stack(*data).as_in_context(context.Context("cpu_shared", 0))
    if isinstance(data[0], tuple):
        return [default_mp_batchify_fn(list(i)) for i in zip(*data)]
    arr = np.asarray(data)
    out = _numpy_in_arena(arr)
    if out is not None:
        return out
    return nd.array(arr, ctx=context.Context("cpu_shared", 0), dtype=arr.dtype)


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


def _host_view(arr):
    """A read-only NumPy view of a worker's CPU NDArray (through DLPack, once its pending
    writes are done): pickled out-of-band, its bytes go from the NDArray's memory straight
    to the pipe, without the copy ``asnumpy`` makes."""
    if arr.stype == "default" and arr.context.device_type in ("cpu", "cpu_shared", "cpu_pinned"):
        try:
            return np.from_dlpack(arr)
        except (TypeError, ValueError, BufferError, RuntimeError):
            pass  # a dtype NumPy's DLPack import does not take: copy instead
    return arr.asnumpy()


class _Shm:
    """An NDArray on its way from a worker process, written into the task's
    shared-memory slot: where it lies there."""

    __slots__ = ("offset", "shape", "dtype")

    def __init__(self, offset, shape, dtype):
        self.offset = offset
        self.shape = shape
        self.dtype = dtype

    def __reduce__(self):
        return (_Shm, (self.offset, self.shape, self.dtype))


def _in_arena(arr, arena, seen):
    """``arr`` as an ``_Shm`` in the worker's slot (stacked there already, or copied
    in now), or ``None`` when it does not fit (then it goes through the pipe)."""
    if arr.stype != "default" or arr.context.device_type not in \
            ("cpu", "cpu_shared", "cpu_pinned"):
        return None
    dtype = np.dtype(arr.dtype)
    shape = tuple(arr.shape)
    arena.need += _shm._aligned(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
    if arena.mem is None:
        return None
    owned = arena.owned.get(id(arr))
    if owned is not None and owned[0] is arr and id(arr) not in seen:
        seen.add(id(arr))
        arr.wait_to_read()
        return _Shm(owned[1], shape, dtype.str)
    if dtype.name not in _ADOPTABLE:
        return None
    view, offset = arena.alloc(shape, dtype)
    if view is None:
        return None
    np.copyto(view, _host_view(arr))
    return _Shm(offset, shape, dtype.str)


def _to_host(batch, arena=None, seen=None):
    """A worker's batch with every NDArray replaced by an ``_Shm`` (in the task's
    shared-memory slot) or an ``_Array`` (NumPy, through the pipe); ``arena.need``
    adds up the bytes of the batch's arrays."""
    if seen is None:
        seen = set()
    if isinstance(batch, NDArray):
        if arena is not None:
            out = _in_arena(batch, arena, seen)
            if out is not None:
                return out
        return _Array(_host_view(batch))
    if isinstance(batch, list):
        return [_to_host(b, arena, seen) for b in batch]
    if isinstance(batch, tuple):
        items = [_to_host(b, arena, seen) for b in batch]
        return type(batch)(*items) if hasattr(batch, "_fields") else tuple(items)
    if isinstance(batch, dict):
        return type(batch)((k, _to_host(v, arena, seen)) for k, v in batch.items())
    return batch


def _from_host(batch, ctx, view=None):
    """The inverse of ``_to_host`` in the parent: NDArrays again, on ``ctx`` (as in
    MXNet, whose workers pass NDArrays in shared memory: ``cpu_shared(0)`` unless
    pinned). ``view(offset, shape, dtype)`` gives an ``_Shm``'s bytes in the task's
    slot (a NumPy array that keeps the slot in use while it lives)."""
    if isinstance(batch, (_Array, _Shm)):
        if isinstance(batch, _Shm):
            a = view(batch.offset, batch.shape, batch.dtype)
        else:
            a = batch.data
        # The array is the parent's own (read from the pipe into a fresh array, or
        # the task's slot): the NDArray takes that memory over instead of copying it.
        if ctx.device_type in ("cpu", "cpu_shared") and a.flags["WRITEABLE"] and _adoptable(a):
            return _core.from_numpy_zero_copy(a, ctx.device_typeid, ctx.device_id)
        return nd.array(a, ctx=ctx, dtype=a.dtype)
    if isinstance(batch, list):
        return [_from_host(b, ctx, view) for b in batch]
    if isinstance(batch, tuple):
        items = [_from_host(b, ctx, view) for b in batch]
        return type(batch)(*items) if hasattr(batch, "_fields") else tuple(items)
    if isinstance(batch, dict):
        return type(batch)((k, _from_host(v, ctx, view)) for k, v in batch.items())
    return batch


def _worker_fn(samples, arena, dataset, batchify_fn):
    """Loads one batch in a worker process (``dataset`` and ``batchify_fn`` are the
    parent's, inherited through the fork) into ``arena``, the task's shared-memory
    slot (see ``_shm``)."""
    try:
        data = [dataset[i] for i in samples]
        # only the batchify function writes into the slot (not the dataset: what it
        # makes may outlive the task)
        _shm.set_current(arena)
        try:
            batch = batchify_fn(data)
        finally:
            _shm.set_current(None)
        return _to_host(batch, arena)
    except Exception as e:  # pylint: disable=broad-except
        return failure_from(e)
    finally:
        arena.owned.clear()


# ---------------------------------------------------------------------------
# Worker threads


def _thread_worker_fn(key, samples, dataset, batchify_fn, running):
    running[key] = threading.current_thread().name
    try:
        return batchify_fn([dataset[i] for i in samples])
    finally:
        running.pop(key, None)


def _drop_tasks(pool, pending):
    """Forgets the batches an abandoned iterator had requested (its finalizer)."""
    if not pool._closed:  # pylint: disable=protected-access
        pool.drop(list(pending))


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
        self._pending = deque()  # task ids (processes) or (key, AsyncResult) (threads)
        self._running = {}       # threads: key -> name of the thread loading it
        self._sent = 0
        if not self._threads:
            weakref.finalize(self, _drop_tasks, self._pool, self._pending)
        for _ in range(loader._prefetch):
            self._push_next()

    def _push_next(self):
        samples = next(self._iter, None)
        if samples is None:
            return
        if self._threads:
            key = self._sent
            args = (key, samples, self._loader._dataset, self._loader._batchify_fn,
                    self._running)
            self._pending.append((key, self._pool.apply_async(_thread_worker_fn, args)))
        else:
            self._pending.append(self._pool.submit(samples))
        self._sent += 1

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader._batch_sampler)

    def __next__(self):
        self._push_next()
        if not self._pending:
            raise StopIteration
        if self._threads:
            key, ret = self._pending.popleft()
            try:
                batch = ret.get(self._timeout)
            except multiprocessing.TimeoutError:
                who = self._running.get(key)
                who = "worker thread %r" % who if who else \
                    "batch (all %d worker threads busy)" % self._loader._num_workers
                raise multiprocessing.TimeoutError(
                    "DataLoader: %s gave no batch within timeout=%s s (a slow dataset or "
                    "transform: raise `timeout`)" % (who, self._timeout)) from None
            return _as_in_context(batch, self._pinned) if self._pinned is not None else batch
        ctx = self._pinned or context.Context("cpu_shared", 0)
        tid = self._pending.popleft()
        try:
            batch = self._pool.get(tid, self._timeout,
                                   lambda b, view: b if isinstance(b, _Failure)
                                   else _from_host(b, ctx, view))
        except BaseException:
            # (Ctrl-C while waiting): nobody will collect this batch; frees its
            # shared-memory slot when it comes
            self._pool.drop([tid])
            raise
        if isinstance(batch, _Failure):
            raise batch.exception()
        return batch

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
                 timeout=120, try_nopython=None, auto_reload=False):
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
                stop = pool.terminate
            else:
                # shared-memory slots: the batches requested ahead, those being
                # loaded, and two the caller holds
                pool = WorkerPool(self._num_workers, _worker_fn, (dataset, batchify_fn),
                                  max_slots=self._prefetch + self._num_workers + 2)
                stop = pool.close
            self._worker_pool = pool
            # Stops the workers when the loader is collected, or at exit.
            self._finalizer = weakref.finalize(self, stop)

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
