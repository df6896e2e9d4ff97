"""Autograd for NDArray, after MXNet 1.x's ``mx.autograd``.

The tape lives in Rust (``oxnet_core::autograd``): while recording, every op whose
inputs are in a graph is recorded, and ``backward`` runs the registry's gradients of
the recorded ops in reverse order. This module holds the Python API: the recording
and training scopes, ``backward``/``grad``, ``mark_variables`` and ``Function``.
"""

import traceback  # noqa: F401
from threading import Lock  # noqa: F401

from . import _core
from .base import MXNetError, string_types  # noqa: F401

__all__ = ["set_recording", "set_training", "is_recording", "is_training", "record",
           "pause", "train_mode", "predict_mode", "mark_variables", "backward", "grad",
           "Function", "get_symbol"]


def set_recording(is_recording):  # pylint: disable=redefined-outer-name
    """Set status to recording/not recording. When recording, graph will be constructed
    for gradient computation.

    Parameters
    ----------
    is_recording: bool

    Returns
    -------
    previous state before this set.
    """
    return _core.set_recording(bool(is_recording))


def set_training(train_mode):  # pylint: disable=redefined-outer-name
    """Set status to training/predicting. This affects ctx.is_train in operator
    running context. For example, Dropout will drop inputs randomly when
    train_mode=True while simply passing through if train_mode=False.

    Parameters
    ----------
    train_mode: bool

    Returns
    -------
    previous state before this set.
    """
    return _core.set_training(bool(train_mode))


def is_recording():
    """Get status on recording/not recording.

    Returns
    -------
    Current state of recording.
    """
    return _core.is_recording()


def is_training():
    """Get status on training/predicting.

    Returns
    -------
    Current state of training/predicting.
    """
    return _core.is_training()


class _RecordingStateScope(object):
    """Scope for managing training state (the object ``record`` and friends return)."""

    def __init__(self, is_record, train_mode):  # pylint: disable=redefined-outer-name
        self._enter_is_record = is_record
        self._enter_train_mode = train_mode
        self._prev_is_record = None
        self._prev_train_mode = None

    def __enter__(self):
        if self._enter_is_record is not None:
            self._prev_is_record = set_recording(self._enter_is_record)
        if self._enter_train_mode is not None:
            self._prev_train_mode = set_training(self._enter_train_mode)

    def __exit__(self, ptype, value, trace):
        if self._enter_is_record is not None and self._prev_is_record != self._enter_is_record:
            set_recording(self._prev_is_record)
        if self._enter_train_mode is not None and self._prev_train_mode != self._enter_train_mode:
            set_training(self._prev_train_mode)


def record(train_mode=True):  # pylint: disable=redefined-outer-name
    """Returns an autograd recording scope context to be used in 'with' statement
    and captures code that needs gradients to be calculated.

    .. note:: When forwarding with train_mode=False, the corresponding backward
              should also use train_mode=False, otherwise gradient is undefined.

    Example::

        with autograd.record():
            y = model(x)
            backward([y])
        metric.update(...)
        optim.step(...)

    Parameters
    ----------
    train_mode: bool, default True
        Whether the forward pass is in training or predicting mode. This controls the behavior
        of some layers such as Dropout, BatchNorm.
    """
    return _RecordingStateScope(True, train_mode)


def pause(train_mode=False):  # pylint: disable=redefined-outer-name
    """Returns a scope context to be used in 'with' statement for codes that do not need
    gradients to be calculated.

    Example::

        with autograd.record():
            y = model(x)
            backward([y])
            with autograd.pause():
                # testing, IO, gradient updates...

    Parameters
    ----------
    train_mode: bool, default False
        Whether to do forward for training or predicting.
    """
    return _RecordingStateScope(False, train_mode)


def train_mode():
    """Returns a scope context to be used in 'with' statement
    in which forward pass behavior is set to training mode,
    without changing the recording states.
    """
    return _RecordingStateScope(None, True)


def predict_mode():
    """Returns a scope context to be used in 'with' statement
    in which forward pass behavior is set to inference mode,
    without changing the recording states.
    """
    return _RecordingStateScope(None, False)


def _as_list(x):
    from .ndarray import NDArray
    if isinstance(x, NDArray):
        return [x], True
    return list(x), False


def mark_variables(variables, gradients, grad_reqs='write'):
    """Mark NDArrays as variables to compute gradient for autograd.

    Parameters
    ----------
    variables: NDArray or list of NDArray
    gradients: NDArray or list of NDArray
    grad_reqs: str or list of str
    """
    variables, _ = _as_list(variables)
    gradients, _ = _as_list(gradients)
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    if len(variables) != len(gradients) or len(variables) != len(grad_reqs):
        raise MXNetError("mark_variables: got %d variables, %d gradients and %d grad_reqs"
                         % (len(variables), len(gradients), len(grad_reqs)))
    for v, g, r in zip(variables, gradients, grad_reqs):
        _core.mark_variable(v, g, r)


def _head_grads(heads, head_grads):
    if head_grads is None:
        return [None] * len(heads)
    from .ndarray import NDArray
    if isinstance(head_grads, NDArray):
        head_grads = [head_grads]
    head_grads = list(head_grads)
    if len(head_grads) != len(heads):
        raise MXNetError("heads and head_grads must be lists of the same length: %d vs %d"
                         % (len(heads), len(head_grads)))
    # sparse head gradients enter the (dense) backward pass as their dense values
    return [g.tostype("default") if g is not None and getattr(g, "stype", "default") != "default"
            else g for g in head_grads]


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):  # pylint: disable=redefined-outer-name
    """Compute the gradients of heads w.r.t previously marked variables.

    Parameters
    ----------
    heads: NDArray or list of NDArray
        Output NDArray(s)
    head_grads: NDArray or list of NDArray or None
        Gradients with respect to heads.
    train_mode: bool, optional
        Whether to do backward for training or predicting.
    """
    heads, _ = _as_list(heads)
    _core.backward(heads, _head_grads(heads, head_grads), None, bool(retain_graph),
                   bool(train_mode), False)


