"""``BaseModule``: the training / evaluation loops of MXNet 1.x's module API,
written against the abstract computation interface (``bind``, ``init_params``,
``init_optimizer``, ``forward``, ``backward``, ``update``, ``get_outputs``,
``update_metric``) that ``Module`` implements."""

import logging
import time
import warnings

import numpy as np

from .. import metric as _metric
from .. import ndarray as nd
from ..base import MXNetError
from ..initializer import Uniform
from ..io import DataBatch, DataDesc, DataIter
from ..model import BatchEndParam
from ..ndarray import NDArray

__all__ = ["BaseModule"]


class ModuleStateError(MXNetError, AssertionError):
    """A module method called in the wrong state (e.g. ``forward`` before ``bind``);
    an ``AssertionError`` too, as MXNet asserts these."""


def _require(cond, msg):
    if not cond:
        raise ModuleStateError(msg)


def _as_list(obj):
    if obj is None:
        return []
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


def _check_input_names(symbol, names, typename, throw):
    """Every name must be an argument of ``symbol``: a ValueError (or a warning when
    not ``throw``) suggesting the arguments that look like inputs."""
    import warnings
    args = symbol.list_arguments()
    for name in names:
        if name in args:
            continue
        candidates = [a for a in args if not a.endswith(("_weight", "_bias", "_gamma", "_beta"))]
        msg = ("You created Module with Module(..., %s_names=%s) but input with name '%s' is "
               "not found in symbol.list_arguments(). Did you mean one of:\n\t%s"
               % (typename, str(names), name, "\n\t".join(candidates)))
        if throw:
            raise ValueError(msg)
        warnings.warn(msg)


def _parse_descs(names, shapes, what, throw=True):
    """``shapes`` ([(name, shape)] or DataDesc list) as DataDesc, checked against
    ``names``: a ValueError on a mismatch (a warning when not ``throw``, as MXNet
    does for labels)."""
    import warnings
    descs = [s if isinstance(s, DataDesc) else DataDesc(*s) for s in shapes]
    actual = [d.name for d in descs]
    if sorted(actual) != sorted(names):
        msg = ("Data provided by %s_shapes don't match names specified by %s_names "
               "(%s vs. %s)" % (what, what, str(descs), str(list(names))))
        if throw:
            raise ValueError(msg)
        warnings.warn(msg)
    for d in descs:
        if not isinstance(d.shape, (tuple, list)) or not all(
                isinstance(x, (int, np.integer)) and x > 0 for x in d.shape):
            raise TypeError("%s_shapes: the shape of '%s' must be a tuple of positive ints, "
                             "got %r" % (what, d.name, d.shape))
    return descs


