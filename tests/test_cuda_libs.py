"""The CUDA library locator (cuBLAS, cuBLASLt, cuDNN, NCCL), checked without a GPU on
fake folder trees: OXNET_CUDA_LIB_DIRS first, then the NVIDIA pip wheels' layout."""

import os

import pytest

import oxnet as mx
from oxnet import _core, context


@pytest.fixture
def restore_roots():
    yield
    context._register_cuda_wheels()


def touch(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "wb").close()
    return str(path)


def test_explicit_folder_wins(tmp_path, monkeypatch, restore_roots):
    wheel = tmp_path / "site" / "nvidia"
    touch(wheel / "cu13" / "lib" / "libcublas.so.13")
    mine = touch(tmp_path / "mine" / "libcublas.so.13")
    _core.cuda_set_wheel_roots([str(wheel)])
    monkeypatch.setenv("OXNET_CUDA_LIB_DIRS", str(tmp_path / "mine"))
    assert mx.runtime.cuda_libraries()["cuBLAS"] == mine


def test_wheel_layouts(tmp_path, monkeypatch, restore_roots):
    monkeypatch.delenv("OXNET_CUDA_LIB_DIRS", raising=False)
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    wheel = tmp_path / "site" / "nvidia"
    blas = touch(wheel / "cu13" / "lib" / "libcublas.so.13")
    lt = touch(wheel / "cu13" / "lib" / "libcublasLt.so.13")
    dnn = touch(wheel / "cudnn" / "lib" / "libcudnn.so.9")
    nccl = touch(wheel / "nccl" / "lib" / "libnccl.so.2")
    _core.cuda_set_wheel_roots([str(wheel)])
    libs = mx.runtime.cuda_libraries()
    assert libs == {"cuBLAS": blas, "cuBLASLt": lt, "cuDNN": dnn, "NCCL": nccl}
    # Features is built once per process: build it afresh for this layout, and let
    # the next test build its own (monkeypatch restores the shared instance)
    monkeypatch.setattr(mx.runtime.Features, "instance", None)
    feats = mx.runtime.Features()
    assert feats.is_enabled("CUDA") and feats.is_enabled("CUDNN") and feats.is_enabled("NCCL")


def test_older_cuda12_wheel_layout(tmp_path, monkeypatch, restore_roots):
    monkeypatch.delenv("OXNET_CUDA_LIB_DIRS", raising=False)
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    wheel = tmp_path / "site" / "nvidia"
    blas = touch(wheel / "cublas" / "lib" / "libcublas.so.12")
    _core.cuda_set_wheel_roots([str(wheel)])
    assert mx.runtime.cuda_libraries()["cuBLAS"] == blas


@pytest.mark.skipif(mx.context.num_gpus() > 0, reason="checks the no-GPU error")
def test_gemm_ops_on_a_missing_gpu_are_clear_errors():
    with pytest.raises(mx.MXNetError, match="gpu"):
        mx.nd.dot(mx.nd.ones((2, 2), ctx=mx.gpu(0)), mx.nd.ones((2, 2), ctx=mx.gpu(0)))
