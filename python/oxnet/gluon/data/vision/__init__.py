"""``gluon.data.vision``: datasets (MNIST, FashionMNIST, CIFAR10/100, image records,
folders and lists) and image transforms."""

from .datasets import MNIST, FashionMNIST  # noqa: F401
from .image_datasets import (ImageRecordDataset, ImageFolderDataset,  # noqa: F401
                             ImageListDataset, CIFAR10, CIFAR100)
from . import transforms  # noqa: F401
