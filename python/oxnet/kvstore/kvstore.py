"""``mx.kv``: the key-value store for data synchronisation (MXNet's KVStore).

The store lives in Rust (``_core.KVStoreHandle``): its key table is lock-free, pushes
sum the arrays given for a key as engine operations, pulls copy the stored value
into every output. This module turns MXNet's argument forms (one key or a list of
keys; for each key one array or a list of per-device arrays) into the handle's
calls, and runs a Python updater set with ``_set_updater`` during ``push``.

With ``set_optimizer`` the optimizer's fused update op (``sgd_mom_update``, ...; for
LAMB its two phases) runs inside the store in the same Rust call, the sum of the
pushed arrays fused into the update's loop; the per-key learning rate
and weight decay (schedule, ``lr_mult``) are computed by the Optimizer object as in
MXNet.
"""

from ..base import MXNetError
from ..ndarray import NDArray
from .. import optimizer as opt
from .base import KVStoreBase

__all__ = ["KVStore"]


def _is_key(k):
    return isinstance(k, (int, str, bytes)) and not isinstance(k, bool) or hasattr(k, "__index__")


def _arrays(v, what, key):
    if isinstance(v, NDArray):
        return [v]
    if isinstance(v, (list, tuple)) and all(isinstance(x, NDArray) for x in v):
        return list(v)
    raise MXNetError("%s: the value of key %r must be an NDArray or a list of NDArrays, got %s"
                     % (what, key, type(v).__name__))


def _pairs(key, value, what):
    """MXNet's forms to ([keys], [[arrays]])."""
    if isinstance(key, (list, tuple)):
        keys = list(key)
        if not isinstance(value, (list, tuple)):
            raise MXNetError("%s: %d keys need a list of %d values, got %s"
                             % (what, len(keys), len(keys), type(value).__name__))
        if len(value) != len(keys):
            # a flat list of arrays for one key per device is only valid for one key
            raise MXNetError("%s: %d keys but %d values (the value list must have one entry per key)"
                             % (what, len(keys), len(value)))
        vals = [_arrays(v, what, k) for k, v in zip(keys, value)]
    else:
        keys = [key]
        vals = [_arrays(value, what, key)]
    for k in keys:
        if not _is_key(k):
            raise MXNetError("%s: keys must be int or str, got %s" % (what, type(k).__name__))
    kinds = {isinstance(k, (str, bytes)) for k in keys}
    if len(kinds) > 1:
        raise MXNetError("%s: Mixed key types are not allowed (keys %r)" % (what, keys))
    return keys, vals



def _row_sparse_args(key, out, row_ids):
    """``row_sparse_pull``'s arguments as (keys, outs, row_ids per key), every store's
    checks of them in one place."""
    if out is None:
        raise MXNetError("row_sparse_pull: out is required")
    if row_ids is None:
        raise MXNetError("row_sparse_pull: row_ids is required")
    keys, outs = _pairs(key, out, "row_sparse_pull")
    if not isinstance(key, (list, tuple)):
        return keys, outs, [row_ids]
    ids = list(row_ids) if isinstance(row_ids, (list, tuple)) else [row_ids]
    if len(ids) != len(keys):
        raise MXNetError("row_sparse_pull: %d keys need %d row_ids entries, got %d"
                         % (len(keys), len(keys), len(ids)))
    return keys, outs, ids

def _updater_key(k):
    # MXNet hands string keys to Python updaters as bytes
    return k.encode() if isinstance(k, str) else k


