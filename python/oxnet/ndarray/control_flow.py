"""MXNet's imperative control flow, ``mx.nd.contrib.foreach``, ``while_loop`` and
``cond``. As in MXNet these are Python loops over NDArray operations: every
operation is an ordinary registry op, so ``autograd.record`` records the unrolled
loop and gradients flow through it. The symbolic forms (graph nodes holding
subgraphs) are in ``oxnet.symbol.control_flow``."""

from ..base import _as_list
from .ndarray import NDArray


def _flatten(args, inout_str):
    """A (nested) list of NDArrays as a flat list and the format to rebuild it."""
    if isinstance(args, NDArray):
        return [args], 0
    if not isinstance(args, (list, tuple)):
        raise AssertionError("%s must be (nested) list of NDArray, but got %s of type %s"
                             % (inout_str, str(args), str(type(args))))
    flat, fmts = [], []
    for item in args:
        sub, fmt = _flatten(item, inout_str)
        flat.extend(sub)
        fmts.append(fmt)
    return flat, fmts


def _regroup(args, fmt):
    """Inverse of :func:`_flatten`: (the rebuilt structure, what is left of args)."""
    if isinstance(fmt, int):
        if fmt == 0:
            return args[0], args[1:]
        return args[:fmt], args[fmt:]
    if not isinstance(args, (list, tuple)):
        raise AssertionError("output must be (nested) list of NDArray, but got %s of type %s"
                             % (str(args), str(type(args))))
    out = []
    for f in fmt:
        res, args = _regroup(args, f)
        out.append(res)
    return out, args


def _check_all(items, msg):
    if not all(isinstance(i, NDArray) for i in items):
        raise AssertionError(msg)


def _scalar(value, type_, name):
    """``value`` (an NDArray of one element, or a Python number) as ``type_``."""
    if isinstance(value, NDArray):
        value = value.asscalar()
    try:
        return type_(value)
    except Exception:  # noqa: BLE001 - MXNet's message whatever the failure
        raise ValueError("Cannot convert %s to python %s" % (name, type_.__name__)) from None


def foreach(body, data, init_states):
    """Run a for loop with user-defined computation over NDArrays on dimension 0.

    ``body(data_t, states)`` returns ``(out, new_states)``; it is called on each
    slice ``data[t]`` (a list of slices when ``data`` is a list), with the states of
    the previous step. The outputs of all steps are stacked on a new axis 0.

    Parameters
    ----------
    body : a Python function.
        Define computation in an iteration.
    data : an NDArray or a list of NDArrays.
        The input data.
    init_states : an NDArray or nested lists of NDArrays.
        The initial values of the loop states.

    Returns
    -------
    outputs : an NDArray or nested lists of NDArrays.
        The output data stacked from the output of all iterations.
    states : an NDArray or nested lists of NDArrays.
        The loop states in the last iteration.

    Examples
    --------
    >>> step = lambda data, states: (data + states[0], [states[0] * 2])
    >>> data = mx.nd.random.uniform(shape=(2, 10))
    >>> states = [mx.nd.random.uniform(shape=(10))]
    >>> outs, states = mx.nd.contrib.foreach(step, data, states)
    """
    flat_data, _ = _flatten(data, "foreach input")
    _check_all(flat_data, "data should be an NDArray or a nested list of NDArrays")
    flat_states, _ = _flatten(init_states, "foreach states")
    _check_all(flat_states, "init_states should be an NDArray or a nested list of NDArrays")
    single = isinstance(data, NDArray)
    length = data.shape[0] if single else data[0].shape[0]
    states = init_states
    steps = []
    out_fmt = None
    for t in range(length):
        eles = data[t] if single else [d[t] for d in data]
        outs, states = body(eles, states)
        outs, out_fmt = _flatten(outs, "foreach output")
        steps.append(outs)
    from . import op
    stacked = [op.stack(*items) for items in zip(*steps)]
    if out_fmt is None:
        return [], states
    outputs, _ = _regroup(stacked, out_fmt)
    return outputs, states


