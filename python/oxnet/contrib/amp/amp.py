"""Automatic mixed precision (MXNet 1.9.1's ``mx.contrib.amp``).

Training (imperative or hybridized Gluon)::

    amp.init('bfloat16')               # or 'float16'; before the model is built
    net = ...; net.hybridize()
    trainer = gluon.Trainer(...); amp.init_trainer(trainer)
    with autograd.record():
        loss = ...
        with amp.scale_loss(loss, trainer) as scaled:
            autograd.backward(scaled)
    trainer.step(batch_size)

``init`` replaces the operator functions of ``mx.nd`` and ``mx.sym`` (and of their
``op``, ``_internal`` and ``contrib``/``linalg``/``image`` namespaces: whatever
``F`` is inside ``hybrid_forward``) with versions that insert ``amp_cast`` /
``amp_multicast``: the low-precision operators (``list_lp16_ops``) get their float
inputs in the target dtype, the float32 operators (``list_fp32_ops``, and those of
``list_conditional_fp32_ops`` for the listed parameter values) get them in float32,
and the operators of ``list_widest_type_cast`` get all their inputs in the widest
float type among them. Parameters stay float32 (the master copy); the casts carry
the gradients back to float32.

Inference: ``convert_symbol`` / ``convert_model`` / ``convert_hybrid_block`` /
``convert_bucketing_module`` rewrite a float32 graph with the same lists, as
MXNet's graph pass does.
"""

import contextlib
import json
import keyword
import logging
import warnings

import numpy as np

from ... import _core
from ... import name as _name_mod
from ... import ndarray
from ... import symbol
from ... import optimizer as opt
from ...base import MXNetError, dtype_name, bfloat16, _is_bfloat16  # noqa: F401 (bfloat16: as in MXNet)
from ...context import gpu
from ...gluon import trainer as _trainer
from ...ndarray import NDArray
from ...symbol import Symbol
from ...symbol import symbol as _symbol_impl
from . import lists
from .loss_scaler import LossScaler

__all__ = ['init', 'init_trainer', 'scale_loss', 'unscale', 'convert_model',
           'convert_hybrid_block', 'list_lp16_ops', 'list_fp32_ops',
           'list_lp16_fp32_ops', 'list_conditional_fp32_ops',
           'list_widest_type_cast', 'list_loss_output_functions', 'list_lp16_use_fp32_params',
           'convert_symbol', 'convert_bucketing_module']

_FLOATS = ("float16", "bfloat16", "float32")
# MXNet's dtype flags (the ``__dtype__`` attribute of variables)
_DTYPE_CODE = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5,
               "int64": 6, "bool": 7, "int16": 8, "uint16": 9, "uint32": 10, "uint64": 11,
               "bfloat16": 12}
_CODE_DTYPE = {v: k for k, v in _DTYPE_CODE.items()}
# registry prefixes that also give a short name in a submodule (mx.nd.contrib.X ...)
_PREFIX_SUBMODULE = {"_contrib_": "contrib", "_linalg_": "linalg", "_image_": "image"}

_amp_initialized = False
_amp_loss_scale_initialized = False
_loss_scaler = None
_target_dtype = None
_patches = []          # (namespace, attribute, original function): what init replaced


def _target_name(target_dtype, func):
    """'float16' or 'bfloat16' for the accepted spellings of the target dtype; an
    MXNetError naming ``func`` for anything else."""
    try:
        if _is_bfloat16(target_dtype):
            return "bfloat16"
        if isinstance(target_dtype, (str, type, np.dtype)) and np.dtype(target_dtype) == np.float16:
            return "float16"
    except TypeError:
        pass
    raise MXNetError("%s: target_dtype must be 'float16' or 'bfloat16', got %r"
                     % (func, target_dtype))


def _lists_of(target_dtype, func):
    return lists.symbol_fp16 if _target_name(target_dtype, func) == "float16" else lists.symbol_bf16


# ---------------------------------------------------------------------------------
# the op lists
# ---------------------------------------------------------------------------------
def list_lp16_ops(target_dtype):
    """Names of the operators AMP runs in ``target_dtype`` ('float16' or 'bfloat16')."""
    m = _lists_of(target_dtype, "list_lp16_ops")
    return m.FP16_FUNCS if m is lists.symbol_fp16 else m.BF16_FUNCS


def list_fp32_ops(target_dtype):
    """Names of the operators AMP runs in float32."""
    return _lists_of(target_dtype, "list_fp32_ops").FP32_FUNCS


def list_lp16_fp32_ops(target_dtype):
    """Names of the operators AMP leaves alone (they run in either precision)."""
    m = _lists_of(target_dtype, "list_lp16_fp32_ops")
    return m.FP16_FP32_FUNCS if m is lists.symbol_fp16 else m.BF16_FP32_FUNCS


def list_conditional_fp32_ops(target_dtype):
    """(operator, parameter, values): operators run in float32 for those values."""
    return _lists_of(target_dtype, "list_conditional_fp32_ops").CONDITIONAL_FP32_FUNCS


def list_widest_type_cast(target_dtype):
    """Operators whose inputs AMP casts to the widest float type among them."""
    return _lists_of(target_dtype, "list_widest_type_cast").WIDEST_TYPE_CASTS


