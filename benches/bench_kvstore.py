"""KVStore benchmark: oxnet against MXNet 1.9.1, in one run on one machine.

    python benches/bench_kvstore.py            # driver: runs both backends, prints ratios
    python benches/bench_kvstore.py --record   # ... and appends the table to RESULTS.md

100 keys of 1000x1000 float32; each step pushes 4 arrays per key (on cpu(0..3)) and
pulls every key into 4 arrays (on cpu(0..3)), then waits. Once with no updater (the
sum replaces the stored value) and once with set_optimizer(SGD(momentum=0.9)).
Each backend runs in its own process (this script with --worker NAME) and reports
medians as JSON; MXNet runs in its own virtualenv ($MXNET_PYTHON, benches/.mxnet-venv
or /opt/mxnet-venv), as in bench_ndarray.py.
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
NKEYS = 100
SHAPE = (1000, 1000)
NDEV = 4
REPEATS = 5


def worker(mod_name):
    """oxnet or mxnet: the same code, `mx` bound to the module under test."""
    mx = __import__(mod_name)
    ctxs = [mx.cpu(i) for i in range(NDEV)]
    grads = [[mx.nd.ones(SHAPE, ctx=c) * (0.001 * (k + 1)) for c in ctxs] for k in range(NKEYS)]
    outs = [[mx.nd.zeros(SHAPE, ctx=c) for c in ctxs] for k in range(NKEYS)]
    mx.nd.waitall()
    res = {}

    def run_case(kv):
        def step():
            for k in range(NKEYS):
                kv.push(k, grads[k])
            for k in range(NKEYS):
                kv.pull(k, out=outs[k])
            mx.nd.waitall()
        step()
        step()
        times = []
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    kv = mx.kv.create("local")
    for k in range(NKEYS):
        kv.init(k, mx.nd.zeros(SHAPE))
    mx.nd.waitall()
    t = run_case(kv)
    res["pushpull_keys_per_s"] = NKEYS / t
    del kv
    mx.nd.waitall()

    kv = mx.kv.create("local")
    for k in range(NKEYS):
        kv.init(k, mx.nd.zeros(SHAPE))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    mx.nd.waitall()
    t = run_case(kv)
    res["sgd_keys_per_s"] = NKEYS / t
    # one value back, to check both backends computed the same thing
    res["check"] = float(outs[NKEYS - 1][NDEV - 1][0, 0].asscalar())
    return res


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
        print(json.dumps(worker(args.worker)))
        return

    results = {"oxnet": _run(sys.executable, "oxnet")}
    mxpy = _mxnet_python()
    results["mxnet"] = _run(mxpy, "mxnet") if mxpy else None
    ox, mxr = results["oxnet"], results["mxnet"]
    rows = [
        ("push 4 + pull 4, 100 keys of 1000x1000 f32 (keys/s)", "pushpull_keys_per_s"),
        ("same with set_optimizer(SGD(momentum=0.9)) (keys/s)", "sgd_keys_per_s"),
    ]
    backends = [b for b in ("oxnet", "mxnet") if results.get(b)]
    lines = ["| case | " + " | ".join(backends) + " | oxnet vs mxnet |", "|---|" + "---|" * (len(backends) + 1)]
    for title, key in rows:
        cells = ["%.3g" % results[b][key] for b in backends]
        ratio = "%.2fx" % (ox[key] / mxr[key]) if ox and mxr else "-"
        lines.append("| %s | %s | %s |" % (title, " | ".join(cells), ratio))
    if ox and mxr:
        lines.append("")
        lines.append("check value (last key, after the SGD steps): oxnet %.6g, mxnet %.6g" % (ox["check"], mxr["check"]))
    lines.append("(ratios > 1 mean oxnet is faster)")
    table = "\n".join(lines)
    print(table)
    if args.record:
        head = "\n## bench_kvstore — %s — %s, %d cores, Python %s\n\n" % (
            datetime.date.today().isoformat(), platform.machine(), os.cpu_count(), platform.python_version())
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write(head + table + "\n")


if __name__ == "__main__":
    main()
