"""What the vision models share: the default weight folder and loading pretrained
weights into a freshly built net."""

import os

from .... import base
from ....context import cpu

DEFAULT_ROOT = os.path.join(base.data_dir(), "models")
DEFAULT_CTX = cpu()


def load_pretrained(net, model_name, ctx, root):
    """Loads the published weights of ``model_name`` (found or fetched by
    ``model_store.get_model_file``) into ``net`` on ``ctx``."""
    from ..model_store import get_model_file
    net.load_parameters(get_model_file(model_name, root=root), ctx=ctx)
    return net
