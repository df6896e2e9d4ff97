"""The data helpers of ``mx.test_utils``: downloads, MNIST and CIFAR-10 loaders and
iterators, zip/bz2 archives. Nothing is fetched unless a download is asked for; when the
network is unreachable the error says which URL failed and where the file was expected,
so the data can be copied there by hand."""

import bz2
import errno
import logging
import os
import shutil
import urllib.request
import zipfile

import numpy as np

from ._idx import MNIST_FILES, find_files, read_idx
from .base import MXNetError

__all__ = ["download", "download_model", "get_mnist", "get_mnist_pkl", "get_mnist_ubyte",
           "get_cifar10", "get_mnist_iterator", "get_zip_data", "get_bz2_data",
           "get_im2rec_path", "DummyIter"]


class DownloadError(MXNetError, OSError):
    """A download failed (both an ``MXNetError`` and an ``OSError``)."""


def download(url, fname=None, dirname=None, overwrite=False, retries=5):
    """Downloads ``url`` to ``fname`` (default: the URL's last component), in ``dirname``
    when given, and returns the file name. An existing file is kept unless
    ``overwrite``. Failed attempts are retried ``retries`` times, then the last error is
    raised as a ``DownloadError`` naming the URL."""
    if retries < 0:
        raise ValueError("Number of retries should be at least 0, got %r" % (retries,))
    if fname is None:
        fname = url.split("/")[-1]
    if dirname is None:
        dirname = os.path.dirname(fname)
    else:
        fname = os.path.join(dirname, fname)
    if dirname:
        try:
            os.makedirs(dirname, exist_ok=True)
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                raise OSError("failed to create " + dirname) from exc
    if not overwrite and os.path.exists(fname):
        logging.info("%s exists, skipping download", fname)
        return fname
    attempts = retries + 1
    for attempt in range(attempts):
        tmp = fname + ".part"
        try:
            with urllib.request.urlopen(url, timeout=30) as resp:
                status = getattr(resp, "status", 200)
                if status != 200:
                    raise OSError("HTTP status %d" % status)
                with open(tmp, "wb") as f:
                    shutil.copyfileobj(resp, f)
            os.replace(tmp, fname)
            break
        except (OSError, ValueError) as exc:
            if os.path.exists(tmp):
                os.remove(tmp)
            left = attempts - attempt - 1
            if left <= 0:
                raise DownloadError("download of %s into %s failed: %s (place the file there "
                                    "by hand on a machine without network access)"
                                    % (url, fname, exc)) from exc
            print("download failed, retrying, {} attempt{} left"
                  .format(left, "s" if left > 1 else ""))
    logging.info("downloaded %s into %s successfully", url, fname)
    return fname


def download_model(model_name, dst_dir="./", meta_info=None):
    """Downloads a model's ``-symbol.json`` and ``-0000.params`` from MXNet's model
    server (as MXNet's helper does); returns the two local file names."""
    base = "http://data.mxnet.io/models/imagenet/"
    if meta_info is None:
        meta_info = {}
    if model_name not in meta_info:
        meta_info[model_name] = (base + model_name + "-symbol.json",
                                 base + model_name + "-0000.params")
    sym_url, params_url = meta_info[model_name]
    return (download(sym_url, dirname=dst_dir), download(params_url, dirname=dst_dir))


def get_mnist(path=None):
    """Loads MNIST from the four standard IDX files (``train-images-idx3-ubyte.gz``,
    ``train-labels-idx1-ubyte.gz``, ``t10k-images-idx3-ubyte.gz``,
    ``t10k-labels-idx1-ubyte.gz``).

    They are looked for in ``path`` when given, else in the folder named by the
    environment variable ``OXNET_MNIST_DIR``, else in the working directory and its
    ``data`` folder. Nothing is downloaded: missing files raise an ``MXNetError``
    (also a ``FileNotFoundError``) naming them.

    Returns
    -------
    dict
        ``train_data`` (N, 1, 28, 28) float32 in [0, 1], ``train_label`` (N,) int8,
        ``test_data``, ``test_label``.
    """
    d = _mnist_dir(path)

    def images(name):
        img = read_idx(os.path.join(d, name))
        return img.reshape(img.shape[0], 1, 28, 28).astype(np.float32) / 255

    def labels(name):
        return read_idx(os.path.join(d, name)).view(np.int8)

    return {"train_data": images(MNIST_FILES[0]), "train_label": labels(MNIST_FILES[1]),
            "test_data": images(MNIST_FILES[2]), "test_label": labels(MNIST_FILES[3])}


def _mnist_dir(path=None):
    dirs = [path] if path is not None else [os.environ.get("OXNET_MNIST_DIR"), ".", "data"]
    return find_files(MNIST_FILES, dirs, "get_mnist", "OXNET_MNIST_DIR")


