"""The ``Symbol`` class (MXNet's ``mx.sym.Symbol``): a handle on a graph held in
Rust (``oxnet._core.SymbolHandle``). Graph work (names of arguments, JSON,
inference, composition, execution) happens in the core; this module adds
Python's conveniences: operators, indexing, keyword handling, pickling."""

import json as _json

import warnings

import numpy as np

from .. import _core
from .. import attribute as _attribute
from .. import name as _name
from ..base import MXNetError, NotImplementedForSymbol, _Null, numeric_types, string_types
from ..base import dtype_name, np_type
from ..context import Context, current_context
from ..util import is_np_shape

_DTYPE_CODES = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5,
                "int64": 6, "bool": 7, "bfloat16": 12}
_STYPE_CODES = {"default": 0, "row_sparse": 1, "csr": 2}
# Set by mx.contrib.amp.init: (lhs, rhs) -> (lhs, rhs) through amp_multicast, so that
# symbol arithmetic (``a + b``) gets its inputs in one dtype, as MXNet's patched ops do.
_AMP_BINARY = None


def _attr_str(key, v):
    """MXNet's string form of a parameter value."""
    if isinstance(v, string_types):
        return v
    if key == "dtype" or isinstance(v, (type, np.dtype)):
        try:
            return dtype_name(v)
        except TypeError:
            pass
    if isinstance(v, Context):
        return str(v)
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, (tuple, list)):
        # NumPy 2 scalars print as np.int64(0): store plain Python numbers.
        v = type(v)(x.item() if isinstance(x, np.generic) else x for x in v)
    return str(v)


