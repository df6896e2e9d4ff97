"""What of the CUDA backend can be checked without a GPU: NVRTC compiles the
generated kernels, broken kernels are reported by name, and using ``gpu(i)`` on a
machine without one is a clear ``MXNetError`` that leaves inputs intact.
(tests/gpu/ holds the checks that need a device.)"""

import numpy as np
import pytest

import oxnet as mx
from oxnet import _core

NO_GPU = mx.context.num_gpus() == 0


def test_every_family_has_generated_sources():
    names = {n for n, _ in _core.cuda_kernel_sources()}
    for fam in ("unary", "binary", "scalar", "bcast", "reduce", "cast", "fill", "softmax", "index", "random"):
        assert "%s_f32" % fam in names
    assert "binary_f16" in names and "reduce_bf16" in names and "cast_i64" in names
    assert "gather" in names


@pytest.mark.parametrize("name", ["binary_f32", "reduce_f16", "cast_bf16", "bcast_i8"])
def test_nvrtc_compiles_generated_source_for_sm90(name):
    src = dict(_core.cuda_kernel_sources())[name]
    cubin = _core.nvrtc_compile(name, src, 90)
    assert len(cubin) > 1000
    assert bytes(cubin[:4]) == b"\x7fELF"  # a CUBIN is an ELF image


def test_broken_kernel_source_is_an_error_naming_it():
    src = 'extern "C" __global__ void k(float* y) { y[0] = not_declared; }'
    with pytest.raises(mx.base.MXNetError) as e:
        _core.nvrtc_compile("my_broken_kernel", src, 80)
    msg = str(e.value)
    assert "my_broken_kernel" in msg and "sm_80" in msg and "not_declared" in msg


@pytest.mark.skipif(not NO_GPU, reason="checks the behaviour without a GPU")
def test_gpu_array_without_gpu_is_a_clear_error():
    with pytest.raises(mx.base.MXNetError) as e:
        mx.nd.ones((2,), ctx=mx.gpu(0))
    assert "gpu(0)" in str(e.value)
    with pytest.raises(mx.base.MXNetError) as e:
        mx.nd.zeros((3, 4), ctx=mx.gpu(1))
    assert "gpu(1)" in str(e.value)


@pytest.mark.skipif(not NO_GPU, reason="checks the behaviour without a GPU")
def test_copy_to_gpu_without_gpu_fails_and_leaves_the_source_intact():
    a = mx.nd.array([1.0, 2.0, 3.0])
    with pytest.raises(mx.base.MXNetError) as e:
        a.as_in_context(mx.gpu(0))
    assert "gpu(0)" in str(e.value)
    with pytest.raises(mx.base.MXNetError):
        a.copyto(mx.gpu(0))
    np.testing.assert_array_equal(a.asnumpy(), [1.0, 2.0, 3.0])


@pytest.mark.skipif(not NO_GPU, reason="checks the behaviour without a GPU")
def test_gpu_memory_info_without_gpu_is_a_clear_error():
    with pytest.raises(mx.base.MXNetError) as e:
        mx.context.gpu_memory_info(0)
    assert "gpu(0)" in str(e.value)
    with pytest.raises(mx.base.MXNetError):
        mx.gpu(0).empty_cache()
    assert mx.context.num_gpus() == 0


def test_cudnn_info_without_a_gpu_run():
    # (convolutions enabled, cuDNN version when it loads, convolutions cuDNN ran)
    enabled, version, calls = _core.cudnn_info()
    assert isinstance(enabled, bool)
    assert version is None or version >= 90000
    if mx.context.num_gpus() == 0:
        assert calls == 0
