"""DataLoader worker processes hand batches over in shared memory (``gluon/data/_shm``):
the values, dtypes and nesting of every batch arrive intact, the parent's NDArrays
adopt the segments, and no segment outlives its loader or piles up (early breaks,
worker errors, dead workers, many epochs, batches that outgrow the segments)."""

import collections
import gc
import os
import time

import numpy as np
import pytest

import oxnet as mx
from oxnet.gluon.data import ArrayDataset, DataLoader, SimpleDataset
from oxnet.gluon.data import _shm

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="forked workers"),
    pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="lists /dev/shm"),
]

SHARED = mx.Context("cpu_shared", 0)
Pair = collections.namedtuple("Pair", "img meta")


def _segments():
    """This process's loader segments in /dev/shm."""
    prefix = "oxnet_dl_%d_" % os.getpid()
    return {n for n in os.listdir("/dev/shm") if n.startswith(prefix)}


def _settle(before, seconds=10):
    """Waits for the segments to be back to ``before`` (a loader's finalizer runs at
    collection); returns what is left over."""
    deadline = time.monotonic() + seconds
    while True:
        gc.collect()
        left = _segments() - before
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def test_batches_come_in_shared_memory_with_values_and_dtypes_intact():
    assert _shm.available()
    before = _segments()
    rs = np.random.RandomState(0)
    cols = [rs.randn(50, 3, 4).astype(np.float32), rs.randn(50).astype(np.float64),
            rs.randn(50, 2).astype(np.float16), rs.randint(0, 255, (50, 5)).astype(np.uint8),
            rs.randint(-100, 100, (50,)).astype(np.int8),
            rs.randint(-9, 9, (50, 2)).astype(np.int32),
            rs.randint(-2 ** 40, 2 ** 40, (50,)).astype(np.int64), rs.rand(50, 3) > 0.5]
    ds = ArrayDataset(*[mx.nd.array(c, dtype=c.dtype) for c in cols])
    loader = DataLoader(ds, batch_size=8, num_workers=2, last_batch="keep")
    for _ in range(3):
        got = [[] for _ in cols]
        sizes = []
        for batch in loader:
            assert isinstance(batch, list) and len(batch) == len(cols)
            sizes.append(batch[0].shape[0])
            for g, b in zip(got, batch):
                assert b.context == SHARED
                g.append(b.asnumpy())
        assert sizes == [8] * 6 + [2]
        for g, c in zip(got, cols):
            out = np.concatenate(g)
            assert out.dtype == c.dtype
            np.testing.assert_array_equal(out, c)
    # after the first batches told the parent their size, the rest came in segments
    names = loader._worker_pool.shm_names
    assert names and set(names) <= _segments()
    del loader, batch, b
    assert _settle(before) == set()


def test_nested_structures_and_numpy_samples():
    before = _segments()
    rs = np.random.RandomState(1)
    imgs = rs.randn(20, 2, 3).astype(np.float32)

    def batchify(samples):
        x = mx.nd.array(np.stack([s[0] for s in samples]), dtype="float32")
        y = np.array([s[1] for s in samples], dtype=np.int64)
        return {"pair": Pair(x, [mx.nd.array(y, dtype="int64"), (x + 1, "tag")]),
                "n": len(samples), "same": (x, x)}

    ds = SimpleDataset([(imgs[i], i) for i in range(20)])
    loader = DataLoader(ds, batch_size=6, num_workers=2, batchify_fn=batchify)
    for _ in range(2):
        start = 0
        for b in loader:
            n = b["n"]
            assert isinstance(b["pair"], Pair)
            want = imgs[start:start + n]
            np.testing.assert_array_equal(b["pair"].img.asnumpy(), want)
            lab, (plus, tag) = b["pair"].meta
            assert tag == "tag" and lab.dtype == np.int64
            np.testing.assert_array_equal(lab.asnumpy(), np.arange(start, start + n))
            np.testing.assert_allclose(plus.asnumpy(), want + 1)
            s0, s1 = b["same"]
            # one array twice in a batch: two arrays, not aliases of one another
            s0[:] = 0
            np.testing.assert_array_equal(s1.asnumpy(), want)
            start += n
        assert start == 20
    # samples that are NumPy arrays and tuples of them (default batchify)
    ds = ArrayDataset(imgs, np.arange(20, dtype=np.int32))
    got = list(DataLoader(ds, batch_size=7, num_workers=2, last_batch="discard"))
    assert len(got) == 2
    np.testing.assert_array_equal(np.concatenate([g[0].asnumpy() for g in got]), imgs[:14])
    assert got[0][1].dtype == np.int32 and got[0][0].context == SHARED
    del got, loader, b, s0, s1, lab, plus
    assert _settle(before) == set()


