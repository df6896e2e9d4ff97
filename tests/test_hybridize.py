"""hybridize(): the traced graph runs as one cached op, and must agree with the
imperative run in outputs, gradients, auxiliary-state updates and training; export
writes MXNet's files and SymbolBlock.imports reads them (MXNet-written fixtures)."""

import os

import numpy as np
import pytest

import oxnet as mx
from oxnet import autograd, gluon, nd
from oxnet.gluon import nn

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "fixtures", "gluon")
MXNetError = mx.base.MXNetError


def _lenet(prefix=None):
    net = nn.HybridSequential(prefix=prefix)
    with net.name_scope():
        net.add(nn.Conv2D(channels=20, kernel_size=5, activation="relu"))
        net.add(nn.MaxPool2D(pool_size=2, strides=2))
        net.add(nn.Conv2D(channels=50, kernel_size=5, activation="relu"))
        net.add(nn.MaxPool2D(pool_size=2, strides=2))
        net.add(nn.Flatten())
        net.add(nn.Dense(500, activation="relu"))
        net.add(nn.Dense(10))
    return net


def _copy_params(src, dst):
    for (_, a), (_, b) in zip(sorted(src.collect_params().items()),
                              sorted(dst.collect_params().items())):
        b.set_data(a.data())


def _grads(net):
    return {k: p.grad().asnumpy() for k, p in net.collect_params().items()
            if p.grad_req != "null"}


def _step(net, x, y, loss):
    with autograd.record():
        out = net(x)
        L = loss(out, y)
    L.backward()
    return out.asnumpy(), L.asnumpy()


def test_lenet_hybridized_matches_imperative_outputs_and_grads():
    rs = np.random.RandomState(0)
    x = nd.array(rs.rand(8, 1, 28, 28))
    y = nd.array(rs.randint(0, 10, 8))
    imp = _lenet()
    hyb = _lenet()
    imp.initialize(mx.init.Xavier(magnitude=2.24))
    hyb.initialize(mx.init.Xavier(magnitude=2.24))
    imp(x)
    hyb(x)
    _copy_params(imp, hyb)
    hyb.hybridize()
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    o1, l1 = _step(imp, x, y, loss)
    o2, l2 = _step(hyb, x, y, loss)
    np.testing.assert_allclose(o2, o1, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(l2, l1, rtol=1e-4, atol=1e-5)
    g1, g2 = _grads(imp), _grads(hyb)
    assert len(g1) == 8
    for (k1, v1), (k2, v2) in zip(sorted(g1.items()), sorted(g2.items())):
        np.testing.assert_allclose(v2, v1, rtol=1e-3, atol=1e-5, err_msg=k2)
    # the traced graph is one symbol over the data and the parameters
    inputs, out = hyb._cached_graph
    assert [i.name for i in inputs] == ["data"]
    assert set(out.list_arguments()) == {"data"} | set(hyb.collect_params().keys())
    assert hyb._cached_op.num_compiled() == 1


def test_deferred_init_through_the_traced_graph_and_new_shapes_compile_once_each():
    net = _lenet()
    net.initialize()
    net.hybridize()
    assert net[0].weight.shape == (20, 0, 5, 5)
    out = net(nd.ones((2, 1, 28, 28)))
    assert out.shape == (2, 10)
    assert net[0].weight.shape == (20, 1, 5, 5)
    assert net[5].weight.shape == (500, 800)
    net(nd.ones((3, 1, 28, 28)))
    net(nd.ones((2, 1, 28, 28)))
    assert net._cached_op.num_compiled() == 2


def test_inference_outputs_are_fresh_arrays():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(3, in_units=2))
    net.initialize(mx.init.One())
    net.hybridize()
    a = net(nd.array([[1, 2]]))
    b = net(nd.array([[3, 4]]))
    np.testing.assert_allclose(a.asnumpy(), [[3, 3, 3]])
    np.testing.assert_allclose(b.asnumpy(), [[7, 7, 7]])


def test_batchnorm_dropout_modes_match_imperative():
    def make():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Dense(6, in_units=4))
            net.add(nn.BatchNorm(momentum=0.5))
            net.add(nn.Dropout(0.5))
        net.initialize(mx.init.Xavier())
        return net
    x = nd.array(np.random.RandomState(1).randn(5, 4))
    imp, hyb = make(), make()
    imp(x)
    hyb(x)
    _copy_params(imp, hyb)
    hyb.hybridize()
    for net in (imp, hyb):
        with autograd.record(train_mode=True):
            out = net(x)
        out.backward()
    bn_i, bn_h = imp[1], hyb[1]
    np.testing.assert_allclose(bn_h.running_mean.data().asnumpy(),
                               bn_i.running_mean.data().asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn_h.running_var.data().asnumpy(),
                               bn_i.running_var.data().asnumpy(), rtol=1e-5, atol=1e-6)
    assert not np.allclose(bn_h.running_mean.data().asnumpy(), 0)
    # predict mode: dropout is the identity and BatchNorm uses the running stats
    np.testing.assert_allclose(hyb(x).asnumpy(), imp(x).asnumpy(), rtol=1e-5, atol=1e-6)
    # training mode: dropout zeroes about half
    with autograd.train_mode():
        d = hyb(x).asnumpy()
    assert 0.1 < (d == 0).mean() < 0.9