def list_loss_output_functions(target_dtype):
    """Loss output operators whose ``grad_scale`` carries the loss scale."""
    return _lists_of(target_dtype, "list_loss_output_functions").LOSS_OUTPUT_FUNCTIONS


def list_lp16_use_fp32_params(target_dtype):
    """Per operator, the input slots kept in float32 when it runs in low precision
    (None for float16, where there are none)."""
    m = _lists_of(target_dtype, "list_lp16_use_fp32_params")
    return None if m is lists.symbol_fp16 else m.BF16_USE_FP32_PARAMS


def _registered_ops():
    """name -> canonical name of every registered operator (aliases included)."""
    return dict(_core.list_ops())


def _check_names(func, what, names, known):
    if not isinstance(names, (list, tuple)):
        raise MXNetError("%s: %s must be a list of operator names, got %s"
                         % (func, what, type(names).__name__))
    for n in names:
        if not isinstance(n, str):
            raise MXNetError("%s: %s must hold operator names (str), got %r" % (func, what, n))
        if n not in known:
            raise MXNetError("%s: unknown operator '%s' in %s" % (func, n, what))


def _check_conditional(func, conds, known):
    if not isinstance(conds, (list, tuple)):
        raise MXNetError("%s: conditional_fp32_ops must be a list of (operator, parameter, "
                         "values) tuples, got %s" % (func, type(conds).__name__))
    for c in conds:
        if not (isinstance(c, (list, tuple)) and len(c) == 3 and isinstance(c[0], str)
                and isinstance(c[1], str) and isinstance(c[2], list)):
            raise MXNetError("%s: conditional_fp32_ops entries must be (str, str, list of str), "
                             "got %r" % (func, c))
        if known is not None and c[0] not in known:
            raise MXNetError("%s: unknown operator '%s' in conditional_fp32_ops" % (func, c[0]))


# ---------------------------------------------------------------------------------
# amp.init: patching the operator functions
# ---------------------------------------------------------------------------------
def _cast(x, dtype):
    """``x`` cast to ``dtype`` by amp_cast: every Symbol, and NDArrays of another
    float type (float16/bfloat16/float32); anything else as it is."""
    if isinstance(x, Symbol):
        return symbol.amp_cast(x, dtype=dtype)
    if isinstance(x, NDArray) and getattr(x, "stype", "default") == "default":
        t = dtype_name(x.dtype)
        if t != dtype and t in _FLOATS:
            return ndarray.amp_cast(x, dtype=dtype)
    return x


def _copy_meta(new, f):
    new.__name__ = f.__name__
    new.__module__ = f.__module__
    new.__doc__ = f.__doc__
    return new


def _cond_matches(cond_arg, kwargs):
    return cond_arg is None or (cond_arg[0] in kwargs and kwargs[cond_arg[0]] in cond_arg[1])


def _ndarray_wrapper(f, dtype, fp32_param=None, cond_arg=None):
    def _amp_fun(*args, **kwargs):
        if not _cond_matches(cond_arg, kwargs):
            return f(*args, **kwargs)
        args = tuple(x if fp32_param and i < len(fp32_param) and fp32_param[i]
                     else _cast(x, dtype) for i, x in enumerate(args))
        kwargs = {k: (v if (fp32_param and k in fp32_param) or k == "out" else _cast(v, dtype))
                  for k, v in kwargs.items()}
        return f(*args, **kwargs)
    return _copy_meta(_amp_fun, f)


def _symbol_wrapper(f, opdef, dtype, fp32_param=None, cond_arg=None):
    """Builds the op's symbol as ``f`` does, then builds it again (same name) on its
    inputs cast to ``dtype`` (auxiliary states and ``fp32_param`` slots excepted;
    inputs the op created itself, such as an unnamed weight, are cast too)."""
    input_names = list(opdef.input_names)
    param_names = [p for p in opdef.param_names
                   if not keyword.iskeyword(p) and p not in input_names]

    def _amp_fun(*args, **kwargs):
        if not _cond_matches(cond_arg, kwargs):
            return f(*args, **kwargs)
        sym = f(*args, **kwargs)
        children = sym.get_children()
        if children is None:
            return sym
        name = sym.name
        kids = [children[i] for i in range(len(children.list_outputs()))]
        aux = set(sym.list_auxiliary_states())
        casted = []
        for i, k in enumerate(kids):
            keep = (k.name in aux and k.get_children() is None) or \
                (fp32_param and i < len(fp32_param) and fp32_param[i])
            casted.append(k if keep else _cast(k, dtype))
        other = {k: v for k, v in kwargs.items() if not isinstance(v, Symbol) and k != "name"}
        if opdef.variadic is not None:
            with _name_mod.NameManager():
                return f(*casted, name=name, **other)
        if len(args) > len(input_names):
            # positional parameters follow the inputs in the generated signature
            other.update(zip(param_names, args[len(input_names):]))
        given = set(input_names[:len(args)]) | {k for k, v in kwargs.items()
                                                if isinstance(v, Symbol)}
        child_names = [k.name for k in kids]
        present = [n for n in input_names
                   if n in given or "%s_%s" % (name, n) in child_names]
        if len(present) != len(kids):
            present = input_names[:len(kids)]
        with _name_mod.NameManager():
            return f(name=name, **dict(zip(present, casted)), **other)
    return _copy_meta(_amp_fun, f)


