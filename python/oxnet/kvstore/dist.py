"""Distributed key-value stores on MPI: ``dist_sync``, ``dist_async``,
``dist_device_sync`` (``dist_sync_device``) and ``dist_async_device``.

One MPI job (``mpirun`` or ``python -m oxnet.tools.launch``) holds the workers and the
servers. ``DMLC_NUM_SERVER=S`` makes the last ``S`` ranks servers (or each process
names its role with ``DMLC_ROLE=worker|server``); the others are workers, ranked in
MPI rank order. A server enters its serving loop at ``import oxnet`` and the process
exits when every worker has finished, as MXNet's servers do.

Workers
    ``push`` and ``pull`` return at once. Each one is an engine operation
    (``_core._comm_op``) reading the pushed arrays or writing the pulled ones: when it
    holds them, a communication thread starts sending them to the servers straight
    from the arrays' memory (nonblocking sends, so the data of several keys and servers
    travel at once; mpi4py releases the GIL while MPI runs) and a completion thread
    ends the push when its sends are done; a receiver thread receives pulled values
    straight into the output array, and the pull completes then. Compute that does not touch those arrays runs meanwhile; a later read of a
    pulled array waits for the pull, as for any engine operation. The operations of
    one key are ordered by a per-key token array that each of them writes.
Servers
    A key lives on server ``key * 9973 % S`` (strings: their CRC32); an array of at
    least ``MXNET_KVSTORE_BIGARRAY_BOUND`` (1,000,000) elements is cut into ``S``
    parts at row boundaries (first axis), one per server. A server keeps its values
    in a native ``local`` store. It has one thread per worker receiving that worker's
    requests, the data into receive buffers kept per key and worker (reused every
    round), and a reply thread per worker sending that worker's pulled values (a few
    nonblocking sends in flight, so that a worker takes its next value while the
    server is busy receiving), so that receives from several workers, the sums and the
    replies to several workers overlap. In sync mode it waits for one push of
    a key from every worker, then sums them (in worker order) into the stored value or
    runs the optimizer's fused update on the sum, and answers the waiting pulls at
    once; a pull waits until the puller's pushes are applied. Dense pull requests
    travel on their own communicator, received by one more server thread, and name how
    many pushes of the key the worker sent before them: a server answers a pull as soon
    as those are applied, while it still receives the worker's later pushes. In async mode
    every push is applied at once (an optimizer is required, as in MXNet).

row_sparse keys
    ``init`` with a row_sparse array makes a row_sparse key; the servers hold its value
    whole (absent rows are zeros), as MXNet's servers do. A row_sparse push sends only
    its rows (row numbers, then the rows); big keys are cut at row boundaries, so each
    server gets the rows it holds. In sync mode the servers sum the rows of all
    workers' pushes, then run the optimizer with that row_sparse gradient (a lazy
    update: only those rows) or, without one, give the pushed rows their sums.
    ``row_sparse_pull`` asks each server for the requested rows it holds, and only
    those rows come back (asynchronously, as a dense pull); ``pull`` of a row_sparse key is refused (row_sparse outputs
    are ignored with a warning, as MXNet does). Dense keys take row_sparse pushes too
    (sparse gradients of a dense weight, e.g. ``Embedding(sparse_grad=True)``).

Errors are raised on the worker before anything is sent (unknown key, second
``init``, shape or dtype of a push different from the stored one), so the stored
values stay intact. A process that dies ends the whole job (``mpirun`` aborts it).
"""

import atexit
import os
import pickle
import sys
import threading
import zlib

import numpy as np

from ..base import MXNetError
from .base import KVStoreBase

__all__ = ["DistKVStore", "role", "start_server_if_needed"]

_TAG_REQ = 1
_TAG_DATA = 2
_TAG_STOP = 3
_TAG_REPLY0 = 16
# pulled values a server has in flight to one worker at once
_REPLY_DEPTH = 4

_ENV_RANK = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")
_ENV_SIZE = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE")

_CTX = None
_CTX_LOCK = threading.Lock()


def _env_int(names):
    for n in names:
        v = os.environ.get(n)
        if v is not None and v.strip().lstrip("-").isdigit():
            return int(v)
    return None


def _comm():
    from .. import _core
    return _core


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:  # pragma: no cover - depends on the install
        raise MXNetError("distributed kvstores need mpi4py and an MPI library: "
                         "pip install 'oxnet[dist]' (%s)" % e) from None
    return MPI


def _is_dist_job():
    """True when this process is a rank of an MPI job set up for distributed kvstores
    (``DMLC_NUM_SERVER`` or ``DMLC_ROLE`` given)."""
    return "DMLC_NUM_SERVER" in os.environ or os.environ.get("DMLC_ROLE") in ("worker", "server")


def role():
    """This process's role: ``'server'``, ``'worker'`` or ``'scheduler'`` (from
    ``DMLC_ROLE``, or the rank's position: the last ``DMLC_NUM_SERVER`` ranks serve)."""
    r = os.environ.get("DMLC_ROLE")
    if r:
        return r
    rank, size = _env_int(_ENV_RANK), _env_int(_ENV_SIZE)
    ns = os.environ.get("DMLC_NUM_SERVER")
    if rank is not None and size is not None and ns is not None:
        try:
            s = int(ns)
        except ValueError:
            raise MXNetError("DMLC_NUM_SERVER must be an integer, got %r" % ns) from None
        return "server" if rank >= size - s else "worker"
    return "worker"


