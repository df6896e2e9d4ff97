"""Gluon blocks: ``Block`` (imperative ``forward``), ``HybridBlock``
(``hybrid_forward(F, x, **params)``), and the naming scope that gives children
prefixed names (``sequential0_dense0_weight``).

``HybridBlock.forward`` runs ``hybrid_forward`` with ``F = mx.nd``. Parameters with
unknown dimensions are initialized on the first forward: the block's ``infer_shape``
(each layer defines it from its input) fills their shapes first.

``hybridize()`` makes the next call trace ``hybrid_forward`` once with ``F = mx.sym``
(inputs are variables ``data`` or ``data0, data1, ...``, parameters their ``var()``)
into one Symbol, which then runs as a cached graph in Rust
(``oxnet._core.CachedOpHandle``): one call per forward, recorded on the autograd tape
as one node whose backward runs the whole graph's gradient. ``export`` writes the
traced graph and the parameters in MXNet's files; ``SymbolBlock`` runs a Symbol
(e.g. one loaded by ``SymbolBlock.imports``) the same way.
"""

import copy
import re
import threading
import warnings
from collections import OrderedDict

import numpy as np

from .. import _core
from .. import initializer
from .. import name as _name
from .. import ndarray
from .. import symbol
from ..base import MXNetError
from ..ndarray import NDArray
from ..ndarray.cached_op import _inline_limit
from ..ndarray.ndarray import _STORAGE_TYPE_STR_TO_ID
from ..symbol import Symbol
from .parameter import DeferredInitializationError, Parameter, ParameterDict, _indent

__all__ = ["Block", "HybridBlock", "SymbolBlock"]


def _flatten(args, inout_str):
    """Flattens nested lists/tuples of NDArrays or Symbols (None kept) into a list
    and a format that :func:`_regroup` uses to rebuild the nesting."""
    if isinstance(args, NDArray):
        return [args], int(0)
    if isinstance(args, Symbol):
        length = len(args.list_outputs())
        length = length if length > 1 else 0
        return [args], int(length)
    if args is None:
        return [None], int(-1)
    if not isinstance(args, (list, tuple)):
        raise ValueError("HybridBlock %s must be (nested) list of Symbol or NDArray, but got %s "
                         "of type %s" % (inout_str, str(args), str(type(args))))
    flat, fmts = [], []
    for i in args:
        arg, fmt = _flatten(i, inout_str)
        flat.extend(arg)
        fmts.append(fmt)
    return flat, fmts


def _regroup(args, fmt):
    """Inverse of :func:`_flatten`: (nested structure, remaining items)."""
    if isinstance(fmt, int):
        if fmt == 0:
            return args[0], args[1:]
        if fmt == -1:
            if args[0] is not None:
                raise ValueError("Data of the input format -1 must be None")
            return None, args[1:]
        return args[:fmt], args[fmt:]
    ret = []
    for i in fmt:
        res, args = _regroup(args, i)
        ret.append(res)
    return ret, args


def _gather_type_ctx_info(args):
    """(has Symbol, has NDArray, set of contexts, first context) over nested args."""
    if isinstance(args, NDArray):
        return False, True, {args.context}, args.context
    if isinstance(args, Symbol):
        return True, False, set(), None
    if isinstance(args, (list, tuple)):
        has_symbol = has_ndarray = False
        ctx_set, first_ctx = set(), None
        for ele in args:
            s, n, cs, fc = _gather_type_ctx_info(ele)
            has_symbol |= s
            has_ndarray |= n
            ctx_set |= cs
            if first_ctx is None:
                first_ctx = fc
        return has_symbol, has_ndarray, ctx_set, first_ctx
    if type(args).__module__ == "oxnet.numpy.multiarray":
        raise MXNetError(
            "HybridBlock: an mx.np.ndarray input (NumPy mode) is not supported by oxnet's "
            "Gluon yet; pass x.as_nd_ndarray() and convert the outputs with "
            "as_np_ndarray()")
    return False, False, set(), None


