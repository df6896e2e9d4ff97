"""ONNX ModelProto -> MXNet Symbol + (arg_params, aux_params).

Each ONNX node is translated by a function of ``_import_ops`` into oxnet symbols.
Initializers and Constant outputs stay NumPy values while ops read them as attributes
(shapes, axes, pads) and become parameters (Variables) where an op reads them as data."""

import numpy as np

from ..base import MXNetError
from ._common import MAX_IMPORT_OPSET, MIN_IMPORT_OPSET, require_onnx


def load_proto(model_file):
    """The ModelProto of a path, bytes or ModelProto; MXNetError for anything that is
    not a readable ONNX model."""
    onnx = require_onnx()
    if isinstance(model_file, onnx.ModelProto):
        return model_file
    try:
        if isinstance(model_file, (bytes, bytearray)):
            model = onnx.load_model_from_string(bytes(model_file))
        else:
            with open(model_file, "rb") as f:
                data = f.read()
            model = onnx.load_model_from_string(data)
    except OSError as e:
        raise MXNetError("ONNX import: cannot read %r: %s" % (model_file, e)) from None
    except Exception as e:
        raise MXNetError("ONNX import: %r is not a valid ONNX model (truncated or corrupt?): "
                         "%s: %s" % (model_file, type(e).__name__, e)) from None
    if not model.HasField("graph") or len(model.graph.node) == 0:
        raise MXNetError("ONNX import: %r has no graph (truncated or corrupt?)" % (model_file,))
    return model


def model_opset(model):
    version = None
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            version = int(imp.version)
    if version is None:
        if not model.opset_import:
            version = 1
        else:
            raise MXNetError("ONNX import: the model imports no ai.onnx opset")
    if not MIN_IMPORT_OPSET <= version <= MAX_IMPORT_OPSET:
        raise MXNetError("ONNX import: opset %d is not supported (opsets %d to %d)"
                         % (version, MIN_IMPORT_OPSET, MAX_IMPORT_OPSET))
    return version


def _dims(vi):
    t = vi.type.tensor_type
    if not t.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") else 0 for d in t.shape.dim)


