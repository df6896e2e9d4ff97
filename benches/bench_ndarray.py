"""NDArray benchmarks: oxnet against MXNet 1.9.1 (and PyTorch's CPU build, and
NumPy, where present), in one run on one machine, printing ratios.

    python benches/bench_ndarray.py            # driver: runs every backend, prints ratios
    python benches/bench_ndarray.py --record   # ... and appends the table to RESULTS.md

MXNet 1.9.1 needs NumPy < 1.24, so it runs in its own virtualenv: $MXNET_PYTHON, or
benches/.mxnet-venv (made by `make bench-setup`), or /opt/mxnet-venv. Each backend runs
in its own process (the same script with --worker NAME) and reports medians as JSON.
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
from _driver import mxnet_python, run_worker, torch_python, torch_setup  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BIG = 64_000_000
REPEATS = 7


def _median_time(fn, number, repeats=REPEATS):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(number)
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


# ---------------------------------------------------------------------------
# workers


def worker_nd(mod_name):
    """oxnet or mxnet: the same code, `mx` bound to the module under test."""
    import numpy as np
    mx = __import__(mod_name)
    res = {}
    a = mx.nd.ones((2, 2))
    b = mx.nd.ones((2, 2))

    def tiny(n):
        for _ in range(n):
            c = a + b  # noqa: F841
        mx.nd.waitall()
    tiny(2000)
    res["tiny_add_us"] = _median_time(tiny, 20000) * 1e6

    s1, s2 = mx.nd.ones((1,)), mx.nd.ones((1,))

    def scal(n):
        for _ in range(n):
            (s1 + s2).asscalar()
    scal(1000)
    res["add_asscalar_us"] = _median_time(scal, 10000) * 1e6

    x = mx.nd.ones((BIG,))
    y = mx.nd.ones((BIG,))

    def big(n):
        for _ in range(n):
            c = x + y
            c.wait_to_read()
    big(2)
    t = _median_time(big, 3, repeats=5)
    res["big_add_GBps"] = 3 * 4 * BIG / t / 1e9
    z = mx.nd.zeros((BIG,))

    def copy(n):
        for _ in range(n):
            x.copyto(z)
            z.wait_to_read()
    copy(2)
    res["copy_GBps"] = 2 * 4 * BIG / _median_time(copy, 3, repeats=5) / 1e9
    del z

    m1 = mx.nd.array(np.random.rand(1024, 1024).astype(np.float32))
    m2 = mx.nd.array(np.random.rand(1024, 1024).astype(np.float32))

    def gemm(n):
        for _ in range(n):
            mx.nd.dot(m1, m2).wait_to_read()
    gemm(3)
    t = _median_time(gemm, 5)
    res["dot1024_GFLOPs"] = 2 * 1024 ** 3 / t / 1e9
    return res


def worker_numpy():
    import numpy as np
    res = {}
    a, b = np.ones((2, 2), np.float32), np.ones((2, 2), np.float32)

    def tiny(n):
        for _ in range(n):
            c = a + b  # noqa: F841
    res["tiny_add_us"] = _median_time(tiny, 20000) * 1e6
    x, y = np.ones(BIG, np.float32), np.ones(BIG, np.float32)
    dst = np.empty_like(x)

    def big(n):
        for _ in range(n):
            c = x + y  # noqa: F841 - a fresh output each time, as users write it
    big(1)
    res["big_add_GBps"] = 3 * 4 * BIG / _median_time(big, 3, repeats=5) / 1e9

    def copy(n):
        for _ in range(n):
            np.copyto(dst, x)
    copy(1)
    res["copy_GBps"] = 2 * 4 * BIG / _median_time(copy, 3, repeats=5) / 1e9

    def big_out(n):
        for _ in range(n):
            np.add(x, y, out=dst)
    big_out(1)
    res["add_out_GBps"] = 3 * 4 * BIG / _median_time(big_out, 3, repeats=5) / 1e9
    m1 = np.random.rand(1024, 1024).astype(np.float32)
    m2 = np.random.rand(1024, 1024).astype(np.float32)

    def gemm(n):
        for _ in range(n):
            m1 @ m2
    gemm(3)
    res["dot1024_GFLOPs"] = 2 * 1024 ** 3 / _median_time(gemm, 5) / 1e9
    return res


def worker_torch():
    import torch
    res = {"version": torch_setup(torch)}
    a, b = torch.ones(2, 2), torch.ones(2, 2)

    def tiny(n):
        for _ in range(n):
            c = a + b  # noqa: F841
    res["tiny_add_us"] = _median_time(tiny, 20000) * 1e6
    s1, s2 = torch.ones(1), torch.ones(1)

    def scal(n):
        for _ in range(n):
            (s1 + s2).item()
    res["add_asscalar_us"] = _median_time(scal, 10000) * 1e6
    x, y = torch.ones(BIG), torch.ones(BIG)

    def big(n):
        for _ in range(n):
            c = x + y  # noqa: F841
    big(1)
    res["big_add_GBps"] = 3 * 4 * BIG / _median_time(big, 3, repeats=5) / 1e9
    m1, m2 = torch.rand(1024, 1024), torch.rand(1024, 1024)

    def gemm(n):
        for _ in range(n):
            m1 @ m2
    gemm(3)
    res["dot1024_GFLOPs"] = 2 * 1024 ** 3 / _median_time(gemm, 5) / 1e9
    return res


# ---------------------------------------------------------------------------
# driver


def _mxnet_python():
    return mxnet_python()


def _run(python, name):
    return run_worker(python, __file__, name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    if args.worker:
        fn = {"oxnet": lambda: worker_nd("oxnet"), "mxnet": lambda: worker_nd("mxnet"),
              "numpy": worker_numpy, "torch": worker_torch}[args.worker]
        print(json.dumps(fn()))
        return

    results = {"oxnet": _run(sys.executable, "oxnet"), "numpy": _run(sys.executable, "numpy")}
    mxpy = _mxnet_python()
    results["mxnet"] = _run(mxpy, "mxnet") if mxpy else None
    thpy = torch_python()
    results["torch"] = _run(thpy, "torch") if thpy else None

    ox = results["oxnet"]
    # The machine's copy bandwidth: the best copy any backend managed (read + write).
    copy_bw = max([(r or {}).get("copy_GBps", 0) for r in results.values()] + [1e-9])
    rows = [
        ("tiny c = a + b (us, lower is better)", "tiny_add_us", True),
        ("(a + b).asscalar() (us)", "add_asscalar_us", True),
        ("c = a + b, 6.4e7 f32 (GB/s)", "big_add_GBps", False),
        ("dot 1024^2 f32 (GFLOP/s)", "dot1024_GFLOPs", False),
        ("copy 6.4e7 f32 (GB/s)", "copy_GBps", False),
    ]
    backends = [b for b in ("oxnet", "mxnet", "torch", "numpy") if results.get(b)]
    lines = ["| case | " + " | ".join(backends) + " | oxnet vs mxnet | oxnet vs numpy |",
             "|---|" + "---|" * (len(backends) + 2)]
    for title, key, lower in rows:
        vals = [results[b].get(key) for b in backends]
        cells = ["%.3g" % v if v is not None else "-" for v in vals]

        def ratio(other):
            o = (results.get(other) or {}).get(key)
            if not o or key not in ox:
                return "-"
            r = (o / ox[key]) if lower else (ox[key] / o)
            return "%.2fx" % r
        lines.append("| %s | %s | %s | %s |" % (title, " | ".join(cells), ratio("mxnet"), ratio("numpy")))
    lines.append("")
    lines.append("machine copy bandwidth (best copy above, read+write): %.2f GB/s; oxnet's big add reaches %.0f%% of it"
                 % (copy_bw, 100 * ox["big_add_GBps"] / copy_bw))
    lines.append("(ratios > 1 mean oxnet is better: faster or more throughput)")
    if results.get("torch"):
        lines.append("torch: PyTorch %s, CPU build, %d threads" % (results["torch"].get("version"), len(os.sched_getaffinity(0))))
    table = "\n".join(lines)
    print(table)
    if args.record:
        head = "\n## bench_ndarray — %s — %s, %d cores, Python %s\n\n" % (
            datetime.date.today().isoformat(), platform.machine(), os.cpu_count(), platform.python_version())
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write(head + table + "\n")


if __name__ == "__main__":
    main()
