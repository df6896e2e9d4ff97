"""The worker processes of ``DataLoader(num_workers > 0)``: forked processes, each
with a private task pipe and a private result pipe, driven by the parent without
background threads.

Why not ``multiprocessing.Pool`` (as MXNet 1.9 does): a Pool's workers share one task
queue and one result queue, each guarded by a process-shared lock, and the Pool runs
three handler threads in the parent. A batch of NumPy arrays is larger than a pipe's
buffer, so a worker sending one holds the result queue's write lock while it waits for
the parent to read. ``Pool.terminate()`` (a loader being collected) kills workers at
that moment: the lock is never released, and the parent blocks forever, either in
``terminate`` itself (it puts a sentinel on that queue) or joining a handler thread
that waits for the lock or for the rest of a half-written batch. Workers forked while
such a lock is held wait on it forever as well. (MXNet passes shared-memory handles,
small enough to be written at once, which only makes this rarer.)

Here no lock is shared between processes and no handler thread runs: the parent
writes tasks and reads results without blocking (``poll`` with a deadline, in the
thread that waits for a batch), every message is length-framed, and a worker is
watched through its process sentinel. So a worker that dies (a crash, a signal, the
OOM killer) or stalls costs only the batch it was loading: the waiting call raises,
naming the worker, within ``timeout``; the worker is replaced by a fresh fork and the
batches queued on it go to the live workers, so the loader and the iterator stay
usable. Killing workers at shutdown is always safe.

Each forked worker closes the parent's ends of every other worker's pipes (of all
loaders in the process), so pipes do not leak into siblings.

Each task names one of the pool's shared-memory segments (``_shm``, created and
unlinked by the parent only): the worker writes the batch there and the result frame
carries only where each array lies, plus the bytes the batch needed (which sizes the
segments). A segment goes back to the pool when the task's batch has been read and
its arrays are gone, when its task is dropped and the worker has finished writing
it, or when the worker writing it is stopped.
"""

import atexit
import collections
import multiprocessing
import os
import pickle
import select
import signal
import struct
import sys
import threading
import time
import traceback
import warnings
import weakref

from ...base import MXNetError
from . import _shm

_HEADER = struct.Struct("<Q")
# A result frame: the pickle's length and the number of out-of-band buffers, then
# each buffer's length, the pickle, and the buffers' bytes (pickle protocol 5: a
# batch's NumPy arrays travel as raw bytes, read by the parent straight into fresh
# arrays, with no copy through the pickle stream).
_RESULT_HEADER = struct.Struct("<QQ")
_PROTOCOL = pickle.HIGHEST_PROTOCOL
# The parent's ends of the pipes of every live worker of this process; a new worker
# closes them all.
_PARENT_FDS = {}
# Live pools, stopped at interpreter exit before multiprocessing's own exit hook
# (which joins daemonic children without a time limit: a worker that ignores SIGTERM
# would hang the exit).
_LIVE = weakref.WeakSet()
_EXIT_HOOK = []


def _close_all():
    for pool in list(_LIVE):
        pool.close()


class _Failure:
    """An exception raised in a worker process (with the worker's traceback), or the
    loss of a worker (``trace`` None): raised again in the parent."""

    def __init__(self, exc, trace, pid, mxnet_error=None):
        self.exc = exc
        self.trace = trace
        self.pid = pid
        self.mxnet_error = mxnet_error

    def exception(self):
        """The exception to raise in the parent."""
        exc = self.exc if self.mxnet_error is None else MXNetError(self.mxnet_error)
        if self.trace is not None:
            exc.__cause__ = _RemoteTraceback(
                "\nin DataLoader worker process %d:\n%s" % (self.pid, self.trace))
        return exc


class _RemoteTraceback(Exception):
    """The traceback of a worker's exception (shown as the cause of the re-raised
    exception)."""

    def __str__(self):
        return self.args[0]


def failure_from(exc):
    """A picklable ``_Failure`` for ``exc`` raised in this worker (called in an
    ``except`` block)."""
    trace = traceback.format_exc()
    try:
        pickle.dumps(exc, protocol=_PROTOCOL)
    except Exception:  # pylint: disable=broad-except
        # not picklable: the same message, as an MXNetError for oxnet's errors
        if isinstance(exc, MXNetError):
            return _Failure(None, trace, os.getpid(), str(exc))
        exc = RuntimeError("%s: %s" % (type(exc).__name__, exc))
    return _Failure(exc, trace, os.getpid())


# ---------------------------------------------------------------------------
# In the worker process (blocking I/O on its own two pipes)


