"""Reader of the IDX files MNIST and Fashion-MNIST come in (optionally gzipped):
a big-endian header (two zero bytes, a type code, the number of dimensions, one 32-bit
size per dimension) then the values. Parsed with ``numpy.frombuffer``, no copies
beyond the decompression."""

import gzip
import os

import numpy as np

from .base import MXNetError

_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
          0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


class MissingDataError(MXNetError, FileNotFoundError):
    """A data file is not on this machine (both an ``MXNetError`` and a
    ``FileNotFoundError``)."""


def read_idx(fname):
    """Returns the array stored in the IDX file ``fname`` (``.gz`` is decompressed)."""
    opener = gzip.open if fname.endswith(".gz") else open
    try:
        with opener(fname, "rb") as f:
            buf = f.read()
    except FileNotFoundError:
        raise MissingDataError("IDX file %s does not exist" % fname) from None
    except (OSError, EOFError) as exc:
        raise MXNetError("IDX file %s could not be read: %s" % (fname, exc)) from None
    if len(buf) < 4 or buf[0] != 0 or buf[1] != 0 or buf[2] not in _TYPES:
        raise MXNetError("IDX file %s: bad magic number %r (expected 0x00 0x00 <type> <ndim>)"
                         % (fname, bytes(buf[:4])))
    dtype = np.dtype(_TYPES[buf[2]])
    ndim = buf[3]
    header = 4 + 4 * ndim
    if len(buf) < header:
        raise MXNetError("IDX file %s: truncated header (%d dims need %d bytes, file has %d)"
                         % (fname, ndim, header, len(buf)))
    shape = tuple(int(x) for x in np.frombuffer(buf, dtype=">u4", count=ndim, offset=4))
    count = int(np.prod(shape)) if shape else 1
    if len(buf) - header < count * dtype.itemsize:
        raise MXNetError("IDX file %s: header says shape %s (%d values) but only %d bytes of "
                         "data follow" % (fname, shape, count, len(buf) - header))
    arr = np.frombuffer(buf, dtype=dtype, count=count, offset=header).reshape(shape)
    return arr.astype(dtype.newbyteorder("=")) if dtype.byteorder == ">" else arr


MNIST_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
               "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")


def find_files(names, dirs, what, env_var):
    """The folder among ``dirs`` (None entries skipped) that holds every file in
    ``names``; a ``MissingDataError`` naming the files and how to provide them
    otherwise."""
    tried = []
    for d in dirs:
        if d is None:
            continue
        d = os.path.expanduser(d)
        tried.append(os.path.abspath(d))
        if all(os.path.isfile(os.path.join(d, n)) for n in names):
            return d
    raise MissingDataError(
        "%s: the files %s were not found (looked in %s) and cannot be downloaded on this "
        "machine. Copy the four IDX .gz files into one of these folders, or point the "
        "environment variable %s (or the path argument) at a folder holding them."
        % (what, ", ".join(names), ", ".join(tried) or "nowhere", env_var))
