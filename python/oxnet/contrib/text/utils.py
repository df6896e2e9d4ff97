"""Token counting for ``mx.contrib.text``."""

import collections
import re

__all__ = ["count_tokens_from_str"]


def count_tokens_from_str(source_str, token_delim=" ", seq_delim="\n", to_lower=False,
                          counter_to_update=None):
    """Counts the tokens of ``source_str``: it is split at ``token_delim`` and at
    ``seq_delim`` (both regular expressions, as in MXNet), empty pieces dropped.

    Parameters
    ----------
    source_str : str
    token_delim, seq_delim : str
        Token and sequence delimiters.
    to_lower : bool
        Counts the lower-cased tokens.
    counter_to_update : collections.Counter or None
        A counter to add the counts to (and return); None: a new one.

    Returns
    -------
    collections.Counter

    >>> count_tokens_from_str(' Life is great ! \\n life is good . \\n', ' ', '\\n', True)
    Counter({'life': 2, 'is': 2, 'great': 1, '!': 1, 'good': 1, '.': 1})
    """
    tokens = [t for t in re.split("%s|%s" % (token_delim, seq_delim), source_str) if t]
    if to_lower:
        tokens = [t.lower() for t in tokens]
    if counter_to_update is None:
        return collections.Counter(tokens)
    counter_to_update.update(tokens)
    return counter_to_update
