"""``mx.io``: data descriptions, batches and iterators (``NDArrayIter``)."""

from .io import DataDesc, DataBatch, DataIter, NDArrayIter  # noqa: F401

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter"]
