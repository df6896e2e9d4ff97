"""``mx.contrib.onnx``: MXNet 1.9.1's ONNX entry points: ``import_model``,
``get_model_metadata``, ``import_to_gluon`` (ONNX -> oxnet) and ``export_model`` (the
same as ``mx.onnx.export_model``). Needs the ``onnx`` package (``pip install oxnet[onnx]``)."""

from ... import onnx as _mx_onnx

__all__ = ["import_model", "get_model_metadata", "import_to_gluon", "export_model"]


def import_model(model_file):
    """Imports an ONNX model file (a path, or the model's bytes) into a Symbol and its
    parameters.

    Returns
    -------
    sym : Symbol
    arg_params : dict of str to NDArray
    aux_params : dict of str to NDArray (BatchNorm's running mean and variance)
    """
    from ...onnx._import import import_proto, load_proto
    return import_proto(load_proto(model_file))


def get_model_metadata(model_file):
    """The inputs and outputs of an ONNX model:
    ``{'input_tensor_data': [(name, shape), ...], 'output_tensor_data': [(name, shape), ...]}``
    (the initializers are not inputs; a dynamic dim is 0)."""
    from ...onnx._import import graph_io, load_proto
    from ...onnx._import import guarded
    ins, outs = guarded(graph_io, load_proto(model_file))
    return {"input_tensor_data": ins, "output_tensor_data": outs}


def import_to_gluon(model_file, ctx):
    """Imports an ONNX model as a ``gluon.SymbolBlock`` with its parameters loaded on
    ``ctx``."""
    from ...gluon import SymbolBlock
    from ... import symbol as _sym
    from ...onnx._import import GraphImporter, guarded, load_proto
    model = load_proto(model_file)
    imp = guarded(GraphImporter, model)
    sym, arg_params, aux_params = guarded(imp.run)
    inputs = [_sym.var(n) for n in imp.inputs if n in set(sym.list_inputs())]
    net = SymbolBlock(outputs=sym, inputs=inputs)
    params = net.collect_params()
    for k, v in list(arg_params.items()) + list(aux_params.items()):
        if k in params:
            params[k].shape = v.shape
            params[k]._load_init(v, ctx)
    return net


def export_model(*args, **kwargs):
    """``mx.onnx.export_model`` (MXNet 1.9.1 keeps this older path)."""
    return _mx_onnx.export_model(*args, **kwargs)
