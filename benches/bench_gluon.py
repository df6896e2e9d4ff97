"""Gluon benchmark: LeNet (the seed CNN) training on the CPU, oxnet against MXNet 1.9.1
(and PyTorch's CPU build where it is importable), in one run on one machine.

    python benches/bench_gluon.py              # driver: runs every backend, prints ratios
    python benches/bench_gluon.py --profile    # ... plus a per-op forward/backward table
    python benches/bench_gluon.py --record     # ... and appends the tables to RESULTS.md

The net is the seed's: Conv2D(20, 5, relu) MaxPool2D(2, 2) Conv2D(50, 5, relu)
MaxPool2D(2, 2) Flatten Dense(500, relu) Dense(10), SoftmaxCrossEntropyLoss, Trainer
'sgd' lr 0.1, batch 64, on synthetic MNIST-shaped data (a few fixed random batches).
A training step is record / forward / loss / backward / trainer.step; a timed window
is STEPS steps followed by waitall() (the target rows), or, in the "loss read every
step" rows, STEPS steps each ending with `nd.mean(loss).asscalar()` as the seed's
training loop does. The result is the median of WINDOWS windows
after WARMUP warm-up steps, imperative and hybridized (HybridSequential +
net.hybridize()). The per-layer rows time the two convolutions' forward alone (bias
included, no activation) at batch 64.

Targets (issue 5): hybridized >= 8,000 samples/s and >= 1.6x MXNet's hybridized;
imperative >= 1.3x MXNet's imperative; conv1 forward <= 0.33 ms and conv2 forward
<= 1.34 ms (PyTorch's oneDNN on the reference machine).

MXNet 1.9.1 needs NumPy < 1.24, so it runs in its own virtualenv: --mxnet-python,
$MXNET_PYTHON, benches/.mxnet-venv (made by `make bench-setup`) or /opt/mxnet-venv.
Each backend runs in its own process (this script with --worker NAME) and reports
medians as JSON.
"""

import argparse
import datetime
import importlib.util
import json
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _driver import mxnet_python, run_worker, torch_python, torch_setup  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH = 64
NBATCHES = 4
WARMUP = 10
STEPS = 20
WINDOWS = 5
CONV1 = ((BATCH, 1, 28, 28), 20)
CONV2 = ((BATCH, 20, 12, 12), 50)
TARGETS = {"hybrid_sps": 8000.0, "hybrid_vs_mx": 1.6, "imper_vs_mx": 1.3, "conv1_ms": 0.33, "conv2_ms": 1.34}


def _median_window(fn, windows=WINDOWS):
    times = []
    for _ in range(windows):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _data(np):
    rng = np.random.RandomState(0)
    xs = [rng.rand(BATCH, 1, 28, 28).astype(np.float32) for _ in range(NBATCHES)]
    ys = [rng.randint(0, 10, size=(BATCH,)).astype(np.float32) for _ in range(NBATCHES)]
    return xs, ys


# ---------------------------------------------------------------------------
# workers: oxnet and mxnet run the same code, `mx` bound to the module under test


def _lenet(mx, hybrid):
    nn = mx.gluon.nn
    net = nn.HybridSequential() if hybrid else nn.Sequential()
    with net.name_scope():
        net.add(nn.Conv2D(channels=20, kernel_size=5, activation="relu"))
        net.add(nn.MaxPool2D(pool_size=2, strides=2))
        net.add(nn.Conv2D(channels=50, kernel_size=5, activation="relu"))
        net.add(nn.MaxPool2D(pool_size=2, strides=2))
        net.add(nn.Flatten())
        net.add(nn.Dense(500, activation="relu"))
        net.add(nn.Dense(10))
    net.collect_params().initialize(mx.init.Xavier(magnitude=2.24), ctx=mx.cpu())
    if hybrid:
        net.hybridize()
    return net


def _train_sps(mx, np, hybrid, sync=False):
    """Training samples/s: the median window of STEPS steps. With `sync`, every step
    reads the mean loss back as a Python float, as the seed's loop does (so at most
    one step is in flight); without, the whole window is queued before waitall()."""
    autograd = mx.autograd
    xs, ys = _data(np)
    xs = [mx.nd.array(x) for x in xs]
    ys = [mx.nd.array(y) for y in ys]
    net = _lenet(mx, hybrid)
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    state = {"i": 0, "loss": None}

    def steps(n):
        for _ in range(n):
            i = state["i"] = (state["i"] + 1) % NBATCHES
            with autograd.record():
                out = net(xs[i])
                loss = loss_fn(out, ys[i])
            loss.backward()
            trainer.step(BATCH)
            state["loss"] = loss
            if sync:
                mx.nd.mean(loss).asscalar()
        mx.nd.waitall()

    steps(WARMUP)
    t = _median_window(lambda: steps(STEPS))
    return BATCH * STEPS / t, float(state["loss"].mean().asscalar())


