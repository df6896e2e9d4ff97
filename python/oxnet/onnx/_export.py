"""MXNet Symbol + params -> ONNX ModelProto.

The graph is read from the symbol's JSON (the same nodes MXNet writes); every op node
is translated by a function of ``_export_ops`` into ONNX nodes. Static shapes come from
oxnet's own shape inference over the symbol's internals; translations that need a
shape use them only where the batch dimension cannot be affected (ranks, non-batch
dims), so ``dynamic=True`` graphs run at any batch size."""

import json
import logging

import numpy as np

from ..base import MXNetError
from ._common import (MAX_EXPORT_OPSET, MIN_EXPORT_OPSET, default_opset, load_params,
                      require_onnx)

# Inputs of these ops that are labels: not inputs of the exported inference graph.
LABEL_INPUTS = {"SoftmaxOutput": (1,), "LinearRegressionOutput": (1,),
                "LogisticRegressionOutput": (1,), "MAERegressionOutput": (1,),
                "SVMOutput": (1,)}


class ExportContext:
    """What the op translations see: the ONNX nodes and initializers made so far, the
    static shapes and dtypes of every MXNet tensor, the opset, dynamic flags."""

    def __init__(self, opset, dynamic, params):
        onnx = require_onnx()
        self.onnx = onnx
        self.helper = onnx.helper
        self.opset = opset
        self.dynamic = dynamic
        self.params = params           # name -> numpy (the initializers)
        self.nodes = []
        self.initializers = {}         # name -> numpy
        self.zeros = set()             # tensors known to be all zeros (begin states)
        self.shapes = {}               # onnx tensor name -> static shape
        self.dtypes = {}               # onnx tensor name -> numpy dtype
        self._names = set()
        self._count = 0

    # ---- names, nodes, constants -------------------------------------------------
    def reserve(self, name):
        self._names.add(name)

    def fresh(self, hint):
        while True:
            self._count += 1
            name = "%s__%d" % (hint, self._count)
            if name not in self._names:
                self._names.add(name)
                return name

    def add(self, op_type, inputs, outputs=None, name=None, n_out=1, **attrs):
        """Appends an ONNX node; returns its output names (a list)."""
        if outputs is None:
            outputs = [self.fresh(name or op_type) for _ in range(n_out)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        node = self.helper.make_node(op_type, list(inputs), list(outputs),
                                     name=self.fresh(name or op_type), **attrs)
        self.nodes.append(node)
        return list(outputs)

    def add1(self, op_type, inputs, output=None, name=None, **attrs):
        return self.add(op_type, inputs, None if output is None else [output], name=name,
                        **attrs)[0]

    def const(self, value, dtype=None, hint="const"):
        arr = np.asarray(value, dtype=dtype)
        name = self.fresh(hint)
        self.initializers[name] = arr
        self.shapes[name] = arr.shape
        self.dtypes[name] = arr.dtype
        return name

    def i64(self, values, hint="const"):
        return self.const(np.asarray(values, dtype=np.int64).reshape(-1), hint=hint)

    def value(self, tensor):
        """The NumPy value of a tensor that is an initializer, else None."""
        return self.initializers.get(tensor)

    def shape(self, tensor):
        s = self.shapes.get(tensor)
        if s is None:
            raise MXNetError("ONNX export: the shape of %r is not known" % tensor)
        return tuple(s)

    def ndim(self, tensor):
        return len(self.shape(tensor))

    def dtype(self, tensor):
        return np.dtype(self.dtypes.get(tensor, np.float32))

    # ---- opset-dependent forms ---------------------------------------------------
    def unsqueeze(self, x, axes, output=None):
        axes = [int(a) for a in axes]
        if self.opset >= 13:
            return self.add1("Unsqueeze", [x, self.i64(axes, "axes")], output)
        return self.add1("Unsqueeze", [x], output, axes=axes)

    def squeeze(self, x, axes=None, output=None):
        if axes is None:
            return self.add1("Squeeze", [x], output)
        axes = [int(a) for a in axes]
        if self.opset >= 13:
            return self.add1("Squeeze", [x, self.i64(axes, "axes")], output)
        return self.add1("Squeeze", [x], output, axes=axes)

    def reduce(self, op_type, x, axes, keepdims, output=None):
        """ReduceX over ``axes`` (None: all); axes are inputs from opset 13 (ReduceSum)
        or 18 (the others)."""
        keep = 1 if keepdims else 0
        if axes is None:
            return self.add1(op_type, [x], output, keepdims=keep)
        axes = [int(a) for a in axes]
        inputs_from = 13 if op_type == "ReduceSum" else 18
        if self.opset >= inputs_from:
            return self.add1(op_type, [x, self.i64(axes, "axes")], output, keepdims=keep)
        return self.add1(op_type, [x], output, axes=axes, keepdims=keep)

    def split(self, x, axis, sizes, outputs):
        if self.opset >= 13:
            return self.add("Split", [x, self.i64(sizes, "split")], outputs, axis=int(axis))
        return self.add("Split", [x], outputs, axis=int(axis), split=[int(s) for s in sizes])

    def slice(self, x, starts, ends, axes, steps=None, output=None):
        ins = [x, self.i64(starts, "starts"), self.i64(ends, "ends"), self.i64(axes, "axes")]
        if steps is not None:
            ins.append(self.i64(steps, "steps"))
        return self.add1("Slice", ins, output)

    def cast(self, x, dtype, output=None):
        return self.add1("Cast", [x], output, to=self.onnx_dtype(dtype))

    def onnx_dtype(self, dtype):
        return self.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))

    def scalar(self, value, like):
        """A 0-d constant of the dtype of tensor ``like``."""
        return self.const(np.asarray(value, dtype=self.dtype(like)), hint="scalar")


