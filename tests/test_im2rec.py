"""``python -m oxnet.tools.im2rec``: MXNet's im2rec command line on oxnet.

Oracles: ``im2rec_mxnet_train.lst``/``_val.lst`` were written by MXNet 1.9.1's own
``tools/im2rec.py --list --recursive --train-ratio 0.8`` on ``folder/`` (our lists must
be byte-identical); ``im2rec_written.*`` were written by this tool and read by MXNet
1.9.1, which recorded what it read in ``im2rec_mxnet_readback.json`` (see
``make_im2rec_fixture.py``). Pixels are checked against decoding the source JPEGs.
"""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import oxnet as mx
from oxnet.image.image import _decode_np
from oxnet.tools import im2rec

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "photos")
FOLDER = os.path.join(FIX, "folder")
CLASSES = sorted(os.listdir(FOLDER))


def _tree(tmp_path, per_class=3):
    root = tmp_path / "imgs"
    for c in CLASSES:
        os.makedirs(root / c)
        for f in sorted(os.listdir(os.path.join(FOLDER, c)))[:per_class]:
            shutil.copy(os.path.join(FOLDER, c, f), root / c / f)
    return str(root)


def _run(*argv):
    assert im2rec.main([str(a) for a in argv]) == 0


def _read_lst(path):
    out = []
    for line in open(path):
        i, lab, p = line.rstrip("\n").split("\t")
        out.append((int(i), float(lab), p))
    return out


def test_list_is_byte_identical_to_mxnets_tool(tmp_path):
    _run(tmp_path / "p", FOLDER, "--list", "--recursive", "--train-ratio", "0.8")
    for part in ("train", "val"):
        ours = open(tmp_path / ("p_%s.lst" % part)).read()
        theirs = open(os.path.join(FIX, "im2rec_mxnet_%s.lst" % part)).read()
        assert ours == theirs


def test_list_labels_ratios_chunks(tmp_path):
    root = _tree(tmp_path)
    _run(tmp_path / "a", root, "--list", "--recursive", "--no-shuffle")
    items = _read_lst(tmp_path / "a.lst")
    assert [i for i, _, _ in items] == list(range(45))
    for _, lab, p in items:               # label = the class folder's sorted position
        assert CLASSES[int(lab)] == p.split("/")[0]
    _run(tmp_path / "b", root, "--list", "--recursive", "--train-ratio", "0.6",
         "--test-ratio", "0.2", "--chunks", "3")
    sizes = {}
    for c in range(3):
        for part in ("train", "val", "test"):
            sizes[(c, part)] = len(_read_lst(tmp_path / ("b_%d_%s.lst" % (c, part))))
    assert sizes[(0, "train")] == 9 and sizes[(0, "test")] == 3 and sizes[(0, "val")] == 3
    allidx = sorted(i for c in range(3) for part in ("train", "val", "test")
                    for i, _, _ in _read_lst(tmp_path / ("b_%d_%s.lst" % (c, part))))
    assert allidx == list(range(45))
    # not recursive: only root's own images, label 0; --exts filters
    flat = tmp_path / "flat"
    flat.mkdir()
    shutil.copy(os.path.join(FOLDER, "coins", "coins_000.jpg"), flat / "x.JPG")
    (flat / "note.txt").write_text("not an image")
    _run(tmp_path / "c", flat, "--list")
    assert _read_lst(tmp_path / "c.lst") == [(0, 0.0, "x.JPG")]
    _run(tmp_path / "d", flat, "--list", "--exts", ".png")
    assert _read_lst(tmp_path / "d.lst") == []


def test_pack_reads_back_with_recordio_and_image_record_iter(tmp_path):
    root = _tree(tmp_path)
    prefix = tmp_path / "photos"
    _run(prefix, root, "--list", "--recursive")
    _run(prefix, root, "--quality", "95", "--num-thread", "2")
    items = _read_lst(str(prefix) + ".lst")
    r = mx.recordio.MXIndexedRecordIO(str(prefix) + ".idx", str(prefix) + ".rec", "r")
    assert sorted(r.keys) == sorted(i for i, _, _ in items)
    for i, lab, p in items:
        h, img = mx.recordio.unpack_img(r.read_idx(i))
        assert h.label == lab and h.id == i and h.flag == 0
        ref = _decode_np(open(os.path.join(root, p), "rb").read(), 1, False)  # BGR
        assert img.shape == ref.shape
        assert np.abs(img.astype(np.int16) - ref).mean() < 2.0   # one JPEG round trip
    r.close()
    it = mx.io.ImageRecordIter(path_imgrec=str(prefix) + ".rec", data_shape=(3, 64, 64),
                               batch_size=15, resize=64)
    got = np.concatenate([b.label[0].asnumpy() for b in it])
    np.testing.assert_array_equal(got, [lab for _, lab, _ in items])


