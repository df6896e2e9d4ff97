"""Contrib detection ops and the profiler's cost: oxnet against MXNet 1.9.1, in one run
on one machine (issue 20's speed targets).

    python benches/bench_contrib.py                 # driver: runs both backends, prints ratios
    python benches/bench_contrib.py --record        # ... and appends the table to RESULTS.md
    python benches/bench_contrib.py --only box_nms  # cases whose name contains the text

Cases (float32, waited, medians):
- `contrib.box_nms` on (1, 10000, 6) boxes `[id, score, x1, y1, x2, y2]` (20 classes,
  overlap_thresh 0.5, valid_thresh 0.01, topk -1, force_suppress False);
- `contrib.ROIAlign` of data (2, 256, 64, 64) with 512 rois, pooled (7, 7),
  spatial_scale 1/16, sample_ratio 2: forward, and forward+backward (data gradient);
- `ROIPooling` of the same data and rois, pooled (7, 7), spatial_scale 1/16: forward,
  and forward+backward (data gradient);
- `contrib.PSROIPooling` of data (2, 490, 64, 64) (R-FCN's position-sensitive maps:
  output_dim 10, pooled_size 7) with the same 512 rois, spatial_scale 1/16: forward,
  and forward+backward (data gradient);
- `contrib.DeformableConvolution` of data (4, 64, 56, 56), 64 filters 3x3 pad 1, one
  deformable group, offsets of a few pixels: forward, and forward+backward (gradients
  of data, offset, weight and bias);
- the profiler's cost when off: 10000 small `nd` ops (`x + 1` on 16 floats, waited at
  the end) with the profiler never configured, then after `set_state('run')` and
  `set_state('stop')` (the recording path present but off); the difference is the
  price of the off switch.
Each backend runs in its own process (this script with --worker NAME) and reports
medians and checksums as JSON; MXNet runs in its own virtualenv ($MXNET_PYTHON,
benches/.mxnet-venv or /opt/mxnet-venv). The checksums (sums of the outputs and
gradients on the bench inputs) show that both compute the same thing.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _driver import mxnet_python, run_worker  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPEATS = 7

CASES = [
    ("box_nms", "box_nms (1, 10000, 6), 20 classes (ms)"),
    ("roialign_fwd", "ROIAlign (2,256,64,64), 512 rois, 7x7, sr 2: forward (ms)"),
    ("roialign_fwdbwd", "ROIAlign ... forward+backward (ms)"),
    ("roipool_fwd", "ROIPooling (2,256,64,64), 512 rois, 7x7: forward (ms)"),
    ("roipool_fwdbwd", "ROIPooling ... forward+backward (ms)"),
    ("psroipool_fwd", "PSROIPooling (2,490,64,64), 512 rois, output_dim 10, 7x7: forward (ms)"),
    ("psroipool_fwdbwd", "PSROIPooling ... forward+backward (ms)"),
    ("deform_fwd", "DeformableConvolution (4,64,56,56), 64 x 3x3 pad 1: forward (ms)"),
    ("deform_fwdbwd", "DeformableConvolution ... forward+backward (ms)"),
    ("prof_never", "10000 small nd ops, profiler never configured (ms)"),
    ("prof_off", "10000 small nd ops, profiler run then stop (ms)"),
]


def _median(fn, warm=2, reps=REPEATS):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return 1000 * statistics.median(ts)


def nms_input(np):
    rs = np.random.RandomState(0)
    n = 10000
    xy = rs.uniform(0, 1000, (n, 2))
    wh = rs.uniform(10, 120, (n, 2))
    d = np.concatenate([rs.randint(0, 20, (n, 1)), rs.uniform(0, 1, (n, 1)), xy, xy + wh], axis=1)
    return d.astype(np.float32).reshape(1, n, 6)


def roi_inputs(np):
    rs = np.random.RandomState(1)
    data = rs.standard_normal((2, 256, 64, 64)).astype(np.float32)
    r = 512
    xy = rs.uniform(0, 900, (r, 2))
    wh = rs.uniform(16, 300, (r, 2))
    rois = np.concatenate([rs.randint(0, 2, (r, 1)), xy, np.minimum(xy + wh, 1023)], axis=1).astype(np.float32)
    ograd = rs.standard_normal((r, 256, 7, 7)).astype(np.float32)
    return data, rois, ograd


def psroi_inputs(np):
    rs = np.random.RandomState(3)
    data = rs.standard_normal((2, 490, 64, 64)).astype(np.float32)
    ograd = rs.standard_normal((512, 10, 7, 7)).astype(np.float32)
    return data, ograd


def deform_inputs(np):
    rs = np.random.RandomState(2)
    data = rs.standard_normal((4, 64, 56, 56)).astype(np.float32)
    offset = (2 * rs.standard_normal((4, 18, 56, 56))).astype(np.float32)
    weight = (0.05 * rs.standard_normal((64, 64, 3, 3))).astype(np.float32)
    bias = rs.standard_normal(64).astype(np.float32)
    ograd = rs.standard_normal((4, 64, 56, 56)).astype(np.float32)
    return data, offset, weight, bias, ograd


def worker(mod_name, only):
    mx = __import__(mod_name)
    import numpy as np
    nd = mx.nd
    res = {}

    def want(key):
        return only is None or only in key

    def total(a):
        return float(a.astype("float64").sum().asscalar())

    if want("box_nms"):
        x = nd.array(nms_input(np))
        kw = dict(overlap_thresh=0.5, valid_thresh=0.01, topk=-1, coord_start=2, score_index=1,
                  id_index=0, force_suppress=False)
        nd.waitall()
        res["box_nms"] = _median(lambda: nd.contrib.box_nms(x, **kw).wait_to_read())
        out = nd.contrib.box_nms(x, **kw)
        res["box_nms_check"] = [total(out), int((out[0, :, 1] >= 0).sum().asscalar())]

    if want("roialign"):
        data, rois, og = roi_inputs(np)
        data, rois, og = nd.array(data), nd.array(rois), nd.array(og)
        kw = dict(pooled_size=(7, 7), spatial_scale=1.0 / 16, sample_ratio=2)
        data.attach_grad()
        nd.waitall()

        def fwd():
            nd.contrib.ROIAlign(data, rois, **kw).wait_to_read()

        def fwd_bwd():
            with mx.autograd.record():
                out = nd.contrib.ROIAlign(data, rois, **kw)
            out.backward(og)
            data.grad.wait_to_read()
        res["roialign_fwd"] = _median(fwd)
        res["roialign_fwdbwd"] = _median(fwd_bwd)
        res["roialign_check"] = [total(nd.contrib.ROIAlign(data, rois, **kw)), total(data.grad)]

    def pool_case(key, op, data, rois, og, kw):
        data.attach_grad()
        nd.waitall()

        def fwd():
            op(data, rois, **kw).wait_to_read()

        def fwd_bwd():
            with mx.autograd.record():
                out = op(data, rois, **kw)
            out.backward(og)
            data.grad.wait_to_read()
        res[key + "_fwd"] = _median(fwd)
        res[key + "_fwdbwd"] = _median(fwd_bwd)
        res[key + "_check"] = [total(op(data, rois, **kw)), total(data.grad)]

    if want("roipool"):
        data, rois, og = (nd.array(a) for a in roi_inputs(np))
        pool_case("roipool", nd.ROIPooling, data, rois, og, dict(pooled_size=(7, 7), spatial_scale=1.0 / 16))

    if want("psroipool"):
        data, og = (nd.array(a) for a in psroi_inputs(np))
        rois = nd.array(roi_inputs(np)[1])
        pool_case("psroipool", nd.contrib.PSROIPooling, data, rois, og,
                  dict(spatial_scale=1.0 / 16, output_dim=10, pooled_size=7))

    if want("deform"):
        arrs = [nd.array(a) for a in deform_inputs(np)]
        data, offset, weight, bias, og = arrs
        kw = dict(kernel=(3, 3), pad=(1, 1), num_filter=64, num_deformable_group=1)
        for a in (data, offset, weight, bias):
            a.attach_grad()
        nd.waitall()

        def fwd():
            nd.contrib.DeformableConvolution(data, offset, weight, bias, **kw).wait_to_read()

        def fwd_bwd():
            with mx.autograd.record():
                out = nd.contrib.DeformableConvolution(data, offset, weight, bias, **kw)
            out.backward(og)
            for a in (data, offset, weight, bias):
                a.grad.wait_to_read()
        res["deform_fwd"] = _median(fwd, reps=5)
        res["deform_fwdbwd"] = _median(fwd_bwd, reps=5)
        out = nd.contrib.DeformableConvolution(data, offset, weight, bias, **kw)
        res["deform_check"] = [total(out)] + [total(a.grad) for a in (data, offset, weight, bias)]

    if want("prof"):
        x = nd.ones((16,))
        nd.waitall()

        def small_ops():
            y = x
            for _ in range(10000):
                y = y + 1
            y.wait_to_read()
        res["prof_never"] = _median(small_ops, reps=15)
        path = os.path.join(tempfile.mkdtemp(), "trace.json")
        mx.profiler.set_config(filename=path, profile_all=True)
        mx.profiler.set_state("run")
        small_ops()
        mx.profiler.set_state("stop")
        res["prof_off"] = _median(small_ops, reps=15)
    return res


def _load():
    try:
        return "%.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--only")
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    extra = ["--only", args.only] if args.only else []
    if args.worker:
        print(json.dumps(worker(args.worker, args.only)))
        return
    load0 = _load()
    results = {"oxnet": run_worker(sys.executable, __file__, "oxnet", extra)}
    mxpy = mxnet_python()
    results["mxnet"] = run_worker(mxpy, __file__, "mxnet", extra) if mxpy else None
    load1 = _load()
    ox, mxr = results["oxnet"], results["mxnet"]
    backends = [b for b in ("oxnet", "mxnet") if results.get(b)]
    lines = ["| case | " + " | ".join(b + " ms" for b in backends) + " | mxnet / oxnet |",
             "|---|" + "---|" * (len(backends) + 1)]
    for key, title in CASES:
        if not all(key in results[b] for b in backends):
            continue
        cells = ["%.3g" % results[b][key] for b in backends]
        ratio = "%.2fx" % (mxr[key] / ox[key]) if ox and mxr else "-"
        lines.append("| %s | %s | %s |" % (title, " | ".join(cells), ratio))
    lines.append("")
    for key, what in (("box_nms_check", "box_nms (sum of the output, boxes kept)"),
                      ("roialign_check", "ROIAlign (sum of the output, of the data gradient)"),
                      ("roipool_check", "ROIPooling (sum of the output, of the data gradient)"),
                      ("psroipool_check", "PSROIPooling (sum of the output, of the data gradient)"),
                      ("deform_check", "DeformableConvolution (sums of the output, gradients of data, offset, weight, bias)")):
        for b in backends:
            if key in results[b]:
                lines.append("check %s, %s: %s" % (what, b, ", ".join("%.7g" % v for v in results[b][key])))
    for b in backends:
        if "prof_never" in results[b]:
            r = results[b]
            lines.append("profiler off cost, %s: %+.1f%% (stopped vs never configured)"
                         % (b, 100 * (r["prof_off"] / r["prof_never"] - 1)))
    lines.append("load average before / after the run: %s / %s" % (load0, load1))
    lines.append("(times: lower is better; ratios > 1 mean oxnet is faster)")
    table = "\n".join(lines)
    print(table)
    if args.record:
        head = "\n## bench_contrib — %s — %s, %d cores, Python %s\n\n" % (
            datetime.date.today().isoformat(), platform.machine(), os.cpu_count(), platform.python_version())
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write(head + table + "\n")


if __name__ == "__main__":
    main()
