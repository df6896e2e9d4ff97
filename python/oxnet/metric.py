"""``mx.metric``: evaluation metrics after MXNet 1.9.1.

Every metric keeps a local and a global running sum (``sum_metric``/``num_inst`` and
``global_sum_metric``/``global_num_inst``); ``get()`` is the local mean (NaN before any
update), ``reset_local()`` clears only the local one. ``update(labels, preds)`` takes
lists of NDArrays (or a single NDArray; NumPy arrays work too). The per-batch
arithmetic is done with NumPy on the arrays' values.
"""

import json
import math

import numpy

from .base import string_types
from .ndarray import NDArray

__all__ = ["EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "F1", "MCC",
           "Perplexity", "MAE", "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood",
           "PearsonCorrelation", "PCC", "Loss", "Torch", "Caffe", "CustomMetric", "np", "create",
           "register", "check_label_shapes"]

_REGISTRY = {}


def register(klass):
    """Registers a metric class under its lower-cased name for ``create``."""
    if not (isinstance(klass, type) and issubclass(klass, EvalMetric)):
        raise TypeError("can only register subclasses of EvalMetric, got %r" % (klass,))
    _REGISTRY[klass.__name__.lower()] = klass
    return klass


def _alias(*names):
    def deco(klass):
        for n in names:
            _REGISTRY[n.lower()] = klass
        return klass
    return deco


def create(metric, *args, **kwargs):
    """Creates a metric from a name (``'acc'``), a callable ``feval(label, pred)``, a
    metric instance or a list of any of these (a ``CompositeEvalMetric``)."""
    if callable(metric) and not isinstance(metric, (EvalMetric, type)):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, EvalMetric):
        return metric
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    if isinstance(metric, type) and issubclass(metric, EvalMetric):
        return metric(*args, **kwargs)
    if isinstance(metric, dict):
        config = dict(metric)
        return create(config.pop("metric"), *args, **config, **kwargs)
    if isinstance(metric, string_types) and metric.lstrip().startswith(("{", "[")):
        # a metric's JSON-encoded get_config()
        return create(json.loads(metric), *args, **kwargs)
    if not isinstance(metric, string_types):
        raise TypeError("metric must be a name, a callable, an EvalMetric or a list, got %s"
                        % type(metric).__name__)
    klass = _REGISTRY.get(metric.lower())
    if klass is None:
        raise ValueError("Cannot find metric %r. Registered metrics: %s"
                         % (metric, ", ".join(sorted(_REGISTRY))))
    return klass(*args, **kwargs)


def _np(x):
    if isinstance(x, NDArray):
        return x.asnumpy()
    return numpy.asarray(x)


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Raises ValueError unless labels and preds have the same length (or shape, with
    ``shape=True``); with ``wrap`` a single array becomes a one-element list."""
    if not shape:
        label_shape, pred_shape = len(labels), len(preds)
    else:
        label_shape, pred_shape = labels.shape, preds.shape
    if label_shape != pred_shape:
        raise ValueError("Shape of labels {} does not match shape of predictions {}"
                         .format(label_shape, pred_shape))
    if wrap:
        if isinstance(labels, (NDArray, numpy.ndarray)):
            labels = [labels]
        if isinstance(preds, (NDArray, numpy.ndarray)):
            preds = [preds]
    return labels, preds


def _scalar(v):
    """A NumPy scalar mean as a Python float: under NumPy 2 an ``np.float64`` prints as
    ``np.float64(0.5)``, and a Python float compares with float32 results as MXNet's
    float64 means did under NumPy 1."""
    if isinstance(v, (numpy.floating, numpy.integer)):
        return float(v)
    return v


def _wrap(labels, preds):
    if isinstance(labels, (NDArray, numpy.ndarray)):
        labels = [labels]
    if isinstance(preds, (NDArray, numpy.ndarray)):
        preds = [preds]
    return check_label_shapes(labels, preds)


class EvalMetric:
    """Base class of the metrics.

    Parameters
    ----------
    name : str
        Name of this metric instance for display.
    output_names, label_names : list of str, optional
        Names of the predictions / labels ``update_dict`` uses (default: all).
    """

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return "EvalMetric: {}".format(dict(self.get_name_value()))

    def get_config(self):
        """The keyword arguments that rebuild this metric with ``create(**config)``."""
        config = self._kwargs.copy()
        config.update({"metric": self.__class__.__name__, "name": self.name,
                       "output_names": self.output_names, "label_names": self.label_names})
        return config

    def update_dict(self, label, pred):
        """Updates from dicts name -> NDArray of labels and predictions."""
        if self.output_names is not None:
            pred = [pred[name] for name in self.output_names]
        else:
            pred = list(pred.values())
        if self.label_names is not None:
            label = [label[name] for name in self.label_names]
        else:
            label = list(label.values())
        self.update(label, pred)

    def update(self, labels, preds):
        """Adds one batch of labels and predictions (lists of NDArrays)."""
        raise TypeError("%s is an abstract metric: use a subclass (Accuracy, MSE, ...)"
                        % type(self).__name__)

    def _add(self, value, count):
        # Python floats (float64), as MXNet's sums are under NumPy 1.x: JSON-friendly
        # and no float32 rounding over many batches.
        if isinstance(value, numpy.floating):
            value = float(value)
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count

    def reset(self):
        """Clears the local and global statistics."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        """Clears the local statistics only."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def get(self):
        """``(name, value)``: the mean since the last reset (NaN when empty)."""
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, _scalar(self.sum_metric / self.num_inst))

    def get_global(self):
        """``(name, value)`` over everything since the last full ``reset``."""
        if not self._has_global_stats:
            return self.get()
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, _scalar(self.global_sum_metric / self.global_num_inst))

    def get_name_value(self):
        """``[(name, value), ...]``."""
        name, value = self.get()
        if not isinstance(name, list):
            name, value = [name], [value]
        return list(zip(name, value))

    def get_global_name_value(self):
        """``[(name, value), ...]`` of the global statistics."""
        name, value = self.get_global()
        if not isinstance(name, list):
            name, value = [name], [value]
        return list(zip(name, value))


