"""gluon.data: datasets, samplers, DataLoader (workers, last_batch, batchify), vision
MNIST and transforms, gluon.utils helpers."""

import gc
import multiprocessing
import os
import signal
import time
import warnings

import numpy as np
import pytest

import oxnet as mx
from oxnet.gluon.data import (ArrayDataset, BatchSampler, DataLoader, RandomSampler,
                              SequentialSampler, SimpleDataset, vision)

HERE = os.path.dirname(os.path.abspath(__file__))
MNIST_DIR = os.path.join(HERE, os.pardir, "data", "mnist-subset")
T = vision.transforms


def test_array_dataset_and_transforms():
    x = np.arange(12).reshape(6, 2)
    y = mx.nd.arange(6)
    ds = ArrayDataset(x, y)
    assert len(ds) == 6
    a, b = ds[2]
    np.testing.assert_array_equal(a, [4, 5])
    assert b == 2.0
    t = ds.transform(lambda d, lab: (d * 2, lab + 1))
    np.testing.assert_array_equal(t[1][0], [4, 6])
    assert t[1][1] == 2.0
    tf = ds.transform_first(lambda d: -d)
    np.testing.assert_array_equal(tf[3][0], [-6, -7])
    assert tf[3][1] == 3.0
    eager = ds.transform_first(lambda d: d + 1, lazy=False)
    assert isinstance(eager, SimpleDataset) and eager[0][0].tolist() == [1, 2]
    single = ArrayDataset(np.arange(3))
    assert single[1] == 1
    with pytest.raises(ValueError, match="same length"):
        ArrayDataset(np.arange(3), np.arange(4))
    s = SimpleDataset(list(range(10)))
    assert [s.shard(3, i)[0] for i in range(3)] == [0, 4, 7]
    assert len(s.shard(3, 0)) == 4 and len(s.take(4)) == 4
    assert list(s.filter(lambda v: v % 3 == 0)) == [0, 3, 6, 9]


def test_samplers():
    assert list(SequentialSampler(4)) == [0, 1, 2, 3]
    np.random.seed(0)
    r = list(RandomSampler(10))
    assert sorted(r) == list(range(10)) and r != list(range(10))
    assert list(BatchSampler(SequentialSampler(7), 3, "keep")) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(SequentialSampler(7), 3, "discard")) == [[0, 1, 2], [3, 4, 5]]
    roll = BatchSampler(SequentialSampler(7), 3, "rollover")
    assert list(roll) == [[0, 1, 2], [3, 4, 5]]
    assert len(roll) == 2
    assert list(roll) == [[6, 0, 1], [2, 3, 4]]
    assert len(BatchSampler(SequentialSampler(7), 3, "keep")) == 3
    with pytest.raises(ValueError, match="last_batch must be one of"):
        BatchSampler(SequentialSampler(7), 3, "bad")


@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataloader_batches_in_order(num_workers):
    x = np.random.RandomState(0).rand(23, 3).astype(np.float32)
    y = np.arange(23).astype(np.int32)
    dl = DataLoader(ArrayDataset(mx.nd.array(x), y), batch_size=5, num_workers=num_workers)
    assert len(dl) == 5
    batches = list(dl)
    assert [b[0].shape for b in batches] == [(5, 3)] * 4 + [(3, 3)]
    np.testing.assert_allclose(np.concatenate([b[0].asnumpy() for b in batches]), x)
    labels = np.concatenate([b[1].asnumpy() for b in batches])
    np.testing.assert_array_equal(labels, y)
    assert batches[0][1].dtype == np.int32
    # a second epoch gives the same
    assert len(list(dl)) == 5


def test_dataloader_shuffle_discard_rollover_sampler():
    ds = SimpleDataset(list(range(10)))
    np.random.seed(1)
    got = np.concatenate([b.asnumpy() for b in DataLoader(ds, batch_size=4, shuffle=True)])
    assert sorted(got.tolist()) == list(range(10)) and got.tolist() != list(range(10))
    assert [b.shape[0] for b in DataLoader(ds, 4, last_batch="discard")] == [4, 4]
    dl = DataLoader(ds, 4, last_batch="rollover")
    assert [b.asnumpy().tolist() for b in dl] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert [b.asnumpy().tolist() for b in dl][0] == [8, 9, 0, 1]
    bs = BatchSampler(SequentialSampler(5), 2)
    assert [b.asnumpy().tolist() for b in DataLoader(ds, batch_sampler=bs)] == \
        [[0, 1], [2, 3], [4]]
    got = [b for b in DataLoader(ds, batch_size=3, sampler=SequentialSampler(4, 6))]
    assert [b.asnumpy().tolist() for b in got] == [[6, 7, 8], [9]]


