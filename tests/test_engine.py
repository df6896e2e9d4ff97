"""The dependency engine: random DAGs of thousands of ops over shared arrays, pushed
from several Python threads, must equal a sequential NumPy replay; deferred errors
flow to dependents and are raised (then cleared) at the next blocking call."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import oxnet as mx

N_ARRAYS = 12
SHAPE = (16, 33)


def _random_program(rng, n_ops):
    """A list of (kind, dst, src1, src2, scalar) over N_ARRAYS slots."""
    prog = []
    for _ in range(n_ops):
        kind = rng.choice(["axpy", "iadd", "imul", "assign", "rowset", "view_add", "new"])
        d, s1, s2 = rng.randint(0, N_ARRAYS, size=3)
        prog.append((kind, int(d), int(s1), int(s2), float(rng.uniform(-0.9, 0.9))))
    return prog


def _apply_mx(arrs, step):
    kind, d, s1, s2, k = step
    if kind == "axpy":
        arrs[d][:] = arrs[s1] * k + arrs[s2] * 0.5
    elif kind == "iadd":
        arrs[d] += arrs[s1] * k
    elif kind == "imul":
        arrs[d] *= k
    elif kind == "assign":
        arrs[d][:] = arrs[s1]
    elif kind == "rowset":
        arrs[d][3] = arrs[s1][5] - k
    elif kind == "view_add":
        v = arrs[d][2:9]
        v += arrs[s1][4:11] * k
    elif kind == "new":
        arrs[d] = mx.nd.tanh(arrs[s1] + arrs[s2])


def _apply_np(arrs, step):
    kind, d, s1, s2, k = step
    if kind == "axpy":
        arrs[d][:] = arrs[s1] * k + arrs[s2] * 0.5
    elif kind == "iadd":
        arrs[d] += arrs[s1] * k
    elif kind == "imul":
        arrs[d] *= k
    elif kind == "assign":
        arrs[d][:] = arrs[s1]
    elif kind == "rowset":
        arrs[d][3] = arrs[s1][5] - k
    elif kind == "view_add":
        arrs[d][2:9] += arrs[s1][4:11] * k
    elif kind == "new":
        arrs[d] = np.tanh(arrs[s1] + arrs[s2])


def _init():
    rng = np.random.RandomState(1)
    base = [rng.uniform(-1, 1, SHAPE) for _ in range(N_ARRAYS)]
    return [mx.nd.array(b, dtype="float64") for b in base], [b.copy() for b in base]


def test_single_thread_random_dag_matches_replay():
    arrs, ref = _init()
    prog = _random_program(np.random.RandomState(2), 3000)
    for step in prog:
        _apply_mx(arrs, step)
    for step in prog:
        _apply_np(ref, step)
    for a, r in zip(arrs, ref):
        np.testing.assert_allclose(a.asnumpy(), r, rtol=1e-9, atol=1e-12)


@pytest.fixture
def max_pending(request):
    """Sets the engine's bound on pending ops for one test (None: leave the default)."""
    old = mx._core._engine_max_pending()
    if request.param is not None:
        mx._core._engine_max_pending(request.param)
    yield request.param
    mx.nd.waitall()
    mx._core._engine_max_pending(old)


