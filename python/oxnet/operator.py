"""Operators defined in Python, after MXNet 1.x's ``mx.operator``.

A custom operator is a :class:`CustomOpProp` (its arguments, outputs, auxiliary
states, shape/type inference) registered under a name with :func:`register`, and the
:class:`CustomOp` its ``create_operator`` returns (``forward``/``backward`` over
NDArrays). ``mx.nd.Custom(*inputs, op_type=name, **kwargs)`` runs one imperatively:
the keyword arguments reach the prop's constructor as strings (as in MXNet), the
outputs are allocated from the prop's inference, ``forward`` runs on the calling
thread with recording paused, and, while recording, ``backward`` is recorded on the
autograd tape (``_core.record_custom``, the hook ``autograd.Function`` uses).

While ``mx.profiler`` runs, a custom operator's ``forward``/``backward`` is recorded
as ``{op_type}::pure_python`` (``_backward_{op_type}::pure_python``) and the ops its
code runs as ``{op_type}::{op}``, in the ``Custom Operator`` category, as in MXNet.

This module owns the Python side of custom operators: the registry of props, the
checks on what a prop returns (:class:`_CustomSpec`, the one place both
``mx.nd.Custom`` and a symbolic executor call the user's code through), and MXNet's
deprecated ``PythonOp``/``NumpyOp``/``NDArrayOp``, which become custom operators.
It computes nothing itself: every numeric step is the user's code or registry ops.

``mx.sym.Custom`` needs a ``Custom`` op in the Rust registry whose shape/type
inference and forward/backward call back into :class:`_CustomSpec` on the calling
thread; until it exists there is no ``mx.sym.Custom`` and the legacy ops'
``get_symbol`` raises MXNetError saying so.
"""

import collections
import ctypes
import re
import traceback
import warnings

import numpy as np

from . import _core
from .base import MXNetError, NDArrayHandle
from .base import dtype_name, np_type
from .context import current_context
from .ndarray.ndarray import (NDArray, _DTYPE_MX_TO_NP, _DTYPE_NP_TO_MX,
                              _STORAGE_TYPE_DEFAULT, _STORAGE_TYPE_ID_TO_STR,
                              _STORAGE_TYPE_UNDEFINED)

_DEFAULT_STYPE = _STORAGE_TYPE_ID_TO_STR[_STORAGE_TYPE_DEFAULT]
_UNDEFINED_STYPE = _STORAGE_TYPE_ID_TO_STR[_STORAGE_TYPE_UNDEFINED]


# ---------------------------------------------------------------------------
# The custom operator API


class CustomOp(object):
    """Base class for operators implemented in Python."""

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Forward interface. Can override when creating new operators.

        Parameters
        ----------
        is_train : bool
            whether this is for training
        req : list of str
            how to assign to out_data. can be 'null', 'write', or 'add'.
            You can optionally use self.assign(dst, req, src) to handle this.
        in_data, out_data, aux: list of NDArrays
            input, output, and auxiliary states for forward. See document for
            corresponding arguments of Operator::Forward
        """
        # pylint: disable=W0613

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Backward interface. Can override when creating new operators.

        Parameters
        ----------
        req : list of str
            how to assign to in_grad. can be 'null', 'write', or 'add'.
            You can optionally use self.assign(dst, req, src) to handle this.
        out_grad, in_data, out_data, in_grad, aux : list of NDArrays
            input and output for backward. See document for
            corresponding arguments of Operator::Backward
        """
        # pylint: disable=W0613

    def assign(self, dst, req, src):
        """Helper function for assigning into dst depending on requirements."""
        if req == 'null':
            return
        if req in ('write', 'inplace'):
            dst[:] = src
        elif req == 'add':
            dst[:] += src
        else:
            raise MXNetError("CustomOp.assign: unknown req %r (expected 'null', 'write', "
                             "'inplace' or 'add')" % (req,))