class Symbol:
    """A symbolic graph: one or more outputs of operators over variables."""

    __slots__ = ("handle",)

    def __init__(self, handle):
        self.handle = handle

    # ---- structure ---------------------------------------------------------------
    @property
    def name(self):
        """The name of the output node (None for groups of several nodes)."""
        nodes = self.handle.output_nodes()
        if nodes and all(n == nodes[0] for n in nodes):
            return nodes[0][0]
        return None

    def __repr__(self):
        name = self.name
        if name is not None:
            return "<Symbol %s>" % name
        return "<Symbol group [%s]>" % ", ".join(n for n, _ in self.handle.output_nodes())

    __str__ = __repr__

    def __len__(self):
        return self.handle.num_outputs()

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __getitem__(self, index):
        if isinstance(index, string_types):
            return Symbol(self.handle.output(self.handle.find_output(index)))
        if isinstance(index, slice):
            return Group([self[i] for i in range(len(self))[index]])
        if not isinstance(index, (int, np.integer)):
            raise TypeError("Symbol only supports integer or string indices, got %r" % (index,))
        index = int(index)
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("Index %d is out of range for a symbol with %d outputs" % (index, n))
        return Symbol(self.handle.output(index))

    def list_arguments(self):
        """Names of the arguments (variables that are not auxiliary states)."""
        return self.handle.list_arguments()

    def list_outputs(self):
        """Names of the outputs (``fc1_output``...)."""
        return self.handle.list_outputs()

    def list_auxiliary_states(self):
        """Names of the auxiliary states (variables that ops update, e.g. BatchNorm's moving statistics)."""
        return self.handle.list_auxiliary_states()

    def list_inputs(self):
        """Names of every variable, arguments and auxiliary states, in graph order."""
        return self.handle.list_inputs()

    def get_internals(self):
        """A symbol whose outputs are every output of every node of the graph."""
        return Symbol(self.handle.get_internals())

    def get_children(self):
        """The inputs of this symbol's output node(s), or None for a variable. As in
        MXNet, a node with several outputs in this symbol gives its inputs once."""
        nodes = self.handle.output_nodes()
        if len(set(nodes)) == len(nodes):
            h = self.handle.get_children()
            return None if h is None else Symbol(h)
        firsts = [i for i, n in enumerate(nodes) if n not in nodes[:i]]
        parts = [self.handle.output(i).get_children() for i in firsts]
        parts = [Symbol(h) for h in parts if h is not None]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else Group(parts)

    # ---- attributes -------------------------------------------------------------
    def attr(self, key):
        """The attribute ``key`` of this (single-output) symbol, or None.
        ``_value_index`` is the output index (indices) of the symbol, as in MXNet."""
        if key == "_value_index":
            nodes = self.handle.output_nodes()
            if not nodes or any(n != nodes[0] for n in nodes):
                return None
            return ", ".join(str(i) for i in self.handle.value_indices())
        return self.handle.attr(key)

    def list_attr(self, recursive=False):
        """This symbol's attributes as a dict (``recursive`` is not supported, as in MXNet 1.9)."""
        if recursive:
            raise DeprecationWarning("Symbol.list_attr with recursive=True has been deprecated. "
                                     "Please use attr_dict instead.")
        return dict(self.handle.list_attr())

    def attr_dict(self):
        """Attributes of every node, keyed by node name."""
        return {k: dict(v) for k, v in self.handle.attr_dict()}

    def _set_attr(self, **kwargs):
        """Sets attributes (string values) on this symbol's node."""
        for k, v in kwargs.items():
            if not isinstance(v, string_types):
                raise ValueError("Set Attr only accepts string values")
        self.handle.set_attr(list(kwargs.items()))

    # ---- composition ------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        """A copy of the graph with arguments replaced by other symbols
        (``net(data=other)``; positional arguments follow ``list_arguments``). An
        atomic symbol (``_gen_atomic_symbol``) becomes a node applied to the inputs
        (positional in order, keywords by input name; the others become variables
        ``{name}_{input}``), named ``name``."""
        name = kwargs.pop("name", None)
        for s in list(args) + list(kwargs.values()):
            if not isinstance(s, Symbol):
                raise TypeError("Compose expects Symbol arguments, got %s" % type(s).__name__)
        return Symbol(self.handle.compose([a.handle for a in args],
                                          [(k, v.handle) for k, v in kwargs.items()],
                                          name))

    def _gen_atomic_symbol(self):
        """A symbol of one node with this symbol's operator and attributes and no
        inputs, named '' (MXNet's ``_gen_atomic_symbol``); call it with inputs to
        build a new node. Every output of the symbol must come from one node."""
        return Symbol(self.handle.gen_atomic_symbol())

    def __copy__(self):
        return Symbol(self.handle.compose([], []))

    def __deepcopy__(self, _memo):
        return self.__copy__()

    def copy(self):
        return self.__copy__()

    # ---- inference --------------------------------------------------------------
    def _known(self, args, kwargs, what):
        known = {}
        if args:
            names = self.list_arguments()
            if len(args) > len(names):
                raise MXNetError("%s: %d positional arguments given, the symbol has %d arguments"
                                 % (what, len(args), len(names)))
            for n, v in zip(names, args):
                if v is not None:
                    known[n] = v
        known.update({k: v for k, v in kwargs.items() if v is not None})
        inputs = set(self.list_inputs())
        for k in known:
            if k not in inputs:
                raise MXNetError("%s: '%s' is not an argument of the symbol; arguments are %s"
                                 % (what, k, self.list_inputs()))
        return known

    def _infer_shape(self, args, kwargs):
        from ..util import is_np_shape
        np_shape = is_np_shape()
        known = {}
        for k, v in self._known(args, kwargs, "infer_shape").items():
            if v is None:
                continue
            if isinstance(v, (int, np.integer)):
                v = (v,)
            # Unknown dimensions: 0 in MXNet's legacy shapes, -1 under np_shape.
            known[k] = [max(int(d), 0) if np_shape else int(d) for d in v]
            if any(d < 0 for d in known[k]):
                raise MXNetError("infer_shape: the shape of %r has a negative dimension: %s"
                                 % (k, tuple(v)))
        return self.handle.infer_shape(known)

    def infer_shape(self, *args, **kwargs):
        """Infers the shapes of (arguments, outputs, auxiliary states) from some
        argument shapes; (None, None, None), with a warning naming the arguments
        still unknown, when they cannot all be inferred."""
        a, o, x = self._infer_shape(args, kwargs)
        if any(s is None or 0 in s for s in a + o + x):
            unknown = ["%s: %s" % (n, tuple(s) if s is not None else "()")
                       for n, s in zip(self.list_arguments(), a) if s is None or 0 in s]
            warnings.warn("Cannot decide shape for the following arguments (0s in shape means "
                          "unknown dimensions). Consider providing them as input:\n\t"
                          + "\n\t".join(unknown), stacklevel=2)
            return (None, None, None)
        return ([tuple(s) for s in a], [tuple(s) for s in o], [tuple(s) for s in x])

    def infer_shape_partial(self, *args, **kwargs):
        """Like :meth:`infer_shape`, but returns what could be inferred: unknown
        dimensions are 0 and unknown shapes ``()`` (under ``np_shape``: -1 and None)."""
        from ..util import is_np_shape
        np_shape = is_np_shape()
        a, o, x = self._infer_shape(args, kwargs)

        def f(lst):
            if np_shape:
                return [tuple(d if d else -1 for d in s) if s is not None else None for s in lst]
            return [tuple(s) if s is not None else () for s in lst]
        return (f(a), f(o), f(x))

    def infer_type(self, *args, **kwargs):
        """Infers the dtypes (NumPy types) of (arguments, outputs, auxiliary
        states); (None, None, None) when they cannot all be inferred."""
        known = {k: dtype_name(v) for k, v in self._known(args, kwargs, "infer_type").items()}
        a, o, x = self.handle.infer_type(known)
        if any(t is None for t in a + o + x):
            return (None, None, None)
        f = lambda lst: [np_type(t) for t in lst]  # noqa: E731
        return (f(a), f(o), f(x))

    def infer_type_partial(self, *args, **kwargs):
        known = {k: dtype_name(v) for k, v in self._known(args, kwargs, "infer_type").items()}
        a, o, x = self.handle.infer_type(known)
        f = lambda lst: [np_type(t) if t is not None else None for t in lst]  # noqa: E731
        return (f(a), f(o), f(x))

    # ---- serialisation ----------------------------------------------------------
    def tojson(self, remove_amp_cast=True):
        """The graph in MXNet's JSON format. Under NumPy shape semantics
        (``mx.util.np_shape``) the graph attributes carry ``"is_np_shape": ["int", 1]``,
        as MXNet writes them (a reader then takes a 0 in a shape as a zero-size dim).
        With ``remove_amp_cast`` (the default, as in MXNet) the amp_cast and
        amp_multicast nodes of mixed precision are left out (their inputs read
        directly)."""
        text = self.handle.to_json()
        if remove_amp_cast and ('"amp_cast"' in text or '"amp_multicast"' in text):
            text = _remove_amp_cast(text)
        if is_np_shape():
            key = '"attrs": {'
            at = text.rfind(key)
            if at < 0:
                raise MXNetError("tojson: the graph JSON has no attrs object")
            at += len(key)
            text = text[:at] + '"is_np_shape": ["int", 1], ' + text[at:]
        return text

    def save(self, fname, remove_amp_cast=True):
        """Writes :meth:`tojson` to ``fname``."""
        with open(fname, "w") as f:
            f.write(self.tojson(remove_amp_cast=remove_amp_cast))

    def __getstate__(self):
        return {"handle": self.tojson(remove_amp_cast=False)}

    def __setstate__(self, state):
        self.handle = _core.sym_from_json(state["handle"])

    def __reduce__(self):
        return (_from_json_state, (self.tojson(remove_amp_cast=False),))

    # ---- execution --------------------------------------------------------------
    def simple_bind(self, ctx, grad_req="write", type_dict=None, stype_dict=None, group2ctx=None,
                    shared_arg_names=None, shared_exec=None, shared_buffer=None, **kwargs):
        """Allocates every array from the given input shapes and binds."""
        from ..executor import Executor
        return Executor._simple_bind(self, ctx, grad_req, type_dict, kwargs, group2ctx=group2ctx,
                                     shared_arg_names=shared_arg_names, shared_exec=shared_exec,
                                     shared_buffer=shared_buffer, stype_dict=stype_dict)

    def bind(self, ctx, args, args_grad=None, grad_req="write", aux_states=None, group2ctx=None,
             shared_exec=None):
        """Binds the given arrays (lists in ``list_arguments`` order, or dicts by name)."""
        from ..executor import Executor
        return Executor._bind(self, ctx, args, args_grad, grad_req, aux_states, group2ctx=group2ctx,
                              shared_exec=shared_exec)

    def eval(self, ctx=None, **kwargs):
        """Binds ``kwargs`` as the arguments, runs forward, returns the outputs."""
        ex = self.bind(current_context() if ctx is None else ctx, kwargs, grad_req="null")
        return ex.forward()

    # ---- operators --------------------------------------------------------------
    def _binary(self, other, op, op_hint, sc, sc_hint):
        if isinstance(other, Symbol):
            lhs, rhs = (self, other) if _AMP_BINARY is None else _AMP_BINARY(self, other)
            return _create_op(op, op_hint, [("lhs", lhs), ("rhs", rhs)], {})
        if isinstance(other, numeric_types):
            return _create_op(sc, sc_hint, [("data", self)], {"scalar": str(other)})
        return NotImplemented

    def _rscalar(self, other, sc, sc_hint):
        if isinstance(other, numeric_types):
            return _create_op(sc, sc_hint, [("data", self)], {"scalar": str(other)})
        return NotImplemented

    def __add__(self, o):
        return self._binary(o, "elemwise_add", "_plus", "_plus_scalar", "_plusscalar")

    __radd__ = __add__

    def __sub__(self, o):
        return self._binary(o, "elemwise_sub", "_minus", "_minus_scalar", "_minusscalar")

    def __rsub__(self, o):
        return self._rscalar(o, "_rminus_scalar", "_rminusscalar")

    def __mul__(self, o):
        return self._binary(o, "elemwise_mul", "_mul", "_mul_scalar", "_mulscalar")

    __rmul__ = __mul__

    def __truediv__(self, o):
        return self._binary(o, "elemwise_div", "_div", "_div_scalar", "_divscalar")

    __div__ = __truediv__

    def __rtruediv__(self, o):
        return self._rscalar(o, "_rdiv_scalar", "_rdivscalar")

    __rdiv__ = __rtruediv__

    def __mod__(self, o):
        return self._binary(o, "_mod", "_mod", "_mod_scalar", "_modscalar")

    def __rmod__(self, o):
        return self._rscalar(o, "_rmod_scalar", "_rmodscalar")

    def __pow__(self, o):
        return self._binary(o, "_power", "_power", "_power_scalar", "_powerscalar")

    def __rpow__(self, o):
        return self._rscalar(o, "_rpower_scalar", "_rpower_scalar")

    def __neg__(self):
        return self.__mul__(-1.0)

    def __abs__(self):
        return _create_op("abs", "abs", [("data", self)], {})

    def __eq__(self, o):
        return self._binary(o, "_equal", "_equal", "_equal_scalar", "_equal_scalar")

    def __ne__(self, o):
        return self._binary(o, "_not_equal", "_not_equal", "_not_equal_scalar", "_not_equal_scalar")

    def __gt__(self, o):
        return self._binary(o, "_greater", "_greater", "_greater_scalar", "_greater_scalar")

    def __ge__(self, o):
        return self._binary(o, "_greater_equal", "_greater_equal", "_greater_equal_scalar",
                            "_greater_equal_scalar")

    def __lt__(self, o):
        return self._binary(o, "_lesser", "_lesser", "_lesser_scalar", "_lesser_scalar")

    def __le__(self, o):
        return self._binary(o, "_lesser_equal", "_lesser_equal", "_lesser_equal_scalar",
                            "_lesser_equal_scalar")

    __hash__ = object.__hash__

    def __bool__(self):
        # MXNet: NotImplementedForSymbol (an MXNetError), as for other NDArray-only calls
        raise NotImplementedForSymbol(self.__bool__, "bool")


def _remove_amp_cast(text):
    """MXNet JSON ``text`` without its amp_cast / amp_multicast nodes: whatever read
    such a node's output k reads that node's input k."""
    g = _json.loads(text)
    nodes = g["nodes"]
    row_ptr = g.get("node_row_ptr")

    def resolve(entry):
        nid, idx = entry[0], entry[1]
        while nodes[nid]["op"] in ("amp_cast", "amp_multicast"):
            nid, idx = nodes[nid]["inputs"][idx if nodes[nid]["op"] == "amp_multicast" else 0][:2]
        return [nid, idx, 0]

    keep = [i for i, n in enumerate(nodes) if n["op"] not in ("amp_cast", "amp_multicast")]
    new_id = {old: new for new, old in enumerate(keep)}
    out_nodes, new_ptr = [], [0]
    for old in keep:
        n = dict(nodes[old])
        n["inputs"] = [[new_id[r[0]], r[1], 0] for r in (resolve(e) for e in n["inputs"])]
        out_nodes.append(n)
        if row_ptr:
            new_ptr.append(new_ptr[-1] + row_ptr[old + 1] - row_ptr[old])
    g["nodes"] = out_nodes
    g["arg_nodes"] = [i for i, n in enumerate(out_nodes) if n["op"] == "null"]
    if row_ptr:
        g["node_row_ptr"] = new_ptr
    g["heads"] = [[new_id[r[0]], r[1], 0] for r in (resolve(h) for h in g["heads"])]
    return _json.dumps(g, indent=2)


def _from_json_state(text):
    return Symbol(_core.sym_from_json(text))


# Initializers MXNet attaches to the variables an op creates for its inputs
# (read by mx.init / Module to initialise auxiliary states).
_INPUT_INIT = {("BatchNorm", "moving_mean"): '["zero", {}]',
               ("BatchNorm", "moving_var"): '["one", {}]',
               ("LeakyReLU", "gamma"): '["Constant", {"value": 0.25}]'}
# Inputs that exist only for some parameter values (LeakyReLU's gamma: prelu only).
_INPUT_USED = {("LeakyReLU", "gamma"): lambda attrs: str(attrs.get("act_type")) == "prelu"}


def _create_op(opname, hint, inputs, attrs, name=None, attr=None):
    op = _core.get_op(opname)
    scope = _attribute.current().get(attr)
    all_attrs = dict(attrs)
    all_attrs.update(scope)
    name = _name.current().get(name, hint)
    handles = []
    for k, s in inputs:
        if s is None and (op.name, k) in _INPUT_INIT and \
                _INPUT_USED.get((op.name, k), lambda a: True)(all_attrs):
            var_attrs = dict(all_attrs)
            var_attrs["__init__"] = _INPUT_INIT[(op.name, k)]
            handles.append((k, _core.sym_var("%s_%s" % (name, k), list(var_attrs.items()))))
        else:
            handles.append((k, None if s is None else s.handle))
    return Symbol(_core.sym_create(op, name, list(all_attrs.items()), handles))


def _symbol_invoke(op, hint, inputs, params, name, kwargs):
    """What every generated ``mx.sym`` function calls. As in MXNet, an ``out``
    keyword (meaningful for mx.nd only) is ignored."""
    attr = kwargs.pop("attr", None)
    kwargs.pop("out", None)
    attrs = {}
    for pname, v in zip(op.param_names, params):
        if v is not _Null:
            attrs[pname] = _attr_str(pname, v)
    names = list(op.input_names)
    pairs = []
    if op.variadic is not None:
        syms = list(inputs)
        if len(syms) == 1 and isinstance(syms[0], (list, tuple)):
            syms = list(syms[0])
        pairs = [("arg%d" % i, s) for i, s in enumerate(syms)]
        if op.variadic not in attrs and op.variadic not in kwargs:
            attrs[op.variadic] = str(len(syms))
    else:
        pairs = list(zip(names, inputs))
    for k, v in kwargs.items():
        if isinstance(v, Symbol):
            if not names and op.variadic is None:
                # MXNet's composition matches keyword symbols only to inputs not given
                # positionally: an op without inputs (a sampler, _zeros) ignores them
                continue
            if k not in names:
                raise MXNetError("Error in operator %s: unknown input '%s'; inputs are %s"
                                 % (op.name, k, names))
            pairs = [(n, v if n == k else s) for n, s in pairs]
        else:
            attrs[k] = _attr_str(k, v)
    for k, s in pairs:
        if s is not None and not isinstance(s, Symbol):
            raise TypeError("Error in operator %s: input '%s' must be a Symbol, got %s"
                            % (op.name, k, type(s).__name__))
    return _create_op(op.name, hint, pairs, attrs, name=name, attr=attr)


def Variable(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None, init=None,
             stype=None, **kwargs):
    """A placeholder for an input (data, label, weight...).

    Parameters
    ----------
    name : str
    attr : dict of str to str, optional
    shape : tuple, optional
    lr_mult, wd_mult : float, optional
    dtype : str or numpy dtype, optional
    init : initializer (an object with ``dumps()``) or its JSON string, optional
    stype : str, optional
    """
    if not isinstance(name, string_types):
        raise TypeError("Expect a string for variable `name`")
    attrs = dict(_attribute.current().get(attr))
    if shape is not None:
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        attrs["__shape__"] = str(tuple(int(d) for d in shape))
    if lr_mult is not None:
        attrs["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attrs["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        attrs["__dtype__"] = str(_DTYPE_CODES[dtype_name(dtype)])
    if init is not None:
        attrs["__init__"] = init if isinstance(init, string_types) else init.dumps()
    if stype is not None:
        attrs["__storage_type__"] = str(_STYPE_CODES[stype])
    for k, v in kwargs.items():
        if k.startswith("__") and k.endswith("__"):
            attrs[k] = str(v)
        else:
            raise ValueError("Attribute name=%s is not supported. Additional attributes must "
                             "start and end with double underscores, e.g, __yourattr__" % k)
    return Symbol(_core.sym_var(name, list(attrs.items())))


var = Variable


def Group(symbols):
    """One symbol whose outputs are the outputs of ``symbols`` in order."""
    if not symbols or any(not isinstance(s, Symbol) for s in symbols):
        raise TypeError("Expected a list of symbols as input")
    return Symbol(_core.sym_group([s.handle for s in symbols]))


def load_json(json_str):
    """A symbol from MXNet JSON text."""
    if not isinstance(json_str, string_types):
        raise TypeError("json_str needs to be a string")
    return Symbol(_core.sym_from_json(json_str))


def load(fname):
    """A symbol from an MXNet JSON file (``-symbol.json``)."""
    if not isinstance(fname, string_types):
        raise TypeError("fname needs to be a string")
    with open(fname) as f:
        return load_json(f.read())


def _json_nodes(sym):
    return _json.loads(sym.tojson())


__all__ = ["Symbol", "Variable", "var", "Group", "load", "load_json"]