def test_batch_arrays_stay_valid_while_held_and_segments_are_reused():
    before = _segments()
    data = np.arange(400 * 16, dtype=np.float32).reshape(400, 16)
    loader = DataLoader(mx.nd.array(data), batch_size=10, num_workers=2, prefetch=3)
    held = list(loader)  # 40 batches held at once: more than the loader's segments
    for _ in range(3):
        list(loader)
    np.testing.assert_array_equal(np.concatenate([h.asnumpy() for h in held]), data)
    cap = 3 + 2 + 2
    assert len(loader._worker_pool.shm_names) <= cap
    del held
    # many epochs: the segments are reused, never more of them (nor of open files)
    fds = len(os.listdir("/proc/self/fd"))
    for _ in range(15):
        for b in loader:
            b.wait_to_read()
        assert len(_segments() - before) <= cap
    assert len(os.listdir("/proc/self/fd")) <= fds
    # the loader goes: so do its segments, even when batches outlive it (they keep
    # their memory)
    last = b
    del loader, b
    assert _settle(before) == set()
    np.testing.assert_array_equal(last.asnumpy(), data[-10:])


def test_early_break_leaves_no_segments_behind():
    before = _segments()
    loader = DataLoader(np.random.rand(300, 1000), batch_size=16, num_workers=2)
    for _ in range(20):
        for i, b in enumerate(loader):
            if i == 2:
                break
        del b
        assert len(_segments() - before) <= 2 * 2 + 2 + 2
    it = iter(loader)
    next(it)
    del it, loader
    assert _settle(before) == set()


class _Fails(SimpleDataset):
    def __getitem__(self, i):
        if i == 13:
            raise ValueError("sample 13 is bad")
        return super().__getitem__(i)


def test_worker_exception_propagates_and_frees_its_segment():
    before = _segments()
    data = [np.full(500, i, dtype=np.float32) for i in range(40)]
    loader = DataLoader(_Fails(data), batch_size=4, num_workers=2)
    for _ in range(5):
        it = iter(loader)
        got = [next(it).asnumpy()[:, 0].tolist() for _ in range(3)]
        assert got == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
        with pytest.raises(ValueError, match="sample 13 is bad"):
            next(it)
        rest = [b.asnumpy()[:, 0].tolist() for b in it]
        assert rest[0] == [16, 17, 18, 19] and len(rest) == 6
        assert len(_segments() - before) <= 2 * 2 + 2 + 2
    del loader, it
    assert _settle(before) == set()


class _DiesOnce(SimpleDataset):
    def __init__(self, data, idx, marker):
        super().__init__(data)
        self._idx, self._marker = idx, marker

    def __getitem__(self, i):
        if i == self._idx and not os.path.exists(self._marker):
            open(self._marker, "w").close()
            os._exit(3)
        return super().__getitem__(i)


def test_dead_worker_leaks_no_segment(tmp_path):
    before = _segments()
    data = [np.full(1000, i, dtype=np.float64) for i in range(60)]
    loader = DataLoader(_DiesOnce(data, 33, str(tmp_path / "died")), batch_size=5,
                        num_workers=2, timeout=30)
    it = iter(loader)
    got = []
    with pytest.raises(mx.base.MXNetError, match=r"exited with code 3"):
        for b in it:
            got.append(b.asnumpy()[:, 0].tolist())
    assert got == [[5 * k + j for j in range(5)] for k in range(6)]
    got = [b.asnumpy()[:, 0].tolist() for b in it]
    assert got == [[5 * k + j for j in range(5)] for k in range(7, 12)]
    assert len(list(loader)) == 12
    del loader, it, b
    assert _settle(before) == set()