def while_loop(cond, func, loop_vars, max_iterations=None):
    """Run a while loop with user-defined computation and loop condition.

    While ``cond(*loop_vars)`` is true (and fewer than ``max_iterations`` steps ran),
    ``func(*loop_vars)`` returns ``(step_output, new_loop_vars)``. The step outputs
    are stacked on a new axis 0 and padded to ``max_iterations`` rows (the padding is
    zeros); when ``cond`` is false at once, the outputs are an empty list (they
    cannot be inferred, unlike the symbolic version's).

    Parameters
    ----------
    cond : a Python function.
        The loop condition, returning a one-element NDArray.
    func : a Python function.
        The loop body.
    loop_vars : an NDArray or nested lists of NDArrays.
        The initial values of the loop variables.
    max_iterations : a python int.
        Maximum number of iterations.

    Returns
    -------
    outputs : an NDArray or nested lists of NDArrays
        stacked output from each step
    states : an NDArray or nested lists of NDArrays
        final state

    Examples
    --------
    >>> cond = lambda i, s: i <= 5
    >>> func = lambda i, s: ([i + s], [i + 1, s + i])
    >>> loop_vars = (mx.nd.array([0], dtype="int64"), mx.nd.array([1], dtype="int64"))
    >>> outputs, states = mx.nd.contrib.while_loop(cond, func, loop_vars, max_iterations=10)
    """
    if max_iterations is None:
        raise ValueError("max_iterations should be specified")
    max_iterations = _scalar(max_iterations, int, "max_iteration")
    if len(loop_vars) == 0:
        raise ValueError("loop_vars should contain at least one element")
    single = isinstance(loop_vars, NDArray)
    loop_vars = _as_list(loop_vars)

    def step(current):
        out, new_vars = func(*current)
        out = [] if out is None else (list(out) if isinstance(out, tuple) else out)
        new_vars = [] if new_vars is None else (list(new_vars) if isinstance(new_vars, tuple)
                                                else new_vars)
        new_vars = _as_list(new_vars)
        if len(current) != len(new_vars):
            raise ValueError("The length of loop_vars should be consistent during the loop")
        return out, new_vars

    steps = []
    out_fmt = None
    n = 0
    while n < max_iterations and _scalar(cond(*loop_vars), bool, "Return value of cond"):
        out, loop_vars = step(loop_vars)
        out, out_fmt = _flatten(out, "while output")
        steps.append(out)
        n += 1
        if len(out) != len(steps[0]):
            raise ValueError("Number of elements in step_output should be the same in each step")
    from . import op
    from .ndarray import zeros
    stacked = []
    for k, items in enumerate(zip(*steps), 1):
        items = [x.expand_dims(0) for x in items]
        if n != max_iterations and items:
            pad_shape = [max_iterations - n] + list(items[0].shape[1:])
            items.append(zeros(pad_shape, ctx=items[0].context, dtype=items[0].dtype))
        try:
            stacked.append(op.concat(*items, dim=0))
        except Exception:  # noqa: BLE001 - report the shapes, as MXNet does
            raise ValueError("\n".join(
                ["Shapes of %d-th elements in step_outputs are inconsistent, which are:" % k]
                + ["  Step %d, shape is %s" % (i, str(x.shape)) for i, x in enumerate(items)]
            )) from None
    if out_fmt is not None:
        stacked, _ = _regroup(stacked, out_fmt)
    if single:
        loop_vars = loop_vars[0]
    return stacked, loop_vars


def cond(pred, then_func, else_func):
    """Run an if-then-else using user-defined condition and computation.

    ``pred`` is a one-element NDArray; ``then_func()`` runs when it is true (non
    zero), ``else_func()`` otherwise, and its result is returned.

    Parameters
    ----------
    pred : a MXNet NDArray representing a scalar.
        The branch condition.
    then_func : a Python function.
        The computation to be executed if `pred` is true.
    else_func : a Python function.
        The computation to be executed if `pred` is false.

    Returns
    -------
    outputs : an NDArray or nested lists of NDArrays, representing the result of computation.

    Examples
    --------
    >>> a, b = mx.nd.array([1]), mx.nd.array([2])
    >>> pred = a * b < 5
    >>> then_func = lambda: (a + 5) * (b + 5)
    >>> else_func = lambda: (a - 5) * (b - 5)
    >>> outputs = mx.nd.contrib.cond(pred, then_func, else_func)
    """
    if _scalar(pred, bool, "pred"):
        return then_func()
    return else_func()


def install(contrib):
    """Adds the functions to the ``contrib`` module."""
    for fn in (foreach, while_loop, cond):
        setattr(contrib, fn.__name__, fn)
