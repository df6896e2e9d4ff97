"""``mx.onnx``: export an MXNet model (Symbol + params, or the ``-symbol.json`` and
``.params`` files MXNet and a hybridized Gluon block write) to ONNX, as MXNet 1.9.1's
``mxnet.onnx`` does. Needs the ``onnx`` package (``pip install oxnet[onnx]``)."""

import numpy as np

from ..base import MXNetError
from ._common import MAX_EXPORT_OPSET, MIN_EXPORT_OPSET, require_onnx

__all__ = ["export_model", "get_operator_support"]


def get_operator_support(opset_version=None):
    """The MXNet operators the exporter translates (for opsets 12 to 21)."""
    from . import _export_ops
    if opset_version is not None and not MIN_EXPORT_OPSET <= int(opset_version) <= MAX_EXPORT_OPSET:
        return []
    return _export_ops.supported_ops()


def export_model(sym, params, in_shapes=None, in_types=np.float32,
                 onnx_file_path='model.onnx', verbose=False, dynamic=False,
                 dynamic_input_shapes=None, run_shape_inference=False, input_type=None,
                 input_shape=None, opset_version=None):
    """Exports an MXNet model to an ONNX file; returns ``onnx_file_path``.

    Parameters
    ----------
    sym : str or Symbol
        Path to the ``-symbol.json`` file or the Symbol.
    params : str or dict or list of dict
        Path to the ``.params`` file, one dict of arg and aux params (names may keep
        the ``arg:``/``aux:`` prefixes), or ``[arg_params, aux_params]``.
    in_shapes : list of tuple
        The shape of each input (the symbol's variables that are not params, in graph
        order; label inputs of output layers are left out).
    in_types : dtype or list of dtype
        The input dtypes (default float32).
    onnx_file_path : str
        Where the model is written.
    verbose : bool
        Log each node as it is translated.
    dynamic : bool
        Make the input shapes dynamic: with ``dynamic_input_shapes`` None every input's
        first dim is a named dynamic dim (``batch``) and the others too.
    dynamic_input_shapes : list of tuple
        Input shapes with None for each dynamic dim.
    run_shape_inference : bool
        Run ONNX shape inference on the result (the value infos are kept).
    input_type, input_shape :
        The old names of in_types and in_shapes.
    opset_version : int, optional
        The ONNX opset (12 to 21; default: the installed onnx's, at most 18).
    """
    onnx = require_onnx()
    from ._export import build_model
    if input_type is not None:
        in_types = input_type
    if input_shape is not None:
        in_shapes = input_shape
    model = build_model(sym, params, in_shapes=in_shapes, in_types=in_types, verbose=verbose,
                        dynamic=dynamic, dynamic_input_shapes=dynamic_input_shapes,
                        run_shape_inference=run_shape_inference, opset_version=opset_version)
    try:
        data = model.SerializeToString()
    except Exception as e:
        raise MXNetError("export_model: cannot serialize the ONNX model (models over 2 GB "
                         "need external data, which is not supported): %s" % e) from None
    try:
        onnx.checker.check_model(data)
    except Exception as e:
        raise MXNetError("export_model: the ONNX graph fails onnx.checker: %s" % e) from None
    try:
        with open(onnx_file_path, "wb") as f:
            f.write(data)
    except (OSError, ValueError) as e:
        raise MXNetError("export_model: cannot write %r: %s" % (onnx_file_path, e)) from None
    if verbose:
        print("Input shape of the model %s" % (in_shapes,))
        print("Exported ONNX file %s saved to disk" % onnx_file_path)
    return onnx_file_path
