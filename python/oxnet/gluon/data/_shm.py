"""Shared-memory hand-off of ``DataLoader`` batches from worker processes.

The parent owns a small pool of POSIX shared-memory segments ("slots", one batch
each). Each task sent to a worker names a free slot (or none); the worker writes the
batch's arrays into it (``default_mp_batchify_fn`` stacks straight into it, other
arrays are copied in once) and sends back only descriptors (offset, shape, dtype),
nested as the batch is. The parent then adopts each array's memory as the batch
NDArray without a copy; a slot goes back to the pool once every NDArray made from it
is released (a ``weakref.finalize`` on the NumPy view each NDArray owns; the release
is queued lock-free and applied at the pool's next call, so it never waits in
whatever thread drops the last reference).

What does not fit (no free slot, a batch larger than the slots, an array of a dtype
that cannot be adopted, no shared memory on the system) goes through the worker's
pipe as before. Every result reports the bytes its arrays need, so the slots are
(re)sized to the batches actually seen; smaller slots are retired as they come back.

Segments are created and unlinked by the parent only (a worker just maps them), so a
worker that dies leaks nothing; they are unlinked when the worker pool closes (the
loader collected, or interpreter exit), or, when the parent is killed without closing
it, by its workers as they find their task pipe closed. A mapping survives the
unlinking of its name: batches the user still holds stay valid.
"""

import collections
import itertools
import mmap
import os
import threading
import weakref

import numpy as np

try:
    import _posixshmem
except ImportError:  # pragma: no cover - platforms without POSIX shared memory
    _posixshmem = None

ALIGN = 64            # byte alignment of each array in a slot
_GRANULE = 1 << 16    # slot sizes are multiples of this
_COUNTER = itertools.count()
_LOCAL = threading.local()
# Map the pages at once (one call instead of a fault per page on first touch).
_FLAGS = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)


