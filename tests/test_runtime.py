"""mx.runtime, mx.engine, mx.util and mx.base additions, as MXNet 1.9.1 has them."""

import threading

import pytest

import oxnet as mx
from oxnet import base, util
from oxnet.runtime import Feature, Features, feature_list


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def test_features_are_mxnets_names_and_report_this_build():
    f = Features()
    assert f is Features()
    assert list(f)[:3] == ["CUDA", "CUDNN", "NCCL"] and len(f) == 32
    assert f.is_enabled("cuda") and f["CUDA"].enabled        # built in, needs a GPU to run
    for name in ("CUDNN", "NCCL", "DIST_KVSTORE", "TVM_OP", "MKLDNN", "OPENMP"):
        assert not f.is_enabled(name)
    flags = _cpu_flags()
    if flags is not None and "sse2" in flags:
        assert f.is_enabled("CPU_SSE2")
        assert f.is_enabled("CPU_AVX2") == ("avx2" in flags)
    assert repr(f["CUDNN"]) == "✖ CUDNN" and repr(f["CUDA"]) == "✔ CUDA"
    assert repr(f).startswith("[✔ CUDA, ✖ CUDNN")
    with pytest.raises(RuntimeError, match="Feature 'NOPE' is unknown"):
        f.is_enabled("nope")
    assert all(isinstance(x, Feature) for x in feature_list())


def test_bulk_size_is_returned_and_restored_per_thread():
    prev = mx.engine.set_bulk_size(7)
    try:
        assert mx.engine.set_bulk_size(5) == 7
        with mx.engine.bulk(12):
            assert mx.engine.set_bulk_size(12) == 12
            x = mx.nd.ones((3,))
            x += 1
        assert mx.engine.set_bulk_size(5) == 5
        seen = []
        t = threading.Thread(target=lambda: seen.append(mx.engine.set_bulk_size(3)))
        t.start()
        t.join()
        assert seen == [0]
        assert (x.asnumpy() == 2).all()
        with pytest.raises(TypeError):
            mx.engine.set_bulk_size(1.5)
    finally:
        mx.engine.set_bulk_size(prev)


def test_np_shape_scopes_and_thread_locality():
    assert not util.is_np_shape()
    with mx.np_shape(True):
        assert mx.is_np_shape()
        seen = []
        t = threading.Thread(target=lambda: seen.append(util.is_np_shape()))
        t.start()
        t.join()
        assert seen == [False]           # per-thread setting
    assert not util.is_np_shape()
    prev = util.set_np_shape(2)          # every thread
    try:
        seen = []
        t = threading.Thread(target=lambda: seen.append(util.is_np_shape()))
        t.start()
        t.join()
        assert prev is False and seen == [True]
    finally:
        util.set_np_shape(0)
    assert not util.is_np_shape()

    @util.use_np
    def inside():
        return util.is_np_shape(), util.is_np_array()
    assert inside() == (True, True)
    assert (util.is_np_shape(), util.is_np_array()) == (False, False)
    with util.np_array(True):
        with pytest.raises(ValueError, match="Deactivating NumPy shape"):
            util.set_np_shape(False)
    util.set_np()
    try:
        assert util.is_np_shape() and util.is_np_array()
    finally:
        util.reset_np()
    assert not util.is_np_array()
    with pytest.raises(ValueError):
        util.set_np(shape=False, array=True)


def test_util_env_and_ufunc_wrappers():
    util.setenv("OXNET_TEST_UTIL_VAR", "3")
    assert util.getenv("OXNET_TEST_UTIL_VAR") == "3"
    util.setenv("OXNET_TEST_UTIL_VAR", None)
    assert util.getenv("OXNET_TEST_UTIL_VAR") is None
    f = util.wrap_np_unary_func(lambda x, out=None: x + 1)
    assert f(1, casting="same_kind") == 2
    with pytest.raises(TypeError):
        f(1, bogus=1)
    with pytest.raises(NotImplementedError):
        f(1, where=False)
    assert util.np_ufunc_legal_option("order", "C")
    assert not util.np_ufunc_legal_option("where", False)


def test_base_helpers():
    assert base._as_list(3) == [3] and base._as_list((1, 2)) == (1, 2)
    assert base.py_str(b"ab") == "ab" and base.py_str("ab") == "ab"

    def fn():
        pass
    e = base.NotImplementedForSymbol(fn, "+", 1)
    assert isinstance(e, base.MXNetError)
    assert str(e) == ("Function fn (namely operator \"+\") with arguments (<class 'int'>) "
                      "is not implemented for Symbol and only available in NDArray.")
    assert base.error_types["NotImplementedForSymbol"] is base.NotImplementedForSymbol
    assert "Parameters\n----------\na : int\n    doc" in base.build_param_doc(["a"], ["int"],
                                                                          ["doc"])

    class C(metaclass=base._ClassPropertyMeta):
        _v = 1

        @base.classproperty
        def v(cls):
            return cls._v

        @v.setter
        def v(cls, val):
            cls._v = val
    assert C.v == 1
    C.v = 5
    assert C.v == 5 and C._v == 5


def test_thread_local_class_properties():
    scope = mx.AttrScope(a="1")
    mx.AttrScope.current = scope
    seen = []
    t = threading.Thread(target=lambda: seen.append(mx.AttrScope.current))
    t.start()
    t.join()
    assert mx.AttrScope.current is scope and seen[0] is not scope
    mx.AttrScope.current = mx.AttrScope()
    with pytest.warns(DeprecationWarning):
        assert mx.Context.default_ctx == mx.current_context()
    mgr = mx.name.NameManager()
    mx.name.NameManager.current = mgr
    assert mx.name.NameManager.current is mgr and mx.name.current() is mgr
    mx.name.NameManager.current = mx.name.NameManager()
