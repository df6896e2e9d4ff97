"""Operator benchmarks: oxnet against MXNet 1.9.1 (and NumPy where it has the same
computation), in one run on one machine, printing ratios.

    python benches/bench_ops.py                 # every case
    python benches/bench_ops.py -k linalg       # the cases whose name contains 'linalg'
    python benches/bench_ops.py --record        # ... and append the table to RESULTS.md

Each case is an entry of CASES: a name, a `setup(mx, np)` that builds the inputs and
returns a function running the op once (ending with a blocking read), and optionally
`numpy(np)` doing the same with NumPy. A case runs in each backend's own process (the
same script with --worker NAME) and reports the median time per call. Add a row by
appending to CASES.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _driver import mxnet_python, run_worker  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def _median_time(fn, repeats, number=1):
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


# ---------------------------------------------------------------------------
# cases


def _spd_batch(np, batch, n, seed=0):
    r = np.random.RandomState(seed)
    a = r.uniform(-1, 1, (batch, n, n))
    return a @ a.transpose(0, 2, 1) + n * np.eye(n)


def linalg_potrf_trsm_setup(mx, np):
    """Cholesky of 1024 SPD 32x32 float64 matrices, then solving L X = A with them."""
    a = mx.nd.array(_spd_batch(np, 1024, 32), dtype="float64")

    def run():
        l = mx.nd.linalg.potrf(a)
        x = mx.nd.linalg.trsm(l, a)
        x.wait_to_read()
    return run


def linalg_potrf_trsm_numpy(np):
    a = _spd_batch(np, 1024, 32)

    def run():
        l = np.linalg.cholesky(a)
        np.linalg.solve(l, a)  # NumPy has no triangular solve: a general (LU) solve
    return run


def linalg_syevd_setup(mx, np):
    """Eigendecomposition of 256 symmetric 32x32 float64 matrices."""
    a = mx.nd.array(_spd_batch(np, 256, 32), dtype="float64")

    def run():
        u, lam = mx.nd.linalg.syevd(a)
        u.wait_to_read()
    return run


def linalg_syevd_numpy(np):
    a = _spd_batch(np, 256, 32)
    return lambda: np.linalg.eigh(a)


def linalg_inverse_setup(mx, np):
    """Inverse of 1024 32x32 float64 matrices."""
    a = mx.nd.array(_spd_batch(np, 1024, 32), dtype="float64")
    return lambda: mx.nd.linalg.inverse(a).wait_to_read()


def linalg_inverse_numpy(np):
    a = _spd_batch(np, 1024, 32)
    return lambda: np.linalg.inv(a)


def sample_gamma_setup(mx, np):
    """10^7 gamma draws (alpha = 2.5, scale 1.5), float32, the scalar-parameter op."""
    mx.nd.random.gamma(2.5, 1.5, shape=(1000,)).wait_to_read()
    return lambda: mx.nd.random.gamma(2.5, 1.5, shape=(10_000_000,)).wait_to_read()


def sample_gamma_numpy(np):
    r = np.random.default_rng(0)
    return lambda: r.gamma(2.5, 1.5, size=10_000_000).astype(np.float32)


def sample_gamma_per_element_setup(mx, np):
    """10^7 gamma draws from 10^4 parameter pairs (_sample_gamma), float32."""
    alpha = mx.nd.random.uniform(0.5, 5.0, shape=(10_000,))
    beta = mx.nd.random.uniform(0.5, 2.0, shape=(10_000,))
    return lambda: mx.nd.random.gamma(alpha, beta, shape=(1000,)).wait_to_read()


def sample_poisson_setup(mx, np):
    """10^7 Poisson draws, lam = 30 (the large-lambda path), float32."""
    return lambda: mx.nd.random.poisson(30.0, shape=(10_000_000,)).wait_to_read()


def sample_poisson_numpy(np):
    r = np.random.default_rng(0)
    return lambda: r.poisson(30.0, size=10_000_000).astype(np.float32)


def cumsum_flat_setup(mx, np):
    """cumsum of 10^7 float32 values (flat)."""
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, 10_000_000).astype("float32"))
    x.wait_to_read()
    return lambda: mx.nd.cumsum(x).wait_to_read()


def cumsum_flat_numpy(np):
    x = np.random.RandomState(0).uniform(-1, 1, 10_000_000).astype("float32")
    return lambda: np.cumsum(x)


def cumsum_rows_setup(mx, np):
    """cumsum along axis 1 of a 1000 x 10,000 float32 array."""
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (1000, 10_000)).astype("float32"))
    x.wait_to_read()
    return lambda: mx.nd.cumsum(x, axis=1).wait_to_read()


def cumsum_rows_numpy(np):
    x = np.random.RandomState(0).uniform(-1, 1, (1000, 10_000)).astype("float32")
    return lambda: np.cumsum(x, axis=1)


# name, setup(mx, np), numpy(np) or None, repeats
CASES = [
    ("linalg_potrf+trsm 1024x32x32 f64", linalg_potrf_trsm_setup, linalg_potrf_trsm_numpy, 11),
    ("linalg_syevd 256x32x32 f64", linalg_syevd_setup, linalg_syevd_numpy, 5),
    ("linalg_inverse 1024x32x32 f64", linalg_inverse_setup, linalg_inverse_numpy, 7),
    ("sample_gamma 1e7", sample_gamma_setup, sample_gamma_numpy, 7),
    ("sample_gamma_per_element 1e7", sample_gamma_per_element_setup, None, 7),
    ("sample_poisson lam=30 1e7", sample_poisson_setup, sample_poisson_numpy, 7),
    ("cumsum 1e7 f32 flat", cumsum_flat_setup, cumsum_flat_numpy, 11),
    ("cumsum 1000x10000 f32 axis=1", cumsum_rows_setup, cumsum_rows_numpy, 11),
]


# ---------------------------------------------------------------------------
# workers and driver


def worker(backend, names):
    import numpy as np
    res = {}
    if backend == "numpy":
        for name, _, np_fn, repeats in CASES:
            if name in names and np_fn is not None:
                res[name] = _median_time(np_fn(np), repeats)
        return res
    mx = __import__(backend)
    for name, setup, _, repeats in CASES:
        if name in names:
            res[name] = _median_time(setup(mx, np), repeats)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--cases", default=None, help="(worker) JSON list of case names")
    ap.add_argument("-k", default="", help="run only the cases whose name contains this")
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, json.loads(args.cases))))
        return

    names = [c[0] for c in CASES if args.k in c[0]]
    extra = ("--cases", json.dumps(names))
    results = {"oxnet": run_worker(sys.executable, __file__, "oxnet", extra)}
    mxpy = mxnet_python()
    results["mxnet"] = run_worker(mxpy, __file__, "mxnet", extra) if mxpy else None
    results["numpy"] = run_worker(sys.executable, __file__, "numpy", extra)
    if results["mxnet"] is None:
        print("(MXNet 1.9.1 not found: run `make bench-setup` or set MXNET_PYTHON)", file=sys.stderr)

    backends = [b for b in ("oxnet", "mxnet", "numpy") if results.get(b)]
    lines = ["| case (ms per call) | " + " | ".join(backends) + " | oxnet vs mxnet | oxnet vs numpy |",
             "|---|" + "---|" * (len(backends) + 2)]
    ox = results["oxnet"] or {}
    for name in names:
        cells = []
        for b in backends:
            v = results[b].get(name)
            cells.append("%.3g" % (v * 1e3) if v is not None else "-")

        def ratio(other):
            o = (results.get(other) or {}).get(name)
            return "%.2fx" % (o / ox[name]) if o and ox.get(name) else "-"
        lines.append("| %s | %s | %s | %s |" % (name, " | ".join(cells), ratio("mxnet"), ratio("numpy")))
    lines.append("")
    lines.append("(ratios > 1 mean oxnet is faster; %d cores)" % len(os.sched_getaffinity(0)))
    table = "\n".join(lines)
    print(table)
    if args.record:
        head = "\n## bench_ops — %s — %s, %d cores, Python %s\n\n" % (
            datetime.date.today().isoformat(), platform.machine(), os.cpu_count(), platform.python_version())
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write(head + table + "\n")


if __name__ == "__main__":
    main()
