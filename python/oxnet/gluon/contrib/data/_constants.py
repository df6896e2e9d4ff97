"""Constants of ``gluon.contrib.data``."""

EOS_TOKEN = "<eos>"  # appended to each line of a language-model corpus
