"""oxnet has every public name of MXNet 1.9.1's modules that this project mirrors.

The lists under tests/fixtures/mxnet_names were taken from MXNet 1.9.1 (``dir()`` of each
module, public names only, without its ctypes plumbing: handles, ``check_call``,
``c_array``, ``ctypes``...). A name may be left out here only when it belongs to another
open issue (or has none yet, said so), each with its reason."""

import importlib
import os

import pytest

import oxnet

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "mxnet_names")

MODULES = {"mx": "oxnet", "optimizer": "oxnet.optimizer", "initializer": "oxnet.initializer",
           "kvstore": "oxnet.kvstore", "random": "oxnet.random", "autograd": "oxnet.autograd",
           "test_utils": "oxnet.test_utils", "util": "oxnet.util", "runtime": "oxnet.runtime",
           "base": "oxnet.base", "engine": "oxnet.engine"}

_NUMPY_API = "MXNet's NumPy interface (mx.np/npx); no issue filed for it yet"
_RANDOM_OPS = "random sampling ops: issue 16 (operator surface, random)"

EXCLUDED = {
    "mx": {
        "contrib": "issue 20 (contrib ops, AMP, ...)",
        "profiler": "issue 20 (profiler)",
        "library": "issue 20 (external operator libraries, with CustomOp)",
        "image": "issue 18 (data pipeline: mx.image)",
        "img": "issue 18 (alias of mx.image)",
        "recordio": "issue 18 (data pipeline: RecordIO)",
        "rtc": "issue 22 (GPU: user CUDA kernels compiled at run time)",
        "rnn": "issue 17, legacy symbolic RNN part (BucketingModule workstream)",
        "executor_manager": "issue 17, Module part (legacy executor manager)",
        "notebook": "issue 17, Module callbacks part (pandas/bokeh notebook loggers)",
        "ndarray_doc": "MXNet's doc-generation internals; no issue",
        "symbol_doc": "MXNet's doc-generation internals; no issue",
        "tvmop": "TVM-generated operators (runtime reports TVM_OP off); no issue",
        "th": "MXNet's Torch plugin (needs its Torch build); no issue",
        "torch": "MXNet's Torch plugin (needs its Torch build); no issue",
        "np": _NUMPY_API, "npx": _NUMPY_API, "numpy": _NUMPY_API,
        "numpy_extension": _NUMPY_API, "numpy_dispatch_protocol": _NUMPY_API,
        "numpy_op_fallback": _NUMPY_API, "numpy_op_signature": _NUMPY_API,
        "np_symbol": _NUMPY_API,
    },
    "optimizer": {"contrib": "issue 20 (contrib optimizers: GroupAdaGrad on sparse rows)"},
    "random": {n: _RANDOM_OPS for n in ("exponential", "gamma", "generalized_negative_binomial",
                                          "multinomial", "negative_binomial", "poisson",
                                          "shuffle")},
    "test_utils": {"np_symbol": _NUMPY_API},
}


def _names(key):
    with open(os.path.join(HERE, key + ".txt")) as f:
        return [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]


@pytest.mark.parametrize("key", sorted(MODULES))
def test_has_mxnet_public_names(key):
    mod = importlib.import_module(MODULES[key])
    names = _names(key)
    assert len(names) > 1
    excluded = EXCLUDED.get(key, {})
    stale = [n for n in excluded if n not in names]
    assert not stale, "exclusions for names MXNet does not have: %s" % stale
    optional = set()
    if key == "test_utils":
        # MXNet imports `requests` into test_utils only when it is installed.
        try:
            import requests  # noqa: F401
        except ImportError:
            optional.add("requests")
    missing = [n for n in names if n not in excluded and n not in optional
               and not hasattr(mod, n)]
    assert not missing, "oxnet.%s lacks MXNet 1.9.1's %s" % (key, missing)


def test_star_import_of_test_utils_gives_mx_and_np():
    scope = {}
    exec("from oxnet.test_utils import *", scope)  # noqa: S102
    assert scope["mx"] is oxnet and scope["np"].__name__ == "numpy"
    for name in ("environment", "assert_almost_equal", "rand_ndarray", "default_context",
                 "check_consistency", "Features", "rnd"):
        assert name in scope


def test_exclusions_give_reasons():
    for table in EXCLUDED.values():
        for name, why in table.items():
            assert why and ("issue" in why), (name, why)