def _widest_wrapper(f, target_dtype):
    def _amp_fun(*args, **kwargs):
        args = list(args)
        found = [(args, i, a) for i, a in enumerate(args) if isinstance(a, (Symbol, NDArray))]
        found += [(kwargs, k, a) for k, a in kwargs.items()
                  if k != "out" and isinstance(a, (Symbol, NDArray))]
        if any(isinstance(a, Symbol) for _, _, a in found):
            syms = [a for _, _, a in found]
            if len(syms) > 1:
                outs = symbol.amp_multicast(*syms, num_outputs=len(syms))
                for (holder, key, _), j in zip(found, range(len(syms))):
                    holder[key] = outs[j]
        else:
            names = [dtype_name(a.dtype) for _, _, a in found]
            if "float32" in names:
                for holder, key, a in found:
                    if dtype_name(a.dtype) == target_dtype:
                        holder[key] = ndarray.amp_cast(a, dtype="float32")
        return f(*args, **kwargs)
    return _copy_meta(_amp_fun, f)


def _namespaces(module):
    spaces = [module, module.op, module._internal]
    spaces += [getattr(module, s) for s in _PREFIX_SUBMODULE.values() if hasattr(module, s)]
    return spaces


def _places_of(module, name):
    """(original function, [(namespace, attribute)]) of registered op ``name`` in
    ``module`` (mx.nd or mx.sym); (None, []) when oxnet has no such function."""
    f = None
    short = None
    for prefix, sub in _PREFIX_SUBMODULE.items():
        if name.startswith(prefix):
            short = name[len(prefix):]
            f = getattr(getattr(module, sub), short, None)
            break
    if f is None:
        home = module._internal if name.startswith("_") else module.op
        f = getattr(home, name, None)
    if f is None or not callable(f):
        return None, []
    places = []
    for ns in _namespaces(module):
        for attr in {name, short} - {None}:
            if getattr(ns, attr, None) is f:
                places.append((ns, attr))
    return f, places


def _patch(module, name, make):
    f, places = _places_of(module, name)
    if f is None:
        return
    new = make(f)
    for ns, attr in places:
        _patches.append((ns, attr, getattr(ns, attr)))
        setattr(ns, attr, new)


def _wrap_symbol_functions(module, target_dtype, target_precision_ops, conditional_fp32_ops,
                           fp32_ops):
    is_sym = module is symbol
    fp32_params = list_lp16_use_fp32_params(target_dtype) or {}
    registered = _registered_ops()

    def maker(dtype, op_name, fp32_param=None, cond_arg=None):
        if is_sym:
            opdef = _core.get_op(registered[op_name])
            return lambda f: _symbol_wrapper(f, opdef, dtype, fp32_param, cond_arg)
        return lambda f: _ndarray_wrapper(f, dtype, fp32_param, cond_arg)

    for n in target_precision_ops:
        if n in registered:
            _patch(module, n, maker(target_dtype, n, fp32_param=fp32_params.get(n)))
    for n in fp32_ops:
        if n in registered:
            _patch(module, n, maker("float32", n))
    for n, arg, values in conditional_fp32_ops:
        if n in registered:
            _patch(module, n, maker("float32", n, cond_arg=(arg, values)))
    for n in list_widest_type_cast(target_dtype):
        if n in registered:
            _patch(module, n, lambda f: _widest_wrapper(f, target_dtype))


def _wrap_loss_output_functions(module, ls, target_dtype):
    for n in list_loss_output_functions(target_dtype):
        if module is ndarray:
            def make(f):
                def _amp_fun(*args, **kwargs):
                    kwargs["grad_scale"] = kwargs.get("grad_scale", 1.0) * ls.loss_scale
                    return f(*args, **kwargs)
                return _copy_meta(_amp_fun, f)
        else:
            def make(f):
                def _amp_fun(*args, **kwargs):
                    logging.warning("%s does not support dynamic loss scaling in symbolic and "
                                    "hybridized execution.", f.__name__)
                    return f(*args, **kwargs)
                return _copy_meta(_amp_fun, f)
        _patch(module, n, make)


# NDArray arithmetic and the operator MXNet's NDArray methods call for it
_NDARRAY_BINARY = {"__add__": "broadcast_add", "__radd__": "broadcast_add",
                   "__sub__": "broadcast_sub", "__rsub__": "broadcast_sub",
                   "__mul__": "broadcast_mul", "__rmul__": "broadcast_mul",
                   "__truediv__": "broadcast_div", "__rtruediv__": "broadcast_div",
                   "__mod__": "broadcast_mod", "__rmod__": "broadcast_mod"}


def _ndarray_binary_widest(f, target_dtype):
    """NDArray arithmetic under AMP: a target-dtype operand meets a float32 one in
    float32 (MXNet's methods call the patched widest-type operators)."""
    def _amp_method(self, other):
        if isinstance(other, NDArray):
            ts = (dtype_name(self.dtype), dtype_name(other.dtype))
            if ts == (target_dtype, "float32"):
                self = ndarray.amp_cast(self, dtype="float32")
            elif ts == ("float32", target_dtype):
                other = ndarray.amp_cast(other, dtype="float32")
        return f(self, other)
    return _copy_meta(_amp_method, f)


