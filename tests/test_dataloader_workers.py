"""DataLoader worker processes: no configuration hangs. Loaders released while their
workers send large batches, workers that die or stall (an error naming the worker
within ``timeout``, and the loader and iterator go on), abandoned iterators, pipes
not leaking into other workers, workers that ignore SIGTERM."""

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import oxnet as mx
from oxnet.gluon.data import DataLoader, SimpleDataset

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="forked workers")


def _run_script(code, seconds):
    """Runs ``code`` in a fresh interpreter (its own session); fails instead of
    hanging when it does not finish within ``seconds`` (kills it and its workers)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(mx.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail("hung (killed after %d s); output so far:\n%s\n%s" % (seconds, out, err))
    assert proc.returncode == 0, err
    return out


def test_release_loaders_while_workers_send_large_batches():
    # Batches (8 x 2000 float64 = 128 KB) larger than a pipe's buffer: a worker is
    # halfway through sending one when the loader is released. With
    # multiprocessing.Pool the killed worker kept the result queue's lock and the
    # parent blocked forever in Pool.terminate.
    out = _run_script("""
        import numpy as np
        import oxnet as mx
        for i in range(10):
            A = np.random.rand(999, 2000)
            D = mx.gluon.data.DataLoader(A, batch_size=8, num_workers=8)
            it = iter(D)
            b = next(it)
            assert b.shape == (8, 2000) and np.allclose(b.asnumpy(), A[:8])
            del it, D
        # several loaders alive together, each abandoned mid-epoch
        loaders = [mx.gluon.data.DataLoader(np.random.rand(300, 5000), batch_size=16,
                                            num_workers=3) for _ in range(3)]
        its = [iter(d) for d in loaders]
        for it in its:
            next(it)
        del its, loaders
        print("ok")
    """, 120)
    assert out.strip() == "ok"


class _KillOnce(SimpleDataset):
    """Sample ``idx`` kills its worker process (SIGKILL) the first time."""

    def __init__(self, data, idx, marker):
        super().__init__(data)
        self._idx = idx
        self._marker = marker

    def __getitem__(self, i):
        if i == self._idx and not os.path.exists(self._marker):
            open(self._marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        return super().__getitem__(i)


def test_worker_killed_raises_naming_it_and_loader_goes_on(tmp_path):
    data = [np.full(3, i, dtype=np.float32) for i in range(12)]
    dl = DataLoader(_KillOnce(data, 5, str(tmp_path / "killed")), batch_size=2,
                    num_workers=2, timeout=30)
    pids = {p.pid for p in dl._worker_pool.processes}
    it = iter(dl)
    got = [next(it).asnumpy()[:, 0].tolist(), next(it).asnumpy()[:, 0].tolist()]
    t0 = time.time()
    with pytest.raises(mx.base.MXNetError,
                       match=r"DataLoader worker process \d \(pid (\d+)\) was killed by "
                             r"signal SIGKILL") as err:
        next(it)  # the batch [4, 5]
    assert time.time() - t0 < 10
    assert int(err.value.args[0].split("pid ")[1].split(")")[0]) in pids
    # the iterator goes on with the next batches, the worker was replaced
    got += [b.asnumpy()[:, 0].tolist() for b in it]
    assert got == [[0, 1], [2, 3], [6, 7], [8, 9], [10, 11]]
    assert len(dl._worker_pool.processes) == 2
    assert all(p.is_alive() for p in dl._worker_pool.processes)
    # and the loader serves a whole epoch again
    assert [b.asnumpy()[:, 0].tolist() for b in dl] == [[2 * i, 2 * i + 1] for i in range(6)]


class _StallOnce(SimpleDataset):
    """Sample ``idx`` blocks its worker (sleeps for an hour) the first time."""

    def __init__(self, data, idx, marker):
        super().__init__(data)
        self._idx = idx
        self._marker = marker

    def __getitem__(self, i):
        if i == self._idx and not os.path.exists(self._marker):
            open(self._marker, "w").close()
            time.sleep(3600)
        return super().__getitem__(i)


def test_stalled_worker_times_out_naming_it_and_loader_goes_on(tmp_path):
    data = [np.full(2, i, dtype=np.float32) for i in range(8)]
    dl = DataLoader(_StallOnce(data, 2, str(tmp_path / "stalled")), batch_size=2,
                    num_workers=2, timeout=1.5)
    it = iter(dl)
    assert next(it).asnumpy()[:, 0].tolist() == [0, 1]
    t0 = time.time()
    with pytest.raises(multiprocessing.TimeoutError,
                       match=r"DataLoader worker process \d \(pid \d+\) gave no batch "
                             r"within timeout=1.5 s"):
        next(it)
    assert time.time() - t0 < 1.5 + 3
    assert [b.asnumpy()[:, 0].tolist() for b in it] == [[4, 5], [6, 7]]
    assert len(list(dl)) == 4


def test_stalled_thread_times_out_naming_it():
    class Slow(SimpleDataset):
        def __getitem__(self, i):
            if i == 0:
                time.sleep(2)
            return super().__getitem__(i)
    dl = DataLoader(Slow(list(range(4))), batch_size=2, num_workers=1, thread_pool=True,
                    timeout=0.3)
    with pytest.raises(multiprocessing.TimeoutError, match=r"worker thread '.*' gave no "
                                                            r"batch within timeout=0.3"):
        next(iter(dl))


def test_worker_that_ignores_sigterm_is_stopped_when_the_loader_goes():
    class Stubborn(SimpleDataset):
        def __getitem__(self, i):
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            if i >= 2:
                time.sleep(3600)
            return super().__getitem__(i)
    dl = DataLoader(Stubborn(list(range(8))), batch_size=2, num_workers=2)
    it = iter(dl)
    assert next(it).asnumpy().tolist() == [0, 1]
    procs = dl._worker_pool.processes
    del it, dl
    # The pool kills the worker that ignores SIGTERM; nothing is left running (the
    # join only bounds a hang, it measures nothing).
    for p in procs:
        p.join(timeout=120)
    assert not any(p.is_alive() for p in procs)


def test_abandoned_iterators_leave_nothing_behind():
    ds = SimpleDataset([np.full(1000, i) for i in range(40)])
    dl = DataLoader(ds, batch_size=4, num_workers=3, prefetch=6)
    for _ in range(5):
        it = iter(dl)
        next(it)
        del it
    pool = dl._worker_pool
    want = [np.repeat(np.arange(4 * i, 4 * i + 4)[:, None], 1000, 1).tolist() for i in range(10)]
    assert [b.asnumpy().tolist() for b in dl] == want
    # dropped batches arrive and are discarded, not kept
    time.sleep(0.5)
    assert [b.asnumpy().tolist() for b in dl] == want
    assert not pool._results


def test_two_iterators_of_one_loader_interleave():
    ds = SimpleDataset(list(range(10)))
    dl = DataLoader(ds, batch_size=2, num_workers=2, prefetch=0)
    a, b = iter(dl), iter(dl)
    got_a, got_b = [], []
    for _ in range(5):
        got_a.append(next(a).asnumpy().tolist())
        got_b.append(next(b).asnumpy().tolist())
    assert got_a == got_b == [[2 * i, 2 * i + 1] for i in range(5)]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_workers_do_not_hold_other_loaders_pipes():
    first = DataLoader(SimpleDataset(list(range(4))), batch_size=2, num_workers=2)
    theirs = set()
    for w in first._worker_pool._workers:
        theirs.add(os.fstat(w.task_fd).st_ino)
        theirs.add(os.fstat(w.result_fd).st_ino)

    class PipesHeld(SimpleDataset):
        def __getitem__(self, i):
            inodes = []
            for fd in os.listdir("/proc/self/fd"):
                try:
                    link = os.readlink("/proc/self/fd/" + fd)
                except OSError:
                    continue
                if link.startswith("pipe:["):
                    inodes.append(int(link[6:-1]))
            return np.array(inodes + [-1] * (64 - len(inodes)), dtype=np.int64)
    second = DataLoader(PipesHeld(list(range(2))), batch_size=1, num_workers=2)
    held = set(sum((b.asnumpy().ravel().tolist() for b in second), []))
    assert not theirs & held
    assert len(list(first)) == 2  # the first loader is untouched


def test_batch_that_cannot_be_pickled_is_a_clear_error():
    dl = DataLoader(SimpleDataset(list(range(4))), batch_size=2, num_workers=1,
                    batchify_fn=lambda s: (lambda: s))
    with pytest.raises(TypeError, match="cannot be pickled"):
        next(iter(dl))


def test_loader_used_from_a_forked_child_is_refused():
    dl = DataLoader(SimpleDataset(list(range(4))), batch_size=2, num_workers=1)
    assert len(list(dl)) == 2
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            try:
                list(dl)
            except mx.base.MXNetError as e:
                code = 0 if "forked process must make its own DataLoader" in str(e) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    # the parent's workers were not touched by the child
    assert len(list(dl)) == 2


def test_iterators_of_one_loader_in_two_threads():
    ds = SimpleDataset([np.full(20000, i, dtype=np.float32) for i in range(40)])
    dl = DataLoader(ds, batch_size=4, num_workers=3)
    want = [np.repeat(np.arange(4 * i, 4 * i + 4)[:, None], 20000, 1) for i in range(10)]
    results, errors = {}, []

    def run(name):
        try:
            results[name] = [b.asnumpy() for b in dl]
        except Exception as e:  # pylint: disable=broad-except
            errors.append(e)
    threads = [threading.Thread(target=run, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and not any(t.is_alive() for t in threads)
    for got in results.values():
        assert len(got) == 10 and all((g == w).all() for g, w in zip(got, want))


def test_worker_with_interrupted_framing_is_replaced():
    # An exception (Ctrl-C) halfway through reading or writing a pipe leaves its
    # framing unknown: the worker is replaced at the next call, its batches re-sent.
    dl = DataLoader(SimpleDataset(list(range(8))), batch_size=2, num_workers=2)
    it = iter(dl)
    pool = dl._worker_pool
    old = {w.pid for w in pool._workers}
    for w in pool._workers:
        w.broken = True
    assert [b.asnumpy().tolist() for b in it] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert not old & {w.pid for w in pool._workers}


def test_interpreter_exit_with_a_worker_that_ignores_sigterm():
    # multiprocessing's exit hook joins daemonic children without a limit; the
    # loader's own hook stops its workers first (SIGKILL after 2 s).
    out = _run_script("""
        import signal, time
        import oxnet as mx
        from oxnet.gluon.data import DataLoader, SimpleDataset
        class Stubborn(SimpleDataset):
            def __getitem__(self, i):
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                if i >= 2:
                    time.sleep(3600)
                return super().__getitem__(i)
        dl = DataLoader(Stubborn(list(range(8))), batch_size=2, num_workers=2)
        it = iter(dl)
        print(next(it).asnumpy().tolist())
    """, 60)
    assert out.strip() == "[0, 1]"


def test_worker_batches_of_every_dtype_arrive_intact():
    # a worker sends its batch NDArrays' memory itself (a DLPack view, out-of-band);
    # dtypes NumPy's DLPack import refuses go through a copy: either way the values arrive
    rs = np.random.RandomState(3)
    cols = [rs.randn(12, 3).astype(np.float16), rs.randint(-50, 50, (12, 2)).astype(np.int32),
            rs.randint(0, 255, (12, 4)).astype(np.uint8), rs.randn(12).astype(np.float64),
            (rs.rand(12) > 0.5)]
    ds = mx.gluon.data.ArrayDataset(*[mx.nd.array(c, dtype=c.dtype) for c in cols])
    loader = mx.gluon.data.DataLoader(ds, batch_size=5, num_workers=2, last_batch="keep")
    got = [[] for _ in cols]
    for batch in loader:
        for g, b in zip(got, batch):
            g.append(b.asnumpy())
    for g, c in zip(got, cols):
        out = np.concatenate(g)
        assert out.dtype == c.dtype
        np.testing.assert_array_equal(out, c)