def get_mnist_pkl():
    """MXNet's ``data/mnist.pkl.gz`` (the pickled MNIST): downloaded when missing."""
    os.makedirs("data", exist_ok=True)
    target = os.path.join("data", "mnist.pkl.gz")
    if not os.path.exists(target):
        download("http://deeplearning.net/data/mnist/mnist.pkl.gz", dirname="data")
    return target


def get_mnist_ubyte():
    """Makes sure ``data/`` holds the four uncompressed MNIST IDX files (as MXNet's
    ``MNISTIter`` reads them): decompressed from the ``.gz`` files :func:`get_mnist`
    finds, else downloaded from MXNet's data server."""
    os.makedirs("data", exist_ok=True)
    names = [n[:-3] for n in MNIST_FILES]
    if all(os.path.exists(os.path.join("data", n)) for n in names):
        return
    try:
        d = _mnist_dir()
    except FileNotFoundError:
        zip_path = download("http://data.mxnet.io/mxnet/data/mnist.zip", dirname="data")
        with zipfile.ZipFile(zip_path) as zf:
            zf.extractall("data")
        return
    import gzip
    for gz, raw in zip(MNIST_FILES, names):
        with gzip.open(os.path.join(d, gz), "rb") as src, \
                open(os.path.join("data", raw), "wb") as dst:
            shutil.copyfileobj(src, dst)


def get_cifar10():
    """Makes sure ``data/cifar`` holds CIFAR-10 as MXNet packs it (``train.rec``,
    ``test.rec``, ``train.lst``, ``test.lst``), downloading the archive when missing."""
    os.makedirs("data", exist_ok=True)
    needed = ["train.rec", "test.rec", "train.lst", "test.lst"]
    if not all(os.path.exists(os.path.join("data", "cifar", n)) for n in needed):
        zip_path = download("http://data.mxnet.io/mxnet/data/cifar10.zip", dirname="data")
        with zipfile.ZipFile(zip_path) as zf:
            zf.extractall("data")


def get_mnist_iterator(batch_size, input_shape, num_parts=1, part_index=0):
    """``(train_iter, val_iter)`` over MNIST: batches of ``batch_size`` images shaped
    ``input_shape`` (``(784,)`` gives flat rows, ``(1, 28, 28)`` images), labels as
    float32; the training iterator shuffles. With ``num_parts`` > 1 each iterator covers
    only slice ``part_index`` of the data, as for distributed training."""
    from .io import NDArrayIter
    if not 0 <= part_index < num_parts:
        raise ValueError("part_index %d is outside [0, num_parts=%d)" % (part_index, num_parts))
    mnist = get_mnist()

    def part(x):
        n = x.shape[0] // num_parts
        return x[part_index * n:(part_index + 1) * n]

    def shaped(x):
        return part(x).reshape((-1,) + tuple(input_shape))

    train = NDArrayIter(shaped(mnist["train_data"]),
                        part(mnist["train_label"]).astype(np.float32),
                        batch_size, shuffle=True)
    val = NDArrayIter(shaped(mnist["test_data"]), part(mnist["test_label"]).astype(np.float32),
                      batch_size)
    return train, val


def get_zip_data(data_dir, url, data_origin_name):
    """Downloads the zip archive ``url`` as ``data_dir/data_origin_name`` (unless present)
    and extracts it into ``data_dir``."""
    data_origin_name = os.path.join(data_dir, data_origin_name)
    if not os.path.exists(data_origin_name):
        download(url, dirname=data_dir, overwrite=False)
        with zipfile.ZipFile(data_origin_name) as zf:
            zf.extractall(data_dir)


def get_bz2_data(data_dir, data_name, url, data_origin_name):
    """Downloads the bz2 file ``url`` as ``data_dir/data_origin_name`` (unless
    ``data_dir/data_name`` exists) and decompresses it into ``data_dir/data_name``."""
    data_name = os.path.join(data_dir, data_name)
    data_origin_name = os.path.join(data_dir, data_origin_name)
    if not os.path.exists(data_name):
        download(url, fname=data_origin_name, dirname=data_dir, overwrite=False)
        with bz2.BZ2File(data_origin_name, "rb") as src, open(data_name, "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.remove(data_origin_name)


def get_im2rec_path(home_env="MXNET_HOME"):
    """The path of MXNet's ``im2rec.py`` tool: under ``$home_env/tools`` when that
    variable is set, else in the ``tools`` folder next to the package."""
    home = os.environ.get(home_env)
    if home is not None:
        path = os.path.join(home, "tools", "im2rec.py")
        if os.path.isfile(path):
            return path
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "tools", "im2rec.py")
    if os.path.isfile(path):
        return path
    raise IOError("Could not find path to tools/im2rec.py (set %s to a folder with "
                  "tools/im2rec.py)" % home_env)


class DummyIter:
    """An iterator that yields the first batch of ``real_iter`` forever: measures
    training speed without I/O."""

    def __init__(self, real_iter):
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.batch_size = real_iter.batch_size
        self.the_batch = next(iter(real_iter))

    def __iter__(self):
        return self

    def __next__(self):
        return self.the_batch

    next = __next__
