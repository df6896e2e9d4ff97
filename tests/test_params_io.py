"""mx.nd.save / mx.nd.load against files written by MXNet 1.9.1 (tests/fixtures/params,
made by make_params_fixtures.py with the MXNet oracle), byte-compatible both ways;
corrupt files raise MXNetError and never crash."""

import json
import os
import pickle
import shutil
import subprocess

import numpy as np
import pytest

import oxnet as mx

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "params")
EXPECTED = json.load(open(os.path.join(FIX, "expected.json")))
FILES = sorted(f for f in EXPECTED["files"] if f.endswith(".params"))


def _check(arr, want):
    assert arr.shape == tuple(want["shape"])
    assert np.dtype(arr.dtype).name == want["dtype"]
    got = arr.asnumpy()
    if "hex" in want:
        assert got.tobytes().hex() == want["hex"]


@pytest.mark.parametrize("fname", FILES)
def test_load_mxnet_files(fname):
    want = EXPECTED["files"][fname]
    np_sem = want.get("semantics") == "np"
    # As MXNet: a file saved under NumPy shape semantics loads only with them on, and
    # the others only with them off.
    if want["arrays"]:
        with mx.np_shape(not np_sem):
            with pytest.raises(mx.base.MXNetError, match="np_shape"):
                mx.nd.load(os.path.join(FIX, fname))
    with mx.np_shape(np_sem):
        loaded = mx.nd.load(os.path.join(FIX, fname))
    if want["kind"] == "dict":
        assert isinstance(loaded, dict) and list(loaded) == want["names"]
        arrays = list(loaded.values())
    else:
        assert isinstance(loaded, list)
        arrays = loaded
    assert len(arrays) == len(want["arrays"])
    for arr, w in zip(arrays, want["arrays"]):
        _check(arr, w)
        assert str(arr.context) == w.get("loaded_ctx", "cpu(0)")


@pytest.mark.parametrize("fname", [f for f in FILES if EXPECTED["files"][f].get("byte_exact")
                                   and EXPECTED["files"][f].get("semantics") == "legacy"])
def test_save_reproduces_mxnet_bytes(fname, tmp_path):
    want = EXPECTED["files"][fname]
    arrays = []
    for w in want["arrays"]:
        data = np.frombuffer(bytes.fromhex(w["hex"]), dtype=w["dtype"]).reshape(w["shape"])
        ctx = mx.Context(mx.Context.devtype2str[w["saved_ctx"][0]], w["saved_ctx"][1])
        arrays.append(mx.nd.array(data, ctx=ctx, dtype=w["dtype"]))
    out = tmp_path / "out.params"
    mx.nd.save(str(out), dict(zip(want["names"], arrays)) if want["kind"] == "dict" else arrays)
    assert out.read_bytes() == open(os.path.join(FIX, fname), "rb").read()


def test_seed_style_roundtrip(tmp_path):
    f = str(tmp_path / "mydata.bin")
    a, b = mx.nd.ones((2, 3)) * 2, mx.nd.array(np.arange(6).reshape(2, 3), dtype="int64")
    mx.nd.save(f, [a, b])
    c = mx.nd.load(f)
    np.testing.assert_array_equal(c[0].asnumpy(), a.asnumpy())
    assert c[1].dtype == np.int64
    mx.nd.save(f, {"a": a, "b": b})
    d = mx.nd.load(f)
    assert sorted(d) == ["a", "b"]
    mx.nd.save(f, a)
    assert len(mx.nd.load(f)) == 1
    with open(f, "rb") as fh:
        assert len(mx.nd.load_frombuffer(fh.read())) == 1


def test_pickle_matches_mxnet_state_bytes():
    raw = EXPECTED["raw"]
    for name, info in raw.items():
        blob = open(os.path.join(FIX, name), "rb").read()
        arr = mx.nd.ndarray._from_state({"handle": blob})
        assert arr.shape == tuple(info["shape"])
        if info.get("format", "V2") == "V2":
            assert arr.__getstate__()["handle"] == blob
    a = mx.nd.ones((2, 3))
    assert pickle.loads(pickle.dumps(a)).asnumpy().tolist() == a.asnumpy().tolist()


def test_bad_arguments():
    with pytest.raises(TypeError):
        mx.nd.save("/tmp/x.params", {1: mx.nd.ones(1)})
    with pytest.raises(ValueError):
        mx.nd.save("/tmp/x.params", 5)
    with pytest.raises(mx.base.MXNetError, match="cannot read"):
        mx.nd.load("/nonexistent/file.params")


def test_truncated_and_corrupt_files_raise_mxnet_error(tmp_path):
    good = open(os.path.join(FIX, "list_mixed.params"), "rb").read()
    rng = np.random.RandomState(0)
    for cut in sorted(set(rng.randint(0, len(good), 60).tolist())):
        with pytest.raises(mx.base.MXNetError, match="corrupt or truncated"):
            mx.nd.load_frombuffer(good[:cut])
    bad_magic = b"\x00" * 16 + good[16:]
    with pytest.raises(mx.base.MXNetError):
        mx.nd.load_frombuffer(bad_magic)
    # random byte flips: an error or a valid load, never a crash
    for i in range(300):
        buf = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            buf[rng.randint(0, len(buf))] = rng.randint(0, 256)
        try:
            mx.nd.load_frombuffer(bytes(buf))
        except mx.base.MXNetError:
            pass
    # a file on disk that is truncated
    p = tmp_path / "t.params"
    p.write_bytes(good[:40])
    with pytest.raises(mx.base.MXNetError):
        mx.nd.load(str(p))


def _mxnet_python():
    for cand in (os.environ.get("MXNET_PYTHON"), "benches/.mxnet-venv/bin/python", "/opt/mxnet-venv/bin/python"):
        if cand and os.path.exists(cand):
            return cand
    return None


@pytest.mark.skipif(_mxnet_python() is None, reason="MXNet 1.9.1 oracle not installed")
def test_files_written_by_oxnet_load_in_mxnet(tmp_path):
    f = str(tmp_path / "ox.params")
    mx.nd.save(f, {"w": mx.nd.array(np.arange(6).reshape(2, 3)), "b": mx.nd.array([1, 2], dtype="int32"),
                   "h": mx.nd.ones((2,), dtype="float16")})
    code = ("import mxnet as mx, sys\n"
            "d = mx.nd.load(sys.argv[1])\n"
            "print(sorted(d), d['w'].asnumpy().tolist(), d['b'].dtype.__name__, d['h'].dtype.__name__)\n")
    r = subprocess.run([_mxnet_python(), "-c", code, f], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-1000:]
    assert r.stdout.strip().splitlines()[-1] == \
        "['b', 'h', 'w'] [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] int32 float16"
