"""``mx.contrib.text``: text utilities of MXNet 1.9.1's contrib API: ``utils``
(``count_tokens_from_str``) and ``vocab`` (``Vocabulary``, token <-> index). The
pretrained token embeddings (``contrib.text.embedding``: GloVe, fastText) are not
included."""

from . import utils  # noqa: F401
from . import vocab  # noqa: F401
from .vocab import Vocabulary  # noqa: F401
