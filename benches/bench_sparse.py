"""Sparse benchmark: oxnet against MXNet 1.9.1, in one run on one machine.

    python benches/bench_sparse.py            # driver: runs both backends, prints ratios
    python benches/bench_sparse.py --record   # ... and appends the table to RESULTS.md

Cases (issue 19's targets):
- csr (100000 x 10000, density 0.1%) . dense (10000 x 64), float32, waited;
- one training step of Embedding(1000000, 128, sparse_grad=True) on a batch of 1000 ids
  with lazy Adam (Gluon Trainer), waited.
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
from _driver import alternating_rounds, mxnet_python, run_worker  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPEATS = 7


def _median(fn, warm=2, reps=REPEATS):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def worker(mod_name):
    mx = __import__(mod_name)
    import numpy as np
    import scipy.sparse as sps
    res = {}
    m, k, n = 100000, 10000, 64
    s = sps.random(m, k, density=0.001, format="csr", dtype=np.float32, random_state=0)
    csr = mx.nd.sparse.csr_matrix((s.data, s.indices, s.indptr), shape=(m, k))
    rhs = mx.nd.array(np.random.RandomState(1).randn(k, n).astype(np.float32))
    mx.nd.waitall()

    def dot():
        mx.nd.dot(csr, rhs).wait_to_read()
    res["csr_dot_ms"] = 1000 * _median(dot)
    res["dot_check"] = float(mx.nd.dot(csr, rhs).sum().asscalar())

    vocab, dim, batch = 1000000, 128, 1000
    net = mx.gluon.nn.Embedding(vocab, dim, sparse_grad=True)
    net.initialize(mx.init.Uniform(0.1))
    trainer = mx.gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01, "lazy_update": True})
    ids = mx.nd.array(np.random.RandomState(2).randint(0, vocab, size=batch))
    mx.nd.waitall()

    def step():
        with mx.autograd.record():
            loss = net(ids).sum()
        loss.backward()
        trainer.step(batch)
        net.weight.data().wait_to_read()
    res["emb_step_ms"] = 1000 * _median(step, reps=5)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--rounds", type=int, default=3, help="alternating oxnet/MXNet rounds")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker)))
        return
    # Rounds alternate oxnet and MXNet so that a swing in a shared machine's load falls
    # on both; the table gives medians over rounds and the median of the rounds' ratios.
    mxpy = mxnet_python()
    runs = {"oxnet": lambda: run_worker(sys.executable, __file__, "oxnet")}
    if mxpy:
        runs["mxnet"] = lambda: run_worker(mxpy, __file__, "mxnet")
    rounds, complete = alternating_rounds(runs, args.rounds)
    rounds.setdefault("mxnet", [])
    med = lambda rs: {k: statistics.median(r[k] for r in rs) for k in rs[0]} if rs else None  # noqa: E731
    results = {b: med(v) for b, v in rounds.items()}
    ox, mxr = results["oxnet"], results["mxnet"]
    rows = [
        ("csr(1e5 x 1e4, 0.1%) . dense(1e4 x 64) (ms)", "csr_dot_ms"),
        ("Embedding(1e6, 128) sparse_grad + lazy Adam step, 1000 ids (ms)", "emb_step_ms"),
    ]
    backends = [b for b in ("oxnet", "mxnet") if results.get(b)]
    lines = ["| case | " + " | ".join(backends) + " | mxnet / oxnet (per round) |",
             "|---|" + "---|" * (len(backends) + 1)]
    for title, key in rows:
        cells = ["%.3g" % results[b][key] for b in backends]
        ratio = "-"
        if ox and mxr:
            each = [r["mxnet"][key] / r["oxnet"][key] for r in complete]
            ratio = "%.2fx (%s)" % (statistics.median(each), ", ".join("%.2f" % r for r in each))
        lines.append("| %s | %s | %s |" % (title, " | ".join(cells), ratio))
    if ox and mxr:
        lines.append("")
        lines.append("check (sum of the dot): oxnet %.6g, mxnet %.6g" % (ox["dot_check"], mxr["dot_check"]))
    lines.append("(times: lower is better; ratios > 1 mean oxnet is faster)")
    table = "\n".join(lines)
    print(table)
    if args.record:
        head = "\n## bench_sparse — %s — %s, %d cores, Python %s\n\n" % (
            datetime.date.today().isoformat(), platform.machine(), os.cpu_count(), platform.python_version())
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write(head + table + "\n")


if __name__ == "__main__":
    main()