class CustomOpProp(object):
    """Base class for operator property class implemented in python.

    Parameters
    ----------
    need_top_grad : bool
        The default declare_backward_dependency function. Use this value
        to determine whether this operator needs gradient input.
    """

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape):
        """infer_shape interface. Can override when creating new operators.

        Parameters
        ----------
        in_shape : list
            List of argument shapes in the same order as
            declared in list_arguments.

        Returns
        -------
        in_shape : list
            List of argument shapes. Can be modified from in_shape.
        out_shape : list
            List of output shapes calculated from in_shape,
            in the same order as declared in list_outputs.
        aux_shape : Optional, list
            List of aux shapes calculated from in_shape,
            in the same order as declared in list_auxiliary_states.
        """
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type):
        """infer_type interface. override to create new operators

        Parameters
        ----------
        in_type : list of np.dtype
            list of argument types in the same order as
            declared in list_arguments.

        Returns
        -------
        in_type : list
            list of argument types. Can be modified from in_type.
        out_type : list
            list of output types calculated from in_type,
            in the same order as declared in list_outputs.
        aux_type : Optional, list
            list of aux types calculated from in_type,
            in the same order as declared in list_auxiliary_states.
        """
        return in_type, [in_type[0]] * len(self.list_outputs()), \
            [in_type[0]] * len(self.list_auxiliary_states())

    def infer_storage_type(self, in_stype):
        """infer_storage_type interface. Used to infer storage type of
        inputs and outputs in the forward pass. When this interface is not implemented,
        all stypes will be inferred as default.

        Parameters
        ----------
        in_stype : list of stypes, valid stypes are default, row_sparse and
            csr

        Returns
        -------
        in_stype : list
            list of argument stypes.
        out_stype : list
            list of output types calculated from in_stype,
            in the same order as declared in list_outputs.
        aux_type : Optional, list
            list of aux types calculated from in_stype,
            in the same order as declared in list_auxiliary_states.
        """
        for i, stype in enumerate(in_stype):
            assert stype == _DEFAULT_STYPE, \
                "Default infer_storage_type implementation doesnt allow non default stypes: " \
                "found non default stype '%s' for in_stype[%d]. Please implement " \
                "infer_storage_type and infer_storage_type_backward interface " \
                "in your custom operator if you have non-default input/output stypes" % (stype, i)
        return in_stype, [_DEFAULT_STYPE] * len(self.list_outputs()), \
            [_DEFAULT_STYPE] * len(self.list_auxiliary_states())

    def infer_storage_type_backward(self, ograd_stype, in_stype, out_stype, igrad_stype,
                                    aux_stype):
        """infer_storage_type_backward interface. Used to infer storage
        type of inputs and outputs in the backward pass.

        Will raise an error if undefined storage type is returned.
        Returned lists have to be the same size as the input lists to infer_storage_type_backward,
        otherwise an exception will be thrown. When this interface is not implemented,
        all stypes will be inferred as default.

        Parameters
        ----------
        ograd_stype : list
            list of output gradient storage types
        in_stype : list
            list of input storage types
        out_stype : list
            list of output storage types
        igrad_stype : list
            list of input gradient storage types
        aux_stype : list
            list of auxiliary storage types

        Returns
        -------
        ograd_stype, in_stype, out_stype, igrad_stype, aux_stype : list
            the five lists, with default storage types filled in
        """
        for i, stype in enumerate(ograd_stype):
            assert stype == _DEFAULT_STYPE, \
                "Default infer_storage_type_backward implementation doesnt allow non default " \
                "stypes: found non default stype '%s' for ograd_stype[%d]. Please implement " \
                "infer_storage_type and infer_storage_type_backward interface " \
                "in your custom operator if you have non-default output gradient stypes" \
                % (stype, i)
        for i, stype in enumerate(igrad_stype):
            if stype == _UNDEFINED_STYPE:
                stype = _DEFAULT_STYPE
            assert stype == _DEFAULT_STYPE, \
                "Default infer_storage_type_backward implementation doesnt allow non default " \
                "stypes: found non default stype '%s' for igrad_stype[%d]. Please implement " \
                "infer_storage_type and infer_storage_type_backward interface " \
                "in your custom operator if you have non-default input gradient stypes" \
                % (stype, i)
        stype_lists = [ograd_stype, in_stype, out_stype, igrad_stype, aux_stype]
        for stype_list in stype_lists:
            stype_list[:] = len(stype_list) * [_DEFAULT_STYPE]
        return tuple(stype_lists)

    def list_outputs(self):
        """list_outputs interface. Can override when creating new operators.

        Returns
        -------
        outputs : list
            List of output blob names.
        """
        return ['output']

    def list_arguments(self):
        """list_arguments interface. Can override when creating new operators.

        Returns
        -------
        arguments : list
            List of argument blob names.
        """
        return ['data']

    def list_auxiliary_states(self):
        """list_auxiliary_states interface. Can override when creating new operators.

        Returns
        -------
        auxs : list
            list of auxiliary state blob names.
        """
        return []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Declare dependencies of this operator for backward pass.

        Parameters
        ----------
        out_grad : list of int
            ids of out_grad blobs.
        in_data : list of int
            ids of in_data blobs.
        out_data: list of int
            ids of out_data blobs.

        Returns
        -------
        deps : list of int
            ids of the needed blobs.
        """
        deps = []
        if self.need_top_grad_:
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps

    def create_operator(self, ctx, in_shapes, in_dtypes):
        """Create an operator that carries out the real computation
        given the context, input shapes, and input data types."""
        # pylint: disable=W0613
        return CustomOp()


class _Registry(object):
    """The registered CustomOpProp classes, by op_type."""

    def __init__(self):
        self.props = {}

    def get(self, op_type):
        try:
            return self.props[op_type]
        except KeyError:
            raise MXNetError("Cannot find custom operator %s" % (op_type,)) from None


_registry = _Registry()


def register(reg_name):
    """Register a subclass of CustomOpProp to the registry with name reg_name."""
    def do_register(prop_cls):
        """Register a subclass of CustomOpProp to the registry."""
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise MXNetError("mx.operator.register(%r) decorates a subclass of CustomOpProp, "
                             "got %r" % (reg_name, prop_cls))
        if reg_name in _registry.props and _registry.props[reg_name] is not prop_cls:
            warnings.warn("New registration is overriding existing custom operator %s"
                          % reg_name, stacklevel=2)
        _registry.props[reg_name] = prop_cls
        return prop_cls
    return do_register


def get_all_registered_operators():
    """Get all registered MXNet operator names.

    Returns
    -------
    names : list[string]
    """
    return [name for name, _ in _core.list_ops()]


OperatorArguments = collections.namedtuple('OperatorArguments', ['narg', 'names', 'types'])

_DOC_PARAM = re.compile(r"^(\w+) : (.*)$")


def get_operator_arguments(op_name):
    """Given operator name, fetch operator arguments - number of arguments,
    argument names, argument types.

    Parameters
    ----------
    op_name: str
        Handle for the operator

    Returns
    -------
    operator_arguments : OperatorArguments, namedtuple with number of arguments, names
        and types
    """
    op = _core.get_op(op_name)
    doc_types = {}
    for line in (op.doc or "").splitlines():
        m = _DOC_PARAM.match(line)
        if m is not None:
            doc_types.setdefault(m.group(1), m.group(2))
    input_type = 'NDArray-or-Symbol' if op.variadic is None else 'NDArray-or-Symbol[]'
    names = list(op.input_names) + [p for p in op.param_names if p not in op.input_names]
    types = [input_type if n in op.input_names else doc_types.get(n, '') for n in names]
    return OperatorArguments(len(names), names, types)


# ---------------------------------------------------------------------------
# Calling a registered prop (shared by mx.nd.Custom and a symbolic executor)


def _shape_tuple(shape, what):
    try:
        return tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise MXNetError("%s: expected a shape (a list of ints), got %r" % (what, shape)) from None


def _np_dtype(t, what):
    if isinstance(t, (int, np.integer)) and not isinstance(t, bool) and int(t) in _DTYPE_MX_TO_NP:
        t = _DTYPE_MX_TO_NP[int(t)]
    try:
        return np.dtype(t)
    except TypeError:
        raise MXNetError("%s: expected a dtype, got %r" % (what, t)) from None


def _dtype_code(dt):
    return _DTYPE_NP_TO_MX.get(np_type(dt), -1)


class _CustomSpec(object):
    """One custom operator node: the prop made from ``op_type`` and its (string)
    keyword arguments, and checked calls of the user's code.

    Every method raises MXNetError naming the op_type when the user's code raises
    or returns something malformed. ``mx.nd.Custom`` uses it; a symbolic ``Custom``
    op in the Rust registry would call the same methods (``infer_shape`` and
    ``infer_type`` at graph inference, ``create_operator`` once per bound node,
    ``forward``/``backward`` on the calling thread)."""

    def __init__(self, op_type, kwargs):
        self.op_type = op_type
        prop_cls = _registry.get(op_type)
        self.kwargs = {str(k): (v if isinstance(v, str) else str(v)) for k, v in kwargs.items()}
        self.prop = self._call('the CustomOpProp constructor', prop_cls, **self.kwargs)
        self.arguments = self._names('list_arguments')
        self.outputs = self._names('list_outputs')
        self.aux_states = self._names('list_auxiliary_states')
        self.need_top_grad = bool(getattr(self.prop, 'need_top_grad_', True))

    def _error(self, what, detail):
        return MXNetError("Error in custom operator '%s' (%s): %s" % (self.op_type, what, detail))

    def _call(self, what, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # the user's code: any exception becomes an MXNetError
            raise self._error(what, "%s: %s\n%s" % (type(e).__name__, e,
                                                    traceback.format_exc())) from e

    def _names(self, method):
        names = self._call(method, getattr(self.prop, method))
        try:
            names = [str(n) for n in names]
        except TypeError:
            raise self._error(method, "must return a list of names, got %r" % (names,)) from None
        return names

    def _split(self, ret, method, what):
        """(in, out, aux) from a prop's 2- or 3-list answer, checked for length."""
        try:
            ret = tuple(ret)
        except TypeError:
            ret = ()
        if len(ret) == 2:
            ret = ret + ([],)
        if len(ret) != 3:
            raise self._error(method, "must return 2 or 3 lists (arguments, outputs[, aux]), "
                                      "got %r" % (ret,))
        parts = []
        for vals, names, kind in zip(ret, (self.arguments, self.outputs, self.aux_states),
                                     ('argument', 'output', 'auxiliary state')):
            vals = list(vals)
            if len(vals) != len(names):
                raise self._error(method, "expecting %d entries in returned %s %ss, got %d"
                                  % (len(names), kind, what, len(vals)))
            parts.append(vals)
        return parts

    def infer_shape(self, in_shapes):
        """Shapes of (arguments, outputs, aux states) from the argument shapes."""
        if len(in_shapes) != len(self.arguments):
            raise self._error('infer_shape', "expects %d argument shapes, got %d"
                              % (len(self.arguments), len(in_shapes)))
        ret = self._call('infer_shape', self.prop.infer_shape, [list(s) for s in in_shapes])
        parts = self._split(ret, 'infer_shape', 'shape')
        return [[_shape_tuple(s, "custom operator '%s' infer_shape" % self.op_type) for s in p]
                for p in parts]

    def infer_type(self, in_types):
        """NumPy dtypes of (arguments, outputs, aux states) from the argument dtypes."""
        if len(in_types) != len(self.arguments):
            raise self._error('infer_type', "expects %d argument types, got %d"
                              % (len(self.arguments), len(in_types)))
        ret = self._call('infer_type', self.prop.infer_type,
                         [np_type(t) for t in in_types])
        parts = self._split(ret, 'infer_type', 'type')
        return [[_np_dtype(t, "custom operator '%s' infer_type" % self.op_type) for t in p]
                for p in parts]

    def _stypes(self, method, ret, lengths):
        try:
            parts = [list(p) for p in ret]
        except TypeError:
            parts = None
        if parts is None or len(parts) != len(lengths):
            raise self._error(method, "must return %d lists of storage types, got %r"
                              % (len(lengths), ret))
        for p, n in zip(parts, lengths):
            if len(p) != n or any(t not in ('default', 'csr', 'row_sparse') for t in p):
                raise self._error(method, "returned %r: expected %d storage types of "
                                          "'default', 'csr', 'row_sparse'" % (p, n))
        return parts

    def infer_storage_type(self, in_stypes):
        """Storage types of (arguments, outputs, aux states) from the arguments'."""
        ret = self._call('infer_storage_type', self.prop.infer_storage_type, list(in_stypes))
        ret = tuple(ret) if isinstance(ret, (list, tuple)) else ret
        if isinstance(ret, tuple) and len(ret) == 2:
            ret = ret + ([_DEFAULT_STYPE] * len(self.aux_states),)
        return self._stypes('infer_storage_type', ret,
                            (len(self.arguments), len(self.outputs), len(self.aux_states)))

    def infer_storage_type_backward(self, ograd, in_, out, igrad, aux):
        """Storage types of (output gradients, arguments, outputs, input gradients,
        aux states) for the backward pass."""
        ret = self._call('infer_storage_type_backward', self.prop.infer_storage_type_backward,
                         list(ograd), list(in_), list(out), list(igrad), list(aux))
        return self._stypes('infer_storage_type_backward', ret,
                            (len(ograd), len(in_), len(out), len(igrad), len(aux)))

    def backward_dependency(self):
        """The ids (out_grad 0.., in_data, out_data after) backward reads."""
        n_out, n_in = len(self.outputs), len(self.arguments)
        return list(self._call('declare_backward_dependency',
                               self.prop.declare_backward_dependency,
                               list(range(n_out)), list(range(n_out, n_out + n_in)),
                               list(range(n_out + n_in, 2 * n_out + n_in))))

    def create_operator(self, ctx, shapes, dtypes):
        """The CustomOp for inputs (arguments then aux states) of these shapes and
        dtypes; create_operator gets lists of ints and MXNet's dtype codes."""
        op = self._call('create_operator', self.prop.create_operator, ctx,
                        [list(s) for s in shapes], [_dtype_code(t) for t in dtypes])
        if op is None or not callable(getattr(op, 'forward', None)):
            raise self._error('create_operator', "must return a CustomOp, got %r" % (op,))
        return op

    def forward(self, op, is_train, req, in_data, out_data, aux):
        """Runs ``op.forward`` with recording paused and the training flag set."""
        from .profiler import _custom_op
        prev_rec = _core.set_recording(False)
        prev_train = _core.set_training(bool(is_train))
        try:
            with _custom_op(self.op_type):
                self._call('forward', op.forward, is_train=bool(is_train), req=list(req),
                           in_data=list(in_data), out_data=list(out_data), aux=list(aux))
        finally:
            _core.set_recording(prev_rec)
            _core.set_training(prev_train)

    def backward(self, op, req, out_grad, in_data, out_data, in_grad, aux):
        """Runs ``op.backward`` (autograd's backward has set the flags)."""
        from .profiler import _custom_op
        with _custom_op('_backward_' + self.op_type):
            self._call('backward', op.backward, req=list(req), out_grad=list(out_grad),
                       in_data=list(in_data), out_data=list(out_data), in_grad=list(in_grad),
                       aux=list(aux))


