"""Operator lists for automatic mixed precision: ``symbol_fp16`` (float16) and
``symbol_bf16`` (bfloat16)."""

from . import symbol_fp16  # noqa: F401
from . import symbol_bf16  # noqa: F401