def _aligned(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def available():
    return _posixshmem is not None


# ---------------------------------------------------------------------------
# In the worker process


class Arena:
    """The slot a worker writes the current batch into (``mem`` None: no slot; then
    it only adds up the bytes the batch would need)."""

    __slots__ = ("mem", "size", "used", "need", "owned")

    def __init__(self, mem=None, size=0):
        self.mem = mem
        self.size = size if mem is not None else 0
        self.used = 0
        self.need = 0
        self.owned = {}   # id(NDArray) -> (NDArray, offset) stacked straight into the slot

    def alloc(self, shape, dtype):
        """A writable NumPy array in the slot (``None`` when it does not fit)."""
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if self.mem is None or nbytes == 0 or self.used + nbytes > self.size:
            return None, 0
        off = self.used
        self.used = _aligned(off + nbytes)
        view = np.frombuffer(self.mem, dtype=dtype, count=nbytes // dtype.itemsize,
                             offset=off).reshape(shape)
        return view, off


class WorkerMaps:
    """A worker's mappings of the parent's slots, by name (mapped on first use,
    forgotten when the parent retires the slot)."""

    def __init__(self):
        self._maps = {}

    def forget(self, names):
        for name in names:
            self._maps.pop(name, None)  # unmapped once nothing uses it any more

    def orphaned(self, parent):
        """The parent (pid ``parent``) died without closing its pool (SIGKILL):
        unlinks its segments, which nobody else would."""
        names = set(self._maps)
        prefix = "oxnet_dl_%d_" % parent
        try:
            names.update(n for n in os.listdir("/dev/shm") if n.startswith(prefix))
        except OSError:
            pass
        for name in names:
            if name.startswith(prefix):
                _unlink(name)
        self._maps.clear()

    def arena(self, slot):
        """The ``Arena`` for a task's slot descriptor ``(name, size)`` or ``None``."""
        if slot is None or _posixshmem is None:
            return Arena()
        name, size = slot
        mem = self._maps.get(name)
        if mem is None:
            try:
                fd = _posixshmem.shm_open("/" + name, os.O_RDWR, mode=0o600)
            except OSError:
                return Arena()  # retired, or the parent is closing
            try:
                mem = mmap.mmap(fd, size, flags=_FLAGS)
            except (OSError, ValueError):
                return Arena()
            finally:
                os.close(fd)
            self._maps[name] = mem
        return Arena(mem, size)


def set_current(arena):
    _LOCAL.arena = arena


def current():
    """The arena of the batch this thread of a worker process is loading, if any."""
    return getattr(_LOCAL, "arena", None)


# ---------------------------------------------------------------------------
# In the parent


class Slot:
    """One segment of the parent's pool."""

    __slots__ = ("name", "size", "mem", "refs", "retired", "__weakref__")

    def __init__(self, name, size, mem):
        self.name = name
        self.size = size
        self.mem = mem
        self.refs = 0
        self.retired = False

    def describe(self):
        return (self.name, self.size)


def _create(size):
    """A new shared-memory segment of ``size`` bytes, its pages reserved (a full
    ``/dev/shm`` fails here, not with SIGBUS in a worker), or ``None``."""
    if _posixshmem is None:
        return None
    for _ in range(16):
        name = "oxnet_dl_%d_%d" % (os.getpid(), next(_COUNTER))
        try:
            fd = _posixshmem.shm_open("/" + name, os.O_CREAT | os.O_EXCL | os.O_RDWR,
                                      mode=0o600)
            break
        except FileExistsError:
            continue  # left by an earlier process of the same pid
        except OSError:
            return None
    else:
        return None
    try:
        try:
            os.ftruncate(fd, size)
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(fd, 0, size)
            mem = mmap.mmap(fd, size, flags=_FLAGS)
        finally:
            os.close(fd)
    except (OSError, ValueError):
        _unlink(name)
        return None
    return Slot(name, size, mem)


def _unlink(name):
    try:
        _posixshmem.shm_unlink("/" + name)
    except OSError:
        pass


class SlotPool:
    """The parent's segments: at most ``max_slots`` at once, each of the size the
    batches seen so far need. Not thread-safe except ``released`` (the worker pool
    calls it under its lock)."""

    def __init__(self, max_slots):
        self.max_slots = max_slots
        self.enabled = available() and max_slots > 0
        self.target = 0          # the slot size batches need (0: not known yet)
        self._free = []
        self._all = {}           # name -> Slot (free or in use)
        self._released = collections.deque()  # slots whose arrays were dropped
        self.retired_names = []  # names unlinked since the caller last took them

    def __len__(self):
        return len(self._all)

    def names(self):
        return list(self._all)

    def note_need(self, need):
        """A result's bytes: grows the slot size when a batch did not fit."""
        if need > self.target:
            grow = need if not self.target else max(need, self.target + self.target // 4)
            self.target = -(-grow // _GRANULE) * _GRANULE

    def acquire(self):
        """A free slot of the current size for a new task (its one reference), or
        ``None``."""
        self.apply_releases()
        if not self.enabled or not self.target:
            return None
        while self._free:
            slot = self._free.pop()
            if slot.size >= self.target:
                slot.refs = 1
                return slot
            self._retire(slot)
        if len(self._all) >= self.max_slots:
            return None
        slot = _create(self.target)
        if slot is None:
            # no more shared memory to be had (a small /dev/shm): keep the slots
            # there are, the pipe carries the rest
            self.max_slots = len(self._all)
            self.enabled = bool(self._all)
            return None
        self._all[slot.name] = slot
        slot.refs = 1
        return slot

    def view(self, slot, offset, shape, dtype):
        """A NumPy array over ``slot``'s bytes that holds one reference to it: the
        slot is released when the array is collected (through ``released``)."""
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        a = np.frombuffer(slot.mem, dtype=dtype, count=count, offset=offset).reshape(shape)
        slot.refs += 1
        fin = weakref.finalize(a, self._released.append, slot)
        fin.atexit = False
        return a

    def release(self, slot):
        """Drops one reference (from the thread holding the worker pool's lock)."""
        if slot is not None:
            self._released.append(slot)
            self.apply_releases()

    def apply_releases(self):
        while self._released:
            slot = self._released.popleft()
            slot.refs -= 1
            if slot.refs:
                continue
            if slot.retired:
                try:
                    slot.mem.close()
                except (BufferError, ValueError):
                    pass
            elif slot.size >= self.target and self.enabled:
                self._free.append(slot)
            else:
                self._retire(slot)

    def _retire(self, slot):
        if slot.retired:
            return
        slot.retired = True
        self._all.pop(slot.name, None)
        _unlink(slot.name)
        self.retired_names.append(slot.name)
        if slot.refs == 0:
            try:
                slot.mem.close()
            except (BufferError, ValueError):
                pass  # a view still exists: unmapped when it is collected

    def close(self, unlink=True):
        """Unlinks every segment (batches in use keep their mapping)."""
        self.enabled = False
        self.apply_releases()
        for slot in list(self._all.values()):
            slot.retired = True
            if unlink:
                _unlink(slot.name)
            if slot.refs == 0:
                try:
                    slot.mem.close()
                except (BufferError, ValueError):
                    pass
        self._all.clear()
        self._free.clear()