@pytest.mark.parametrize("max_pending", [None, 1, 3, 0], indirect=True)
def test_threads_pushing_on_shared_arrays_match_replay_of_push_order(max_pending):
    """Threads push concurrently; a lock only records the order in which steps were
    pushed (the engine must run them in that order per array), execution stays async.
    With a tiny bound on pending ops, pushing threads are held back (with the GIL
    released) while others hold the lock: same results, no deadlock."""
    arrs, ref = _init()
    log = []
    lock = threading.Lock()
    errors = []

    def worker(seed):
        try:
            for step in _random_program(np.random.RandomState(seed), 700):
                with lock:
                    _apply_mx(arrs, step)
                    log.append(step)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(10 + i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    mx.nd.waitall()
    for step in log:
        _apply_np(ref, step)
    for a, r in zip(arrs, ref):
        np.testing.assert_allclose(a.asnumpy(), r, rtol=1e-9, atol=1e-12)


def test_threads_with_private_arrays_and_shared_inputs_run_unlocked():
    shared = mx.nd.array(np.linspace(-1, 1, 64 * 64).reshape(64, 64), dtype="float64")
    shared_np = shared.asnumpy()
    results = {}

    def worker(i):
        x = mx.nd.zeros((64, 64), dtype="float64")
        for j in range(400):
            x += shared * (1.0 / (j + 1 + i))
            if j % 7 == 0:
                x *= 0.5
        results[i] = x

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, x in results.items():
        want = np.zeros((64, 64))
        for j in range(400):
            want += shared_np * (1.0 / (j + 1 + i))
            if j % 7 == 0:
                want *= 0.5
        np.testing.assert_allclose(x.asnumpy(), want, rtol=1e-9)


@pytest.mark.parametrize("max_pending", [8], indirect=True)
def test_pushing_thread_is_held_back_at_the_bound(max_pending):
    """A thread may run at most `max_pending` ops ahead: after each push, no more than
    the bound plus the op just pushed are pending; the results are unchanged."""
    assert mx._core._engine_max_pending() == 8
    rng = np.random.RandomState(3)
    m = rng.uniform(-1, 1, (160, 160)) / 160
    a, x = mx.nd.array(m, dtype="float64"), mx.nd.ones((160, 160), dtype="float64")
    want, seen = np.ones((160, 160)), []
    for _ in range(200):
        x = mx.nd.dot(a, x) + 1.0
        seen.append(mx._core._engine_pending())
        want = m @ want + 1.0
    assert max(seen) <= 8 + 2, seen
    np.testing.assert_allclose(x.asnumpy(), want, rtol=1e-9)


def test_bound_on_pending_ops_reads_and_sets():
    old = mx._core._engine_max_pending()
    assert old > 0
    assert mx._core._engine_max_pending(5) == old
    assert mx._core._engine_max_pending() == 5
    mx._core._engine_max_pending(old)


def test_queued_ops_take_output_memory_when_they_run():
    """Forty independent convolutions queued at once: each output's block is taken
    when its op runs and given back when it finishes (Python keeps only the last), so
    a few blocks serve them all instead of one per queued op; results stay right."""
    rng = np.random.RandomState(5)
    xn = rng.rand(64, 1, 28, 28).astype(np.float32)
    wn = rng.rand(20, 1, 5, 5).astype(np.float32) - 0.5
    x, w = mx.nd.array(xn), mx.nd.array(wn)
    b = mx.nd.zeros((20,))
    mx._core.pool_release()
    before = mx._core.pool_stats()
    outs = []
    for i in range(40):
        y = mx.nd.Convolution(x, w, b, kernel=(5, 5), num_filter=20)
        if i % 10 == 0:
            outs.append(y)  # a few kept: their blocks stay taken
    mx.nd.waitall()
    after = mx._core.pool_stats()
    taken = after["os_allocs"] - before["os_allocs"]
    assert taken <= len(outs) + mx._core._engine_threads() + 2, (taken, before, after)
    # reference: one output by direct correlation
    want = np.zeros((64, 20, 24, 24), np.float32)
    for r in range(5):
        for c in range(5):
            want += xn[:, :, r:r + 24, c:c + 24] * wn[None, :, 0, r, c, None, None]
    for o in outs + [y]:
        np.testing.assert_allclose(o.asnumpy(), want, rtol=1e-4, atol=1e-4)


def test_array_too_big_for_memory_fails_when_used_and_the_engine_goes_on():
    """Host memory is taken when an op first writes the array: an impossible size is
    an MXNetError from the op (deferred, as every op error), not a crash; reading an
    untouched huge array into NumPy is NumPy's MemoryError."""
    with pytest.raises(mx.base.MXNetError, match="out of host memory"):
        a = mx.nd.zeros((1 << 40,))  # raises here under the NaiveEngine
        a.wait_to_read()
    with pytest.raises(MemoryError):
        mx.nd.empty((1 << 40,)).asnumpy()
    np.testing.assert_allclose((mx.nd.ones((3,)) * 2).asnumpy(), 2.0)


def test_big_ops_run_async_and_in_order():
    a = mx.nd.ones((1 << 20,))
    for _ in range(50):
        a += 1
        a *= 0.5
    # x -> (x + 1) / 2 fifty times from 1 stays 1
    np.testing.assert_allclose(a.asnumpy(), 1.0)


def _failing_op(x):
    """An op that fails inside its compute (not at shape check): take with mode=raise."""
    return mx.nd.take(x, mx.nd.array([0, 99]), mode="raise")


needs_take = pytest.mark.skipif(not hasattr(mx.nd, "take"), reason="take op not built")


@needs_take
def test_deferred_error_flows_to_dependents_and_is_raised_once():
    x = mx.nd.ones((3, 2))
    bad = _failing_op(x)          # returns at once
    dep = bad * 2 + 1             # depends on the failed output
    other = x + 1                 # independent
    with pytest.raises(mx.base.MXNetError, match="take"):
        dep.asnumpy()
    # the shared error was cleared by that blocking call (as in MXNet 1.9)
    dep.wait_to_read()
    np.testing.assert_array_equal(other.asnumpy(), 2)
    np.testing.assert_array_equal(x.asnumpy(), 1)  # input intact


@needs_take
def test_waitall_raises_deferred_error_then_clears():
    x = mx.nd.ones((3, 2))
    _failing_op(x)
    with pytest.raises(mx.base.MXNetError):
        mx.nd.waitall()
    mx.nd.waitall()


@needs_take
def test_error_on_inplace_target_is_raised_by_wait_to_read():
    x = mx.nd.ones((3, 2))
    y = mx.nd.zeros((2, 2))
    mx.nd.take(x, mx.nd.array([0, 7]), mode="raise", out=y)
    y += 1
    with pytest.raises(mx.base.MXNetError):
        y.wait_to_read()


def test_naive_engine_runs_synchronously_and_raises_at_call():
    code = (
        "import oxnet as mx, numpy as np\n"
        "a = mx.nd.ones((2, 2)); b = a * 3 + 1\n"
        "assert mx._core.engine_is_naive()\n"
        "assert (b.asnumpy() == 4).all()\n"
        "if hasattr(mx.nd, 'take'):\n"
        "    try:\n"
        "        mx.nd.take(a, mx.nd.array([5]), mode='raise')\n"
        "        raise SystemExit('no error at call')\n"
        "    except mx.base.MXNetError:\n"
        "        pass\n"
        "print('ok')\n"
    )
    for var in ("MXNET_ENGINE_TYPE", "OXNET_ENGINE_TYPE"):
        env = dict(os.environ, **{var: "NaiveEngine"})
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "ok"


def test_freeing_an_array_with_pending_ops_is_safe():
    for _ in range(200):
        a = mx.nd.ones((1 << 16,))
        b = a * 2
        del a
        c = b + 1
        del b
    np.testing.assert_array_equal(c.asnumpy()[:3], 3)