def test_batches_that_outgrow_the_segments():
    # variable-length samples padded per batch: later batches need more than the
    # segments sized by the first ones; they come through the pipe while the pool
    # moves to larger segments, and the values are intact either way
    before = _segments()
    lengths = [10] * 24 + [3000] * 24 + [40] * 16

    def pad(samples):
        n = max(len(s) for s in samples)
        out = np.zeros((len(samples), n), dtype=np.float32)
        for i, s in enumerate(samples):
            out[i, :len(s)] = s
        return mx.nd.array(out, dtype="float32")

    ds = SimpleDataset([np.full(n, i, dtype=np.float32) for i, n in enumerate(lengths)])
    loader = DataLoader(ds, batch_size=8, num_workers=2, batchify_fn=pad)
    for _ in range(3):
        for k, b in enumerate(loader):
            a = b.asnumpy()
            assert a.shape == (8, lengths[8 * k])
            np.testing.assert_array_equal(a[:, 0], np.arange(8 * k, 8 * k + 8))
    pool = loader._worker_pool
    assert pool._slots.target >= 8 * 3000 * 4
    assert all(s.size >= pool._slots.target for s in pool._slots._all.values())
    # the workers were told of the retired segments: they map only the live ones
    live = set(pool.shm_names)
    for proc in pool.processes:
        with open("/proc/%d/maps" % proc.pid) as f:
            mapped = {line.split("/dev/shm/")[1].split()[0] for line in f
                      if "/dev/shm/oxnet_dl_" in line}
        assert mapped and mapped <= live
    del loader, b
    assert _settle(before) == set()


def test_pin_memory_and_last_batch_modes():
    before = _segments()
    data = np.arange(23 * 4, dtype=np.float32).reshape(23, 4)
    for last, sizes in [("keep", [5, 5, 5, 5, 3]), ("discard", [5, 5, 5, 5])]:
        loader = DataLoader(mx.nd.array(data), batch_size=5, num_workers=2,
                            pin_memory=True, last_batch=last)
        for _ in range(2):
            got = list(loader)
            assert [g.shape[0] for g in got] == sizes
            assert all(g.context == mx.cpu_pinned(0) for g in got)
            np.testing.assert_array_equal(np.concatenate([g.asnumpy() for g in got]),
                                          data[:sum(sizes)])
        del loader, got
    loader = DataLoader(mx.nd.array(data), batch_size=5, num_workers=2, last_batch="rollover")
    first = [g.asnumpy() for g in loader]
    second = [g.asnumpy() for g in loader]
    assert len(first) == 4 and len(second) == 5
    np.testing.assert_array_equal(second[0], np.concatenate([data[20:23], data[:2]]))
    del loader
    assert _settle(before) == set()


def test_thread_pool_mode_uses_no_segments():
    before = _segments()
    data = np.random.rand(40, 6).astype(np.float32)
    loader = DataLoader(mx.nd.array(data), batch_size=8, num_workers=2, thread_pool=True)
    got = [b.asnumpy() for b in loader]
    np.testing.assert_array_equal(np.concatenate(got), data)
    assert _segments() == before


