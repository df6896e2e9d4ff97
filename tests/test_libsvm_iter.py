"""mx.io.LibSVMIter: CSR data batches (SciPy as the oracle), dense or CSR labels,
MXNet 1.9.1's round_batch/pad/reset, dmlc's byte partitioning, bad lines."""

import os

import numpy as np
import pytest
import scipy.sparse as sp

import oxnet as mx

DATA = "1.0 0:0.5 2:1.2\n-2.0\n-3.0 0:0.6 1:2.4 2:1.2\n4 2:-1.2\n"
LABEL = "1.0\n-2.0 0:0.125\n-3.0 2:1.2\n4 1:1.0 2:-1.2\n"


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return str(path)


def _write_matrix(path, m, y):
    """LibSVM text of the scipy CSR matrix ``m`` with labels ``y``."""
    lines = []
    for i in range(m.shape[0]):
        a, b = m.indptr[i], m.indptr[i + 1]
        feats = " ".join("%d:%r" % (c, float(v)) for c, v in zip(m.indices[a:b], m.data[a:b]))
        lines.append(("%r %s" % (float(y[i]), feats)).rstrip())
    return _write(path, "\n".join(lines) + "\n")


def test_mxnet_docstring_example(tmp_path):
    p = _write(tmp_path / "data.t", DATA)
    it = mx.io.LibSVMIter(data_libsvm=p, data_shape=(3,), batch_size=3)
    assert it.provide_data[0].shape == (3, 3) and it.provide_label[0].shape == (3,)
    b = list(it)
    assert len(b) == 2 and [x.pad for x in b] == [0, 2]
    d0 = b[0].data[0]
    assert isinstance(d0, mx.nd.sparse.CSRNDArray) and d0.stype == "csr"
    d0.check_format(True)
    np.testing.assert_allclose(d0.asnumpy(), [[0.5, 0, 1.2], [0, 0, 0], [0.6, 2.4, 1.2]])
    np.testing.assert_array_equal(b[0].label[0].asnumpy(), [1, -2, -3])
    np.testing.assert_allclose(b[1].data[0].asnumpy(), [[0, 0, -1.2], [0.5, 0, 1.2], [0, 0, 0]])
    np.testing.assert_array_equal(b[1].label[0].asnumpy(), [4, 1, -2])
    # the next epoch starts after the two padding rows (MXNet's sparse batch loader)
    it.reset()
    b = list(it)
    assert [x.pad for x in b] == [1]
    np.testing.assert_array_equal(b[0].label[0].asnumpy(), [-3, 4, 1])
    it.reset()
    np.testing.assert_array_equal(next(it).label[0].asnumpy(), [-2, -3, 4])


def test_label_file_gives_csr_labels(tmp_path):
    d = _write(tmp_path / "data.t", DATA)
    lab = _write(tmp_path / "label.t", LABEL)
    it = mx.io.LibSVMIter(data_libsvm=d, label_libsvm=lab, data_shape=(3,), label_shape=(3,),
                          batch_size=3)
    assert it.provide_label[0].shape == (3, 3)
    b = list(it)
    l0 = b[0].label[0]
    assert l0.stype == "csr"
    l0.check_format(True)
    np.testing.assert_allclose(l0.asnumpy(), [[0, 0, 0], [0.125, 0, 0], [0, 0, 1.2]])
    np.testing.assert_allclose(b[1].label[0].asnumpy(), [[0, 1, -1.2], [0, 0, 0], [0.125, 0, 0]])
    with pytest.raises(mx.MXNetError, match="label_shape"):
        mx.io.LibSVMIter(data_libsvm=d, label_libsvm=lab, data_shape=(3,), batch_size=3)
    with pytest.raises(mx.MXNetError, match="label_shape"):
        mx.io.LibSVMIter(data_libsvm=d, data_shape=(3,), label_shape=(3,), batch_size=3)
    short = _write(tmp_path / "short.t", "1 0:1\n")
    with pytest.raises(mx.MXNetError, match="rows"):
        mx.io.LibSVMIter(data_libsvm=d, label_libsvm=short, data_shape=(3,), label_shape=(3,),
                         batch_size=3)