def test_dataloader_argument_errors():
    ds = SimpleDataset([1, 2, 3])
    with pytest.raises(ValueError, match="batch_size must be specified"):
        DataLoader(ds)
    with pytest.raises(ValueError, match="shuffle must not be specified"):
        DataLoader(ds, 2, shuffle=True, sampler=SequentialSampler(3))
    with pytest.raises(ValueError, match="must not be specified if batch_sampler"):
        DataLoader(ds, 2, batch_sampler=BatchSampler(SequentialSampler(3), 2))


def test_dataloader_custom_batchify_and_worker_error():
    ds = SimpleDataset([np.ones(2) * i for i in range(6)])
    dl = DataLoader(ds, 3, batchify_fn=lambda s: np.stack(s).sum(), num_workers=2)
    assert list(dl) == [6.0, 24.0]

    class Broken(SimpleDataset):
        def __getitem__(self, idx):
            if idx == 4:
                raise KeyError("sample 4 is broken")
            return idx
    for threads in (False, True):
        with pytest.raises(KeyError, match="sample 4 is broken") as err:
            list(DataLoader(Broken(list(range(6))), 2, num_workers=2, thread_pool=threads))
        if not threads:
            # the worker's traceback comes along as the cause
            cause = str(err.value.__cause__)
            assert "DataLoader worker process" in cause and "__getitem__" in cause
            assert "sample 4 is broken" in cause

    class Unpicklable(Exception):
        def __init__(self, a, b):
            super().__init__(a)
            self.b = b

    class Bad(SimpleDataset):
        def __getitem__(self, idx):
            raise Unpicklable("odd %d" % idx, object())
    with pytest.raises(Exception, match="Unpicklable: odd") as err:
        list(DataLoader(Bad(list(range(4))), 2, num_workers=1))
    assert "__getitem__" in str(err.value.__cause__)
    # an oxnet error in a worker is an MXNetError in the parent
    bad_op = ArrayDataset(mx.nd.ones((4, 3))).transform(lambda d: mx.nd.dot(d, mx.nd.ones((2, 2))))
    with pytest.raises(mx.base.MXNetError, match="dot") as err:
        list(DataLoader(bad_op, 2, num_workers=1))
    assert "DataLoader worker process" in str(err.value.__cause__)


def test_dataloader_tuple_samples_stack_ndarrays():
    ds = ArrayDataset(mx.nd.ones((4, 2, 2)), mx.nd.zeros((4, 3)))
    b = next(iter(DataLoader(ds, batch_size=4)))
    assert isinstance(b, list) and b[0].shape == (4, 2, 2) and b[1].shape == (4, 3)


def test_mnist_dataset_and_transforms():
    ds = vision.MNIST(root=MNIST_DIR, train=False)
    assert len(ds) == 1000
    img, lab = ds[0]
    assert img.shape == (28, 28, 1) and img.dtype == np.uint8
    assert isinstance(lab, np.int32)
    ref = mx.test_utils.get_mnist(path=MNIST_DIR)
    np.testing.assert_allclose(img.asnumpy()[:, :, 0] / 255.0, ref["test_data"][0, 0], rtol=1e-6)
    assert lab == ref["test_label"][0]
    assert len(vision.MNIST(root=MNIST_DIR)) == 4000
    fm = vision.FashionMNIST(root=MNIST_DIR, train=False)
    assert len(fm) == 1000

    tds = ds.transform_first(T.Compose([T.ToTensor(), T.Normalize(0.5, 0.25)]))
    x, y = tds[0]
    assert x.shape == (1, 28, 28) and x.dtype == np.float32
    np.testing.assert_allclose(x.asnumpy()[0], (ref["test_data"][0, 0] - 0.5) / 0.25, rtol=1e-5,
                               atol=1e-5)
    dl = DataLoader(tds, batch_size=128, shuffle=False, num_workers=2)
    xs, ys = zip(*[(a.shape, b.shape) for a, b in dl])
    assert xs[0] == (128, 1, 28, 28) and sum(s[0] for s in ys) == 1000


def test_mnist_missing_names_files(tmp_path):
    with pytest.raises(mx.base.MXNetError, match="t10k-images-idx3-ubyte.gz"):
        vision.MNIST(root=str(tmp_path), train=False)


