"""Gluon parameters: ``Parameter`` (one array per device, with its gradient),
``Constant`` and ``ParameterDict`` (prefix-named collection; initialize, save, load).

A parameter whose shape is not known yet (a 0 in it, e.g. ``Dense``'s input size)
defers its initialization until the first forward pass sets the shape. Errors
(uninitialized parameter, wrong device, incompatible file) are ``MXNetError``s that
name the parameter; MXNet 1.9 raises ``RuntimeError``/``AssertionError`` for some of
them, and the classes here are also ``RuntimeError``/``ValueError`` so both kinds of
``except`` keep working.
"""

import contextlib
import re
import warnings
from collections import OrderedDict

import numpy as np

from .. import initializer
from .. import ndarray
from ..base import MXNetError, mx_real_t
from ..context import Context, cpu, current_context
from ..ndarray import NDArray

__all__ = ["DeferredInitializationError", "Parameter", "Constant", "ParameterDict",
           "tensor_types"]

tensor_types = (NDArray,)


class DeferredInitializationError(MXNetError):
    """A parameter's data was asked for before its deferred initialization ran."""


class ParameterError(MXNetError, RuntimeError):
    """Misuse of a parameter (not initialized, wrong context, ...)."""


class ParameterLoadError(MXNetError, ValueError):
    """A parameter file does not match the parameters (names, shapes, dtypes)."""


def _pause():
    try:
        from .. import autograd
    except ImportError:
        return contextlib.nullcontext()
    return autograd.pause()


def _shape_known(shape):
    return shape is not None and len(shape) > 0 and all(int(d) > 0 for d in shape)


def _dtype_name(dtype):
    from ..base import dtype_name
    return dtype_name(dtype)


def _add_all(arrays):
    """Sum of a list of same-shape NDArrays (``add_n`` where the registry has it)."""
    add_n = getattr(ndarray, "add_n", None)
    if add_n is not None:
        return add_n(*arrays)
    total = arrays[0]
    for a in arrays[1:]:
        total = total + a
    return total