class _BlockScope:
    """The naming scope of a Block (``with block.name_scope():``)."""

    _current = threading.local()

    def __init__(self, block):
        self._block = block
        self._counter = {}
        self._old_scope = None
        self._name_scope = None

    @staticmethod
    def create(prefix, params, hint):
        """The prefix and ParameterDict of a new block created in the current scope."""
        current = getattr(_BlockScope._current, "value", None)
        if current is None:
            if prefix is None:
                prefix = _name.current().get(None, hint) + "_"
            if params is None:
                params = ParameterDict(prefix)
            else:
                params = ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = "%s%d_" % (hint, count)
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self):
        if self._block._empty_prefix:
            return self
        self._old_scope = getattr(_BlockScope._current, "value", None)
        _BlockScope._current.value = self
        self._name_scope = _name.Prefix(self._block.prefix)
        self._name_scope.__enter__()
        return self

    def __exit__(self, ptype, value, trace):
        if self._block._empty_prefix:
            return
        self._name_scope.__exit__(ptype, value, trace)
        self._name_scope = None
        _BlockScope._current.value = self._old_scope


class HookHandle:
    """Removes a registered hook with ``detach()`` (or as a context manager)."""

    _next_id = [0]

    def __init__(self):
        self._hooks_dict_ref = None
        self._id = None

    def attach(self, hooks_dict, hook):
        import weakref
        if self._hooks_dict_ref is not None:
            raise MXNetError("The same handle cannot be attached twice.")
        self._id = HookHandle._next_id[0]
        HookHandle._next_id[0] += 1
        hooks_dict[self._id] = hook
        self._hooks_dict_ref = weakref.ref(hooks_dict)

    def detach(self):
        hooks = self._hooks_dict_ref() if self._hooks_dict_ref else None
        if hooks is not None and self._id in hooks:
            del hooks[self._id]

    def __enter__(self):
        return self

    def __exit__(self, ptype, value, trace):
        self.detach()


_TRACE = threading.local()


def _trace_input_shapes():
    """While ``hybridize`` traces a graph: {input variable name: shape} of the arrays
    it is traced for (None outside a trace). A block whose graph depends on them (the
    unrolled ``gluon.rnn`` layers: the sequence length) reads them here; the graph is
    then traced again whenever the input shapes change."""
    shapes = getattr(_TRACE, "shapes", None)
    if shapes is not None:
        _TRACE.specialized = True
    return shapes


def _flatten_shapes(x):
    if isinstance(x, NDArray):
        return [x.shape]
    if isinstance(x, (list, tuple)):
        out = []
        for i in x:
            out.extend(_flatten_shapes(i))
        return out
    return []


