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


def run_worker(python, script, name, extra=()):
    """Runs `script --worker name *extra` under `python`; its JSON result, or None on failure."""
    r = subprocess.run([python, os.path.abspath(script), "--worker", name, *extra], capture_output=True, text=True)
    if r.returncode != 0:
        print("[%s failed]\n%s" % (name, r.stderr[-2000:]), file=sys.stderr)
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])
