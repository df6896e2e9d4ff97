"""Generic class registries (MXNet's ``mx.registry``): a registry per base class, with
functions to register subclasses under nicknames, add aliases, and create instances from
a name, a JSON string ``'["name", {kwargs}]'``, or an instance."""

import json
import warnings

from .base import string_types

__all__ = ["get_registry", "get_register_func", "get_alias_func", "get_create_func"]

_REGISTRY = {}


def get_registry(base_class):
    """A copy of the registry (name → class) of ``base_class``."""
    return dict(_REGISTRY.get(base_class, {}))


def get_register_func(base_class, nickname):
    """A decorator ``register(klass, name=None)`` registering subclasses of
    ``base_class`` under their lower-cased name (``nickname`` appears in messages)."""
    registry = _REGISTRY.setdefault(base_class, {})

    def register(klass, name=None):
        if not issubclass(klass, base_class):
            raise TypeError("Can only register subclass of %s" % base_class.__name__)
        name = (name or klass.__name__).lower()
        if name in registry:
            warnings.warn("\033[91mNew %s %s.%s registered with name %s is overriding "
                          "existing %s %s.%s\033[0m"
                          % (nickname, klass.__module__, klass.__name__, name, nickname,
                             registry[name].__module__, registry[name].__name__),
                          UserWarning, stacklevel=2)
        registry[name] = klass
        return klass

    register.__doc__ = "Register %s to the %s factory" % (nickname, nickname)
    return register


def get_alias_func(base_class, nickname):
    """A decorator factory ``alias(*names)`` registering a class under extra names."""
    register = get_register_func(base_class, nickname)

    def alias(*aliases):
        def reg(klass):
            for name in aliases:
                register(klass, name)
            return klass
        return reg
    return alias


def get_create_func(base_class, nickname):
    """A function ``create(name_or_json_or_instance, *args, **kwargs)`` making instances
    of registered subclasses of ``base_class``."""
    registry = _REGISTRY.setdefault(base_class, {})

    def create(*args, **kwargs):
        if args:
            name, args = args[0], args[1:]
        else:
            name = kwargs.pop(nickname)
        if isinstance(name, base_class):
            if args or kwargs:
                raise ValueError("%s is already an instance. Additional arguments are invalid"
                                 % nickname)
            return name
        if isinstance(name, dict):
            return create(**name)
        if not isinstance(name, string_types):
            raise TypeError("%s must be of string type" % nickname)
        if name.startswith("["):
            if args or kwargs:
                raise ValueError("%s is a JSON string; no further arguments are allowed"
                                 % nickname)
            name, kwargs = json.loads(name)
            return create(name, **kwargs)
        if name.startswith("{"):
            if args or kwargs:
                raise ValueError("%s is a JSON string; no further arguments are allowed"
                                 % nickname)
            return create(**json.loads(name))
        name = name.lower()
        if name not in registry:
            raise ValueError("%s is not registered. Please register with %s.register first"
                             % (str(name), nickname))
        return registry[name](*args, **kwargs)

    create.__doc__ = "Create a %s instance from config." % nickname
    return create