def _brief_print_list(lst, limit=7):
    lst = list(lst)
    if len(lst) > limit:
        return _brief_print_list(lst[:limit // 2], limit) + ", ..., " + \
            _brief_print_list(lst[-limit // 2:], limit)
    return ", ".join(["'%s'" % str(i) for i in lst])


class Parameter:
    """A weight of a Block: one NDArray per device it lives on, and its gradient.

    Parameters
    ----------
    name : str
        Name of this parameter.
    grad_req : {'write', 'add', 'null'}
        How gradients are stored (overwritten, accumulated, none).
    shape : tuple of int
        Shape; 0 marks a dimension not known yet (deferred initialization).
    dtype : numpy.dtype or str
        Data type.
    lr_mult, wd_mult : float
        Multipliers of the learning rate and weight decay.
    init : Initializer
        Initializer of this parameter (default: the one given to ``initialize``).
    allow_deferred_init : bool
        Allow initialization to wait for the shape to be known.
    differentiable : bool
        False forces ``grad_req='null'``.
    """

    def __init__(self, name="weight", grad_req="write", shape=None, dtype=mx_real_t,
                 lr_mult=1.0, wd_mult=1.0, init=None, allow_deferred_init=False,
                 differentiable=True, stype="default", grad_stype="default"):
        self._var = None
        self._data = None
        self._grad = None
        self._ctx_list = None
        self._ctx_map = None
        self._trainer = None
        self._deferred_init = ()
        self._differentiable = differentiable
        self._allow_deferred_init = allow_deferred_init
        self._grad_req = None
        if isinstance(shape, int):
            shape = (shape,)
        self._shape = tuple(shape) if shape is not None else None
        self.name = name
        self._dtype = dtype
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.grad_req = grad_req
        self.init = init
        valid_stypes = ("default", "row_sparse", "csr")
        # AssertionErrors for unknown storage types, as MXNet raises
        assert grad_stype in valid_stypes, "grad_stype for Parameter '%s' must be one of " \
            "'default', 'row_sparse', or 'csr', but got '%s'" % (name, grad_stype)
        assert stype in valid_stypes, "stype for Parameter '%s' must be one of 'default', " \
            "'row_sparse', or 'csr', but got '%s'" % (name, stype)
        self._stype = stype
        self._grad_stype = grad_stype

    def __repr__(self):
        return "Parameter {name} (shape={shape}, dtype={dtype})".format(
            name=self.name, shape=self.shape, dtype=self.dtype)

    @property
    def grad_req(self):
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req):
        if req not in ("write", "add", "null"):
            raise ValueError("grad_req must be one of 'write', 'add', or 'null', but got '%s'"
                             % req)
        if not self._differentiable:
            req = "null"
        if self._grad_req == req:
            return
        self._grad_req = req
        if req == "null" and self._grad is not None:
            self._grad = None
            self._data = [i.detach() for i in self._data]
        elif self._data is not None:
            self._init_grad()

    @property
    def dtype(self):
        return self._dtype

    @dtype.setter
    def dtype(self, dtype):
        # As MXNet's: assigning a dtype casts the parameter's arrays.
        self.cast(dtype)

    @property
    def shape(self):
        return self._shape

    @shape.setter
    def shape(self, new_shape):
        new_shape = tuple(new_shape)
        if self._shape is None:
            self._shape = new_shape
            return
        if len(self._shape) != len(new_shape) or \
                not all(j in (0, -1, i) for i, j in zip(new_shape, self._shape)):
            raise ParameterError("Parameter '%s': expected shape %s is incompatible with given "
                                 "shape %s." % (self.name, str(new_shape), str(self._shape)))
        self._shape = new_shape

    def _set_trainer(self, trainer):
        """Remembers the Trainer updating this parameter. As in MXNet, a later Trainer
        replaces it for a dense parameter; a sparse one keeps its Trainer (its rows are
        pulled through that Trainer's store), so another is a RuntimeError."""
        if self._stype != "default" and self._trainer is not None and trainer is not None \
                and self._trainer is not trainer:
            raise RuntimeError("Failed to set the trainer for Parameter '%s' because it was "
                               "already set. More than one trainers for a %s Parameter is "
                               "not supported." % (self.name, self._stype))
        self._trainer = trainer

    def _check_and_get(self, arr_list, ctx):
        if arr_list is not None:
            if ctx is list:
                return arr_list
            if ctx is None:
                if len(arr_list) == 1:
                    return arr_list[0]
                ctx = current_context()
            ctx_list = self._ctx_map[ctx.device_typeid & 1]
            if ctx.device_id < len(ctx_list):
                idx = ctx_list[ctx.device_id]
                if idx is not None:
                    return arr_list[idx]
            raise ParameterError(
                "Parameter '%s' was not initialized on context %s. It was only initialized on "
                "%s." % (self.name, str(ctx), str(self._ctx_list)))
        if self._deferred_init:
            raise DeferredInitializationError(
                "Parameter '%s' has not been initialized yet because initialization was "
                "deferred. Actual initialization happens during the first forward pass. Please "
                "pass one batch of data through the network before accessing Parameters. You "
                "can also avoid deferred initialization by specifying in_units, num_features, "
                "etc., for network layers." % self.name)
        raise ParameterError(
            "Parameter '%s' has not been initialized. Note that you should initialize "
            "parameters and create Trainer with Block.collect_params() instead of Block.params "
            "because the later does not include Parameters of nested child Blocks" % self.name)

    def _load_init(self, data, ctx, cast_dtype=False, dtype_source="current"):
        """Sets the parameter from a loaded array (shapes/dtypes checked by the caller)."""
        if self.shape:
            self.shape = tuple(i if i not in (0, -1) else j for i, j in zip(self.shape, data.shape))
        if self.dtype is not None:
            if cast_dtype and np.dtype(self.dtype) != np.dtype(data.dtype):
                if dtype_source == "current":
                    data = data.astype(self.dtype, copy=False)
                else:
                    self.dtype = data.dtype
        if isinstance(ctx, Context):
            ctx = [ctx]
        if self._data is None:
            if self._deferred_init:
                ctx = self._deferred_init[1]
            elif ctx is None:
                ctx = [cpu()]
            self._init_impl(data, ctx)
        else:
            self.set_data(data)
        self._deferred_init = ()

    def _check_loadable(self, data, ctx, cast_dtype, dtype_source, fname):
        """Raises ParameterLoadError unless ``data`` can be loaded into this parameter."""
        if cast_dtype and dtype_source not in ("current", "saved"):
            raise ValueError("dtype_source must be either 'current' or 'saved', got %r"
                             % (dtype_source,))
        if self.shape:
            if len(self.shape) != len(data.shape) or not all(
                    s in (0, -1, d) for s, d in zip(self.shape, data.shape)):
                raise ParameterLoadError(
                    "Failed loading Parameter '%s' from saved params%s: shape incompatible "
                    "expected %s vs saved %s" % (self.name, " in '%s'" % fname if fname else "",
                                                 str(self.shape), str(data.shape)))
        if self.dtype is not None and not cast_dtype and \
                np.dtype(self.dtype) != np.dtype(data.dtype):
            raise ParameterLoadError(
                "Failed loading Parameter '%s' from saved params: dtype incompatible expected %s "
                "vs saved %s. Set cast_dtype=True to cast the dtype of saved params."
                % (self.name, _dtype_name(self.dtype), _dtype_name(data.dtype)))
        if ctx is not None:
            cl = [ctx] if isinstance(ctx, Context) else list(ctx)
            have = None
            if self._data is not None:
                have = self._ctx_list
            elif self._deferred_init:
                have = self._deferred_init[1]
            if have is not None and set(cl) != set(have):
                raise ParameterLoadError(
                    "Failed to load Parameter '%s' on %s because it was previous initialized on "
                    "%s." % (self.name, str(cl), str(list(have))))

    def _finish_deferred_init(self):
        """Runs a deferred initialization once the shape is known."""
        if not self._deferred_init:
            return
        init, ctx, default_init, data = self._deferred_init
        if not _shape_known(self.shape):
            raise DeferredInitializationError(
                "Cannot initialize Parameter '%s' because it has invalid shape: %s. Please "
                "specify in_units, in_channels, etc for `Block`s." % (self.name, str(self.shape)))
        self._deferred_init = ()
        with _pause():
            if data is None:
                data = ndarray.zeros(shape=self.shape, dtype=self.dtype, ctx=cpu())
                initializer.create(default_init)(
                    initializer.InitDesc(self.name, {"__init__": init}), data)
                if self._stype != "default":
                    data = data.tostype(self._stype)
            self._init_impl(data, ctx)

    def _init_impl(self, data, ctx_list):
        self._ctx_list = list(ctx_list)
        self._ctx_map = [[], []]
        for i, ctx in enumerate(self._ctx_list):
            dev_list = self._ctx_map[ctx.device_typeid & 1]
            while len(dev_list) <= ctx.device_id:
                dev_list.append(None)
            dev_list[ctx.device_id] = i
        self._data = [data.copyto(ctx) for ctx in self._ctx_list]
        self._init_grad()

    def _init_grad(self):
        if self.grad_req == "null":
            self._grad = None
            return
        if self._stype != "default":
            # a sparse weight is an autograd variable with its own gradient buffers
            self._grad = [ndarray.zeros(shape=d.shape, dtype=d.dtype, ctx=d.context,
                                        stype=self._grad_stype) for d in self._data]
            from .. import autograd
            autograd.mark_variables(self._data, self._grad, self.grad_req)
            return
        for d in self._data:
            d.attach_grad(grad_req=self.grad_req, stype=self._grad_stype)
        self._grad = [d.grad for d in self._data]

    def _reduce(self):
        """The parameter's value on the CPU (the mean over its devices)."""
        if self._stype != "default":
            trainer = self._trainer
            arr = self._check_and_get(self._data, list)[0]
            if trainer is not None and trainer._kv_initialized and trainer._kvstore is not None \
                    and self.name in trainer._param2idx:
                all_rows = ndarray.arange(0, self.shape[0], dtype="int64", ctx=arr.context)
                trainer._row_sparse_pull(self, arr, all_rows, full_idx=True)
            return arr.copyto(cpu())
        block = self.list_data()
        if len(block) > 1:
            data = _add_all([w.copyto(cpu()) for w in block]) / len(block)
        else:
            data = self.data().copyto(cpu())
        return data

    def initialize(self, init=None, ctx=None, default_init=initializer.Uniform(),
                   force_reinit=False):
        """Allocates and initializes the parameter's arrays on ``ctx`` (a Context or a
        list; default the current one). With an unknown shape and
        ``allow_deferred_init`` the work waits for the first forward pass."""
        if self._data is not None and not force_reinit:
            warnings.warn("Parameter '%s' is already initialized, ignoring. Set "
                          "force_reinit=True to re-initialize." % self.name, stacklevel=2)
            return
        self._data = self._grad = None
        if ctx is None:
            ctx = [current_context()]
        if isinstance(ctx, Context):
            ctx = [ctx]
        if init is None:
            init = default_init if self.init is None else self.init
        if not _shape_known(self.shape):
            if self._allow_deferred_init:
                self._deferred_init = (init, ctx, default_init, None)
                return
            raise ParameterError("Cannot initialize Parameter '%s' because it has invalid "
                                 "shape: %s." % (self.name, str(self.shape)))
        self._deferred_init = (init, ctx, default_init, None)
        self._finish_deferred_init()

    def reset_ctx(self, ctx):
        """Moves the parameter (its mean value) to other devices."""
        if ctx is None:
            ctx = [current_context()]
        if isinstance(ctx, Context):
            ctx = [ctx]
        if self._data:
            data = self._reduce()
            with _pause():
                self._init_impl(data, ctx)
        elif self._deferred_init:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, ctx, default_init, data)
        else:
            raise ParameterError("Cannot reset context for Parameter '%s' because it has not "
                                 "been initialized." % self.name)

    def set_data(self, data):
        """Sets the value on every device."""
        if not isinstance(data, NDArray):
            data = ndarray.array(data, dtype=self.dtype)
        self.shape = data.shape
        if self._data is None:
            if not self._deferred_init:
                raise ParameterError("Parameter '%s' has not been initialized" % self.name)
            self._deferred_init = self._deferred_init[:3] + (data,)
            return
        # a store that runs the optimizer holds its own copy: drop it (re-initialized
        # from the new value at the next step)
        trainer = self._trainer
        if trainer is not None and trainer._kv_initialized and trainer._update_on_kvstore \
                and self not in trainer._params_to_init:
            trainer._reset_kvstore()
        for arr in self._check_and_get(self._data, list):
            arr[:] = data

    def _check_dense(self, what):
        if self._stype != "default":
            raise RuntimeError(
                "Cannot return a copy of Parameter '%s' via %s() because its storage type is %s. "
                "Please use row_sparse_data() instead." % (self.name, what, self._stype))

    def data(self, ctx=None):
        """The parameter's array on ``ctx`` (the only one when it lives on one device)."""
        self._check_dense("data")
        return self._check_and_get(self._data, ctx)

    def list_data(self):
        """The parameter's arrays on all its devices."""
        self._check_dense("list_data")
        return self._check_and_get(self._data, list)

    def _row_sparse_check(self, what, row_id):
        if self._stype != "row_sparse":
            raise RuntimeError("Cannot return copies of Parameter '%s' on all contexts via %s() "
                               "because its storage type is %s. Please use data() instead."
                               % (self.name, what, self._stype))
        if not isinstance(row_id, NDArray):
            raise TypeError("row_id must have NDArray type, but %s is given" % type(row_id))

    def _get_row_sparse(self, arr_list, ctx, row_id):
        trainer = self._trainer
        if trainer is None:
            raise RuntimeError("Cannot get row_sparse data for Parameter '%s' when no "
                               "Trainer is created with it." % self.name)
        results = self._check_and_get(arr_list, ctx)
        trainer._row_sparse_pull(self, results, row_id)
        return results

    def row_sparse_data(self, row_id):
        """The rows ``row_id`` of this row_sparse parameter on ``row_id``'s context (a
        RowSparseNDArray pulled through the Trainer's store)."""
        self._row_sparse_check("row_sparse_data", row_id)
        return self._get_row_sparse(self._data, row_id.context, row_id)

    def list_row_sparse_data(self, row_id):
        """The rows ``row_id`` of this row_sparse parameter on all its contexts."""
        self._row_sparse_check("list_row_sparse_data", row_id)
        return self._get_row_sparse(self._data, list, row_id)

    def grad(self, ctx=None):
        """The gradient array on ``ctx``."""
        if self._data is not None and self._grad is None:
            raise ParameterError("Cannot get gradient array for Parameter '%s' because "
                                 "grad_req='null'" % self.name)
        return self._check_and_get(self._grad, ctx)

    def list_grad(self):
        """The gradient arrays on all devices."""
        if self._data is not None and self._grad is None:
            raise ParameterError("Cannot get gradient array for Parameter '%s' because "
                                 "grad_req='null'" % self.name)
        return self._check_and_get(self._grad, list)

    def list_ctx(self):
        """The devices this parameter lives (or will live) on."""
        if self._data is None:
            if self._deferred_init:
                return self._deferred_init[1]
            raise ParameterError("Parameter '%s' has not been initialized" % self.name)
        return self._ctx_list

    def zero_grad(self):
        """Sets the gradients to 0."""
        if self._grad is None:
            return
        for g in self._grad:
            if g.stype != "default":
                ndarray.zeros_like(g, out=g)
            else:
                g[:] = 0

    def var(self):
        """The symbol of this parameter (``mx.sym.var`` with its attributes)."""
        if self._var is None:
            from .. import symbol
            self._var = symbol.var(self.name, shape=self.shape, dtype=self.dtype,
                                   lr_mult=self.lr_mult, wd_mult=self.wd_mult, init=self.init,
                                   stype=self._stype)
        return self._var

    def cast(self, dtype):
        """Casts data and gradient to ``dtype``."""
        self._dtype = dtype
        if self._data is None:
            return
        with _pause():
            self._data = [i.astype(dtype) for i in self._data]
            if self._grad is not None:
                self._init_grad()


class Constant(Parameter):
    """A parameter that is not updated (``grad_req='null'``), holding ``value``."""

    def __init__(self, name, value):
        if not isinstance(value, NDArray):
            value = ndarray.array(value)
        self.value = value

        class Init(initializer.Initializer):
            def _init_weight(self, _, arr):
                value.copyto(arr)

            def dumps(self):
                return '["constant", {"value": %s}]' % (value.asnumpy().tolist(),)
        super().__init__(name, grad_req="null", shape=value.shape, dtype=value.dtype,
                         init=Init())

    def __repr__(self):
        return "Constant {name} (shape={shape}, dtype={dtype})".format(
            name=self.name, shape=self.shape, dtype=self.dtype)

    @property
    def grad_req(self):
        return "null"

    @grad_req.setter
    def grad_req(self, req):
        if req != "null":
            warnings.warn('Constant parameter "{}" does not support grad_req other than "null", '
                          'and new value "{}" is ignored.'.format(self.name, req))
        self._grad_req = "null"


def _indent(s_, num_spaces):
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    s = [(num_spaces * " ") + line for line in s]
    return first + "\n" + "\n".join(s)


class ParameterDict:
    """A dict of Parameters whose names share ``prefix``; ``shared`` is searched
    (and shared) before creating new ones."""

    def __init__(self, prefix="", shared=None):
        self._prefix = prefix
        self._params = OrderedDict()
        self._shared = shared

    def __repr__(self):
        name = self._prefix + " " if self._prefix else ""
        return "{name}(\n{content}\n)".format(
            name=name, content="\n".join([_indent("  {0}".format(v), 2)
                                          for v in self.values()]))

    def __getitem__(self, key):
        return self._params[key]

    def __iter__(self):
        return iter(self._params)

    def __len__(self):
        return len(self._params)

    def __contains__(self, key):
        return key in self._params

    def items(self):
        return self._params.items()

    def keys(self):
        return self._params.keys()

    def values(self):
        return self._params.values()

    @property
    def prefix(self):
        """The prefix of every name in this dict."""
        return self._prefix

    def _get_impl(self, name):
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._shared._params[name]
        return None

    def get(self, name, **kwargs):
        """The parameter ``prefix + name``, created with ``kwargs`` when absent; an
        existing one must agree with the given attributes (unknown 0 dims are filled)."""
        name = self.prefix + name
        param = self._get_impl(name)
        if param is None:
            param = Parameter(name, **kwargs)
            self._params[name] = param
            return param
        for k, v in kwargs.items():
            if hasattr(param, k) and getattr(param, k) is not None:
                existing = getattr(param, k)
                if k == "shape" and len(v) == len(existing):
                    inferred, matched = [], True
                    for d1, d2 in zip(v, existing):
                        if d1 != d2 and d1 > 0 and d2 > 0:
                            matched = False
                            break
                        inferred.append(d2 if d1 in (0, -1) else d1)
                    if matched:
                        param._shape = tuple(inferred)
                        continue
                elif k == "dtype" and np.dtype(v) == np.dtype(existing):
                    continue
                if v is not None and v != existing:
                    raise MXNetError(
                        "Cannot retrieve Parameter '%s' because desired attribute does not match "
                        "with stored for attribute '%s': desired '%s' vs stored '%s'."
                        % (name, k, str(v), str(existing)))
            else:
                setattr(param, k, v)
        return param

    def get_constant(self, name, value=None):
        """The Constant ``prefix + name`` (created from ``value`` when absent)."""
        name = self.prefix + name
        param = self._get_impl(name)
        if param is None:
            if value is None:
                raise KeyError("No constant named '{}'. Please specify value if you want to "
                               "create a new constant.".format(name))
            param = Constant(name, value)
            self._params[name] = param
        elif value is not None:
            if not isinstance(param, Constant):
                raise MXNetError("Parameter '{}' already exists but it is not a constant."
                                 .format(name))
            if isinstance(value, NDArray):
                value = value.asnumpy()
            if param.shape != np.shape(value) or \
                    not np.array_equal(param.value.asnumpy(), np.asarray(value)):
                raise MXNetError("Constant '{}' already exists but its value doesn't match "
                                 "new value".format(name))
        return param

    def update(self, other):
        """Adds the parameters of ``other`` (same-name parameters must be the same)."""
        for k, v in other.items():
            if k in self._params and self._params[k] is not v:
                raise MXNetError("Cannot update self with other because they have different "
                                 "Parameters with the same name '%s'" % k)
        for k, v in other.items():
            self._params[k] = v

    def initialize(self, init=initializer.Uniform(), ctx=None, verbose=False,
                   force_reinit=False):
        """Initializes every parameter (its own ``init`` first, else ``init``)."""
        if verbose:
            init.set_verbosity(verbose=verbose)
        for _, v in self.items():
            v.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self):
        """Sets every gradient to 0."""
        for p in self.values():
            p.zero_grad()

    def reset_ctx(self, ctx):
        """Moves every parameter to ``ctx``."""
        for p in self.values():
            p.reset_ctx(ctx)

    def list_ctx(self):
        """The devices the parameters live on."""
        s = []
        for p in self.values():
            for c in p.list_ctx():
                if c not in s:
                    s.append(c)
        return s

    def setattr(self, name, value):
        """Sets attribute ``name`` (e.g. 'grad_req', 'lr_mult') of every parameter."""
        for p in self.values():
            setattr(p, name, value)

    def save(self, fname, strip_prefix=""):
        """Saves the parameters with ``mx.nd.save``, names without ``strip_prefix``."""
        arg_dict = {}
        for param in self.values():
            if not param.name.startswith(strip_prefix):
                raise ValueError(
                    "Prefix '%s' is to be striped before saving, but Parameter's name '%s' does "
                    "not start with '%s'. this may be due to your Block shares parameters from "
                    "other Blocks or you forgot to use 'with name_scope()' when creating child "
                    "blocks. For more info on naming, please see "
                    "https://mxnet.apache.org/api/python/docs/tutorials/packages/gluon/blocks/"
                    "naming.html" % (strip_prefix, param.name, strip_prefix))
            arg_dict[param.name[len(strip_prefix):]] = param._reduce()
        ndarray.save(fname, arg_dict)

    def load(self, fname, ctx=None, allow_missing=False, ignore_extra=False, restore_prefix="",
             cast_dtype=False, dtype_source="current"):
        """Loads parameters saved by ``save`` (names get ``restore_prefix``). Every name,
        shape and dtype is checked before any parameter changes."""
        if restore_prefix:
            for name in self.keys():
                if not name.startswith(restore_prefix):
                    raise ValueError("restore_prefix is '%s' but Parameters name '%s' does not "
                                     "start with '%s'" % (restore_prefix, name, restore_prefix))
        ndarray_load = ndarray.load(fname)
        if not isinstance(ndarray_load, dict):
            raise ParameterLoadError("File '%s' holds a list of arrays without names; "
                                     "parameters need a dict" % fname)
        self.load_dict(ndarray_load, ctx, allow_missing, ignore_extra, restore_prefix,
                       filename=fname, cast_dtype=cast_dtype, dtype_source=dtype_source)

    def load_dict(self, param_dict, ctx=None, allow_missing=False, ignore_extra=False,
                  restore_prefix="", filename=None, cast_dtype=False, dtype_source="current"):
        """Loads parameters from ``param_dict`` (name -> NDArray; names may carry
        ``arg:`` / ``aux:``), checked as :meth:`load` checks a file (``filename`` only
        names the source in messages)."""
        fname = filename if filename is not None else "<dict>"
        if not isinstance(param_dict, dict):
            raise ParameterLoadError("load_dict: param_dict must be a dict of name to NDArray, "
                                     "got %s" % type(param_dict).__name__)
        if restore_prefix:
            for name in self.keys():
                if not name.startswith(restore_prefix):
                    raise ValueError("restore_prefix is '%s' but Parameters name '%s' does not "
                                     "start with '%s'" % (restore_prefix, name, restore_prefix))
        lprefix = len(restore_prefix)
        loaded = [(k[4:] if k.startswith("arg:") or k.startswith("aux:") else k, v)
                  for k, v in param_dict.items()]
        arg_dict = {restore_prefix + k: v for k, v in loaded}
        if not allow_missing:
            for name in self.keys():
                if name not in arg_dict:
                    raise ParameterLoadError(
                        "Parameter '%s' is missing in file '%s', which contains parameters: %s. "
                        "Please make sure source and target networks have the same prefix."
                        % (name[lprefix:], fname, _brief_print_list(arg_dict.keys())))
        for name in arg_dict:
            if name not in self._params:
                if not ignore_extra:
                    raise ParameterLoadError(
                        "Parameter '%s' loaded from file '%s' is not present in ParameterDict, "
                        "choices are: %s. Set ignore_extra to True to ignore. Please make sure "
                        "source and target networks have the same prefix."
                        % (name[lprefix:], fname, _brief_print_list(self._params.keys())))
            else:
                self[name]._check_loadable(arg_dict[name], ctx, cast_dtype, dtype_source, fname)
        for name in arg_dict:
            if name in self._params:
                self[name]._load_init(arg_dict[name], ctx, cast_dtype=cast_dtype,
                                      dtype_source=dtype_source)

    def select(self, pattern):
        """The parameters whose names match the regular expression ``pattern``."""
        ret = ParameterDict(self._prefix)
        prog = re.compile(pattern)
        ret.update({k: v for k, v in self.items() if prog.match(k)})
        return ret
