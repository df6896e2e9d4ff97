"""Helpers for tests, after MXNet's ``mx.test_utils``."""

import numpy as np

from .context import Context, current_context


def default_context():
    """The context tests run on."""
    return current_context()


def set_default_context(ctx):
    Context._default_ctx.value = ctx


def _as_np(x):
    from .ndarray import NDArray
    return x.asnumpy() if isinstance(x, NDArray) else np.asarray(x)


def almost_equal(a, b, rtol=1e-5, atol=1e-20, equal_nan=False):
    """True when every element of a and b is close."""
    return np.allclose(_as_np(a), _as_np(b), rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal(a, b, rtol=1e-5, atol=1e-20, names=("a", "b"), equal_nan=False):
    """Raises AssertionError unless a and b (NDArrays or array-likes) are close."""
    a, b = _as_np(a), _as_np(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan,
                               err_msg="%s and %s differ" % names)


def same(a, b):
    """True when a and b are exactly equal."""
    return np.array_equal(_as_np(a), _as_np(b))


def rand_ndarray(shape, dtype="float32", ctx=None):
    from . import ndarray as nd
    return nd.array(np.random.uniform(-1, 1, size=shape), ctx=ctx, dtype=dtype)


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    """A random 2-D shape with dims in [1, dim0] x [1, dim1] (0 allowed if asked)."""
    low = 0 if allow_zero_size else 1
    return np.random.randint(low, dim0 + 1), np.random.randint(low, dim1 + 1)


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    """A random 3-D shape with dims up to dim0, dim1, dim2."""
    low = 0 if allow_zero_size else 1
    return (np.random.randint(low, dim0 + 1), np.random.randint(low, dim1 + 1),
            np.random.randint(low, dim2 + 1))


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    """A random shape of ``num_dim`` dims, each in [1, dim] (or [0, dim])."""
    low = 0 if allow_zero_size else 1
    return tuple(np.random.randint(low, dim + 1, size=num_dim))


def random_arrays(*shapes):
    """Standard-normal float32 NumPy arrays of the given shapes (one array for one shape)."""
    arrays = [np.array(np.random.randn(), dtype=np.float32) if len(s) == 0
              else np.random.randn(*s).astype(np.float32) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def numeric_grad(f, location, eps=1e-4, head_grads=None, dtype=np.float64):
    """Gradients by central differences.

    ``f`` maps a list of NumPy arrays (``location``) to a list of NumPy outputs; the
    result is, for each array of ``location``, the gradient of
    ``sum_k sum(outputs[k] * head_grads[k])`` (head_grads default to ones) with
    respect to it, in ``dtype``. This is the core that the NDArray and Symbol forms
    of ``check_numeric_gradient`` share."""
    location = [np.array(x, dtype=dtype) for x in location]
    outs = [np.asarray(o, dtype=dtype) for o in f([x.copy() for x in location])]
    if head_grads is None:
        head_grads = [np.ones_like(o) for o in outs]
    head_grads = [np.asarray(h, dtype=dtype) for h in head_grads]

    def loss(loc):
        return sum(float(np.sum(np.asarray(o, dtype=dtype) * h))
                   for o, h in zip(f(loc), head_grads))

    grads = []
    for i, x in enumerate(location):
        g = np.zeros_like(x)
        flat = g.reshape(-1)
        for j in range(x.size):
            loc = [y.copy() for y in location]
            loc[i].reshape(-1)[j] += eps
            fp = loss(loc)
            loc[i].reshape(-1)[j] -= 2 * eps
            fm = loss(loc)
            flat[j] = (fp - fm) / (2 * eps)
        grads.append(g)
    return grads


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=np.float64, head_grads=None):
    """Checks the gradients autograd computes for ``sym`` against central differences.

    ``sym`` is a function of NDArrays returning an NDArray or a list of NDArrays;
    ``location`` a list (or dict, passed as keyword arguments) of array-likes.
    ``grad_nodes`` (indices or names) restricts which inputs are checked. Random
    head gradients are used unless ``head_grads`` is given."""
    from . import autograd
    from . import ndarray as nd
    from .symbol import Symbol
    if isinstance(sym, Symbol):
        return _check_numeric_gradient_symbol(sym, location, aux_states, numeric_eps, rtol, atol,
                                              grad_nodes, use_forward_train, ctx, dtype)
    if not callable(sym):
        raise TypeError("check_numeric_gradient: expected a function of NDArrays, got %s"
                        % type(sym).__name__)
    if aux_states is not None:
        raise ValueError("check_numeric_gradient: aux_states apply to symbols only")
    names = list(location.keys()) if isinstance(location, dict) else None
    values = list(location.values()) if isinstance(location, dict) else list(location)
    values = [np.array(_as_np(v), dtype=dtype) for v in values]
    ctx = ctx or default_context()
    numeric_eps = numeric_eps or (1e-6 if np.dtype(dtype) == np.float64 else 1e-3)
    rtol = rtol or (1e-4 if np.dtype(dtype) == np.float64 else 1e-2)
    atol = atol if atol is not None else rtol

    def call(arrays):
        if names is None:
            out = sym(*arrays)
        else:
            out = sym(**dict(zip(names, arrays)))
        return [out] if isinstance(out, nd.NDArray) else list(out)

    def forward_np(loc):
        with autograd.pause(train_mode=use_forward_train):
            return [o.asnumpy() for o in call([nd.array(x, ctx=ctx, dtype=dtype) for x in loc])]

    outs = forward_np(values)
    if head_grads is None:
        head_grads = [np.random.normal(size=o.shape).astype(dtype) for o in outs]
    checked = range(len(values))
    if grad_nodes is not None:
        checked = [names.index(n) if isinstance(n, str) else n for n in grad_nodes]
    arrays = [nd.array(x, ctx=ctx, dtype=dtype) for x in values]
    for i in checked:
        arrays[i].attach_grad()
    with autograd.record(train_mode=use_forward_train):
        ys = call(arrays)
    autograd.backward(ys, [nd.array(h, ctx=ctx, dtype=dtype) for h in head_grads],
                      train_mode=use_forward_train)
    numeric = numeric_grad(forward_np, values, eps=numeric_eps, head_grads=head_grads, dtype=dtype)
    for i in checked:
        label = names[i] if names else "input %d" % i
        assert_almost_equal(arrays[i].grad.asnumpy(), numeric[i], rtol=rtol, atol=atol,
                            names=("autograd gradient of %s" % label, "numeric gradient"))


__all__ = ["check_symbolic_forward", "check_symbolic_backward", "default_context", "set_default_context", "almost_equal", "assert_almost_equal",
           "same", "rand_ndarray", "rand_shape_2d", "rand_shape_3d", "rand_shape_nd",
           "random_arrays", "numeric_grad", "check_numeric_gradient", "get_mnist"]


def get_mnist(path=None):
    """Loads MNIST from the four standard IDX files (``train-images-idx3-ubyte.gz``,
    ``train-labels-idx1-ubyte.gz``, ``t10k-images-idx3-ubyte.gz``,
    ``t10k-labels-idx1-ubyte.gz``).

    They are looked for in ``path`` when given, else in the folder named by the
    environment variable ``OXNET_MNIST_DIR``, else in the working directory (where
    MXNet's ``get_mnist`` finds them). Nothing is downloaded: missing files raise an
    ``MXNetError`` (also a ``FileNotFoundError``) naming them.

    Returns
    -------
    dict
        ``train_data`` (N, 1, 28, 28) float32 in [0, 1], ``train_label`` (N,) int8,
        ``test_data``, ``test_label``.
    """
    import os
    from ._idx import MNIST_FILES, find_files, read_idx
    dirs = [path] if path is not None else [os.environ.get("OXNET_MNIST_DIR"), "."]
    d = find_files(MNIST_FILES, dirs, "get_mnist", "OXNET_MNIST_DIR")

    def images(name):
        img = read_idx(os.path.join(d, name))
        return img.reshape(img.shape[0], 1, 28, 28).astype(np.float32) / 255

    def labels(name):
        return read_idx(os.path.join(d, name)).view(np.int8)

    return {"train_data": images(MNIST_FILES[0]), "train_label": labels(MNIST_FILES[1]),
            "test_data": images(MNIST_FILES[2]), "test_label": labels(MNIST_FILES[3])}



# ---- symbols ---------------------------------------------------------------------

def _sym_location(sym, location, dtype=None):
    """``location`` (list in list_arguments order, or dict) as a name → NumPy dict."""
    names = sym.list_arguments()
    if isinstance(location, dict):
        missing = [n for n in names if n not in location]
        if missing:
            raise ValueError("location is missing arguments %s" % missing)
        loc = {k: _as_np(location[k]) for k in names}
    else:
        if len(location) != len(names):
            raise ValueError("location has %d arrays, the symbol has %d arguments %s"
                             % (len(location), len(names), names))
        loc = {k: _as_np(v) for k, v in zip(names, location)}
    if dtype is not None:
        loc = {k: np.asarray(v, dtype=dtype) for k, v in loc.items()}
    return loc


def _sym_aux(sym, aux_states, dtype=None):
    names = sym.list_auxiliary_states()
    if aux_states is None:
        return None
    if isinstance(aux_states, dict):
        return {k: np.asarray(_as_np(aux_states[k]), dtype=dtype) for k in names}
    return {k: np.asarray(_as_np(v), dtype=dtype) for k, v in zip(names, aux_states)}


def _bind_sym(sym, loc, aux, ctx, grad_req="null"):
    from . import ndarray as nd
    args = {k: nd.array(v, ctx=ctx, dtype=v.dtype) for k, v in loc.items()}
    grads = None
    if grad_req != "null" and not (isinstance(grad_req, dict) and
                                   all(r == "null" for r in grad_req.values())):
        grads = {k: nd.zeros(v.shape, ctx=ctx, dtype=v.dtype) for k, v in loc.items()}
    auxs = None
    if sym.list_auxiliary_states():
        if aux is None:
            _, _, aux_shapes = sym.infer_shape(**{k: v.shape for k, v in loc.items()})
            aux = {k: np.zeros(s, np.float32)
                   for k, s in zip(sym.list_auxiliary_states(), aux_shapes)}
        auxs = {k: nd.array(v, ctx=ctx, dtype=v.dtype) for k, v in aux.items()}
    return sym.bind(ctx, args, args_grad=grads, grad_req=grad_req, aux_states=auxs)


def check_symbolic_forward(sym, location, expected, rtol=1E-4, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=np.float32):
    """Binds ``sym`` to ``location``, runs forward, compares the outputs with
    ``expected`` (a list, or a dict by output name). Returns the outputs as NumPy."""
    ctx = ctx or default_context()
    loc = _sym_location(sym, location, dtype)
    ex = _bind_sym(sym, loc, _sym_aux(sym, aux_states, dtype), ctx)
    outputs = [o.asnumpy() for o in ex.forward(is_train=False)]
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    for name, out, exp in zip(sym.list_outputs(), outputs, expected):
        assert_almost_equal(out, exp, rtol=rtol, atol=atol if atol is not None else 1e-20,
                            names=("output %s" % name, "expected"), equal_nan=equal_nan)
    return outputs


def check_symbolic_backward(sym, location, out_grads, expected, rtol=1e-5, atol=None,
                            aux_states=None, grad_req="write", ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=np.float32):
    """Binds ``sym``, runs forward (training) and backward with ``out_grads``,
    compares the arguments' gradients with ``expected`` (list or dict by name).
    With grad_req='add' the gradient arrays start from random values, as in MXNet.
    Returns the gradients as a dict of NumPy arrays."""
    from . import ndarray as nd
    ctx = ctx or default_context()
    loc = _sym_location(sym, location, dtype)
    names = sym.list_arguments()
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(names, expected))
    reqs = grad_req if isinstance(grad_req, dict) else {k: grad_req for k in names}
    ex = _bind_sym(sym, loc, _sym_aux(sym, aux_states, dtype), ctx, reqs)
    initial = {}
    for k, g in ex.grad_dict.items():
        if reqs.get(k) == "add":
            initial[k] = np.random.normal(size=g.shape).astype(g.dtype)
            g[:] = initial[k]
    ex.forward(is_train=True)
    if out_grads is not None:
        if isinstance(out_grads, dict):
            out_grads = [out_grads[k] for k in sym.list_outputs()]
        out_grads = [nd.array(_as_np(g), ctx=ctx, dtype=dtype) for g in out_grads]
    ex.backward(out_grads)
    grads = {k: g.asnumpy() for k, g in ex.grad_dict.items()}
    for k, exp in expected.items():
        if reqs.get(k, "null") == "null":
            continue
        want = np.asarray(exp) + initial.get(k, 0)
        assert_almost_equal(grads[k], want, rtol=rtol, atol=atol if atol is not None else 1e-20,
                            names=("gradient of %s" % k, "expected"), equal_nan=equal_nan)
    return grads