def _symbol_binary_multicast(lhs, rhs):
    """Symbol arithmetic (``a + b``) under AMP: both operands through amp_multicast."""
    outs = symbol.amp_multicast(lhs, rhs, num_outputs=2)
    return outs[0], outs[1]


def init(target_dtype='float16', target_precision_ops=None,
         conditional_fp32_ops=None, fp32_ops=None):
    """Turns on automatic mixed precision for the operators built after this call.

    Parameters
    ----------
    target_dtype : {'float16', 'bfloat16'}
        The low-precision type.
    target_precision_ops : list of str, optional
        Operators to run in ``target_dtype`` (default: ``list_lp16_ops``).
    conditional_fp32_ops : list of (str, str, list of str), optional
        (operator, parameter, values) run in float32 when the parameter has one of the
        values (default: ``list_conditional_fp32_ops``).
    fp32_ops : list of str, optional
        Operators to run in float32 (default: ``list_fp32_ops``).

    A second call does nothing (with a warning), as in MXNet.
    """
    global _amp_initialized, _loss_scaler, _target_dtype
    if _amp_initialized:
        warnings.warn("amp.init: AMP is already initialized (target dtype %s); this call "
                      "does nothing" % _target_dtype, stacklevel=2)
        return
    target = _target_name(target_dtype, "amp.init")
    registered = _registered_ops()
    if target_precision_ops is not None:
        _check_names("amp.init", "target_precision_ops", target_precision_ops, registered)
    else:
        target_precision_ops = list_lp16_ops(target)
    if fp32_ops is not None:
        _check_names("amp.init", "fp32_ops", fp32_ops, registered)
    else:
        fp32_ops = list_fp32_ops(target)
    if conditional_fp32_ops is not None:
        _check_conditional("amp.init", conditional_fp32_ops, registered)
    else:
        conditional_fp32_ops = list_conditional_fp32_ops(target)
    logging.info("Using AMP")
    try:
        _wrap_symbol_functions(symbol, target, target_precision_ops, conditional_fp32_ops,
                               fp32_ops)
        _wrap_symbol_functions(ndarray, target, target_precision_ops, conditional_fp32_ops,
                               fp32_ops)
        scaler = LossScaler()
        _wrap_loss_output_functions(ndarray, scaler, target)
        _wrap_loss_output_functions(symbol, scaler, target)
        widest = set(list_widest_type_cast(target))
        if widest & {"_Plus", "_plus", "elemwise_add"}:
            _symbol_impl._AMP_BINARY = _symbol_binary_multicast
        for method, op_name in _NDARRAY_BINARY.items():
            if op_name in widest:
                f = getattr(NDArray, method)
                _patches.append((NDArray, method, f))
                setattr(NDArray, method, _ndarray_binary_widest(f, target))
    except Exception:
        _restore()
        raise
    _loss_scaler = scaler
    _target_dtype = target
    _amp_initialized = True


def _restore():
    """Undoes ``init``: the original operator functions come back (for tests)."""
    global _amp_initialized, _amp_loss_scale_initialized, _loss_scaler, _target_dtype
    while _patches:
        ns, attr, f = _patches.pop()
        setattr(ns, attr, f)
    _symbol_impl._AMP_BINARY = None
    _amp_initialized = False
    _amp_loss_scale_initialized = False
    _loss_scaler = None
    _target_dtype = None


# ---------------------------------------------------------------------------------
# loss scaling
# ---------------------------------------------------------------------------------
def init_trainer(optimizer_or_trainer):
    """Gives a Gluon Trainer AMP's dynamic loss scaler (the one of ``init`` for the
    first trainer, a new one after). Works without ``init`` too (loss scaling only)."""
    global _amp_loss_scale_initialized
    if isinstance(optimizer_or_trainer, _trainer.Trainer):
        if _amp_initialized and not _amp_loss_scale_initialized:
            _amp_loss_scale_initialized = True
            scaler = _loss_scaler
        else:
            scaler = LossScaler()
        optimizer_or_trainer._amp_loss_scaler = scaler
        optimizer_or_trainer._amp_original_scale = optimizer_or_trainer._scale
    elif isinstance(optimizer_or_trainer, opt.Optimizer):
        raise TypeError("AMP is currently only compatible with Gluon Trainer")
    else:
        raise TypeError("optimizer_or_trainer should be a Gluon Trainer or an optimizer, "
                        "instead is %s" % type(optimizer_or_trainer))


@contextlib.contextmanager
def scale_loss(loss, optimizer_or_trainer):
    """Yields ``loss`` (or a list of losses) times the current loss scale, and makes the
    trainer divide the gradients by it again."""
    scaler = getattr(optimizer_or_trainer, "_amp_loss_scaler", None)
    assert scaler is not None, \
        "Loss scaler is not initialized, did you forget to call amp.init_trainer()?"
    optimizer_or_trainer._scale = optimizer_or_trainer._amp_original_scale / scaler.loss_scale
    if isinstance(loss, (list, tuple)):
        yield [l * scaler.loss_scale for l in loss]
    else:
        yield scaler.loss_scale * loss


