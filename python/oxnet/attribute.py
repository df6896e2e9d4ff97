"""``mx.AttrScope``: attributes given to every symbol created inside the scope."""

import threading
from collections import defaultdict

from .base import string_types, classproperty, _ClassPropertyMeta


class AttrScope(metaclass=_ClassPropertyMeta):
    """``with mx.AttrScope(ctx_group='dev1'):`` attaches the attributes to every
    symbol created within (values must be strings)."""

    _current = threading.local()
    # How many control-flow subgraphs of each name were made (names them uniquely).
    _subgraph_names = defaultdict(int)

    def __init__(self, **kwargs):
        self._old_scope = None
        for value in kwargs.values():
            if not isinstance(value, string_types):
                raise ValueError("Attributes need to be string")
        self._attr = kwargs

    def get(self, attr):
        """The scope's attributes updated with ``attr``."""
        if self._attr:
            ret = self._attr.copy()
            if attr:
                ret.update(attr)
            return ret
        return attr if attr else {}

    def __enter__(self):
        if not hasattr(AttrScope._current, "value"):
            AttrScope._current.value = AttrScope()
        self._old_scope = AttrScope._current.value
        attr = AttrScope._current.value._attr.copy()
        attr.update(self._attr)
        self._attr = attr
        AttrScope._current.value = self
        return self

    def __exit__(self, ptype, value, trace):
        AttrScope._current.value = self._old_scope

    @classproperty
    def current(cls):  # pylint: disable=no-self-argument
        """The scope in force in this thread (settable: ``AttrScope.current = s``)."""
        if not hasattr(cls._current, "value"):
            cls._current.value = AttrScope()
        return cls._current.value

    @current.setter
    def current(cls, val):  # pylint: disable=no-self-argument
        cls._current.value = val


def current():
    if not hasattr(AttrScope._current, "value"):
        AttrScope._current.value = AttrScope()
    return AttrScope._current.value


__all__ = ["AttrScope", "current"]
