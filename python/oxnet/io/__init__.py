"""``mx.io``: data descriptions, batches and iterators: ``NDArrayIter``,
``ImageRecordIter`` (Rust decode and augmentation), ``CSVIter``, ``LibSVMIter``,
``MNISTIter``, ``ResizeIter``, ``PrefetchingIter``."""

from .io import DataDesc, DataBatch, DataIter, NDArrayIter  # noqa: F401
from .image_record import (ImageRecordIter, ImageRecordUInt8Iter,  # noqa: F401
                           ImageRecordIter_v1, ImageRecordUInt8Iter_v1)
from .text_iters import CSVIter, MNISTIter  # noqa: F401
from .libsvm import LibSVMIter  # noqa: F401
from .wrappers import ResizeIter, PrefetchingIter  # noqa: F401

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter", "ImageRecordIter",
           "ImageRecordUInt8Iter", "ImageRecordIter_v1", "ImageRecordUInt8Iter_v1", "CSVIter",
           "LibSVMIter", "MNISTIter", "ResizeIter", "PrefetchingIter"]
