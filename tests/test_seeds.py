"""The seed programs print exactly what MXNet 1.9.1 printed for them."""

import os
import subprocess
import sys

import pytest

SEEDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")


@pytest.mark.parametrize("seed", ["nd_seed", "kv_seed", "viz_seed"])
def test_seed_output_matches_mxnet(seed):
    r = subprocess.run([sys.executable, os.path.join(SEEDS, seed + ".py"), "oxnet"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    with open(os.path.join(SEEDS, seed + ".expected")) as f:
        assert r.stdout == f.read()
