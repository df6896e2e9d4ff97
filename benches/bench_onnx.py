"""ONNX benchmark: ResNet-18 (resnet18_v1, random weights) at batch 1, 3x224x224:
oxnet's hybridized forward against onnxruntime's CPU run of the same model exported
by mx.onnx.export_model, in one run on one machine.

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
             "| %s forward, batch 1, 3x%dx%d | %.2f | %.2f | %.2fx |"
             % (args.model, args.size, args.size, ox_ms, rt_ms, rt_ms / ox_ms),
             "",
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


if __name__ == "__main__":
    main()
