"""examples/train_photos_rec.py runs (one short epoch on data/photos-small with
ImageRecordIter) and its training loss goes down. No timing assertions."""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

import train_photos_rec  # noqa: E402


def test_train_photos_rec_tiny(capsys):
    hist = train_photos_rec.main(["--epochs", "1", "--max-batches", "10", "--batch-size", "32"])
    out = capsys.readouterr().out
    assert "10/10" in out and "val acc" in out and "final validation accuracy" in out
    losses = hist["loss"]
    assert len(losses) == 10 and np.isfinite(losses).all()
    assert np.mean(losses[-3:]) < np.mean(losses[:3])
    assert 0.0 <= hist["val_acc"][0] <= 1.0
