"""``mx.model``: checkpoints of symbolic models, in MXNet 1.x's files.

A checkpoint is two files: ``prefix-symbol.json`` (the graph, as ``Symbol.save``
writes it) and ``prefix-%04d.params`` (the parameters, one NDArray file whose keys
are ``arg:<name>`` for arguments and ``aux:<name>`` for auxiliary states). Files
written by MXNet load here and the other way round.
"""

import logging
import time
import warnings
from collections import namedtuple

import numpy as np

from . import io
from . import metric
from . import ndarray as nd
from . import optimizer as opt
from . import symbol as sym
from .base import MXNetError
from .callback import LogValidationMetricsCallback
from .context import Context, cpu
from .initializer import InitDesc, Uniform

__all__ = ["BatchEndParam", "save_checkpoint", "load_params", "load_checkpoint", "FeedForward"]

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


def _callbacks(callbacks, *args):
    if isinstance(callbacks, list):
        for cb in callbacks:
            cb(*args)
    elif callbacks:
        callbacks(*args)


def _check_arguments(symbol):
    """Argument and auxiliary state names must be unique."""
    for names, what in ((symbol.list_arguments(), "argument"),
                        (symbol.list_auxiliary_states(), "auxiliary state")):
        seen = set()
        for name in names:
            if name in seen:
                raise ValueError('Find duplicated %s name "%s", please make the weight name '
                                 "non-duplicated(using name arguments), %ss are %s"
                                 % (what, name, what, str(names)))
            seen.add(name)