class KVStore(KVStoreBase):
    """A key-value store: ``init``, ``push``, ``pull``, ``pushpull``, ``broadcast``;
    an updater (``_set_updater``) or an optimizer (``set_optimizer``) merges pushes.
    ``type`` is the name it was created with (``'local_allreduce_cpu'``, ...)."""

    def __init__(self, handle, name=None):
        self.handle = handle
        self._type_name = name
        self._updater = None
        self._updater_func = None
        self._optimizer = None
        self._compression = None
        # keys initialised with a row_sparse value: key -> the stored RowSparseNDArray
        # (sums and updates run as registry ops: add_n, the optimizer's lazy update,
        # _sparse_retain for row_sparse_pull)
        self._sparse = {}

    # -- properties -----------------------------------------------------------------

    @property
    def type(self):
        """The type of this store, as named when it was created ('local', 'device',
        'local_allreduce_cpu', ...)."""
        return self._type_name or self.handle.type

    @staticmethod
    def is_capable(capability):
        """Whether this store type supports ``capability``: the native stores run
        optimizers (``KVStoreBase.OPTIMIZER``); ValueError for an unknown capability."""
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return True
        raise ValueError("Unknown capability: {}".format(capability))

    @property
    def rank(self):
        """The rank of this worker node (0 for single-machine stores)."""
        return 0

    @property
    def num_workers(self):
        """The number of worker nodes (1 for single-machine stores)."""
        return 1

    def barrier(self):
        """Synchronises all workers (nothing to wait for with one worker)."""

    _barrier = barrier

    def _send_command_to_servers(self, head, body):
        """No servers in a single-machine store."""

    # -- data -----------------------------------------------------------------------

    def _check_key_kind(self, keys, what):
        known = list(self._sparse) + list(getattr(self.handle, "keys", lambda: [])())
        if known and keys:
            if isinstance(known[0], (str, bytes)) != isinstance(keys[0], (str, bytes)):
                raise MXNetError("%s: Mixed key types are not allowed: the store has %s keys, got %r"
                                 % (what, "string" if isinstance(known[0], (str, bytes)) else "integer", keys[0]))

    def init(self, key, value):
        """Initialises one key or a list of keys with values (copied into the store); a
        row_sparse value makes a row_sparse key (see ``row_sparse_pull``)."""
        keys, vals = _pairs(key, value, "init")
        self._check_key_kind(keys, "init")
        dense_keys, first = [], []
        for k, v in zip(keys, vals):
            if v[0].stype == "row_sparse":
                if k in self._sparse:
                    raise MXNetError("init: key %r has been initialized already" % (k,))
                self._sparse[k] = v[0].copy()
            elif v[0].stype != "default":
                raise MXNetError("init: the value of key %r has storage type %s; the store holds "
                                 "default and row_sparse values" % (k, v[0].stype))
            else:
                dense_keys.append(k)
                first.append([v[0]])
        if dense_keys:
            self.handle.init(dense_keys, first)

    def _split_sparse(self, keys, vals):
        """(dense keys, their values) and [(sparse key, values)]; row_sparse values
        pushed to a dense key are cast to dense."""
        dk, dv, sp = [], [], []
        for k, v in zip(keys, vals):
            if k in self._sparse:
                sp.append((k, v))
            else:
                dk.append(k)
                dv.append([x.tostype("default") if x.stype != "default" else x for x in v])
        return dk, dv, sp

    def _push_sparse(self, k, v):
        from ..ndarray import sparse as _sp
        from .. import ndarray as _nd
        stored = self._sparse[k]
        v = [x if x.stype == "row_sparse" else x.tostype("row_sparse") for x in v]
        v = [x if x.context == stored.context else x.copyto(stored.context) for x in v]
        merged = v[0].copy() if len(v) == 1 else _nd.add_n(*v)
        if self._updater is not None:
            self._updater(_updater_key(k), merged, stored)
        else:
            merged.copyto(stored)
        del _sp

    def push(self, key, value, priority=0):
        """Pushes one value or a list of per-device values for each key: they are
        summed, then the updater (if any) merges the sum into the stored value, else
        the sum replaces it."""
        keys, vals = _pairs(key, value, "push")
        self._check_key_kind(keys, "push")
        keys, vals, sparse = self._split_sparse(keys, vals)
        for k, v in sparse:
            self._push_sparse(k, v)
        if not keys:
            return
        if self._optimizer is not None:
            ops, attrs, states, second = [], [], [], []
            for k in keys:
                op, a, s, s2 = self._fused_step(k)
                ops.append(op)
                attrs.append(a)
                states.append(s)
                second.append(s2)
            if any(s2 is not None for s2 in second):
                self.handle.push_update(keys, vals, ops, attrs, states, second)
            else:
                self.handle.push_update(keys, vals, ops, attrs, states)
        elif self._updater is not None:
            # every sum is pushed (and checked) before any updater runs
            merged = [self.handle.reduce(k, v) for k, v in zip(keys, vals)]
            for k, m in zip(keys, merged):
                self._updater(_updater_key(k), m, self.handle.stored(k))
        else:
            self.handle.push(keys, vals)

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copies the stored value of each key into ``out`` (one array or a list of
        per-device arrays per key)."""
        if out is None:
            raise MXNetError("pull: out is required")
        keys, outs = _pairs(key, out, "pull")
        self._check_key_kind(keys, "pull")
        dk, do = [], []
        for k, o in zip(keys, outs):
            if k in self._sparse:
                if ignore_sparse:
                    continue
                for x in o:
                    self._sparse[k].copyto(x)
                continue
            # a sparse output of a dense key is ignored with ignore_sparse (MXNet's
            # pull); otherwise it gets the value cast
            dense_o = [x for x in o if x.stype == "default"]
            if not ignore_sparse:
                for x in o:
                    if x.stype != "default":
                        self.handle.stored(k).copyto(x)
            if dense_o:
                dk.append(k)
                do.append(dense_o)
        if dk:
            self.handle.pull(dk, do)

    def pushpull(self, key, value, out=None, priority=0):
        """``push`` then ``pull`` (into ``value`` when ``out`` is None)."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority, ignore_sparse=False)

    def broadcast(self, key, value, out, priority=0):
        """Initialises keys with ``value`` and pulls them into ``out``."""
        self.init(key, value)
        self.pull(key, out=out, priority=priority)

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):
        """Pulls the rows ``row_ids`` of row_sparse keys into row_sparse ``out`` arrays
        (one ``row_ids`` array per output; duplicates allowed, any shape)."""
        keys, outs, ids = _row_sparse_args(key, out, row_ids)
        self._check_key_kind(keys, "row_sparse_pull")
        from .. import ndarray as _nd
        for k, o, r in zip(keys, outs, ids):
            if k not in self._sparse:
                raise MXNetError("row_sparse_pull: key %r does not hold a row_sparse value "
                                 "(initialise it with a row_sparse array)" % (k,))
            rs = r if isinstance(r, (list, tuple)) else [r] * len(o)
            if len(rs) != len(o):
                raise MXNetError("row_sparse_pull: key %r has %d outputs but %d row_ids"
                                 % (k, len(o), len(rs)))
            for x, rid in zip(o, rs):
                if x.stype != "row_sparse":
                    raise MXNetError("row_sparse_pull: the output for key %r must be row_sparse, "
                                     "got %s" % (k, x.stype))
                if not isinstance(rid, NDArray):
                    raise MXNetError("row_sparse_pull: row_ids must be NDArrays")
                flat = rid.reshape((-1,)) if rid.ndim != 1 else rid
                stored = self._sparse[k]
                if stored.context != x.context:
                    stored = stored.copyto(x.context)
                    flat = flat.as_in_context(x.context)
                _nd.sparse.retain(stored, flat.as_in_context(stored.context)).copyto(x)

    # -- updaters -------------------------------------------------------------------

    def _set_updater(self, updater):
        """Sets a Python function ``updater(key, merged, stored)`` called during push."""
        self._optimizer = None
        self._updater = updater
        self._updater_func = updater

    def _fused_step(self, key):
        """(op name, attrs, state arrays, second phase or None) of the optimizer's
        update for ``key``."""
        upd = self._updater
        index = _updater_key(key)
        weight = self.handle.stored(key)
        if index not in upd.states:
            upd.states[index] = self._optimizer.create_state_multi_precision(index, weight)
            upd.states_synced[index] = True
        elif not upd.states_synced.get(index, True):
            upd.states[index] = upd.sync_state_context(upd.states[index], weight.context)
            upd.states_synced[index] = True
        return self._optimizer._fused_ops(index, weight, upd.states[index])

    def set_optimizer(self, optimizer):
        """Registers an optimizer with the store: every push then runs the optimizer's
        fused update op on the stored weights inside the store."""
        if not isinstance(optimizer, opt.Optimizer):
            raise MXNetError("set_optimizer: expected an Optimizer, got %s" % type(optimizer).__name__)
        updater = opt.get_updater(optimizer)
        if optimizer._has_fused_op():
            self._updater = updater
            self._optimizer = optimizer
        else:
            self._set_updater(updater)

    def set_gradient_compression(self, compression_params):
        """Turns on gradient compression: ``{'type': '2bit', 'threshold': 0.5}``
        (``device`` stores; a ``local`` store refuses, as MXNet's does)."""
        if self.handle.type == "local":
            raise MXNetError("Gradient compression is not supported for this type of kvstore")
        if not isinstance(compression_params, dict) or "type" not in compression_params:
            raise MXNetError("compression_params must be a dict with a 'type' entry")
        kind = str(compression_params["type"])
        threshold = float(compression_params.get("threshold", 0.5))
        self.handle.set_gradient_compression(kind, threshold)
        self._compression = dict(compression_params)

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Saves the optimizer (updater) state to a file."""
        if self._updater is None or not hasattr(self._updater, "get_states"):
            raise MXNetError("Cannot save states for distributed training" if self._updater is None
                             else "save_optimizer_states: the updater is a plain function")
        with open(fname, "wb") as fout:
            fout.write(self._updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname):
        """Loads the optimizer (updater) state from a file."""
        if self._updater is None or not hasattr(self._updater, "set_states"):
            raise MXNetError("Cannot load states for distributed training")
        with open(fname, "rb") as f:
            self._updater.set_states(f.read())
        if self._optimizer is not None:
            self._optimizer = self._updater.optimizer