def _check_numeric_gradient_symbol(sym, location, aux_states, numeric_eps, rtol, atol, grad_nodes,
                                   use_forward_train, ctx, dtype):
    """Executor gradients of sum(outputs * random head grads) against central differences."""
    from . import ndarray as nd
    ctx = ctx or default_context()
    dtype = np.float64 if dtype is None else dtype
    numeric_eps = numeric_eps or (1e-6 if np.dtype(dtype) == np.float64 else 1e-3)
    rtol = rtol or (1e-4 if np.dtype(dtype) == np.float64 else 1e-2)
    atol = atol if atol is not None else rtol
    loc = _sym_location(sym, location, dtype)
    aux = _sym_aux(sym, aux_states, dtype)
    names = sym.list_arguments()
    if grad_nodes is None:
        grad_nodes = names
    elif isinstance(grad_nodes, dict):
        grad_nodes = list(grad_nodes)
    reqs = {k: ("write" if k in grad_nodes else "null") for k in names}
    ex = _bind_sym(sym, loc, aux, ctx, reqs)
    outs = ex.forward(is_train=use_forward_train)
    heads = [np.random.normal(size=o.shape).astype(dtype) for o in outs]
    ex.backward([nd.array(h, ctx=ctx, dtype=dtype) for h in heads])
    analytic = {k: ex.grad_dict[k].asnumpy() for k in grad_nodes}
    probe = _bind_sym(sym, loc, aux, ctx)

    def value():
        return sum(float(np.sum(o.asnumpy().astype(np.float64) * h))
                   for o, h in zip(probe.forward(is_train=use_forward_train), heads))

    for k in grad_nodes:
        x = loc[k].copy()
        num = np.zeros(x.shape, np.float64)
        flat = x.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + numeric_eps
            probe.arg_dict[k][:] = x
            up = value()
            flat[i] = old - numeric_eps
            probe.arg_dict[k][:] = x
            down = value()
            flat[i] = old
            num.reshape(-1)[i] = (up - down) / (2 * numeric_eps)
        probe.arg_dict[k][:] = x
        assert_almost_equal(analytic[k], num, rtol=rtol, atol=atol,
                            names=("executor gradient of %s" % k, "numeric gradient"))


from ._random_checks import (gen_buckets_probs_with_ppf, mean_check, var_check,  # noqa: E402,F401
                             chi_square_check, verify_generator, retry)