def test_transforms_numpy_reference():
    img = mx.nd.array(np.random.RandomState(0).randint(0, 256, (4, 5, 3)), dtype="uint8")
    t = T.ToTensor()(img)
    np.testing.assert_allclose(t.asnumpy(), img.asnumpy().transpose(2, 0, 1) / 255.0, rtol=1e-6)
    batch = mx.nd.array(np.random.RandomState(1).randint(0, 256, (2, 4, 5, 3)), dtype="uint8")
    np.testing.assert_allclose(T.ToTensor()(batch).asnumpy(),
                               batch.asnumpy().transpose(0, 3, 1, 2) / 255.0, rtol=1e-6)
    n = T.Normalize(mean=(0.1, 0.2, 0.3), std=(0.5, 1.0, 2.0))(t)
    ref = (t.asnumpy() - np.array([0.1, 0.2, 0.3])[:, None, None]) / \
        np.array([0.5, 1.0, 2.0])[:, None, None]
    np.testing.assert_allclose(n.asnumpy(), ref, rtol=1e-5)
    assert T.Cast("float16")(t).dtype == np.float16
    with pytest.raises(mx.base.MXNetError, match="Normalize: mean has 2 values for 3 channels"):
        T.Normalize(mean=(0.1, 0.2))(t)
    with pytest.raises(mx.base.MXNetError, match="ToTensor"):
        T.ToTensor()(mx.nd.ones((3, 3)))


def test_transforms_in_a_hybridized_compose():
    T = mx.gluon.data.vision.transforms
    img = np.arange(18).reshape(2, 3, 3).astype("uint8")
    c = T.Compose([T.ToTensor(), T.Normalize(0.5, 0.5)])
    want = c(mx.nd.array(img, dtype="uint8")).asnumpy()
    c.hybridize()
    got = c(mx.nd.array(img, dtype="uint8")).asnumpy()
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(want, (img.transpose(2, 0, 1) / 255.0 - 0.5) / 0.5, rtol=1e-6)


def test_split_and_load_split_data():
    x = mx.nd.arange(12).reshape((6, 2))
    parts = mx.gluon.utils.split_and_load(x, [mx.cpu(0), mx.cpu(1)])
    assert [p.context for p in parts] == [mx.cpu(0), mx.cpu(1)]
    np.testing.assert_array_equal(parts[1].asnumpy(), x.asnumpy()[3:])
    # MXNet 1.9.1: the first size % n slices get one more row
    s = mx.gluon.utils.split_data(x, 4, even_split=False)
    assert [p.shape[0] for p in s] == [2, 2, 1, 1]
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in s]), x.asnumpy())
    s = mx.gluon.utils.split_data(mx.nd.zeros((7, 3)), 5, even_split=False)
    assert [p.shape[0] for p in s] == [2, 2, 1, 1, 1]
    with pytest.raises(mx.base.MXNetError, match="empty"):
        mx.gluon.utils.split_data(mx.nd.zeros((2, 3)), 4, even_split=False)
    s = mx.gluon.utils.split_data(x, 2, batch_axis=1)
    np.testing.assert_array_equal(s[1].asnumpy(), x.asnumpy()[:, 1:])
    with pytest.raises(ValueError, match="cannot be evenly split"):
        mx.gluon.utils.split_data(x, 4)
    one = mx.gluon.utils.split_and_load(np.ones((2, 2)), [mx.cpu(0)])
    assert len(one) == 1 and one[0].shape == (2, 2)


def test_clip_global_norm_and_sha1(tmp_path):
    a = mx.nd.array([3.0, 0.0])
    b = mx.nd.array([[4.0]])
    norm = mx.gluon.utils.clip_global_norm([a, b], 1.0)
    assert abs(norm - 5.0) < 1e-5
    np.testing.assert_allclose(a.asnumpy(), [0.6, 0.0], rtol=1e-5)
    np.testing.assert_allclose(b.asnumpy(), [[0.8]], rtol=1e-5)
    c = mx.nd.array([0.1, 0.1])
    mx.gluon.utils.clip_global_norm([c], 10.0)
    np.testing.assert_allclose(c.asnumpy(), [0.1, 0.1], rtol=1e-6)
    f = tmp_path / "f.bin"
    f.write_bytes(b"abc")
    assert mx.gluon.utils.check_sha1(str(f), "a9993e364706816aba3e25717850c26c9cd0d89d")
    assert not mx.gluon.utils.check_sha1(str(f), "0" * 40)


# ---------------------------------------------------------------------------
# worker processes (forked) and worker threads


def _epoch(dl):
    return [[a.asnumpy() for a in b] if isinstance(b, list) else b.asnumpy() for b in dl]


def _assert_same_batches(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, list):
            assert len(g) == len(w)
            for a, b in zip(g, w):
                assert a.dtype == b.dtype
                np.testing.assert_array_equal(a, b)
        else:
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)


