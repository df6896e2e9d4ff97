"""Operator benchmarks (issue 16): each case runs in oxnet and in MXNet 1.9.1, in one
run on one machine, and the driver prints the times and MXNet / oxnet ratios.

    python benches/bench_ops.py              # every case
    python benches/bench_ops.py sample_gamma # only the cases named

MXNet 1.9.1 needs NumPy < 1.24, so it runs in its own virtualenv: $MXNET_PYTHON, or
benches/.mxnet-venv (made by `make bench-setup`), or /opt/mxnet-venv. Each backend runs
in its own process (this script with --worker NAME) and reports medians as JSON.

A case is an entry of CASES: name -> function(mx) returning a zero-argument callable
that runs the op once and waits for its result (setup happens before the return).
"""

import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _driver import mxnet_python, run_worker  # noqa: E402

REPEATS = 7


def case_sample_gamma(mx):
    """10^7 gamma draws (alpha = 2.5, scale 1.5), float32, the scalar-parameter op."""
    mx.nd.random.gamma(2.5, 1.5, shape=(1000,)).wait_to_read()

    def run():
        mx.nd.random.gamma(2.5, 1.5, shape=(10_000_000,)).wait_to_read()
    return run


def case_sample_gamma_per_element(mx):
    """10^7 gamma draws from 10^4 parameter pairs (_sample_gamma), float32."""
    alpha = mx.nd.random.uniform(0.5, 5.0, shape=(10_000,))
    beta = mx.nd.random.uniform(0.5, 2.0, shape=(10_000,))

    def run():
        mx.nd.random.gamma(alpha, beta, shape=(1000,)).wait_to_read()
    return run


def case_sample_poisson(mx):
    """10^7 Poisson draws, lam = 30 (the large-lambda path), float32."""
    def run():
        mx.nd.random.poisson(30.0, shape=(10_000_000,)).wait_to_read()
    return run


CASES = {
    "sample_gamma": case_sample_gamma,
    "sample_gamma_per_element": case_sample_gamma_per_element,
    "sample_poisson": case_sample_poisson,
}


def worker(mod_name, names):
    mx = __import__(mod_name)
    res = {}
    for name in names:
        run = CASES[name](mx)
        run()  # warm-up
        times = []
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
        res[name] = statistics.median(times)
    return res


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        names = sys.argv[3:] or list(CASES)
        print(json.dumps(worker(sys.argv[2], names)))
        return
    names = sys.argv[1:] or list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        sys.exit("unknown case(s): %s; known: %s" % (", ".join(unknown), ", ".join(CASES)))
    ox = run_worker(sys.executable, __file__, "oxnet", names)
    mxp = mxnet_python()
    mxr = run_worker(mxp, __file__, "mxnet", names) if mxp else None
    if mxr is None:
        print("(MXNet 1.9.1 not found or failed: run `make bench-setup`; oxnet only)")
    print("%-28s %12s %12s %10s" % ("case", "oxnet ms", "mxnet ms", "mxnet/ox"))
    for n in names:
        o = ox[n] * 1e3 if ox else float("nan")
        m = mxr[n] * 1e3 if mxr else float("nan")
        print("%-28s %12.2f %12.2f %9.2fx" % (n, o, m, m / o if ox and mxr else float("nan")))


if __name__ == "__main__":
    main()
