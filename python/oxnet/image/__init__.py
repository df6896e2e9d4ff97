"""``mx.image`` (alias ``mx.img``): image decoding, resizing, augmenters and
``ImageIter``. See :mod:`oxnet.image.image`."""

from . import image  # noqa: F401
from .image import *  # noqa: F401,F403
from .image import _get_interp_method  # noqa: F401
from .imageiter import ImageIter  # noqa: F401
from .rotate import imrotate, random_rotate  # noqa: F401
from . import detection  # noqa: F401
from .detection import *  # noqa: F401,F403
