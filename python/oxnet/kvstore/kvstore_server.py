"""``KVStoreServer``: the server role of a distributed key-value store.

The servers of oxnet's distributed stores are MPI ranks (``kvstore.dist``): a server
process enters its loop at ``import oxnet`` (``_init_kvstore_server_module``) and exits
when the workers finish. ``run`` on a single-process store returns at once, as MXNet's
does for its local stores. The controller handles the commands a worker sends
(command 0: a pickled optimizer to run)."""

import logging
import pickle

from .base import create

__all__ = ["KVStoreServer"]


class KVStoreServer:
    """The key-value store server for ``kvstore``."""

    def __init__(self, kvstore):
        self.kvstore = kvstore
        self.handle = getattr(kvstore, "handle", None)
        self.init_logginig = False

    def _controller(self):
        """The function run for each command a worker sends: ``(cmd_id, cmd_body, _)``."""
        def server_controller(cmd_id, cmd_body, _):
            if not self.init_logginig:
                head = "%(asctime)-15s Server[" + str(self.kvstore.rank) + "] %(message)s"
                logging.basicConfig(level=logging.DEBUG, format=head)
                self.init_logginig = True
            if cmd_id == 0:
                self.kvstore.set_optimizer(pickle.loads(cmd_body))
            else:
                print("server %d, unknown command (%d, %s)" % (self.kvstore.rank, cmd_id,
                                                               cmd_body))
        return server_controller

    def run(self):
        """Serves requests until the workers finish. A single-process store has no
        workers to serve, so this returns immediately."""
        return None


def _init_kvstore_server_module():
    """Starts the server role when this process was launched as a server rank of a
    distributed job (``DMLC_ROLE=server``, or one of the last ``DMLC_NUM_SERVER`` MPI
    ranks): serves until every worker has finished, then exits the process."""
    from .dist import start_server_if_needed
    start_server_if_needed()
    return create
