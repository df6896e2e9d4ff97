"""KVStore types as MXNet 1.9.1 names them: registered Python stores (KVStoreBase.register,
'teststore'), the native kinds and their `type`, KVStoreServer on a single process."""

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError
from oxnet.kvstore import KVStoreBase, KVStoreServer


@pytest.mark.parametrize("name,kind", [("local", "local"), ("local_allreduce_cpu", "local"),
                                       ("local_update_cpu", "local"), ("Device", "device"),
                                       ("local_allreduce_device", "device")])
def test_native_types_keep_their_name(name, kind):
    kv = mx.kv.create(name)
    assert kv.type == name.lower() and kv.handle.type == kind
    assert kv.is_capable(KVStoreBase.OPTIMIZER)
    kv.init(3, mx.nd.ones((2, 2)))
    kv.push(3, [mx.nd.ones((2, 2)) * 2, mx.nd.ones((2, 2)) * 3])
    out = mx.nd.zeros((2, 2))
    kv.pull(3, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 2), 5.0))


def test_unknown_and_distributed_types_are_clear_errors():
    with pytest.raises(MXNetError, match="unknown kvstore type 'nosuch'"):
        mx.kv.create("nosuch")
    # outside an MPI job (or without mpi4py) a distributed store says what is missing
    with pytest.raises(MXNetError, match="no server ranks|mpi4py"):
        mx.kv.create("dist_sync")
    with pytest.raises(TypeError):
        mx.kv.create(3)


def test_teststore_sums_and_broadcasts():
    kv = mx.kv.create("teststore")
    assert type(kv).__name__ == "TestStore" and kv.type == "teststore"
    assert kv.rank == 0 and kv.num_workers == 1
    assert not type(kv).is_capable("optimizer")
    with pytest.raises(ValueError):
        kv.is_capable("compression")
    outs = [mx.nd.zeros((3,)) for _ in range(2)]
    kv.broadcast("a", mx.nd.ones((3,)) * 4, outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), [4, 4, 4])
    vals = [mx.nd.ones((3,), ctx=mx.cpu(i)) * (i + 1) for i in range(3)]
    kv.pushpull("a", vals, out=outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), [6, 6, 6])
    kv.pushpull("a", vals)
    for v in vals:
        np.testing.assert_array_equal(v.asnumpy(), [6, 6, 6])
    for call in (lambda: kv.set_optimizer(mx.optimizer.SGD()),
                 lambda: kv.save_optimizer_states("f"), lambda: kv.load_optimizer_states("f")):
        with pytest.raises(NotImplementedError):
            call()


def test_register_a_custom_store():
    @KVStoreBase.register
    class MyStore(KVStoreBase):
        def broadcast(self, key, value, out, priority=0):
            out[:] = value * 10

        @property
        def type(self):
            return "mystore"

    try:
        kv = mx.kv.create("MyStore")
        assert isinstance(kv, MyStore) and kv.type == "mystore"
        out = mx.nd.zeros((1,))
        kv.broadcast(0, mx.nd.ones((1,)), out)
        assert out.asscalar() == 10
        with pytest.warns(UserWarning, match="overriding"):
            KVStoreBase.register(MyStore)
        with pytest.raises(TypeError):
            KVStoreBase.register(int)
    finally:
        KVStoreBase.kv_registry.pop("mystore", None)


def test_kvstore_server_on_a_single_process():
    kv = mx.kv.create("local")
    server = KVStoreServer(kv)
    assert server.run() is None
    import pickle
    server._controller()(0, pickle.dumps(mx.optimizer.SGD(learning_rate=0.5)), None)
    assert kv._optimizer is not None or kv._updater is not None
