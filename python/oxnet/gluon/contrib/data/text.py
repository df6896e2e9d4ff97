"""Word-level language-model datasets: ``WikiText2`` and ``WikiText103`` (Merity et al.
2016), as in MXNet 1.9.1's ``gluon.contrib.data.text``.

A segment's token file (``wiki.train.tokens``, ``wiki.valid.tokens``,
``wiki.test.tokens``) is read from ``root`` when it is there with the published SHA-1;
otherwise the archive is taken from ``root`` or fetched from ``$MXNET_GLUON_REPO``
(default Apache's bucket, ``gluon/dataset/<name>/<archive>``) and unpacked into
``root``. Without the files and without network an MXNetError names what is expected.

Each line's tokens get an end-of-sentence token ``<eos>``; the token stream, indexed by
the vocabulary (built from the segment's counts with ``<eos>`` reserved unless one is
given), is cut into rows of ``seq_len`` tokens: sample ``i`` is (tokens, the next
tokens), two int32 NDArrays of length ``seq_len``.
"""

import os
import shutil
import zipfile

import numpy as np

from . import _constants as C
from .... import base
from .... import ndarray as nd
from ....base import MXNetError
from ....contrib import text
from ...data.dataset import Dataset
from ...utils import check_sha1, download

__all__ = ["WikiText2", "WikiText103"]


def _repo_file_url(namespace, filename):
    from ...model_zoo.model_store import apache_repo_url
    repo = os.environ.get("MXNET_GLUON_REPO", apache_repo_url)
    if not repo.endswith("/"):
        repo += "/"
    return "{}{}/{}".format(repo, namespace, filename)


class _LanguageModelDataset(Dataset):
    """A corpus read once at construction, with its vocabulary and token counts."""

    def __init__(self, root, namespace, vocabulary):
        self._root = os.path.expanduser(root)
        self._vocab = vocabulary
        self._counter = None
        self._namespace = namespace
        os.makedirs(self._root, exist_ok=True)
        self._get_data()

    @property
    def vocabulary(self):
        """The ``contrib.text.vocab.Vocabulary`` indexing the tokens."""
        return self._vocab

    @property
    def frequencies(self):
        """The ``collections.Counter`` of the segment's tokens."""
        return self._counter

    def _build_vocab(self, content):
        if not self._counter:
            self._counter = text.utils.count_tokens_from_str(content)
        if not self._vocab:
            self._vocab = text.vocab.Vocabulary(counter=self.frequencies,
                                                reserved_tokens=[C.EOS_TOKEN])


class _WikiText(_LanguageModelDataset):
    _archive_file = None
    _data_file = None

    def _read_batch(self, filename):
        with open(filename, "r", encoding="utf8") as fin:
            content = fin.read()
        self._build_vocab(content)
        tokens = []
        for line in content.splitlines():
            words = line.split()
            if words:
                tokens.extend(words)
                tokens.append(C.EOS_TOKEN)
        indices = np.array(self.vocabulary.to_indices(tokens), dtype=np.int32)
        return indices[:-1], indices[1:]

    def _fetch(self):
        archive_name, archive_hash = self._archive_file
        archive = os.path.join(self._root, archive_name)
        if not (os.path.exists(archive) and check_sha1(archive, archive_hash)):
            url = _repo_file_url("gluon/dataset/" + self._namespace, archive_name)
            try:
                archive = download(url, path=self._root, sha1_hash=archive_hash, retries=1)
            except Exception as e:  # noqa: BLE001 -- any failure of the fetch
                raise MXNetError(
                    "%s: the %s segment (%s) is not in %s and the archive could not be "
                    "downloaded from %s (%s). Put %s (or the unpacked token files) in %s."
                    % (type(self).__name__, self._segment, self._data_file[self._segment][0],
                       self._root, url, e, archive_name, self._root)) from None
        with zipfile.ZipFile(archive, "r") as zf:
            for member in zf.namelist():
                filename = os.path.basename(member)
                if filename:
                    with zf.open(member) as source, \
                            open(os.path.join(self._root, filename), "wb") as target:
                        shutil.copyfileobj(source, target)

    def _get_data(self):
        if self._segment not in self._data_file:
            raise MXNetError("%s: segment must be one of %s, got %r"
                             % (type(self).__name__, sorted(self._data_file), self._segment))
        data_name, data_hash = self._data_file[self._segment]
        path = os.path.join(self._root, data_name)
        if not os.path.exists(path) or not check_sha1(path, data_hash):
            self._fetch()
        data, label = self._read_batch(path)
        # whole rows only: the stream is cut to a multiple of seq_len
        n = len(data) // self._seq_len * self._seq_len
        self._data = nd.array(data[:n], dtype=np.int32).reshape((-1, self._seq_len))
        self._label = nd.array(label[:n], dtype=np.int32).reshape((-1, self._seq_len))

    def __getitem__(self, idx):
        return self._data[idx], self._label[idx]

    def __len__(self):
        return len(self._label)


class WikiText2(_WikiText):
    """WikiText-2 word-level language-modelling corpus (Salesforce Research; CC BY-SA).

    Parameters
    ----------
    root : str
        Folder of the data (default ``$MXNET_HOME/datasets/wikitext-2``).
    segment : str
        'train', 'validation' or 'test'.
    vocab : contrib.text.vocab.Vocabulary or None
        The vocabulary indexing the tokens (None: built from this segment).
    seq_len : int
        Tokens per sample.
    """

    def __init__(self, root=os.path.join(base.data_dir(), "datasets", "wikitext-2"),
                 segment="train", vocab=None, seq_len=35):
        self._archive_file = ("wikitext-2-v1.zip", "3c914d17d80b1459be871a5039ac23e752a53cbe")
        self._data_file = {
            "train": ("wiki.train.tokens", "863f29c46ef9d167fff4940ec821195882fe29d1"),
            "validation": ("wiki.valid.tokens", "0418625c8b4da6e4b5c7a0b9e78d4ae8f7ee5422"),
            "test": ("wiki.test.tokens", "c7b8ce0aa086fb34dab808c5c49224211eb2b172")}
        self._segment = segment
        self._seq_len = seq_len
        super().__init__(root, "wikitext-2", vocab)


class WikiText103(_WikiText):
    """WikiText-103 word-level language-modelling corpus (Salesforce Research; CC BY-SA).
    Parameters as ``WikiText2`` (default root ``$MXNET_HOME/datasets/wikitext-103``)."""

    def __init__(self, root=os.path.join(base.data_dir(), "datasets", "wikitext-103"),
                 segment="train", vocab=None, seq_len=35):
        self._archive_file = ("wikitext-103-v1.zip",
                              "0aec09a7537b58d4bb65362fee27650eeaba625a")
        self._data_file = {
            "train": ("wiki.train.tokens", "b7497e2dfe77e72cfef5e3dbc61b7b53712ac211"),
            "validation": ("wiki.valid.tokens", "c326ac59dc587676d58c422eb8a03e119582f92b"),
            "test": ("wiki.test.tokens", "8a5befc548865cec54ed4273cf87dbbad60d1e47")}
        self._segment = segment
        self._seq_len = seq_len
        super().__init__(root, "wikitext-103", vocab)
