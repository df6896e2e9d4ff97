"""``mx.kv``: key-value stores for data synchronisation (MXNet's ``mx.kvstore``).

``create`` makes a native store (``kvstore.KVStore``, in Rust) or a registered Python
store type (``KVStoreBase.register``, e.g. ``'teststore'``)."""

from . import base
from .base import KVStoreBase, create
from . import kvstore
from .kvstore import KVStore
from . import kvstore_server
from .kvstore_server import KVStoreServer

__all__ = ["KVStoreBase", "KVStore", "KVStoreServer", "create", "base", "kvstore",
           "kvstore_server"]