class Block:
    """Base class of all layers and models.

    Parameters
    ----------
    prefix : str
        Prefix of the names of this block's parameters and children (default: the
        class name in lower case with a counter, e.g. ``dense0_``).
    params : ParameterDict
        Parameters to share instead of creating new ones.
    """

    def __init__(self, prefix=None, params=None):
        self._empty_prefix = prefix == ""
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._scope = _BlockScope(self)
        self._children = OrderedDict()
        self._reg_params = {}
        self._forward_hooks = OrderedDict()
        self._forward_pre_hooks = OrderedDict()

    def __repr__(self):
        modstr = "\n".join(["  ({key}): {block}".format(key=key, block=_indent(repr(block), 2))
                            for key, block in self.__dict__.items() if isinstance(block, Block)])
        return "{name}(\n{modstr}\n)".format(name=self.__class__.__name__, modstr=modstr)

    def __setattr__(self, name, value):
        if hasattr(self, name):
            existing = getattr(self, name)
            if isinstance(existing, (Parameter, Block)) and not isinstance(value, type(existing)):
                raise TypeError("Changing attribute type for {name} from {type1} to {type2}"
                                "is not allowed.".format(name=name, type1=type(existing),
                                                         type2=type(value)))
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            if name in self._reg_params:
                raise MXNetError("Overriding Parameter attribute %s is not allowed. If you want "
                                 "to share parameters between blocks, please set 'params' at "
                                 "Block construction instead." % name)
            self._reg_params[name] = value
        super().__setattr__(name, value)

    def _alias(self):
        return self.__class__.__name__.lower()

    @property
    def prefix(self):
        """Prefix of this block's names."""
        return self._prefix

    @property
    def name(self):
        """Name of this block, without the trailing '_'."""
        return self._name

    def name_scope(self):
        """Scope in which children get names prefixed with this block's prefix."""
        return self._scope

    @property
    def params(self):
        """This block's own ParameterDict (children's parameters not included)."""
        return self._params

    def collect_params(self, select=None):
        """A ParameterDict of this block's and its children's parameters; ``select`` is
        a regular expression the names must match (``'.*weight|.*bias'``)."""
        self._check_container_with_block()
        ret = ParameterDict(self._params.prefix)
        if not select:
            ret.update(self.params)
        else:
            pattern = re.compile(select)
            ret.update({n: v for n, v in self.params.items() if pattern.match(n)})
        for cld in self._children.values():
            ret.update(cld.collect_params(select=select))
        return ret

    def _check_container_with_block(self):
        """Warns about list/tuple/dict attributes holding Blocks that are not children
        (their parameters would be missed)."""
        children = set(id(c) for c in self._children.values())

        def unregistered(data):
            if isinstance(data, (list, tuple)):
                return any(unregistered(e) for e in data)
            if isinstance(data, dict):
                return any(unregistered(v) for v in data.values())
            return isinstance(data, Block) and id(data) not in children

        for k, v in self.__dict__.items():
            if isinstance(v, (list, tuple, dict)) and not (k.startswith("__") or
                                                           k == "_children"):
                if unregistered(v):
                    warnings.warn('"{name}" is an unregistered container with Blocks. Note '
                                  'that Blocks inside the list, tuple or dict will not be '
                                  'registered automatically. Make sure to register them using '
                                  'register_child() or switching to '
                                  'nn.Sequential/nn.HybridSequential instead. '
                                  .format(name=self.__class__.__name__ + "." + k),
                                  stacklevel=3)

    def _collect_params_with_prefix(self, prefix=""):
        if prefix:
            prefix += "."
        ret = {prefix + key: val for key, val in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def save_parameters(self, filename, deduplicate=False):
        """Saves the parameters under structural names (``0.weight``, ``conv.bias``)
        in MXNet's .params format."""
        params = self._collect_params_with_prefix()
        if deduplicate:
            reverse = {}
            for k, v in params.items():
                reverse.setdefault(v, k)
            params = {k: v for v, k in reverse.items()}
        ndarray.save(filename, {key: val._reduce() for key, val in params.items()})

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
                        cast_dtype=False, dtype_source="current"):
        """Loads parameters written by ``save_parameters`` (or, for files without
        structural names, by ``collect_params().save``). Names, shapes and dtypes are
        all checked first: on a mismatch an MXNetError names the parameter and no
        parameter changes."""
        from .parameter import ParameterLoadError, _brief_print_list
        loaded = ndarray.load(filename)
        if not isinstance(loaded, dict):
            raise ParameterLoadError("File '%s' holds a list of arrays without names; "
                                     "parameters need a dict" % filename)
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if not any("." in i for i in loaded.keys()):
            # a file written by ParameterDict.save, with full names
            del loaded
            self.collect_params().load(filename, ctx, allow_missing, ignore_extra, self.prefix,
                                       cast_dtype=cast_dtype, dtype_source=dtype_source)
            return
        if not allow_missing:
            inv = {}
            for k, v in params.items():
                inv.setdefault(v, []).append(k)
            for name, param in params.items():
                if not any(p in loaded for p in inv[param]):
                    raise ParameterLoadError(
                        "Parameter '%s' is missing in file '%s', which contains parameters: %s. "
                        "Set allow_missing=True to ignore missing parameters."
                        % (name, filename, _brief_print_list(loaded.keys())))
        for name in loaded:
            if name not in params:
                if not ignore_extra:
                    raise ParameterLoadError(
                        "Parameter '%s' loaded from file '%s' is not present in ParameterDict, "
                        "which contains parameters %s. Set ignore_extra=True to ignore. "
                        % (name, filename, _brief_print_list(params.keys())))
            else:
                params[name]._check_loadable(loaded[name], ctx, cast_dtype, dtype_source,
                                             filename)
        for name in loaded:
            if name in params:
                params[name]._load_init(loaded[name], ctx, cast_dtype=cast_dtype,
                                        dtype_source=dtype_source)

    def save_params(self, filename):
        """Deprecated: saves with full parameter names (use ``save_parameters``)."""
        warnings.warn("save_params is deprecated. Please use save_parameters. Note that if you "
                      "want load from SymbolBlock later, please use export instead.")
        self.collect_params().save(filename, strip_prefix=self.prefix)

    def load_params(self, filename, ctx=None, allow_missing=False, ignore_extra=False):
        """Deprecated alias of ``load_parameters``."""
        warnings.warn("load_params is deprecated. Please use load_parameters.")
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    def register_child(self, block, name=None):
        """Registers ``block`` as a child (named ``name``, default its index)."""
        if name is None:
            name = str(len(self._children))
        self._children[name] = block

    def register_forward_pre_hook(self, hook):
        """``hook(block, inputs)`` runs before every forward; returns a HookHandle."""
        handle = HookHandle()
        handle.attach(self._forward_pre_hooks, hook)
        return handle

    def register_forward_hook(self, hook):
        """``hook(block, inputs, outputs)`` runs after every forward; returns a
        HookHandle."""
        handle = HookHandle()
        handle.attach(self._forward_hooks, hook)
        return handle

    def apply(self, fn):
        """Calls ``fn(block)`` on every child (recursively) and then on this block."""
        for cld in self._children.values():
            cld.apply(fn)
        fn(self)
        return self

    def initialize(self, init=initializer.Uniform(), ctx=None, verbose=False,
                   force_reinit=False):
        """Initializes the parameters of this block and its children."""
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def hybridize(self, active=True, **kwargs):
        """Asks the HybridBlocks in this tree to run as compiled graphs."""
        for cld in self._children.values():
            cld.hybridize(active, **kwargs)

    def cast(self, dtype):
        """Casts the parameters of this block and its children to ``dtype``."""
        for child in self._children.values():
            child.cast(dtype)
        for _, param in self.params.items():
            param.cast(dtype)

    def zero_grad(self):
        """Sets the gradients of all parameters to 0."""
        self.collect_params().zero_grad()

    def reset_ctx(self, ctx):
        """Moves all parameters to ``ctx``."""
        self.collect_params().reset_ctx(ctx)

    def __call__(self, *args):
        for hook in list(self._forward_pre_hooks.values()):
            hook(self, args)
        out = self.forward(*args)
        for hook in list(self._forward_hooks.values()):
            hook(self, args, out)
        return out

    def forward(self, *args):
        """The computation of this block; subclasses override it."""
        raise MXNetError("%s must override forward()" % type(self).__name__)

    def summary(self, *inputs):
        """Prints every block's output shape and parameter count for one forward pass
        of ``inputs``."""
        summary = OrderedDict()
        seen = set()
        hooks = []

        def _get_shape_str(args):
            shapes = _flatten_shapes(args)
            if len(shapes) == 1:
                return str(shapes[0])
            return str(shapes)

        def _register_summary_hook(block):
            # an AssertionError, as MXNet raises
            if isinstance(block, HybridBlock) and block._active:
                raise AssertionError('"{}" must not be hybridized to print summary.'
                                     .format(block.name))

            def _summary_hook(block, _, outputs):
                class_name = block.__class__.__name__
                block_idx = len(summary) - 1
                m_key = "%s-%i" % (class_name, block_idx + 1)
                summary[m_key] = OrderedDict()
                summary[m_key]["output_shape"] = _get_shape_str(outputs)
                params = 0
                summary[m_key]["trainable"] = 0
                summary[m_key]["shared"] = 0
                for p in block._reg_params.values():
                    n = int(np.prod(p.shape))
                    params += n
                    summary[m_key]["trainable"] += 0 if p.grad_req == "null" else n
                    if p in seen:
                        summary[m_key]["shared"] += n
                    else:
                        seen.add(p)
                summary[m_key]["n_params"] = params
            from .nn import HybridSequential, Sequential
            if not isinstance(block, (Sequential, HybridSequential)):
                hooks.append(block.register_forward_hook(_summary_hook))

        summary["Input"] = OrderedDict()
        summary["Input"]["output_shape"] = _get_shape_str(inputs)
        summary["Input"]["n_params"] = 0
        summary["Input"]["trainable"] = 0
        summary["Input"]["shared"] = 0
        try:
            self.apply(_register_summary_hook)
            self(*inputs)
            line_format = "{:>20}  {:>42} {:>15}"
            print("-" * 80)
            print(line_format.format("Layer (type)", "Output Shape", "Param #"))
            print("=" * 80)
            total_params = trainable_params = shared_params = 0
            for layer in summary:
                print(line_format.format(layer, str(summary[layer]["output_shape"]),
                                         summary[layer]["n_params"]))
                total_params += summary[layer]["n_params"]
                trainable_params += summary[layer]["trainable"]
                shared_params += summary[layer]["shared"]
            print("=" * 80)
            print("Parameters in forward computation graph, duplicate included")
            print("   Total params: " + str(total_params))
            print("   Trainable params: " + str(trainable_params))
            print("   Non-trainable params: " + str(total_params - trainable_params))
            print("Shared params in forward computation graph: " + str(shared_params))
            print("Unique parameters in model: " + str(total_params - shared_params))
            print("-" * 80)
        finally:
            for h in hooks:
                h.detach()


