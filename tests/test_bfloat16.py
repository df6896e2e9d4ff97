"""bfloat16 (MXNet's type flag 12): creation, NumPy interchange through MXNet's
structured stand-in dtype, rounding, arithmetic with float32 accumulation, GEMM,
convolution, gradients, optimizer updates, files, symbols."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon
from oxnet.base import bfloat16


def bf16_round(x):
    """float32 -> nearest-even bfloat16 -> float32, the NumPy reference."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return r.astype(np.uint32).view(np.float32)


def rand(shape, seed=0, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(np.float32)


def test_dtype_object_and_names():
    a = mx.nd.zeros((2, 3), dtype="bfloat16")
    assert a.dtype == bfloat16 == np.dtype([("bfloat16", np.uint16)])
    assert a.dtype.itemsize == 2
    b = mx.nd.ones((2,), dtype=bfloat16)
    assert b.dtype == bfloat16
    np.testing.assert_array_equal(b.astype("float32").asnumpy(), [1, 1])
    from oxnet.ndarray.ndarray import _DTYPE_NP_TO_MX, _DTYPE_MX_TO_NP
    assert _DTYPE_NP_TO_MX[bfloat16] == 12 and _DTYPE_MX_TO_NP[12] == bfloat16


def test_asnumpy_gives_the_bits_in_mxnets_structured_dtype():
    a = mx.nd.array([1.5, 2.7, -3.1]).astype("bfloat16")
    n = a.asnumpy()
    assert n.dtype == bfloat16
    # 1.5 is exact; 2.7 and -3.1 round to nearest even.
    assert n.view(np.uint16).tolist() == [0x3FC0, 0x402D, 0xC046]
    # The structured array goes back in unchanged.
    c = mx.nd.array(n, dtype=n.dtype)
    assert c.dtype == bfloat16
    np.testing.assert_array_equal(c.asnumpy().view(np.uint16), n.view(np.uint16))


def test_cast_rounds_to_nearest_even_like_the_reference():
    x = np.concatenate([rand((1000,), 1, -1e4, 1e4), rand((1000,), 2, -1e-3, 1e-3),
                        np.array([0.0, -0.0, np.inf, -np.inf, 3.0e38, 1e-40], np.float32)])
    got = mx.nd.array(x).astype("bfloat16").astype("float32").asnumpy()
    np.testing.assert_array_equal(got, bf16_round(x))
    nan = mx.nd.array([np.nan]).astype("bfloat16").astype("float32").asnumpy()
    assert np.isnan(nan).all()


def test_array_from_floats_with_dtype_bfloat16():
    x = rand((3, 4), 3)
    a = mx.nd.array(x, dtype="bfloat16")
    assert a.dtype == bfloat16
    np.testing.assert_array_equal(a.astype("float32").asnumpy(), bf16_round(x))
    b = mx.nd.array([[1.0, 2.5], [3.25, -4.0]], dtype="bfloat16")
    np.testing.assert_array_equal(b.astype("float32").asnumpy(), [[1.0, 2.5], [3.25, -4.0]])
    c = mx.nd.zeros((2, 2), dtype="bfloat16")
    c[:] = x[:2, :2]
    np.testing.assert_array_equal(c.astype("float32").asnumpy(), bf16_round(x[:2, :2]))
    c[0, 1] = 7.0
    assert c.astype("float32").asnumpy()[0, 1] == 7.0
    assert c[0, 1].asscalar() == np.float32(7.0)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum"])
def test_binary_ops_compute_in_float32_and_round_once(op):
    x, y = bf16_round(rand((4, 5), 4)), bf16_round(rand((4, 5), 5, 0.5, 2.0))
    a, b = mx.nd.array(x, dtype="bfloat16"), mx.nd.array(y, dtype="bfloat16")
    f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "maximum": np.maximum}[op]
    g = {"add": lambda p, q: p + q, "sub": lambda p, q: p - q, "mul": lambda p, q: p * q,
         "div": lambda p, q: p / q, "maximum": mx.nd.maximum}[op]
    out = g(a, b)
    assert out.dtype == bfloat16
    np.testing.assert_array_equal(out.astype("float32").asnumpy(), bf16_round(f(x, y)))


