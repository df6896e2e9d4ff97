"""Image datasets of ``gluon.data.vision``: ``ImageRecordDataset`` (a ``.rec``
file), ``ImageFolderDataset`` (a class-per-folder tree), ``ImageListDataset`` (a
``.lst`` file or a list) and ``CIFAR10``/``CIFAR100`` (their binary files in
``root``). Images are decoded in Rust by ``mx.image.imdecode``/``imread``: HWC
``uint8`` RGB NDArrays.

CIFAR files are not downloaded (oxnet runs offline): when they are missing an
``MXNetError`` names the files and where to put them.
"""

import os
import tarfile
import warnings

import numpy as np

from .... import image
from .... import ndarray as nd
from .... import recordio
from ....base import MXNetError
from ..dataset import Dataset, RecordFileDataset

__all__ = ["ImageRecordDataset", "ImageFolderDataset", "ImageListDataset", "CIFAR10",
           "CIFAR100"]


class ImageRecordDataset(RecordFileDataset):
    """A dataset over a RecordIO file of packed images (``recordio.pack_img``).

    Parameters
    ----------
    filename : str
        Path to the ``.rec`` file (the ``.idx`` beside it is used).
    flag : {0, 1}, default 1
        1 for three-channel colour images, 0 for grayscale.
    transform : callable, optional
        ``transform(data, label) -> (data, label)``.
    """

    def __init__(self, filename, flag=1, transform=None):
        super(ImageRecordDataset, self).__init__(filename)
        self._flag = flag
        self._transform = transform

    def __getitem__(self, idx):
        record = super(ImageRecordDataset, self).__getitem__(idx)
        header, img = recordio.unpack(record)
        try:
            img = image.imdecode(img, self._flag)
        except MXNetError as e:
            raise MXNetError("%s record %d: %s" % (self.filename, idx, e)) from None
        if self._transform is not None:
            return self._transform(img, header.label)
        return img, header.label


class ImageFolderDataset(Dataset):
    """A dataset over images stored as ``root/<class>/<image>``; the label is the
    index of the class folder in sorted order (``synsets``).

    Parameters
    ----------
    root : str
    flag : {0, 1}, default 1
    transform : callable, optional
        ``transform(data, label) -> (data, label)``.
    """

    def __init__(self, root, flag=1, transform=None):
        self._root = os.path.expanduser(root)
        self._flag = flag
        self._transform = transform
        self._exts = [".jpg", ".jpeg", ".png"]
        self._list_images(self._root)

    def _list_images(self, root):
        self.synsets = []
        self.items = []
        if not os.path.isdir(root):
            raise MXNetError("ImageFolderDataset: %s is not a folder" % root)
        for folder in sorted(os.listdir(root)):
            path = os.path.join(root, folder)
            if not os.path.isdir(path):
                warnings.warn("Ignoring %s, which is not a directory." % path, stacklevel=3)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for filename in sorted(os.listdir(path)):
                filename = os.path.join(path, filename)
                ext = os.path.splitext(filename)[1]
                if ext.lower() not in self._exts:
                    warnings.warn("Ignoring %s of type %s. Only support %s" % (
                        filename, ext, ", ".join(self._exts)))
                    continue
                self.items.append((filename, label))

    def __getitem__(self, idx):
        img = image.imread(self.items[idx][0], self._flag)
        label = self.items[idx][1]
        if self._transform is not None:
            return self._transform(img, label)
        return img, label

    def __len__(self):
        return len(self.items)


class ImageListDataset(Dataset):
    """A dataset over a list of images: ``imglist`` is a ``.lst`` file under ``root``
    (``index<TAB>label(s)<TAB>path``) or a list of ``[label(s)..., path]``.

    Parameters
    ----------
    root : str, default '.'
        Folder the image paths are relative to.
    imglist : str or list
    flag : {0, 1}, default 1
    """

    def __init__(self, root=".", imglist=None, flag=1):
        self._root = root
        self._flag = flag
        self._transform = None
        self.items = []
        if isinstance(imglist, str):
            fname = os.path.join(root, imglist)
            with open(fname, "rt") as fin:
                for n, line in enumerate(fin):
                    parts = line.strip().split("\t")
                    if parts == [""]:
                        continue
                    if len(parts) < 3:
                        raise MXNetError("%s line %d: expected 'index<TAB>label(s)<TAB>path', "
                                         "got %r" % (fname, n + 1, line))
                    try:
                        label = np.array([float(x) for x in parts[1:-1]], dtype=np.float32)
                    except ValueError:
                        raise MXNetError("%s line %d: cannot parse the labels of %r"
                                         % (fname, n + 1, line)) from None
                    if label.size == 1:
                        label = label[0]
                    self.items.append((os.path.join(root, parts[-1]), label))
        elif imglist is not None:
            for item in imglist:
                if isinstance(item, str):
                    path, label = item, 0.0
                else:
                    path = item[-1]
                    label = np.array(item[:-1], dtype=np.float32)
                    if label.size == 1:
                        label = label[0]
                self.items.append((os.path.join(root, path), label))
        else:
            raise ValueError("imglist must be a .lst file name or a list")

    def __getitem__(self, idx):
        img = image.imread(self.items[idx][0], self._flag)
        label = self.items[idx][1]
        if self._transform is not None:
            return self._transform(img, label)
        return img, label

    def __len__(self):
        return len(self.items)


