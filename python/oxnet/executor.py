"""``Executor``: a symbol bound to arrays. The graph runs in Rust
(``oxnet._core.ExecutorHandle``): one call per ``forward`` and per ``backward``;
intermediate buffers are planned at bind time so dead ones are reused.

``group2ctx`` places nodes by their ``ctx_group`` attribute (``mx.AttrScope``);
``shared_exec`` with ``shared_arg_names`` shares parameter and gradient arrays
between executors, as MXNet's bucketing does; ``set_monitor_callback`` (and
``mx.monitor.Monitor``) sees the arrays of every node as the graph runs."""

import numpy as np

from . import _core
from .base import MXNetError, MXNetValueError
from .base import dtype_name
from .context import Context
from .ndarray import NDArray
from . import ndarray as nd

_REQS = ("write", "add", "null")


def _as_list(values, names, what, allow_missing=False):
    """Arrays in ``names`` order from a list or a dict; missing ones are errors
    listing their names (or None when ``allow_missing``). As in MXNet, a dict may
    hold more names than the symbol uses (a full ``arg_params``): those are ignored."""
    if values is None:
        values = {}
    if isinstance(values, dict):
        missing = [n for n in names if values.get(n) is None]
        if missing and not allow_missing:
            raise MXNetValueError("%s: no array given for %s (expected names are %s)"
                                  % (what, ", ".join(repr(m) for m in missing), names))
        out = [values.get(n) for n in names]
    else:
        out = list(values)
        if len(out) != len(names):
            if len(out) < len(names) and not allow_missing:
                raise MXNetValueError("%s: %d arrays given, %d needed; missing %s"
                                 % (what, len(out), len(names),
                                    ", ".join(repr(m) for m in names[len(out):])))
            if len(out) > len(names):
                raise MXNetValueError("%s: %d arrays given, %d needed (%s)"
                                 % (what, len(out), len(names), names))
            out += [None] * (len(names) - len(out))
    for n, a in zip(names, out):
        if a is not None and not isinstance(a, NDArray):
            raise TypeError("%s: the array for '%s' must be an NDArray, got %s" % (what, n, type(a).__name__))
    return out


def _dense_args(arrays):
    """The executor computes on dense storage: sparse arguments are bound as dense
    copies of their values (graph ops then take their dense forms)."""
    return [a.tostype("default") if a is not None and a.stype != "default" else a for a in arrays]


_STYPE_NAMES = {"0": "default", "1": "row_sparse", "2": "csr"}


def _arg_stypes(symbol, stype_dict):
    """The storage types of the arguments simple_bind allocates: ``stype_dict``'s, else
    the variable's ``stype`` (its ``__storage_type__`` attribute), else default."""
    out = {}
    for name, attrs in symbol.attr_dict().items():
        code = attrs.get("__storage_type__")
        if code is not None:
            out[name] = _STYPE_NAMES.get(str(code).strip(), "default")
    if stype_dict is not None:
        if not isinstance(stype_dict, dict):
            raise MXNetError("simple_bind: stype_dict must be a dict, got %s" % type(stype_dict).__name__)
        for name, st in stype_dict.items():
            if st not in ("default", "row_sparse", "csr"):
                raise MXNetError("simple_bind: unknown storage type %r for '%s'" % (st, name))
            out[name] = st
    return out


def _with_dtypes(symbol, type_dict, inputs):
    """The symbol, or a copy whose variables named in ``type_dict`` carry those dtypes,
    so that shape inference sees them (ops such as batch_take check their index
    dtype), as MXNet's simple_bind infers with the given types."""
    from .symbol.symbol import _DTYPE_CODES
    if not type_dict:
        return symbol
    if not isinstance(type_dict, dict):
        raise MXNetError("simple_bind: type_dict must be a dict, got %s" % type(type_dict).__name__)
    named = {k: v for k, v in type_dict.items() if k in inputs}
    if not named:
        return symbol
    out = symbol.__copy__()
    internals = out.get_internals()
    for k, v in named.items():
        try:
            code = _DTYPE_CODES[dtype_name(v)]
        except (TypeError, KeyError):
            raise MXNetError("simple_bind: unsupported dtype %r for '%s' in type_dict" % (v, k))
        internals[k]._set_attr(__dtype__=str(code))
    return out


