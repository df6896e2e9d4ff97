"""``gluon.data.vision``: MNIST/FashionMNIST datasets and image transforms."""

from .datasets import MNIST, FashionMNIST  # noqa: F401
from . import transforms  # noqa: F401