class FeedForward:
    """MXNet's deprecated model class (use ``mx.mod.Module``): a Symbol with its
    parameters, trained by ``fit`` over a DataIter or NumPy arrays.

    Parameters
    ----------
    symbol : Symbol
    ctx : Context or list of Context, default cpu()
    num_epoch : int
        Epochs ``fit`` runs.
    epoch_size : int, optional
        Batches per epoch; the iterator is reset only when it runs out.
    optimizer : str or Optimizer, default 'sgd'
    initializer : Initializer, default Uniform(0.01)
    numpy_batch_size : int, default 128
        Batch size for NumPy / NDArray inputs.
    arg_params, aux_params : dict of str to NDArray, optional
        Starting parameters.
    allow_extra_params : bool
        Drop given parameters the network does not have (else they are an error at
        bind time).
    begin_epoch : int
    **kwargs :
        Optimizer arguments (learning_rate, momentum, wd, ...).
    """

    def __init__(self, symbol, ctx=None, num_epoch=None, epoch_size=None, optimizer="sgd",
                 initializer=Uniform(0.01), numpy_batch_size=128, arg_params=None,
                 aux_params=None, allow_extra_params=False, begin_epoch=0, **kwargs):
        warnings.warn("mxnet.model.FeedForward has been deprecated. Please use "
                      "mxnet.mod.Module instead.", DeprecationWarning, stacklevel=2)
        if not isinstance(symbol, sym.Symbol):
            raise MXNetError("FeedForward: symbol must be a Symbol (symbol generators for "
                             "bucketing are not supported; use mx.mod.BucketingModule)")
        self.symbol = symbol
        self.sym_gen = None
        self.arg_params = arg_params
        self.aux_params = aux_params
        self.allow_extra_params = allow_extra_params
        _check_arguments(symbol)
        if allow_extra_params:
            args = set(symbol.list_arguments())
            auxs = set(symbol.list_auxiliary_states())
            if self.arg_params:
                self.arg_params = {k: v for k, v in self.arg_params.items() if k in args}
            if self.aux_params:
                self.aux_params = {k: v for k, v in self.aux_params.items() if k in auxs}
        if ctx is None:
            ctx = [cpu()]
        elif isinstance(ctx, Context):
            ctx = [ctx]
        self.ctx = ctx
        self.num_epoch = num_epoch
        self.epoch_size = epoch_size
        self.kwargs = kwargs.copy()
        self.optimizer = optimizer
        self.initializer = initializer
        self.numpy_batch_size = numpy_batch_size
        self.begin_epoch = begin_epoch
        self._pred_exec = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_pred_exec"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    # ---- data --------------------------------------------------------------------
    def _init_iter(self, X, y, is_train):
        if isinstance(X, (np.ndarray, nd.NDArray)):
            if y is None:
                if is_train:
                    raise ValueError("y must be specified when X is numpy.ndarray")
                y = np.zeros(X.shape[0])
            if not isinstance(y, (np.ndarray, nd.NDArray)):
                raise TypeError("y must be ndarray when X is numpy.ndarray")
            if X.shape[0] != y.shape[0]:
                raise ValueError("The numbers of data points and labels not equal")
            if y.ndim == 2 and y.shape[1] == 1:
                y = y.reshape((-1,))
            if y.ndim != 1:
                raise ValueError("Label must be 1D or 2D (with 2nd dimension being 1)")
            batch = min(X.shape[0], self.numpy_batch_size)
            if is_train:
                return io.NDArrayIter(X, y, batch, shuffle=True, last_batch_handle="roll_over")
            return io.NDArrayIter(X, y, batch, shuffle=False)
        if not isinstance(X, io.DataIter):
            raise TypeError("X must be DataIter, NDArray or numpy.ndarray")
        return X

    def _init_eval_iter(self, eval_data):
        if eval_data is None:
            return None
        if isinstance(eval_data, (tuple, list)) and len(eval_data) == 2:
            if eval_data[0] is None:
                raise ValueError("Eval data is NONE")
            if eval_data[1] is None and isinstance(eval_data[0], io.DataIter):
                return eval_data[0]
            data = np.array(eval_data[0]) if isinstance(eval_data[0], list) else eval_data[0]
            label = np.array(eval_data[1]) if isinstance(eval_data[1], list) else eval_data[1]
            return self._init_iter(data, label, is_train=True)
        if not isinstance(eval_data, io.DataIter):
            raise TypeError("Eval data must be DataIter, or NDArray/numpy.ndarray/list pair "
                            "(i.e. tuple/list of length 2)")
        return eval_data

    # ---- parameters ------------------------------------------------------------
    def _init_params(self, inputs, overwrite=False):
        inputs = [x if isinstance(x, io.DataDesc) else io.DataDesc(*x) for x in inputs]
        shapes = {d.name: d.shape for d in inputs}
        arg_shapes, _, aux_shapes = self.symbol.infer_shape(**shapes)
        if arg_shapes is None:
            raise MXNetError("FeedForward: cannot infer the parameter shapes from %s" % shapes)
        arg_types, _, aux_types = self.symbol.infer_type_partial(
            **{d.name: d.dtype for d in inputs})
        arg_names = self.symbol.list_arguments()
        param_names = [n for n in arg_names if n not in shapes]
        aux_names = self.symbol.list_auxiliary_states()
        new_args, new_auxs = {}, {}
        for names, shape_list, types, given, out in (
                (arg_names, arg_shapes, arg_types, self.arg_params, new_args),
                (aux_names, aux_shapes, aux_types, self.aux_params, new_auxs)):
            for name, shape, dtype in zip(names, shape_list, types):
                if out is new_args and name not in param_names:
                    continue
                arr = nd.zeros(shape, dtype=dtype or np.float32)
                if given and name in given and not overwrite:
                    arr[:] = given[name]
                else:
                    self.initializer(InitDesc(name), arr)
                out[name] = arr
        self.arg_params = new_args
        self.aux_params = new_auxs
        return arg_names, param_names, aux_names

    # ---- inference -----------------------------------------------------------------
    def _predictor(self, data_iter):
        shapes = {name: a.shape for name, a in self.arg_params.items()}
        shapes.update({d[0]: d[1] for d in data_iter.provide_data})
        types = {k: v.dtype for k, v in self.arg_params.items()}
        types.update({d.name: d.dtype for d in data_iter.provide_data
                      if isinstance(d, io.DataDesc)})
        current = self._pred_exec
        if current is None or [tuple(a.shape) for a in current.arg_arrays] != [
                tuple(s) for s in self.symbol.infer_shape(**shapes)[0]]:
            current = self.symbol.simple_bind(self.ctx[0], grad_req="null", type_dict=types,
                                              **shapes)
            self._pred_exec = current
        # the parameters may have been trained since the last call
        current.copy_params_from(self.arg_params, self.aux_params)
        return current, [current.arg_dict[d[0]] for d in data_iter.provide_data]

    def predict(self, X, num_batch=None, return_data=False, reset=True):
        """NumPy outputs of the network over ``X`` (a DataIter, or arrays batched by
        ``numpy_batch_size``), padding removed; with ``return_data`` also the data and
        labels, as ``(outputs, data, label)``."""
        X = self._init_iter(X, None, is_train=False)
        if reset:
            X.reset()
        exe, data_arrays = self._predictor(X)
        outputs = [[] for _ in exe.outputs]
        data_list = [[] for _ in X.provide_data]
        label_list = [[] for _ in X.provide_label]
        for i, batch in enumerate(X):
            for src, dst in zip(batch.data, data_arrays):
                src.copyto(dst)
            exe.forward(is_train=False)
            real = X.batch_size - (batch.pad or 0)
            for lst, out in zip(outputs, exe.outputs):
                lst.append(out[0:real].asnumpy())
            if return_data:
                for lst, x in zip(data_list, batch.data):
                    lst.append(x[0:real].asnumpy())
                for lst, x in zip(label_list, batch.label):
                    lst.append(x[0:real].asnumpy())
            if num_batch is not None and i + 1 == num_batch:
                break
        outputs = [np.concatenate(x) for x in outputs]
        if len(outputs) == 1:
            outputs = outputs[0]
        if not return_data:
            return outputs
        data = [np.concatenate(x) for x in data_list]
        label = [np.concatenate(x) for x in label_list]
        return (outputs, data[0] if len(data) == 1 else data,
                label[0] if len(label) == 1 else label)

    def score(self, X, eval_metric="acc", num_batch=None, batch_end_callback=None,
              reset=True):
        """The value of ``eval_metric`` over ``X``."""
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        X = self._init_iter(X, None, is_train=False)
        if reset:
            X.reset()
        exe, data_arrays = self._predictor(X)
        for i, batch in enumerate(X):
            if num_batch is not None and i == num_batch:
                break
            for src, dst in zip(batch.data, data_arrays):
                src.copyto(dst)
            exe.forward(is_train=False)
            eval_metric.update(batch.label, exe.outputs)
            _callbacks(batch_end_callback,
                       BatchEndParam(epoch=0, nbatch=i, eval_metric=eval_metric,
                                     locals=locals()))
        return eval_metric.get()[1]

    # ---- training ------------------------------------------------------------------
    def fit(self, X, y=None, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", logger=None, work_load_list=None,
            monitor=None, eval_end_callback=LogValidationMetricsCallback(),
            eval_batch_end_callback=None):
        """Trains from ``begin_epoch`` to ``num_epoch`` (MXNet's loop: batch callbacks
        get 1-based ``nbatch``; each epoch logs ``Epoch[i] Time cost=...``; with
        ``eval_data`` the validation metric goes to ``eval_end_callback``, by default
        a LogValidationMetricsCallback)."""
        from .module import Module
        if logger is None:
            logger = logging
        if self.num_epoch is None:
            raise ValueError("FeedForward.fit: num_epoch is not set")
        data = self._init_iter(X, y, is_train=True)
        eval_data = self._init_eval_iter(eval_data)
        _, param_names, _ = self._init_params(data.provide_data + data.provide_label)
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        idx2name = dict(enumerate(param_names))
        if isinstance(self.optimizer, str):
            kwargs = dict(self.kwargs)
            kwargs.setdefault("rescale_grad", 1.0 / data.batch_size)
            optimizer = opt.create(self.optimizer, sym=self.symbol, param_idx2name=idx2name,
                                   **kwargs)
        else:
            optimizer = self.optimizer
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()
        data_names = [d[0] for d in data.provide_data]
        label_names = [d[0] for d in data.provide_label]
        logger.info("Start training with %s", str(self.ctx))
        mod = Module(self.symbol, data_names, label_names, logger=logger, context=self.ctx,
                     work_load_list=work_load_list)
        mod.bind(data.provide_data, data.provide_label, for_training=True)
        mod.init_params(arg_params=self.arg_params, aux_params=self.aux_params,
                        allow_missing=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a given Optimizer keeps its rescale_grad
            mod.init_optimizer(kvstore=kvstore, optimizer=optimizer)
        if monitor is not None:
            mod.install_monitor(monitor)

        data.reset()
        for epoch in range(self.begin_epoch, self.num_epoch):
            tic = time.time()
            eval_metric.reset()
            nbatch = 0
            while True:
                do_reset = True
                for batch in data:
                    if monitor is not None:
                        monitor.tic()
                    mod.forward(batch, is_train=True)
                    mod.backward()
                    mod.update()
                    if monitor is not None:
                        monitor.toc_print()
                    mod.update_metric(eval_metric, batch.label)
                    nbatch += 1
                    _callbacks(batch_end_callback,
                               BatchEndParam(epoch=epoch, nbatch=nbatch,
                                             eval_metric=eval_metric, locals=locals()))
                    if self.epoch_size is not None and nbatch >= self.epoch_size:
                        do_reset = False
                        break
                if do_reset:
                    logger.info("Epoch[%d] Resetting Data Iterator", epoch)
                    data.reset()
                if self.epoch_size is None or nbatch >= self.epoch_size:
                    break
            logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            args, auxs = mod.get_params()
            for src, dst in ((args, self.arg_params), (auxs, self.aux_params)):
                for k, v in src.items():
                    v.copyto(dst[k])
            _callbacks(epoch_end_callback, epoch, self.symbol, self.arg_params,
                       self.aux_params)
            if eval_data:
                eval_metric.reset()
                eval_data.reset()
                total = 0
                for i, batch in enumerate(eval_data):
                    mod.forward(batch, is_train=False)
                    mod.update_metric(eval_metric, batch.label)
                    _callbacks(eval_batch_end_callback,
                               BatchEndParam(epoch=epoch, nbatch=i, eval_metric=eval_metric,
                                             locals=locals()))
                    total += 1
                _callbacks(eval_end_callback,
                           BatchEndParam(epoch=epoch, nbatch=total, eval_metric=eval_metric,
                                         locals=locals()))
                eval_data.reset()

    # ---- files ---------------------------------------------------------------------
    def save(self, prefix, epoch=None, remove_amp_cast=True):
        """Writes a checkpoint (epoch defaults to ``num_epoch``)."""
        if epoch is None:
            epoch = self.num_epoch
        if epoch is None:
            raise ValueError("FeedForward.save: give the epoch (num_epoch is not set)")
        save_checkpoint(prefix, epoch, self.symbol, self.arg_params, self.aux_params,
                        remove_amp_cast=remove_amp_cast)

    @staticmethod
    def load(prefix, epoch, ctx=None, **kwargs):
        """A FeedForward from a checkpoint, continuing at ``begin_epoch=epoch``."""
        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
        return FeedForward(symbol, ctx=ctx, arg_params=arg_params, aux_params=aux_params,
                           begin_epoch=epoch, **kwargs)

    @staticmethod
    def create(symbol, X, y=None, ctx=None, num_epoch=None, epoch_size=None, optimizer="sgd",
               initializer=Uniform(0.01), eval_data=None, eval_metric="acc",
               epoch_end_callback=None, batch_end_callback=None, kvstore="local", logger=None,
               work_load_list=None, eval_end_callback=LogValidationMetricsCallback(),
               eval_batch_end_callback=None, **kwargs):
        """A FeedForward trained on ``X`` (and ``y``)."""
        model = FeedForward(symbol, ctx=ctx, num_epoch=num_epoch, epoch_size=epoch_size,
                            optimizer=optimizer, initializer=initializer, **kwargs)
        model.fit(X, y, eval_data=eval_data, eval_metric=eval_metric,
                  epoch_end_callback=epoch_end_callback, batch_end_callback=batch_end_callback,
                  kvstore=kvstore, logger=logger, work_load_list=work_load_list,
                  eval_end_callback=eval_end_callback,
                  eval_batch_end_callback=eval_batch_end_callback)
        return model
