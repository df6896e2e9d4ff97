"""Module details as MXNet 1.9.1: outputs merged along each output's __layout__ batch
axis, backward on a module without parameters, batches without labels, the
_exec_group view; DataParallelExecutorGroup binding, splitting and sharing."""

from collections import namedtuple

import numpy as np
import pytest

import oxnet as mx
from oxnet import nd
from oxnet.module.executor_group import DataParallelExecutorGroup


def test_layout_batch_axis_merge_and_no_param_backward():
    sym = mx.sym.Activation(mx.sym.Variable("data"), act_type="relu", __layout__="TNC")
    mod = mx.mod.Module(sym, ("data",), None, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[mx.io.DataDesc("data", (3, 8, 2), layout="TNC")])
    mod.init_params()
    x = np.random.RandomState(0).uniform(-1, 1, (3, 8, 2)).astype(np.float32)
    mod.forward(mx.io.DataBatch(data=[nd.array(x)], label=None))
    mod.backward([nd.ones((3, 8, 2))])           # nothing to differentiate: no error
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), np.maximum(x, 0))
    assert [o.shape for o in mod.get_outputs(merge_multi_context=False)[0]] == [(3, 4, 2)] * 2


def test_batch_without_label_and_exec_group_view():
    Batch = namedtuple("Batch", ["data"])
    sym = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    mod = mx.mod.Module(sym, label_names=None)
    assert mod._exec_group is None
    mod.bind(data_shapes=[("data", (2, 4))])
    mod.init_params()
    mod.forward(Batch([nd.ones((2, 4))]))
    assert mod.get_outputs()[0].shape == (2, 3)
    group = mod._exec_group
    assert group.param_names == ["fc_weight", "fc_bias"]
    assert group.execs[0] is mod._execs[0]
    mod.init_optimizer()
    assert mod._optimizer.idx2name == dict(enumerate(group.param_names))
    with pytest.raises(TypeError):
        mx.mod.Module(sym, label_names=None).bind(data_shapes=[("data", nd.ones((2,)))])


def _fc_sym(n):
    x = mx.sym.Variable("data")
    for i in range(n):
        x = mx.sym.FullyConnected(x, num_hidden=4, name="fc%d" % i)
    return x


def test_executor_group_split_forward_and_sharing():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    sym1 = _fc_sym(1)
    params1 = [n for n in sym1.list_arguments() if n != "data"]
    g1 = DataParallelExecutorGroup(sym1, ctxs, [1, 3], [("data", (8, 5))], None, params1,
                                   for_training=True, inputs_need_grad=False)
    assert [s.stop - s.start for s in g1.slices] == [2, 6]
    assert sorted(g1.shared_data_arrays[0]) == ["data"]
    assert g1.grad_req["fc0_weight"] == "write" and g1.grad_req["data"] == "null"
    rng = np.random.RandomState(0)
    w = rng.uniform(-1, 1, (4, 5)).astype(np.float32)
    b = rng.uniform(-1, 1, (4,)).astype(np.float32)
    g1.set_params({"fc0_weight": nd.array(w), "fc0_bias": nd.array(b)}, {})
    x = rng.uniform(-1, 1, (8, 5)).astype(np.float32)
    g1.forward(mx.io.DataBatch(data=[nd.array(x)], label=None), is_train=True)
    np.testing.assert_allclose(g1.get_outputs()[0].asnumpy(), x @ w.T + b, rtol=1e-5)
    g1.backward([nd.ones((8, 4))])
    grads = [e.grad_dict["fc0_weight"].asnumpy() for e in g1.execs]
    np.testing.assert_allclose(grads[0] + grads[1], np.ones((8, 4)).T @ x, rtol=1e-5)
    # a deeper net shares fc0 with g1; its other parameters join the shared inputs
    sym2 = _fc_sym(2)
    g2 = DataParallelExecutorGroup(sym2, ctxs, [1, 3], [("data", (8, 5))], None, params1,
                                   for_training=True, inputs_need_grad=False, shared_group=g1)
    for e1, e2 in zip(g1.execs, g2.execs):
        assert e2.arg_dict["fc0_weight"] is e1.arg_dict["fc0_weight"]
        assert e2.grad_dict["fc0_weight"] is e1.grad_dict["fc0_weight"]
    assert g2.shared_data_arrays is g1.shared_data_arrays
    assert sorted(g1.shared_data_arrays[0]) == ["data", "fc1_bias", "fc1_weight"]
    with pytest.raises(mx.MXNetError):
        DataParallelExecutorGroup(sym1, ctxs, [1, 0], [("data", (8, 5))], None, params1,
                                  for_training=True, inputs_need_grad=False)


@pytest.mark.parametrize("update_on_kvstore", ["1", "0"])
def test_multi_device_module_updates_through_kvstore(update_on_kvstore, monkeypatch, tmp_path):
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", update_on_kvstore)
    rng = np.random.RandomState(0)
    w0 = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    x = rng.uniform(-1, 1, (6, 4)).astype(np.float32)
    sym = mx.sym.make_loss(mx.sym.sum(mx.sym.FullyConnected(
        mx.sym.Variable("data"), num_hidden=3, no_bias=True, name="fc")))
    mod = mx.mod.Module(sym, ("data",), None, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[("data", (6, 4))])
    mod.init_params(arg_params={"fc_weight": nd.array(w0)})
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    assert (mod._kvstore is not None) and mod._update_on_kvstore == (update_on_kvstore == "1")
    w, mom = w0.copy(), np.zeros_like(w0)
    for _ in range(2):
        mod.forward_backward(mx.io.DataBatch([nd.array(x)]))
        mod.update()
        grad = np.ones((6, 3)).T @ x / 6          # rescale_grad = 1 / batch size
        mom = 0.9 * mom - 0.1 * grad
        w = w + mom
    np.testing.assert_allclose(mod.get_params()[0]["fc_weight"].asnumpy(), w, rtol=1e-5)
    fname = str(tmp_path / "m.states")
    mod.save_optimizer_states(fname)
    mod.load_optimizer_states(fname)
    mod.forward_backward(mx.io.DataBatch([nd.array(x)]))
    mod.update()
    mom = 0.9 * mom - 0.1 * grad
    np.testing.assert_allclose(mod.get_params()[0]["fc_weight"].asnumpy(), w + mom, rtol=1e-5)


def test_module_keeps_grad_req_as_given():
    sym = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
    mod = mx.mod.Module(sym, ("data",), None)
    mod.bind(data_shapes=[("data", (2, 3))], grad_req="add")
    assert mod._grad_req == "add"
    assert mod._exec_group.grad_req["fc_weight"] == "add"
    assert mod._exec_group.grad_req["data"] == "null"
