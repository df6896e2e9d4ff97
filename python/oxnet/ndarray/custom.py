"""``mx.nd.Custom``: runs an operator registered with ``mx.operator.register``.

The work is in :mod:`oxnet.operator` (the prop registry and the checked calls into
the user's code); this module only gives ``mx.nd`` MXNet's function."""


def Custom(*data, **kwargs):  # pylint: disable=invalid-name
    """Apply a custom operator implemented in a frontend language (like Python).

    Custom operators should override required methods like `forward` and `backward`.
    The custom operator must be registered before it can be used.
    Please check the tutorial here: https://mxnet.incubator.apache.org/api/faq/new_op

    Parameters
    ----------
    data : NDArray[]
        Input data for the custom operator: its arguments (``list_arguments``) then
        its auxiliary states (``list_auxiliary_states``), positional or by name.
    op_type : string
        Name of the custom operator. This is the name that is passed to
        `mx.operator.register` to register the operator.
    out : NDArray, optional
        The output NDArray to hold the result.
    **kwargs
        Passed, as strings, to the registered CustomOpProp's constructor.

    Returns
    -------
    out : NDArray or list of NDArrays
        The output of this function.
    """
    from .. import operator as _operator
    return _operator._invoke_ndarray(data, kwargs)  # pylint: disable=protected-access
