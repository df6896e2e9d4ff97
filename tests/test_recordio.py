"""mx.recordio: MXNet's RecordIO format, read and written in Rust.

The fixture ``tests/fixtures/photos/train.rec`` holds records written by MXNet
1.9.1 itself; ``oxnet_written.rec`` was written by oxnet and read back by MXNet
1.9.1 (its reading is recorded in ``mxnet_readback.json``).
"""

import json
import os
import pickle
import random
import struct

import numpy as np
import pytest

import oxnet as mx

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "photos")
MAGIC = struct.pack("<I", 0xced7230a)


def test_sequential_roundtrip(tmp_path):
    frec = str(tmp_path / "a.rec")
    w = mx.recordio.MXRecordIO(frec, "w")
    payloads = [bytes([i]) * i for i in range(40)] + [MAGIC, b"ab" + MAGIC, b"abcd" + MAGIC + MAGIC + b"x"]
    for p in payloads:
        w.write(p)
    w.close()
    assert os.path.getsize(frec) % 4 == 0
    r = mx.recordio.MXRecordIO(frec, "r")
    got = []
    while True:
        x = r.read()
        if x is None:
            break
        got.append(x)
    assert got == payloads
    r.reset()
    assert r.read() == payloads[0]


def test_multipart_framing_matches_dmlc(tmp_path):
    # a payload holding the magic at an aligned offset is split into parts:
    # [magic][cflag=1,len=4]"abcd" [magic][cflag=3,len=1]"x" + 3 pad bytes
    frec = str(tmp_path / "m.rec")
    w = mx.recordio.MXRecordIO(frec, "w")
    w.write(b"abcd" + MAGIC + b"x")
    w.close()
    raw = open(frec, "rb").read()
    assert raw == (MAGIC + struct.pack("<I", (1 << 29) | 4) + b"abcd"
                   + MAGIC + struct.pack("<I", (3 << 29) | 1) + b"x\0\0\0")


def test_indexed(tmp_path):
    fidx, frec = str(tmp_path / "a.idx"), str(tmp_path / "a.rec")
    w = mx.recordio.MXIndexedRecordIO(fidx, frec, "w")
    for i in range(20):
        w.write_idx(i, b"rec%d" % i)
    w.close()
    r = mx.recordio.MXIndexedRecordIO(fidx, frec, "r")
    keys = list(r.keys)
    assert keys == list(range(20))
    random.shuffle(keys)
    for k in keys:
        assert r.read_idx(k) == b"rec%d" % k
    # pickling for worker processes reopens the file
    r2 = pickle.loads(pickle.dumps(r))
    assert r2.read_idx(7) == b"rec7"


def test_pack_unpack_labels():
    h = mx.recordio.IRHeader(0, 3.0, 7, 0)
    s = mx.recordio.pack(h, b"payload")
    h2, p = mx.recordio.unpack(s)
    assert (h2.flag, h2.label, h2.id, h2.id2) == (0, 3.0, 7, 0) and p == b"payload"
    lab = np.array([1.5, 2.5, -1.0], dtype=np.float32)
    s = mx.recordio.pack((0, lab, 1, 2), b"x")
    h3, p = mx.recordio.unpack(s)
    assert h3.flag == 3 and (h3.label == lab).all() and p == b"x"
    # same bytes as struct 'IfQQ' + float labels (MXNet's layout)
    assert s == struct.pack("IfQQ", 3, 0.0, 1, 2) + lab.tobytes() + b"x"


def test_reads_mxnet_written_fixture():
    r = mx.recordio.MXIndexedRecordIO(os.path.join(FIX, "train.idx"),
                                      os.path.join(FIX, "train.rec"), "r")
    lst = [line.split("\t") for line in open(os.path.join(FIX, "train.lst")).read().splitlines()]
    assert len(r.keys) == len(lst) == 45
    for key, (idx, label, path) in zip(r.keys, lst):
        h, img = mx.recordio.unpack_img(r.read_idx(key))
        assert int(idx) == key and h.label == float(label) and h.id == key
        assert img.ndim == 3 and img.shape[2] == 3 and img.dtype == np.uint8
        # the record holds the same JPEG bytes as the folder's file? decode both
        ref = mx.image.imread(os.path.join(FIX, path), to_rgb=0).asnumpy()
        assert ref.shape == img.shape
        assert np.abs(ref.astype(int) - img.astype(int)).mean() < 3.0


