"""gluon.data: datasets, samplers, DataLoader (workers, last_batch, batchify), vision
MNIST and transforms, gluon.utils helpers."""

import os

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
    with pytest.raises(KeyError, match="sample 4 is broken"):
        list(DataLoader(Broken(list(range(6))), 2, num_workers=2))


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


def test_split_and_load_split_data():
    x = mx.nd.arange(12).reshape((6, 2))
    parts = mx.gluon.utils.split_and_load(x, [mx.cpu(0), mx.cpu(1)])
    assert [p.context for p in parts] == [mx.cpu(0), mx.cpu(1)]
    np.testing.assert_array_equal(parts[1].asnumpy(), x.asnumpy()[3:])
    s = mx.gluon.utils.split_data(x, 4, even_split=False)
    assert [p.shape[0] for p in s] == [1, 1, 1, 3]
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
