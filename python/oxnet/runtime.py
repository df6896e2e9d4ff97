"""What this build of oxnet has, under MXNet 1.9.1's feature names (``mx.runtime``).

    features = mx.runtime.Features()
    features.is_enabled("CUDA")

Each entry answers for oxnet itself, not for MXNet's C++ build options:

* ``CUDA``/``CUDA_RTC``: oxnet's CUDA backend is part of every build (loaded at run time,
  kernels compiled with NVRTC); it is usable only on a machine with a GPU
  (``mx.context.num_gpus()``). ``CUDNN``, ``NCCL``: whether the library was found (NVIDIA's
  pip wheels, ``OXNET_CUDA_LIB_DIRS`` or the CUDA toolkit; see ``cuda_libraries()``);
  ``TENSORRT``: not used.
* ``CPU_*``, ``SSE``, ``F16C``: the instruction sets of this machine's CPU, which oxnet's
  CPU kernels select at run time.
* ``BLAS_*``, ``LAPACK``, ``MKLDNN``, ``OPENMP``, ``JEMALLOC``, ``OPENCV``, ``CAFFE``,
  ``TVM_OP``: external libraries oxnet does not link (its matrix products and thread pool
  are its own).
* ``DIST_KVSTORE``: no distributed key-value store. ``PROFILER``: only when the build
  has ``mx.profiler``. ``INT64_TENSOR_SIZE``: sizes and indices are 64-bit.
  ``SIGNAL_HANDLER``: no crash handler is installed. ``DEBUG``: release build.
"""

import collections
import platform

__all__ = ["Feature", "feature_list", "Features", "cuda_libraries"]

# MXNet 1.9.1's features, in its order.
_NAMES = ("CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3",
          "CPU_SSE4_1", "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE",
          "F16C", "JEMALLOC", "BLAS_OPEN", "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK",
          "MKLDNN", "OPENCV", "CAFFE", "PROFILER", "DIST_KVSTORE", "CXX14",
          "INT64_TENSOR_SIZE", "SIGNAL_HANDLER", "DEBUG", "TVM_OP")

# Feature → the /proc/cpuinfo flag that shows it (x86 only).
_CPU_FLAGS = {"CPU_SSE": "sse", "CPU_SSE2": "sse2", "CPU_SSE3": "pni", "CPU_SSE4_1": "sse4_1",
              "CPU_SSE4_2": "sse4_2", "CPU_SSE4A": "sse4a", "CPU_AVX": "avx",
              "CPU_AVX2": "avx2", "SSE": "sse2", "F16C": "f16c"}


class Feature:
    """One feature: ``name`` and ``enabled``; prints as ``✔ NAME`` or ``✖ NAME``."""

    __slots__ = ("_name", "_enabled")

    def __init__(self, name, enabled):
        self._name = name
        self._enabled = bool(enabled)

    @property
    def name(self):
        """Feature name."""
        return self._name

    @property
    def enabled(self):
        """True if this build has the feature."""
        return self._enabled

    def __repr__(self):
        return "{} {}".format("✔" if self._enabled else "✖", self._name)


def _cpu_flags():
    if platform.machine().lower() not in ("x86_64", "amd64", "i386", "i686"):
        return set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    # Not Linux: every x86-64 CPU has SSE and SSE2.
    return {"sse", "sse2"} if platform.machine().lower() in ("x86_64", "amd64") else set()


def _has_profiler():
    import importlib.util
    return importlib.util.find_spec("oxnet.profiler") is not None


def _enabled():
    flags = _cpu_flags()
    on = {name: flag in flags for name, flag in _CPU_FLAGS.items()}
    on.update(CUDA=True, CUDA_RTC=True, INT64_TENSOR_SIZE=True, PROFILER=_has_profiler())
    libs = dict(_cuda_libraries())
    on.update(CUDNN=libs.get("cuDNN") is not None, NCCL=libs.get("NCCL") is not None)
    return on


def _cuda_libraries():
    from . import _core
    try:
        return _core.cuda_libraries()
    except AttributeError:
        return []


def cuda_libraries():
    """Where oxnet finds NVIDIA's libraries: a dict name -> path (None: not found in
    ``OXNET_CUDA_LIB_DIRS``, the NVIDIA pip wheels or the CUDA toolkit folders; the
    system linker's path is then tried when the library is first used)."""
    return dict(_cuda_libraries())



def feature_list():
    """Every feature of this build as a list of :class:`Feature`, in MXNet's order."""
    on = _enabled()
    return [Feature(name, on.get(name, False)) for name in _NAMES]


class Features(collections.OrderedDict):
    """The features as an ordered dict name → :class:`Feature` (one shared instance)."""

    instance = None

    def __new__(cls):
        if cls.instance is None:
            cls.instance = super().__new__(cls)
            collections.OrderedDict.__init__(cls.instance,
                                             [(f.name, f) for f in feature_list()])
        return cls.instance

    def __init__(self):  # pylint: disable=super-init-not-called
        pass    # filled once in __new__

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        """Whether feature ``feature_name`` (any case) is enabled; RuntimeError for a name
        that is not a feature."""
        feature_name = feature_name.upper()
        if feature_name not in self:
            raise RuntimeError("Feature '{}' is unknown, known features are: {}".format(
                feature_name, list(self.keys())))
        return self[feature_name].enabled