def _conv_ms(mx, np, shape, filters, number=50):
    rng = np.random.RandomState(1)
    x = mx.nd.array(rng.rand(*shape).astype(np.float32))
    w = mx.nd.array(rng.rand(filters, shape[1], 5, 5).astype(np.float32) - 0.5)
    b = mx.nd.array(rng.rand(filters).astype(np.float32))

    def run():
        for _ in range(number):
            y = mx.nd.Convolution(x, w, b, kernel=(5, 5), num_filter=filters)
        y.wait_to_read()
    run()
    return _median_window(run) / number * 1e3


def _profile(mx, np, number=10):
    """Per layer of the net: forward ms and backward ms (fwd+bwd under record, minus
    fwd), each op timed alone at the shapes the net gives it; plus one SGD update of
    all parameters, the loss, and a whole step for comparison."""
    nd, autograd = mx.nd, mx.autograd
    rng = np.random.RandomState(2)

    def arr(*shape):
        return nd.array(rng.rand(*shape).astype(np.float32) - 0.5)
    x1, w1, b1 = arr(BATCH, 1, 28, 28), arr(20, 1, 5, 5), arr(20)
    x2, w2, b2 = arr(BATCH, 20, 12, 12), arr(50, 20, 5, 5), arr(50)
    w3, b3, w4, b4 = arr(500, 800), arr(500), arr(10, 500), arr(10)
    label = nd.array(rng.randint(0, 10, size=(BATCH,)).astype(np.float32))
    ce = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    cases = [
        ("conv1 (64x1x28x28 -> 20, 5x5)", [x1, w1, b1], lambda a, b, c: nd.Convolution(a, b, c, kernel=(5, 5), num_filter=20)),
        ("relu1 (64x20x24x24)", [arr(BATCH, 20, 24, 24)], lambda a: nd.Activation(a, act_type="relu")),
        ("pool1 max 2x2/2 (64x20x24x24)", [arr(BATCH, 20, 24, 24)], lambda a: nd.Pooling(a, kernel=(2, 2), stride=(2, 2), pool_type="max")),
        ("conv2 (64x20x12x12 -> 50, 5x5)", [x2, w2, b2], lambda a, b, c: nd.Convolution(a, b, c, kernel=(5, 5), num_filter=50)),
        ("relu2 (64x50x8x8)", [arr(BATCH, 50, 8, 8)], lambda a: nd.Activation(a, act_type="relu")),
        ("pool2 max 2x2/2 (64x50x8x8)", [arr(BATCH, 50, 8, 8)], lambda a: nd.Pooling(a, kernel=(2, 2), stride=(2, 2), pool_type="max")),
        ("flatten (64x50x4x4)", [arr(BATCH, 50, 4, 4)], lambda a: nd.Flatten(a)),
        ("fc1 (64x800 -> 500)", [arr(BATCH, 800), w3, b3], lambda a, b, c: nd.FullyConnected(a, b, c, num_hidden=500)),
        ("relu3 (64x500)", [arr(BATCH, 500)], lambda a: nd.Activation(a, act_type="relu")),
        ("fc2 (64x500 -> 10)", [arr(BATCH, 500), w4, b4], lambda a, b, c: nd.FullyConnected(a, b, c, num_hidden=10)),
        ("softmax CE loss (64x10)", [arr(BATCH, 10)], lambda a: ce(a, label)),
    ]
    rows = []
    for title, ins, fn in cases:
        for a in ins:
            a.attach_grad()

        def fwd():
            for _ in range(number):
                y = fn(*ins)
            y.wait_to_read()

        def fwd_bwd():
            for _ in range(number):
                with autograd.record():
                    y = fn(*ins)
                y.backward()
            nd.waitall()
        fwd()
        fwd_bwd()
        tf = _median_window(fwd, 5) / number * 1e3
        tfb = _median_window(fwd_bwd, 5) / number * 1e3
        rows.append((title, tf, max(tfb - tf, 0.0)))
    params = [w1, b1, w2, b2, w3, b3, w4, b4]
    grads = [nd.ones(p.shape) * 1e-3 for p in params]

    def sgd():
        for _ in range(number):
            for p, g in zip(params, grads):
                nd.sgd_update(p, g, lr=0.1, rescale_grad=1.0 / BATCH, out=p)
        nd.waitall()
    sgd()
    rows.append(("sgd_update x8 params", _median_window(sgd, 5) / number * 1e3, 0.0))
    return rows