def test_random_matrix_against_scipy(tmp_path):
    rng = np.random.RandomState(0)
    m = sp.random(203, 57, density=0.1, format="csr", random_state=rng, dtype=np.float64)
    m.data = np.round(m.data * 10 - 5, 3)
    y = rng.randint(0, 5, size=203).astype(np.float64)
    p = _write_matrix(tmp_path / "m.t", m, y)
    it = mx.io.LibSVMIter(data_libsvm=p, data_shape=(57,), batch_size=20)
    got, labels, pads = [], [], []
    for batch in it:
        batch.data[0].check_format(True)
        got.append(batch.data[0].asnumpy())
        labels.append(batch.label[0].asnumpy())
        pads.append(batch.pad)
    assert pads == [0] * 10 + [17]
    dense = np.concatenate(got)
    expect = m.toarray().astype(np.float32)
    np.testing.assert_allclose(dense[:203], expect, rtol=1e-6)
    np.testing.assert_allclose(dense[203:], expect[:17], rtol=1e-6)
    np.testing.assert_array_equal(np.concatenate(labels)[:203], y)
    # the CSR parts themselves (not only the dense view) equal SciPy's
    first = next(iter(mx.io.LibSVMIter(data_libsvm=p, data_shape=(57,), batch_size=20))).data[0]
    np.testing.assert_array_equal(first.indptr.asnumpy(), m[:20].indptr)
    np.testing.assert_array_equal(first.indices.asnumpy(), m[:20].indices)