def _groups(group2ctx):
    """``group2ctx`` checked: {group name: Context}."""
    if not group2ctx:
        return {}
    if not isinstance(group2ctx, dict):
        raise MXNetError("group2ctx must be a dict of group name to Context, got %s" % type(group2ctx).__name__)
    out = {}
    for g, c in group2ctx.items():
        if not isinstance(c, Context):
            raise MXNetError("group2ctx: the context of group '%s' must be a Context, got %r" % (g, c))
        out[str(g)] = c
    return out


def _check_shared(shared_exec):
    if shared_exec is not None and not isinstance(shared_exec, Executor):
        raise MXNetError("shared_exec must be an Executor, got %s" % type(shared_exec).__name__)


def _from_buffer(buf, key, shape, dtype, ctx):
    """An array of ``shape`` from the shared buffer: a view of the stored one when it
    is large enough, else a new array that replaces it (MXNet's shared_buffer)."""
    size = int(np.prod(shape))
    have = buf.get(key)
    if have is not None and np.dtype(have.dtype) == np.dtype(dtype) and have.size >= size:
        return have.reshape((-1,))[:size].reshape(shape) if tuple(have.shape) != tuple(shape) else have
    a = nd.zeros(shape, ctx=ctx, dtype=dtype)
    buf[key] = a
    return a


def _placer(symbol, ctx, groups, what):
    """``place(name)``: the context of variable ``name`` -- its ``ctx_group``'s device
    in ``groups`` (a checked group2ctx), else ``ctx`` -- as MXNet places arrays."""
    attrs = symbol.attr_dict() if groups else {}

    def place(name):
        g = attrs.get(name, {}).get("__ctx_group__")
        if g is None:
            return ctx
        if g not in groups:
            raise MXNetError("%s: the device assignment for group '%s' of '%s' is not found "
                             "in group2ctx (it maps %s)" % (what, g, name, ", ".join(sorted(groups))))
        return groups[g]
    return place


def _reqs(grad_req, names):
    if isinstance(grad_req, str):
        reqs = [grad_req] * len(names)
    elif isinstance(grad_req, dict):
        # names that are not arguments are ignored, as in MXNet
        reqs = [grad_req.get(n, "null") for n in names]
    else:
        reqs = list(grad_req)
        if len(reqs) != len(names):
            raise MXNetError("grad_req: %d values given for %d arguments" % (len(reqs), len(names)))
    for n, r in zip(names, reqs):
        if r not in _REQS:
            raise MXNetError("grad_req for '%s' must be one of 'write', 'add', 'null', got %r" % (n, r))
    return reqs


