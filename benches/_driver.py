"""What every bench driver shares: finding MXNet 1.9.1's Python and running one backend
as a worker process (`SCRIPT --worker NAME`, whose last stdout line is JSON)."""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def mxnet_python():
    """$MXNET_PYTHON, benches/.mxnet-venv (`make bench-setup`), or /opt/mxnet-venv."""
    for cand in (os.environ.get("MXNET_PYTHON"), os.path.join(HERE, ".mxnet-venv", "bin", "python"),
                 "/opt/mxnet-venv/bin/python"):
        if cand and os.path.exists(cand):
            return cand
    return None


def torch_python():
    """A Python that imports PyTorch's CPU build: $TORCH_PYTHON, this one, or the system's
    /usr/bin/python3 (Debian's python3-torch); None when none does."""
    for cand in (os.environ.get("TORCH_PYTHON"), sys.executable, "/usr/bin/python3"):
        if cand and os.path.exists(cand):
            r = subprocess.run([cand, "-c", "import torch"], capture_output=True)
            if r.returncode == 0:
                return cand
    return None


def torch_setup(torch):
    """Gives PyTorch every core this process may use, as oxnet and MXNet get (some
    builds start with one OpenMP thread); returns its version string."""
    torch.set_num_threads(len(os.sched_getaffinity(0)))
    return torch.__version__


def run_worker(python, script, name, extra=()):
    """Runs `script --worker name *extra` under `python`; its JSON result, or None on failure."""
    r = subprocess.run([python, os.path.abspath(script), "--worker", name, *extra], capture_output=True, text=True)
    if r.returncode != 0:
        print("[%s failed]\n%s" % (name, r.stderr[-2000:]), file=sys.stderr)
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


def alternating_rounds(runs, rounds):
    """Runs each backend of ``runs`` ({name: zero-argument callable giving a result or
    None}) once per round, in turn, so that a swing in a shared machine's load falls on
    all of them; returns {name: [results of the rounds that succeeded]} and the list of
    rounds in which every backend succeeded (each a {name: result})."""
    per = {name: [] for name in runs}
    complete = []
    for _ in range(rounds):
        got = {name: fn() for name, fn in runs.items()}
        for name, r in got.items():
            if r is not None:
                per[name].append(r)
        if all(r is not None for r in got.values()):
            complete.append(got)
    return per, complete