# ---------------------------------------------------------------------------
# mx.nd.Custom


def _invoke_ndarray(data, kwargs):
    """``mx.nd.Custom(*data, op_type=..., **kwargs)``: see ``oxnet.ndarray.Custom``."""
    kwargs = dict(kwargs)
    op_type = kwargs.pop('op_type', None)
    kwargs.pop('name', None)
    out = kwargs.pop('out', None)
    if op_type is None:
        raise MXNetError("Custom: the required argument 'op_type' is missing")
    op_type = str(op_type)
    named = {k: v for k, v in kwargs.items() if isinstance(v, NDArray)}
    for k in named:
        del kwargs[k]
    for i, x in enumerate(data):
        if not isinstance(x, NDArray):
            raise MXNetError("Custom (op_type '%s'): positional input %d must be an NDArray, "
                             "got %s" % (op_type, i, type(x).__name__))
    spec = _CustomSpec(op_type, kwargs)
    names = spec.arguments + spec.aux_states
    inputs = list(data) + [None] * max(0, len(names) - len(data))
    if len(data) > len(names):
        raise spec._error('inputs', "takes %d inputs (arguments %s, auxiliary states %s), got %d"
                          % (len(names), spec.arguments, spec.aux_states, len(data)))
    for k, v in named.items():
        if k not in names:
            raise spec._error('inputs', "unknown input %r; its inputs are %s" % (k, names))
        i = names.index(k)
        if inputs[i] is not None:
            raise spec._error('inputs', "input %r given twice" % k)
        inputs[i] = v
    missing = [n for n, x in zip(names, inputs) if x is None]
    if missing:
        raise spec._error('inputs', "missing inputs %s (it takes arguments %s and auxiliary "
                                    "states %s)" % (missing, spec.arguments, spec.aux_states))
    n_arg = len(spec.arguments)
    args, aux = inputs[:n_arg], inputs[n_arg:]

    in_shapes, out_shapes, aux_shapes = spec.infer_shape([x.shape for x in args])
    in_types, out_types, aux_types = spec.infer_type([x.dtype for x in args])
    for kind, arrs, shapes, types, nms in (('argument', args, in_shapes, in_types, spec.arguments),
                                           ('auxiliary state', aux, aux_shapes, aux_types,
                                            spec.aux_states)):
        for x, s, t, n in zip(arrs, shapes, types, nms):
            if tuple(x.shape) != s:
                raise spec._error('infer_shape', "inferred shape %s for %s '%s' but the input "
                                                 "has shape %s" % (s, kind, n, tuple(x.shape)))
            if np.dtype(x.dtype) != t:
                raise spec._error('infer_type', "inferred dtype %s for %s '%s' but the input "
                                                "has dtype %s" % (t, kind, n, np.dtype(x.dtype)))

    ctx = args[0].context if args else (aux[0].context if aux else current_context())
    if out is not None:
        outs = [out] if isinstance(out, NDArray) else list(out)
        if len(outs) != len(spec.outputs):
            raise spec._error('out', "has %d outputs, got %d out arrays"
                              % (len(spec.outputs), len(outs)))
        for o, s, t, n in zip(outs, out_shapes, out_types, spec.outputs):
            if tuple(o.shape) != s or np.dtype(o.dtype) != t:
                raise spec._error('out', "output '%s' is %s %s, out array is %s %s"
                                  % (n, s, t, tuple(o.shape), np.dtype(o.dtype)))
    # storage types, as the prop infers them (its default accepts only dense arrays)
    in_stypes = [x.stype for x in args]
    _, out_stypes, _ = spec.infer_storage_type(in_stypes)
    if out is None:
        from .ndarray.ndarray import zeros
        outs = [zeros(s, ctx=ctx, dtype=t, stype=st)
                for s, t, st in zip(out_shapes, out_types, out_stypes)]

    op = spec.create_operator(ctx, in_shapes + aux_shapes, in_types + aux_types)
    is_train = _core.is_training()
    in_data = [x.detach() for x in args]
    spec.forward(op, is_train, ['write'] * len(outs), in_data, outs, aux)

    if _core.is_recording() and args:
        reqs = ['write' if _core.in_graph(x) else 'null' for x in args]
        out_data = [o.detach() for o in outs]

        def backward_entry(*out_grads):
            from .ndarray.ndarray import zeros
            # the core's head gradients are dense; the gradients' storage types
            # come from the prop (input gradients like the inputs by default)
            og_st, _, _, ig_st, _ = spec.infer_storage_type_backward(
                [_DEFAULT_STYPE] * len(out_grads), in_stypes, [o.stype for o in outs],
                in_stypes, [a.stype for a in aux])
            out_grads = [g if st == _DEFAULT_STYPE else g.tostype(st)
                         for g, st in zip(out_grads, og_st)]
            in_grad = [zeros(x.shape, ctx=x.context, dtype=x.dtype, stype=st)
                       for x, st in zip(in_data, ig_st)]
            spec.backward(op, reqs, out_grads, in_data, out_data, in_grad, aux)
            return [g if r != 'null' else None for g, r in zip(in_grad, reqs)]

        _core.record_custom(op_type, args, outs, backward_entry)
    return outs[0] if len(outs) == 1 else outs