class BaseModule:
    """The module interface and the loops built on it (``fit``, ``score``,
    ``predict``, ``iter_predict``, ``forward_backward``, parameter files).

    State flags: ``binded``, ``for_training``, ``inputs_need_grad``,
    ``params_initialized``, ``optimizer_initialized``.
    """

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None
        self._total_exec_bytes = 0

    # ---- high-level loops ------------------------------------------------------
    def forward_backward(self, data_batch):
        """``forward(data_batch, is_train=True)`` then ``backward()``."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Prepares the module for ``data_batch`` (nothing to do for dense data)."""
        if sparse_row_id_fn is not None:
            raise MXNetError("prepare: sparse_row_id_fn is for row_sparse parameters, which "
                             "oxnet modules do not have")

    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None,
              score_end_callback=None, reset=True, epoch=0, sparse_row_id_fn=None):
        """Runs inference over ``eval_data`` and returns ``eval_metric``'s
        ``get_name_value()``: a list of (name, value).

        Parameters
        ----------
        eval_data : DataIter
        eval_metric : str or EvalMetric
        num_batch : int, optional
            Stop after this many batches.
        batch_end_callback, score_end_callback : callable or list of callables
            Called with a ``BatchEndParam`` after each batch / at the end.
        reset : bool
            Reset ``eval_data`` first.
        epoch : int
            The epoch number given to the callbacks.
        """
        _require(self.binded and self.params_initialized,
                 "score: bind the module and initialize its parameters first")
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, _metric.EvalMetric):
            eval_metric = _metric.create(eval_metric)
        eval_metric.reset()
        actual_num_batch = 0
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            self.update_metric(eval_metric, eval_batch.label)
            for cb in _as_list(batch_end_callback):
                cb(BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                 locals=locals()))
            actual_num_batch += 1
        for cb in _as_list(score_end_callback):
            cb(BatchEndParam(epoch=epoch, nbatch=actual_num_batch, eval_metric=eval_metric,
                             locals=locals()))
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yields ``(outputs, nbatch, batch)`` for each batch of ``eval_data``, the
        padding of the last batch removed from the outputs."""
        _require(self.binded and self.params_initialized,
                 "iter_predict: bind the module and initialize its parameters first")
        if reset:
            eval_data.reset()
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            outputs = [out[0:out.shape[0] - pad] for out in self.get_outputs()]
            yield outputs, nbatch, eval_batch

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True,
                always_output_list=False, sparse_row_id_fn=None):
        """The outputs of inference over ``eval_data`` (a DataIter, or one NDArray /
        NumPy batch).

        With ``merge_batches`` the batches are concatenated (padding removed): one
        NDArray for a single-output network (unless ``always_output_list``), else a
        list per output. Without it: a list (per batch) of lists (per output).
        """
        _require(self.binded and self.params_initialized,
                 "predict: bind the module and initialize its parameters first")
        if isinstance(eval_data, (NDArray, np.ndarray)):
            if isinstance(eval_data, np.ndarray):
                eval_data = nd.array(eval_data)
            self.forward(DataBatch([eval_data]))
            return self.get_outputs()[0]
        if not isinstance(eval_data, DataIter):
            raise ValueError("eval_data must be of type NDArray or DataIter")
        if reset:
            eval_data.reset()
        output_list = []
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            output_list.append([out[0:out.shape[0] - pad].copy()
                                for out in self.get_outputs()])
        if not output_list or not merge_batches:
            return output_list
        num_outputs = len(output_list[0])
        if any(len(out) != num_outputs for out in output_list):
            raise MXNetError("Cannot merge batches, as num of outputs is not the same in "
                             "mini-batches. Maybe bucketing is used?")
        merged = [nd.concat(*[out[i] for out in output_list], dim=0)
                  for i in range(num_outputs)]
        if num_outputs == 1 and not always_output_list:
            return merged[0]
        return merged

    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd",
            optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=Uniform(0.01), arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False,
            begin_epoch=0, num_epoch=None, validation_metric=None, monitor=None,
            sparse_row_id_fn=None):
        """Trains the module: binds it to ``train_data``'s shapes, initializes the
        parameters (``initializer``, or ``arg_params``/``aux_params``) and the
        optimizer, then runs epochs ``begin_epoch .. num_epoch - 1``.

        Each epoch logs ``Epoch[i] Train-<metric>=<value>`` and
        ``Epoch[i] Time cost=<seconds>``, calls ``epoch_end_callback(epoch, symbol,
        arg_params, aux_params)``, and with ``eval_data`` scores it and logs
        ``Epoch[i] Validation-<metric>=<value>``. ``batch_end_callback`` receives a
        ``BatchEndParam`` after every batch.
        """
        if num_epoch is None:
            raise ValueError("fit: please specify number of epochs (num_epoch)")
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params,
                         aux_params=aux_params, allow_missing=allow_missing,
                         force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, _metric.EvalMetric):
            eval_metric = _metric.create(eval_metric)

        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            nbatch = 0
            batches = iter(train_data)
            next_batch = next(batches)
            end_of_batch = False
            eval_name_vals = []
            while not end_of_batch:
                data_batch = next_batch
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(data_batch)
                self.update()
                self.update_metric(eval_metric, data_batch.label)
                try:
                    next_batch = next(batches)
                    self.prepare(next_batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    end_of_batch = True
                if monitor is not None:
                    monitor.toc_print()
                if end_of_batch:
                    eval_name_vals = eval_metric.get_global_name_value()
                for cb in _as_list(batch_end_callback):
                    cb(BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                     locals=locals()))
                nbatch += 1

            for name, val in eval_name_vals:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)

            # one host copy of the parameters (auxiliary states averaged over devices)
            arg_params_, aux_params_ = self.get_params()
            self.set_params(arg_params_, aux_params_)
            for cb in _as_list(epoch_end_callback):
                cb(epoch, self.symbol, arg_params_, aux_params_)

            if eval_data:
                res = self.score(eval_data, validation_metric,
                                 score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
            train_data.reset()

    def get_states(self, merge_multi_context=True):
        """The state inputs; a module without states has none (call with
        ``merge_multi_context=False``)."""
        _require(self.binded and self.params_initialized,
                 "get_states: bind the module and initialize its parameters first")
        _require(not merge_multi_context,
                 "get_states: %s has no states to merge" % type(self).__name__)
        return []

    def set_states(self, states=None, value=None):
        """Sets the state inputs; a module without states takes none."""
        _require(self.binded and self.params_initialized,
                 "set_states: bind the module and initialize its parameters first")
        _require(not states and not value,
                 "set_states: %s has no states" % type(self).__name__)

    # ---- parameters ----------------------------------------------------------
    @property
    def symbol(self):
        """The Symbol this module runs."""
        return self._symbol

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Sets the parameters from dicts of name to NDArray."""
        self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init,
                         allow_extra=allow_extra)

    def _set_params_shared(self, arg_params, aux_params, allow_missing, force_init,
                           allow_extra):
        """What every module's set_params does first: without ``allow_missing`` it is
        init_params; an initialised module keeps its parameters unless ``force_init``
        (with MXNet's warning). True when nothing is left to do."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init,
                             allow_extra=allow_extra)
            return True
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "set_params call ignored.", stacklevel=3)
            return True
        return False

    def save_params(self, fname):
        """Writes the parameters to ``fname`` (``arg:``/``aux:`` keys, as checkpoints)."""
        arg_params, aux_params = self.get_params()
        arrays = {"arg:%s" % k: v for k, v in arg_params.items()}
        arrays.update({"aux:%s" % k: v for k, v in aux_params.items()})
        nd.save(fname, arrays)

    def load_params(self, fname):
        """Reads parameters written by ``save_params`` (or a checkpoint's params
        file) and sets them."""
        loaded = nd.load(fname)
        if not isinstance(loaded, dict):
            raise ValueError("load_params: '%s' holds arrays without names" % fname)
        arg_params, aux_params = {}, {}
        for k, v in loaded.items():
            kind, _, name = k.partition(":")
            if kind == "arg":
                arg_params[name] = v
            elif kind == "aux":
                aux_params[name] = v
            else:
                raise ValueError("Invalid param file " + fname)
        self.set_params(arg_params, aux_params)
