"""``Estimator``: fit/evaluate loops for a gluon network, with the work at each
stage (metrics, gradient updates, validation, logging, checkpoints, stopping) done
by event handlers (MXNet 1.9.1's gluon.contrib.estimator)."""

import copy
import logging
import sys
import warnings

from .... import context as _context
from ....context import Context, cpu, gpu
from ....metric import Accuracy
from ....metric import Loss as metric_loss
from ...data import DataLoader
from ...loss import Loss as gluon_loss
from ...loss import SoftmaxCrossEntropyLoss
from ...trainer import Trainer
from .batch_processor import BatchProcessor
from .event_handler import (BatchBegin, BatchEnd, EpochBegin, EpochEnd, GradientUpdateHandler,
                            LoggingHandler, MetricHandler, StoppingHandler, TrainBegin,
                            TrainEnd, ValidationHandler, _check_event_handlers,
                            _check_metrics)

__all__ = ["Estimator"]


class Estimator:
    """Trains and evaluates ``net`` with ``loss``.

    Parameters: ``train_metrics``/``val_metrics`` (an EvalMetric or a list; by default
    Accuracy for SoftmaxCrossEntropyLoss plus the mean loss; validation metrics are
    copies of the training ones), ``initializer`` (used when the net is not fully
    initialized), ``trainer`` (default SGD, learning rate 0.001), ``context`` (a
    Context or list), ``val_net``/``val_loss`` (default: ``net``/``loss``) and
    ``batch_processor`` (a ``BatchProcessor``)."""

    logger = None

    _train_prefix = "training "
    _val_prefix = "validation "

    def __init__(self, net, loss, train_metrics=None, val_metrics=None, initializer=None,
                 trainer=None, context=None, val_net=None, val_loss=None,
                 batch_processor=None):
        self.net = net
        self.loss = self._check_loss(loss)
        self._train_metrics = _check_metrics(train_metrics)
        self._val_metrics = _check_metrics(val_metrics)
        self._add_default_training_metrics()
        self._add_validation_metrics()
        self.val_loss = self.loss
        if val_loss is not None:
            self.val_loss = self._check_loss(val_loss)
        self.val_net = self.net
        if val_net is not None:
            self.val_net = val_net

        self.logger = logging.Logger(name="Estimator", level=logging.INFO)
        self.logger.addHandler(logging.StreamHandler(sys.stdout))

        self.context = self._check_context(context)
        self._initialize(initializer)
        self.trainer = self._check_trainer(trainer)
        self.batch_processor = self._check_batch_processor(batch_processor)
        self.max_epoch = None
        self.max_batch = None
        self.batch_axis = 0

    @staticmethod
    def _check_loss(loss):
        if not isinstance(loss, gluon_loss):
            raise ValueError("loss must be a Loss, "
                             "refer to gluon.loss.Loss:{}".format(loss))
        return loss

    @staticmethod
    def _check_context(context):
        gpus = _context.num_gpus()
        available_gpus = [gpu(i) for i in range(gpus)]
        if context:
            if isinstance(context, Context):
                context = [context]
            elif isinstance(context, list) and all(isinstance(c, Context) for c in context):
                pass
            else:
                raise ValueError("context must be a Context or a list of Context, "
                                 "for example mx.cpu() or [mx.gpu(0), mx.gpu(1)], "
                                 "refer to mxnet.Context:{}".format(context))
            for ctx in context:
                assert ctx in available_gpus or str(ctx).startswith("cpu"), \
                    "%s is not available, please make sure your context is in one of: " \
                    "mx.cpu(), %s" % (ctx, ", ".join(str(c) for c in available_gpus))
        elif gpus > 0:
            if gpus > 1:
                warnings.warn("You have multiple GPUs, gpu(0) will be used by default."
                              "To utilize all your GPUs, specify context as a list of gpus, "
                              "e.g. context=[mx.gpu(0), mx.gpu(1)] ")
            context = [gpu(0)]
        else:
            context = [cpu()]
        return context

    @staticmethod
    def _check_batch_processor(batch_processor):
        if batch_processor is None:
            return BatchProcessor()
        if not isinstance(batch_processor, BatchProcessor):
            raise ValueError("batch_processor must be a BatchProcessor, refer to "
                             "gluon.contrib.estimator.batch_processor.BatchProcessor:"
                             "{}".format(batch_processor))
        return batch_processor

    def _initialize(self, initializer):
        if not self._is_initialized():
            # partially initialized nets keep what they have (fine-tuning)
            if initializer:
                self.net.initialize(init=initializer, ctx=self.context)
            else:
                self.net.initialize(ctx=self.context)
        elif initializer:
            warnings.warn("Network already fully initialized, skipping initialization. "
                          "You don't need to pass initializer if you already "
                          "initialized your net. "
                          "You can use net.initialize(init=your_initializer, force_reinit=True)"
                          "to force re-initialize.")

    def _check_trainer(self, trainer):
        if not trainer:
            warnings.warn("No trainer specified, default SGD optimizer "
                          "with learning rate 0.001 is used.")
            trainer = Trainer(self.net.collect_params(), "sgd", {"learning_rate": 0.001})
        elif not isinstance(trainer, Trainer):
            raise ValueError("Trainer must be a Gluon Trainer instance, refer to "
                             "gluon.Trainer:{}".format(trainer))
        return trainer

    def _is_initialized(self):
        param_dict = self.net.collect_params()
        for param in param_dict:
            try:
                param_dict[param].list_ctx()
            except RuntimeError:
                return False
        return True

    def _add_default_training_metrics(self):
        if not self._train_metrics:
            if isinstance(self.loss, SoftmaxCrossEntropyLoss):
                self._train_metrics = [Accuracy()]
            loss_name = self.loss.name.rstrip("1234567890")
            self._train_metrics.append(metric_loss(loss_name))
        for metric in self._train_metrics:
            # the prefix tells handlers training metrics from validation ones
            metric.name = self._train_prefix + metric.name

    def _add_validation_metrics(self):
        if not self._val_metrics:
            self._val_metrics = [copy.deepcopy(metric) for metric in self._train_metrics]
        for metric in self._val_metrics:
            if "training" in metric.name:
                metric.name = metric.name.replace(self._train_prefix, self._val_prefix)
            else:
                metric.name = self._val_prefix + metric.name

    @property
    def train_metrics(self):
        return self._train_metrics

    @property
    def val_metrics(self):
        return self._val_metrics

    def evaluate(self, val_data, batch_axis=0, event_handlers=None):
        """Runs ``val_net`` over ``val_data`` (a gluon DataLoader), updating
        ``val_metrics`` through the (default or given) event handlers."""
        if not isinstance(val_data, DataLoader):
            raise ValueError("Estimator only support input as Gluon DataLoader. "
                             "Alternatively, you can transform your DataIter or any NDArray "
                             "into Gluon DataLoader. Refer to gluon.data.DataLoader")
        for metric in self.val_metrics:
            metric.reset()
        event_handlers = self._prepare_default_validation_handlers(event_handlers)
        _, epoch_begin, batch_begin, batch_end, epoch_end, _ = \
            self._categorize_handlers(event_handlers)
        for handler in epoch_begin:
            handler.epoch_begin(self)
        for batch in val_data:
            for handler in batch_begin:
                handler.batch_begin(self, batch=batch)
            _, label, pred, loss = self.batch_processor.evaluate_batch(self, batch, batch_axis)
            for handler in batch_end:
                handler.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
        for handler in epoch_end:
            handler.epoch_end(self)

    def fit(self, train_data, val_data=None, epochs=None, event_handlers=None, batches=None,
            batch_axis=0):
        """Trains for ``epochs`` epochs or ``batches`` batches (exactly one of them) over
        ``train_data`` (a gluon DataLoader), validating on ``val_data`` after each epoch
        when given."""
        if not isinstance(train_data, DataLoader):
            raise ValueError("Estimator only support input as Gluon DataLoader. "
                             "Alternatively, you can transform your DataIter or any NDArray "
                             "into Gluon DataLoader. Refer to gluon.data.dataloader")
        if (not epochs) == (not batches):
            raise ValueError("Fit only support exactly one type of iteration, "
                             "train by number of epochs or number of batches."
                             "Please specify one and only one of: epochs or batches.")
        self.max_epoch = epochs
        self.max_batch = batches
        self.batch_axis = batch_axis

        event_handlers = self._prepare_default_handlers(val_data, event_handlers)
        train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end = \
            self._categorize_handlers(event_handlers)

        for handler in train_begin:
            handler.train_begin(self)
        while True:
            for handler in epoch_begin:
                handler.epoch_begin(self)
            for batch in train_data:
                for handler in batch_begin:
                    handler.batch_begin(self, batch=batch)
                _, label, pred, loss = self.batch_processor.fit_batch(self, batch, batch_axis)
                results = [handler.batch_end(self, batch=batch, pred=pred, label=label,
                                             loss=loss) for handler in batch_end]
                if any(results):
                    break
            results = [handler.epoch_end(self) for handler in epoch_end]
            if any(results):
                break
        for handler in train_end:
            handler.train_end(self)

    def _prepare_default_handlers(self, val_data, event_handlers):
        event_handlers = _check_event_handlers(event_handlers)
        added = [StoppingHandler(self.max_epoch, self.max_batch)]
        if not any(isinstance(h, GradientUpdateHandler) for h in event_handlers):
            added.append(GradientUpdateHandler())
        if not any(isinstance(h, MetricHandler) for h in event_handlers):
            added.append(MetricHandler(metrics=self.train_metrics))
        if not any(isinstance(h, ValidationHandler) for h in event_handlers) and val_data:
            added.append(ValidationHandler(val_data=val_data, eval_fn=self.evaluate))
        if not any(isinstance(h, LoggingHandler) for h in event_handlers):
            added.append(LoggingHandler(metrics=self.train_metrics))
        # user handlers mixed with default ones must share the estimator's metrics
        mixing = event_handlers and added
        event_handlers.extend(added)
        if mixing:
            known = set(self.train_metrics + self.val_metrics)
            for handler in event_handlers:
                _check_handler_metric_ref(handler, known)
        event_handlers.sort(key=lambda h: getattr(h, "priority", 0))
        return event_handlers

    def _prepare_default_validation_handlers(self, event_handlers):
        event_handlers = _check_event_handlers(event_handlers)
        added = []
        if not any(isinstance(h, MetricHandler) for h in event_handlers):
            added.append(MetricHandler(metrics=self.val_metrics))
        if not any(isinstance(h, LoggingHandler) for h in event_handlers):
            added.append(LoggingHandler(metrics=self.val_metrics))
        mixing = event_handlers and added
        event_handlers.extend(added)
        if mixing:
            known = set(self.val_metrics)
            for handler in event_handlers:
                _check_handler_metric_ref(handler, known)
        event_handlers.sort(key=lambda h: getattr(h, "priority", 0))
        return event_handlers

    @staticmethod
    def _categorize_handlers(event_handlers):
        """Splits handlers by the events they take: (train_begin, epoch_begin,
        batch_begin, batch_end, epoch_end, train_end)."""
        kinds = (TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd)
        return tuple([h for h in event_handlers if isinstance(h, kind)] for kind in kinds)


def _check_handler_metric_ref(handler, known_metrics):
    for attribute in dir(handler):
        if "metric" in attribute:
            reference = getattr(handler, attribute)
            if not reference:
                continue
            if isinstance(reference, list):
                for metric in reference:
                    _check_metric_known(handler, metric, known_metrics)
            else:
                _check_metric_known(handler, reference, known_metrics)


def _check_metric_known(handler, metric, known_metrics):
    if metric not in known_metrics:
        raise ValueError("Event handler {} refers to a metric instance {} outside of the known "
                         "training and validation metrics. Please use the metrics from "
                         "estimator.train_metrics and estimator.val_metrics "
                         "instead.".format(type(handler).__name__, metric))
