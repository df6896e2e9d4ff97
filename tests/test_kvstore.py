"""mx.kv: semantics (against NumPy and, where installed, the MXNet 1.9.1 oracle),
the optimizer inside the store, gradient compression, threads hammering the
lock-free key table against a sequential replay, and bad input."""

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import oxnet as mx

ORACLE = os.environ.get("MXNET_PYTHON", "/work/main/benches/.mxnet-venv/bin/python")
SHAPE = (3, 3)
CTXS = [mx.cpu(i) for i in range(4)]


def test_type_rank_workers_and_reserved_names():
    kv = mx.kv.create("local")
    assert (kv.type, kv.rank, kv.num_workers) == ("local", 0, 1)
    assert mx.kv.create("device").type == "device"
    assert mx.kvstore.create().type == "local"
    kv.barrier()
    kv._barrier()
    # (the dist_* stores are MPI jobs: tests/test_dist_kvstore.py)
    assert mx.kv.create("nccl").type == "nccl"
    with pytest.raises(mx.MXNetError, match="unknown kvstore type 'bogus'"):
        mx.kv.create("bogus")


def test_push_sums_and_pull_fills_every_output():
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.ones(SHAPE) * 2)
    vals = [np.random.rand(*SHAPE).astype(np.float32) for _ in CTXS]
    kv.push(3, [mx.nd.array(v, ctx=c) for v, c in zip(vals, CTXS)])
    outs = [mx.nd.zeros(SHAPE, c) for c in CTXS]
    kv.pull(3, out=outs)
    want = vals[0] + vals[1] + vals[2] + vals[3]
    for o, c in zip(outs, CTXS):
        assert o.context == c
        np.testing.assert_allclose(o.asnumpy(), want, rtol=1e-6)
    # the stored value is a copy: changing the init array or the outputs changes nothing
    outs[0][:] = 0
    o = mx.nd.zeros(SHAPE)
    kv.pull(3, out=o)
    np.testing.assert_allclose(o.asnumpy(), want, rtol=1e-6)


def test_list_keys_str_keys_and_dtypes():
    kv = mx.kv.create("local")
    keys = ["a", "b", "c"]
    kv.init(keys, [mx.nd.ones((2,), dtype=d) for d in ("float32", "float64", "int32")])
    kv.push(keys, [[mx.nd.ones((2,), dtype=d)] * 3 for d in ("float32", "float64", "int32")])
    outs = [mx.nd.zeros((2,), dtype=d) for d in ("float32", "float64", "int32")]
    kv.pull(keys, out=outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), [3, 3])


def test_updater_gets_key_merged_and_stored():
    kv = mx.kv.create("local")
    kv.init("w", mx.nd.ones((2,)))
    seen = []

    def upd(key, merged, stored):
        seen.append((key, merged.asnumpy().tolist(), stored.asnumpy().tolist()))
        stored[:] = stored * 10 + merged

    kv._set_updater(upd)
    kv.push("w", [mx.nd.ones((2,), c) * (i + 1) for i, c in enumerate(CTXS[:3])])
    assert seen == [(b"w", [6.0, 6.0], [1.0, 1.0])]  # str keys reach updaters as bytes, as in MXNet
    out = mx.nd.zeros((2,))
    kv.pull("w", out=out)
    np.testing.assert_array_equal(out.asnumpy(), [16, 16])


def test_pushpull_and_broadcast():
    kv = mx.kv.create("device")
    kv.init(0, mx.nd.zeros((4,)))
    v = mx.nd.arange(4)
    kv.pushpull(0, v)
    np.testing.assert_array_equal(v.asnumpy(), [0, 1, 2, 3])
    out = mx.nd.zeros((4,))
    kv.pushpull(0, [mx.nd.ones((4,)), mx.nd.ones((4,))], out=out)
    np.testing.assert_array_equal(out.asnumpy(), [2, 2, 2, 2])
    outs = [mx.nd.zeros((2,), c) for c in CTXS[:2]]
    kv.broadcast(7, mx.nd.array([5, 6]), out=outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), [5, 6])


