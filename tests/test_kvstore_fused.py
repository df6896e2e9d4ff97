"""mx.kv with set_optimizer: the sum of the pushed arrays fused into the optimizer's
update op (block by block, no merged array), against the same optimizer run through
an Updater on the NumPy sum; LAMB's two phases in the store against a NumPy
reference and the MXNet 1.9.1 oracle; bad updates naming the op and the key."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import oxnet as mx

ORACLE = os.environ.get("MXNET_PYTHON", "/work/main/benches/.mxnet-venv/bin/python")
CTXS = [mx.cpu(i) for i in range(4)]
# more elements than one fused block (8192 float32) and not a multiple of it, and
# large enough to be split across the pool
N = 3 * 8192 * 4 + 777

OPTIMIZERS = [
    ("sgd", dict(learning_rate=0.1)),
    ("sgd", dict(learning_rate=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5, clip_gradient=0.8)),
    ("nag", dict(learning_rate=0.1, momentum=0.9, wd=0.001)),
    ("adam", dict(learning_rate=0.01, wd=0.001, clip_gradient=0.5)),
    ("rmsprop", dict(learning_rate=0.01)),
    ("rmsprop", dict(learning_rate=0.01, centered=True)),
    ("adagrad", dict(learning_rate=0.1)),
    ("adadelta", dict()),
    ("signum", dict(learning_rate=0.01, momentum=0.9, wd_lh=0.01)),
    ("ftrl", dict(learning_rate=0.1, lamda1=0.01)),
    ("lamb", dict(learning_rate=0.01, wd=0.01, lower_bound=0.001, upper_bound=5.0)),
]


def _grads(rs, nsrc, shape, dtype=np.float32):
    return [(rs.rand(*shape) - 0.5).astype(dtype) for _ in range(nsrc)]


@pytest.mark.parametrize("name,kw", OPTIMIZERS, ids=[o[0] + str(i) for i, o in enumerate(OPTIMIZERS)])
@pytest.mark.parametrize("nsrc", [1, 2, 4, 5])
def test_fused_push_equals_updater_on_the_sum(name, kw, nsrc):
    rs = np.random.RandomState(nsrc)
    w0 = rs.rand(N).astype(np.float32)
    kv = mx.kv.create("local")
    kv.init(7, mx.nd.array(w0))
    kv.set_optimizer(mx.optimizer.create(name, **kw))
    assert kv._optimizer is not None, "the optimizer runs in the store"
    ref = mx.nd.array(w0)
    upd = mx.optimizer.get_updater(mx.optimizer.create(name, **kw))
    for _ in range(3):
        gs = _grads(rs, nsrc, (N,))
        kv.push(7, [mx.nd.array(g, ctx=CTXS[i % 4]) for i, g in enumerate(gs)])
        total = gs[0].copy()
        for g in gs[1:]:
            total = total + g
        upd(7, mx.nd.array(total), ref)
    out = mx.nd.zeros((N,))
    kv.pull(7, out=out)
    np.testing.assert_allclose(out.asnumpy(), ref.asnumpy(), rtol=1e-5, atol=1e-6)
    # the states went through the same steps
    st = kv._updater.states[7]
    st_ref = upd.states[7]
    flat = lambda s: [s] if isinstance(s, mx.nd.NDArray) else [x for x in s if x is not None]  # noqa: E731
    if st is not None:
        for a, b in zip(flat(st), flat(st_ref)):
            np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-6)


def test_fused_push_float16_and_float64_weights():
    rs = np.random.RandomState(3)
    for dtype in (np.float16, np.float64):
        w0 = rs.rand(20000).astype(dtype)
        kv = mx.kv.create("device")
        kv.init("w", mx.nd.array(w0, dtype=dtype))
        opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
        kv.set_optimizer(opt)
        gs = _grads(rs, 3, (20000,), dtype)
        kv.push("w", [mx.nd.array(g, dtype=dtype) for g in gs])
        out = mx.nd.zeros((20000,), dtype=dtype)
        kv.pull("w", out=out)
        # MXNet's merged gradient has the weight's dtype (float16 sums in float32, rounded once)
        acc = np.float32 if dtype == np.float16 else dtype
        total = (gs[0].astype(acc) + gs[1] + gs[2]).astype(dtype)
        want = w0.astype(np.float64) - 0.1 * total.astype(np.float64)
        tol = 2e-3 if dtype == np.float16 else 1e-12
        np.testing.assert_allclose(out.asnumpy().astype(np.float64), want, rtol=tol, atol=tol)


def _lamb_ref(w, gs, steps, lr, wd, b1=0.9, b2=0.999, eps=1e-6, lo=None, hi=None, bc=True, rescale=1.0, clip=None):
    w = w.astype(np.float64)
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for t in range(1, steps + 1):
        g = gs[t - 1].astype(np.float64) * rescale
        if clip is not None:
            g = np.clip(g, -clip, clip)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mh, vh = (m / (1 - b1 ** t), v / (1 - b2 ** t)) if bc else (m, v)
        d = mh / (np.sqrt(vh) + eps) + wd * w
        r1, r2 = np.linalg.norm(w), np.linalg.norm(d)
        if lo is not None:
            r1 = max(r1, lo)
        if hi is not None:
            r1 = min(r1, hi)
        ratio = 1.0 if r1 == 0 or r2 == 0 else r1 / r2
        w = w - lr * ratio * d
    return w


def test_lamb_runs_in_the_store_against_numpy():
    rs = np.random.RandomState(5)
    w0 = rs.rand(3000).astype(np.float32)
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.array(w0))
    kv.set_optimizer(mx.optimizer.LAMB(learning_rate=0.05, wd=0.01, lower_bound=0.5, upper_bound=20.0,
                                       rescale_grad=0.5, clip_gradient=0.2))
    assert kv._optimizer is not None and isinstance(kv._optimizer, mx.optimizer.LAMB)
    sums = []
    for _ in range(4):
        gs = _grads(rs, 3, (3000,))
        kv.push(0, [mx.nd.array(g, ctx=CTXS[i]) for i, g in enumerate(gs)])
        sums.append(gs[0] + gs[1] + gs[2])
    out = mx.nd.zeros((3000,))
    kv.pull(0, out=out)
    want = _lamb_ref(w0, sums, 4, 0.05, 0.01, lo=0.5, hi=20.0, rescale=0.5, clip=0.2)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-4, atol=1e-5)
    assert kv._optimizer._index_update_count[0] == 4


def test_lamb_save_and_load_states_in_the_store(tmp_path):
    f = str(tmp_path / "lamb.states")
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.ones((5,)))
    kv.set_optimizer(mx.optimizer.LAMB(learning_rate=0.1))
    kv.push(0, mx.nd.ones((5,)) * 0.5)
    kv.save_optimizer_states(f)
    mean = kv._updater.states[0][0].asnumpy()
    np.testing.assert_allclose(mean, 0.05, rtol=1e-6)
    kv2 = mx.kv.create("local")
    kv2.init(0, mx.nd.ones((5,)))
    kv2.set_optimizer(mx.optimizer.LAMB(learning_rate=0.1))
    kv2.load_optimizer_states(f)
    kv2.push(0, mx.nd.ones((5,)) * 0.5)
    np.testing.assert_allclose(kv2._updater.states[0][0].asnumpy(), 0.9 * 0.05 + 0.05, rtol=1e-6)


def test_bad_update_names_op_and_key_and_changes_nothing():
    kv = mx.kv.create("local")
    kv.init(2, mx.nd.ones((4,)))
    g = mx.nd.ones((4,))
    mom = mx.nd.zeros((4,))
    with pytest.raises(mx.MXNetError, match=r"sgd_mom_update.*key 2.*mom has shape \(3,\)"):
        kv.handle.push_update([2], [[g]], ["sgd_mom_update"], [{"lr": 0.1, "momentum": 0.9}], [[mx.nd.zeros((3,))]])
    with pytest.raises(mx.MXNetError, match=r"sgd_mom_update.*key 2.*takes 3 inputs"):
        kv.handle.push_update([2], [[g]], ["sgd_mom_update"], [{"lr": 0.1}], [[]])
    with pytest.raises(mx.MXNetError, match=r"adam_update.*key 2.*state is the stored value"):
        kv.handle.push_update([2], [[g]], ["adam_update"], [{"lr": 0.1}], [[mom, kv.handle.stored(2)]])
    # a bad second key: nothing of the first is applied either
    with pytest.raises(mx.MXNetError, match="key 9 has not been inited"):
        kv.handle.push_update([2, 9], [[g], [g]], ["sgd_update"] * 2, [{"lr": 0.1}] * 2, [[], []])
    o = mx.nd.zeros((4,))
    kv.pull(2, out=o)
    np.testing.assert_array_equal(o.asnumpy(), np.ones(4))
    np.testing.assert_array_equal(mom.asnumpy(), np.zeros(4))
    # integer weights: the optimizer op refuses, naming itself and the key
    kvi = mx.kv.create("local")
    kvi.init(0, mx.nd.ones((4,), dtype="int32"))
    kvi.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
    with pytest.raises(mx.MXNetError, match=r"sgd_update.*key 0.*int32 is not supported"):
        kvi.push(0, mx.nd.ones((4,), dtype="int32"))
    oi = mx.nd.zeros((4,), dtype="int32")
    kvi.pull(0, out=oi)
    np.testing.assert_array_equal(oi.asnumpy(), np.ones(4))


SCENARIO = textwrap.dedent("""
    import sys, importlib
    import numpy as np
    mx = importlib.import_module(sys.argv[1])
    kv = mx.kv.create('local'); kv.init(0, mx.nd.array([0.5, -0.25, 1.0, 2.0]))
    kv.set_optimizer(mx.optimizer.LAMB(learning_rate=0.1, wd=0.01, lower_bound=0.1, upper_bound=10.0))
    out = mx.nd.zeros((4,))
    for i in range(3):
        kv.push(0, [mx.nd.array([0.1, -2.0, 0.3, 0.0]) * (i + 1), mx.nd.array([1.0, 0.5, -0.5, 0.25])])
        kv.pull(0, out=out); print(np.round(out.asnumpy(), 4).tolist())
    kv = mx.kv.create('local'); kv.init('w', mx.nd.array([0.5, -0.25, 1.0, 2.0]))
    kv.set_optimizer(mx.optimizer.LAMB(learning_rate=0.05, bias_correction=False, rescale_grad=0.5,
                                       clip_gradient=0.3))
    for i in range(2):
        kv.push('w', mx.nd.array([0.1, -2.0, 0.3, 0.0]) * (i + 1)); kv.pull('w', out=out)
        print(np.round(out.asnumpy(), 4).tolist())
    kv = mx.kv.create('local'); kv.init(3, mx.nd.arange(12).reshape((3, 4)) / 10)
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01))
    o = mx.nd.zeros((3, 4))
    for i in range(3):
        kv.push(3, [mx.nd.ones((3, 4), ctx=mx.cpu(c)) * (c - 1.5) * (i + 1) for c in range(4)])
        kv.pull(3, out=o); print(np.round(o.asnumpy(), 4).tolist())
""")


@pytest.mark.skipif(not os.path.exists(ORACLE), reason="MXNet 1.9.1 oracle not installed")
def test_lamb_and_sgd_in_store_same_as_mxnet(tmp_path):
    script = tmp_path / "scenario.py"
    script.write_text(SCENARIO)
    mine = subprocess.run([sys.executable, str(script), "oxnet"], capture_output=True, text=True, timeout=120)
    assert mine.returncode == 0, mine.stderr[-2000:]
    theirs = subprocess.run([ORACLE, str(script), "mxnet"], capture_output=True, text=True, timeout=300)
    assert theirs.returncode == 0, theirs.stderr[-2000:]
    assert mine.stdout == theirs.stdout