class _Context:
    """The MPI side of this process: communicators, roles, and (on a worker) the
    communication and receiver threads."""

    def __init__(self):
        MPI = _mpi()
        self.MPI = MPI
        if not MPI.Is_initialized():
            MPI.Init_thread(MPI.THREAD_MULTIPLE)
        if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
            raise MXNetError("the MPI library gives thread level %d; distributed kvstores need "
                             "MPI_THREAD_MULTIPLE" % MPI.Query_thread())
        world = MPI.COMM_WORLD
        self.world = world
        self.role = role()
        if self.role not in ("worker", "server"):
            raise MXNetError("DMLC_ROLE=%r: oxnet's MPI jobs have workers and servers only "
                             "(no scheduler)" % self.role)
        roles = world.allgather(self.role)
        self.workers = [i for i, r in enumerate(roles) if r == "worker"]
        self.servers = [i for i, r in enumerate(roles) if r == "server"]
        self.req = world.Dup()
        self.rep = world.Dup()
        # dense pull requests travel on their own communicator, so that a server sees
        # them while it is still receiving the pushes sent before them
        self.preq = world.Dup()
        self.wcomm = world.Split(0 if self.role == "worker" else 1, world.rank)
        nw = os.environ.get("DMLC_NUM_WORKER")
        problem = None
        if not self.servers:
            problem = ("no server ranks: set DMLC_NUM_SERVER (>= 1) or DMLC_ROLE=server for "
                       "some ranks")
        elif not self.workers:
            problem = "no worker ranks"
        elif nw is not None and nw.strip().isdigit() and int(nw) != len(self.workers):
            problem = ("DMLC_NUM_WORKER=%s but the job has %d worker ranks (of %d)"
                       % (nw, len(self.workers), world.size))
        self.problem = problem
        self.rank = self.workers.index(world.rank) if self.role == "worker" else \
            self.servers.index(world.rank)
        self.num_workers = len(self.workers)
        self.num_servers = len(self.servers)
        self.next_store = 0
        self.stopped = False
        if self.role == "worker" and problem is None:
            self._start_threads()

    # -- worker threads -----------------------------------------------------------

    def _start_threads(self):
        self.tasks = {}
        self.expect = {}
        self.lock = threading.Lock()
        self.reply_seq = 0
        self.tag_ub = min(int(self.world.Get_attr(self.MPI.TAG_UB) or 32767), 1 << 30)
        import queue
        self.sending = queue.SimpleQueue()
        self.sender = threading.Thread(target=self._send_loop, name="oxnet-kv-send", daemon=True)
        self.receiver = threading.Thread(target=self._recv_loop, name="oxnet-kv-recv", daemon=True)
        self.finisher = threading.Thread(target=self._finish_loop, name="oxnet-kv-sent",
                                         daemon=True)
        self.sender.start()
        self.receiver.start()
        self.finisher.start()
        atexit.register(self.shutdown)
        # an uncaught exception ends the whole job at once (the other ranks may be
        # waiting for this one's pushes or in a barrier: exiting quietly would hang them)
        prev = sys.excepthook

        def hook(*info):
            prev(*info)
            sys.stderr.write("oxnet kvstore worker %d (MPI rank %d) raised; aborting the job\n"
                             % (self.rank, self.world.rank))
            sys.stderr.flush()
            self.world.Abort(1)
        sys.excepthook = hook

    def reply_tag(self):
        with self.lock:
            self.reply_seq += 1
            return _TAG_REPLY0 + self.reply_seq % (self.tag_ub - _TAG_REPLY0)

    def submit(self, reads, writes, run):
        """Pushes a communication op on ``reads``/``writes``; ``run(op)`` is called on
        the communication thread once the op holds its arrays."""
        _core = _comm()
        with self.lock:
            op = _core._comm_op([a for a in reads], [a for a in writes], True)
            self.tasks[op.id] = (op, run)
        return op

    def _send_loop(self):
        try:
            self._send_loop_inner()
        except BaseException:  # noqa: BLE001
            self._fatal("communication")

    def _send_loop_inner(self):
        _core = _comm()
        while True:
            i = _core._comm_next()
            if i == 0:
                if self.stopped:
                    return
                continue
            with self.lock:
                op, run = self.tasks.pop(i)
            try:
                run(op)
            except Exception as e:  # noqa: BLE001 - the error goes to the op's arrays
                op.complete("kvstore communication failed: %s" % e)

    def _finish_loop(self):
        try:
            while True:
                item = self.sending.get()
                if item is None:
                    return
                reqs, op, _keep = item
                self.MPI.Request.Waitall(reqs)
                op.complete()
        except BaseException:  # noqa: BLE001
            self._fatal("send completion")

    def request_async(self, server, header, data):
        """Sends ``header`` now and starts sending the buffers ``data`` (a list) to
        server index ``server``; returns the MPI requests of the data. Called on the
        communication thread only (a header and its data stay together: messages of
        one sender arrive in order)."""
        dest = self.servers[server]
        self.req.send(header, dest=dest, tag=_TAG_REQ)
        return [self.req.Isend([d, self.MPI.BYTE], dest=dest, tag=_TAG_DATA) for d in data]

    def complete_when_sent(self, reqs, op, keep=None):
        """Completes ``op`` once the sends ``reqs`` are done (on the completion thread),
        keeping ``keep`` (the sent buffers) alive until then; the communication thread
        goes on with the next operation meanwhile, so the data of several keys and
        servers travel at once."""
        self.sending.put((reqs, op, keep))

    def expect_reply(self, tag, target, done):
        """Registers ``target`` (a writable memoryview, or None for a message of any
        size) for the reply with ``tag``; ``done(data)`` runs when it arrived."""
        with self.lock:
            self.expect[tag] = (target, done)

    def _fatal(self, where):
        """A communication thread failed: the job cannot go on (a pull would wait
        forever), so it is aborted with the reason."""
        import traceback
        traceback.print_exc()
        sys.stderr.write("oxnet kvstore worker %d (MPI rank %d): the %s thread failed; "
                         "aborting the job\n" % (self.rank, self.world.rank, where))
        sys.stderr.flush()
        self.world.Abort(1)

    def _recv_loop(self):
        try:
            self._recv_loop_inner()
        except BaseException:  # noqa: BLE001
            self._fatal("receiver")

    def _recv_loop_inner(self):
        MPI = self.MPI
        st = MPI.Status()
        while True:
            self.rep.Probe(MPI.ANY_SOURCE, MPI.ANY_TAG, st)
            src, tag = st.Get_source(), st.Get_tag()
            if tag == _TAG_STOP:
                self.rep.Recv([bytearray(max(st.Get_count(MPI.BYTE), 1)), MPI.BYTE], src, tag)
                return
            with self.lock:
                target, done = self.expect.pop(tag, (None, None))
            if target is None:
                buf = bytearray(st.Get_count(MPI.BYTE))
                self.rep.Recv([buf, MPI.BYTE], src, tag)
                if done is not None:
                    done(bytes(buf))
                continue
            self.rep.Recv([target, MPI.BYTE], src, tag)
            done(None)

    def request_pull(self, server, header):
        """Sends the dense pull request ``header`` to server index ``server`` (on the
        pull communicator: it may overtake this worker's pushes, which the header
        counts)."""
        self.preq.send(header, dest=self.servers[server], tag=_TAG_REQ)

    def request(self, server, header, data=None):
        """Sends ``header`` (and the bytes ``data``) to server index ``server``; called
        on the communication thread only, so a header and its data stay together."""
        dest = self.servers[server]
        self.req.send(header, dest=dest, tag=_TAG_REQ)
        if data is None:
            return
        for d in (data if isinstance(data, list) else [data]):
            self.req.Send([d, self.MPI.BYTE], dest=dest, tag=_TAG_DATA)

    def call(self, server_list, make_header, timeout=None):
        """Sends a control request to each server in ``server_list`` through the
        communication thread and returns their replies (bytes), in order."""
        replies = [None] * len(server_list)
        left = [len(server_list)]
        ev = threading.Event()

        def run(op):
            for j, s in enumerate(server_list):
                tag = self.reply_tag()

                def done(data, j=j):
                    replies[j] = data
                    with self.lock:
                        left[0] -= 1
                        last = left[0] == 0
                    if last:
                        ev.set()
                self.expect_reply(tag, None, done)
                self.request(s, dict(make_header(s), reply=tag))
            op.complete()
        if not server_list:
            return []
        self.submit([], [], run)
        while not ev.wait(0.5):
            pass
        return replies

    def shutdown(self):
        """Tells the servers this worker is done (after its pending operations) and
        stops the threads. Registered with atexit."""
        if self.stopped or self.role != "worker" or self.problem is not None:
            return
        import time
        from .. import _core
        # pending pulls may wait for other workers' pushes; if they never come (another
        # worker stopped early), abort rather than hang
        deadline = time.time() + float(os.environ.get("OXNET_KVSTORE_EXIT_TIMEOUT", "20"))
        while _core._engine_pending() and time.time() < deadline:
            time.sleep(0.01)
        if _core._engine_pending():
            sys.stderr.write("oxnet kvstore worker %d (MPI rank %d): operations still pending at "
                             "exit; aborting the job\n" % (self.rank, self.world.rank))
            sys.stderr.flush()
            self.world.Abort(1)
        try:
            _core.waitall()
        except Exception:  # noqa: BLE001 - exiting anyway
            pass
        self.call(list(range(self.num_servers)), lambda s: {"op": "stop"})
        self.stopped = True
        _comm()._comm_wake()
        self.rep.send(None, dest=self.world.rank, tag=_TAG_STOP)
        self.sending.put(None)
        self.sender.join(5)
        self.receiver.join(5)
        self.finisher.join(5)
        try:
            self.wcomm.Barrier()
        except Exception:  # noqa: BLE001
            pass