def _load_symbol(sym):
    from ..symbol import Symbol
    from ..symbol import load as sym_load
    if isinstance(sym, str):
        try:
            return sym_load(sym)
        except MXNetError:
            raise
        except Exception as e:
            raise MXNetError("export_model: cannot read the symbol file %r: %s" % (sym, e)) \
                from None
    if not isinstance(sym, Symbol):
        raise MXNetError("export_model: sym must be a Symbol or a -symbol.json path, got %s"
                         % type(sym).__name__)
    return sym


def _norm_types(in_types, n):
    if isinstance(in_types, (list, tuple)):
        types = [np.dtype(t) for t in in_types]
    else:
        types = [np.dtype(in_types)] * n
    if len(types) != n:
        raise MXNetError("export_model: %d input types for %d inputs" % (len(types), n))
    return types


def _norm_shapes(in_shapes):
    if in_shapes is None:
        return None
    if isinstance(in_shapes, tuple) and all(isinstance(d, (int, np.integer)) for d in in_shapes):
        in_shapes = [in_shapes]
    return [tuple(int(d) for d in s) for s in in_shapes]


def build_model(sym, params, in_shapes=None, in_types=np.float32, verbose=False,
                dynamic=False, dynamic_input_shapes=None, run_shape_inference=False,
                opset_version=None):
    """The ONNX ModelProto of ``sym`` with ``params``."""
    onnx = require_onnx()
    from . import _export_ops
    helper = onnx.helper
    sym = _load_symbol(sym)
    params = load_params(params)
    opset = default_opset() if opset_version is None else int(opset_version)
    if not MIN_EXPORT_OPSET <= opset <= MAX_EXPORT_OPSET:
        raise MXNetError("export_model: opset_version %d is not supported (opsets %d to %d)"
                         % (opset, MIN_EXPORT_OPSET, MAX_EXPORT_OPSET))
    graph = json.loads(sym.tojson())
    nodes = graph["nodes"]
    heads = graph["heads"]

    # inputs: variables that are not params, minus label inputs of loss layers
    label_vars = set()
    used_vars = set()
    for n in nodes:
        if n["op"] == "null":
            continue
        for pos, inp in enumerate(n["inputs"]):
            src = nodes[inp[0]]
            if src["op"] != "null":
                continue
            if pos in LABEL_INPUTS.get(n["op"], ()):
                label_vars.add(src["name"])
            else:
                used_vars.add(src["name"])
    for h in heads:
        if nodes[h[0]]["op"] == "null":
            used_vars.add(nodes[h[0]]["name"])
    all_inputs = [n["name"] for n in nodes if n["op"] == "null" and n["name"] not in params]
    order = {nm: k for k, nm in enumerate(sym.list_inputs())}   # MXNet's input order
    all_inputs.sort(key=lambda nm: order.get(nm, len(order)))
    data_inputs = [nm for nm in all_inputs if nm not in label_vars or nm in used_vars]
    missing = [nm for nm in sym.list_arguments() + sym.list_auxiliary_states()
               if nm not in params and nm not in all_inputs]
    if missing:  # pragma: no cover - list_arguments are all null nodes
        raise MXNetError("export_model: no value for %s" % missing)
    in_shapes = _norm_shapes(in_shapes)
    if in_shapes is None:
        raise MXNetError("export_model: in_shapes is required (one shape per input %s)"
                         % data_inputs)
    if len(in_shapes) == len(all_inputs) and len(all_inputs) != len(data_inputs):
        in_shapes = [s for nm, s in zip(all_inputs, in_shapes) if nm in data_inputs]
    if len(in_shapes) != len(data_inputs):
        raise MXNetError("export_model: %d input shapes given for the %d inputs %s"
                         % (len(in_shapes), len(data_inputs), data_inputs))
    in_types = _norm_types(in_types, len(data_inputs))
    if dynamic_input_shapes is not None:
        dynamic = True
        dynamic_input_shapes = [tuple(d for d in s) for s in dynamic_input_shapes]
        if len(dynamic_input_shapes) != len(data_inputs):
            raise MXNetError("export_model: %d dynamic_input_shapes for %d inputs"
                             % (len(dynamic_input_shapes), len(data_inputs)))
    node_names = set(n["name"] for n in nodes)
    for nm in params:
        if nm not in node_names:
            logging.debug("export_model: parameter %s is not used by the symbol", nm)

    # static shapes and dtypes of every tensor
    known_shapes = {nm: s for nm, s in zip(data_inputs, in_shapes)}
    known_types = {nm: t for nm, t in zip(data_inputs, in_types)}
    for nm, v in params.items():
        known_shapes[nm] = v.shape
        known_types[nm] = v.dtype
    internals = sym.get_internals()
    arg_names = set(internals.list_arguments()) | set(internals.list_auxiliary_states())
    shape_kw = {k: v for k, v in known_shapes.items() if k in arg_names}
    type_kw = {k: v for k, v in known_types.items() if k in arg_names}
    try:
        _, out_shapes, _ = internals.infer_shape_partial(**shape_kw)
        _, out_types, _ = internals.infer_type_partial(**type_kw)
    except MXNetError as e:
        raise MXNetError("export_model: shape inference failed with the given in_shapes and "
                         "params: %s" % e) from None
    internal_names = internals.list_outputs()
    shape_of = dict(zip(internal_names, out_shapes))
    type_of = dict(zip(internal_names, out_types))

    ctx = ExportContext(opset, dynamic, params)
    for n in nodes:
        ctx.reserve(n["name"])

    def out_name(idx, k):
        n = nodes[idx]
        if n["op"] == "null":
            return n["name"]
        return n["name"] if k == 0 else "%s_output%d" % (n["name"], k)

    # the MXNet names of each node's visible outputs ("x_output", "x_output0", or an op's
    # own names such as RNN's "x_state"): the internals list them node by node
    node_outs = _visible_outputs(nodes, internal_names)

    used_params = set()
    onnx_inputs = []
    for nm, s, t in zip(data_inputs, in_shapes, in_types):
        ctx.shapes[nm] = s
        ctx.dtypes[nm] = t
        if dynamic:
            if dynamic_input_shapes is not None:
                dims = []
                for d_i, d in enumerate(dynamic_input_shapes[data_inputs.index(nm)]):
                    dims.append("%s_dim%d" % (nm, d_i) if d is None else int(d))
            else:
                dims = ["%s_dim%d" % (nm, d_i) for d_i in range(len(s))]
                if dims:
                    dims[0] = "batch"
        else:
            dims = list(s)
        onnx_inputs.append(helper.make_tensor_value_info(nm, ctx.onnx_dtype(t), dims))

    for idx, n in enumerate(nodes):
        if n["op"] == "null":
            if n["name"] in params:
                nm = n["name"]
                ctx.shapes[nm] = params[nm].shape
                ctx.dtypes[nm] = params[nm].dtype
                ctx.initializers[nm] = params[nm]
            elif n["name"] not in data_inputs and n["name"] not in label_vars:
                raise MXNetError("export_model: no value or input shape for variable %r"
                                 % n["name"])
            continue
        op = n["op"]
        attrs = dict(n.get("attrs", n.get("attr", n.get("param", {}))) or {})
        attrs = {k: v for k, v in attrs.items() if not (k.startswith("__") and k.endswith("__"))}
        ins = []
        for pos, inp in enumerate(n["inputs"]):
            if pos in LABEL_INPUTS.get(op, ()):
                ins.append(None)
                continue
            ins.append(out_name(inp[0], inp[1]))
        outs = [out_name(idx, k) for k in range(len(node_outs[idx]))]
        for k, o in enumerate(outs):
            mxn = node_outs[idx][k]
            s = shape_of.get(mxn)
            if s is not None and len(s) and all(d > 0 for d in s):
                ctx.shapes[o] = tuple(s)
            t = type_of.get(mxn)
            if t is not None:
                ctx.dtypes[o] = np.dtype(t)
        fn = _export_ops.get(op)
        if fn is None:
            raise MXNetError("export_model: operator %s (node %r) cannot be exported to ONNX "
                             "(opset %d)" % (op, n["name"], opset))
        if verbose:
            print("Converting idx: %d, op: %s, name: %s" % (idx, op, n["name"]))
        try:
            fn(ctx, n["name"], ins, outs, attrs)
        except MXNetError as e:
            msg = str(e)
            if n["name"] in msg:
                raise
            raise MXNetError("export_model: node %r (operator %s): %s" % (n["name"], op, msg)) \
                from None
        except (ValueError, KeyError, TypeError, IndexError) as e:
            raise MXNetError("export_model: node %r (operator %s): %s: %s"
                             % (n["name"], op, type(e).__name__, e)) from None

    onnx_outputs = []
    seen_out = set()
    for h in heads:
        nm = out_name(h[0], h[1])
        if nm in seen_out:
            nm2 = ctx.fresh(nm)
            ctx.add1("Identity", [nm], nm2)
            ctx.shapes[nm2] = ctx.shapes.get(nm)
            ctx.dtypes[nm2] = ctx.dtypes.get(nm)
            nm = nm2
        seen_out.add(nm)
        s = ctx.shapes.get(nm)
        t = ctx.dtypes.get(nm, np.dtype(np.float32))
        if s is None:
            dims = None
        elif dynamic:
            dims = [None] * len(s)
        else:
            dims = list(s)
        onnx_outputs.append(helper.make_tensor_value_info(nm, ctx.onnx_dtype(t), dims))

    # only the initializers some node reads
    read = set()
    for node in ctx.nodes:
        read.update(node.input)
    read.update(o.name for o in onnx_outputs)
    inits = []
    from onnx import numpy_helper
    for nm, arr in ctx.initializers.items():
        if nm in read:
            used_params.add(nm)
            inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), nm))
    onnx_inputs = [vi for vi in onnx_inputs if vi.name in read]
    graph_proto = helper.make_graph(ctx.nodes, "oxnet_model", onnx_inputs, onnx_outputs, inits)
    opset_ids = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph_proto, opset_imports=opset_ids, producer_name="oxnet",
                              producer_version=_version())
    model.ir_version = helper.find_min_ir_version_for(opset_ids, True)
    if run_shape_inference:
        try:
            model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        except Exception as e:
            raise MXNetError("export_model: ONNX shape inference failed: %s" % e) from None
    return model