class Executor:
    """Runs a bound symbol: ``forward(is_train)``, ``backward(out_grads)``, with
    ``arg_dict``, ``grad_dict``, ``aux_dict`` and ``outputs``."""

    def __init__(self, symbol, ctx, arg_arrays, grad_arrays, grad_reqs, aux_arrays, group2ctx=None):
        self._symbol = symbol
        self._ctx = Context(ctx)
        self._group2ctx = _groups(group2ctx)
        self._monitor_callback = None
        self._monitor_all = False
        self.arg_arrays = list(arg_arrays)
        self.grad_arrays = list(grad_arrays)
        self.aux_arrays = list(aux_arrays)
        self._grad_reqs = list(grad_reqs)
        reqs = [r if g is not None else "null" for r, g in zip(grad_reqs, grad_arrays)]
        # Storage types, as MXNet's bind infers them (it fails here where MXNet's does).
        out_stypes, self._grad_stypes, computes_sparse = symbol.handle.infer_storage(
            [a.stype for a in self.arg_arrays], [a.stype for a in self.aux_arrays])
        # A graph where some node computes on sparse storage runs its inference
        # forwards node by node on the arrays' own storage (_core's run_sparse: sparse
        # kernels, sparse outputs); a training forward whose gradients are wanted, and
        # every other graph, runs on the planned dense executor below.
        self._sparse_graph = bool(computes_sparse) and not self._group2ctx
        self._pending_dense = None
        # The dense executor computes on dense storage: sparse arguments are copied
        # into dense buffers before each of its forwards; sparse gradient arrays get
        # the gradients cast after each backward; sparse outputs get theirs cast.
        dense_args = _dense_args(self.arg_arrays)
        dense_grads = _dense_args(self.grad_arrays)
        self._sparse_args = [(a, d) for a, d in zip(self.arg_arrays, dense_args) if a is not d]
        self._sparse_grads = [(g, d) for g, d in zip(self.grad_arrays, dense_grads) if g is not d]
        dense_aux = _dense_args(self.aux_arrays)
        self._sparse_aux = [(a, d) for a, d in zip(self.aux_arrays, dense_aux) if a is not d]
        self._handle = _core.ExecutorHandle(symbol.handle, self._ctx, dense_args,
                                            dense_grads, reqs, dense_aux,
                                            list(self._group2ctx.items()) or None)
        self._out_stypes = list(out_stypes)
        self._wrap_outputs()
        names = symbol.list_arguments()
        self.arg_dict = dict(zip(names, self.arg_arrays))
        self.grad_dict = {n: g for n, g, r in zip(names, self.grad_arrays, reqs)
                          if g is not None and r != "null"}
        self.aux_dict = dict(zip(symbol.list_auxiliary_states(), self.aux_arrays))
        self.output_dict = dict(zip(symbol.list_outputs(), self.outputs))

    def _wrap_outputs(self):
        """``outputs``: the dense executor's output arrays, and for outputs MXNet
        stores sparse, arrays of that storage type (filled after each forward)."""
        self._dense_outputs = self._handle.outputs()
        self.outputs = [d if st == "default" else nd.zeros(d.shape, ctx=d.context, dtype=d.dtype, stype=st)
                        for d, st in zip(self._dense_outputs, self._out_stypes)]
        self.output_dict = dict(zip(self._symbol.list_outputs(), self.outputs))

    # ---- construction -------------------------------------------------------------
    @staticmethod
    def _bind(symbol, ctx, args, args_grad, grad_req, aux_states, group2ctx=None, shared_exec=None):
        _check_shared(shared_exec)
        names = symbol.list_arguments()
        symbol.handle.check_unique_names()
        args = _as_list(args, names, "bind: args")
        reqs = _reqs(grad_req, names)
        grads = _as_list(args_grad, names, "bind: args_grad", allow_missing=True)
        if args_grad is None:
            reqs = ["null"] * len(names)
        aux = _as_list(aux_states, symbol.list_auxiliary_states(), "bind: aux_states")
        return Executor(symbol, ctx, args, grads, reqs, aux, group2ctx)

    @staticmethod
    def _simple_bind(symbol, ctx, grad_req, type_dict, shapes, group2ctx=None, shared_arg_names=None,
                     shared_exec=None, shared_buffer=None, stype_dict=None):
        _check_shared(shared_exec)
        stypes = _arg_stypes(symbol, stype_dict)
        if shared_buffer is not None and not isinstance(shared_buffer, dict):
            raise MXNetError("simple_bind: shared_buffer must be a dict, got %s" % type(shared_buffer).__name__)
        names = symbol.list_arguments()
        symbol.handle.check_unique_names()
        reqs = _reqs(grad_req, names)
        # As in MXNet, only tuple (here also list) values are shapes, and names that are
        # not inputs of the symbol are ignored (MXNet code passes other keywords here).
        inputs = set(symbol.list_inputs())
        shapes = {k: v for k, v in shapes.items() if isinstance(v, (tuple, list)) and k in inputs}
        arg_shapes, _, aux_shapes = _with_dtypes(symbol, type_dict, inputs).infer_shape_partial(**shapes)
        missing = [n for n, s in zip(names, arg_shapes) if s == ()]
        missing += [n for n, s in zip(symbol.list_auxiliary_states(), aux_shapes) if s == ()]
        if missing:
            raise MXNetError("simple_bind: cannot infer the shapes of %s; give their shapes"
                             % ", ".join(repr(m) for m in missing))
        arg_types, _, aux_types = symbol.infer_type_partial(**(type_dict or {}))
        arg_types = [t or np.float32 for t in arg_types]
        aux_types = [t or np.float32 for t in aux_types]
        groups = _groups(group2ctx)
        place = _placer(symbol, ctx, groups, "simple_bind")

        # (names that are not arguments are ignored, as in MXNet)
        shared = set(shared_arg_names or ())
        args, grads = [], []
        for n, s, t, r in zip(names, arg_shapes, arg_types, reqs):
            c = place(n)
            if n in shared and shared_exec is not None and shared_buffer is not None:
                # MXNet shares the named arguments (and their gradients) with shared_exec
                a = shared_exec.arg_dict.get(n)
                if a is None:
                    raise MXNetError("simple_bind: shared argument '%s' is not in shared_exec" % n)
                if tuple(a.shape) != tuple(s) or np.dtype(a.dtype) != np.dtype(t):
                    raise MXNetError("simple_bind: shared argument '%s' has shape %s %s in shared_exec but "
                                     "this graph needs %s %s" % (n, tuple(a.shape), np.dtype(a.dtype).name,
                                                                 tuple(s), dtype_name(t)))
                g = shared_exec.grad_dict.get(n) if r != "null" else None
                if r != "null" and g is None:
                    g = nd.zeros(s, ctx=c, dtype=t)
                args.append(a)
                grads.append(g)
            elif shared_buffer is not None and n not in shared:
                # the other arguments come from (and go to) the shared buffer
                args.append(_from_buffer(shared_buffer, n, s, t, c))
                grads.append(_from_buffer(shared_buffer, "grad of " + n, s, t, c) if r != "null" else None)
            else:
                args.append(nd.zeros(s, ctx=c, dtype=t, stype=stypes.get(n, "default")))
                grads.append(None if r == "null" else n)
        aux = [nd.zeros(s, ctx=place(n), dtype=t)
               for n, s, t in zip(symbol.list_auxiliary_states(), aux_shapes, aux_types)]
        # Gradient arrays of the storage type MXNet's storage inference gives them
        # (row_sparse for an Embedding(sparse_grad=True) weight, ...).
        if any(isinstance(g, str) for g in grads):
            _, grad_stypes, _ = symbol.handle.infer_storage([a.stype for a in args], [a.stype for a in aux])
            grads = [nd.zeros(a.shape, ctx=a.context, dtype=a.dtype, stype=st) if isinstance(g, str) else g
                     for g, a, st in zip(grads, args, grad_stypes)]
        return Executor(symbol, ctx, args, grads, reqs, aux, groups)

    # ---- running ------------------------------------------------------------------
    def set_monitor_callback(self, callback, monitor_all=False):
        """Calls ``callback(name, array)`` during every later ``forward`` for each
        node's outputs, hidden ones included (``fc1_output``, ``sl_output0``,
        ``drop_mask``, ...) and, with ``monitor_all``, its inputs first (a variable
        input under its own name, then ``fc1_data``, ``fc1_weight``, ... with the
        operator's input names, or ``act_input0`` for operators MXNet registers
        without them); during ``backward``, the gradient each node's backward gives
        its inputs (``fc1_backward_output0``, ...; ``act_backward_output`` for one
        input). MXNet hands the callback a raw handle; here it is the NDArray itself,
        and ``NDArray(ctypes.cast(array, NDArrayHandle))`` gives it back as MXNet
        code expects. An exception from the callback stops the run with an
        MXNetError naming the node."""
        if callback is not None and not callable(callback):
            raise MXNetError("set_monitor_callback: callback must be callable, got %s" % type(callback).__name__)
        self._monitor_callback = callback
        self._monitor_all = bool(monitor_all)

    def forward(self, is_train=False, **kwargs):
        """Copies ``kwargs`` into the named arguments, runs the graph, returns the outputs."""
        for k, v in kwargs.items():
            if k not in self.arg_dict:
                raise MXNetError("forward: unknown argument '%s'" % k)
            dst = self.arg_dict[k]
            if isinstance(v, NDArray):
                if tuple(v.shape) != tuple(dst.shape):
                    raise MXNetError("forward: shape of '%s' is %s, the executor was bound with %s"
                                     % (k, tuple(v.shape), tuple(dst.shape)))
                v.copyto(dst)
            else:
                dst[:] = v
        if self._sparse_graph and self._monitor_callback is None and not (is_train and self.grad_dict):
            outs = self._symbol.handle.run_sparse(self._ctx, self.arg_arrays, self.aux_arrays, bool(is_train))
            for o, dst in zip(outs, self.outputs):
                _core._copy_any(o, dst)
            # a backward after this forward first runs the dense one it needs
            self._pending_dense = bool(is_train)
            return self.outputs
        self._dense_forward(is_train)
        return self.outputs

    def _dense_forward(self, is_train):
        self._pending_dense = None
        for a, d in self._sparse_args + self._sparse_aux:
            a.copyto(d)
        if self._monitor_callback is None:
            self._handle.forward(bool(is_train))
        else:
            self._handle.forward(bool(is_train), self._monitor_callback, self._monitor_all)
        for a, d in self._sparse_aux:
            d.copyto(a)
        for d, o in zip(self._dense_outputs, self.outputs):
            if o is not d:
                _core._copy_any(d, o)

    def backward(self, out_grads=None, is_train=True):
        """Computes the gradients of the arguments (``out_grads``: head gradients,
        ones where not given)."""
        if out_grads is None:
            grads = []
        elif isinstance(out_grads, NDArray):
            grads = [out_grads]
        elif isinstance(out_grads, dict):
            grads = [out_grads.get(n) for n in self._symbol.list_outputs()]
        else:
            grads = list(out_grads)
        # As MXNet's executor: head gradients past the outputs are ignored, and one of
        # another dtype is copied (cast) into the output's dtype.
        grads = [g.astype(o.dtype) if g is not None and np.dtype(g.dtype) != np.dtype(o.dtype) else g
                 for g, o in zip(grads, self.outputs)]
        # The dense executor takes dense head gradients.
        grads = [g.tostype("default") if g is not None and g.stype != "default" else g for g in grads]
        if not self.grad_dict:
            # nothing to compute (MXNet: a no-op), e.g. a module without parameters
            return
        if self._pending_dense is not None:
            self._dense_forward(self._pending_dense)
        if self._monitor_callback is None:
            self._handle.backward(grads)
        else:
            self._handle.backward(grads, self._monitor_callback, self._monitor_all)
        for g, d in self._sparse_grads:
            if g.stype != "default":
                d.copyto(g)

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs):
        """A new executor for new input shapes. As in MXNet, an array whose shape is
        unchanged is shared, one that shrinks is a view of the old array's memory
        (its first elements), one that grows (``allow_up_sizing``) is new, on the
        old array's context."""
        arg_shapes, _, aux_shapes = self._symbol.infer_shape(**kwargs)
        if arg_shapes is None:
            raise MXNetError("reshape: cannot infer every shape from %s" % kwargs)
        names = self._symbol.list_arguments()

        def fit(name, old, shape):
            if tuple(old.shape) == tuple(shape):
                return old
            if name not in kwargs and not partial_shaping:
                raise MXNetError("reshape: shape of unspecified array '%s' changed from %s to %s; "
                                 "set partial_shaping=True to allow it"
                                 % (name, tuple(old.shape), tuple(shape)))
            if int(np.prod(shape)) > old.size and not allow_up_sizing:
                raise MXNetError("reshape: new shape of '%s' %s is larger than the original %s; "
                                 "set allow_up_sizing=True to allow it"
                                 % (name, tuple(shape), tuple(old.shape)))
            size = int(np.prod(shape))
            if size <= old.size:
                return old.reshape((-1,))[:size].reshape(shape)
            return nd.zeros(shape, ctx=old.context, dtype=old.dtype)

        args = [fit(n, a, s) for n, a, s in zip(names, self.arg_arrays, arg_shapes)]
        grads = [None if g is None else fit(n, g, s)
                 for n, g, s in zip(names, self.grad_arrays, arg_shapes)]
        aux = [fit(n, a, s) for n, a, s in
               zip(self._symbol.list_auxiliary_states(), self.aux_arrays, aux_shapes)]
        ex = Executor(self._symbol, self._ctx, args, grads, self._grad_reqs, aux, self._group2ctx)
        # The new outputs live in the first elements of this executor's (MXNet's shared pool).
        ex._handle.share_outputs(self._dense_outputs)
        ex._wrap_outputs()
        ex._monitor_callback, ex._monitor_all = self._monitor_callback, self._monitor_all
        return ex

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copies arrays by name into the arguments and auxiliary states."""
        for src, dst, what in ((arg_params, self.arg_dict, "argument"),
                               (aux_params or {}, self.aux_dict, "auxiliary state")):
            for k, v in src.items():
                if k in dst:
                    v.copyto(dst[k]) if isinstance(v, NDArray) else dst[k].__setitem__(slice(None), v)
                elif not allow_extra_params:
                    raise ValueError("Find name \"%s\" that is not in the %ss" % (k, what))

    def planned_bytes(self):
        """(bytes of the planned intermediate buffers, bytes without reuse)."""
        return self._handle.planned_bytes()

    def get_optimized_symbol(self):
        """The graph the executor runs: the bound symbol after common subexpression
        elimination (merged when ``MXNET_ELIMINATE_COMMON_EXPR`` is not ``0`` at bind
        time, as in MXNet; heads left on one entry get ``_copy`` nodes)."""
        from .symbol import Symbol
        return Symbol(self._handle.optimized_symbol())

    def debug_str(self):
        """A summary of the bound graph. As in MXNet, the third line from the end is
        ``Total <n> MB allocated`` (the executor's planned intermediate buffers), which
        MXNet code parses (``debug_str().split('\\n')[-3]``)."""
        planned, naive = self.planned_bytes()
        return ("Symbol outputs: %s\nTotal %d MB allocated\nTotal %d bytes of intermediate "
                "buffers planned (%d without reuse)\n"
                % (self._symbol.list_outputs(), planned >> 20, planned, naive))


__all__ = ["Executor"]
