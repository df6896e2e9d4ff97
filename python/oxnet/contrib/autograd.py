"""``mx.contrib.autograd``: MXNet's first autograd API (before ``mx.autograd``), kept
for old code: ``train_section``/``test_section`` scopes (training mode and recording
switched together), ``mark_variables``, ``backward``/``compute_gradient`` and the
function transformers ``grad_and_loss`` and ``grad``. Everything runs on the same
tape as ``mx.autograd``."""

import functools

from .. import autograd as _autograd
from ..base import MXNetError

__all__ = ["set_is_training", "TrainingStateScope", "train_section", "test_section",
           "mark_variables", "backward", "compute_gradient", "grad_and_loss", "grad"]


def set_is_training(is_train):
    """Sets training mode and recording together (on: ops are recorded for gradients
    and run in training mode, e.g. Dropout drops).

    Parameters
    ----------
    is_train : bool

    Returns
    -------
    The previous state.
    """
    prev = _autograd.set_training(bool(is_train))
    _autograd.set_recording(bool(is_train))
    return bool(prev)


class TrainingStateScope(object):
    """A ``with`` scope that sets ``set_is_training(enter_state)`` and restores the
    previous state at exit."""

    def __init__(self, enter_state):
        self._enter_state = enter_state
        self._prev = None

    def __enter__(self):
        self._prev = set_is_training(self._enter_state)

    def __exit__(self, ptype, value, trace):
        if self._prev != self._enter_state:
            set_is_training(self._prev)


def train_section():
    """A scope that records and runs in training mode::

        with autograd.train_section():
            y = model(x)
            compute_gradient([y])
    """
    return TrainingStateScope(True)


def test_section():
    """A scope that neither records nor trains (inside a ``train_section``)."""
    return TrainingStateScope(False)


def mark_variables(variables, gradients, grad_reqs="write"):
    """Marks NDArrays as variables whose gradients ``backward`` writes into
    ``gradients`` (``grad_reqs``: 'write', 'add' or 'null', one or one per
    variable)."""
    _autograd.mark_variables(variables, gradients, grad_reqs)


def backward(outputs, out_grads=None, retain_graph=False):
    """Computes the gradients of ``outputs`` (a list of NDArrays; ``out_grads`` the
    head gradients, default ones) with respect to the marked variables."""
    if not isinstance(outputs, (list, tuple)):
        raise MXNetError("backward: outputs must be a list or tuple of NDArrays, got %s"
                         % type(outputs).__name__)
    if out_grads is not None and len(out_grads) != len(outputs):
        raise MXNetError("backward: outputs and out_grads must have the same length "
                         "(%d vs %d)" % (len(outputs), len(out_grads)))
    _autograd.backward(list(outputs), None if out_grads is None else list(out_grads),
                       retain_graph=retain_graph)


def compute_gradient(outputs):
    """Deprecated: ``backward(outputs)``."""
    backward(outputs)


def grad_and_loss(func, argnum=None):
    """``func`` transformed into a function returning (gradients of the arguments
    ``argnum`` (an int, a list of ints, or None: all), the outputs of ``func``)."""
    from ..ndarray import NDArray, zeros_like

    @functools.wraps(func)
    def wrapped(*args):
        variables = args
        if argnum is not None:
            argnum_ = argnum if isinstance(argnum, list) else [argnum]
            variables = [args[i] for i in argnum_]
        for x in variables:
            if not isinstance(x, NDArray):
                raise MXNetError("grad_and_loss: the inputs to differentiate must be "
                                 "NDArrays, got %s" % type(x).__name__)
        grads = [zeros_like(x) for x in variables]
        mark_variables(variables, grads)
        with train_section():
            outputs = func(*args)
        compute_gradient([outputs] if isinstance(outputs, NDArray) else outputs)
        return grads, outputs
    return wrapped


def grad(func, argnum=None):
    """``func`` transformed into a function returning the gradients of its arguments
    ``argnum`` (see ``grad_and_loss``)."""
    grad_with_loss_func = grad_and_loss(func, argnum)

    @functools.wraps(grad_with_loss_func)
    def wrapped(*args):
        return grad_with_loss_func(*args)[0]
    return wrapped
