"""Gluon blocks: ``Block`` (imperative ``forward``), ``HybridBlock``
(``hybrid_forward(F, x, **params)``), and the naming scope that gives children
prefixed names (``sequential0_dense0_weight``).

``HybridBlock.forward`` runs ``hybrid_forward`` with ``F = mx.nd``. Parameters with
unknown dimensions are initialized on the first forward: the block's ``infer_shape``
(each layer defines it from its input) fills their shapes first. ``hybridize()``
records the request; the graph executor takes it up where it exists, and until then
blocks run imperatively (no speed-up is claimed).
"""

import re
import threading
import warnings
from collections import OrderedDict

import numpy as np

from .. import initializer
from .. import name as _name
from .. import ndarray
from ..base import MXNetError
from ..ndarray import NDArray
from .parameter import DeferredInitializationError, Parameter, ParameterDict, _indent

__all__ = ["Block", "HybridBlock"]


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
        ret = ParameterDict(self._params.prefix)
        if not select:
            ret.update(self.params)
        else:
            pattern = re.compile(select)
            ret.update({n: v for n, v in self.params.items() if pattern.match(n)})
        for cld in self._children.values():
            ret.update(cld.collect_params(select=select))
        return ret

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
            if isinstance(block, HybridBlock) and block._active:
                raise MXNetError('"{}" must not be hybridized to print summary.'.format(block.name))

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

    def register_child(self, block, name=None):
        if not isinstance(block, HybridBlock):
            raise ValueError("Children of HybridBlock must also be HybridBlock, but %s has type "
                             "%s. If you are using Sequential, please try HybridSequential "
                             "instead." % (str(block), str(type(block))))
        super().register_child(block, name)
        self._clear_cached_op()

    def hybridize(self, active=True, **kwargs):
        """Marks this block (and its children) for graph execution. ``kwargs``
        (static_alloc, static_shape, ...) are recorded for the executor."""
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
        """Runs ``hybrid_forward`` with ``F = mx.nd`` on the device of ``x``; finishes
        deferred initialization on the first call."""
        if not isinstance(x, NDArray):
            raise MXNetError("%s.forward expects an NDArray input, got %s"
                             % (type(self).__name__, type(x).__name__))
        ctx = x.context
        with ctx:
            try:
                params = {k: v.data(ctx) for k, v in self._reg_params.items()}
            except DeferredInitializationError:
                self._deferred_infer_shape(x, *args)
                for _, v in self.params.items():
                    v._finish_deferred_init()
                params = {k: v.data(ctx) for k, v in self._reg_params.items()}
            return self.hybrid_forward(ndarray, x, *args, **params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """The computation, written with ``F`` (mx.nd or mx.sym); subclasses override."""
        raise MXNetError("%s must override hybrid_forward()" % type(self).__name__)