class HybridBlock(Block):
    """A Block whose computation ``hybrid_forward(F, x, *args, **params)`` is written
    with ``F`` (``mx.nd`` here, ``mx.sym`` when traced), receiving its registered
    parameters as keyword arguments on the input's device."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._cached_graph = ()
        self._cached_op = None
        self._active = False
        self._flags = []

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if isinstance(value, HybridBlock):
            self._clear_cached_op()

    def _clear_cached_op(self):
        self._cached_graph = ()
        self._cached_op = None
        self._cached_op_args = []

    def register_child(self, block, name=None):
        if not isinstance(block, HybridBlock):
            raise ValueError("Children of HybridBlock must also be HybridBlock, but %s has type "
                             "%s. If you are using Sequential, please try HybridSequential "
                             "instead." % (str(block), str(type(block))))
        super().register_child(block, name)
        self._clear_cached_op()

    def hybridize(self, active=True, **kwargs):
        """Marks this block (and its children) for graph execution. ``kwargs``
        (static_alloc, static_shape, ...) are recorded for the executor;
        ``inline_limit`` (default 2): while autograd records, a call of a graph of at
        most that many operators is recorded operator by operator rather than as one
        node (not with ``static_alloc``), as in MXNet."""
        self._active = active
        self._flags = list(kwargs.items())
        self._clear_cached_op()
        if active and (self._forward_hooks or self._forward_pre_hooks):
            warnings.warn('"{block}" is being hybridized while still having forward hook/'
                          'pre-hook. If "{block}" is a child of HybridBlock, the hooks will '
                          'not take effect.'.format(block=self))
        super().hybridize(active, **kwargs)

    def cast(self, dtype):
        self._clear_cached_op()
        super().cast(dtype)

    def infer_shape(self, *args):
        """Fills the unknown dimensions of this block's parameters from its inputs.
        Layers define it; a custom block with deferred parameters must give their
        shapes."""
        unknown = [p.name for p in self._reg_params.values()
                   if p.shape is None or any(d <= 0 for d in p.shape)]
        raise DeferredInitializationError(
            "%s cannot infer the shapes of its parameters %s from its inputs; give them full "
            "shapes when creating them (e.g. in_units, in_channels)"
            % (type(self).__name__, ", ".join(unknown)))

    def _deferred_infer_shape(self, *args):
        self.infer_shape(*args)

    def forward(self, x, *args):
        """Runs ``hybrid_forward`` with ``F = mx.nd`` on the device of ``x`` (as a
        cached graph once hybridized), or with ``F = mx.sym`` when ``x`` is a Symbol;
        finishes deferred initialization on the first call."""
        has_symbol, has_ndarray, ctx_set, first_ctx = _gather_type_ctx_info([x] + list(args))
        if has_symbol and has_ndarray:
            raise ValueError("In HybridBlock, we do not support mixed NDArrays and Symbols "
                             "types for the input. Please check the type of the args.\n")
        if not has_symbol and not has_ndarray:
            raise ValueError("In HybridBlock, there must be one NDArray or one Symbol in the "
                             "input. Please check the type of the args.\n")
        if has_symbol:
            params = {k: v.var() for k, v in self._reg_params.items()}
            with self.name_scope():
                return self.hybrid_forward(symbol, x, *args, **params)
        ctx = first_ctx
        if self._active:
            if len(ctx_set) > 1:
                raise ValueError("Find multiple contexts in the input, After hybridized, the "
                                 "HybridBlock only supports one input context. You can print "
                                 "the ele.ctx in the input arguments to inspect their contexts. "
                                 "Find all contexts = {}".format(ctx_set))
            with ctx:
                return self._call_cached_op(x, *args)
        with ctx:
            try:
                params = {k: v.data(ctx) for k, v in self._reg_params.items()}
            except DeferredInitializationError:
                self._deferred_infer_shape(x, *args)
                for _, v in self.params.items():
                    v._finish_deferred_init()
                params = {k: v.data(ctx) for k, v in self._reg_params.items()}
            return self.hybrid_forward(ndarray, x, *args, **params)

    # ---- the cached graph ---------------------------------------------------------
    def _get_graph(self, *args):
        """Traces ``hybrid_forward`` with Symbols once: (input variables, output)."""
        if not self._cached_graph:
            flat, self._in_format = _flatten(args, "input")
            real = [a for a in flat if a is not None]
            if len(real) == 1:
                names = ["data"]
            else:
                names = ["data%d" % i for i in range(len(real))]
            it = iter(names)
            inputs = [symbol.var(next(it)) if a is not None else None for a in flat]
            grouped = _regroup(inputs, self._in_format)[0]
            if not isinstance(grouped, list) or self._in_format == 0:
                grouped = [grouped]
            params = {i: j.var() for i, j in self._reg_params.items()}
            outer = (getattr(_TRACE, "shapes", None), getattr(_TRACE, "specialized", False))
            _TRACE.shapes = {v.name: getattr(a, "shape", None)
                             for v, a in zip(inputs, flat) if a is not None}
            _TRACE.specialized = False
            try:
                with self.name_scope():
                    out = self.hybrid_forward(symbol, *grouped, **params)
                self._trace_key = (tuple(getattr(a, "shape", None) for a in real)
                                   if _TRACE.specialized else None)
            finally:
                _TRACE.shapes, _TRACE.specialized = outer
            out, self._out_format = _flatten(out, "output")
            self._cached_graph = ([i for i in inputs if i is not None],
                                  out[0] if len(out) == 1 else symbol.Group(out))
        return self._cached_graph

    def _infer_param_shapes(self, inputs, flat_args):
        """Shapes of parameters that are still deferred, from a symbolic inference."""
        inputs_sym, out = self._cached_graph
        shapes = {i.name: a.shape for i, a in zip(inputs_sym, flat_args)}
        try:
            arg_shapes, _, aux_shapes = out.infer_shape_partial(**shapes)
        except MXNetError as e:
            raise MXNetError("%s (in hybridized block %s)" % (e, self.name)) from None
        names = out.list_arguments() + out.list_auxiliary_states()
        return dict(zip(names, arg_shapes + aux_shapes))

    def _build_cache(self, *args):
        inputs, out = self._get_graph(*args)
        flat = [a for a in _flatten(args, "input")[0] if a is not None]
        op = _core.CachedOpHandle(out.handle, _inline_limit(self._flags))
        data_pos = {sym.name: i for i, sym in enumerate(inputs)}
        params = {p.name: p for p in self.collect_params().values()}
        op_args = []
        for name in op.input_names():
            if name in data_pos:
                op_args.append((True, data_pos[name]))
            elif name in params:
                op_args.append((False, params[name]))
            else:
                raise MXNetError("%s: the traced graph has an input '%s' that is neither an input "
                                 "of the block nor one of its parameters" % (self.name, name))
        deferred = [p for is_arg, p in op_args if not is_arg and p._data is None]
        if any(p._deferred_init for p in deferred):
            shapes = self._infer_param_shapes(inputs, flat)
            for p in deferred:
                s = shapes.get(p.name, ())
                if s:
                    p.shape = s
                p._finish_deferred_init()
        self._cached_op_args = op_args
        self._cached_op = op

    def _call_cached_op(self, *args):
        if self._cached_op is not None and getattr(self, "_trace_key", None) is not None:
            shapes = tuple(getattr(a, "shape", None) for a in _flatten(args, "input")[0]
                           if a is not None)
            if shapes != self._trace_key:
                self._clear_cached_op()  # traced for other input shapes: trace again
        if self._cached_op is None:
            self._build_cache(*args)
        flat, fmt = _flatten(args, "input")
        if fmt != self._in_format:
            # trailing None arguments may stand for defaults left out (or given)
            stored = self._in_format
            n = min(len(fmt), len(stored))
            valid = len(fmt) != len(stored) and fmt[:n] == stored[:n] and \
                all(f == -1 for f in (fmt[n:] or stored[n:]))
            if not valid:
                raise ValueError("The argument structure of HybridBlock does not match the "
                                 "cached version. Stored format = {}, input format = {}"
                                 .format(fmt, self._in_format))
        flat = [a for a in flat if a is not None]
        for a in flat:
            if not isinstance(a, NDArray):
                raise MXNetError("%s: a hybridized block takes NDArrays, got %s"
                                 % (self.name, type(a).__name__))
        ctx = flat[0].context
        # The cached graph computes on dense arrays: a csr or row_sparse input takes
        # MXNet's storage fallback (cast to dense) on the way in.
        flat = [a if a.stype == "default" else a.tostype("default") for a in flat]
        arrays = [flat[v] if is_arg else v.data(ctx) for is_arg, v in self._cached_op_args]
        callback = getattr(self, "_callback", None)
        try:
            if callback is None:
                outs = self._cached_op.forward(arrays)
            else:
                outs = self._cached_op.forward(arrays, callback, bool(self._monitor_all))
        except MXNetError as e:
            raise MXNetError("%s (in hybridized block %s)" % (e, self.name)) from None
        return _regroup(outs, self._out_format)[0]

    def register_op_hook(self, callback, monitor_all=False):
        """Calls ``callback(node_name, op_name, array)`` with the outputs of every
        operator of the hybridized graph as it runs (and, with ``monitor_all``, its
        inputs first: ``dense0_fwd_data``, ``dense0_fwd_weight``, ... with the
        operator's input names, ``relu0_fwd_input0`` for operators MXNet registers
        without them), e.g. ``('dense0_fwd_output', 'FullyConnected', arr)``. Set on
        this block and its direct children, as MXNet does."""
        self._callback = callback
        self._monitor_all = monitor_all
        for child in self._children.values():
            child._callback = callback
            child._monitor_all = monitor_all

    def export(self, path, epoch=0, remove_amp_cast=True):
        """Writes the traced graph to ``path-symbol.json`` and the parameters to
        ``path-%04d.params`` (``arg:``/``aux:`` names), the files
        ``SymbolBlock.imports`` and MXNet's Module read."""
        if not self._cached_graph:
            raise RuntimeError("Please first call block.hybridize() and then run forward with "
                               "this block at least once before calling export.")
        sym = self._cached_graph[1]
        sym.save("%s-symbol.json" % path, remove_amp_cast=remove_amp_cast)
        arg_names = set(sym.list_arguments())
        aux_names = set(sym.list_auxiliary_states())
        arg_dict = {}
        for name, param in self.collect_params().items():
            if name in arg_names:
                arg_dict["arg:%s" % name] = param._reduce()
            elif name in aux_names:
                arg_dict["aux:%s" % name] = param._reduce()
        ndarray.save("%s-%04d.params" % (path, epoch), arg_dict)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """The computation, written with ``F`` (mx.nd or mx.sym); subclasses override."""
        raise MXNetError("%s must override hybrid_forward()" % type(self).__name__)


