"""mx.io iterators: ImageRecordIter (Rust decode/augment), CSVIter, LibSVMIter,
MNISTIter, ResizeIter, PrefetchingIter. Batching as MXNet 1.9.1 (checked against
it once: round_batch pads from the start and the next epoch begins after the
padding records)."""

import gzip
import os
import struct

import numpy as np
import pytest

import oxnet as mx

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "photos")
REC = os.path.join(FIX, "train.rec")
LABELS = [float(l.split("\t")[1]) for l in open(os.path.join(FIX, "train.lst"))]


def test_image_record_iter_labels_pad_and_epochs():
    it = mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 64, 64), batch_size=20,
                               resize=64, preprocess_threads=2)
    assert it.provide_data[0].shape == (20, 3, 64, 64)
    assert it.provide_label[0].shape == (20,)
    b = list(it)
    assert [x.pad for x in b] == [0, 0, 15]
    got = np.concatenate([x.label[0].asnumpy() for x in b])
    np.testing.assert_array_equal(got, LABELS + LABELS[:15])
    it.reset()
    b = list(it)  # second epoch starts after the 15 padding records (MXNet's loader)
    assert [x.pad for x in b] == [0, 10]
    np.testing.assert_array_equal(b[0].label[0].asnumpy(), LABELS[15:35])


def test_image_record_iter_pixels_match_python_pipeline():
    it = mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 32, 32), batch_size=5,
                               resize=40, mean_r=10, mean_g=20, mean_b=30, std_r=2, std_g=3,
                               std_b=4, scale=0.5)
    batch = next(iter(it))
    r = mx.recordio.MXIndexedRecordIO(os.path.join(FIX, "train.idx"), REC, "r")
    for i in range(5):
        _, img = mx.recordio.unpack(r.read_idx(r.keys[i]))
        img = mx.image.imdecode(img)
        img = mx.image.resize_short(img, 40, interp=1)
        img, _ = mx.image.center_crop(img, (32, 32))
        ref = (img.asnumpy().astype(np.float32) - [10, 20, 30]) / [2, 3, 4] * 0.5
        got = batch.data[0][i].asnumpy().transpose(1, 2, 0)
        assert np.abs(got - ref).max() < 1e-3


def test_image_record_iter_augment_seed_shards_and_uint8():
    kw = dict(path_imgrec=REC, data_shape=(3, 48, 48), batch_size=9, resize=56,
              rand_crop=True, rand_mirror=True, brightness=0.2, contrast=0.2, saturation=0.2,
              pca_noise=0.1, max_random_scale=1.2, min_random_scale=0.9, shuffle=True, seed=3)
    a = [x.data[0].asnumpy() for x in mx.io.ImageRecordIter(preprocess_threads=1, **kw)]
    b = [x.data[0].asnumpy() for x in mx.io.ImageRecordIter(preprocess_threads=3, **kw)]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    parts = [mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 32, 32), batch_size=5,
                                   resize=32, num_parts=3, part_index=k, round_batch=False)
             for k in range(3)]
    seen = [np.concatenate([x.label[0].asnumpy()[:5 - x.pad] for x in p]) for p in parts]
    np.testing.assert_array_equal(np.concatenate(seen), LABELS)
    u8 = mx.io.ImageRecordUInt8Iter(path_imgrec=REC, data_shape=(3, 32, 32), batch_size=4,
                                    resize=32)
    assert next(iter(u8)).data[0].dtype == np.uint8


def test_image_record_iter_bad_input(tmp_path):
    with pytest.raises(mx.MXNetError, match="channels"):
        mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(5, 28, 28), batch_size=4)
    it = mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 512, 512), batch_size=4)
    with pytest.raises(mx.MXNetError, match="smaller than the crop"):
        next(iter(it))
    it.reset()  # still usable
    # a corrupt JPEG inside a record: the error names the file and record
    bad = str(tmp_path / "bad.rec")
    w = mx.recordio.MXRecordIO(bad, "w")
    w.write(mx.recordio.pack((0, 1.0, 0, 0), b"\xff\xd8\xff\xe0garbage"))
    w.close()
    it = mx.io.ImageRecordIter(path_imgrec=bad, data_shape=(3, 8, 8), batch_size=1)
    with pytest.raises(mx.MXNetError, match="bad.rec record 0"):
        next(iter(it))
    with pytest.raises(mx.MXNetError):
        mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 8, 8), batch_size=2,
                              max_rotate_angle=10)


def test_csv_iter(tmp_path):
    d, l = str(tmp_path / "d.csv"), str(tmp_path / "l.csv")
    np.savetxt(d, np.arange(12).reshape(3, 4), delimiter=",")
    np.savetxt(l, np.array([7, 8, 9]), delimiter=",")
    it = mx.io.CSVIter(data_csv=d, data_shape=(2, 2), label_csv=l, batch_size=2)
    assert it.provide_label[0].shape == (2,)
    b = list(it)
    assert [x.pad for x in b] == [0, 1]
    np.testing.assert_array_equal(b[1].data[0].asnumpy().reshape(2, 4),
                                  [[8, 9, 10, 11], [0, 1, 2, 3]])
    np.testing.assert_array_equal(b[1].label[0].asnumpy(), [9, 7])
    it.reset()
    b = list(it)
    np.testing.assert_array_equal(b[0].label[0].asnumpy(), [8, 9])
    it = mx.io.CSVIter(data_csv=d, data_shape=(4,), batch_size=2, dtype="int32")
    assert it.getdata is not None and next(iter(it)).data[0].dtype == np.int32
    with pytest.raises(mx.MXNetError, match="columns"):
        mx.io.CSVIter(data_csv=d, data_shape=(3,), batch_size=1)


