"""Command-line tools (``python -m oxnet.tools.<name>``), after MXNet's ``tools/``:
``im2rec`` packs image folders into RecordIO, ``launch`` starts distributed jobs."""