def context():
    """The process's MPI context (made on first use)."""
    global _CTX
    with _CTX_LOCK:
        if _CTX is None:
            _CTX = _Context()
        return _CTX


# -- placement ------------------------------------------------------------------

def _bigarray_bound():
    v = os.environ.get("MXNET_KVSTORE_BIGARRAY_BOUND", "1000000")
    try:
        return int(v)
    except ValueError:
        raise MXNetError("MXNET_KVSTORE_BIGARRAY_BOUND must be an integer, got %r" % v) from None


def _home(key, nserv):
    if isinstance(key, (str, bytes)):
        h = zlib.crc32(key.encode() if isinstance(key, str) else key)
    else:
        h = int(key) * 9973
    return h % nserv


def _parts(key, shape, itemsize, nserv):
    """[(server, first byte, end byte, elements, first row, end row)] of a key's value.
    A big array is cut at row boundaries (rows: the first axis), so that the rows of a
    row_sparse push or pull go to the server holding them; parts without rows are left
    out."""
    shape = tuple(shape)
    size = int(np.prod(shape)) if shape else 1
    rows = shape[0] if shape else 1
    rowlen = size // rows if rows else 0
    if nserv > 1 and size >= _bigarray_bound():
        cuts = [rows * i // nserv for i in range(nserv + 1)]
        parts = [(i, cuts[i] * rowlen * itemsize, cuts[i + 1] * rowlen * itemsize,
                  (cuts[i + 1] - cuts[i]) * rowlen, cuts[i], cuts[i + 1])
                 for i in range(nserv) if cuts[i + 1] > cuts[i]]
        if len(parts) > 1:
            return parts
    return [(_home(key, nserv), 0, size * itemsize, size, 0, rows)]


def _pack_2bit(vals):
    """2-bit codes of compressed gradients (each value is +threshold, -threshold or 0),
    four to a byte, first value in the low bits: 0 zero, 1 positive, 2 negative. A
    float32 gradient travels in 1/16 of its bytes, as with MXNet's 2-bit compression."""
    n = vals.size
    codes = np.zeros(-(-n // 4) * 4, dtype=np.uint8)
    codes[:n] = (vals > 0).view(np.uint8)
    codes[:n] |= (vals < 0).view(np.uint8) << 1
    c = codes.reshape(-1, 4)
    return c[:, 0] | (c[:, 1] << 2) | (c[:, 2] << 4) | (c[:, 3] << 6)


def _unpack_2bit(packed, n, threshold, out):
    """Writes the n values of ``packed`` (see _pack_2bit) into the float32 array ``out``."""
    t = np.float32(threshold)
    lut = np.array([0.0, t, -t, 0.0], dtype=np.float32)
    codes = np.empty((packed.size, 4), dtype=np.uint8)
    for j in range(4):
        np.bitwise_and(packed >> (2 * j), 3, out=codes[:, j])
    np.take(lut, codes.reshape(-1)[:n], out=out)


# -- the worker's store ---------------------------------------------------------

class _KeyMeta:
    __slots__ = ("shape", "dtype", "token", "parts", "size", "stype", "pushes")

    def __init__(self, shape, dtype, parts, token, stype="default"):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.parts = parts
        self.token = token
        self.size = int(np.prod(self.shape)) if self.shape else 1
        self.stype = stype
        # pushes of the key sent so far (each part gets one message per push): a pull
        # names this count, and the servers answer it once those pushes are applied
        self.pushes = 0

    def part_shape(self, part):
        """The shape of a part's value on its server: its rows of the whole value."""
        if len(self.parts) == 1:
            return self.shape
        return (part[5] - part[4],) + self.shape[1:]


def _part_name(m, s):
    return None if len(m.parts) == 1 else s


def _rows_of(x, m, what, key):
    """(sorted unique int64 row numbers, rows) of a pushed value: a row_sparse array's
    stored rows (summing duplicates), or the non-zero rows of a dense array."""
    if x.stype == "row_sparse":
        idx = x.indices.asnumpy().astype(np.int64, copy=False).reshape(-1)
        data = x.data.asnumpy()
    else:
        dense = x.asnumpy()
        flat = dense.reshape(dense.shape[0], -1) if dense.ndim else dense.reshape(1, 1)
        idx = np.flatnonzero(flat.any(axis=1)).astype(np.int64)
        data = dense[idx]
    data = np.asarray(data, dtype=m.dtype).reshape((idx.size,) + m.shape[1:])
    rows = m.shape[0] if m.shape else 1
    if idx.size and (idx.min() < 0 or idx.max() >= rows):
        raise MXNetError("%s: key %r: row index %d of the row_sparse value is out of range "
                         "[0, %d)" % (what, key, int(idx.min() if idx.min() < 0 else idx.max()),
                                      rows))
    if idx.size > 1 and not np.all(idx[1:] > idx[:-1]):
        uniq, inv = np.unique(idx, return_inverse=True)
        summed = np.zeros((uniq.size,) + data.shape[1:], dtype=data.dtype)
        np.add.at(summed, inv, data)
        idx, data = uniq, summed
    return idx, data


def _merge_rows(pieces, dtype, rowshape):
    """The sum of [(sorted unique rows, data)]: (sorted unique rows, data)."""
    pieces = [p for p in pieces if p[0].size]
    if not pieces:
        return np.zeros(0, dtype=np.int64), np.zeros((0,) + tuple(rowshape), dtype=dtype)
    if len(pieces) == 1:
        return pieces[0]
    idx = np.concatenate([p[0] for p in pieces])
    data = np.concatenate([p[1] for p in pieces])
    uniq, inv = np.unique(idx, return_inverse=True)
    if uniq.size == idx.size:
        order = np.argsort(idx, kind="stable")
        return idx[order], data[order]
    summed = np.zeros((uniq.size,) + data.shape[1:], dtype=data.dtype)
    np.add.at(summed, inv, data)
    return uniq, summed


def _wire_key(k):
    return k.decode() if isinstance(k, bytes) else k


class DistKVStore(KVStoreBase):
    """A worker's handle on a distributed store (see the module docs). Created by
    ``mx.kv.create('dist_sync')`` and friends; ``type`` is the name given."""

    def __init__(self, name):
        ctx = context()
        if ctx.role != "worker":
            raise MXNetError("kvstore %r: this process is a %s; only workers create stores"
                             % (name, ctx.role))
        if ctx.problem is not None:
            raise MXNetError("kvstore %r: %s" % (name, ctx.problem))
        from .. import _core
        if _core.engine_is_naive():
            raise MXNetError("kvstore %r: distributed stores need the threaded engine "
                             "(MXNET_ENGINE_TYPE=NaiveEngine is set)" % name)
        self._ctx = ctx
        self._name = name
        self._sync = "async" not in name
        self._device = "device" in name
        self._sid = ctx.next_store
        ctx.next_store += 1
        self._keys = {}
        self._optimizer = None
        self._updater = None
        self._compression = None
        self._comp = None

    # -- properties -----------------------------------------------------------------

    @property
    def type(self):
        """The name the store was created with ('dist_sync', ...)."""
        return self._name

    @property
    def rank(self):
        """This worker's rank (0 .. num_workers - 1)."""
        return self._ctx.rank

    @property
    def num_workers(self):
        """The number of workers in the job."""
        return self._ctx.num_workers

    @staticmethod
    def is_capable(capability):
        """Distributed stores run optimizers on their servers."""
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return True
        raise ValueError("Unknown capability: {}".format(capability))

    def barrier(self):
        """Blocks until every worker has reached this barrier."""
        self._ctx.wcomm.Barrier()

    _barrier = barrier

    # -- checks ---------------------------------------------------------------------

    def _check_keys(self, keys, what):
        from .kvstore import _is_key
        kinds = {isinstance(k, (str, bytes)) for k in keys}
        if self._keys:
            kinds.add(isinstance(next(iter(self._keys)), (str, bytes)))
        if len(kinds) > 1:
            raise MXNetError("%s: Mixed key types are not allowed (keys %r)" % (what, keys))
        for k in keys:
            if not _is_key(k):
                raise MXNetError("%s: keys must be int or str, got %s" % (what, type(k).__name__))

    def _meta(self, key, what):
        m = self._keys.get(_wire_key(key) if not isinstance(key, int) else key)
        if m is None:
            raise MXNetError("%s: key %r has not been initialized (call init on every worker "
                             "first)" % (what, key))
        return m

    def _check_value(self, m, arrs, what, key):
        for a in arrs:
            if tuple(a.shape) != m.shape:
                raise MXNetError("%s: key %r holds shape %s, got an array of shape %s"
                                 % (what, key, m.shape, tuple(a.shape)))
            if np.dtype(a.dtype) != m.dtype:
                raise MXNetError("%s: key %r holds dtype %s, got an array of dtype %s"
                                 % (what, key, m.dtype, np.dtype(a.dtype)))

    # -- data -----------------------------------------------------------------------

    def init(self, key, value):
        """Initialises keys on every worker; worker 0's values are sent to the servers
        (the others' are ignored), then all workers meet at a barrier."""
        from .kvstore import _pairs
        from .. import ndarray as nd
        keys, vals = _pairs(key, value, "init")
        self._check_keys(keys, "init")
        for k, v in zip(keys, vals):
            for a in v:
                if a.stype not in ("default", "row_sparse"):
                    raise MXNetError("init: key %r: %s values are not supported by oxnet's "
                                     "distributed stores (default and row_sparse only)"
                                     % (k, a.stype))
            wk = _wire_key(k)
            if wk in self._keys:
                raise MXNetError("init: key %r has been initialized already" % (k,))
        seen = set()
        for k in keys:
            if _wire_key(k) in seen:
                raise MXNetError("init: key %r is given twice" % (k,))
            seen.add(_wire_key(k))
        ops = []
        for k, v in zip(keys, vals):
            wk = _wire_key(k)
            a = v[0]
            dt = np.dtype(a.dtype)
            size = int(np.prod(a.shape)) if a.shape else 1
            parts = _parts(wk, a.shape, dt.itemsize, self._ctx.num_servers)
            m = _KeyMeta(a.shape, dt, parts, nd.zeros((1,)), a.stype)
            self._keys[wk] = m
            if self.rank == 0:
                # a row_sparse value is stored whole on the servers (absent rows: zeros),
                # as MXNet's servers store it
                src = self._to_cpu([a if a.stype == "default" else a.tostype("default")])
                ops.append(self._send_value(wk, m, src, "init"))
        for op in ops:
            op.wait_done()
        self.barrier()

    def _to_cpu(self, arrs):
        """One CPU array with the sum of ``arrs`` (the array itself when alone and on
        the CPU)."""
        from .. import ndarray as nd
        from ..context import cpu
        if len(arrs) == 1:
            a = arrs[0]
            return a if a.context.device_type == "cpu" else a.as_in_context(cpu())
        if self._device:
            total = nd.add_n(*[a.as_in_context(arrs[0].context) for a in arrs])
            return total.as_in_context(cpu()) if total.context.device_type != "cpu" else total
        return nd.add_n(*[a.as_in_context(cpu()) for a in arrs])

    def _send_value(self, key, m, src, kind, threshold=None):
        """Sends ``src`` (a CPU array) to the servers holding ``key``; with
        ``threshold`` (2-bit compression) the values travel packed, 2 bits each."""
        ctx = self._ctx
        sid, sync = self._sid, self._sync
        shape, dtype = m.shape, m.dtype.str

        def run(op):
            mv = op.buffer(0)
            reqs, keep = [], []
            for p in m.parts:
                s, b0, b1 = p[0], p[1], p[2]
                part = _part_name(m, s)
                head = {"op": kind, "sid": sid, "key": key, "part": part,
                        "shape": m.part_shape(p), "dtype": dtype, "sync": sync}
                data = mv[b0:b1]
                if threshold is not None:
                    head["comp"] = threshold
                    data = _pack_2bit(np.frombuffer(data, dtype=np.float32))
                keep.append(data)
                reqs += ctx.request_async(s, head, [data])
            ctx.complete_when_sent(reqs, op, keep)
        return ctx.submit([src], [m.token], run)

    def push(self, key, value, priority=0):
        """Pushes values (a list per key sums first, on the first array's device for
        the ``_device`` types, else on the CPU); returns at once."""
        from .kvstore import _pairs
        keys, vals = _pairs(key, value, "push")
        self._check_keys(keys, "push")
        metas, sparse = [], []
        for k, v in zip(keys, vals):
            for a in v:
                if a.stype not in ("default", "row_sparse"):
                    raise MXNetError("push: key %r: %s values are not supported by oxnet's "
                                     "distributed stores (default and row_sparse only)"
                                     % (k, a.stype))
            m = self._meta(k, "push")
            self._check_value(m, v, "push", k)
            metas.append(m)
            sp = m.stype == "row_sparse" or any(a.stype == "row_sparse" for a in v)
            if sp and self._comp is not None:
                raise MXNetError("push: key %r: gradient compression is not supported for "
                                 "row_sparse values" % (k,))
            sparse.append(sp)
        if not self._sync and self._optimizer is None:
            raise MXNetError("push: dist_async stores need an optimizer on the servers "
                             "(set_optimizer) before the first push, as in MXNet")
        # the rows of every sparse value are read (and checked) before anything is sent
        rows = [None if not sp else
                _merge_rows([_rows_of(a, m, "push", k) for a in v], m.dtype, m.shape[1:])
                for k, v, m, sp in zip(keys, vals, metas, sparse)]
        for k, v, m, r in zip(keys, vals, metas, rows):
            m.pushes += 1
            if r is not None:
                self._send_rows(_wire_key(k), m, r[0], r[1])
                continue
            src = self._to_cpu(v)
            threshold = None
            if self._comp is not None:
                src = self._compress(_wire_key(k), m, src)
                threshold = self._threshold
            self._send_value(_wire_key(k), m, src, "push", threshold)

    def _send_rows(self, key, m, idx, data):
        """Sends the rows ``idx`` (sorted, unique) with values ``data`` of a row_sparse
        push: each server holding a part of the key gets the rows in its range (possibly
        none: every part takes part in every sync round), numbered from its first row."""
        ctx = self._ctx
        sid, sync, dtype = self._sid, self._sync, m.dtype.str
        msgs = []
        for p in m.parts:
            a, b = np.searchsorted(idx, [p[4], p[5]])
            li = np.ascontiguousarray(idx[a:b] - p[4], dtype=np.int64)
            ld = np.ascontiguousarray(data[a:b])
            head = {"op": "push_rsp", "sid": sid, "key": key, "part": _part_name(m, p[0]),
                    "shape": m.part_shape(p), "dtype": dtype, "sync": sync, "nrows": int(b - a)}
            msgs.append((p[0], head, [li, ld] if b > a else None))

        def run(op):
            reqs = []
            for (s, head, bufs) in msgs:
                reqs += ctx.request_async(s, head, bufs or [])
            ctx.complete_when_sent(reqs, op, msgs)
        return ctx.submit([], [m.token], run)

    def _compress(self, key, m, src):
        if m.dtype != np.float32:
            raise MXNetError("push: 2-bit gradient compression needs float32 values; key %r "
                             "holds %s" % (key, m.dtype))
        from .. import ndarray as nd
        h = self._comp
        if key not in self._comp_keys:
            h.init([key], [[nd.zeros(m.shape)]])
            self._comp_keys.add(key)
        h.push([key], [[src]])
        return h.stored(key)

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Pulls the servers' values into ``out`` (an array or a list of per-device
        arrays per key); returns at once, reads of ``out`` wait for the data."""
        from .kvstore import _pairs
        if out is None:
            raise MXNetError("pull: out is required")
        keys, outs = _pairs(key, out, "pull")
        self._check_keys(keys, "pull")
        if not ignore_sparse:
            raise MXNetError("pull: distributed stores do not support ignore_sparse=False (pull "
                             "row_sparse values with row_sparse_pull)")
        todo = []
        for k, o in zip(keys, outs):
            m = self._meta(k, "pull")
            dense = [a for a in o if a.stype == "default"]
            if len(dense) != len(o):
                # MXNet ignores sparse outputs of a pull, with a warning
                import warnings
                warnings.warn("pull: non-default outputs of key %r are ignored; use "
                              "row_sparse_pull for row_sparse values" % (k,), stacklevel=2)
            if not dense:
                continue
            if m.stype == "row_sparse":
                raise MXNetError("pull: key %r holds a row_sparse value: pull its rows with "
                                 "row_sparse_pull(key, out=..., row_ids=...)" % (k,))
            self._check_value(m, dense, "pull", k)
            todo.append((k, dense, m))
        for k, o, m in todo:
            self._pull_one(_wire_key(k), m, o)

    def _pull_one(self, key, m, outs):
        from .. import ndarray as nd
        ctx = self._ctx
        first = outs[0]
        direct = first.context.device_type == "cpu"
        target = first if direct else nd.empty(m.shape, dtype=m.dtype)
        sid = self._sid
        after = m.pushes

        def run(op):
            mv = op.buffer(0)
            left = [len(m.parts)]

            def done(_):
                with ctx.lock:
                    left[0] -= 1
                    last = left[0] == 0
                if last:
                    op.complete()
            for p in m.parts:
                tag = ctx.reply_tag()
                ctx.expect_reply(tag, mv[p[1]:p[2]], done)
                ctx.request_pull(p[0], {"op": "pull", "sid": sid, "key": key,
                                        "part": _part_name(m, p[0]), "reply": tag,
                                        "after": after})
        ctx.submit([], [target, m.token], run)
        for o in (outs if not direct else outs[1:]):
            target.copyto(o)

    def pushpull(self, key, value, out=None, priority=0):
        """``push`` then ``pull`` (into ``value`` when ``out`` is None)."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key, value, out, priority=0):
        """``init`` (worker 0's value) then ``pull`` into ``out``."""
        self.init(key, value)
        self.pull(key, out=out, priority=priority)

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):
        """Pulls the rows ``row_ids`` (an NDArray of row numbers, any shape, duplicates
        allowed; one per output, or one for all) of row_sparse keys into row_sparse
        ``out`` arrays: each output holds the requested rows (sorted, unique) after the
        call. Only those rows travel: each server sends the requested rows it holds.
        Returns at once, as ``pull`` does (reads of the outputs wait for the rows); the
        rows include this worker's earlier pushes of the key."""
        from .kvstore import _row_sparse_args
        from ..ndarray import NDArray
        keys, outs, ids = _row_sparse_args(key, out, row_ids)
        self._check_keys(keys, "row_sparse_pull")
        jobs = []
        for k, o, r in zip(keys, outs, ids):
            m = self._meta(k, "row_sparse_pull")
            if m.stype != "row_sparse":
                raise MXNetError("row_sparse_pull: key %r does not hold a row_sparse value "
                                 "(initialise it with a row_sparse array; pull dense keys with "
                                 "pull)" % (k,))
            rs = list(r) if isinstance(r, (list, tuple)) else [r] * len(o)
            if len(rs) != len(o):
                raise MXNetError("row_sparse_pull: key %r has %d outputs but %d row_ids"
                                 % (k, len(o), len(rs)))
            for x, rid in zip(o, rs):
                if x.stype != "row_sparse":
                    raise MXNetError("row_sparse_pull: the output for key %r must be row_sparse, "
                                     "got %s" % (k, x.stype))
                if not isinstance(rid, NDArray) or rid.stype != "default":
                    raise MXNetError("row_sparse_pull: row_ids of key %r must be dense NDArrays"
                                     % (k,))
            self._check_value(m, o, "row_sparse_pull", k)
            rows = m.shape[0] if m.shape else 1
            uniq = []
            for rid in rs:
                v = rid.asnumpy().reshape(-1)
                iv = v.astype(np.int64)
                if v.size and (not np.array_equal(iv, v) or iv.min() < 0 or iv.max() >= rows):
                    bad = [x for x in v.tolist() if x != int(x) or not 0 <= int(x) < rows][0]
                    raise MXNetError("row_sparse_pull: key %r: row id %s is out of range "
                                     "[0, %d)" % (k, bad, rows))
                uniq.append(np.unique(iv))
            jobs.append((k, o, m, uniq))
        for k, o, m, uniq in jobs:
            self._pull_rows(_wire_key(k), m, o, uniq)

    def _pull_rows(self, key, m, outs, uniq):
        """Pulls the union of the rows of ``uniq`` once, then fills every output with
        its rows."""
        from .. import ndarray as nd
        allrows = uniq[0] if len(uniq) == 1 else np.unique(np.concatenate(uniq))
        rowshape = m.shape[1:]
        data = nd.empty((int(allrows.size),) + rowshape, dtype=m.dtype)
        if allrows.size:
            ctx = self._ctx
            sid = self._sid
            after = m.pushes
            rowbytes = int(np.prod(rowshape)) * m.dtype.itemsize if rowshape else \
                m.dtype.itemsize
            msgs = []
            for p in m.parts:
                a, b = (int(x) for x in np.searchsorted(allrows, [p[4], p[5]]))
                if b > a:
                    li = np.ascontiguousarray(allrows[a:b] - p[4], dtype=np.int64)
                    msgs.append((p[0], a * rowbytes, b * rowbytes, li, b - a))

            def run(op):
                mv = op.buffer(0)
                left = [len(msgs)]

                def done(_):
                    with ctx.lock:
                        left[0] -= 1
                        last = left[0] == 0
                    if last:
                        op.complete()
                for (s, b0, b1, li, n) in msgs:
                    tag = ctx.reply_tag()
                    ctx.expect_reply(tag, mv[b0:b1], done)
                    ctx.request(s, {"op": "pull_rsp", "sid": sid, "key": key,
                                    "part": _part_name(m, s), "nrows": n, "reply": tag,
                                    "after": after}, li)
            ctx.submit([], [data, m.token], run)
        # the outputs are filled by engine operations after the pull's: the call returns
        # at once, as a dense pull does
        for x, u in zip(outs, uniq):
            if u.size == allrows.size:
                sel = data
            else:
                pos = nd.array(np.searchsorted(allrows, u), dtype=np.int64)
                sel = nd.take(data, pos, axis=0)
            res = nd.sparse.row_sparse_array((sel, nd.array(u, dtype=np.int64)), shape=m.shape,
                                             dtype=m.dtype)
            res.copyto(x)

    # -- servers --------------------------------------------------------------------

    def _send_command_to_servers(self, head, body):
        """Sends a command ``(head, body)`` to every server and waits until each has
        run it (head 0: a pickled optimizer to set)."""
        if isinstance(body, str):
            body = body.encode("latin-1")
        sid = self._sid
        self._ctx.call(list(range(self._ctx.num_servers)),
                       lambda s: {"op": "cmd", "sid": sid, "head": int(head), "body": bytes(body)})

    def set_optimizer(self, optimizer):
        """Ships ``optimizer`` to the servers (pickled by worker 0), which run its fused
        update on the summed gradients; every worker waits until it is set."""
        from .. import optimizer as opt
        if not isinstance(optimizer, opt.Optimizer):
            raise MXNetError("set_optimizer: expected an Optimizer, got %s"
                             % type(optimizer).__name__)
        try:
            data = pickle.dumps(optimizer, 0)
        except Exception as e:
            raise MXNetError("set_optimizer: the optimizer cannot be pickled for the servers: "
                             "%s" % e) from None
        if self.rank == 0:
            self._send_command_to_servers(0, data)
        self._optimizer = optimizer
        self._updater = opt.get_updater(optimizer)
        self.barrier()

    def set_gradient_compression(self, compression_params):
        """2-bit compression with residuals, as MXNet's: each worker adds its residual
        to the (device-summed) gradient, sends +threshold/-threshold/0 per element (2 bits
        each on the wire) and keeps the rest as the next residual; servers sum what
        arrives."""
        from .. import _core
        if not isinstance(compression_params, dict) or "type" not in compression_params:
            raise MXNetError("compression_params must be a dict with a 'type' entry")
        kind = str(compression_params["type"])
        if kind == "none":
            self._comp, self._compression = None, None
            return
        threshold = float(compression_params.get("threshold", 0.5))
        h = _core.KVStoreHandle("device")
        h.set_gradient_compression(kind, threshold)
        self._comp = h
        self._threshold = threshold
        self._comp_keys = set()
        self._compression = dict(compression_params)

    def _server_stats(self):
        """[{'sent': bytes of values the server has sent in replies to pulls}] per server
        (for tests and diagnostics)."""
        blobs = self._ctx.call(list(range(self._ctx.num_servers)), lambda s: {"op": "stats"})
        return [pickle.loads(b) for b in blobs]

    def _quiesce(self):
        """Waits until every worker's pushes so far have reached the servers: pending
        operations finish, a round trip to each server (messages of one sender arrive
        in order), then a barrier."""
        from .. import _core
        _core.waitall()
        self._ctx.call(list(range(self._ctx.num_servers)), lambda s: {"op": "ping"})
        self.barrier()

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Gathers the servers' optimizer states into ``fname`` (load it with
        ``load_optimizer_states`` in a job with as many servers)."""
        if self._optimizer is None:
            raise MXNetError("save_optimizer_states: no optimizer is set on the servers")
        self._quiesce()
        sid = self._sid
        blobs = self._ctx.call(list(range(self._ctx.num_servers)),
                               lambda s: {"op": "get_states", "sid": sid,
                                          "dump": bool(dump_optimizer)})
        with open(fname, "wb") as f:
            pickle.dump({"oxnet_dist_states": blobs}, f)

    def load_optimizer_states(self, fname):
        """Sends the states saved by ``save_optimizer_states`` back to the servers."""
        if self._optimizer is None:
            raise MXNetError("load_optimizer_states: no optimizer is set on the servers")
        with open(fname, "rb") as f:
            try:
                saved = pickle.load(f)
            except Exception as e:
                raise MXNetError("load_optimizer_states: %s is not a distributed store's "
                                 "optimizer states (%s)" % (fname, e)) from None
        blobs = saved.get("oxnet_dist_states") if isinstance(saved, dict) else None
        if blobs is None or len(blobs) != self._ctx.num_servers:
            raise MXNetError("load_optimizer_states: %s holds states of %s servers, this job "
                             "has %d" % (fname, None if blobs is None else len(blobs),
                                         self._ctx.num_servers))
        self._quiesce()
        if self.rank == 0:
            sid = self._sid
            self._ctx.call(list(range(self._ctx.num_servers)),
                           lambda s: {"op": "set_states", "sid": sid, "states": blobs[s]})
        self.barrier()


# -- the server -----------------------------------------------------------------

def _server_failed(ctx, e):
    """A server thread or loop failed: print why and end the whole MPI job."""
    import traceback
    traceback.print_exc()
    sys.stderr.write("oxnet kvstore server %d (MPI rank %d) failed: %s\n"
                     % (ctx.rank, ctx.world.rank, e))
    sys.stderr.flush()
    ctx.world.Abort(1)


class _Server:
    """A server rank's loop (see the module docs)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.stores = {}      # (sid, part) -> local KVStore
        self.optimizers = {}  # sid -> pickled optimizer
        self.meta = {}        # (sid, key, part) -> (shape, dtype)
        self.queued = {}      # (sid, key, part) -> [list per worker] of pushed arrays
        self.deferred = {}    # (sid, key, part) -> [(worker, header)] pulls waiting
        self.applied = {}     # (sid, key, part) -> [pushes applied, per worker]
        self.waiting = {}     # (sid, key, part) -> [(worker, header, array)] before init
        self.stopped = set()
        self.sent = 0         # bytes of values sent to workers (pulls)
        # receive buffers of dense pushes, reused round after round: (key part, worker)
        # -> free arrays (an array is written again only after the engine has run the
        # sum or update that read it, as the receive is an engine write)
        self.pool = {}
        # replies with values go out on their own thread, so that the loop goes on
        # receiving while a worker takes its values
        import queue
        self.replies = {src: queue.SimpleQueue() for src in ctx.workers}
        self.repliers = [threading.Thread(target=self._reply_loop, args=(q,),
                                          name="oxnet-kv-reply-%d" % w, daemon=True)
                         for w, q in enumerate(self.replies.values())]
        for t in self.repliers:
            t.start()

    def _reply_loop(self, q):
        """Sends one worker's pulled values, in request order. Up to ``_REPLY_DEPTH``
        sends are in flight at once, so that the worker takes the next value while this
        server is busy elsewhere (receiving pushes); a send's read of the stored value
        ends when the send is done. Before waiting for a value that is not ready yet
        (its round's sum), the sends in flight are finished first: that sum may be
        waiting for their reads."""
        import collections
        MPI = self.ctx.MPI
        pending = collections.deque()

        def finish_one():
            req, op, _buf = pending.popleft()
            req.Wait()
            if op is not None:
                op.complete()
        try:
            while True:
                if pending and (len(pending) >= _REPLY_DEPTH or q.empty()):
                    finish_one()
                    continue
                item = q.get()
                if item is None:
                    while pending:
                        finish_one()
                    return
                op, buf, dest, tag = item
                if op is not None:
                    if not op.wait_ready(0):
                        while pending:
                            finish_one()
                        op.wait_ready()
                    buf = op.buffer(0)
                try:
                    req = self.ctx.rep.Isend([buf, MPI.BYTE], dest=dest, tag=tag)
                except BaseException:
                    if op is not None:
                        op.complete()
                    raise
                pending.append((req, op, buf))
        except BaseException as e:  # noqa: BLE001 - a dead server must end the job
            import traceback
            traceback.print_exc()
            sys.stderr.write("oxnet kvstore server %d (MPI rank %d): the reply thread failed: "
                             "%s\n" % (self.ctx.rank, self.ctx.world.rank, e))
            sys.stderr.flush()
            self.ctx.world.Abort(1)

    def store(self, sid, part):
        st = self.stores.get((sid, part))
        if st is None:
            from .. import _core
            from .kvstore import KVStore
            st = KVStore(_core.KVStoreHandle("local"), "local")
            if sid in self.optimizers:
                st.set_optimizer(pickle.loads(self.optimizers[sid]))
            self.stores[(sid, part)] = st
        return st

    def run(self):
        """Serves until every worker has stopped: one thread per worker receives its
        requests and their data (the receives from different workers run at once, the
        GIL released in MPI), then handles each under the server's lock; a reply thread
        sends the values."""
        self.lock = threading.Lock()
        # the loop runs at the end of ``import oxnet``, which never returns on a server:
        # every oxnet module is loaded by now, so the package is marked initialised
        # (the serving threads' imports would otherwise wait for this import forever)
        for name, mod in list(sys.modules.items()):
            spec = getattr(mod, "__spec__", None)
            if (name == "oxnet" or name.startswith("oxnet.")) and \
                    getattr(spec, "_initializing", False):
                spec._initializing = False
        threads = [threading.Thread(target=self._serve, args=(w, src), daemon=True,
                                    name="oxnet-kv-serve-%d" % w)
                   for w, src in enumerate(self.ctx.workers)]
        puller = threading.Thread(target=self._serve_pulls, daemon=True,
                                  name="oxnet-kv-serve-pulls")
        for t in threads + [puller]:
            t.start()
        for t in threads:
            t.join()
        # every worker has stopped: no pull request is left on its way
        self.ctx.preq.send(None, dest=self.ctx.world.rank, tag=_TAG_STOP)
        puller.join()
        for q in self.replies.values():
            q.put(None)
        for t in self.repliers:
            t.join()

    def _serve_pulls(self):
        """Receives the dense pull requests of every worker (their own communicator:
        they are seen while the pushes sent before them are still arriving)."""
        MPI = self.ctx.MPI
        st = MPI.Status()
        index = {src: w for w, src in enumerate(self.ctx.workers)}
        try:
            while True:
                h = self.ctx.preq.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=st)
                if st.Get_tag() == _TAG_STOP:
                    return
                src = st.Get_source()
                with self.lock:
                    self.handle(index[src], src, h, None)
        except BaseException as e:  # noqa: BLE001 - a dead server must end the job
            _server_failed(self.ctx, e)

    def _serve(self, w, src):
        try:
            while True:
                h = self.ctx.req.recv(source=src, tag=_TAG_REQ)
                arr = None
                if h["op"] in ("init", "push"):
                    arr = self.receive(src, w, h)
                elif h["op"] in ("push_rsp", "pull_rsp"):
                    arr = self.receive_rows(src, h)
                with self.lock:
                    self.handle(w, src, h, arr)
                if h["op"] == "stop":
                    return
        except BaseException as e:  # noqa: BLE001 - a dead server must end the job
            _server_failed(self.ctx, e)

    def _buffer(self, h, w):
        from .. import ndarray as nd
        shape, dt = tuple(h["shape"]), np.dtype(h["dtype"])
        if h["op"] == "push":
            with self.lock:
                free = self.pool.get(((h["sid"], h["key"], h["part"]), w))
                while free:
                    a = free.pop()
                    if a.shape == shape and np.dtype(a.dtype) == dt:
                        return a
        return nd.empty(shape, dtype=dt)

    def _release(self, kp, vals):
        for w, a in enumerate(vals):
            if a is not None and not isinstance(a, tuple):
                self.pool.setdefault((kp, w), []).append(a)

    def receive(self, src, w, h):
        arr = self._buffer(h, w)
        op = _comm()._comm_op([], [arr])
        op.wait_ready()
        try:
            if h.get("comp") is None:
                self.ctx.req.Recv([op.buffer(0), self.ctx.MPI.BYTE], source=src, tag=_TAG_DATA)
            else:
                n = arr.size
                packed = np.empty(-(-n // 4), dtype=np.uint8)
                self.ctx.req.Recv([packed, self.ctx.MPI.BYTE], source=src, tag=_TAG_DATA)
                _unpack_2bit(packed, n, h["comp"], np.frombuffer(op.buffer(0), dtype=np.float32))
        finally:
            op.complete()
        return arr

    def receive_rows(self, src, h):
        """The (row numbers, rows) of a row_sparse push, or the row numbers of a
        row_sparse pull (rows None)."""
        n = h["nrows"]
        idx = np.empty(n, dtype=np.int64)
        if n:
            self.ctx.req.Recv([idx, self.ctx.MPI.BYTE], source=src, tag=_TAG_DATA)
        if h["op"] == "pull_rsp":
            return idx, None
        data = np.empty((n,) + tuple(h["shape"])[1:], dtype=np.dtype(h["dtype"]))
        if n:
            self.ctx.req.Recv([data, self.ctx.MPI.BYTE], source=src, tag=_TAG_DATA)
        return idx, data

    def reply_array(self, src, tag, arr):
        # the read op is taken here, in request order; the reply thread sends once the
        # value is ready (after the sum or update of the round)
        op = _comm()._comm_op([arr], [])
        self.sent += arr.size * np.dtype(arr.dtype).itemsize
        self.replies[src].put((op, None, src, tag))

    def reply_bytes(self, src, tag, data):
        self.ctx.rep.Send([data, self.ctx.MPI.BYTE], dest=src, tag=tag)

    def handle(self, w, src, h, arr):
        op = h["op"]
        if op == "ping":
            self.reply_bytes(src, h["reply"], b"\0")
            return
        if op == "stats":
            self.reply_bytes(src, h["reply"], pickle.dumps({"sent": self.sent}))
            return
        if op == "stop":
            self.stopped.add(w)
            self.reply_bytes(src, h["reply"], b"\0")
            return
        if op == "cmd":
            if h["head"] == 0:
                self.set_optimizer(h["sid"], h["body"])
            else:
                print("server %d, unknown command (%d, %s)" % (self.ctx.rank, h["head"], h["body"]))
                sys.stdout.flush()
            self.reply_bytes(src, h["reply"], b"\0")
            return
        if op == "get_states":
            out = {}
            for (sid, part), s in self.stores.items():
                if sid == h["sid"] and s._updater is not None:
                    out[part] = s._updater.get_states(h["dump"])
            self.reply_bytes(src, h["reply"], pickle.dumps(out))
            return
        if op == "set_states":
            for part, blob in pickle.loads(h["states"]).items():
                s = self.store(h["sid"], part)
                if s._updater is not None:
                    s._updater.set_states(blob)
                    if s._optimizer is not None:
                        s._optimizer = s._updater.optimizer
            self.reply_bytes(src, h["reply"], b"\0")
            return
        kp = (h["sid"], h["key"], h["part"])
        if op == "init":
            if kp not in self.meta:
                self.store(h["sid"], h["part"]).init(h["key"], arr)
                self.meta[kp] = (tuple(h["shape"]), h["dtype"])
                self.queued[kp] = [[] for _ in range(self.ctx.num_workers)]
                self.applied[kp] = [0] * self.ctx.num_workers
            for (w2, src2, h2, a2) in self.waiting.pop(kp, []):
                self.handle(w2, src2, h2, a2)
            return
        if kp not in self.meta:
            # the init from worker 0 is still on its way
            self.waiting.setdefault(kp, []).append((w, src, h, arr))
            return
        done = self.applied[kp]
        if op in ("push", "push_rsp"):
            if not h["sync"]:
                self.apply(h, kp, [arr])
                done[w] += 1
                if not isinstance(arr, tuple):
                    self.pool.setdefault((kp, w), []).append(arr)
            else:
                q = self.queued[kp]
                q[w].append(arr)
                while all(q):
                    vals = [x.pop(0) for x in q]
                    self.apply(h, kp, vals)
                    self._release(kp, vals)
                    for i in range(len(done)):
                        done[i] += 1
            if kp in self.deferred:
                left = []
                for (w2, src2, h2) in self.deferred.pop(kp):
                    if done[w2] < h2.get("after", 0):
                        left.append((w2, src2, h2))
                    else:
                        self.answer_pull(src2, h2)
                if left:
                    self.deferred[kp] = left
            return
        if op in ("pull", "pull_rsp"):
            # a pull sees the puller's pushes before it (it names their count; dense
            # pulls may arrive before those pushes)
            if op == "pull_rsp":
                h = dict(h, rows=arr[0])
            if done[w] < h.get("after", 0):
                self.deferred.setdefault(kp, []).append((w, src, h))
            else:
                self.answer_pull(src, h)
            return
        raise MXNetError("kvstore server: unknown request %r" % (op,))

    def answer_pull(self, src, h):
        s = self.store(h["sid"], h["part"])
        stored = s.handle.stored(h["key"])
        if h["op"] == "pull":
            self.reply_array(src, h["reply"], stored)
            return
        # a row_sparse pull: only the requested rows travel
        shape, dt = self.meta[(h["sid"], h["key"], h["part"])]
        op = _comm()._comm_op([stored], [])
        op.wait_ready()
        try:
            rows = np.frombuffer(op.buffer(0), dtype=np.dtype(dt)).reshape(shape)[h["rows"]]
        finally:
            op.complete()
        rows = np.ascontiguousarray(rows)
        self.sent += rows.nbytes
        self.replies[src].put((None, rows, src, h["reply"]))

    def apply(self, h, kp, vals):
        """Merges one round of pushes (one per worker in sync mode) into the stored
        value: dense pushes are summed by the store (or its optimizer runs on the sum);
        row_sparse pushes are summed row by row, then the optimizer updates the stored
        weight with that row_sparse gradient (lazily: only those rows, as MXNet's sparse
        updates), or without an optimizer the pushed rows take their sums."""
        from .. import ndarray as nd
        st = self.store(h["sid"], h["part"])
        key = h["key"]
        if all(not isinstance(v, tuple) for v in vals):
            st.push(key, vals)
            return
        shape, dt = self.meta[kp]
        dt = np.dtype(dt)
        if any(not isinstance(v, tuple) for v in vals):
            # dense and row_sparse pushes in one round: all summed densely
            dense = []
            for v in vals:
                if isinstance(v, tuple):
                    a = np.zeros(shape, dtype=dt)
                    a[v[0]] = v[1]
                    v = nd.array(a, dtype=dt)
                dense.append(v)
            st.push(key, dense)
            return
        idx, data = _merge_rows(list(vals), dt, shape[1:])
        stored = st.handle.stored(key)
        if st._updater is not None:
            from .kvstore import _updater_key
            grad = nd.sparse.row_sparse_array(
                (nd.array(data, dtype=dt), nd.array(idx, dtype=np.int64)), shape=shape, dtype=dt)
            st._updater(_updater_key(key), grad, stored)
            return
        op = _comm()._comm_op([], [stored])
        op.wait_ready()
        try:
            np.frombuffer(op.buffer(0), dtype=dt).reshape(shape)[idx] = data
        finally:
            op.complete()

    def set_optimizer(self, sid, body):
        self.optimizers[sid] = body
        # one optimizer object per part store: update counts are per object
        for (s_id, part), s in self.stores.items():
            if s_id == sid:
                s.set_optimizer(pickle.loads(body))


def start_server_if_needed():
    """Runs the server loop and exits the process when this process is a server rank
    of a distributed job; sets up the MPI context of a worker rank (so that servers
    know when it finishes). Called at the end of ``import oxnet``."""
    if not _is_dist_job():
        return
    r = role()
    if r == "scheduler":
        # MXNet's ps-lite scheduler has no counterpart in an MPI job
        sys.exit(0)
    if _env_int(_ENV_RANK) is None and os.environ.get("DMLC_ROLE") != "server":
        # not launched by an MPI launcher: a worker starts MPI when it creates a store
        return
    ctx = context()
    if ctx.role != "server":
        return
    if ctx.problem is not None:
        sys.stderr.write("oxnet kvstore server: %s\n" % ctx.problem)
        sys.exit(1)
    try:
        _Server(ctx).run()
    except BaseException as e:  # noqa: BLE001 - a dead server must end the job
        _server_failed(ctx, e)
    sys.exit(0)