def test_libsvm_iter_basic(tmp_path):
    p = str(tmp_path / "d.t")
    open(p, "w").write("1.0 0:0.5 2:1.2\n-2.0\n-3.0 0:0.6 1:2.4 2:1.2\n4 2:-1.2\n")
    it = mx.io.LibSVMIter(data_libsvm=p, data_shape=(3,), batch_size=3)
    b = list(it)
    np.testing.assert_allclose(b[0].data[0].asnumpy(),
                               [[0.5, 0, 1.2], [0, 0, 0], [0.6, 2.4, 1.2]], rtol=1e-6)
    np.testing.assert_allclose(b[1].data[0].asnumpy()[0], [0, 0, -1.2], rtol=1e-6)
    np.testing.assert_array_equal(b[0].label[0].asnumpy(), [1, -2, -3])
    open(p, "w").write("1.0 -1:0.5\n")
    with pytest.raises(mx.MXNetError, match="feature index"):
        mx.io.LibSVMIter(data_libsvm=p, data_shape=(3,), batch_size=1)


def _write_idx(path, arr):
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">I", 0x0800 | arr.ndim))
        f.write(struct.pack(">" + "I" * arr.ndim, *arr.shape))
        f.write(arr.astype(np.uint8).tobytes())


def test_mnist_iter(tmp_path):
    imgs = np.random.RandomState(0).randint(0, 256, (25, 28, 28))
    labs = np.arange(25) % 10
    _write_idx(str(tmp_path / "i.gz"), imgs)
    _write_idx(str(tmp_path / "l.gz"), labs)
    it = mx.io.MNISTIter(image=str(tmp_path / "i.gz"), label=str(tmp_path / "l.gz"),
                         batch_size=10, shuffle=False, flat=True)
    b = list(it)
    assert len(b) == 2 and b[0].data[0].shape == (10, 784)
    np.testing.assert_allclose(b[0].data[0].asnumpy()[3], imgs[3].ravel() / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(b[1].label[0].asnumpy(), labs[10:20])
    with pytest.raises(mx.MXNetError, match="cannot open"):
        mx.io.MNISTIter(image=str(tmp_path / "nope"), label=str(tmp_path / "l.gz"))


def test_resize_and_prefetching_iter():
    data = np.arange(20).reshape(10, 2).astype(np.float32)
    base = mx.io.NDArrayIter(data, np.arange(10), batch_size=4)
    r = mx.io.ResizeIter(base, 5)
    assert len(list(r)) == 5
    p = mx.io.PrefetchingIter([mx.io.NDArrayIter(data, np.arange(10), batch_size=5),
                               mx.io.NDArrayIter(data * 2, np.arange(10), batch_size=5)],
                              rename_data=[{"data": "a"}, {"data": "b"}])
    assert [d.name for d in p.provide_data] == ["a", "b"]
    b = list(p)
    assert len(b) == 2 and len(b[0].data) == 2
    np.testing.assert_array_equal(b[1].data[1].asnumpy(), data[5:] * 2)
    p.reset()
    assert len(list(p)) == 2


@pytest.mark.timeout(60)
def test_image_record_iter_reset_while_prefetch_queue_full():
    # the producer has queued every batch and waits to queue its end marker: reset()
    # must not deadlock joining it (it did: a blocking put with no stop check)
    it = mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 32, 32), batch_size=15,
                               resize=32, prefetch_buffer=3, round_batch=False)
    import time
    time.sleep(0.5)
    it.reset()
    assert len(list(it)) == 3
    time.sleep(0.5)
    it.reset()
    assert len(list(it)) == 3


def test_ndarray_iter_csr_sources():
    import scipy.sparse as sp
    m = sp.random(11, 7, density=0.3, format="csr", random_state=0, dtype=np.float32)
    dns = m.toarray()
    csr = mx.nd.sparse.csr_matrix(m)
    for src in (csr, m, {"data": csr}):      # CSR needs last_batch_handle='discard' (MXNet)
        with pytest.raises(NotImplementedError):
            mx.io.NDArrayIter(src, dns, 3)
    it = mx.io.NDArrayIter(m, dns, 3, last_batch_handle="discard")
    got = list(it)
    assert len(got) == 3 and got[0].data[0].stype == "csr"
    np.testing.assert_allclose(np.concatenate([b.data[0].asnumpy() for b in got]), dns[:9])
    np.random.seed(0)
    it = mx.io.NDArrayIter({"c": csr, "d": dns}, dns, 3, shuffle=True, last_batch_handle="discard")
    for b in it:   # rows stay together across the CSR and dense sources and the label
        c, d = b.data[0], b.data[1]
        assert c.stype == "csr"
        np.testing.assert_allclose(c.asnumpy(), d.asnumpy())
        np.testing.assert_allclose(b.label[0].asnumpy(), d.asnumpy())
