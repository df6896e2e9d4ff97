"""Engine controls of ``mx.engine``: bulk execution.

MXNet can group consecutive operations into bulks to cut scheduling overhead. oxnet's
engine schedules each operation on its own and needs no bulking, so the bulk size is
kept only as MXNet's API states it: ``set_bulk_size`` returns the previous size, and
``with bulk(n):`` sets it for the block and restores it afterwards. Results never depend
on it."""

import threading

__all__ = ["set_bulk_size", "bulk"]

# Per thread, starting at 0, as in MXNet.
_state = threading.local()


def _get():
    return getattr(_state, "size", 0)


def set_bulk_size(size):
    """Sets the imperative bulk size (operations grouped per engine push; 0 or 1 turn
    grouping off) and returns the previous size."""
    if isinstance(size, bool) or not isinstance(size, int):
        raise TypeError("bulk size must be an int, got %r" % (size,))
    prev = _get()
    _state.size = size
    return prev


class _BulkScope:
    """Scope setting the bulk size for a ``with`` block."""

    def __init__(self, size):
        self._size = size
        self._old_size = None

    def __enter__(self):
        self._old_size = set_bulk_size(self._size)
        return self

    def __exit__(self, ptype, value, trace):
        set_bulk_size(self._old_size)


def bulk(size):
    """``with mx.engine.bulk(size):`` runs the block with bulk size ``size``."""
    return _BulkScope(size)
