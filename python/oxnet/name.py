"""Automatic symbol names (MXNet's ``mx.name``): ``NameManager`` numbers names per
hint (``fullyconnected0``, ``_mul1``); ``Prefix`` also prepends a prefix. Both are
context managers; the current manager is per thread."""

import threading

from .base import classproperty, _ClassPropertyMeta


class NameManager(metaclass=_ClassPropertyMeta):
    """Gives each unnamed symbol ``hint + counter``."""

    _current = threading.local()

    def __init__(self):
        self._counter = {}
        self._old_manager = None

    def get(self, name, hint):
        """The name to use: ``name`` when given, else ``hint`` numbered."""
        if name:
            return name
        n = self._counter.get(hint, 0)
        self._counter[hint] = n + 1
        return "%s%d" % (hint, n)

    def __enter__(self):
        if not hasattr(NameManager._current, "value"):
            NameManager._current.value = NameManager()
        self._old_manager = NameManager._current.value
        NameManager._current.value = self
        return self

    def __exit__(self, ptype, value, trace):
        NameManager._current.value = self._old_manager

    @classproperty
    def current(cls):  # pylint: disable=no-self-argument
        """The manager in force in this thread (settable: ``NameManager.current = m``)."""
        if not hasattr(NameManager._current, "value"):
            NameManager._current.value = NameManager()
        return NameManager._current.value

    @current.setter
    def current(cls, val):  # pylint: disable=no-self-argument
        NameManager._current.value = val


class Prefix(NameManager):
    """A name manager that prepends ``prefix`` to every name it gives."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)


def current():
    """The name manager of this thread."""
    if not hasattr(NameManager._current, "value"):
        NameManager._current.value = NameManager()
    return NameManager._current.value



__all__ = ["NameManager", "Prefix", "current"]
