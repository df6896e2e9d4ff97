"""MNIST and Fashion-MNIST read from their IDX .gz files in ``root``.

Nothing is downloaded: the four files (``train-images-idx3-ubyte.gz``,
``train-labels-idx1-ubyte.gz``, ``t10k-images-idx3-ubyte.gz``,
``t10k-labels-idx1-ubyte.gz``) must be in ``root``; when they are missing an
``MXNetError`` names them. Samples are ``(image, label)``: a (28, 28, 1) uint8 NDArray
and an int32 NumPy scalar, as in MXNet.
"""

import os

import numpy as np

from .... import ndarray as nd
from ...._idx import MNIST_FILES, find_files, read_idx
from ..dataset import Dataset


class _IDXImages(Dataset):
    _what = "MNIST"

    def __init__(self, root, train, transform):
        self._root = os.path.expanduser(root)
        self._train = train
        self._transform = transform
        d = find_files(MNIST_FILES, [self._root], self._what, "root")
        img_file, lbl_file = (MNIST_FILES[0], MNIST_FILES[1]) if train else \
            (MNIST_FILES[2], MNIST_FILES[3])
        label = read_idx(os.path.join(d, lbl_file)).astype(np.int32)
        data = read_idx(os.path.join(d, img_file))
        if data.shape[0] != label.shape[0]:
            from ....base import MXNetError
            raise MXNetError("%s: %s holds %d images but %s holds %d labels"
                             % (self._what, img_file, data.shape[0], lbl_file, label.shape[0]))
        data = data.reshape(data.shape[0], data.shape[1], data.shape[2], 1)
        self._data = nd.array(data, dtype=data.dtype)
        self._label = label

    def __getitem__(self, idx):
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]

    def __len__(self):
        return len(self._label)


class MNIST(_IDXImages):
    """MNIST handwritten digits.

    Parameters
    ----------
    root : str
        Folder holding the four IDX .gz files.
    train : bool
        The training set (else the test set).
    transform : callable
        ``transform(data, label) -> (data, label)`` applied to each sample.
    """

    _what = "MNIST"

    def __init__(self, root=os.path.join("~", ".mxnet", "datasets", "mnist"), train=True,
                 transform=None):
        super().__init__(root, train, transform)


class FashionMNIST(_IDXImages):
    """Fashion-MNIST clothing images (same files and layout as MNIST)."""

    _what = "FashionMNIST"

    def __init__(self, root=os.path.join("~", ".mxnet", "datasets", "fashion-mnist"),
                 train=True, transform=None):
        super().__init__(root, train, transform)