def test_interpreter_exit_mid_epoch_unlinks_the_segments():
    import subprocess
    import sys
    import textwrap
    root = os.path.dirname(os.path.dirname(os.path.abspath(mx.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    code = textwrap.dedent("""
        import os
        import numpy as np
        import oxnet as mx
        dl = mx.gluon.data.DataLoader(np.random.rand(200, 3000), batch_size=8,
                                      num_workers=2)
        for _ in range(2):
            list(dl)
        it = iter(dl)
        held = [next(it) for _ in range(3)]
        prefix = "oxnet_dl_%d_" % os.getpid()
        print(os.getpid(), len([n for n in os.listdir("/dev/shm") if n.startswith(prefix)]))
    """)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    pid, during = out.stdout.split()
    assert int(during) > 0  # the batches did come in segments
    assert not [n for n in os.listdir("/dev/shm") if n.startswith("oxnet_dl_%s_" % pid)]


def test_without_shared_memory_the_pipe_carries_the_batches(monkeypatch):
    # no segment can be made (a full or missing /dev/shm): batches come intact
    # through the pipe; with room for only one segment, that one is used
    before = _segments()
    data = np.random.RandomState(5).rand(60, 7).astype(np.float32)
    real = _shm._create
    for room in (0, 1):
        made = []

        def create(size):
            if len(made) >= room:
                return None
            made.append(real(size))
            return made[-1]
        monkeypatch.setattr(_shm, "_create", create)
        loader = DataLoader(mx.nd.array(data), batch_size=8, num_workers=2)
        for _ in range(3):
            got = list(loader)
            np.testing.assert_array_equal(np.concatenate([g.asnumpy() for g in got]), data)
        assert len(loader._worker_pool.shm_names) == room == len(made)
        del loader, got
        assert _settle(before) == set()


def test_parent_killed_its_workers_unlink_the_segments():
    import signal
    import subprocess
    import sys
    import textwrap
    root = os.path.dirname(os.path.dirname(os.path.abspath(mx.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    code = textwrap.dedent("""
        import os, signal, sys
        import numpy as np
        import oxnet as mx
        dl = mx.gluon.data.DataLoader(np.random.rand(200, 3000), batch_size=8,
                                      num_workers=2)
        list(dl)
        it = iter(dl)
        held = [next(it) for _ in range(3)]
        print(os.getpid(), " ".join(str(p.pid) for p in dl._worker_pool.processes),
              len(dl._worker_pool.shm_names), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == -signal.SIGKILL, out.stderr
    fields = out.stdout.split()
    pid, workers, count = fields[0], fields[1:-1], int(fields[-1])
    assert count > 0 and len(workers) == 2
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        alive = [w for w in workers if os.path.exists("/proc/%s" % w)]
        left = [n for n in os.listdir("/dev/shm") if n.startswith("oxnet_dl_%s_" % pid)]
        if not alive and not left:
            break
        time.sleep(0.1)
    assert not left and not alive


def test_bfloat16_batches_arrive_through_the_pipe_intact():
    # a dtype NumPy cannot hold natively is not adopted from a segment: it takes the
    # pipe, next to the batch's other arrays that do come in the segment
    before = _segments()
    x = mx.nd.array(np.random.RandomState(2).rand(30, 3), dtype="float32").astype("bfloat16")
    ds = ArrayDataset(x, np.arange(30, dtype=np.float32))
    loader = DataLoader(ds, batch_size=4, num_workers=2)
    for _ in range(2):
        got = list(loader)
        assert all(str(g[0].dtype) == str(x.dtype) and g[0].context == SHARED for g in got)
        np.testing.assert_array_equal(
            np.concatenate([g[0].astype("float32").asnumpy() for g in got]),
            x.astype("float32").asnumpy())
        np.testing.assert_array_equal(np.concatenate([g[1].asnumpy() for g in got]),
                                      np.arange(30, dtype=np.float32))
    assert loader._worker_pool.shm_names
    del loader, got
    assert _settle(before) == set()


class _Caching(SimpleDataset):
    """Builds each sample with the default batchify function and keeps it (in the
    worker): what a dataset makes must not live in a segment the next batches reuse."""

    def __init__(self, n):
        super().__init__(list(range(n)))
        self._cache = {}

    def __getitem__(self, i):
        if i not in self._cache:
            self._cache[i] = mx.gluon.data.dataloader.default_mp_batchify_fn(
                [np.float32(i), np.float32(-i)])
        return self._cache[i]


def test_what_the_dataset_keeps_is_not_overwritten_by_later_batches():
    loader = DataLoader(_Caching(40), batch_size=5, num_workers=2)
    want = np.stack([np.arange(40), -np.arange(40)], axis=1).astype(np.float32)
    for _ in range(5):
        got = np.concatenate([b.asnumpy() for b in loader])
        np.testing.assert_array_equal(got, want)


def _scalar_and_empty(samples):
    n = len(samples)
    return (mx.nd.array(np.float32(n)), mx.nd.array(np.zeros((0, 3), dtype=np.float32)),
            mx.nd.array(np.stack(samples)), {"k": mx.nd.ones((n,), dtype="int64") * n})


def test_scalar_and_empty_arrays_in_a_batch():
    data = [np.full(3, i, dtype=np.float32) for i in range(10)]
    loader = DataLoader(SimpleDataset(data), batch_size=4, num_workers=2,
                        batchify_fn=_scalar_and_empty)
    for _ in range(3):
        got = list(loader)
        assert [g[0].shape for g in got] == [()] * 3
        assert [float(g[0].asnumpy()) for g in got] == [4.0, 4.0, 2.0]
        assert all(g[1].shape == (0, 3) and g[1].dtype == np.float32 for g in got)
        np.testing.assert_array_equal(np.concatenate([g[2].asnumpy() for g in got]),
                                      np.stack(data))
        assert [g[3]["k"].asnumpy().tolist() for g in got] == [[4] * 4, [4] * 4, [2] * 2]
    assert loader._worker_pool.shm_names
