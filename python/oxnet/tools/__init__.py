"""Command-line tools (``python -m oxnet.tools.<name>``), after MXNet's ``tools/``."""