def unscale(optimizer_or_trainer):
    """Divides the trainer's gradients by the loss scale now (before, e.g., gradient
    clipping) and resets the trainer's own rescaling."""
    if isinstance(optimizer_or_trainer, opt.Optimizer):
        raise TypeError("AMP is currently only compatible with Gluon Trainer")
    scaler = getattr(optimizer_or_trainer, "_amp_loss_scaler", None)
    assert scaler is not None, \
        "Loss scaler is not initialized, did you forget to call amp.init_trainer()?"
    if optimizer_or_trainer._scale == optimizer_or_trainer._amp_original_scale:
        return
    for param in optimizer_or_trainer._params:
        if param.grad_req != "null" and param._data is not None:
            for grad in param.list_grad():
                grad[:] *= optimizer_or_trainer._scale
    optimizer_or_trainer._scale = optimizer_or_trainer._amp_original_scale


# ---------------------------------------------------------------------------------
# graph conversion
# ---------------------------------------------------------------------------------
class _Node:
    __slots__ = ("op", "name", "attrs", "inputs", "nout", "extra")

    def __init__(self, op, name, attrs, inputs, nout, extra=None):
        self.op, self.name, self.attrs, self.inputs, self.nout = op, name, attrs, inputs, nout
        self.extra = extra or {}


def _suffix(node, idx):
    if node.op == "null":
        return ""
    return "_output" if node.nout == 1 else "_output%d" % idx


# Operators whose non-data inputs are float32 parameters whatever the data type.
_DATA_TYPED_OPS = {"BatchNorm", "BatchNorm_v1", "BatchNormWithReLU", "SyncBatchNorm",
                   "_contrib_SyncBatchNorm"}


def _widest(types):
    known = [t for t in types if t in _FLOATS]
    if not known:
        return None
    return max(known, key=lambda t: {"float16": 0, "bfloat16": 1, "float32": 2}[t])


class _TypeOracle:
    """Output dtypes of one node from its input dtypes (None: unknown), by the
    core's type inference on a one-node graph; inputs of different float types give
    unknown outputs (the operator would need casts)."""

    def __init__(self):
        self._cache = {}

    def __call__(self, op, attrs, in_types, nout, extra):
        if op == "amp_cast":
            t = in_types[0]
            return [attrs["dtype"] if t is None or t in _FLOATS else t]
        if op == "amp_multicast":
            w = _widest(in_types)
            return [w if t in _FLOATS else t for t in in_types] if w else [None] * nout
        if extra.get("subgraphs"):
            return [None] * nout
        checked = in_types[:1] if op in _DATA_TYPED_OPS else in_types
        if len({t for t in checked if t in _FLOATS}) > 1 or None in checked:
            return [None] * nout
        if op in _DATA_TYPED_OPS:
            in_types = in_types[:1] + [None] * (len(in_types) - 1)
        key = (op, tuple(sorted(attrs.items())), tuple(in_types), nout)
        if key not in self._cache:
            self._cache[key] = self._infer(op, attrs, in_types, nout)
        return self._cache[key]

    @staticmethod
    def _infer(op, attrs, in_types, nout):
        k = len(in_types)
        nodes = [{"op": "null", "name": "in%d" % i, "inputs": []} for i in range(k)]
        node = {"op": op, "name": "n", "inputs": [[i, 0, 0] for i in range(k)]}
        if attrs:
            node["attrs"] = attrs
        nodes.append(node)
        graph = {"nodes": nodes, "arg_nodes": list(range(k)),
                 "node_row_ptr": list(range(k + 1)) + [k + 1 + j for j in range(nout)],
                 "heads": [[k, j, 0] for j in range(nout)],
                 "attrs": {"mxnet_version": ["int", 10901]}}
        try:
            h = _core.sym_from_json(json.dumps(graph))
            _, outs, _ = h.infer_type({"in%d" % i: t for i, t in enumerate(in_types)
                                       if t is not None})
        except (MXNetError, ValueError, TypeError, KeyError):
            return [None] * nout
        outs = [None if t is None else str(t) for t in outs]
        return outs if len(outs) == nout else [None] * nout


def _serialize(heads, graph_attrs):
    """MXNet JSON of the graph reaching ``heads`` (nodes in DFS post-order)."""
    order, index, seen = [], {}, set()
    for h, _ in heads:
        stack = [(h, 0)]
        while stack:
            node, i = stack.pop()
            if i == 0:
                if id(node) in seen:
                    continue
                seen.add(id(node))
            if i < len(node.inputs):
                stack.append((node, i + 1))
                src = node.inputs[i][0]
                if id(src) not in seen:
                    stack.append((src, 0))
            else:
                index[id(node)] = len(order)
                order.append(node)
    nodes, row_ptr = [], [0]
    for node in order:
        d = {"op": node.op, "name": node.name}
        if node.attrs:
            d["attrs"] = dict(node.attrs)
        d["inputs"] = [[index[id(s)], i, 0] for s, i in node.inputs]
        d.update(node.extra)
        nodes.append(d)
        row_ptr.append(row_ptr[-1] + node.nout)
    return {"nodes": nodes, "arg_nodes": [i for i, n in enumerate(order) if n.op == "null"],
            "node_row_ptr": row_ptr, "heads": [[index[id(n)], i, 0] for n, i in heads],
            "attrs": graph_attrs}


