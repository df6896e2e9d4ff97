"""Replays the kept fuzz corpus (tests/fixtures/fuzz: mutated JPEG, PNG and RecordIO
inputs, one per distinct outcome of a 30,000-input campaign): each gives a decoded image
or an MXNetError naming what was wrong, never a crash or another exception, and oxnet
keeps working afterwards."""

import os

import numpy as np
import pytest

import oxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "fixtures", "fuzz")
FILES = sorted(f for f in os.listdir(CORPUS) if f.endswith((".jpg", ".png", ".rec")))


def test_corpus_is_there():
    kinds = {f.rsplit(".", 1)[1] for f in FILES}
    assert kinds == {"jpg", "png", "rec"} and len(FILES) > 50


@pytest.mark.parametrize("kind", ["jpg", "png"])
def test_decoders_on_corpus(kind):
    errors = 0
    for f in (f for f in FILES if f.endswith(kind)):
        data = open(os.path.join(CORPUS, f), "rb").read()
        try:
            img = mx.image.imdecode(data)
        except mx.MXNetError as e:
            errors += 1
            assert "imdecode" in str(e), (f, str(e))
            continue
        assert img.ndim == 3 and img.shape[2] == 3 and img.dtype == np.uint8, f
        img.wait_to_read()
    assert errors > 0
    # still working
    ok = mx.recordio.pack_img((0, 0, 0, 0), np.full((4, 5, 3), 7, np.uint8), img_fmt=".png")[24:]
    assert (mx.image.imdecode(ok, to_rgb=0).asnumpy() == 7).all()


def test_recordio_reader_on_corpus():
    errors = 0
    for f in (f for f in FILES if f.endswith(".rec")):
        path = os.path.join(CORPUS, f)
        r = mx.recordio.MXRecordIO(path, "r")
        try:
            while True:
                s = r.read()
                if s is None:
                    break
                try:
                    mx.recordio.unpack_img(s)
                except mx.MXNetError:
                    pass
        except mx.MXNetError as e:
            errors += 1
            assert path in str(e), str(e)
        r.close()
    assert errors > 0