class _TwoInTwoOut(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.dense = nn.Dense(3, in_units=2)
            self.scale = self.params.get("scale", shape=(1, 3), init=mx.init.Constant(2.0))

    def hybrid_forward(self, F, a, b, scale):
        h = self.dense(a)
        return F.broadcast_mul(h, scale) + b, F.sum(h * h)


def test_two_inputs_two_outputs_and_reused_block_gradients():
    blk = _TwoInTwoOut()
    blk.initialize(mx.init.One())
    a = nd.array([[1.0, 2.0], [0.5, -1.0]])
    b = nd.array([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])
    with autograd.record():
        y1, s1 = blk(a, b)
        L = y1.sum() + s1
    L.backward()
    ref = {k: p.grad().asnumpy().copy() for k, p in blk.collect_params().items()}
    blk.hybridize()
    with autograd.record():
        y2, s2 = blk(a, b)
        L2 = y2.sum() + s2
    L2.backward()
    np.testing.assert_allclose(y2.asnumpy(), y1.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(s2.asnumpy(), s1.asnumpy(), rtol=1e-6)
    for k, p in blk.collect_params().items():
        np.testing.assert_allclose(p.grad().asnumpy(), ref[k], rtol=1e-5, err_msg=k)
    assert [i.name for i in blk._cached_graph[0]] == ["data0", "data1"]
    # the same hybridized block used twice in one recorded graph: gradients add up
    with autograd.record():
        z = blk(a, b)[0].sum() + blk(a * 2, b)[0].sum()
    z.backward()
    blk.hybridize(False)
    with autograd.record():
        z2 = blk(a, b)[0].sum() + blk(a * 2, b)[0].sum()
    z2.backward()
    g_imp = blk.dense.weight.grad().asnumpy().copy()
    blk.hybridize()
    with autograd.record():
        z3 = blk(a, b)[0].sum() + blk(a * 2, b)[0].sum()
    z3.backward()
    np.testing.assert_allclose(blk.dense.weight.grad().asnumpy(), g_imp, rtol=1e-5)


def test_grad_req_add_accumulates_through_cached_op():
    net = nn.Dense(2, in_units=3)
    net.initialize(mx.init.One())
    net.hybridize()
    net.collect_params().setattr("grad_req", "add")
    x = nd.array([[1.0, 2.0, 3.0]])
    for _ in range(3):
        with autograd.record():
            net(x).sum().backward()
    np.testing.assert_allclose(net.weight.grad().asnumpy(), np.tile([[3.0, 6.0, 9.0]], (2, 1)))


def test_input_gradient_flows_through_cached_op():
    net = nn.Dense(2, in_units=3)
    net.initialize(mx.init.One())
    net.hybridize()
    x = nd.array([[1.0, 2.0, 3.0]])
    x.attach_grad()
    with autograd.record():
        y = (net(x) * 3).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [[6.0, 6.0, 6.0]])


def test_hybridized_seed_cnn_trains_like_imperative():
    rs = np.random.RandomState(3)
    x = nd.array(rs.rand(16, 1, 28, 28))
    y = nd.array(rs.randint(0, 10, 16))
    nets = [_lenet(), _lenet()]
    for net in nets:
        net.initialize(mx.init.Xavier(magnitude=2.24))
        net(x)
    _copy_params(nets[0], nets[1])
    nets[1].hybridize()
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    curves = []
    for net in nets:
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
        curve = []
        for _ in range(8):
            with autograd.record():
                L = loss(net(x), y)
            L.backward()
            trainer.step(16)
            curve.append(L.mean().asscalar())
        curves.append(curve)
    np.testing.assert_allclose(curves[1], curves[0], rtol=2e-3)
    assert curves[1][-1] < curves[1][0], curves[1]


def test_shape_error_names_block_and_layer_and_keeps_params():
    net = nn.HybridSequential(prefix="model_")
    with net.name_scope():
        net.add(nn.Dense(4, in_units=3))
    net.initialize(mx.init.One())
    net.hybridize()
    before = net[0].weight.data().asnumpy().copy()
    with pytest.raises(MXNetError) as e:
        net(nd.ones((2, 5)))
    msg = str(e.value)
    assert "model" in msg and "model_dense0_fwd" in msg and "FullyConnected" in msg, msg
    np.testing.assert_array_equal(net[0].weight.data().asnumpy(), before)
    assert net(nd.ones((2, 3))).shape == (2, 4)


def test_export_and_symbolblock_imports_round_trip(tmp_path):
    net = _lenet(prefix="lenet_")
    net.initialize(mx.init.Xavier())
    x = nd.array(np.random.RandomState(5).rand(2, 1, 28, 28))
    with pytest.raises(RuntimeError, match="hybridize"):
        net.export(str(tmp_path / "none"))
    net.hybridize()
    y = net(x).asnumpy()
    path = str(tmp_path / "lenet")
    net.export(path, epoch=3)
    assert os.path.exists(path + "-symbol.json") and os.path.exists(path + "-0003.params")
    saved = nd.load(path + "-0003.params")
    assert sorted(saved) == sorted("arg:" + k for k in net.collect_params().keys())
    blk = gluon.SymbolBlock.imports(path + "-symbol.json", ["data"], path + "-0003.params")
    np.testing.assert_allclose(blk(x).asnumpy(), y, rtol=1e-5, atol=1e-6)
    assert sorted(blk.collect_params().keys()) == sorted(net.collect_params().keys())
    # a SymbolBlock composes with symbols too
    s = blk(mx.sym.var("data"))
    assert s.list_arguments() == mx.sym.load(path + "-symbol.json").list_arguments()


def test_symbolblock_imports_mxnet_exported_bn_cnn():
    io = np.load(os.path.join(FIX, "bncnn_io.npz"))
    blk = gluon.SymbolBlock.imports(os.path.join(FIX, "bncnn-symbol.json"), ["data"],
                                    os.path.join(FIX, "bncnn-0000.params"))
    names = blk.collect_params().keys()
    assert "bncnn_batchnorm0_running_mean" in names
    assert blk.collect_params()["bncnn_batchnorm0_running_mean"].grad_req == "null"
    np.testing.assert_allclose(blk(nd.array(io["x"])).asnumpy(), io["y"], rtol=1e-5, atol=1e-5)
    # training through the imported graph: gradients reach the parameters
    with autograd.record():
        blk(nd.array(io["x"])).sum().backward()
    assert np.abs(blk.collect_params()["bncnn_dense0_weight"].grad().asnumpy()).sum() > 0


def test_symbolblock_from_symbols_with_deferred_shapes():
    data = mx.sym.var("data")
    out = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    out = mx.sym.Activation(out, act_type="relu", name="act")
    blk = gluon.SymbolBlock(out, data)
    blk.initialize(mx.init.One())
    y = blk(nd.ones((2, 3)))
    # as in MXNet, the graph's bias has no initializer of its own: One() sets it too
    np.testing.assert_allclose(y.asnumpy(), np.full((2, 4), 4.0))
    assert blk.collect_params()["fc_weight"].shape == (4, 3)
    with pytest.raises(MXNetError, match="not a variable"):
        gluon.SymbolBlock(out, out)


def test_nd_cachedop_follows_list_inputs_order_and_records():
    data = mx.sym.var("data")
    w = mx.sym.var("w")
    bn = mx.sym.BatchNorm(mx.sym.FullyConnected(data, w, num_hidden=2, no_bias=True,
                                                 name="fc"), fix_gamma=False, name="bn")
    op = nd.CachedOp(bn)
    names = bn.list_inputs()
    assert names[:2] == ["data", "w"] and "bn_moving_mean" in names
    vals = {"data": nd.array([[1.0, 2.0], [3.0, -1.0]]), "w": nd.array([[1.0, 0.0], [0.0, 1.0]]),
            "bn_gamma": nd.ones(2), "bn_beta": nd.zeros(2),
            "bn_moving_mean": nd.array([1.0, 0.5]), "bn_moving_var": nd.array([4.0, 1.0])}
    args = [vals[n] for n in names]
    y = op(*args)
    want = (vals["data"].asnumpy() - [1.0, 0.5]) / np.sqrt(np.array([4.0, 1.0]) + 1e-3)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-5)
    vals["w"].attach_grad()
    with autograd.record():
        op(*args).sum().backward()
    assert vals["w"].grad.shape == (2, 2)
    # the recorded (training) call updated the running statistics
    assert vals["bn_moving_mean"].asnumpy()[0] != 1.0
    out = nd.zeros((2, 2))
    assert op(*args, out=out) is out
    np.testing.assert_allclose(out.asnumpy(), op(*args).asnumpy(), rtol=1e-6)
    with pytest.raises(MXNetError, match="takes 6"):
        op(vals["data"])