def test_broadcast_unary_and_reductions():
    x, y = bf16_round(rand((3, 4), 6)), bf16_round(rand((1, 4), 7))
    a, b = mx.nd.array(x, dtype="bfloat16"), mx.nd.array(y, dtype="bfloat16")
    np.testing.assert_array_equal(mx.nd.broadcast_add(a, b).astype("float32").asnumpy(), bf16_round(x + y))
    np.testing.assert_array_equal(mx.nd.exp(a).astype("float32").asnumpy(), bf16_round(np.exp(x)))
    s = mx.nd.sum(a, axis=1).astype("float32").asnumpy()
    np.testing.assert_allclose(s, x.sum(axis=1), rtol=1e-2, atol=1e-2)
    m = mx.nd.max(a, axis=0).astype("float32").asnumpy()
    np.testing.assert_array_equal(m, x.max(axis=0))
    assert mx.nd.argmax(a, axis=1).astype("float32").asnumpy().tolist() == x.argmax(axis=1).tolist()


def test_dot_and_fully_connected_accumulate_in_float32():
    x, w = bf16_round(rand((8, 64), 8)), bf16_round(rand((16, 64), 9))
    a, b = mx.nd.array(x, dtype="bfloat16"), mx.nd.array(w, dtype="bfloat16")
    d = mx.nd.dot(a, b, transpose_b=True)
    assert d.dtype == bfloat16
    # One rounding of the float32 product.
    np.testing.assert_allclose(d.astype("float32").asnumpy(), bf16_round(x @ w.T), rtol=1e-2, atol=1e-2)
    fc = mx.nd.FullyConnected(a, b, num_hidden=16, no_bias=True)
    np.testing.assert_array_equal(fc.asnumpy().view(np.uint16), d.asnumpy().view(np.uint16))
    bd = mx.nd.batch_dot(a.reshape((2, 4, 64)), b.reshape((1, 16, 64)).broadcast_to((2, 16, 64)), transpose_b=True)
    np.testing.assert_array_equal(bd.reshape((8, 16)).asnumpy().view(np.uint16), d.asnumpy().view(np.uint16))


def test_convolution_pooling_batchnorm_in_bfloat16():
    x, w = bf16_round(rand((2, 3, 8, 8), 10)), bf16_round(rand((4, 3, 3, 3), 11))
    ref = mx.nd.Convolution(mx.nd.array(x), mx.nd.array(w), kernel=(3, 3), pad=(1, 1), num_filter=4, no_bias=True)
    out = mx.nd.Convolution(mx.nd.array(x, dtype="bfloat16"), mx.nd.array(w, dtype="bfloat16"), kernel=(3, 3),
                            pad=(1, 1), num_filter=4, no_bias=True)
    assert out.dtype == bfloat16
    np.testing.assert_allclose(out.astype("float32").asnumpy(), ref.asnumpy(), rtol=1e-2, atol=2e-2)
    p = mx.nd.Pooling(out, kernel=(2, 2), stride=(2, 2), pool_type="max")
    np.testing.assert_array_equal(p.astype("float32").asnumpy(),
                                  out.astype("float32").asnumpy().reshape(2, 4, 4, 2, 4, 2).max(axis=(3, 5)))
    # BatchNorm: bfloat16 data with float32 parameters (what AMP produces).
    g, b = mx.nd.ones((4,)), mx.nd.zeros((4,))
    mm, mv = mx.nd.zeros((4,)), mx.nd.ones((4,))
    with autograd.train_mode():
        y = mx.nd.BatchNorm(out, g, b, mm, mv, fix_gamma=False)
    assert y.dtype == bfloat16
    yf = y.astype("float32").asnumpy()
    np.testing.assert_allclose(yf.mean(axis=(0, 2, 3)), 0, atol=3e-2)
    np.testing.assert_allclose(yf.std(axis=(0, 2, 3)), 1, atol=3e-2)


def test_gradients_flow_through_bfloat16_and_amp_cast():
    x = mx.nd.array(rand((4, 6), 12))
    w = mx.nd.array(rand((3, 6), 13))
    w.attach_grad()
    with autograd.record():
        y = mx.nd.FullyConnected(mx.nd.amp_cast(x, dtype="bfloat16"), mx.nd.amp_cast(w, dtype="bfloat16"),
                                 num_hidden=3, no_bias=True)
        loss = mx.nd.sum(mx.nd.amp_cast(y, dtype="float32"))
    loss.backward()
    assert w.grad.dtype == np.float32
    # d loss / d w = sum over rows of x (through bfloat16 roundings).
    np.testing.assert_allclose(w.grad.asnumpy(), np.tile(bf16_round(x.asnumpy()).sum(axis=0), (3, 1)),
                               rtol=2e-2, atol=2e-2)


