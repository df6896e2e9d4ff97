"""pytest plugin for the conformance runner (loaded with `-p oxnet_conformance`).

- Unless CONFORMANCE_TARGET=mxnet, answers `import mxnet` / `mxnet.X` with oxnet's own
  modules (oxnet.compat's hook), so a plain MXNet checkout's tests run on oxnet.
- `--conformance-select FILE`: run only the test ids listed in FILE (one
  `file.py::test_name[param]` per line; `#` comments), e.g. the ratchet's passing list.
"""
import os

import pytest

if os.environ.get("CONFORMANCE_TARGET", "oxnet") != "mxnet":
    import oxnet.compat

    oxnet.compat.install()


def pytest_addoption(parser):
    parser.addoption("--conformance-select", default=None,
                     help="file of test ids (file.py::name) to run; others are deselected")


def _ids(path):
    with open(path) as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def pytest_collection_modifyitems(config, items):
    path = config.getoption("--conformance-select")
    if not path:
        return
    wanted = _ids(path)
    keep, drop = [], []
    for item in items:
        (keep if item.nodeid in wanted else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep
