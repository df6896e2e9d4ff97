"""Constants of ``mx.contrib.text``."""

UNKNOWN_IDX = 0  # the index of the unknown token in every Vocabulary
