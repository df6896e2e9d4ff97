"""``mx.model``: checkpoints of symbolic models, in MXNet 1.x's files.

A checkpoint is two files: ``prefix-symbol.json`` (the graph, as ``Symbol.save``
writes it) and ``prefix-%04d.params`` (the parameters, one NDArray file whose keys
are ``arg:<name>`` for arguments and ``aux:<name>`` for auxiliary states). Files
written by MXNet load here and the other way round.
"""

import logging
from collections import namedtuple

from . import ndarray as nd
from . import symbol as sym
from .context import cpu

__all__ = ["BatchEndParam", "save_checkpoint", "load_params", "load_checkpoint"]

# What batch-end and eval-end callbacks receive (``param.epoch``, ``param.nbatch``,
# ``param.eval_metric``, ``param.locals``).
BatchEndParam = namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])


def _params_file(prefix, epoch):
    return "%s-%04d.params" % (prefix, epoch)


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Writes a checkpoint: ``prefix-symbol.json`` (skipped when ``symbol`` is None)
    and ``prefix-%04d.params`` % epoch.

    Parameters
    ----------
    prefix : str
        Path prefix of the two files.
    epoch : int
        Epoch number, written into the params file name with four digits.
    symbol : Symbol
        The network (or None to write only the parameters).
    arg_params : dict of str to NDArray
        The arguments (weights, biases).
    aux_params : dict of str to NDArray
        The auxiliary states (e.g. BatchNorm's moving statistics).
    remove_amp_cast : bool, optional
        Drop amp_cast nodes from the saved graph.
    """
    if symbol is not None:
        symbol.save("%s-symbol.json" % prefix, remove_amp_cast=remove_amp_cast)
    arrays = {}
    for kind, params in (("arg", arg_params), ("aux", aux_params)):
        for name, value in params.items():
            arrays["%s:%s" % (kind, name)] = value.as_in_context(cpu())
    fname = _params_file(prefix, epoch)
    nd.save(fname, arrays)
    logging.info('Saved checkpoint to "%s"', fname)


def load_params(prefix, epoch):
    """Reads ``prefix-%04d.params`` % epoch into ``(arg_params, aux_params)``
    (dicts of name to NDArray, the ``arg:``/``aux:`` tags removed)."""
    fname = _params_file(prefix, epoch)
    loaded = nd.load(fname)
    arg_params, aux_params = {}, {}
    if not loaded:
        logging.warning("Params file '%s' is empty", fname)
        return arg_params, aux_params
    if not isinstance(loaded, dict):
        raise ValueError("Params file '%s' holds arrays without names; a checkpoint needs "
                         "'arg:<name>' / 'aux:<name>' keys" % fname)
    for key, value in loaded.items():
        kind, _, name = key.partition(":")
        if kind == "arg":
            arg_params[name] = value
        elif kind == "aux":
            aux_params[name] = value
    return arg_params, aux_params


def load_checkpoint(prefix, epoch):
    """Reads a checkpoint written by :func:`save_checkpoint` (or MXNet's).

    Returns
    -------
    symbol : Symbol
        The graph from ``prefix-symbol.json``.
    arg_params : dict of str to NDArray
    aux_params : dict of str to NDArray
    """
    symbol = sym.load("%s-symbol.json" % prefix)
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params