def get_symbol(x):
    """Retrieve recorded computation history as `Symbol`.

    Parameters
    ----------
    x : NDArray
        Array representing the head of computation graph.

    Returns
    -------
    Symbol
        The retrieved Symbol.
    """
    from .symbol import Symbol
    return Symbol(_core.get_symbol(x))


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):  # pylint: disable=redefined-outer-name
    """Compute the gradients of heads w.r.t variables. Gradients will be
    returned as new NDArrays instead of stored into `variable.grad`.
    With ``create_graph=True`` the gradient computation is recorded too, so the
    returned gradients can be differentiated again (higher order gradients).

    Parameters
    ----------
    heads: NDArray or list of NDArray
        Output NDArray(s)
    variables: NDArray or list of NDArray
        Input variables to compute gradients for.
    head_grads: NDArray or list of NDArray or None
        Gradients with respect to heads.
    retain_graph: bool
        Whether to keep computation graph to differentiate again, instead
        of clearing history and release memory. Defaults to the same value
        as create_graph.
    create_graph: bool
        Whether to record gradient graph for computing higher order
    train_mode: bool, optional
        Whether to do backward for training or prediction.

    Returns
    -------
    NDArray or list of NDArray:
        Gradients with respect to variables.
    """
    heads, _ = _as_list(heads)
    variables, _ = _as_list(variables)
    if retain_graph is None:
        retain_graph = create_graph
    return _core.backward(heads, _head_grads(heads, head_grads), variables, bool(retain_graph),
                          bool(train_mode), bool(create_graph))


class Function(object):
    """Customize differentiation in autograd.

    If you don't want to use the gradients computed by the default
    chain-rule, you can use Function to customize differentiation for
    computation. You define your computation in
    the forward method and provide the customized differentiation
    in the backward method. During gradient computation, autograd will
    use the user-defined backward function instead of the default chain-rule.
    You can also cast to numpy array and back for some operations in
    forward and backward.

    For example, a stable sigmoid function can be defined as::

        class sigmoid(mx.autograd.Function):
            def forward(self, x):
                y = 1 / (1 + mx.nd.exp(-x))
                self.save_for_backward(y)
                return y

            def backward(self, dy):
                # backward takes as many inputs as forward's return value,
                # and returns as many NDArrays as forward's arguments.
                y, = self.saved_tensors
                return dy * y * (1-y)

    Then, the function can be used in the following way::

        func = sigmoid()
        x = mx.nd.random.uniform(shape=(10,))
        x.attach_grad()

        with mx.autograd.record():
            m = func(x)
            m.backward()
        dx = x.grad.asnumpy()
    """

    def __init__(self):
        self._used = False
        self.saved_tensors = ()

    def save_for_backward(self, *args):
        self.saved_tensors = args

    def __call__(self, *inputs):
        from .ndarray import NDArray
        assert not self._used, \
            "Each Function instance can only be called once. " \
            "Please create another instance."
        self._used = True

        prev_recording = set_recording(False)
        try:
            outputs = self.forward(*inputs)
        finally:
            set_recording(prev_recording)

        if not prev_recording:
            return outputs

        ret_outputs = outputs
        if isinstance(outputs, NDArray):
            outputs = (outputs,)
        for x in inputs:
            if not isinstance(x, NDArray):
                raise MXNetError("Function %s: inputs must be NDArrays, got %s"
                                 % (type(self).__name__, type(x).__name__))
        for x in outputs:
            if not isinstance(x, NDArray):
                raise MXNetError("Function %s: forward must return NDArrays, got %s"
                                 % (type(self).__name__, type(x).__name__))
        n_in = len(inputs)
        name = type(self).__name__

        def backward_entry(*out_grads):
            with train_mode() if is_training() else predict_mode():
                ret = self.backward(*out_grads)
            if isinstance(ret, NDArray):
                ret = (ret,)
            ret = list(ret)
            if len(ret) != n_in:
                raise MXNetError("%s.backward must return exactly the same number of NDArrays "
                                 "as the number of inputs of forward. Expecting %d got %d"
                                 % (name, n_in, len(ret)))
            for i, (g, x) in enumerate(zip(ret, inputs)):
                if g is not None and tuple(g.shape) != tuple(x.shape):
                    raise MXNetError("%s.backward: gradient %d has shape %s but input %d has "
                                     "shape %s" % (name, i, g.shape, i, x.shape))
            return ret

        _core.record_custom(name, list(inputs), list(outputs), backward_entry)
        return ret_outputs

    def forward(self, *inputs):
        """Forward computation."""
        raise NotImplementedError

    def backward(self, *output_grads):
        """Backward computation.

        Takes as many inputs as forward's outputs,
        and returns as many NDArrays as forward's inputs.
        """
        raise NotImplementedError


# Names MXNet's autograd module also exposes (``from mxnet.autograd import *`` gives them).
from .ndarray import NDArray, array  # noqa: E402
from .symbol import Symbol  # noqa: E402

__all__ += ["NDArray", "array", "Symbol"]
