"""Memory interop: ``from_numpy`` without a copy, and DLPack both ways
(``to_dlpack_for_read``/``to_dlpack_for_write``, ``from_dlpack``, ``__dlpack__``).

The capsules are DLPack's legacy ("dltensor") ones, made and read in Rust
(``oxnet._core``; see crates/oxnet-python/src/dlpack.rs), so NumPy's and PyTorch's
``from_dlpack`` take NDArrays and ``mx.nd.from_dlpack`` takes their arrays and
tensors. Adopted memory stays owned by its producer: the NDArray keeps the producer's
object alive and releases it when the last array using the memory is gone."""

import numpy as np

from .. import _core
from ..base import MXNetError, MXNetValueError

NDArray = _core.NDArray


def from_numpy(ndarray, zero_copy=True, array_cls=None):
    """Returns an NDArray backed by a NumPy array's memory.

    Parameters
    ----------
    ndarray : numpy.ndarray
        The source array.
    zero_copy : bool, default True
        True: the NDArray uses the NumPy array's memory without a copy. As in MXNet,
        only C-contiguous arrays can be adopted (ValueError otherwise), and the NumPy
        array becomes read-only (its WRITEABLE flag is cleared); writes through the
        NDArray show in it. The NDArray keeps the NumPy array alive. False: a copy
        with the source's dtype.
    array_cls : type, optional
        Only NDArray is supported.

    Returns
    -------
    NDArray
    """
    if array_cls not in (None, NDArray):
        raise MXNetValueError("from_numpy: array_cls must be NDArray, got %r" % (array_cls,))
    if not isinstance(ndarray, np.ndarray):
        raise TypeError("from_numpy expects a numpy.ndarray, got %s" % type(ndarray))
    if not zero_copy:
        from .ndarray import array
        return array(ndarray, dtype=ndarray.dtype)
    if not ndarray.flags["C_CONTIGUOUS"]:
        raise ValueError("Only c-contiguous arrays are supported for zero-copy")
    dt = ndarray.dtype
    if dt.names is None and (dt.name not in _ADOPTABLE or not dt.isnative):
        raise ValueError("from_numpy: %s is not supported (oxnet adopts %s in native byte order)"
                         % (dt, ", ".join(sorted(_ADOPTABLE))))
    if not ndarray.flags["ALIGNED"]:
        raise ValueError("from_numpy: the array's data is not aligned to its element size; "
                         "copy it (np.ascontiguousarray(..., copy) or zero_copy=False)")
    ndarray.flags["WRITEABLE"] = False
    return _core.from_numpy_zero_copy(ndarray)


_ADOPTABLE = {"float32", "float64", "float16", "uint8", "int8", "int32", "int64", "bool"}


def _adoptable(a):
    """Whether an NDArray can take NumPy array ``a``'s memory over as it is."""
    dt = a.dtype
    return bool(a.flags["C_CONTIGUOUS"] and a.flags["ALIGNED"] and dt.names is None
                and dt.isnative and dt.name in _ADOPTABLE)


def to_dlpack_for_read(data):
    """Returns a reference view of NDArray that represents as DLManagedTensor until
    all previous write operations on the current array are finished.

    Parameters
    ----------
    data : NDArray
        input data.

    Returns
    -------
    PyCapsule (the pointer of DLManagedTensor)
        a reference view of NDArray that represents as DLManagedTensor.
    """
    _check_nd(data, "to_dlpack_for_read")
    return _core.to_dlpack_capsule(data, False)


def to_dlpack_for_write(data):
    """Returns a reference view of NDArray that represents as DLManagedTensor until
    all previous read/write operations on the current array are finished.

    Parameters
    ----------
    data : NDArray
        input data.

    Returns
    -------
    PyCapsule (the pointer of DLManagedTensor)
        a reference view of NDArray that represents as DLManagedTensor.
    """
    _check_nd(data, "to_dlpack_for_write")
    return _core.to_dlpack_capsule(data, True)


def from_dlpack(dlpack):
    """Returns a NDArray backed by a dlpack tensor.

    Parameters
    ----------
    dlpack : PyCapsule (the pointer of DLManagedTensor), or an object with ``__dlpack__``
        input data: a capsule named "dltensor" (it is renamed "used_dltensor": a
        capsule is imported once), or an array that exports one (a NumPy array, a
        PyTorch tensor, an NDArray).

    Returns
    -------
    NDArray
        a NDArray backed by a dlpack tensor (no copy is made)
    """
    return _core.from_dlpack(dlpack)


def _check_nd(data, what):
    if not isinstance(data, NDArray):
        raise MXNetError("%s: expected an NDArray, got %s" % (what, type(data).__name__))


def _dlpack(self, stream=None, max_version=None, dl_device=None, copy=None):
    """The array as a DLPack capsule (Python array API): NumPy's and PyTorch's
    ``from_dlpack`` call it. Waits for every pending operation on the array. The
    capsule is DLPack's legacy ("dltensor") kind, whatever ``max_version`` asks."""
    del max_version  # a legacy capsule is always allowed
    if dl_device is not None and tuple(dl_device) != _dlpack_device(self):
        raise BufferError("__dlpack__: the array lives on DLPack device %s, not %s"
                          % (_dlpack_device(self), tuple(dl_device)))
    if stream is not None and _dlpack_device(self)[0] == 1:
        raise BufferError("__dlpack__: stream must be None for a host array, got %r" % (stream,))
    src = self.copy() if copy else self
    return _core.to_dlpack_capsule(src, True)


def _dlpack_device(self):
    """(DLPack device type, device id): (1, 0) for host memory, (2, i) for gpu(i)."""
    return _core.dlpack_device(self)


def install():
    NDArray.to_dlpack_for_read = to_dlpack_for_read
    NDArray.to_dlpack_for_write = to_dlpack_for_write
    NDArray.__dlpack__ = _dlpack
    NDArray.__dlpack_device__ = _dlpack_device


__all__ = ["from_numpy", "from_dlpack", "to_dlpack_for_read", "to_dlpack_for_write"]
