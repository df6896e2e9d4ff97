"""``Vocabulary``: the index of text tokens (the unknown token first, then the reserved
tokens, then the counted tokens from the most to the least frequent, ties in sorted
order)."""

import collections

from . import _constants as C

__all__ = ["Vocabulary"]


class Vocabulary(object):
    """Indexes the unknown token (index 0), ``reserved_tokens`` and the keys of
    ``counter``.

    Parameters
    ----------
    counter : collections.Counter or None
        Token frequencies; its keys are indexed from the most frequent down, equal
        frequencies in sorted order, keeping those with at least ``min_freq`` and at
        most ``most_freq_count`` of them (None: all).
    most_freq_count : int or None
    min_freq : int
        Minimum frequency of an indexed token (positive).
    unknown_token : hashable
        What unknown tokens map to (default '<unk>').
    reserved_tokens : list or None
        Tokens always indexed (e.g. padding, end of sentence); no duplicates and not
        the unknown token.
    """

    def __init__(self, counter=None, most_freq_count=None, min_freq=1, unknown_token="<unk>",
                 reserved_tokens=None):
        assert min_freq > 0, "`min_freq` must be set to a positive value."
        if reserved_tokens is not None:
            reserved = set(reserved_tokens)
            assert unknown_token not in reserved, \
                "`reserved_token` cannot contain `unknown_token`."
            assert len(reserved) == len(reserved_tokens), \
                "`reserved_tokens` cannot contain duplicate reserved tokens."
        self._unknown_token = unknown_token
        self._reserved_tokens = None if reserved_tokens is None else list(reserved_tokens)
        self._idx_to_token = [unknown_token] + list(reserved_tokens or [])
        self._token_to_idx = {t: i for i, t in enumerate(self._idx_to_token)}
        if counter is not None:
            self._index_counter_keys(counter, most_freq_count, min_freq)

    def _index_counter_keys(self, counter, most_freq_count, min_freq):
        assert isinstance(counter, collections.Counter), \
            "`counter` must be an instance of collections.Counter."
        special = set(self._idx_to_token)
        by_freq = sorted(sorted(counter.items(), key=lambda kv: kv[0]),
                         key=lambda kv: kv[1], reverse=True)
        cap = len(special) + (len(counter) if most_freq_count is None else most_freq_count)
        for token, freq in by_freq:
            if freq < min_freq or len(self._idx_to_token) == cap:
                break
            if token not in special:
                self._token_to_idx[token] = len(self._idx_to_token)
                self._idx_to_token.append(token)

    def __len__(self):
        return len(self._idx_to_token)

    @property
    def token_to_idx(self):
        """dict: token -> index."""
        return self._token_to_idx

    @property
    def idx_to_token(self):
        """list: index -> token."""
        return self._idx_to_token

    @property
    def unknown_token(self):
        return self._unknown_token

    @property
    def reserved_tokens(self):
        return self._reserved_tokens

    def to_indices(self, tokens):
        """The index of a token, or the indices of a list of tokens (unknown tokens:
        ``UNKNOWN_IDX``, 0)."""
        if not isinstance(tokens, list):
            return self._token_to_idx.get(tokens, C.UNKNOWN_IDX)
        get = self._token_to_idx.get
        return [get(t, C.UNKNOWN_IDX) for t in tokens]

    def to_tokens(self, indices):
        """The token of an index, or the tokens of a list of indices; ValueError for an
        index that is not an int in [0, len)."""
        single = not isinstance(indices, list)
        tokens = []
        for idx in [indices] if single else indices:
            if not isinstance(idx, int) or idx < 0 or idx >= len(self._idx_to_token):
                raise ValueError("Token index {} in the provided `indices` is invalid."
                                 .format(idx))
            tokens.append(self._idx_to_token[idx])
        return tokens[0] if single else tokens
