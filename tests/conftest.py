import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture
def seeds_dir():
    return os.path.join(HERE, "seeds")


@pytest.fixture(autouse=True)
def _drain_engine():
    """Every test starts and ends with an idle engine and no stale deferred error."""
    import oxnet as mx
    try:
        mx.nd.waitall()
    except mx.base.MXNetError:
        pass
    yield
    try:
        mx.nd.waitall()
    except mx.base.MXNetError:
        pass
