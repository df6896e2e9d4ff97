"""Every registered operator, driven with random inputs and attribute strings.

Each call must end in a result or an MXNetError raised at the call or when the result
is read: never a Rust panic (pyo3's PanicException), another exception type, a crash or
a hang. Inputs mix shapes (scalar, zero-size, small, mismatched), every dtype, and
attribute strings that are valid, malformed, out of range or absurdly large (element
counts that overflow, sizes no machine holds).

`make test` runs OXNET_OP_FUZZ_CASES (default 8) cases per op with fixed seeds; a long
campaign sets it (and OXNET_OP_FUZZ_SEED) higher:

    OXNET_OP_FUZZ_CASES=2000 OXNET_OP_FUZZ_SEED=1 python -m pytest tests/test_op_fuzz.py -n 2

(tests/op_fuzz_campaign.py runs seed after seed for a given time.)
"""

import os
import random
import sys

import numpy as np
import pytest

import oxnet as mx
from oxnet import _core
from oxnet.base import MXNetError, _Null

CASES = int(os.environ.get("OXNET_OP_FUZZ_CASES", "8"))
SEED = int(os.environ.get("OXNET_OP_FUZZ_SEED", "0"))
# OXNET_OP_FUZZ_TRACE=1: print each case to stderr before calling (to name the case
# that crashes a process)
TRACE = os.environ.get("OXNET_OP_FUZZ_TRACE") == "1"

OPS = sorted({canonical for _name, canonical in _core.list_ops()})

SHAPES = [(), (0,), (1,), (3,), (2, 3), (3, 2), (0, 3), (1, 3, 4), (2, 3, 4), (2, 1, 4, 4),
          (1, 2, 5, 5), (2, 3, 4, 5), (1, 1, 1, 1, 1), (2, 2, 3, 3, 3), (4, 4), (5,)]
DTYPES = ["float32"] * 6 + ["float64"] * 2 + ["float16", "int32", "int64", "uint8", "int8", "bool"]

# attribute strings: valid-looking, malformed, out of range, and sizes no machine holds
GENERIC = ["0", "1", "-1", "2", "3", "-3", "7", "0.5", "-0.5", "1e30", "-1e30", "nan", "inf",
           "abc", "", "None", "True", "False", "(2,3)", "(0,)", "(-1,)", "()", "[1, 2]",
           "(1,2,3,4,5,6,7,8,9,10)", "float16", "int64", "18446744073709551617",
           "9223372036854775807", "-9223372036854775808", "(1099511627776, 1099511627776)",
           "1099511627776", "(", "((1,2),(3,4))", "'x'", "\x00", "1,2"]
SHAPE_ATTR = ["(2,3)", "(0,)", "(3,)", "(1,1)", "(-1,)", "(2,-1)", "(0,-1)", "(-2,)", "(-3,)",
              "(-4,1,-1)", "(1099511627776, 1099511627776)", "(9223372036854775807,2)", "()",
              "(4294967296, 4294967296, 4294967296)", "(2,3,4,5,6,7,8,9)"]
AXIS_ATTR = ["0", "1", "-1", "2", "-2", "5", "-7", "(0,1)", "(1,0)", "(0,0)", "()", "None",
             "9223372036854775807"]
DTYPE_ATTR = ["float32", "float64", "float16", "int32", "int64", "uint8", "int8", "bool",
              "bfloat16", "complex64", "float128", "None", "x"]


def _attr_value(rng, name):
    lname = name.lower()
    pools = [GENERIC]
    if "shape" in lname or lname in ("reps", "kernel", "stride", "pad", "dilate", "begin", "end",
                                     "step", "size", "scale", "adj", "target_shape", "sizes"):
        pools.append(SHAPE_ATTR)
    if "axis" in lname or "axes" in lname or lname == "dim":
        pools.append(AXIS_ATTR)
    if "dtype" in lname or lname == "out_type":
        pools.append(DTYPE_ATTR)
    return rng.choice(rng.choice(pools))


def _array(rng, shape, dtype):
    nrng = np.random.default_rng(rng.randrange(1 << 31))
    if dtype == "bool":
        data = nrng.random(shape) < 0.5
    elif dtype.startswith("float"):
        data = nrng.normal(0, 2, size=shape)
    elif dtype == "uint8":
        data = nrng.integers(0, 255, size=shape)
    else:
        data = nrng.integers(-5, 6, size=shape)
    return mx.nd.array(np.asarray(data), dtype=dtype)