def _read_exact(fd, n):
    buf = bytearray(n)
    view = memoryview(buf)
    pos = 0
    while pos < n:
        got = os.readv(fd, [view[pos:]])
        if got == 0:
            return None
        pos += got
    return buf


def _join(proc, timeout):
    """Waits up to ``timeout`` s for ``proc`` to exit, by polling its exit status:
    ``Process.join`` blocks without limit if the sentinel reads EOF while the process
    still runs (a child that closed its copy of the pipe)."""
    deadline = time.monotonic() + timeout
    while proc.exitcode is None and time.monotonic() < deadline:
        time.sleep(0.005)


def _ino(fd):
    return os.fstat(fd).st_ino


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _after_parent_hangup(maps, parent, wait=10.0):
    """The parent closed its end of a pipe. A parent that closes the pool on purpose
    terminates this worker right after and unlinks its segments itself; a parent that
    was killed (SIGKILL) closes its pipes before the kernel re-parents its children, so
    ``getppid`` may still name it for a moment. Waits (bounded) for one or the other,
    and unlinks the dead parent's segments, which nobody else would."""
    deadline = time.monotonic() + wait
    while os.getppid() == parent and time.monotonic() < deadline:
        time.sleep(0.005)
    if os.getppid() != parent:
        maps.orphaned(parent)


def _worker_main(task_fd, result_fd, close_fds, work, args):
    for fd, ino in close_fds:
        # Only if the number still names that pipe: a number freed (and reused, e.g.
        # for this process's own sentinel) since the list was made is left alone.
        try:
            if os.fstat(fd).st_ino == ino:
                os.close(fd)
        except OSError:
            pass
    _PARENT_FDS.clear()
    # Ctrl-C is for the parent, which stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    maps = _shm.WorkerMaps()
    parent = os.getppid()
    while True:
        head = _read_exact(task_fd, _HEADER.size)
        body = None if head is None else _read_exact(task_fd, _HEADER.unpack(head)[0])
        if body is None:
            # the parent closed the pipe: stop (if it died, its segments go too)
            _after_parent_hangup(maps, parent)
            return
        task_id, task, slot, forget = pickle.loads(body)
        maps.forget(forget)
        arena = maps.arena(slot)
        result = work(task, arena, *args)
        bufs = []
        try:
            data = pickle.dumps((task_id, result, arena.need), protocol=5,
                                buffer_callback=bufs.append)
            raws = [b.raw() for b in bufs]
        except Exception as e:  # pylint: disable=broad-except
            try:
                raise TypeError("DataLoader: the batch of a worker process cannot be "
                                "pickled to the parent: %s" % e) from e
            except TypeError as err:
                data = pickle.dumps((task_id, failure_from(err), 0), protocol=_PROTOCOL)
                raws = []
        try:
            head = _RESULT_HEADER.pack(len(data), len(raws))
            head += struct.pack("<%dQ" % len(raws), *[r.nbytes for r in raws])
            _write_all(result_fd, head)
            _write_all(result_fd, data)
            for r in raws:
                _write_all(result_fd, r)
        except OSError:
            _after_parent_hangup(maps, parent)  # the parent is gone or closed the pipe
            return
        del arena, result, data, bufs, raws


# ---------------------------------------------------------------------------
# In the parent


def _grow_pipe(fd):
    """Asks for a 1 MiB pipe buffer (Linux; fewer wake-ups for large batches)."""
    if sys.platform.startswith("linux"):
        try:
            import fcntl  # pylint: disable=import-outside-toplevel
            fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
        except OSError:
            pass


def _describe_exit(proc):
    code = proc.exitcode
    if code is None:
        return "stopped responding"
    if code < 0:
        try:
            return "was killed by signal %s" % signal.Signals(-code).name
        except ValueError:
            return "was killed by signal %d" % -code
    return "exited with code %d" % code


class _Worker:
    __slots__ = ("index", "proc", "pid", "task_fd", "result_fd", "out", "queue",
                 "header", "need", "parts", "part", "pos", "broken", "forget")

    def __init__(self, index, proc, task_fd, result_fd):
        self.index = index
        self.proc = proc
        self.pid = proc.pid
        self.task_fd = task_fd
        self.result_fd = result_fd
        self.out = bytearray()          # task bytes not yet written
        self.queue = collections.deque()  # task ids sent to it, in order
        self.header = bytearray()       # the result frame's header being read
        self.need = _RESULT_HEADER.size  # header bytes expected so far
        self.parts = None               # [pickle, buffer, ...] being filled
        self.part = 0
        self.pos = 0
        self.broken = False             # a pipe's framing was interrupted half-way
        self.forget = []                # retired slot names to tell it with its next task

    def name(self):
        return "DataLoader worker process %d (pid %d)" % (self.index, self.pid)