def test_set_optimizer_runs_sgd_momentum_in_store():
    kv = mx.kv.create("local")
    w0 = np.random.rand(5).astype(np.float32)
    kv.init([0, 1], [mx.nd.array(w0), mx.nd.array(w0)])
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01))
    grads = [np.random.rand(5).astype(np.float32) for _ in range(6)]
    for i in range(3):
        kv.push([0, 1], [[mx.nd.array(grads[2 * i]), mx.nd.array(grads[2 * i + 1])],
                         mx.nd.array(grads[2 * i] + grads[2 * i + 1])])
    w, m = w0.copy(), np.zeros(5, np.float32)
    for i in range(3):
        g = grads[2 * i] + grads[2 * i + 1]
        m = 0.9 * m - 0.1 * 0.01 * w - 0.1 * g
        w = w + m
    outs = [mx.nd.zeros((5,)), mx.nd.zeros((5,))]
    kv.pull([0, 1], out=outs)
    for o in outs:
        np.testing.assert_allclose(o.asnumpy(), w, rtol=1e-5)
    assert kv._optimizer.num_update == 3


def test_save_and_load_optimizer_states(tmp_path):
    def run(load_from=None, save_to=None):
        kv = mx.kv.create("local")
        kv.init(0, mx.nd.ones((3,)))
        kv.set_optimizer(mx.optimizer.Adam(learning_rate=0.1))
        if load_from:
            kv.load_optimizer_states(load_from)
        kv.push(0, mx.nd.ones((3,)))
        if save_to:
            kv.save_optimizer_states(save_to, dump_optimizer=True)
        return kv

    f = str(tmp_path / "states")
    kv = run(save_to=f)
    mean = kv._updater.states[0][0].asnumpy()
    kv2 = run(load_from=f)
    # the loaded mean went through a second step
    np.testing.assert_allclose(kv2._updater.states[0][0].asnumpy(), 0.9 * mean + 0.1, rtol=1e-6)
    assert kv2._optimizer._index_update_count[0] == 2


def test_gradient_compression_2bit_on_device():
    kv = mx.kv.create("device")
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init(1, mx.nd.zeros((4,)))
    g = [0.3, 0.6, -0.7, 2.0]
    out = mx.nd.zeros((4,))
    kv.push(1, [mx.nd.array(g, ctx=c) for c in CTXS[:2]])
    kv.pull(1, out=out)
    np.testing.assert_array_equal(out.asnumpy(), [0, 1, -1, 1])
    kv.push(1, [mx.nd.array(g, ctx=c) for c in CTXS[:2]])  # residuals carry over
    kv.pull(1, out=out)
    np.testing.assert_array_equal(out.asnumpy(), [1, 1, -1, 1])
    with pytest.raises(mx.MXNetError, match="Unknown type for gradient compression 1bit"):
        kv.set_gradient_compression({"type": "1bit"})
    with pytest.raises(mx.MXNetError, match="not supported for this type of kvstore"):
        mx.kv.create("local").set_gradient_compression({"type": "2bit", "threshold": 0.5})


def test_push_pull_are_asynchronous_and_ordered():
    kv = mx.kv.create("local")
    big = (1000, 1000)
    kv.init(0, mx.nd.zeros(big))
    out = mx.nd.zeros(big)
    for i in range(5):
        kv.push(0, [mx.nd.ones(big) * i, mx.nd.ones(big)])
    kv.pull(0, out=out)
    kv.push(0, mx.nd.ones(big) * 100)  # after the pull in engine order
    assert out[0, 0].asscalar() == 5.0


# ---- the hammer ------------------------------------------------------------------

