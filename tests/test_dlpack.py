"""DLPack interop: NDArray.to_dlpack_for_read/_for_write, mx.nd.from_dlpack,
NDArray.__dlpack__/__dlpack_device__, round trips with NumPy (np.from_dlpack) and,
where it is installed, PyTorch; capsule lifetimes in every order; bad capsules."""

import ctypes
import gc
import itertools

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError

try:
    import torch
except ImportError as e:  # the reason names the missing module
    torch = None
    _TORCH_MISSING = "PyTorch is not importable here: %s" % e
else:
    _TORCH_MISSING = ""

DTYPES = ["float32", "float64", "float16", "uint8", "int8", "int32", "int64"]


def _capsule_name(cap):
    get = ctypes.pythonapi.PyCapsule_GetName
    get.restype = ctypes.c_char_p
    get.argtypes = [ctypes.py_object]
    return get(cap).decode()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 4, 5), (7,), (), (2, 0, 3)])
def test_round_trip_through_capsules_shares_memory(dtype, shape):
    x = mx.nd.array(np.arange(int(np.prod(shape))).reshape(shape) % 100, dtype=dtype)
    for export in (x.to_dlpack_for_read, x.to_dlpack_for_write,
                   lambda: mx.nd.to_dlpack_for_read(x), lambda: mx.nd.to_dlpack_for_write(x)):
        cap = export()
        assert _capsule_name(cap) == "dltensor"
        y = mx.nd.from_dlpack(cap)
        assert _capsule_name(cap) == "used_dltensor"
        assert y.shape == x.shape and y.dtype == x.dtype
        np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())
        if x.size:
            y[:] = 3  # same memory
            np.testing.assert_array_equal(x.asnumpy(), np.full(shape, 3, dtype=dtype))
            x[:] = 1


def test_views_export_their_own_elements():
    x = mx.nd.array(np.arange(20, dtype=np.float32).reshape(5, 4))
    v = x[2:4]
    np.testing.assert_array_equal(np.from_dlpack(v), np.arange(8, 16, dtype=np.float32).reshape(2, 4))


def test_numpy_reads_ndarrays_without_a_copy():
    x = mx.nd.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    a = np.from_dlpack(x)
    np.testing.assert_array_equal(a, np.arange(12, dtype=np.float32).reshape(3, 4))
    x[:] = 5
    mx.nd.waitall()
    assert np.all(a == 5)
    assert x.__dlpack_device__() == (1, 0)
    del x
    gc.collect()
    assert np.all(a == 5)  # the capsule's tensor keeps the memory alive


def test_ndarray_adopts_numpy_through_dlpack():
    src = np.arange(6, dtype=np.int64).reshape(2, 3)
    y = mx.nd.from_dlpack(src)
    np.testing.assert_array_equal(y.asnumpy(), src)
    y[:] = 9
    mx.nd.waitall()
    assert np.all(src == 9)
    del src
    gc.collect()
    np.testing.assert_array_equal(y.asnumpy(), np.full((2, 3), 9))
    z = mx.nd.from_dlpack(np.ones(4, dtype=bool))
    assert z.dtype == np.bool_ and z.asnumpy().all()


def test_non_compact_producers_are_refused_clearly():
    src = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    with pytest.raises(MXNetError, match="from_dlpack.*compact"):
        mx.nd.from_dlpack(src)
    with pytest.raises(MXNetError, match="from_dlpack.*dtype"):
        mx.nd.from_dlpack(np.ones(3, dtype=np.complex64))


def test_reads_wait_for_pending_writes():
    x = mx.nd.zeros((256, 256))
    for _ in range(5):
        x += 1
    cap = x.to_dlpack_for_read()
    y = mx.nd.from_dlpack(cap)
    assert float(y.asnumpy().mean()) == 5.0


@pytest.mark.parametrize("order", list(itertools.permutations(["src", "cap", "dst"])))
def test_lifetimes_in_every_order(order):
    objs = {"src": mx.nd.array(np.arange(1000, dtype=np.float32))}
    objs["cap"] = objs["src"].to_dlpack_for_read()
    objs["dst"] = mx.nd.from_dlpack(objs["cap"])
    expect = np.arange(1000, dtype=np.float32)
    for name in order:
        del objs[name]
        gc.collect()
        if "dst" in objs:
            np.testing.assert_array_equal(objs["dst"].asnumpy(), expect)
        if "src" in objs:
            np.testing.assert_array_equal(objs["src"].asnumpy(), expect)


def test_unconsumed_capsules_free_their_tensor():
    for _ in range(200):
        x = mx.nd.ones((64, 64))
        cap = x.to_dlpack_for_write()
        del x, cap
    gc.collect()
    # and a capsule outliving its array keeps the memory readable
    x = mx.nd.array([1.0, 2.0, 3.0])
    cap = x.to_dlpack_for_read()
    del x
    gc.collect()
    np.testing.assert_array_equal(mx.nd.from_dlpack(cap).asnumpy(), [1.0, 2.0, 3.0])


def test_bad_capsules_and_objects():
    x = mx.nd.ones((2, 2))
    cap = x.to_dlpack_for_read()
    mx.nd.from_dlpack(cap)
    with pytest.raises(MXNetError, match="from_dlpack.*already consumed"):
        mx.nd.from_dlpack(cap)
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype = ctypes.py_object
    new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    buf = ctypes.create_string_buffer(64)
    other = new_capsule(ctypes.addressof(buf), b"not_a_tensor", None)
    with pytest.raises(MXNetError, match="from_dlpack.*'not_a_tensor'"):
        mx.nd.from_dlpack(other)
    for bad in (None, 3, "dltensor", [1, 2], object()):
        with pytest.raises(MXNetError, match="from_dlpack"):
            mx.nd.from_dlpack(bad)
    with pytest.raises(MXNetError, match="to_dlpack_for_read"):
        mx.nd.to_dlpack_for_read(np.ones(3))
    with pytest.raises(MXNetError, match="to_dlpack"):
        mx.nd.ones((2, 2)).tostype("row_sparse").to_dlpack_for_read()


def test_dunder_dlpack_arguments():
    x = mx.nd.ones((2, 3))
    with pytest.raises(BufferError):
        x.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError):
        x.__dlpack__(stream=1)
    a = mx.nd.from_dlpack(x.__dlpack__(copy=True))
    a[:] = 0
    assert x.asnumpy().sum() == 6  # a copy was exported


@pytest.mark.skipif(torch is None, reason=_TORCH_MISSING)
def test_torch_round_trips():
    x = mx.nd.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    t = torch.from_dlpack(x)
    assert tuple(t.shape) == (3, 4)
    t[0, 0] = 100.0
    assert x.asnumpy()[0, 0] == 100.0
    src = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    y = mx.nd.from_dlpack(src)
    y[:] = 2
    mx.nd.waitall()
    assert bool((src == 2).all())
    z = mx.nd.from_dlpack(torch.utils.dlpack.to_dlpack(torch.ones(4, dtype=torch.bfloat16)))
    assert z.asnumpy().view(np.uint16).tolist() == [0x3F80] * 4
    with pytest.raises(MXNetError, match="from_dlpack.*compact"):
        mx.nd.from_dlpack(torch.ones(3, 4).t())
    del src, t
    gc.collect()
    np.testing.assert_array_equal(y.asnumpy(), np.full((2, 3), 2.0))