def test_dataloader_process_workers_match_serial():
    x = np.random.RandomState(2).rand(29, 3, 4).astype(np.float32)
    y = np.arange(29).astype(np.int32)
    # NDArray samples, NumPy labels; a transform made of NDArray ops, which the
    # forked workers run in their own engine
    ds = ArrayDataset(mx.nd.array(x), y).transform_first(
        lambda d: mx.nd.relu(mx.nd.dot(d, mx.nd.ones((4, 2))) * 2 - 3))
    want = _epoch(DataLoader(ds, batch_size=6))
    np.testing.assert_allclose(np.concatenate([b[0] for b in want]),
                               np.maximum((x.sum(-1, keepdims=True) * 2 - 3).repeat(2, -1), 0),
                               rtol=1e-5)
    for kw in ({"num_workers": 2}, {"num_workers": 3, "prefetch": 1},
               {"num_workers": 2, "thread_pool": True}):
        dl = DataLoader(ds, batch_size=6, **kw)
        _assert_same_batches(_epoch(dl), want)
        _assert_same_batches(_epoch(dl), want)  # a second epoch on the same workers
    # NumPy samples, a custom batchify returning a tuple of NDArray and NumPy
    nds = SimpleDataset([np.full((2,), i, np.float64) for i in range(7)])
    bfn = lambda s: (mx.nd.array(np.stack(s), dtype="float64"), np.stack(s) + 1)  # noqa: E731
    got = list(DataLoader(nds, 3, batchify_fn=bfn, num_workers=2))
    assert [type(b) for b in got] == [tuple] * 3
    assert isinstance(got[0][0], mx.nd.NDArray) and isinstance(got[0][1], np.ndarray)
    assert got[0][0].dtype == np.float64 and got[0][0].context == mx.Context("cpu_shared", 0)
    np.testing.assert_array_equal(got[2][0].asnumpy(), [[6, 6]])
    np.testing.assert_array_equal(got[1][1], [[4, 4], [5, 5], [6, 6]])


def test_dataloader_default_mp_batchify_and_contexts():
    from oxnet.gluon.data.dataloader import default_batchify_fn, default_mp_batchify_fn
    ds = ArrayDataset(mx.nd.ones((4, 2)), np.arange(4))
    assert DataLoader(ds, 2)._batchify_fn is default_batchify_fn
    for threads in (False, True):
        dl = DataLoader(ds, 2, num_workers=1, thread_pool=threads)
        assert dl._batchify_fn is default_mp_batchify_fn
        b = next(iter(dl))
        assert b[0].context == mx.Context("cpu_shared", 0)
        assert b[1].context == mx.Context("cpu_shared", 0)
        pinned = next(iter(DataLoader(ds, 2, num_workers=1, thread_pool=threads,
                                      pin_memory=True)))
        assert pinned[0].context == mx.cpu_pinned(0)
        np.testing.assert_array_equal(pinned[1].asnumpy(), [0, 1])
    m = default_mp_batchify_fn([mx.nd.ones((2,)), mx.nd.zeros((2,))])
    assert m.context == mx.Context("cpu_shared", 0) and m.asnumpy().tolist() == [[1, 1], [0, 0]]


def test_dataloader_workers_shuffle_and_last_batch():
    ds = SimpleDataset(list(range(11)))
    np.random.seed(5)
    serial = [b.asnumpy().tolist() for b in DataLoader(ds, 3, shuffle=True)]
    np.random.seed(5)
    procs = [b.asnumpy().tolist() for b in DataLoader(ds, 3, shuffle=True, num_workers=2)]
    assert procs == serial and sorted(sum(serial, [])) == list(range(11))
    for mode, want in (("keep", [3, 3, 3, 2]), ("discard", [3, 3, 3])):
        dl = DataLoader(ds, 3, last_batch=mode, num_workers=2)
        assert len(dl) == len(want) and [b.shape[0] for b in dl] == want
    dl = DataLoader(ds, 3, last_batch="rollover", num_workers=2)
    assert [b.asnumpy().tolist() for b in dl] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert [b.asnumpy().tolist() for b in dl][0] == [9, 10, 0]


class _Pid(SimpleDataset):
    def __getitem__(self, idx):
        return os.getpid()


def test_dataloader_workers_are_processes_or_threads():
    ds = _Pid(list(range(12)))
    pids = set(sum((b.asnumpy().tolist() for b in DataLoader(ds, 2, num_workers=2)), []))
    assert os.getpid() not in pids and 1 <= len(pids) <= 2
    tp = set(sum((b.asnumpy().tolist() for b in DataLoader(ds, 2, num_workers=2,
                                                            thread_pool=True)), []))
    assert tp == {os.getpid()}