# ---------------------------------------------------------------------------
# mx.sym.Custom: the Rust registry's ``Custom`` op calls back here


_SPECS = {}
_OPERATORS = {}


def _spec_for(op_type, kwargs):
    key = (op_type, tuple(kwargs))
    spec = _SPECS.get(key)
    if spec is None:
        spec = _SPECS[key] = _CustomSpec(op_type, dict(kwargs))
    return spec


def _operator_for(spec, key, ctx, shapes, dtypes):
    """One CustomOp per op_type, arguments and input shapes/dtypes (MXNet makes one
    per bound node): forward and backward of a node use the same instance."""
    k = (key, ctx.device_type, ctx.device_id, tuple(map(tuple, shapes)),
         tuple(dtype_name(t) for t in dtypes))
    op = _OPERATORS.get(k)
    if op is None:
        op = _OPERATORS[k] = spec.create_operator(ctx, shapes, dtypes)
    return op


def _sym_host(method, op_type, kwargs, payload):
    """What the registry's ``Custom`` op asks of Python (see crates/oxnet-python's
    custom.rs): the names a custom op declares, its shape and dtype inference, and
    its forward and backward, run on the thread that runs the graph."""
    spec = _spec_for(op_type, kwargs)
    if method == 'spec':
        return (spec.arguments, spec.outputs, spec.aux_states)
    if method == 'infer_shape':
        return tuple([list(s) for s in part] for part in spec.infer_shape(payload))
    if method == 'infer_type':
        return tuple([dtype_name(t) for t in part] for part in spec.infer_type(payload))
    n_arg = len(spec.arguments)
    key = (op_type, tuple(kwargs))
    if method == 'forward':
        inputs, outputs, is_train = payload
        args, aux = inputs[:n_arg], inputs[n_arg:]
        ctx = (inputs or outputs)[0].context
        op = _operator_for(spec, key, ctx, [x.shape for x in inputs], [x.dtype for x in inputs])
        spec.forward(op, is_train, ['write'] * len(outputs), args, outputs, aux)
        return None
    if method == 'backward':
        from .ndarray.ndarray import zeros
        out_grads, inputs, outputs = payload
        args, aux = inputs[:n_arg], inputs[n_arg:]
        ctx = (inputs or outputs)[0].context
        op = _operator_for(spec, key, ctx, [x.shape for x in inputs], [x.dtype for x in inputs])
        in_grad = [zeros(x.shape, ctx=x.context, dtype=x.dtype) for x in args]
        prev = _core.set_recording(False)
        try:
            spec.backward(op, ['write'] * n_arg, out_grads, args, outputs, in_grad, aux)
        finally:
            _core.set_recording(prev)
        return in_grad
    raise MXNetError("custom operator host: unknown request %r" % (method,))


