"""Operator benchmarks: oxnet against MXNet 1.9.1 in one run on one machine, printing
the ratio per case (MXNet's time / oxnet's: above 1 means oxnet is faster).

    python benches/bench_ops.py                  # every case
    python benches/bench_ops.py -k cumsum        # cases whose name contains "cumsum"

Each case is a function below decorated with ``@case(name)``: given the module under
test (``oxnet`` or ``mxnet``, imported as ``mx``), it prepares its inputs and returns
a callable that runs the op once and waits for the result. Both backends run the same
case code, each in its own process (this script with ``--worker NAME``); MXNet 1.9.1
comes from $MXNET_PYTHON, benches/.mxnet-venv or /opt/mxnet-venv.
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _driver import mxnet_python, run_worker  # noqa: E402

REPEATS = 7
CASES = {}


def case(name):
    def reg(fn):
        CASES[name] = fn
        return fn
    return reg


# ---------------------------------------------------------------------------
# cases


@case("cumsum 1e7 float32 (flat)")
def _cumsum_flat(mx):
    import numpy as np
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, 10_000_000).astype("float32"))
    x.wait_to_read()
    return lambda: mx.nd.cumsum(x).wait_to_read()


@case("cumsum 1e7 float32 (1000x10000, axis=1)")
def _cumsum_rows(mx):
    import numpy as np
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (1000, 10_000)).astype("float32"))
    x.wait_to_read()
    return lambda: mx.nd.cumsum(x, axis=1).wait_to_read()


# ---------------------------------------------------------------------------
# driver


def _median(fn):
    fn()  # warm-up
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def worker(mod_name, names):
    mx = __import__(mod_name)
    out = {}
    for name in names:
        try:
            out[name] = _median(CASES[name](mx))
        except Exception as e:  # noqa: BLE001 - report and go on with the other cases
            print("[%s: %s failed: %s]" % (mod_name, name, e), file=sys.stderr)
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", default=None)
    ap.add_argument("-k", default="")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.names)
        return
    names = [n for n in CASES if args.k in n]
    ox = run_worker(sys.executable, __file__, "oxnet", names) or {}
    mxp = mxnet_python()
    mxr = (run_worker(mxp, __file__, "mxnet", names) or {}) if mxp else {}
    if not mxp:
        print("(MXNet 1.9.1 not found: set MXNET_PYTHON or run `make bench-setup`)")
    print("| case | oxnet ms | MXNet 1.9.1 ms | MXNet/oxnet |")
    print("|---|---|---|---|")
    for n in names:
        o, m = ox.get(n), mxr.get(n)
        ratio = "%.2fx" % (m / o) if o and m else "-"
        print("| %s | %s | %s | %s |" % (n, "%.2f" % (o * 1e3) if o else "-", "%.2f" % (m * 1e3) if m else "-", ratio))


if __name__ == "__main__":
    main()
