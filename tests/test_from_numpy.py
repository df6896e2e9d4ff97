"""mx.nd.from_numpy: a copy with zero_copy=False; with zero_copy=True the NDArray
adopts the NumPy array's memory (MXNet's rules: C-contiguous only, the NumPy array
becomes read-only, writes through the NDArray show in it)."""

import gc

import numpy as np
import pytest

import oxnet as mx


SOURCES = [
    np.array([[1, 2], [3, 4], [5, 6]], dtype="float32"),
    np.array((1,)).reshape(()),
    np.array(()).reshape((1, 0, 2)),
    np.arange(6, dtype="int32").reshape(2, 3),
]


@pytest.mark.parametrize("src", SOURCES)
def test_copy_keeps_values_shape_and_dtype(src):
    a = mx.nd.from_numpy(src, zero_copy=False)
    assert a.shape == src.shape and a.dtype == src.dtype
    np.testing.assert_array_equal(a.asnumpy(), src)
    if src.size:
        a[:] = 0  # a copy: the source is untouched
        assert src.flags["WRITEABLE"] and np.any(src != 0)


@pytest.mark.parametrize("src", [s.copy() for s in SOURCES])
def test_zero_copy_adopts_the_memory(src):
    a = mx.nd.from_numpy(src)
    assert a.shape == src.shape and a.dtype == src.dtype
    np.testing.assert_array_equal(a.asnumpy(), src)
    assert not src.flags["WRITEABLE"]
    if src.size:
        with pytest.raises(ValueError):
            src[(0,) * src.ndim] = 0
        a[:] = 7  # written through: the NumPy array sees it
        mx.nd.waitall()
        assert np.all(src == 7)


def test_ops_read_and_write_adopted_memory():
    src = np.arange(12, dtype=np.float64).reshape(3, 4)
    a = mx.nd.from_numpy(src)
    np.testing.assert_allclose((a * 2).asnumpy(), np.arange(12).reshape(3, 4) * 2)
    mx.nd.relu(a - 5, out=a)
    mx.nd.waitall()
    np.testing.assert_allclose(src, np.maximum(np.arange(12).reshape(3, 4) - 5, 0))


def test_memory_that_is_only_16_byte_aligned():
    # NumPy's data is not 64-byte aligned like oxnet's pool: slice a buffer so the
    # array starts 16 bytes past a 64-byte boundary, large enough for the kernels'
    # streaming-store path, and write into it through an op.
    n = 1 << 20
    buf = np.zeros(n + 64, dtype=np.float32)
    shift = (-buf.ctypes.data % 64) // 4 + 4
    src = buf[shift:shift + n]
    assert src.ctypes.data % 64 == 16 and src.flags["C_CONTIGUOUS"]
    src[:] = np.arange(n, dtype=np.float32)
    a = mx.nd.from_numpy(src)
    mx.nd.elemwise_add(a, a, out=a)
    mx.nd.waitall()
    np.testing.assert_array_equal(src, 2 * np.arange(n, dtype=np.float32))
    assert buf[:shift].sum() == 0 and buf[shift + n:].sum() == 0  # nothing written outside
    b = mx.nd.exp(a * 0)
    assert float(b.sum().asscalar()) == n


def test_the_ndarray_keeps_the_numpy_array_alive():
    src = np.arange(1000, dtype=np.float32)
    a = mx.nd.from_numpy(src)
    del src
    gc.collect()
    np.testing.assert_array_equal(a.asnumpy(), np.arange(1000, dtype=np.float32))
    v = a[10:20]
    del a
    gc.collect()
    np.testing.assert_array_equal(v.asnumpy(), np.arange(10, 20, dtype=np.float32))


def test_zero_copy_refuses_what_it_cannot_adopt():
    src = np.array([[1, 2], [3, 4], [5, 6]]).transpose()
    with pytest.raises(ValueError, match="c-contiguous"):
        mx.nd.from_numpy(src)
    assert src.flags["WRITEABLE"]  # left as it was
    with pytest.raises(ValueError, match="not supported"):
        mx.nd.from_numpy(np.ones(3, dtype=np.int16))
    with pytest.raises(ValueError, match="not supported"):
        mx.nd.from_numpy(np.ones(3, dtype=">f4"))
    raw = np.zeros(17, dtype=np.uint8)
    unaligned = np.frombuffer(raw.data, dtype=np.float32, count=4, offset=1)
    assert not unaligned.flags["ALIGNED"]
    with pytest.raises(ValueError, match="aligned"):
        mx.nd.from_numpy(unaligned)


def test_bad_inputs():
    with pytest.raises(TypeError):
        mx.nd.from_numpy([1, 2], zero_copy=False)
    with pytest.raises(TypeError):
        mx.nd.from_numpy([1, 2])
    with pytest.raises(ValueError):
        mx.nd.from_numpy(np.ones(2), zero_copy=False, array_cls=list)
