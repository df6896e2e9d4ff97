"""mx.contrib.text (count_tokens_from_str, Vocabulary) and the WikiText datasets of
gluon.contrib.data.text, read from local files (nothing is downloaded here: the
download is replaced by a failing stub to check the error)."""

import collections
import os
import zipfile

import numpy as np
import pytest

import oxnet as mx
from oxnet.base import MXNetError
from oxnet.contrib import text
from oxnet.gluon.contrib.data import text as ctext


def test_count_tokens_from_str():
    c = text.utils.count_tokens_from_str(" Life is great ! \n life is good . \n", " ", "\n",
                                         True)
    assert c == collections.Counter({"life": 2, "is": 2, "great": 1, "!": 1, "good": 1,
                                     ".": 1})
    c2 = text.utils.count_tokens_from_str("a,b;a", ",", ";", counter_to_update=c)
    assert c2 is c and c["a"] == 2 and c["b"] == 1


def test_vocabulary_order_and_lookup():
    counter = collections.Counter({"b": 3, "a": 3, "c": 1, "d": 2, "<pad>": 5})
    v = text.vocab.Vocabulary(counter, reserved_tokens=["<pad>", "<eos>"])
    # unknown first, reserved next, then by frequency (ties sorted), reserved not twice
    assert v.idx_to_token == ["<unk>", "<pad>", "<eos>", "a", "b", "d", "c"]
    assert len(v) == 7 and v.unknown_token == "<unk>"
    assert v.reserved_tokens == ["<pad>", "<eos>"]
    assert v.to_indices("d") == 5 and v.to_indices(["c", "zzz"]) == [6, 0]
    assert v.to_tokens(3) == "a" and v.to_tokens([4, 0]) == ["b", "<unk>"]
    small = text.vocab.Vocabulary(counter, most_freq_count=2, min_freq=2)
    assert small.idx_to_token == ["<unk>", "<pad>", "a"]
    assert text.vocab.Vocabulary(counter, min_freq=3).idx_to_token == [
        "<unk>", "<pad>", "a", "b"]


def test_vocabulary_bad_inputs():
    with pytest.raises(AssertionError):
        text.vocab.Vocabulary(min_freq=0)
    with pytest.raises(AssertionError):
        text.vocab.Vocabulary(reserved_tokens=["<unk>"])
    with pytest.raises(AssertionError):
        text.vocab.Vocabulary(reserved_tokens=["x", "x"])
    with pytest.raises(AssertionError):
        text.vocab.Vocabulary(counter={"a": 1})
    v = text.vocab.Vocabulary(collections.Counter("ab"))
    with pytest.raises(ValueError):
        v.to_tokens(3)
    with pytest.raises(ValueError):
        v.to_tokens([1.0])


_CORPUS = " = Title = \n\n the cat sat on the mat \n the dog \n"


def _accept_any_sha1(monkeypatch):
    monkeypatch.setattr(ctext, "check_sha1", lambda path, sha1: True)


def test_wikitext2_from_local_token_file(tmp_path, monkeypatch):
    _accept_any_sha1(monkeypatch)
    (tmp_path / "wiki.train.tokens").write_text(_CORPUS, encoding="utf8")
    ds = ctext.WikiText2(root=str(tmp_path), segment="train", seq_len=4)
    tokens = "= Title = <eos> the cat sat on the mat <eos> the dog <eos>".split()
    vocab = ds.vocabulary
    assert vocab.idx_to_token[:2] == ["<unk>", "<eos>"]
    assert ds.frequencies["the"] == 3 and "<eos>" not in ds.frequencies
    idx = np.array(vocab.to_indices(tokens), dtype=np.int32)
    n = (len(idx) - 1) // 4 * 4
    assert len(ds) == n // 4 == 3
    data, label = ds[1]
    assert data.dtype == np.int32 and data.shape == (4,)
    np.testing.assert_array_equal(data.asnumpy(), idx[4:8])
    np.testing.assert_array_equal(label.asnumpy(), idx[5:9])
    # another segment indexed with the training vocabulary
    (tmp_path / "wiki.test.tokens").write_text(" the bird \n", encoding="utf8")
    test = ctext.WikiText2(root=str(tmp_path), segment="test", vocab=vocab, seq_len=1)
    assert test.vocabulary is vocab
    np.testing.assert_array_equal(test[0][0].asnumpy(), [vocab.to_indices("the")])
    np.testing.assert_array_equal(test[0][1].asnumpy(), [0])   # 'bird' is unknown


def test_wikitext103_unpacks_a_local_archive(tmp_path, monkeypatch):
    _accept_any_sha1(monkeypatch)
    with zipfile.ZipFile(str(tmp_path / "wikitext-103-v1.zip"), "w") as zf:
        zf.writestr("wikitext-103/wiki.valid.tokens", _CORPUS)
    ds = ctext.WikiText103(root=str(tmp_path), segment="validation", seq_len=2)
    assert os.path.exists(str(tmp_path / "wiki.valid.tokens"))
    assert len(ds) == 6     # 14 tokens: 13 (data, label) pairs, 6 rows of 2


def test_wikitext_missing_files_and_bad_segment(tmp_path, monkeypatch):
    def no_network(url, **kwargs):
        raise OSError("no network in this test")
    monkeypatch.setattr(ctext, "download", no_network)
    with pytest.raises(MXNetError, match="wikitext-2-v1.zip"):
        ctext.WikiText2(root=str(tmp_path))
    with pytest.raises(MXNetError, match="segment"):
        ctext.WikiText2(root=str(tmp_path), segment="dev")
    assert mx.gluon.contrib.data.text is ctext
