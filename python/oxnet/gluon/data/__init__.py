"""``gluon.data``: datasets, samplers and the DataLoader."""

from .dataset import Dataset, SimpleDataset, ArrayDataset  # noqa: F401
from .sampler import Sampler, SequentialSampler, RandomSampler, BatchSampler  # noqa: F401
from .dataloader import DataLoader  # noqa: F401
from . import vision  # noqa: F401