def _common_prefix(names):
    if not names:
        return ""
    prefix = names[0]
    for name in names:
        i = 0
        while i < len(prefix) and i < len(name) and prefix[i] == name[i]:
            i += 1
        prefix = prefix[:i]
    return prefix


class SymbolBlock(HybridBlock):
    """A block running a Symbol: ``outputs`` (a Symbol or list of Symbols) computed
    from the variables ``inputs``; every other argument of the graph becomes a
    Parameter (auxiliary states with ``grad_req='null'``). Always runs as a cached
    graph."""

    @staticmethod
    def imports(symbol_file, input_names, param_file=None, ctx=None, allow_missing=False,
                ignore_extra=False):
        """A SymbolBlock from files written by ``export`` (or MXNet's
        ``HybridBlock.export`` / Module checkpoints)."""
        sym = symbol.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        if param_file is None:
            inputs = [symbol.var(i, dtype="float32") for i in input_names]
        else:
            inputs = [symbol.var(i) for i in input_names]
        ret = SymbolBlock(sym, inputs)
        if param_file is not None:
            ret.collect_params().load(param_file, ctx=ctx, allow_missing=allow_missing,
                                      ignore_extra=ignore_extra, cast_dtype=True,
                                      dtype_source="saved")
        return ret

    def __init__(self, outputs, inputs, params=None):
        super().__init__(prefix="", params=None)
        self._prefix = ""
        self._params = ParameterDict("", params)
        if isinstance(inputs, Symbol) and len(inputs.list_outputs()) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        syms, self._in_format = _flatten(inputs, "input")
        out, self._out_format = _flatten(outputs, "output")
        # MXNet 1.9.1: a SymbolBlock cannot hold row_sparse parameters
        rsp = str(_STORAGE_TYPE_STR_TO_ID["row_sparse"])
        for o in out:
            for j in o.get_internals():
                assert j.attr("__storage_type__") != rsp, \
                    "SymbolBlock doesn't support Parameter '%s' because its storage type is " \
                    "'row_sparse'." % j.name
        out = out[0] if len(out) == 1 else symbol.Group(out)
        input_names = set()
        for i in syms:
            if not isinstance(i, Symbol) or len(i.get_internals().list_outputs()) != 1:
                raise MXNetError("SymbolBlock: input %s is not a variable; inputs must be "
                                 "Variables (mx.sym.var)" % (i,))
            input_names.add(i.name)
        missing = [n for n in input_names if n not in out.list_inputs()]
        if missing:
            raise MXNetError("SymbolBlock: input %s is not used by the outputs; the graph's "
                             "inputs are %s" % (", ".join(repr(m) for m in missing),
                                                out.list_inputs()))
        arg_types, _, aux_types = out.infer_type_partial()
        for arg, t in zip(out.list_arguments(), arg_types):
            if arg not in input_names:
                self.params.get(arg, allow_deferred_init=True, dtype=t or np.float32)
        for aux, t in zip(out.list_auxiliary_states(), aux_types):
            if aux not in input_names:
                self.params.get(aux, grad_req="null", allow_deferred_init=True,
                                dtype=t or np.float32)
        self._cached_graph = syms, out
        len_prefix = len(_common_prefix(list(self._params.keys())))
        self._reg_params = {key[len_prefix:]: val for key, val in self._params.items()}

    def forward(self, x, *args):
        if isinstance(x, NDArray):
            return self._call_cached_op(x, *args)
        flat = _flatten([x] + list(args), "input")[0]
        if len(flat) != len(self._cached_graph[0]):
            raise ValueError("SymbolBlock: %d inputs given, the block takes %d"
                             % (len(flat), len(self._cached_graph[0])))
        ret = self._cached_graph[1](**{k.name: v for k, v in zip(self._cached_graph[0], flat)})
        return _regroup(list(ret) if len(ret.list_outputs()) > 1 else [ret],
                        self._out_format)[0]

    def _clear_cached_op(self):
        tmp = self._cached_graph
        super()._clear_cached_op()
        self._cached_graph = tmp

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise MXNetError("SymbolBlock runs its Symbol; hybrid_forward is not used")
