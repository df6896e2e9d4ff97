"""Error types (MXNet's ``mx.error``): ``MXNetError``, ``InternalError`` and the registry
of error classes by name (``register_error``/``register``)."""

from .base import MXNetError, register_error

__all__ = ["MXNetError", "InternalError", "register", "register_error"]

register = register_error


@register_error
class InternalError(MXNetError):
    """An internal error of the library (a bug, not a bad argument)."""