def _case(rng, op):
    """Random inputs (a list: None marks an input left out) and attributes for `op`."""
    names = list(op.input_names)
    if op.variadic:
        names = [op.variadic] * rng.randrange(0, 4)
    base = rng.choice(SHAPES)
    dtype = rng.choice(DTYPES)
    inputs = []
    for _ in names:
        r = rng.random()
        if r < 0.1:
            inputs.append(None)
            continue
        # mostly one shape and dtype throughout (so that ops get past their checks),
        # sometimes a mismatched one
        shape = base if r < 0.75 else rng.choice(SHAPES)
        dt = dtype if rng.random() < 0.85 else rng.choice(DTYPES)
        inputs.append(_array(rng, shape, dt))
    attrs = {}
    for p in op.param_names:
        if p == "ctx":
            continue
        if rng.random() < 0.45:
            attrs[p] = _attr_value(rng, p)
    if rng.random() < 0.1:
        attrs["no_such_attribute"] = "1"
    return inputs, attrs


def _force(res):
    """Reads every array the call produced (deferred errors surface here)."""
    if isinstance(res, (list, tuple)):
        for r in res:
            _force(r)
    elif isinstance(res, mx.nd.NDArray):
        res.wait_to_read()
    elif hasattr(res, "wait_to_read"):  # sparse arrays
        res.wait_to_read()


def _describe(inputs, attrs):
    ins = ["None" if a is None else "%s%s" % (a.dtype.__name__ if hasattr(a.dtype, "__name__")
                                              else a.dtype, a.shape) for a in inputs]
    return "inputs=[%s] attrs=%r" % (", ".join(ins), attrs)


@pytest.mark.parametrize("name", OPS)
def test_op_gives_a_result_or_mxneterror(name):
    op = _core.get_op(name)
    rng = random.Random("%s/%d" % (name, SEED))
    nulls = tuple(_Null for _ in op.param_names)
    for _ in range(CASES):
        inputs, attrs = _case(rng, op)
        if TRACE:  # a crash kills the process: name the case first
            sys.stderr.write("%s: %s\n" % (name, _describe(inputs, attrs)))
            sys.stderr.flush()
        try:
            res = _core.invoke(op, tuple(inputs), nulls, None, attrs)
            _force(res)
        except MXNetError:
            pass
        except BaseException as e:  # PanicException is a BaseException
            raise AssertionError("%s: %s: %s raised %s: %s" % (
                name, _describe(inputs, attrs), "call", type(e).__name__, e)) from e
    # the engine is still healthy afterwards
    np.testing.assert_array_equal((mx.nd.ones((2,)) + 1).asnumpy(), [2, 2])


# Cases the long campaigns found crashing the process, kept as they were drawn.
CRASHES = [
    # output (1, 2^40, 2^40, 5): its element count wrapped to 0, the output was
    # allocated empty and the resize then asked for terabytes (an abort, not an error)
    ("_image_resize", [(1, 2, 5, 5), "float64"], {"size": "(1099511627776, 1099511627776)"}),
    # an empty axis divides into any number of parts: 2^40 output descriptions
    ("SliceChannel", [(0,), "float32"], {"num_outputs": "1099511627776", "axis": "-1"}),
]


@pytest.mark.parametrize("name, data, attrs", CRASHES)
def test_campaign_crashes_are_errors(name, data, attrs):
    op = _core.get_op(name)
    x = mx.nd.array(np.ones(data[0]), dtype=data[1])
    with pytest.raises(MXNetError, match="%s.*(more bytes than memory can address|out of range)"
                       % name):
        _force(_core.invoke(op, (x,), tuple(_Null for _ in op.param_names), None, attrs))
    np.testing.assert_array_equal(x.asnumpy(), np.ones(data[0]))


def test_shapes_whose_element_count_overflows_are_errors():
    # 2^40 * 2^30 * 2^10 elements wraps a 64-bit count to 0
    with pytest.raises(MXNetError, match="too large|more bytes than memory can address"):
        mx.nd.zeros((1 << 40, 1 << 30, 1 << 10))
    with pytest.raises(MXNetError, match="broadcast_to.*more bytes than memory can address"):
        mx.nd.broadcast_to(mx.nd.ones((1, 1, 1)), shape=(1 << 40, 1 << 30, 1 << 10))
