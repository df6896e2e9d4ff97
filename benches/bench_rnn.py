"""The fused RNN op: a 2-layer LSTM (T=35, N=32, C=H=512, float32, the shape of the
PTB language model) through `gluon.rnn.LSTM`, oxnet against MXNet 1.9.1 (its fused
`RNN` op; the pip build runs it with oneDNN) and PyTorch's CPU `nn.LSTM` where a
Python here imports torch, each in its own process in one run, printing medians and
ratios.

    python benches/bench_rnn.py            # forward (inference) and forward+backward
    python benches/bench_rnn.py --record   # ... and append the table to RESULTS.md
    python benches/bench_rnn.py --no-torch # oxnet and MXNet only
    python benches/bench_rnn.py --rounds 5 # alternate the backends' processes 5 times

With --rounds K each backend's worker runs K times, the backends alternating, so
that all of them see the same changes of machine load; the table gives the median
over the rounds of each backend's median and the median of the per-round ratios.
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
T, N, C, H, L = 35, 32, 512, 512, 2
CASES = ["lstm forward", "lstm forward+backward"]
REPEATS = 15


def _median(fn, repeats=REPEATS):
    fn()
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def mx_worker(mx):
    import numpy as np
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (T, N, C)).astype("float32"))
    layer = mx.gluon.rnn.LSTM(H, num_layers=L, input_size=C)
    layer.initialize(mx.init.Uniform(0.1))
    states = layer.begin_state(N)

    def fwd():
        out, _ = layer(x, states)
        out.wait_to_read()

    def fwd_bwd():
        with mx.autograd.record():
            out, _ = layer(x, states)
            loss = out.sum()
        loss.backward()
        for p in layer.collect_params().values():
            p.grad().wait_to_read()

    return {"lstm forward": _median(fwd), "lstm forward+backward": _median(fwd_bwd)}


def torch_worker():
    import torch
    torch_setup(torch)
    torch.manual_seed(0)
    x = torch.rand(T, N, C) * 2 - 1
    lstm = torch.nn.LSTM(C, H, num_layers=L)
    h0 = (torch.zeros(L, N, H), torch.zeros(L, N, H))

    def fwd():
        with torch.no_grad():
            lstm(x, h0)

    def fwd_bwd():
        lstm.zero_grad()
        out, _ = lstm(x, h0)
        out.sum().backward()

    return {"lstm forward": _median(fwd), "lstm forward+backward": _median(fwd_bwd)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--no-torch", action="store_true", help="leave PyTorch out")
    ap.add_argument("--rounds", type=int, default=1, help="alternate the backends' workers this many times")
    args = ap.parse_args()
    if args.worker == "torch":
        print(json.dumps(torch_worker()))
        return
    if args.worker:
        print(json.dumps(mx_worker(__import__(args.worker))))
        return
    load0 = "%.2f %.2f %.2f" % os.getloadavg()
    mxpy = mxnet_python()
    tpy = None if args.no_torch else torch_python()
    pythons = {"oxnet": sys.executable, "mxnet": mxpy, "torch": tpy}
    rounds = {b: [] for b in pythons}
    for _ in range(max(1, args.rounds)):
        for b, py in pythons.items():
            r = run_worker(py, __file__, "torch" if b == "torch" else b) if py else None
            if r:
                rounds[b].append(r)
    load1 = "%.2f %.2f %.2f" % os.getloadavg()
    backends = [b for b in ("oxnet", "mxnet", "torch") if rounds[b]]
    results = {b: {name: statistics.median(r[name] for r in rounds[b]) for name in CASES} for b in backends}
    lines = ["| case (ms, median of %d%s) | %s | mxnet / oxnet | torch / oxnet |"
             % (REPEATS, ", %d rounds" % args.rounds if args.rounds > 1 else "", " | ".join(backends)),
             "|---|" + "---|" * (len(backends) + 2)]
    ox = results.get("oxnet") or {}
    for name in CASES:
        cells = ["%.1f" % (results[b][name] * 1e3) for b in backends]

        def ratio(other):
            if other not in results or not ox:
                return "-"
            if len(rounds[other]) == len(rounds["oxnet"]) > 1:
                per = [o[name] / x[name] for o, x in zip(rounds[other], rounds["oxnet"])]
                return "%.2fx (%.2f-%.2f)" % (statistics.median(per), min(per), max(per))
            return "%.2fx" % (results[other][name] / ox[name])
        lines.append("| %s | %s | %s | %s |" % (name, " | ".join(cells), ratio("mxnet"), ratio("torch")))
    lines.append("")
    lines.append("load average before / after the run: %s / %s" % (load0, load1))
    lines.append("(2-layer LSTM, T=%d N=%d C=H=%d float32, gluon.rnn.LSTM / torch.nn.LSTM; ratios > 1 "
                 "mean oxnet is faster; %d cores)" % (T, N, C, len(os.sched_getaffinity(0))))
    table = "\n".join(lines)
    print(table)
    if args.record:
        head = "\n## bench_rnn — %s — %s, %d cores, Python %s\n\n" % (
            datetime.date.today().isoformat(), platform.machine(), os.cpu_count(), platform.python_version())
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write(head + table + "\n")


if __name__ == "__main__":
    main()
