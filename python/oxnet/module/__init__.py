"""``mx.mod`` / ``mx.module``: MXNet 1.x's classic symbolic training API.

``Module`` binds a Symbol to executors (one per context, the batch split between
them), keeps host copies of the parameters, and runs ``forward`` / ``backward`` /
``update`` with an optimizer from ``mx.optimizer``; ``BaseModule`` gives ``fit``,
``score``, ``predict``, ``iter_predict`` and parameter files on top of that."""

from .base_module import BaseModule  # noqa: F401
from .module import Module  # noqa: F401
from .bucketing_module import BucketingModule  # noqa: F401
from .sequential_module import SequentialModule  # noqa: F401
from . import executor_group  # noqa: F401

__all__ = ["BaseModule", "Module", "BucketingModule", "SequentialModule"]