def _reduce_precision(graph, target, target_ops, fp32_ops, widest_ops, conditional,
                      excluded, data_names, cast_optional_params, fp32_params):
    """The graph pass: amp_cast / amp_multicast nodes inserted as MXNet 1.9.1's
    ReducePrecision pass places them."""
    infer = _TypeOracle()
    jnodes = graph["nodes"]
    row_ptr = graph.get("node_row_ptr")
    new, types = [], {}
    fp32_mirror, lp_mirror = {}, {}
    cond = {}
    for op, p, vals in conditional:
        cond.setdefault(op, []).append((p, [str(v) for v in vals]))

    def cast(entry, dtype, mirror, name=None):
        if mirror is not None and (id(entry[0]), entry[1]) in mirror:
            return mirror[(id(entry[0]), entry[1])]
        src, i = entry
        c = _Node("amp_cast", name or "%s%s_amp_cast_%s" % (src.name, _suffix(src, i), dtype),
                  {"dtype": dtype}, [entry], 1)
        t = types.get((id(src), i))
        types[(id(c), 0)] = dtype if t is None or t in _FLOATS else t
        out = (c, 0)
        if mirror is not None:
            mirror[(id(src), i)] = out
        return out

    for nid, jn in enumerate(jnodes):
        nout = row_ptr[nid + 1] - row_ptr[nid] if row_ptr else 1
        attrs = dict(jn.get("attrs", jn.get("param", {})))
        extra = {k: v for k, v in jn.items() if k not in ("op", "name", "attrs", "param", "inputs")}
        if jn["op"] == "null":
            node = _Node("null", jn["name"], attrs, [], 1, extra)
            t = "float32"
            if jn["name"] not in data_names and "__dtype__" in attrs:
                t = _CODE_DTYPE.get(int(attrs["__dtype__"]), None) if attrs["__dtype__"] != "-1" \
                    else None
            types[(id(node), 0)] = t
            new.append(node)
            continue
        ins = [(new[s], i) for s, i, _ in jn["inputs"]]
        op, name = jn["op"], jn["name"]
        if name in excluded or op in fp32_ops:
            kind = "fp32"
        elif op in target_ops:
            kind = "lp"
        elif op in widest_ops:
            kind = "widest"
        elif any(str(attrs.get(p)) in vals for p, vals in cond.get(op, [])):
            kind = "fp32"
        else:
            kind = "neutral"
        in_types = [types.get((id(s), i)) for s, i in ins]
        if kind == "widest" and in_types and all(t == target for t in in_types):
            kind = "neutral"
        eager = []
        if kind == "fp32":
            new_ins = []
            for e, t in zip(ins, in_types):
                key = (id(e[0]), e[1])
                if key in fp32_mirror:
                    new_ins.append(fp32_mirror[key])
                elif e[0].op == "null" or t == "float32" or (t is not None and t not in _FLOATS):
                    new_ins.append(e)
                else:
                    new_ins.append(cast(e, "float32", fp32_mirror))
        elif kind == "lp":
            keep = fp32_params.get(op) or []
            new_ins = []
            for j, (e, t) in enumerate(zip(ins, in_types)):
                key = (id(e[0]), e[1])
                if j < len(keep) and keep[j]:
                    new_ins.append(e)
                elif key in lp_mirror:
                    new_ins.append(lp_mirror[key])
                elif t == target or (t is not None and t not in _FLOATS):
                    new_ins.append(e)
                else:
                    new_ins.append(cast(e, target, lp_mirror))
            eager = [("float32", fp32_mirror)]
        elif kind == "widest":
            src, i = ins[0]
            mc = _Node("amp_multicast", "%s%s_amp_multicast" % (src.name, _suffix(src, i)),
                       {"num_outputs": str(len(ins))}, list(ins), len(ins))
            for k, t in enumerate(infer("amp_multicast", {}, in_types, len(ins), {})):
                types[(id(mc), k)] = t
            new_ins = [(mc, k) for k in range(len(ins))]
            eager = [("float32", fp32_mirror), (target, lp_mirror)]
        else:
            new_ins = ins
        node = _Node(op, name, attrs, new_ins, nout, extra)
        node_in_types = in_types if kind == "widest" else \
            [types.get((id(s), i)) for s, i in new_ins]
        for k, t in enumerate(infer(op, attrs, node_in_types, nout, extra)):
            types[(id(node), k)] = t
        for dtype, mirror in eager:
            for k in range(nout):
                cast((node, k), dtype, mirror)
        new.append(node)

    heads = []
    for s, i, *_ in graph["heads"]:
        e = (new[s], i)
        key = (id(e[0]), i)
        if key in fp32_mirror:
            e = fp32_mirror[key]
        elif types.get(key) == target:
            e = cast(e, "float32", None, name="%s_%d_amp_cast_float32" % (e[0].name, i))
        heads.append(e)

    # variables: which are model parameters, and (cast_optional_params) which can be
    # stored in the target dtype because only casts read them
    variables = [n for n in new if n.op == "null"]
    params = [v for v in variables if v.name not in data_names]
    if params:
        consumers = {}
        for n in _reachable(heads):
            for k, (s, _) in enumerate(n.inputs):
                consumers.setdefault(id(s), []).append((n, k))
        for v in params:
            uses = consumers.get(id(v), [])
            t = types.get((id(v), 0))
            if cast_optional_params and uses and t in _FLOATS and \
                    all(n.op == "amp_cast" and n.attrs.get("dtype") == target for n, _ in uses):
                t = target
                for n, _ in uses:
                    _bypass(n, v, heads, consumers)
            if t is not None:
                v.attrs["__dtype__"] = str(_DTYPE_CODE[t])
    return _serialize(heads, graph.get("attrs", {"mxnet_version": ["int", 10901]}))