class _CIFAR(Dataset):
    _what = "CIFAR10"
    _archive = "cifar-10-binary.tar.gz"
    _train = ["data_batch_%d.bin" % i for i in range(1, 6)]
    _test = ["test_batch.bin"]
    _label_bytes = 1

    def __init__(self, root, train, transform):
        self._root = os.path.expanduser(root)
        self._transform = transform
        names = self._train if train else self._test
        paths = self._find(names)
        data, label = zip(*(self._read_batch(p) for p in paths))
        self._data = nd.array(np.concatenate(data), dtype=np.uint8)
        self._label = np.concatenate(label).astype(np.int32)

    def _find(self, names):
        for d in [self._root] + [os.path.join(self._root, x) for x in
                                 ("cifar-10-batches-bin", "cifar-100-binary")]:
            if all(os.path.exists(os.path.join(d, n)) for n in names):
                return [os.path.join(d, n) for n in names]
        archive = os.path.join(self._root, self._archive)
        if os.path.exists(archive):
            with tarfile.open(archive) as tar:
                tar.extractall(self._root, filter="data")
            return self._find_no_extract(names)
        raise MXNetError("%s: cannot find %s in %s (nor %s). oxnet does not download "
                         "data sets: put the binary files (or the archive) there."
                         % (self._what, ", ".join(names), self._root, self._archive))

    def _find_no_extract(self, names):
        for d in [self._root] + [os.path.join(self._root, x) for x in
                                 ("cifar-10-batches-bin", "cifar-100-binary")]:
            if all(os.path.exists(os.path.join(d, n)) for n in names):
                return [os.path.join(d, n) for n in names]
        raise MXNetError("%s: the archive in %s does not hold %s" %
                         (self._what, self._root, ", ".join(names)))

    def _read_batch(self, filename):
        raw = np.fromfile(filename, dtype=np.uint8)
        rec = self._label_bytes + 3072
        if raw.size % rec:
            raise MXNetError("%s: %s is truncated or not a CIFAR binary file (%d bytes is not "
                             "a multiple of %d)" % (self._what, filename, raw.size, rec))
        raw = raw.reshape(-1, rec)
        data = raw[:, self._label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        return data, raw[:, self._label_index()]

    def _label_index(self):
        return 0

    def __getitem__(self, idx):
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]

    def __len__(self):
        return len(self._label)


class CIFAR10(_CIFAR):
    """CIFAR10 from its binary files (``data_batch_1.bin`` ... ``test_batch.bin``) in
    ``root``; samples are ``(32, 32, 3) uint8`` images and ``int32`` labels."""

    def __init__(self, root=os.path.join("~", ".mxnet", "datasets", "cifar10"), train=True,
                 transform=None):
        super(CIFAR10, self).__init__(root, train, transform)


class CIFAR100(_CIFAR):
    """CIFAR100 from its binary files (``train.bin``, ``test.bin``) in ``root``;
    ``fine_label`` selects the 100 fine classes instead of the 20 coarse ones."""

    _what = "CIFAR100"
    _archive = "cifar-100-binary.tar.gz"
    _train = ["train.bin"]
    _test = ["test.bin"]
    _label_bytes = 2

    def __init__(self, root=os.path.join("~", ".mxnet", "datasets", "cifar100"),
                 fine_label=False, train=True, transform=None):
        self._fine_label = fine_label
        super(CIFAR100, self).__init__(root, train, transform)

    def _label_index(self):
        return 1 if self._fine_label else 0