_core.set_custom_host(_sym_host)


def _invoke_symbol(data, kwargs):
    """``mx.sym.Custom(*data, op_type=..., name=None, attr=None, **kwargs)``."""
    from .symbol.symbol import Symbol, _create_op
    kwargs = dict(kwargs)
    op_type = kwargs.pop('op_type', None)
    name = kwargs.pop('name', None)
    attr = kwargs.pop('attr', None)
    if op_type is None:
        raise MXNetError("Custom: the required argument 'op_type' is missing")
    op_type = str(op_type)
    named = {k: v for k, v in kwargs.items() if isinstance(v, Symbol)}
    attrs = {k: (v if isinstance(v, str) else str(v)) for k, v in kwargs.items() if k not in named}
    spec = _spec_for(op_type, tuple(sorted(attrs.items())))
    names = spec.arguments + spec.aux_states
    if len(data) > len(names):
        raise spec._error('inputs', "takes %d inputs (arguments %s, auxiliary states %s), got %d"
                          % (len(names), spec.arguments, spec.aux_states, len(data)))
    inputs = dict(zip(names, data))
    for k, v in named.items():
        if k not in names:
            raise spec._error('inputs', "unknown input %r; its inputs are %s" % (k, names))
        if k in inputs:
            raise spec._error('inputs', "input %r given twice" % k)
        inputs[k] = v
    for i, x in enumerate(data):
        if not isinstance(x, Symbol):
            raise spec._error('inputs', "positional input %d must be a Symbol, got %s"
                              % (i, type(x).__name__))
    attrs['op_type'] = op_type
    return _create_op('Custom', 'custom', [(n, inputs.get(n)) for n in names], attrs,
                      name=name, attr=attr)


