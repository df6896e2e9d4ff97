"""``KVStoreBase``: the interface every key-value store type implements, its registry of
store types (``KVStoreBase.register``), ``create`` and the ``teststore`` type that
MXNet ships for testing custom stores."""

import warnings

from ..base import MXNetError
from ..ndarray import NDArray

__all__ = ["KVStoreBase", "TestStore", "create"]


class KVStoreBase:
    """The interface of a key-value store. Subclasses registered with
    ``KVStoreBase.register`` can be created by their lower-cased class name with
    ``mx.kv.create``; every method here raises NotImplementedError until overridden."""

    kv_registry = {}

    #: Capability name: the store can run an optimizer (``set_optimizer``).
    OPTIMIZER = "optimizer"

    def broadcast(self, key, value, out, priority=0):
        """Broadcasts ``value`` (of rank 0) to every rank, into ``out``."""
        raise NotImplementedError()

    def pushpull(self, key, value, out=None, priority=0):
        """Sums ``value`` over devices and workers into ``out`` (``value`` when None)."""
        raise NotImplementedError()

    def set_optimizer(self, optimizer):
        """Lets the store run ``optimizer`` on pushed gradients."""
        raise NotImplementedError()

    @staticmethod
    def is_capable(capability):
        """Whether this store type supports ``capability`` (e.g. ``OPTIMIZER``)."""
        raise NotImplementedError()

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Saves the optimizer states to ``fname``."""
        raise NotImplementedError()

    def load_optimizer_states(self, fname):
        """Loads the optimizer states from ``fname``."""
        raise NotImplementedError()

    @property
    def type(self):
        """The store's type name."""
        raise NotImplementedError()

    @property
    def rank(self):
        """This worker's rank."""
        raise NotImplementedError()

    @property
    def num_workers(self):
        """The number of workers."""
        raise NotImplementedError()

    @staticmethod
    def register(klass):
        """Class decorator registering a store type under its lower-cased class name."""
        if not (isinstance(klass, type) and issubclass(klass, KVStoreBase)):
            raise TypeError("Can only register subclass of KVStoreBase, got %r" % (klass,))
        name = klass.__name__.lower()
        if name in KVStoreBase.kv_registry:
            warnings.warn("WARNING: New kvstore %s.%s is overriding existing kvstore %s.%s"
                          % (klass.__module__, klass.__name__,
                             KVStoreBase.kv_registry[name].__module__,
                             KVStoreBase.kv_registry[name].__name__))
        KVStoreBase.kv_registry[name] = klass
        return klass


@KVStoreBase.register
class TestStore(KVStoreBase):
    """A single-process store for testing custom store types: ``broadcast`` copies,
    ``pushpull`` sums over the given arrays; it cannot run an optimizer."""

    def broadcast(self, key, value, out, priority=0):
        """Copies ``value`` into ``out`` (an NDArray or a list)."""
        for o in (out if isinstance(out, list) else [out]):
            o[:] = value

    def pushpull(self, key, value, out=None, priority=0):
        """Writes the sum of ``value`` (an NDArray or a list of per-device NDArrays) into
        ``out``, or back into ``value`` when ``out`` is None."""
        if isinstance(value, NDArray):
            if out is not None:
                for o in (out if isinstance(out, list) else [out]):
                    o[:] = value
            return
        ctx = value[0].context
        total = value[0].as_in_context(ctx).copy()
        for v in value[1:]:
            total += v.as_in_context(ctx)
        targets = value if out is None else (out if isinstance(out, list) else [out])
        for o in targets:
            o[:] = total

    @staticmethod
    def is_capable(capability):
        """A TestStore supports no optimizer; ValueError for an unknown capability."""
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise ValueError("Unknown capability: {}".format(capability))

    @property
    def type(self):
        return "teststore"

    @property
    def rank(self):
        return 0

    @property
    def num_workers(self):
        return 1


# The native store kinds MXNet 1.9.1 accepts that oxnet runs, and the native store
# each one uses; MXNet keeps the requested name as the store's ``type``.
_DIST_TYPES = ("dist_sync", "dist_async", "dist_device_sync", "dist_sync_device",
               "dist_async_device", "dist")


def _native_kind(name):
    if name in ("horovod", "byteps"):
        raise MXNetError("kvstore type %r is not in oxnet; use the MPI stores 'dist_sync', "
                         "'dist_async', 'dist_device_sync'" % name)
    if "dist" in name:
        if name not in _DIST_TYPES:
            raise MXNetError("unknown kvstore type %r; the distributed types are %s"
                             % (name, ", ".join(repr(t) for t in _DIST_TYPES[:-1])))
        return "dist"
    if name == "nccl":
        return "nccl"
    if "device" in name:
        return "device"
    if name.startswith("local"):
        return "local"
    raise MXNetError("unknown kvstore type %r; oxnet provides 'local', 'device', 'nccl' (and MXNet's "
                     "'local_update_cpu', 'local_allreduce_cpu', 'local_allreduce_device'), "
                     "the distributed 'dist_sync', 'dist_async', 'dist_device_sync', "
                     "'dist_async_device', and the registered types %s"
                     % (name, sorted(KVStoreBase.kv_registry)))


def create(name="local"):
    """Creates a key-value store: a registered type (e.g. ``'teststore'``) by name, or a
    native one: ``'local'`` (and ``'local_update_cpu'``, ``'local_allreduce_cpu'``,
    which sum on the CPU) or ``'device'`` (``'local_allreduce_device'``: sums on the
    arrays' devices) or ``'nccl'`` (``'device'`` with the sums and broadcasts between
    GPUs done by NCCL; arrays on the host go the ``'device'`` way), or a distributed one on MPI: ``'dist_sync'``, ``'dist_async'``,
    ``'dist_device_sync'`` (``'dist_sync_device'``), ``'dist_async_device'`` (see
    ``kvstore.dist``). Names are case-insensitive."""
    if not isinstance(name, str):
        raise TypeError("name must be a string")
    name = name.lower()
    if name in KVStoreBase.kv_registry:
        return KVStoreBase.kv_registry[name]()
    kind = _native_kind(name)
    if kind == "dist":
        from .dist import DistKVStore
        return DistKVStore(name)
    from .. import _core
    from .kvstore import KVStore
    return KVStore(_core.KVStoreHandle(kind), name)
