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


__all__ = ["default_context", "set_default_context", "almost_equal", "assert_almost_equal",
           "same", "rand_ndarray", "get_mnist"]


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
