"""``gluon.data``: datasets, samplers and the DataLoader."""

from .dataset import Dataset, SimpleDataset, ArrayDataset, RecordFileDataset  # noqa: F401
from .sampler import (Sampler, SequentialSampler, RandomSampler, BatchSampler,  # noqa: F401
                      IntervalSampler)
from .dataloader import DataLoader  # noqa: F401
from . import vision  # noqa: F401
