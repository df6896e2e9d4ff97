"""``mx.rnn.io``: text helpers for the symbolic RNN API -- ``encode_sentences`` (words
to integer ids) and ``BucketSentenceIter`` (batches of sentences grouped by length
into buckets, for ``mx.mod.BucketingModule``)."""

import bisect
import random

import numpy as np

from .. import ndarray
from ..base import MXNetError
from ..io import DataBatch, DataDesc, DataIter

__all__ = ["encode_sentences", "BucketSentenceIter"]


def encode_sentences(sentences, vocab=None, invalid_label=-1, invalid_key="\n",
                     start_label=0, unknown_token=None):
    """Encodes sentences (lists of words) as lists of integer ids.

    Parameters
    ----------
    sentences : list of list of str
    vocab : dict of str to int, optional
        The mapping to use (and extend); a new one is built when None.
    invalid_label : int
        The id never given to a word (``invalid_key`` maps to it in a new vocab).
    invalid_key : str
    start_label : int
        The first id given to a new word.
    unknown_token : str, optional
        With a given ``vocab``, words not in it are encoded as this token (added to the
        vocab the first time). Without it, an unknown word is an error.

    Returns
    -------
    (list of list of int, dict of str to int)
    """
    idx = start_label
    if vocab is None:
        vocab = {invalid_key: invalid_label}
        new_vocab = True
    else:
        new_vocab = False
    res = []
    for sent in sentences:
        coded = []
        for word in sent:
            if word not in vocab:
                if not (new_vocab or unknown_token):
                    raise MXNetError("Unknown token %s" % word)
                if unknown_token:
                    word = unknown_token
                # (MXNet gives the unknown token a new id at every unknown word; the
                # first one is kept here)
                if word not in vocab:
                    if idx == invalid_label:
                        idx += 1
                    vocab[word] = idx
                    idx += 1
            coded.append(vocab[word])
        res.append(coded)
    return res, vocab


class BucketSentenceIter(DataIter):
    """Batches of encoded sentences, each batch from one bucket (the shortest bucket
    length that holds the sentence; sentences are padded with ``invalid_label``). The
    label is the sentence shifted by one step (next-word prediction).

    Parameters
    ----------
    sentences : list of list of int
    batch_size : int
    buckets : list of int, optional
        Bucket lengths; by default every length with at least ``batch_size`` sentences.
    invalid_label : int
        Padding value (and the label after each sentence's last word).
    data_name, label_name : str
    dtype : str
    layout : str
        'NT' (batch major) or 'TN' (time major).
    """

    def __init__(self, sentences, batch_size, buckets=None, invalid_label=-1,
                 data_name="data", label_name="softmax_label", dtype="float32", layout="NT"):
        super().__init__()
        if not buckets:
            buckets = [i for i, j in enumerate(np.bincount([len(s) for s in sentences]))
                       if j >= batch_size]
        buckets = sorted(buckets)
        if not buckets:
            raise MXNetError("BucketSentenceIter: no bucket (no sentence length occurs "
                             "batch_size=%d times); give buckets" % batch_size)
        ndiscard = 0
        data = [[] for _ in buckets]
        for sent in sentences:
            buck = bisect.bisect_left(buckets, len(sent))
            if buck == len(buckets):
                ndiscard += 1
                continue
            buff = np.full((buckets[buck],), invalid_label, dtype=dtype)
            buff[:len(sent)] = sent
            data[buck].append(buff)
        # an empty bucket is an empty (0, length) array
        self.data = [np.asarray(d, dtype=dtype) if d else np.zeros((0, b), dtype=dtype)
                     for d, b in zip(data, buckets)]
        if ndiscard:
            print("WARNING: discarded %d sentences longer than the largest bucket." % ndiscard)
        self.batch_size = batch_size
        self.buckets = buckets
        self.data_name = data_name
        self.label_name = label_name
        self.dtype = dtype
        self.invalid_label = invalid_label
        self.nddata = []
        self.ndlabel = []
        self.major_axis = layout.find("N")
        self.layout = layout
        self.default_bucket_key = max(buckets)
        if self.major_axis == 0:
            shape = (batch_size, self.default_bucket_key)
        elif self.major_axis == 1:
            shape = (self.default_bucket_key, batch_size)
        else:
            raise ValueError("Invalid layout %s: Must by NT (batch major) or TN (time major)"
                             % layout)
        self.provide_data = [DataDesc(name=self.data_name, shape=shape, layout=self.layout)]
        self.provide_label = [DataDesc(name=self.label_name, shape=shape, layout=self.layout)]
        self.idx = []
        for i, buck in enumerate(self.data):
            self.idx.extend([(i, j) for j in range(0, len(buck) - batch_size + 1, batch_size)])
        self.curr_idx = 0
        self.reset()

    def reset(self):
        """Shuffles the batches and the sentences within each bucket."""
        self.curr_idx = 0
        random.shuffle(self.idx)
        for buck in self.data:
            np.random.shuffle(buck)
        self.nddata = []
        self.ndlabel = []
        for buck in self.data:
            label = np.empty_like(buck)
            label[:, :-1] = buck[:, 1:]
            label[:, -1] = self.invalid_label
            self.nddata.append(ndarray.array(buck, dtype=self.dtype))
            self.ndlabel.append(ndarray.array(label, dtype=self.dtype))

    def next(self):
        """The next batch (a DataBatch with ``bucket_key``)."""
        if self.curr_idx == len(self.idx):
            raise StopIteration
        i, j = self.idx[self.curr_idx]
        self.curr_idx += 1
        if self.major_axis == 1:
            data = self.nddata[i][j:j + self.batch_size].T
            label = self.ndlabel[i][j:j + self.batch_size].T
        else:
            data = self.nddata[i][j:j + self.batch_size]
            label = self.ndlabel[i][j:j + self.batch_size]
        return DataBatch([data], [label], pad=0, bucket_key=self.buckets[i],
                         provide_data=[DataDesc(name=self.data_name, shape=data.shape,
                                                layout=self.layout)],
                         provide_label=[DataDesc(name=self.label_name, shape=label.shape,
                                                 layout=self.layout)])