# ---------------------------------------------------------------------------
# MXNet's deprecated Python operators, run as custom operators


class PythonOp(object):
    """Base class for operators implemented in Python (deprecated: use CustomOp).

    Parameters
    ----------
    need_top_grad : bool
        the default need_top_grad() function returns this value.
    """
    _ref_holder = []

    def __init__(self, need_top_grad=True):
        self.info_ = None
        self.need_top_grad_ = need_top_grad
        warnings.warn('PythonOp has been deprecated. Please use CustomOp')

    def __call__(self, *args, **kwargs):
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args, **kwargs):
        """Create a symbol from this operator: a ``Custom`` node running it."""
        from . import symbol
        custom = getattr(symbol, 'Custom', None)
        if custom is None:
            raise MXNetError("%s.get_symbol needs mx.sym.Custom, which oxnet does not have yet "
                             "(the Rust registry has no Custom op)" % type(self).__name__)
        return custom(*args, op_type=self._op_type(), **kwargs)

    def _op_type(self):
        """Registers this instance as a custom operator; returns its op_type."""
        if self.info_ is None:
            op_type = '_%s_%d' % (type(self).__name__, id(self))
            legacy = self

            class _LegacyProp(_LegacyOpProp):
                def __init__(self):
                    super().__init__(legacy)

            _registry.props[op_type] = _LegacyProp
            PythonOp._ref_holder.append(self)
            self.info_ = op_type
        return self.info_

    def forward(self, in_data, out_data):
        """Forward interface. Override to create new operators.

        Parameters
        ----------
        in_data, out_data: list
            input and output for forward. See document for
            corresponding arguments of Operator::Forward
        """
        out_data[0][:] = in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad):
        """Backward interface. Can override when creating new operators.

        Parameters
        ----------
        out_grad, in_data, out_data, in_grad : list
            input and output for backward. See document for
            corresponding arguments of Operator::Backward
        """
        # pylint: disable=W0613
        in_grad[0][:] = 1.0

    def infer_shape(self, in_shape):
        """Interface for ``infer_shape``. Can override when creating new operators.

        Parameters
        ----------
        in_shape : list
            List of argument shapes in the same order as
            declared in list_arguments.

        Returns
        -------
        in_shape : list
            List of argument shapes. Can be modified from in_shape.
        out_shape : list
            List of output shapes calculated from in_shape,
            in the same order as declared in list_arguments.
        """
        return in_shape, [in_shape[0]]

    def list_outputs(self):
        """Interface for ``list_outputs``. Can override when creating new operators.

        Returns
        -------
        outputs : list
            List of output blob names.
        """
        return ['output']

    def list_arguments(self):
        """Interface for ``list_arguments``. Can override when creating new operators.

        Returns
        -------
        in_shape : list
            list of argument shapes in the same order as
            declared in list_arguments.
        """
        return ['data']

    def need_top_grad(self):
        """Whether this operator needs out_grad for backward.

        Returns
        -------
        need_top_grad : bool
            Whether this operator needs out_grad for backward.
            Should be set to False for loss layers.
        """
        return self.need_top_grad_