@register
@_alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get`` returns lists of names and values."""

    def __init__(self, metrics=None, name="composite", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.metrics = [create(m) for m in (metrics or [])]

    def add(self, metric):
        """Adds a child metric."""
        self.metrics.append(create(metric))

    def get_metric(self, index):
        """The child metric at ``index``."""
        try:
            return self.metrics[index]
        except IndexError:
            raise ValueError("Metric index {} is out of range 0 and {}".format(
                index, len(self.metrics)))

    def update_dict(self, labels, preds):
        if self.label_names is not None:
            labels = {name: labels[name] for name in self.label_names}
        if self.output_names is not None:
            preds = {name: preds[name] for name in self.output_names}
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds):
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self):
        for metric in getattr(self, "metrics", []):
            metric.reset()

    def reset_local(self):
        for metric in self.metrics:
            metric.reset_local()

    def _collect(self, getter):
        names, values = [], []
        for metric in self.metrics:
            name, value = getter(metric)
            if isinstance(name, string_types):
                name, value = [name], [value]
            names.extend(name)
            values.extend(value)
        return (names, values)

    def get(self):
        return self._collect(lambda m: m.get())

    def get_global(self):
        return self._collect(lambda m: m.get_global())

    def get_config(self):
        config = super().get_config()
        config.update({"metrics": [m.get_config() for m in self.metrics]})
        return config


@register
@_alias("acc")
class Accuracy(EvalMetric):
    """Classification accuracy: predictions are class indices, or scores whose argmax
    along ``axis`` is the class."""

    def __init__(self, axis=1, name="accuracy", output_names=None, label_names=None):
        super().__init__(name, axis=axis, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = _wrap(labels, preds)
        for label, pred in zip(labels, preds):
            pred = _np(pred)
            label = _np(label)
            if pred.shape != label.shape:
                pred = numpy.argmax(pred, axis=self.axis)
            pred = pred.astype("int32").ravel()
            label = label.astype("int32").ravel()
            check_label_shapes(label, pred)
            self._add((pred == label).sum(), len(pred))


@register
@_alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """Top-k accuracy: a sample counts when its label is among the ``top_k`` highest
    scores."""

    def __init__(self, top_k=1, name="top_k_accuracy", output_names=None, label_names=None):
        super().__init__(name, top_k=top_k, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.top_k = top_k
        if self.top_k <= 1:
            raise ValueError("Please use Accuracy if top_k is no more than 1")
        self.name += "_%d" % self.top_k

    def update(self, labels, preds):
        labels, preds = _wrap(labels, preds)
        for label, pred in zip(labels, preds):
            if len(pred.shape) > 2:
                raise ValueError("TopKAccuracy: predictions should be at most 2-D, got shape %s"
                                 % (pred.shape,))
            pred = _np(pred).astype("float32")
            label = _np(label).astype("int32")
            check_label_shapes(label, pred)
            n = pred.shape[0]
            if pred.ndim == 1:
                correct = (pred.astype("int32") == label.ravel()).sum()
            else:
                k = min(pred.shape[1], self.top_k)
                top = numpy.argpartition(pred, -k, axis=1)[:, -k:]
                correct = (top == label.reshape(-1, 1)).any(axis=1).sum()
            self._add(correct, n)


class _BinaryScores:
    """Precision, recall, F1, MCC of confusion counts tp/fp/fn/tn."""

    @property
    def precision(self):
        d = self.tp + self.fp
        return float(self.tp) / d if d > 0 else 0.0

    @property
    def recall(self):
        d = self.tp + self.fn
        return float(self.tp) / d if d > 0 else 0.0

    @property
    def fscore(self):
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r > 0 else 0.0

    @property
    def matthewscc(self):
        tp, fp, fn, tn = (float(x) for x in (self.tp, self.fp, self.fn, self.tn))
        terms = [tp + fp, tp + fn, tn + fp, tn + fn]
        denom = 1.0
        for t in terms:
            denom *= t if t != 0 else 1.0
        return (tp * tn - fp * fn) / math.sqrt(denom)

    @property
    def total_examples(self):
        return self.tp + self.fp + self.fn + self.tn


class _BinaryCounts(_BinaryScores):
    def __init__(self):
        self.tp = self.fp = self.fn = self.tn = 0


class _BinaryStats(_BinaryScores):
    """Confusion counts of a binary classifier, accumulated over updates: local
    (``tp``...) and global (``global_stats``) ones."""

    def __init__(self):
        self.reset_stats()

    def reset_stats(self):
        self.tp = self.fp = self.fn = self.tn = 0
        self.global_stats = _BinaryCounts()

    def local_reset_stats(self):
        """Clears the local counts only (the global ones keep accumulating)."""
        self.tp = self.fp = self.fn = self.tn = 0

    def update_binary_stats(self, label, pred, owner):
        pred = _np(pred)
        label = _np(label).astype("int32")
        pred_label = numpy.argmax(pred, axis=1)
        check_label_shapes(label, pred)
        if len(numpy.unique(label)) > 2:
            raise ValueError("%s currently only supports binary classification." % owner)
        pt, lt = pred_label == 1, label == 1
        counts = (int((pt & lt).sum()), int((pt & ~lt).sum()), int((~pt & lt).sum()),
                  int((~pt & ~lt).sum()))
        for stats in (self, self.global_stats):
            stats.tp += counts[0]
            stats.fp += counts[1]
            stats.fn += counts[2]
            stats.tn += counts[3]


@register
class F1(EvalMetric):
    """F1 score of a binary classifier (predictions: scores of shape (N, 2)).
    ``average='macro'`` averages per-batch scores, 'micro' pools the counts."""

    def __init__(self, name="f1", output_names=None, label_names=None, average="macro"):
        self.average = average
        self.metrics = _BinaryStats()
        super().__init__(name=name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    @staticmethod
    def _score_of(stats):
        return stats.fscore

    def update(self, labels, preds):
        labels, preds = _wrap(labels, preds)
        for label, pred in zip(labels, preds):
            self.metrics.update_binary_stats(label, pred, type(self).__name__)
        if self.average == "macro":
            self._add(self._score_of(self.metrics), 1)
            self.metrics.reset_stats()
        else:
            glob = self.metrics.global_stats
            self.sum_metric = self._score_of(self.metrics) * self.metrics.total_examples
            self.global_sum_metric = self._score_of(glob) * glob.total_examples
            self.num_inst = self.metrics.total_examples
            self.global_num_inst = glob.total_examples

    def reset(self):
        super().reset()
        self.metrics.reset_stats()

    def reset_local(self):
        super().reset_local()
        self.metrics.local_reset_stats()


@register
class MCC(F1):
    """Matthews correlation coefficient of a binary classifier."""

    def __init__(self, name="mcc", output_names=None, label_names=None, average="macro"):
        super().__init__(name=name, output_names=output_names, label_names=label_names,
                         average=average)

    @staticmethod
    def _score_of(stats):
        return stats.matthewscc


@register
class Perplexity(EvalMetric):
    """Perplexity, ``exp`` of the mean negative log-likelihood of the labels;
    labels equal to ``ignore_label`` are left out."""

    def __init__(self, ignore_label, axis=-1, name="perplexity", output_names=None,
                 label_names=None):
        super().__init__(name, ignore_label=ignore_label, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = _wrap(labels, preds)
        loss, num = 0.0, 0
        for label, pred in zip(labels, preds):
            pred = _np(pred)
            label = _np(label).reshape(-1)
            if label.size != pred.size // pred.shape[-1]:
                raise ValueError("Perplexity: %d labels for predictions of shape %s"
                                 % (label.size, pred.shape))
            # labels outside [0, classes) are clipped, as MXNet's pick (mode 'clip') does
            idx = numpy.clip(label.astype("int64"), 0, pred.shape[self.axis] - 1)
            p = numpy.take_along_axis(numpy.moveaxis(pred, self.axis, -1).reshape(-1, pred.shape[self.axis]),
                                      idx.reshape(-1, 1), axis=1).ravel()
            if self.ignore_label is not None:
                ignore = (label == self.ignore_label).astype(p.dtype)
                num -= int(ignore.sum())
                p = p * (1 - ignore) + ignore
            loss -= float(numpy.log(numpy.maximum(1e-10, p)).sum())
            num += p.size
        self._add(loss, num)

    def get(self):
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.sum_metric / self.num_inst))

    def get_global(self):
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.global_sum_metric / self.global_num_inst))


class _Regression(EvalMetric):
    def __init__(self, name, output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = _wrap(labels, preds)
        for label, pred in zip(labels, preds):
            label, pred = _np(label), _np(pred)
            if label.ndim == 1:
                label = label.reshape(label.shape[0], 1)
            if pred.ndim == 1:
                pred = pred.reshape(pred.shape[0], 1)
            self._add(self._measure(label - pred), 1)


@register
class MAE(_Regression):
    """Mean absolute error (mean over each batch, averaged over batches)."""

    def __init__(self, name="mae", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _measure(d):
        return numpy.abs(d).mean()


@register
class MSE(_Regression):
    """Mean squared error (mean over each batch, averaged over batches)."""

    def __init__(self, name="mse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _measure(d):
        return (d ** 2.0).mean()


@register
class RMSE(_Regression):
    """Root mean squared error (per batch, averaged over batches)."""

    def __init__(self, name="rmse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _measure(d):
        return numpy.sqrt((d ** 2.0).mean())


@register
@_alias("ce")
class CrossEntropy(EvalMetric):
    """Cross entropy of predicted probabilities (N, C) against class labels (N,)."""

    def __init__(self, eps=1e-12, name="cross-entropy", output_names=None, label_names=None):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds):
        labels, preds = _wrap(labels, preds)
        for label, pred in zip(labels, preds):
            label = _np(label).ravel()
            pred = _np(pred)
            if label.shape[0] != pred.shape[0]:
                raise ValueError("%s: %d labels for %d predictions"
                                 % (type(self).__name__, label.shape[0], pred.shape[0]))
            prob = pred[numpy.arange(label.shape[0]), numpy.int64(label)]
            self._add((-numpy.log(prob + self.eps)).sum(), label.shape[0])


@register
@_alias("nll_loss")
class NegativeLogLikelihood(CrossEntropy):
    """Negative log-likelihood of predicted probabilities against class labels."""

    def __init__(self, eps=1e-12, name="nll-loss", output_names=None, label_names=None):
        super().__init__(eps=eps, name=name, output_names=output_names,
                         label_names=label_names)


@register
@_alias("pearsonr")
class PearsonCorrelation(EvalMetric):
    """Pearson correlation of predictions and labels: ``average='macro'`` averages the
    correlation of each update, ``'micro'`` correlates everything seen (running
    sums)."""

    def __init__(self, name="pearsonr", output_names=None, label_names=None,
                 average="macro"):
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        if average == "micro":
            self._kwargs["average"] = average

    def reset(self):
        super().reset()
        self._sums = numpy.zeros(6)          # n, sum x, sum y, sum xx, sum yy, sum xy
        self._gsums = numpy.zeros(6)

    def reset_local(self):
        super().reset_local()
        self._sums = numpy.zeros(6)

    @staticmethod
    def _corr(s):
        n, sx, sy, sxx, syy, sxy = s
        if n == 0:
            return float("nan")
        cov = sxy - sx * sy / n
        vx = sxx - sx * sx / n
        vy = syy - sy * sy / n
        return float(cov / numpy.sqrt(vx * vy))

    def update(self, labels, preds):
        labels, preds = _wrap(labels, preds)
        for label, pred in zip(labels, preds):
            label, pred = _np(label), _np(pred)
            check_label_shapes(label, pred, False, True)
            x = pred.ravel().astype(numpy.float64)
            y = label.ravel().astype(numpy.float64)
            if self.average == "macro":
                self._add(numpy.corrcoef(x, y)[0, 1], 1)
            else:
                batch = numpy.array([x.size, x.sum(), y.sum(), (x * x).sum(), (y * y).sum(),
                                     (x * y).sum()])
                self._sums += batch
                self._gsums += batch
                self.num_inst += 1
                self.global_num_inst += 1

    def get(self):
        if self.average == "macro":
            return super().get()
        return (self.name, self._corr(self._sums))

    def get_global(self):
        if self.average == "macro":
            return super().get_global()
        return (self.name, self._corr(self._gsums))


@register
@_alias("pcc")
class PCC(EvalMetric):
    """Pearson correlation coefficient of the confusion matrix of a (multi-class)
    classifier (MCC generalised to K classes; equal to MCC for two). Predictions are
    class scores (argmax taken) or class indices."""

    def __init__(self, name="pcc", output_names=None, label_names=None):
        self.k = 2
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def reset(self):
        super().reset()
        self.gcm = numpy.zeros((self.k, self.k))
        self.lcm = numpy.zeros((self.k, self.k))

    def reset_local(self):
        super().reset_local()
        self.lcm = numpy.zeros((self.k, self.k))

    def _grow(self, inc):
        self.lcm = numpy.pad(self.lcm, ((0, inc), (0, inc)), "constant")
        self.gcm = numpy.pad(self.gcm, ((0, inc), (0, inc)), "constant")
        self.k += inc

    @staticmethod
    def _calc_mcc(cmat):
        n = cmat.sum()
        x = cmat.sum(axis=1)
        y = cmat.sum(axis=0)
        cov_xx = numpy.sum(x * (n - x))
        cov_yy = numpy.sum(y * (n - y))
        if cov_xx == 0 or cov_yy == 0:
            return float("nan")
        cov_xy = numpy.sum(cmat.diagonal() * n - x * y)
        return float(cov_xy / (cov_xx * cov_yy) ** 0.5)

    def update(self, labels, preds):
        labels, preds = _wrap(labels, preds)
        for label, pred in zip(labels, preds):
            label = _np(label).astype("int32")
            pred = _np(pred)
            if pred.shape != label.shape:
                pred = pred.argmax(axis=1)
            pred = pred.astype("int32").ravel()
            label = label.ravel()
            n = int(max(pred.max(), label.max()))
            if n >= self.k:
                self._grow(n + 1 - self.k)
            bcm = numpy.zeros((self.k, self.k))
            numpy.add.at(bcm, (pred, label), 1)
            self.lcm += bcm
            self.gcm += bcm
        self.num_inst += 1
        self.global_num_inst += 1

    def get(self):
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self._calc_mcc(self.lcm))

    def get_global(self):
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self._calc_mcc(self.gcm))


@register
class Loss(EvalMetric):
    """Mean of the values of the outputs (for outputs that are losses)."""

    def __init__(self, name="loss", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, _, preds):
        if isinstance(preds, (NDArray, numpy.ndarray)):
            preds = [preds]
        for pred in preds:
            p = _np(pred)
            self._add(float(p.sum()), p.size)


@register
class Torch(Loss):
    """Dummy metric for torch criterions."""

    def __init__(self, name="torch", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)


@register
class Caffe(Loss):
    """Dummy metric for caffe criterions."""

    def __init__(self, name="caffe", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)


@register
class CustomMetric(EvalMetric):
    """A metric computed by ``feval(label, pred)`` on NumPy arrays; feval returns a
    value, or a ``(sum_metric, num_inst)`` pair."""

    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None,
                 label_names=None):
        if name is None:
            name = feval.__name__
            if name.find("<") != -1:
                name = "custom(%s)" % name
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        if isinstance(labels, (NDArray, numpy.ndarray)):
            labels = [labels]
        if isinstance(preds, (NDArray, numpy.ndarray)):
            preds = [preds]
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds)
        for pred, label in zip(preds, labels):
            reval = self._feval(_np(label), _np(pred))
            if isinstance(reval, tuple):
                self._add(reval[0], reval[1])
            else:
                self._add(reval, 1)

    def get_config(self):
        raise TypeError("CustomMetric cannot be serialized")


def np(numpy_feval, name=None, allow_extra_outputs=False):  # noqa: F811 - MXNet's name
    """Creates a ``CustomMetric`` from a function ``feval(label, pred)`` on NumPy arrays."""
    def feval(label, pred):
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)