def worker(mod_name, profile):
    import numpy as np
    mx = importlib.import_module(mod_name)
    res = {}
    res["imper_sps"], res["imper_loss"] = _train_sps(mx, np, hybrid=False)
    res["hybrid_sps"], res["hybrid_loss"] = _train_sps(mx, np, hybrid=True)
    res["imper_sync_sps"], _ = _train_sps(mx, np, hybrid=False, sync=True)
    res["hybrid_sync_sps"], _ = _train_sps(mx, np, hybrid=True, sync=True)
    res["conv1_ms"] = _conv_ms(mx, np, *CONV1)
    res["conv2_ms"] = _conv_ms(mx, np, *CONV2)
    if profile:
        res["profile"] = _profile(mx, np)
    return res


def worker_torch(profile):
    import numpy as np
    import torch
    import torch.nn as tnn
    import torch.nn.functional as F
    res = {"version": torch_setup(torch)}
    xs, ys = _data(np)
    xs = [torch.from_numpy(x) for x in xs]
    ys = [torch.from_numpy(y).long() for y in ys]
    net = tnn.Sequential(tnn.Conv2d(1, 20, 5), tnn.ReLU(), tnn.MaxPool2d(2, 2), tnn.Conv2d(20, 50, 5), tnn.ReLU(),
                         tnn.MaxPool2d(2, 2), tnn.Flatten(), tnn.Linear(800, 500), tnn.ReLU(), tnn.Linear(500, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    state = {"i": 0}

    def steps(n):
        for _ in range(n):
            i = state["i"] = (state["i"] + 1) % NBATCHES
            opt.zero_grad()
            loss = F.cross_entropy(net(xs[i]), ys[i])
            loss.backward()
            opt.step()
    steps(WARMUP)
    res["imper_sps"] = BATCH * STEPS / _median_window(lambda: steps(STEPS))
    res["hybrid_sps"] = None
    for key, (shape, filters) in (("conv1_ms", CONV1), ("conv2_ms", CONV2)):
        x = torch.rand(*shape)
        w = torch.rand(filters, shape[1], 5, 5) - 0.5
        b = torch.rand(filters)

        def run():
            with torch.no_grad():
                for _ in range(50):
                    F.conv2d(x, w, b)
        run()
        res[key] = _median_window(run) / 50 * 1e3
    return res


# ---------------------------------------------------------------------------
# driver


def _fmt(v, spec="%.0f"):
    return "-" if v is None else spec % v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--profile", action="store_true", help="also time every op of the net, forward and backward")
    ap.add_argument("--record", action="store_true", help="append the tables to benches/RESULTS.md")
    ap.add_argument("--mxnet-python", help="MXNet 1.9.1's Python (default: $MXNET_PYTHON, benches/.mxnet-venv, ...)")
    ap.add_argument("--note", default="", help="a line for RESULTS.md (what else ran on the machine)")
    args = ap.parse_args()
    if args.worker:
        res = worker_torch(args.profile) if args.worker == "torch" else worker(args.worker, args.profile)
        print(json.dumps(res))
        return

    extra = ["--profile"] if args.profile else []
    results = {"oxnet": run_worker(sys.executable, __file__, "oxnet", extra)}
    mxpy = args.mxnet_python or mxnet_python()
    results["mxnet"] = run_worker(mxpy, __file__, "mxnet", extra) if mxpy else None
    if mxpy is None:
        print("[mxnet skipped: no MXNet 1.9.1 python found; see --mxnet-python]", file=sys.stderr)
    thpy = torch_python()
    results["torch"] = run_worker(thpy, __file__, "torch") if thpy else None
    ox, mxr, th = results["oxnet"], results["mxnet"], results["torch"]
    backends = [b for b in ("oxnet", "mxnet", "torch") if results.get(b)]

    def ratio(a, b, key, inverse=False):
        if not a or not b or a.get(key) is None or b.get(key) is None:
            return "-"
        return "%.2fx" % ((b[key] / a[key]) if inverse else (a[key] / b[key]))

    lines = ["| case | " + " | ".join(backends) + " | oxnet vs mxnet | oxnet vs torch | target |",
             "|---|" + "---|" * (len(backends) + 3)]
    rows = [
        ("LeNet train, imperative (samples/s)", "imper_sps", "%.0f", False, ">= 1.3x mxnet"),
        ("LeNet train, hybridized (samples/s)", "hybrid_sps", "%.0f", False, ">= 8000 and >= 1.6x mxnet"),
        ("same, loss read every step as the seed does: imperative (samples/s)", "imper_sync_sps", "%.0f", False, "-"),
        ("same, loss read every step as the seed does: hybridized (samples/s)", "hybrid_sync_sps", "%.0f", False, "-"),
        ("conv1 fwd 64x1x28x28 -> 20, 5x5 (ms)", "conv1_ms", "%.3f", True, "<= 0.33 ms"),
        ("conv2 fwd 64x20x12x12 -> 50, 5x5 (ms)", "conv2_ms", "%.3f", True, "<= 1.34 ms"),
    ]
    for title, key, spec, inv, target in rows:
        cells = [_fmt(results[b].get(key), spec) for b in backends]
        lines.append("| %s | %s | %s | %s | %s |" % (title, " | ".join(cells), ratio(ox, mxr, key, inv), ratio(ox, th, key, inv), target))
    lines.append("")
    lines.append("(ratios > 1 mean oxnet is faster; times are medians of %d windows)" % WINDOWS)
    if results.get("torch"):
        lines.append("torch: PyTorch %s, CPU build, %d threads" % (results["torch"].get("version"), len(os.sched_getaffinity(0))))
    if ox:
        met = []
        met.append("hybridized >= 8000/s: %s" % ("met" if ox["hybrid_sps"] >= TARGETS["hybrid_sps"] else "NOT met"))
        if mxr:
            met.append("hybridized >= 1.6x mxnet: %s" % ("met" if ox["hybrid_sps"] >= TARGETS["hybrid_vs_mx"] * mxr["hybrid_sps"] else "NOT met"))
            met.append("imperative >= 1.3x mxnet: %s" % ("met" if ox["imper_sps"] >= TARGETS["imper_vs_mx"] * mxr["imper_sps"] else "NOT met"))
        met.append("conv1 <= 0.33 ms: %s" % ("met" if ox["conv1_ms"] <= TARGETS["conv1_ms"] else "NOT met"))
        met.append("conv2 <= 1.34 ms: %s" % ("met" if ox["conv2_ms"] <= TARGETS["conv2_ms"] else "NOT met"))
        lines.append("targets: " + "; ".join(met))
        lines.append("final loss (sanity, imperative/hybridized): oxnet %.3f/%.3f%s" % (
            ox["imper_loss"], ox["hybrid_loss"],
            (", mxnet %.3f/%.3f" % (mxr["imper_loss"], mxr["hybrid_loss"])) if mxr else ""))
    if args.profile and ox:
        pb = [b for b in ("oxnet", "mxnet") if results.get(b) and "profile" in results[b]]
        lines.append("")
        lines.append("| op (each alone, ms) | " + " | ".join("%s fwd | %s bwd" % (b, b) for b in pb) + " |")
        lines.append("|---|" + "---|---|" * len(pb))
        tot = {b: [0.0, 0.0] for b in pb}
        for i, (title, _, _) in enumerate(ox["profile"]):
            cells = []
            for b in pb:
                _, f, bw = results[b]["profile"][i]
                tot[b][0] += f
                tot[b][1] += bw
                cells.append("%.3f | %.3f" % (f, bw))
            lines.append("| %s | %s |" % (title, " | ".join(cells)))
        lines.append("| sum | %s |" % " | ".join("%.3f | %.3f" % tuple(tot[b]) for b in pb))
        lines.append("| whole step, imperative (1000 * 64 / samples/s) | %s |" % " | ".join(
            "%.3f | -" % (1e3 * BATCH / results[b]["imper_sps"]) for b in pb))
    table = "\n".join(lines)
    print(table)
    if args.record:
        head = "\n## bench_gluon — %s — %s, %d cores, Python %s\n\n" % (
            datetime.date.today().isoformat(), platform.machine(), os.cpu_count(), platform.python_version())
        if args.note:
            head += args.note + "\n\n"
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write(head + table + "\n")


if __name__ == "__main__":
    main()