class NumpyOp(PythonOp):
    """Base class for numpy operators. numpy operators allow parts
    of computation in symbolic graph to be writen in numpy. This feature
    is intended for quickly hacking out a solution for non performance
    critical parts. Please consider write a c++ implementation if it becomes
    a bottleneck. Note that if your operator contains internal states (like arrays),
    it cannot be used for multi-gpu training.

    ``forward`` and ``backward`` get NumPy arrays; what they write into the output
    (``out_data``, ``in_grad``) arrays is copied back.
    """
    _numpy = True


class NDArrayOp(PythonOp):
    """Base class for numpy operators. numpy operators allow parts
    of computation in symbolic graph to be writen in numpy. This feature
    is intended for quickly hacking out a solution for non performance
    critical parts. Please consider write a c++ implementation if it becomes
    a bottleneck. Note that if your operator contains internal states (like arrays),
    it cannot be used for multi-gpu training.

    ``forward`` and ``backward`` get NDArrays.
    """
    _numpy = False

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Declare dependencies of this operator for backward pass.

        Parameters
        ----------
        out_grad : list of int
            ids of out_grad blobs.
        in_data : list of int
            ids of in_data blobs.
        out_data: list of int
            ids of out_data blobs.

        Returns
        -------
        deps : list of int
            ids of the needed blobs.
        """
        deps = []
        if self.need_top_grad():
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps


class _LegacyOpProp(CustomOpProp):
    """The CustomOpProp a PythonOp instance runs as."""

    def __init__(self, legacy):
        super().__init__(need_top_grad=legacy.need_top_grad())
        self.legacy = legacy

    def list_arguments(self):
        return self.legacy.list_arguments()

    def list_outputs(self):
        return self.legacy.list_outputs()

    def infer_shape(self, in_shape):
        ret = self.legacy.infer_shape(in_shape)
        return ret[0], ret[1], []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        dep = getattr(self.legacy, 'declare_backward_dependency', None)
        if dep is not None:
            return dep(out_grad, in_data, out_data)
        return super().declare_backward_dependency(out_grad, in_data, out_data)

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _LegacyOp(self.legacy)


class _LegacyOp(CustomOp):
    """Runs a PythonOp's forward/backward (on NumPy copies for a NumpyOp)."""

    def __init__(self, legacy):
        super().__init__()
        self.legacy = legacy

    def _run(self, fn, reads, writes, reqs):
        if getattr(self.legacy, '_numpy', False):
            np_writes = [w.asnumpy() for w in writes]
            fn(*([[r.asnumpy() for r in group] for group in reads] + [np_writes]))
            for w, req, v in zip(writes, reqs, np_writes):
                self.assign(w, req, v)
        else:
            fn(*(list(reads) + [writes]))

    def forward(self, is_train, req, in_data, out_data, aux):
        self._run(self.legacy.forward, [in_data], out_data, req)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self._run(self.legacy.backward, [out_grad, in_data, out_data], in_grad, req)


# Keep the module's star-import to MXNet's public names. MXNet's module has no
# __all__, so its star-import also gives ctypes, NDArray and NDArrayHandle, which
# MXNet code uses to turn a callback's handle into an array
# (``NDArray(ctypes.cast(arr, NDArrayHandle))``).
__all__ = ["CustomOp", "CustomOpProp", "register", "get_all_registered_operators",
           "get_operator_arguments", "OperatorArguments", "PythonOp", "NumpyOp", "NDArrayOp",
           "ctypes", "NDArray", "NDArrayHandle"]