def test_oracle_fixture_written_by_oxnet_reads_as_mxnet_read_it(tmp_path):
    """The committed oxnet_written.rec is what this oxnet writes today (byte
    identical), and MXNet 1.9.1 read it as recorded."""
    with open(os.path.join(FIX, "mxnet_readback.json")) as f:
        back = json.load(f)
    fidx, frec = str(tmp_path / "o.idx"), str(tmp_path / "o.rec")
    w = mx.recordio.MXIndexedRecordIO(fidx, frec, "w")
    rng = np.random.RandomState(0)
    for i in range(6):
        img = rng.randint(0, 256, size=(8 + i, 10, 3)).astype(np.uint8)
        w.write_idx(i, mx.recordio.pack_img((0, float(i), i, 0), img, img_fmt=".png"))
    w.write_idx(6, mx.recordio.pack((0, [1.0, 2.0], 6, 0), b"abcd" + MAGIC + b"tail"))
    w.close()
    assert open(frec, "rb").read() == open(os.path.join(FIX, "oxnet_written.rec"), "rb").read()
    assert open(fidx).read() == open(os.path.join(FIX, "oxnet_written.idx")).read()
    r = mx.recordio.MXIndexedRecordIO(fidx, frec, "r")
    for i in range(6):
        h, img = mx.recordio.unpack_img(r.read_idx(i))
        assert h.label == back["labels"][i]
        assert int(img.astype(np.int64).sum()) == back["pixel_sums"][i]
    h, p = mx.recordio.unpack(r.read_idx(6))
    assert list(h.label) == back["last_label"] and p.hex() == back["last_payload"]


def test_bad_input(tmp_path):
    frec = str(tmp_path / "b.rec")
    w = mx.recordio.MXRecordIO(frec, "w")
    w.write(b"hello world")
    w.close()
    raw = open(frec, "rb").read()
    open(frec, "wb").write(raw[:-4])
    with pytest.raises(mx.MXNetError, match="truncated"):
        mx.recordio.MXRecordIO(frec, "r").read()
    open(frec, "wb").write(b"\x00" + raw[1:])
    with pytest.raises(mx.MXNetError, match="magic"):
        mx.recordio.MXRecordIO(frec, "r").read()
    with pytest.raises(mx.MXNetError, match="cannot open"):
        mx.recordio.MXRecordIO(str(tmp_path / "missing.rec"), "r")
    # an index pointing past the end
    open(frec, "wb").write(raw)
    fidx = str(tmp_path / "b.idx")
    open(fidx, "w").write("0\t0\n1\t4096\n")
    r = mx.recordio.MXIndexedRecordIO(fidx, frec, "r")
    assert r.read_idx(0) == b"hello world"
    with pytest.raises(mx.MXNetError, match="past the end"):
        r.read_idx(1)
    with pytest.raises(mx.MXNetError, match="not in the index"):
        r.read_idx(5)
    assert r.read_idx(0) == b"hello world"  # still usable
    with pytest.raises(mx.MXNetError, match="shorter than"):
        mx.recordio.unpack(b"abc")
    with pytest.raises(mx.MXNetError):
        mx.recordio.unpack_img(mx.recordio.pack((0, 0, 0, 0), b"not an image"))


def test_fuzz_reader_never_crashes(tmp_path):
    frec = str(tmp_path / "f.rec")
    w = mx.recordio.MXRecordIO(frec, "w")
    for i in range(10):
        w.write(bytes(range(i * 5)) + (MAGIC if i % 2 else b""))
    w.close()
    raw = bytearray(open(frec, "rb").read())
    rng = random.Random(1)
    for _ in range(100):
        m = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            m[rng.randrange(len(m))] = rng.randrange(256)
        if rng.random() < 0.3:
            m = m[:rng.randrange(len(m))]
        open(frec, "wb").write(bytes(m))
        r = mx.recordio.MXRecordIO(frec, "r")
        try:
            while r.read() is not None:
                pass
        except mx.MXNetError:
            pass