def _dmlc_parts(raw, nparts):
    """Reference of dmlc's LineSplitter partition, written as the seek it does: part r
    starts at byte ceil(n/nparts)*r moved past the next run of line ends."""
    n = len(raw)
    nstep = -(-n // nparts)

    def seek(pos):
        if pos == 0 or pos >= n:
            return min(pos, n)
        while pos < n and raw[pos:pos + 1] not in (b"\n", b"\r"):
            pos += 1
        while pos < n and raw[pos:pos + 1] in (b"\n", b"\r"):
            pos += 1
        return pos

    out = []
    for r in range(nparts):
        a, b = seek(nstep * r), seek(nstep * (r + 1))
        out.append([ln.split()[0] for ln in raw[a:b].splitlines() if ln.strip()])
    return out


@pytest.mark.parametrize("nparts", [2, 3, 7])
def test_num_parts_split_bytes_like_dmlc(tmp_path, nparts):
    rng = np.random.RandomState(nparts)
    lines = []
    for i in range(40):
        k = rng.randint(0, 6)
        cols = np.sort(rng.choice(30, size=k, replace=False))
        lines.append(" ".join([str(i)] + ["%d:%.2f" % (c, rng.rand()) for c in cols]))
    raw = ("\n".join(lines) + "\n").encode()
    p = str(tmp_path / "p.t")
    open(p, "wb").write(raw)
    expect = _dmlc_parts(raw, nparts)
    assert sum(len(x) for x in expect) == 40
    for r in range(nparts):
        want = [float(x) for x in expect[r]]
        if not want:
            assert list(mx.io.LibSVMIter(data_libsvm=p, data_shape=(30,), batch_size=1,
                                         num_parts=nparts, part_index=r)) == []
            continue
        it = mx.io.LibSVMIter(data_libsvm=p, data_shape=(30,), batch_size=1, num_parts=nparts,
                              part_index=r)
        got = [float(b.label[0].asnumpy()[0]) for b in it]
        assert got == want


def test_directory_blank_lines_and_bare_index(tmp_path):
    d = tmp_path / "dir"
    d.mkdir()
    _write(d / "a.t", "1 0:2\n\n  \n2 1\n")       # "1" alone: value 1 (dmlc's rule)
    _write(d / "b.t", "3 2:5 3:1e-1")            # no final newline
    it = mx.io.LibSVMIter(data_libsvm=str(d), data_shape=(4,), batch_size=3)
    b = next(it)
    np.testing.assert_allclose(b.data[0].asnumpy(), [[2, 0, 0, 0], [0, 1, 0, 0], [0, 0, 5, 0.1]])
    np.testing.assert_array_equal(b.label[0].asnumpy(), [1, 2, 3])


@pytest.mark.parametrize("text,msg,line", [
    ("1 0:1\n2 -1:0.6 1:2\n", "negative", 2),
    ("1 0:1\n2 3:0.6\n", "outside", 2),
    ("1 0:1\n2 1:x\n", "not a number", 2),
    ("1 0:1\n\n2 1:0.5 0:1\n", "ascending", 3),
    ("1 0:1 0:2\n", "ascending", 1),
    ("1 0:\n", "':'", 1),
    ("1 0:1:2\n", "':'", 1),
    ("1 1.5:1\n", "integer", 1),
])
def test_bad_lines_name_file_and_line(tmp_path, text, msg, line):
    p = _write(tmp_path / "bad.t", text)
    with pytest.raises(mx.MXNetError, match=msg) as e:
        mx.io.LibSVMIter(data_libsvm=p, data_shape=(3,), batch_size=1)
    assert "bad.t line %d" % line in str(e.value)


def test_bad_arguments(tmp_path):
    p = _write(tmp_path / "data.t", DATA)
    with pytest.raises(mx.MXNetError, match="no such file"):
        mx.io.LibSVMIter(data_libsvm=str(tmp_path / "nope"), data_shape=(3,))
    with pytest.raises(mx.MXNetError, match="data_shape"):
        mx.io.LibSVMIter(data_libsvm=p, data_shape=(3, 1))
    with pytest.raises(mx.MXNetError, match="round_batch"):
        list(mx.io.LibSVMIter(data_libsvm=p, data_shape=(3,), batch_size=3, round_batch=False))
    with pytest.raises(mx.MXNetError, match="bigger than batch size"):
        list(mx.io.LibSVMIter(data_libsvm=p, data_shape=(3,), batch_size=9))
    # round_batch=False is fine while every batch is full
    b = list(mx.io.LibSVMIter(data_libsvm=p, data_shape=(3,), batch_size=2, round_batch=False))
    assert len(b) == 2 and b[1].pad == 0
    with pytest.raises(mx.MXNetError, match="part_index"):
        mx.io.LibSVMIter(data_libsvm=p, data_shape=(3,), num_parts=2, part_index=2)
    assert os.path.exists(p)


def test_same_batches_as_mxnet_1_9_1():
    """Batches MXNet 1.9.1 gave on the fixture (tests/fixtures/libsvm), two epochs each:
    padding, reset, label:weight, blank lines, CSR labels and 2/3/5-way byte splits."""
    import json
    import sys
    here = os.path.join(os.path.dirname(__file__), "fixtures", "libsvm")
    want = json.load(open(os.path.join(here, "mxnet_batches.json")))
    assert want.pop("mxnet") == "1.9.1"
    sys.path.insert(0, here)
    try:
        from make_libsvm_fixture import CONFIGS
    finally:
        sys.path.remove(here)
    for name, kw in CONFIGS.items():
        it = mx.io.LibSVMIter(data_libsvm=os.path.join(here, "data.t"), **kw)
        got = []
        for _ in range(2):
            for b in it:
                got.append((b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad, b.data[0].stype,
                            b.label[0].stype))
            it.reset()
        assert len(got) == len(want[name]), name
        for (d, l, pad, ds, ls), (wd, wl, wpad, wds, wls) in zip(got, want[name]):
            np.testing.assert_allclose(d, wd, atol=1e-6)
            np.testing.assert_allclose(l, wl, atol=1e-6)
            assert (pad, ds, ls) == (wpad, wds, wls), name
