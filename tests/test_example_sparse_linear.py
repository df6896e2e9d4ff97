"""examples/sparse_linear.py trains end to end (small sizes)."""

import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def test_sparse_linear_example_learns():
    script = os.path.join(HERE, "..", "examples", "sparse_linear.py")
    r = subprocess.run([sys.executable, script, "--dim", "1000", "--samples", "1000", "--epochs", "8"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    acc = [float(a) for a in re.findall(r"train accuracy ([0-9.]+)", r.stdout)]
    assert len(acc) == 8
    assert acc[-1] > 0.9 and acc[-1] > acc[0], r.stdout