def _reachable(heads):
    out, seen, stack = [], set(), [h for h, _ in heads]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        out.append(n)
        stack.extend(s for s, _ in n.inputs)
    return out


def _bypass(cast_node, var, heads, consumers):
    """Reads of ``cast_node``'s output go to ``var`` instead."""
    for n, k in consumers.get(id(cast_node), []):
        n.inputs[k] = (var, 0)
    for j, (h, i) in enumerate(heads):
        if h is cast_node:
            heads[j] = (var, 0)


def convert_symbol(sym, target_dtype="float16", target_dtype_ops=None,
                   fp32_ops=None, conditional_fp32_ops=None,
                   excluded_sym_names=None, data_names=None,
                   cast_optional_params=False):
    """A mixed-precision copy of the float32 graph ``sym``: amp_cast nodes put the
    inputs of the ``target_dtype_ops`` in ``target_dtype`` and those of the float32
    operators in float32; amp_multicast nodes give the widest-type operators one
    input type; outputs stay float32.

    Parameters
    ----------
    sym : Symbol
    target_dtype : {'float16', 'bfloat16'}
    target_dtype_ops, fp32_ops : list of str, optional
        Operators to run in the target dtype / in float32 (defaults: the AMP lists).
    conditional_fp32_ops : list of (str, str, list of str), optional
    excluded_sym_names : list of str, optional
        Names of nodes to keep in float32.
    data_names : list of str, optional
        The data inputs (float32); the other inputs are model parameters, which get a
        ``__dtype__`` attribute. Default: the inputs without ``__dtype__``.
    cast_optional_params : bool
        Store in the target dtype the parameters only read through casts to it.
    """
    func = "convert_symbol"
    if not isinstance(sym, Symbol):
        raise MXNetError("%s: the first argument must be a Symbol, got %s"
                         % (func, type(sym).__name__))
    target = _target_name(target_dtype, func)
    if not isinstance(target_dtype, str):
        raise MXNetError("%s: target_dtype must be the string 'float16' or 'bfloat16', got %r"
                         % (func, target_dtype))
    default_lists = (list_lp16_ops(target), list_fp32_ops(target),
                     list_lp16_fp32_ops(target),
                     [c[0] for c in list_conditional_fp32_ops(target)])
    allowed = set().union(*default_lists)
    if target_dtype_ops is None:
        target_dtype_ops = list_lp16_ops(target)
    else:
        _check_names(func, "target_dtype_ops", target_dtype_ops, allowed)
    if fp32_ops is None:
        fp32_ops = list_fp32_ops(target)
    else:
        _check_names(func, "fp32_ops", fp32_ops, allowed)
    if conditional_fp32_ops is None:
        conditional_fp32_ops = list_conditional_fp32_ops(target)
    else:
        _check_conditional(func, conditional_fp32_ops, allowed)
    cond_names = [c[0] for c in conditional_fp32_ops]
    for a, b, la, lb in ((target_dtype_ops, fp32_ops, "target_dtype_ops", "fp32_ops"),
                         (target_dtype_ops, cond_names, "target_dtype_ops", "conditional_fp32_ops"),
                         (cond_names, fp32_ops, "conditional_fp32_ops", "fp32_ops")):
        common = set(a) & set(b)
        if common:
            raise MXNetError("%s: operators cannot be in two lists; %s and %s share %s"
                             % (func, la, lb, sorted(common)))
    if excluded_sym_names is None:
        excluded_sym_names = []
    elif not isinstance(excluded_sym_names, (list, tuple)) or \
            not all(isinstance(n, str) for n in excluded_sym_names):
        raise MXNetError("%s: excluded_sym_names must be a list of str" % func)
    graph = json.loads(sym.tojson(remove_amp_cast=False))
    inputs = sym.list_inputs()
    attr_dict = sym.attr_dict()
    if data_names is None:
        data_names = [n for n in inputs if "__dtype__" not in attr_dict.get(n, {})]
    elif not isinstance(data_names, (list, tuple)) or \
            not all(isinstance(n, str) for n in data_names):
        raise MXNetError("%s: data_names must be a list of str" % func)
    else:
        unknown = [n for n in data_names if n not in inputs]
        if unknown:
            raise MXNetError("%s: data_names %s are not inputs of the symbol; its inputs are %s"
                             % (func, unknown, inputs))
    out = _reduce_precision(graph, target, set(target_dtype_ops), set(fp32_ops),
                            set(list_widest_type_cast(target)), conditional_fp32_ops,
                            set(excluded_sym_names), set(data_names), bool(cast_optional_params),
                            list_lp16_use_fp32_params(target) or {})
    return symbol.load_json(json.dumps(out))