class GraphImporter:
    """Holds the values of the ONNX tensors while the nodes are translated: Symbols,
    or NumPy arrays for initializers and constants."""

    def __init__(self, model):
        from onnx import numpy_helper
        from .. import symbol as sym
        self.sym = sym
        self.model = model
        self.opset = model_opset(model)
        self.numpy_helper = numpy_helper
        g = model.graph
        self.consts = {}
        self.symbols = {}
        self.params = {}      # variable name -> numpy (from consts used as data)
        self.shapes = {}
        for init in g.initializer:
            try:
                self.consts[init.name] = numpy_helper.to_array(init)
            except Exception as e:
                raise MXNetError("ONNX import: cannot read initializer %r: %s"
                                 % (init.name, e)) from None
        for vi in list(g.input) + list(g.value_info) + list(g.output):
            d = _dims(vi)
            if d is not None:
                self.shapes[vi.name] = d
        try:
            import onnx
            inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
            for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
                d = _dims(vi)
                if d is not None and vi.name not in self.shapes:
                    self.shapes[vi.name] = d
        except Exception:  # shapes are a help, not a need
            pass
        for k, v in self.consts.items():
            self.shapes[k] = v.shape
        self.inputs = []
        for vi in g.input:
            if vi.name in self.consts:
                continue
            self.inputs.append(vi.name)
            self.symbols[vi.name] = sym.var(vi.name)

    # ---- values --------------------------------------------------------------------
    def const(self, name):
        """The NumPy value of tensor ``name`` when it is constant, else None."""
        if name == "":
            return None
        return self.consts.get(name)

    def has(self, name):
        return name in self.consts or name in self.symbols

    def get(self, name):
        """The Symbol of tensor ``name`` (a constant becomes a parameter)."""
        if name in self.symbols:
            v = self.symbols[name]
            if not isinstance(v, self.sym.Symbol):
                raise MXNetError("ONNX import: tensor %r (a run-time shape) is used as data, "
                                 "which is not supported" % name)
            return v
        if name in self.consts:
            v = self.sym.var(name)
            self.params[name] = self.consts[name]
            self.symbols[name] = v
            return v
        raise MXNetError("ONNX import: tensor %r is used before it is produced" % name)

    def param(self, name, value):
        """A new parameter Variable holding ``value``."""
        base = name
        k = 0
        while name in self.symbols or name in self.consts:
            k += 1
            name = "%s_%d" % (base, k)
        v = self.sym.var(name)
        self.params[name] = np.asarray(value)
        self.symbols[name] = v
        return v

    def shape(self, name):
        s = self.shapes.get(name)
        if s is None and name in self.consts:
            s = self.consts[name].shape
        if (s is None or 0 in s) and isinstance(self.symbols.get(name), self.sym.Symbol):
            s2 = self._infer(name)
            if s2 is not None:
                s = s2
                self.shapes[name] = s
        return s

    def _infer(self, name):
        """The static shape of a translated tensor by oxnet's shape inference, from the
        graph inputs' static shapes and the parameters' shapes."""
        sym = self.symbols[name]
        known = {}
        for arg in sym.list_arguments() + sym.list_auxiliary_states():
            if arg in self.params:
                known[arg] = self.params[arg].shape
            elif arg in self.shapes and self.shapes[arg] and 0 not in self.shapes[arg]:
                known[arg] = self.shapes[arg]
            else:
                return None
        try:
            _, outs, _ = sym.infer_shape_partial(**known)
        except MXNetError:
            return None
        if not outs or outs[0] is None or 0 in outs[0] or not len(outs[0]):
            return None
        return tuple(outs[0])

    def rank(self, name):
        s = self.shape(name)
        return None if s is None else len(s)

    # ---- the graph -----------------------------------------------------------------
    def run(self):
        from . import _import_ops
        for node in self.model.graph.node:
            label = node.name or (node.output[0] if node.output else node.op_type)
            if node.domain not in ("", "ai.onnx"):
                raise MXNetError("ONNX import: node %r: operator %s of domain %r is not "
                                 "supported" % (label, node.op_type, node.domain))
            folded = self._fold(node)
            if folded is not None:
                for out, val in zip(node.output, folded):
                    if out:
                        self.consts[out] = val
                        self.shapes[out] = val.shape
                continue
            fn = _import_ops.get(node.op_type)
            if fn is None:
                raise MXNetError("ONNX import: node %r: operator %s (opset %d) is not supported"
                                 % (label, node.op_type, self.opset))
            attrs = {}
            for a in node.attribute:
                try:
                    attrs[a.name] = self._attr(a)
                except Exception as e:
                    raise MXNetError("ONNX import: node %r (%s): cannot read attribute %r: %s"
                                     % (label, node.op_type, a.name, e)) from None
            try:
                res = fn(self, node, list(node.input), attrs, self._name(node))
            except MXNetError as e:
                if label in str(e):
                    raise
                raise MXNetError("ONNX import: node %r (%s): %s" % (label, node.op_type, e)) \
                    from None
            except (ValueError, KeyError, TypeError, IndexError, AttributeError,
                    ZeroDivisionError, OverflowError) as e:
                raise MXNetError("ONNX import: node %r (%s): %s: %s"
                                 % (label, node.op_type, type(e).__name__, e)) from None
            if not isinstance(res, (list, tuple)):
                res = [res]
            for out, val in zip(node.output, res):
                if out == "" or val is None:
                    continue
                if isinstance(val, np.ndarray):
                    self.consts[out] = val
                    self.shapes[out] = val.shape
                else:
                    self.symbols[out] = val
        outs = []
        for o in self.model.graph.output:
            if o.name in self.symbols:
                outs.append(self.symbols[o.name])
            elif o.name in self.consts:
                outs.append(self.get(o.name))
            else:
                raise MXNetError("ONNX import: graph output %r is not produced" % o.name)
        if not outs:
            raise MXNetError("ONNX import: the graph has no outputs")
        out = outs[0] if len(outs) == 1 else self.sym.Group(outs)
        from .. import ndarray as nd
        arg_names = set(out.list_arguments())
        aux_names = set(out.list_auxiliary_states())
        arg_params = {k: nd.array(v, dtype=v.dtype) for k, v in self.params.items()
                      if k in arg_names}
        aux_params = {k: nd.array(v, dtype=v.dtype) for k, v in self.params.items()
                      if k in aux_names}
        return out, arg_params, aux_params

    _NO_FOLD = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                "Multinomial", "Bernoulli", "Dropout", "Constant"}

    def _fold(self, node):
        """The output values of a node all of whose inputs are constants (shape
        arithmetic: Shape -> Gather -> Concat -> Reshape), computed by onnx's reference
        evaluator; None when it does not apply."""
        ins = [i for i in node.input if i]
        if not ins or node.op_type in self._NO_FOLD or any(i not in self.consts for i in ins):
            return None
        try:
            from onnx import helper
            from onnx.reference import ReferenceEvaluator
        except ImportError:  # pragma: no cover - onnx < 1.13
            return None
        try:
            vals = {i: self.consts[i] for i in ins}
            g = helper.make_graph(
                [node], "fold",
                [helper.make_tensor_value_info(i, helper.np_dtype_to_tensor_dtype(v.dtype),
                                               list(v.shape)) for i, v in vals.items()],
                [helper.make_tensor_value_info(o, 0, None) for o in node.output if o])
            m = helper.make_model(g, opset_imports=[helper.make_opsetid("", self.opset)])
            res = ReferenceEvaluator(m).run(None, vals)
        except Exception:
            return None  # the translation decides
        outs = []
        for r in res:
            outs.append(np.asarray(r))
        return outs

    def _name(self, node):
        return node.output[0] if node.output and node.output[0] else (node.name or node.op_type)

    def _attr(self, a):
        from onnx import helper
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            return v.decode("utf-8")
        if hasattr(v, "dims") and hasattr(v, "data_type"):  # TensorProto
            return self.numpy_helper.to_array(v)
        if isinstance(v, list):
            return [x.decode("utf-8") if isinstance(x, bytes) else x for x in v]
        return v


def guarded(fn, *args):
    """fn(*args), with any failure but MXNetError's reported as an MXNetError (a
    corrupt file can make the onnx package raise anything)."""
    try:
        return fn(*args)
    except MXNetError:
        raise
    except Exception as e:
        raise MXNetError("ONNX import: the model cannot be imported (corrupt file?): %s: %s"
                         % (type(e).__name__, e)) from None


def import_proto(model):
    return guarded(lambda m: GraphImporter(m).run(), model)


def graph_io(model):
    inits = set(i.name for i in model.graph.initializer)
    ins = [(vi.name, _dims(vi) or ()) for vi in model.graph.input if vi.name not in inits]
    outs = [(vi.name, _dims(vi) or ()) for vi in model.graph.output]
    return ins, outs