def _visible_outputs(nodes, internal_names):
    """{node index: [MXNet names of its visible outputs]}: the internals' outputs are
    listed node by node in graph order, each op node's starting with its name + "_"."""
    res = {}
    pos = 0
    ok = True
    for idx, n in enumerate(nodes):
        if n["op"] == "null":
            if pos < len(internal_names) and internal_names[pos] == n["name"]:
                res[idx] = [n["name"]]
                pos += 1
                continue
            ok = False
            break
        prefix = n["name"] + "_"
        nxt = nodes[idx + 1]["name"] if idx + 1 < len(nodes) else None
        outs = []
        while pos < len(internal_names) and internal_names[pos].startswith(prefix):
            e = internal_names[pos]
            if nxt is not None and nxt.startswith(prefix) and (e == nxt or e.startswith(nxt + "_")):
                break  # the next node's (its name extends this one's)
            outs.append(e)
            pos += 1
        if not outs:
            ok = False
            break
        res[idx] = outs
    if ok and pos == len(internal_names):
        return res
    # otherwise by MXNet's default names
    names = set(internal_names)
    res = {}
    for idx, n in enumerate(nodes):
        if n["op"] == "null" or "%s_output" % n["name"] in names:
            res[idx] = [n["name"] if n["op"] == "null" else "%s_output" % n["name"]]
            continue
        k = 0
        while "%s_output%d" % (n["name"], k) in names:
            k += 1
        res[idx] = ["%s_output%d" % (n["name"], j) for j in range(max(k, 1))]
    return res


def _version():
    try:
        from .. import __version__
        return str(__version__)
    except ImportError:  # pragma: no cover
        return "0"
