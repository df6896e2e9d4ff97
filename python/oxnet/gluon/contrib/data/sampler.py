"""``gluon.contrib.data.sampler``: ``IntervalSampler`` (MXNet 1.9.1 keeps it here; it is
the same class as ``gluon.data.IntervalSampler``)."""

from ...data.sampler import IntervalSampler

__all__ = ["IntervalSampler"]
