"""ONNX and predictor benchmark: ResNet-18 (resnet18_v1, random weights) at batch 1,
3x224x224: oxnet's hybridized forward (Python), the Rust predictor (the ``predict``
example of oxnet-core, no Python: the same network exported as symbol.json + .params)
and onnxruntime's CPU run of the same model exported by mx.onnx.export_model, in one
run on one machine. The Rust example is built with ``cargo build --release`` first
(``--no-rust`` skips that row).

    python benches/bench_onnx.py            # prints the table
    python benches/bench_onnx.py --record   # ... and appends it to RESULTS.md

Needs onnx and onnxruntime (requirements-dev.txt). onnxruntime gets as many intra-op
threads as this process may use cores, as oxnet does. Median of REPEATS runs after
warm-up; the outputs of the two are checked to agree (max abs diff).
"""

import argparse
import datetime
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPEATS = 20


def _median(fn, warm=3, reps=REPEATS):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--model", default="resnet18_v1")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--no-rust", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
    import onnxruntime as ort
    import oxnet as mx
    net = mx.gluon.model_zoo.vision.get_model(args.model)
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    x = np.random.RandomState(0).uniform(-1, 1, (1, 3, args.size, args.size)).astype(np.float32)
    xn = mx.nd.array(x)
    y = net(xn).asnumpy()
    with tempfile.TemporaryDirectory() as tmp:
        sym = net(mx.sym.var("data"))
        params = {p.name: p.data() for p in net.collect_params().values()}
        t0 = time.perf_counter()
        path = mx.onnx.export_model(sym, params, [x.shape], np.float32,
                                    os.path.join(tmp, "model.onnx"))
        export_s = time.perf_counter() - t0
        so = ort.SessionOptions()
        so.intra_op_num_threads = len(os.sched_getaffinity(0))
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        rust_ms = None if args.no_rust else _rust_latency(net, tmp, args.size)
    z = sess.run(None, {"data": x})[0]
    diff = float(np.abs(z - y).max())

    def ox():
        net(xn).wait_to_read()

    def rt():
        sess.run(None, {"data": x})
    ox_ms = 1000 * _median(ox)
    rt_ms = 1000 * _median(rt)
    lines = ["| case | oxnet ms | onnxruntime %s ms | onnxruntime / oxnet |" % ort.__version__,
             "|---|---|---|---|",
             "| %s forward, batch 1, 3x%dx%d (Python, hybridized) | %.2f | %.2f | %.2fx |"
             % (args.model, args.size, args.size, ox_ms, rt_ms, rt_ms / ox_ms)]
    if rust_ms is not None:
        lines.append("| %s forward, batch 1 (Rust predictor, no Python) | %.2f | %.2f | %.2fx |"
                     % (args.model, rust_ms, rt_ms, rt_ms / rust_ms))
        lines.append("")
        lines.append("Rust predictor / Python path: %.2fx (< 1: the predictor is faster)"
                     % (rust_ms / ox_ms))
    lines += ["",
             "export_model: %.2f s; max abs diff of the outputs: %.2e; medians of %d runs"
             % (export_s, diff, REPEATS),
             "(times: lower is better; a ratio > 1 means oxnet is faster)"]
    table = "\n".join(lines)
    print(table)
    if args.record:
        head = "\n## bench_onnx — %s — %s, %d cores, Python %s\n\n" % (
            datetime.date.today().isoformat(), platform.machine(), os.cpu_count(),
            platform.python_version())
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write(head + table + "\n")


def _rust_latency(net, tmp, size):
    """Median ms of the ``predict`` example's timed forward passes on ``net`` exported
    to ``tmp``; None (with a note) when cargo is not available."""
    import re
    import shutil
    import subprocess
    root = os.path.dirname(HERE)
    if shutil.which("cargo") is None:
        print("(no cargo: the Rust predictor row is left out)", file=sys.stderr)
        return None
    prefix = os.path.join(tmp, "model")
    net.export(prefix)
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "oxnet-core", "--example",
                    "predict"], cwd=root, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
    exe = os.path.join(target, "release", "examples", "predict")
    image = os.path.join(root, "data", "mxnet-models", "mobilenet0.25", "chelsea.jpg")
    out = subprocess.run([exe, prefix + "-symbol.json", prefix + "-0000.params", image,
                          "--size", str(size), "--repeat", str(REPEATS)], check=True,
                         capture_output=True, text=True).stdout
    m = re.search(r"median ([0-9.]+) ms", out)
    return float(m.group(1)) if m else None


if __name__ == "__main__":
    main()