def test_threads_hammer_against_sequential_replay():
    nkeys, nthreads, rounds = 1000, 8, 4
    kv = mx.kv.create("local")
    init = np.random.RandomState(1).rand(nkeys, 4).astype(np.float32)
    kv.init(list(range(nkeys)), [mx.nd.array(r) for r in init])
    logs = [[] for _ in range(nthreads)]
    errors = []

    def work(t):
        try:
            rs = np.random.RandomState(100 + t)
            mine = [k for k in range(nkeys) if k % nthreads == t]
            for _ in range(rounds):
                rs.shuffle(mine)
                for k in mine:
                    if rs.rand() < 0.6:
                        vals = [rs.rand(4).astype(np.float32) for _ in range(rs.randint(1, 4))]
                        kv.push(k, [mx.nd.array(v, ctx=CTXS[i % 4]) for i, v in enumerate(vals)])
                        logs[t].append(("push", k, vals))
                    else:
                        outs = [mx.nd.zeros((4,), CTXS[i]) for i in range(rs.randint(1, 3))]
                        kv.pull(k, out=outs)
                        logs[t].append(("pull", k, outs))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(nthreads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    mx.nd.waitall()
    state = {k: init[k].copy() for k in range(nkeys)}
    npull = 0
    for log in logs:
        for op, k, payload in log:
            if op == "push":
                s = payload[0].copy()
                for v in payload[1:]:
                    s = s + v
                state[k] = s
            else:
                for o in payload:
                    np.testing.assert_array_equal(o.asnumpy(), state[k])
                    npull += 1
    assert npull > 1000
    outs = [mx.nd.zeros((4,)) for _ in range(nkeys)]
    kv.pull(list(range(nkeys)), out=outs)
    for k in range(nkeys):
        np.testing.assert_array_equal(outs[k].asnumpy(), state[k])


# ---- bad input --------------------------------------------------------------------

def _stored(kv, key, shape=SHAPE):
    o = mx.nd.zeros(shape)
    kv.pull(key, out=o)
    return o.asnumpy()


def test_bad_input_names_key_and_changes_nothing():
    kv = mx.kv.create("local")
    kv.init(3, mx.nd.ones(SHAPE))
    with pytest.raises(mx.MXNetError, match="key 4 has not been inited"):
        kv.pull(4, out=mx.nd.zeros(SHAPE))
    with pytest.raises(mx.MXNetError, match="key 4 has not been inited"):
        kv.push([3, 4], [mx.nd.ones(SHAPE) * 5, mx.nd.ones(SHAPE)])
    with pytest.raises(mx.MXNetError, match="duplicate init of key 3"):
        kv.init([5, 3], [mx.nd.ones(SHAPE), mx.nd.ones(SHAPE) * 9])
    with pytest.raises(mx.MXNetError, match="key 5 has not been inited"):
        kv.pull(5, out=mx.nd.zeros(SHAPE))
    with pytest.raises(mx.MXNetError, match=r"shape mismatch for key 3: array 1 has shape \(2, 3\)"):
        kv.push(3, [mx.nd.ones(SHAPE), mx.nd.ones((2, 3))])
    with pytest.raises(mx.MXNetError, match="dtype mismatch for key 3: array 0 is float64"):
        kv.push(3, mx.nd.ones(SHAPE, dtype="float64"))
    with pytest.raises(mx.MXNetError, match=r"pull: shape mismatch for key 3"):
        kv.pull(3, out=[mx.nd.zeros(SHAPE), mx.nd.zeros((3, 4))])
    with pytest.raises(mx.MXNetError, match="Mixed key types"):
        kv.init("a", mx.nd.ones(SHAPE))
    with pytest.raises(mx.MXNetError, match="Mixed key types"):
        kv.push([3, "a"], [mx.nd.ones(SHAPE), mx.nd.ones(SHAPE)])
    with pytest.raises(mx.MXNetError, match="2 keys but 1 values"):
        kv.pull([3, 3], out=[mx.nd.zeros(SHAPE)])
    with pytest.raises(mx.MXNetError, match="must be an NDArray"):
        kv.push(3, np.ones(SHAPE))
    np.testing.assert_array_equal(_stored(kv, 3), np.ones(SHAPE))
    # with an updater, a bad key in a list runs no updater at all
    calls = []
    kv._set_updater(lambda k, m, s: calls.append(k))
    with pytest.raises(mx.MXNetError, match="key 8 has not been inited"):
        kv.push([3, 8], [mx.nd.ones(SHAPE), mx.nd.ones(SHAPE)])
    assert calls == []
    np.testing.assert_array_equal(_stored(kv, 3), np.ones(SHAPE))


# ---- against the MXNet 1.9.1 oracle -----------------------------------------------

SCENARIO = textwrap.dedent("""
    import sys, importlib
    import numpy as np
    mx = importlib.import_module(sys.argv[1])
    ctxs = [mx.cpu(i) for i in range(4)]
    def show(a):
        print(np.round(a.asnumpy(), 5).tolist())
    kv = mx.kv.create('local')
    kv.init([1, 2], [mx.nd.arange(6).reshape((2, 3)), mx.nd.ones((2, 3))])
    kv.push([1, 2], [[mx.nd.ones((2, 3), c) * (i + 1) for i, c in enumerate(ctxs)], mx.nd.ones((2, 3)) * 7])
    o = [mx.nd.zeros((2, 3)), mx.nd.zeros((2, 3))]
    kv.pull([1, 2], out=o); show(o[0]); show(o[1])
    def upd(k, m, s):
        print('upd', k); s[:] = s * 0.5 + m
    # (a fresh store: after a push without updater MXNet's stored value aliases the
    # merge buffer or the pushed array; oxnet always keeps its own copy)
    kvu = mx.kv.create('local'); kvu.init(1, mx.nd.ones((2, 3)) * 10)
    kvu._set_updater(upd)
    kvu.pushpull(1, [mx.nd.ones((2, 3)), mx.nd.ones((2, 3))], out=o[0]); show(o[0])
    kvs = mx.kv.create('local'); kvs.init('x', mx.nd.ones((2,)))
    kvs._set_updater(upd); kvs.push('x', mx.nd.ones((2,)))
    kvo = mx.kv.create('device')
    kvo.init(0, mx.nd.array([0.5, -0.25, 1.0]))
    kvo.set_optimizer(mx.optimizer.create('sgd', learning_rate=0.1, momentum=0.9, wd=0.01))
    out = mx.nd.zeros((3,))
    for i in range(3):
        kvo.push(0, [mx.nd.array([0.1, 0.2, -0.3]) * (i + 1), mx.nd.array([1.0, 0.0, 0.5])])
        kvo.pull(0, out=out); show(out)
    kva = mx.kv.create('local'); kva.init(0, mx.nd.array([0.5, -0.25, 1.0]))
    kva.set_optimizer(mx.optimizer.Adam(learning_rate=0.01, wd=0.001, rescale_grad=0.5, clip_gradient=0.4))
    for i in range(3):
        kva.push(0, mx.nd.array([0.1, -2.0, 0.3]) * (i + 1)); kva.pull(0, out=out); show(out)
    kvc = mx.kv.create('device'); kvc.set_gradient_compression({'type': '2bit', 'threshold': 0.25})
    kvc.init(0, mx.nd.zeros((4,)))
    oc = mx.nd.zeros((4,))
    for i in range(3):
        kvc.push(0, [mx.nd.array([0.1, 0.3, -0.2, 0.9], ctx=c) for c in ctxs[:3]]); kvc.pull(0, out=oc); show(oc)
""")


@pytest.mark.skipif(not os.path.exists(ORACLE), reason="MXNet 1.9.1 oracle not installed")
def test_same_output_as_mxnet(tmp_path):
    script = tmp_path / "scenario.py"
    script.write_text(SCENARIO)
    mine = subprocess.run([sys.executable, str(script), "oxnet"], capture_output=True, text=True, timeout=120)
    assert mine.returncode == 0, mine.stderr[-2000:]
    theirs = subprocess.run([ORACLE, str(script), "mxnet"], capture_output=True, text=True, timeout=300)
    assert theirs.returncode == 0, theirs.stderr[-2000:]
    assert mine.stdout == theirs.stdout


def test_nccl_store_with_host_arrays_sums_like_device():
    """Arrays on the host go the 'device' way in an 'nccl' store (NCCL is for GPUs)."""
    kv = mx.kv.create("nccl")
    kv.init(7, mx.nd.zeros((3, 2)))
    kv.push(7, [mx.nd.ones((3, 2)) * (i + 1) for i in range(3)])
    out = [mx.nd.zeros((3, 2)), mx.nd.zeros((3, 2))]
    kv.pull(7, out=out)
    for o in out:
        np.testing.assert_array_equal(o.asnumpy(), np.full((3, 2), 6.0))
