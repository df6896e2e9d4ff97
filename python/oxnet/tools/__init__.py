"""Command-line tools: ``python -m oxnet.tools.launch`` starts distributed jobs."""