def _cast_params_to_attrs(sym, params):
    """``params`` (name -> NDArray) cast to the ``__dtype__`` the converted ``sym``
    gives them."""
    attr_dict = sym.attr_dict()
    out = {}
    for name, arr in params.items():
        code = attr_dict.get(name, {}).get("__dtype__")
        if code is not None and code != "-1":
            t = _CODE_DTYPE[int(code)]
            if dtype_name(arr.dtype) != t:
                arr = ndarray.amp_cast(arr, dtype=t) if t in _FLOATS and \
                    dtype_name(arr.dtype) in _FLOATS else arr.astype(t)
        out[name] = arr
    return out


def convert_model(sym, arg_params, aux_params, target_dtype="float16", target_dtype_ops=None,
                  fp32_ops=None, conditional_fp32_ops=None, excluded_sym_names=None,
                  cast_optional_params=False):
    """``convert_symbol`` for a model: returns (symbol, arg_params, aux_params), the
    parameters cast to the dtypes the converted symbol gives them."""
    func = "convert_model"
    if not isinstance(sym, Symbol):
        raise MXNetError("%s: the first argument must be a Symbol" % func)
    if not isinstance(arg_params, dict) or not isinstance(aux_params, dict):
        raise MXNetError("%s: arg_params and aux_params must be dicts of name to NDArray" % func)
    _target_name(target_dtype, func)
    param_names = set(arg_params) | set(aux_params)
    data_names = [n for n in sym.list_inputs() if n not in param_names]
    out = convert_symbol(sym, target_dtype, target_dtype_ops, fp32_ops, conditional_fp32_ops,
                         excluded_sym_names, data_names, cast_optional_params)
    return out, _cast_params_to_attrs(out, arg_params), _cast_params_to_attrs(out, aux_params)


def convert_hybrid_block(block, target_dtype="float16", target_dtype_ops=None,
                         fp32_ops=None, conditional_fp32_ops=None,
                         excluded_sym_names=None, ctx=gpu(0),
                         cast_optional_params=False):
    """A SymbolBlock running ``block``'s graph (hybridized and run once) converted
    by ``convert_symbol``, with its parameters on ``ctx`` in the converted dtypes."""
    from ...gluon import HybridBlock, SymbolBlock
    func = "convert_hybrid_block"
    if not isinstance(block, HybridBlock):
        raise MXNetError("%s: block must be a HybridBlock, got %s" % (func, type(block).__name__))
    if not block._cached_graph:
        raise RuntimeError("Please first call block.hybridize() and then run forward with "
                           "this block at least once before calling export.")
    inputs, sym = block._cached_graph
    converted = convert_symbol(sym, target_dtype, target_dtype_ops, fp32_ops,
                               conditional_fp32_ops, excluded_sym_names,
                               data_names=[i.name for i in inputs],
                               cast_optional_params=cast_optional_params)
    arg_names = set(converted.list_arguments())
    aux_names = set(converted.list_auxiliary_states())
    values = {}
    for name, param in block.collect_params().items():
        if name in arg_names or name in aux_names:
            values[name] = param._reduce()
    values = _cast_params_to_attrs(converted, values)
    ret = SymbolBlock(converted, inputs)
    for name, param in ret.collect_params().items():
        if name in values and param.dtype != values[name].dtype:
            param.cast(values[name].dtype)
    arg_dict = {("arg:%s" if n in arg_names else "aux:%s") % n: v for n, v in values.items()}
    ret.collect_params().load_dict(arg_dict, ctx=ctx)
    return ret


def convert_bucketing_module(bucketing_mod, target_dtype="float16", target_dtype_ops=None,
                             fp32_ops=None, conditional_fp32_ops=None,
                             excluded_sym_names=None, cast_optional_params=False):
    """A BucketingModule whose bucket symbols are converted by ``convert_model``
    (the module's parameters must be initialized)."""
    from ...module import BucketingModule
    func = "convert_bucketing_module"
    if not isinstance(bucketing_mod, BucketingModule):
        raise MXNetError("%s: module should be an instance of BucketingModule" % func)
    if not bucketing_mod._buckets:
        raise MXNetError("%s: the BucketingModule has no buckets" % func)
    if not bucketing_mod.params_initialized:
        raise MXNetError("%s: the BucketingModule's parameters must be initialized" % func)
    arg_params = bucketing_mod._curr_module._arg_params
    aux_params = bucketing_mod._curr_module._aux_params
    sym_dict = {}
    for key, mod in bucketing_mod._buckets.items():
        sym_dict[key], out_args, out_aux = convert_model(
            mod._symbol, arg_params, aux_params, target_dtype=target_dtype,
            target_dtype_ops=target_dtype_ops, fp32_ops=fp32_ops,
            conditional_fp32_ops=conditional_fp32_ops, excluded_sym_names=excluded_sym_names,
            cast_optional_params=cast_optional_params)
    return BucketingModule.load_dict(sym_dict, sym_gen=bucketing_mod._sym_gen,
                                     arg_params=out_args, aux_params=out_aux,
                                     default_bucket_key=bucketing_mod._default_bucket_key,
                                     logger=bucketing_mod.logger,
                                     context=bucketing_mod._context,
                                     work_load_list=bucketing_mod._work_load_list,
                                     fixed_param_names=bucketing_mod._fixed_param_names,
                                     state_names=bucketing_mod._state_names,
                                     group2ctxs=bucketing_mod._group2ctxs,
                                     compression_params=bucketing_mod._compression_params)