def test_pack_resize_center_crop_threads_same_bytes(tmp_path):
    root = _tree(tmp_path, per_class=1)
    for n in ("1", "2"):
        d = tmp_path / n
        d.mkdir()
        _run(d / "p", root, "--list", "--recursive")
        _run(d / "p", root, "--resize", "24", "--center-crop", "--num-thread", n)
    assert open(tmp_path / "1" / "p.rec", "rb").read() == open(tmp_path / "2" / "p.rec", "rb").read()
    r = mx.recordio.MXIndexedRecordIO(str(tmp_path / "1" / "p.idx"), str(tmp_path / "1" / "p.rec"), "r")
    for k in r.keys:
        _, img = mx.recordio.unpack_img(r.read_idx(k))
        assert img.shape == (24, 24, 3)
    # without the crop the shorter edge becomes 24, the longer one scales (integer division)
    d = tmp_path / "nocrop"
    d.mkdir()
    _run(d / "p", root, "--list", "--recursive", "--no-shuffle")
    _run(d / "p", root, "--resize", "24")
    r = mx.recordio.MXIndexedRecordIO(str(d / "p.idx"), str(d / "p.rec"), "r")
    for i, _, p in _read_lst(d / "p.lst"):
        h0, w0 = _decode_np(open(os.path.join(root, p), "rb").read(), 1, False).shape[:2]
        _, img = mx.recordio.unpack_img(r.read_idx(i))
        want = (h0 * 24 // w0, 24) if h0 > w0 else (24, w0 * 24 // h0)
        assert img.shape[:2] == want


def test_pass_through_png_gray_and_pack_label(tmp_path):
    root = _tree(tmp_path, per_class=1)
    _run(tmp_path / "p", root, "--list", "--recursive", "--no-shuffle")
    _run(tmp_path / "p", root, "--pass-through")
    r = mx.recordio.MXIndexedRecordIO(str(tmp_path / "p.idx"), str(tmp_path / "p.rec"), "r")
    for i, lab, p in _read_lst(tmp_path / "p.lst"):
        h, payload = mx.recordio.unpack(r.read_idx(i))
        assert payload == open(os.path.join(root, p), "rb").read() and h.label == lab
    r.close()
    # grayscale PNG: lossless, so exactly the decoder's grayscale pixels
    _run(tmp_path / "p", root, "--encoding", ".png", "--color", "0")
    r = mx.recordio.MXIndexedRecordIO(str(tmp_path / "p.idx"), str(tmp_path / "p.rec"), "r")
    for i, lab, p in _read_lst(tmp_path / "p.lst"):
        _, img = mx.recordio.unpack_img(r.read_idx(i), 0)
        ref = _decode_np(open(os.path.join(root, p), "rb").read(), 0, False)[:, :, 0]
        np.testing.assert_array_equal(img.reshape(ref.shape), ref)
    r.close()
    # several labels per line: all packed with --pack-label, the first one without
    lst = tmp_path / "m.lst"
    coin = "coins/" + os.listdir(os.path.join(root, "coins"))[0]
    lst.write_text("7\t1.5\t2.5\t%s\n9\t3\t4\tnot/there.jpg\nbad line\n" % coin)
    for flag, want in (([], 1.5), (["--pack-label"], [1.5, 2.5])):
        _run(tmp_path / "m", root, *flag)
        r = mx.recordio.MXIndexedRecordIO(str(tmp_path / "m.idx"), str(tmp_path / "m.rec"), "r")
        assert r.keys == [7]                        # the missing image is skipped
        h, _ = mx.recordio.unpack(r.read_idx(7))
        np.testing.assert_array_equal(h.label, want)
        r.close()


def test_file_written_by_im2rec_was_read_by_mxnet():
    got = json.load(open(os.path.join(FIX, "im2rec_mxnet_readback.json")))
    assert got["mxnet"] == "1.9.1"
    prefix = os.path.join(FIX, "im2rec_written")
    items = {i: (lab, p) for i, lab, p in _read_lst(prefix + ".lst")}
    r = mx.recordio.MXIndexedRecordIO(prefix + ".idx", prefix + ".rec", "r")
    assert sorted(r.keys) == got["keys"]
    for k, lab, idd, shape, s in zip(got["keys"], got["labels"], got["ids"], got["shapes"],
                                     got["pixel_sums_bgr"]):
        h, img = mx.recordio.unpack_img(r.read_idx(k))
        assert h.label == lab == items[k][0] and h.id == idd == k
        assert list(img.shape) == shape
        # MXNet decoded with OpenCV, we with zune-jpeg: within JPEG decoder tolerance
        assert abs(int(img.astype(np.int64).sum()) - s) <= img.size
    it = mx.io.ImageRecordIter(path_imgrec=prefix + ".rec", data_shape=(3, 32, 32), batch_size=5)
    labels = [float(x) for b in it for x in b.label[0].asnumpy()]
    assert labels == got["image_record_iter_labels"]


def test_command_line_entry_point(tmp_path):
    root = _tree(tmp_path, per_class=1)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [os.path.dirname(os.path.dirname(mx.__file__)),
                                                    env.get("PYTHONPATH", "")] if p)
    cmd = [sys.executable, "-m", "oxnet.tools.im2rec", str(tmp_path / "q"), root]
    out = subprocess.run(cmd + ["--list", "--recursive"], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and "rocket 14" in out.stdout
    out = subprocess.run(cmd + ["--resize", "16"], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert os.path.getsize(tmp_path / "q.rec") > 0 and os.path.exists(tmp_path / "q.idx")
    out = subprocess.run([sys.executable, "-m", "oxnet.tools.im2rec", str(tmp_path / "zz"), root],
                         env=env, capture_output=True, text=True)
    assert out.returncode == 1 and "Did not find" in out.stdout