def test_dataloader_early_break_and_reiterate():
    ds = ArrayDataset(np.arange(40).reshape(20, 2).astype(np.float32))
    for threads in (False, True):
        dl = DataLoader(ds, 4, num_workers=2, thread_pool=threads)
        for i, b in enumerate(dl):
            if i == 1:
                break
        it = iter(dl)
        next(it)
        del it  # abandoned with batches in flight
        got = [b.asnumpy() for b in dl]
        assert len(got) == 5
        np.testing.assert_array_equal(np.concatenate(got), np.arange(40).reshape(20, 2))


class _Slow(SimpleDataset):
    def __getitem__(self, idx):
        time.sleep(5)
        return idx


def test_dataloader_timeout_names_dataloader():
    dl = DataLoader(_Slow([0, 1]), 1, num_workers=1, timeout=0.3)
    with pytest.raises(multiprocessing.TimeoutError, match="DataLoader.*timeout=0.3"):
        next(iter(dl))
    with pytest.raises(AssertionError, match="timeout must be positive"):
        DataLoader(_Slow([0]), 1, timeout=0)


def test_dataloader_pool_closed_when_collected():
    dl = DataLoader(SimpleDataset(list(range(4))), 2, num_workers=2)
    assert len(list(dl)) == 2
    procs = list(dl._worker_pool.processes)
    assert len(procs) == 2 and all(p.is_alive() for p in procs)
    del dl
    gc.collect()
    deadline = time.time() + 10
    while any(p.is_alive() for p in procs) and time.time() < deadline:
        time.sleep(0.02)
    assert not any(p.is_alive() for p in procs)


def test_mnist_process_workers_match_serial():
    tds = vision.MNIST(root=MNIST_DIR, train=False).take(300).transform_first(
        T.Compose([T.ToTensor(), T.Normalize(0.5, 0.25)]))
    want = _epoch(DataLoader(tds, batch_size=64))
    _assert_same_batches(_epoch(DataLoader(tds, batch_size=64, num_workers=2)), want)


def _wait_child(pid, seconds=30):
    """The exit code of a forked child; kills it (and fails) if it hangs."""
    deadline = time.time() + seconds
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            assert os.WIFEXITED(status), "child died: status %d" % status
            return os.WEXITSTATUS(status)
        if time.time() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("forked child hung (deadlock) and was killed")
        time.sleep(0.02)


def _big_work(seed):
    """A large matmul and convolution (several compute threads each) checked
    against NumPy; True when they match."""
    rs = np.random.RandomState(seed)
    a = rs.rand(384, 384).astype(np.float32)
    b = rs.rand(384, 384).astype(np.float32)
    c = mx.nd.dot(mx.nd.array(a), mx.nd.array(b)).asnumpy()
    x = rs.rand(16, 3, 32, 32).astype(np.float32)
    w = rs.rand(8, 3, 3, 3).astype(np.float32)
    y = mx.nd.Convolution(mx.nd.array(x), mx.nd.array(w), kernel=(3, 3), num_filter=8,
                          no_bias=True).asnumpy()
    ok = np.allclose(c, a @ b, rtol=1e-4, atol=1e-3)
    ref = sum(x[:, None, ci, i:i + 30, j:j + 30] * w[None, :, ci, i, j, None, None]
              for ci in range(3) for i in range(3) for j in range(3))
    return ok and np.allclose(y, ref, rtol=1e-4, atol=1e-3)


def test_user_fork_after_parallel_ops():
    assert _big_work(0)
    # operations still in flight at the fork: the fork handlers drain the engine
    pending = [mx.nd.dot(mx.nd.ones((300, 300)), mx.nd.ones((300, 300))) for _ in range(4)]
    with warnings.catch_warnings():
        # Python 3.12+ warns about forking with threads; oxnet's fork handlers cover
        # its own threads, which is what this test checks
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        code = 3
        try:
            code = 0 if _big_work(1) and pending[0][0, 0].asscalar() == 300 else 1
        finally:
            os._exit(code)
    assert _big_work(2)  # the parent goes on meanwhile
    assert _wait_child(pid) == 0
    assert pending[3][299, 299].asscalar() == 300


def _pool_task(seed):
    return bool(_big_work(seed))


def test_user_multiprocessing_fork_pool_after_parallel_ops():
    assert _big_work(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pool = multiprocessing.get_context("fork").Pool(2)
    with pool:
        res = pool.map_async(_pool_task, [4, 5])
        assert res.get(60) == [True, True]