def test_sgd_momentum_update_on_bfloat16_weights():
    w = bf16_round(rand((10,), 14))
    g = bf16_round(rand((10,), 15))
    wb, gb, mom = mx.nd.array(w, dtype="bfloat16"), mx.nd.array(g, dtype="bfloat16"), mx.nd.zeros((10,), dtype="bfloat16")
    mx.nd.sgd_mom_update(wb, gb, mom, lr=0.1, momentum=0.9, wd=0.0, out=wb)
    np.testing.assert_allclose(wb.astype("float32").asnumpy(), bf16_round(w - 0.1 * g), rtol=1e-2, atol=1e-2)


def test_params_file_round_trip_keeps_bfloat16(tmp_path):
    a = mx.nd.array(rand((3, 5), 16), dtype="bfloat16")
    f = str(tmp_path / "x.params")
    mx.nd.save(f, {"a": a})
    b = mx.nd.load(f)["a"]
    assert b.dtype == bfloat16
    np.testing.assert_array_equal(b.asnumpy().view(np.uint16), a.asnumpy().view(np.uint16))
    # The type flag in the file is MXNet's 12.
    raw = open(f, "rb").read()
    assert (12).to_bytes(4, "little") in raw


def test_symbol_infers_and_runs_bfloat16():
    data = mx.sym.var("data", dtype="bfloat16")
    net = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    arg_types, out_types, _ = net.infer_type(data="bfloat16")
    assert out_types[0] == bfloat16
    assert all(t == bfloat16 for t in arg_types)
    x = rand((2, 5), 17)
    ex = net.simple_bind(mx.cpu(), data=(2, 5), type_dict={"data": "bfloat16"})
    ex.arg_dict["data"][:] = x
    ex.arg_dict["fc_weight"][:] = 0.5
    ex.arg_dict["fc_bias"][:] = 0.0
    out = ex.forward()[0]
    assert out.dtype == bfloat16
    np.testing.assert_allclose(out.astype("float32").asnumpy(), np.tile(0.5 * bf16_round(x).sum(axis=1, keepdims=True), (1, 4)),
                               rtol=1e-2, atol=1e-2)


def test_gluon_dense_cast_to_bfloat16():
    net = gluon.nn.Dense(3, in_units=4)
    net.initialize()
    net.cast("bfloat16")
    assert net.weight.data().dtype == bfloat16
    x = mx.nd.array(rand((2, 4), 18), dtype="bfloat16")
    y = net(x)
    assert y.dtype == bfloat16
    ref = bf16_round(x.astype("float32").asnumpy()) @ net.weight.data().astype("float32").asnumpy().T
    np.testing.assert_allclose(y.astype("float32").asnumpy(), ref, rtol=2e-2, atol=2e-2)


def test_bad_bfloat16_input_is_a_clear_error():
    a = mx.nd.zeros((2, 2), dtype="bfloat16")
    with pytest.raises(mx.base.MXNetError, match="topk|dtype"):
        mx.nd.topk(mx.nd.array([1.0, 2.0]), k=1, dtype="bfloat16")
    # Nothing was lost.
    assert a.astype("float32").asnumpy().sum() == 0


@pytest.mark.parametrize("data,param", [("float16", np.float32), ("bfloat16", np.float32), ("float32", np.float32),
                                        ("float64", np.float64)])
def test_batchnorm_infers_float32_parameters_under_half_data(data, param):
    # MXNet 1.9.1: float16 data gets float32 gamma/beta/moving statistics.
    s = mx.sym.BatchNorm(mx.sym.var("data"), name="bn")
    args, outs, aux = s.infer_type(data=data)
    assert args[1:] == [param, param] and aux == [param, param]
    assert mx.base.dtype_name(outs[0]) == data
    ex = s.simple_bind(mx.cpu(), data=(2, 3, 4), type_dict={"data": data})
    assert ex.arg_dict["bn_gamma"].dtype == param and ex.aux_dict["bn_moving_var"].dtype == param
    ex.arg_dict["data"][:] = rand((2, 3, 4), 19)
    ex.arg_dict["bn_gamma"][:] = 1.0
    ex.arg_dict["bn_beta"][:] = 0.0
    ex.aux_dict["bn_moving_var"][:] = 1.0
    ex.aux_dict["bn_moving_mean"][:] = 0.0
    out = ex.forward(is_train=False)[0]
    np.testing.assert_allclose(out.astype("float32").asnumpy(), ex.arg_dict["data"].astype("float32").asnumpy() / np.sqrt(1 + 1e-3),
                               rtol=1e-2, atol=1e-2)
