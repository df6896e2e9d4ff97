"""``mx.name``: automatic naming. ``NameManager`` hands out ``hint`` + counter names
(``dense0``, ``dense1``); ``Prefix`` is a manager that prepends a prefix. Gluon blocks
and symbols draw their default names from the thread's current manager."""

import threading


class NameManager:
    """Assigns unique default names: ``get(None, 'conv')`` -> ``conv0``, ``conv1``...
    Usable as ``with NameManager():`` to start a fresh count."""

    _current = threading.local()

    def __init__(self):
        self._counter = {}
        self._old_manager = None

    def get(self, name, hint):
        """``name`` when given, else the next ``hint<N>``."""
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

    @classmethod
    def current(cls):
        """The thread's current manager."""
        if not hasattr(cls._current, "value"):
            cls._current.value = NameManager()
        return cls._current.value


class Prefix(NameManager):
    """A name manager that prepends ``prefix`` to every name."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)


__all__ = ["NameManager", "Prefix"]