class WorkerPool:
    """``num_workers`` forked processes running ``work(task, arena, *args)`` (``args``
    inherited through the fork, never pickled; ``arena``: the task's shared-memory
    slot, see ``_shm``, at most ``max_slots``). ``submit(task)`` returns a task id,
    ``get(task_id, timeout)`` its result, ``drop(ids)`` forgets tasks nobody waits
    for, ``close()`` stops the workers. Thread-safe (one lock; ``drop`` never waits,
    so a finalizer can call it from any thread)."""

    def __init__(self, num_workers, work, args=(), max_slots=0):
        self._work = work
        self._args = tuple(args)
        self._ctx = multiprocessing.get_context("fork")
        self._pid = os.getpid()
        self._workers = []
        self._results = {}   # task id -> result read and not yet claimed
        self._owner = {}     # task id -> worker, for tasks sent and not answered
        self._tasks = {}     # task id -> task, to send again if its worker is lost
        self._dropped = set()
        self._next_id = 0
        self._turn = 0
        self._closed = False
        self._lock = threading.RLock()
        self._to_drop = collections.deque()
        self._slots = _shm.SlotPool(max_slots)
        self._task_slot = {}  # task id -> the shared-memory slot its batch goes into
        try:
            for i in range(num_workers):
                self._workers.append(self._spawn(i))
        except BaseException:
            self.close()
            raise
        _LIVE.add(self)
        if not _EXIT_HOOK:
            # registered after multiprocessing's hook (its util module is loaded by
            # now), so it runs first
            atexit.register(_close_all)
            _EXIT_HOOK.append(True)

    @property
    def processes(self):
        """The live worker processes (``multiprocessing.Process``)."""
        return [w.proc for w in self._workers]

    def _spawn(self, index):
        task_r, task_w = os.pipe()
        res_r, res_w = os.pipe()
        close_in_child = sorted({**_PARENT_FDS, task_w: _ino(task_w), res_r: _ino(res_r)}.items())
        proc = self._ctx.Process(
            target=_worker_main, name="DataLoader worker %d" % index, daemon=True,
            args=(task_r, res_w, close_in_child, self._work, self._args))
        main = threading.current_thread() is threading.main_thread()
        old = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        try:
            with warnings.catch_warnings():
                # Python 3.12+ warns that forking a multi-threaded process may
                # deadlock the child. The threads here are oxnet's compute threads,
                # which its fork handlers account for (the engine is drained before
                # the fork; the child builds a fresh compute pool and engine).
                warnings.filterwarnings("ignore", category=DeprecationWarning,
                                        message=r".*fork\(\).*")
                proc.start()
        except BaseException:
            os.close(task_w)
            os.close(res_r)
            raise
        finally:
            if main:
                signal.signal(signal.SIGINT, old)
            os.close(task_r)
            os.close(res_w)
        os.set_blocking(task_w, False)
        os.set_blocking(res_r, False)
        _grow_pipe(res_r)
        _PARENT_FDS.update({task_w: _ino(task_w), res_r: _ino(res_r)})
        return _Worker(index, proc, task_w, res_r)

    def _check(self):
        if self._closed:
            raise MXNetError("DataLoader: the worker processes were stopped")
        if os.getpid() != self._pid:
            raise MXNetError("DataLoader: this loader's worker processes belong to "
                             "process %d; a forked process must make its own "
                             "DataLoader" % self._pid)
        if not self._workers:
            raise MXNetError("DataLoader: no worker process is left")

    # -- tasks ---------------------------------------------------------------

    def submit(self, task):
        """Queues ``task`` on the least busy worker; returns its id."""
        with self._lock:
            self._check()
            self._housekeep()
            return self._submit(task)

    def _submit(self, task):
        tid = self._next_id
        self._next_id += 1
        self._tasks[tid] = task
        slot = self._slots.acquire()
        if slot is not None:
            self._task_slot[tid] = slot
        self._assign(tid)
        return tid

    def _release_slot(self, tid):
        """The task's batch will not be read from its slot (any more)."""
        self._slots.release(self._task_slot.pop(tid, None))

    @property
    def shm_names(self):
        """The names of the shared-memory segments of this pool."""
        with self._lock:
            self._slots.apply_releases()
            return self._slots.names()

    def _assign(self, tid):
        n = len(self._workers)
        w = min(self._workers,
                key=lambda w: (len(w.queue), (w.index - self._turn) % n))
        self._turn = (w.index + 1) % n
        if self._slots.retired_names:
            for x in self._workers:
                x.forget.extend(self._slots.retired_names)
            del self._slots.retired_names[:]
        slot = self._task_slot.get(tid)
        data = pickle.dumps((tid, self._tasks[tid], slot and slot.describe(), w.forget),
                            protocol=_PROTOCOL)
        w.forget = []
        w.out += _HEADER.pack(len(data))
        w.out += data
        w.queue.append(tid)
        self._owner[tid] = w
        self._flush(w)

    def _flush(self, w):
        w.broken = True   # until this returns normally
        try:
            while w.out:
                del w.out[:os.write(w.task_fd, w.out)]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            pass  # the worker is gone: its sentinel says so
        w.broken = False

    def get(self, tid, timeout, convert=None):
        """The result of task ``tid``, waiting at most ``timeout`` seconds, passed
        through ``convert(result, view)`` when given (``view(offset, shape, dtype)``:
        a NumPy array over the task's shared-memory slot, which stays in use while
        the array lives).

        Raises ``multiprocessing.TimeoutError`` naming the worker when it does not
        come in time (that worker is stopped and replaced). A lost worker gives a
        ``_Failure`` result for the task it was running."""
        with self._lock:
            self._check()
            self._housekeep()
            result = self._get(tid, timeout)
            slot = self._task_slot.pop(tid, None)
            try:
                if convert is not None:
                    def view(offset, shape, dtype):
                        if slot is None:
                            raise MXNetError("DataLoader: a batch in shared memory "
                                             "without a slot")
                        return self._slots.view(slot, offset, shape, dtype)
                    result = convert(result, view)
            finally:
                self._slots.release(slot)
            return result

    def _get(self, tid, timeout):
        if tid not in self._results and tid not in self._owner:
            raise MXNetError("DataLoader: unknown or already collected task %d" % tid)
        deadline = time.monotonic() + timeout
        while tid not in self._results:
            left = deadline - time.monotonic()
            if left <= 0:
                self._timed_out(tid, timeout)
            self._poll(left)
            self._housekeep()
        return self._results.pop(tid)

    def drop(self, tids):
        """Forgets tasks whose results nobody will collect (applied at the next
        call: never waits, so it is safe from a finalizer in any thread)."""
        self._to_drop.extend(tids)

    def _housekeep(self):
        """Applies pending drops; replaces a worker whose pipe framing an exception
        (Ctrl-C) interrupted half-way, sending its batches to the others."""
        while self._to_drop:
            tid = self._to_drop.popleft()
            if tid not in self._results and tid in self._owner:
                self._dropped.add(tid)  # its slot is released when the batch comes
            else:
                self._results.pop(tid, None)
                self._release_slot(tid)
        self._slots.apply_releases()
        for w in [w for w in self._workers if w.broken]:
            self._requeue(self._replace(w))

    # -- the event loop --------------------------------------------------------

    def _poll(self, timeout):
        poller = select.poll()
        by_fd = {}
        for w in self._workers:
            poller.register(w.result_fd, select.POLLIN)
            by_fd[w.result_fd] = (w, "result")
            poller.register(w.proc.sentinel, select.POLLIN)
            by_fd[w.proc.sentinel] = (w, "exit")
            if w.out:
                poller.register(w.task_fd, select.POLLOUT)
                by_fd[w.task_fd] = (w, "task")
        events = poller.poll(max(0, int(timeout * 1000)) + 1)
        exited = []
        for fd, _ in events:
            w, what = by_fd[fd]
            if what == "result":
                self._read(w)
            elif what == "task":
                self._flush(w)
            else:
                exited.append(w)
        for w in exited:
            if w in self._workers:
                self._lost(w)

    def _read(self, w):
        """Reads what ``w`` has sent so far; delivers complete results."""
        w.broken = True   # until this returns normally
        self._read_frames(w)
        w.broken = False

    def _read_frames(self, w):
        import numpy as np
        while True:
            try:
                if w.parts is None:
                    chunk = os.read(w.result_fd, w.need - len(w.header))
                    if not chunk:
                        return
                    w.header += chunk
                    if len(w.header) < w.need:
                        continue
                    blen, nbuf = _RESULT_HEADER.unpack_from(w.header)
                    if w.need == _RESULT_HEADER.size and nbuf:
                        w.need += 8 * nbuf   # then the buffers' lengths
                        continue
                    sizes = struct.unpack_from("<%dQ" % nbuf, w.header, _RESULT_HEADER.size)
                    w.parts = [bytearray(blen)] + [np.empty(n, dtype=np.uint8) for n in sizes]
                    w.part = w.pos = 0
                while w.part < len(w.parts):
                    target = memoryview(w.parts[w.part]).cast("B")
                    if w.pos < len(target):
                        got = os.readv(w.result_fd, [target[w.pos:]])
                        if got == 0:
                            return
                        w.pos += got
                    if w.pos == len(target):
                        w.part += 1
                        w.pos = 0
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            parts, w.parts = w.parts, None
            w.header = bytearray()
            w.need = _RESULT_HEADER.size
            try:
                tid, result, need = pickle.loads(parts[0], buffers=parts[1:])
                self._slots.note_need(need)
            except Exception as e:  # pylint: disable=broad-except
                # cannot happen with a forked worker; kept as a clear error
                tid = w.queue[0] if w.queue else None
                result = _Failure(MXNetError(
                    "DataLoader: the batch from %s cannot be unpickled: %s"
                    % (w.name(), e)), None, w.pid)
            self._deliver(w, tid, result)

    def _deliver(self, w, tid, result):
        if tid in w.queue:
            w.queue.remove(tid)
        self._owner.pop(tid, None)
        self._tasks.pop(tid, None)
        if tid in self._dropped:
            self._dropped.discard(tid)
            self._release_slot(tid)
        elif tid is not None:
            self._results[tid] = result

    def _replace(self, w):
        """Stops ``w`` (if it still runs: killed), closes its pipes, starts a fresh
        worker in its place; returns the task ids that were queued on ``w``."""
        tasks = list(w.queue)
        w.queue.clear()
        self._workers.remove(w)
        self._stop([w], kill=True)
        for tid in tasks:
            self._owner.pop(tid, None)
        self._workers.append(self._spawn(w.index))
        self._workers.sort(key=lambda x: x.index)
        return tasks

    def _requeue(self, tids):
        for tid in tids:
            if tid in self._dropped:
                self._dropped.discard(tid)
                self._tasks.pop(tid, None)
                self._release_slot(tid)
            else:
                self._assign(tid)

    def _lost(self, w):
        """``w`` has exited: keeps what it finished, fails the batch it was loading,
        sends its other batches to the live workers."""
        self._read(w)
        _join(w.proc, 1)
        how = _describe_exit(w.proc)
        tasks = self._replace(w)
        if tasks:
            tid = tasks[0]
            self._tasks.pop(tid, None)
            if tid in self._dropped:
                self._dropped.discard(tid)
                self._release_slot(tid)
            else:
                self._results[tid] = _Failure(MXNetError(
                    "%s %s while loading a batch; a new worker replaces it"
                    % (w.name(), how)), None, w.pid)
        self._requeue(tasks[1:])

    def _timed_out(self, tid, timeout):
        w = self._owner.get(tid)
        if w is None:  # not on any worker (one could not be started again)
            self._tasks.pop(tid, None)
            self._release_slot(tid)
            raise multiprocessing.TimeoutError(
                "DataLoader: no worker process gave the batch within timeout=%s s"
                % timeout)
        busy = "" if w.queue[0] == tid else \
            " (it was still loading %d earlier batch(es))" % w.queue.index(tid)
        tasks = self._replace(w)
        self._tasks.pop(tid, None)
        self._release_slot(tid)  # its worker is gone: nothing writes there any more
        self._requeue([t for t in tasks if t != tid])
        raise multiprocessing.TimeoutError(
            "DataLoader: %s gave no batch within timeout=%s s%s; it was stopped and a "
            "new worker replaces it (a slow dataset or transform: raise `timeout`)"
            % (w.name(), timeout, busy))

    # -- shutdown --------------------------------------------------------------

    def _stop(self, workers, kill=False):
        own = os.getpid() == self._pid
        for w in workers:
            if own:
                for fd in (w.task_fd, w.result_fd):
                    _PARENT_FDS.pop(fd, None)
                    try:
                        os.close(fd)
                    except OSError:
                        pass
        if not own:
            return  # a forked copy of the parent: the workers are not its children
        for w in workers:
            if w.proc.exitcode is None:
                try:
                    w.proc.kill() if kill else w.proc.terminate()
                except (OSError, ValueError):
                    pass
        deadline = time.monotonic() + 2
        for w in workers:
            try:
                _join(w.proc, max(0.0, deadline - time.monotonic()))
                if w.proc.exitcode is None:
                    w.proc.kill()
                    _join(w.proc, 2)
            except (OSError, ValueError, AssertionError):
                pass

    def close(self):
        """Stops every worker (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            workers, self._workers = self._workers, []
            self._stop(workers)
            self._results.clear()
            self._owner.clear()
            self._tasks.clear()
            self._task_slot.clear()
            # the workers are stopped: nothing writes into the segments any more
            self._slots.close(unlink=os.getpid() == self._pid)
