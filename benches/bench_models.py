"""Real networks on the CPU: oxnet against MXNet 1.9.1, PyTorch's CPU build and
onnxruntime, in one run on one machine.

    python benches/bench_models.py                  # whole models (the issue's table)
    python benches/bench_models.py --layers         # every convolution shape, per layer
    python benches/bench_models.py --models resnet18_v1 --cases infer1,infer32
    python benches/bench_models.py --record         # ... and append the tables to RESULTS.md

Whole models (`--cases`): `infer1` (forward, batch 1: latency), `infer32` (forward,
batch 32), `train32` (forward, softmax cross-entropy, backward and an SGD-momentum step,
batch 32). oxnet and MXNet run the same Gluon model-zoo network, hybridized with
static_alloc; PyTorch runs torchvision's definition of the same network (eval mode and
no_grad for inference); onnxruntime runs oxnet's network exported by
mx.onnx.export_model (inference only). Weights are random; every backend gets all the
cores this process may use.

Per layer (`--layers`): every distinct convolution of ResNet-18/50, MobileNet v1/v2,
VGG-11 and Inception-v3 (shapes read from oxnet's model zoo), run alone as one
Convolution (oxnet, MXNet) or F.conv2d (PyTorch): forward at batch 1 and forward +
backward (data and weight gradients) at batch LAYER_BATCH, in GFLOP/s next to the
machine's GEMM peak (oxnet's 1024x1024 float32 dot, measured in the same run).

Each backend runs in its own process (see _driver.py); times are medians after warm-up.
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

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _driver import mxnet_python, run_worker, torch_python, torch_setup  # noqa: E402

MODELS = ["resnet18_v1", "resnet50_v1", "mobilenetv2_1.0"]
CASES = ["infer1", "infer32", "train32"]
TRAINED = {"resnet18_v1", "resnet50_v1"}
LAYER_MODELS = [("resnet18_v1", 224), ("resnet50_v1", 224), ("mobilenet1.0", 224), ("mobilenetv2_1.0", 224),
                ("vgg11", 224), ("inceptionv3", 299)]
LAYER_BATCH = 8
TORCHVISION = {"resnet18_v1": "resnet18", "resnet50_v1": "resnet50", "mobilenetv2_1.0": "mobilenet_v2"}


def _median(fn, warm, reps, budget=None):
    """Median seconds of `fn` over `reps` runs after `warm` (fewer runs once `budget`
    seconds are spent, at least 3)."""
    for _ in range(warm):
        fn()
    ts = []
    t_start = time.perf_counter()
    for i in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
        if budget is not None and i >= 2 and time.perf_counter() - t_start > budget:
            break
    return statistics.median(ts)


def _reps(case, quick):
    base = {"infer1": (5, 30), "infer32": (2, 7), "train32": (2, 5)}[case]
    return (1, max(3, base[1] // 3)) if quick else base


def _size(model):
    return 299 if model.startswith("inception") else 224


# ---- gluon backends (oxnet and MXNet run the same code) ------------------------------

def _import(name):
    if name == "oxnet":
        sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
        import oxnet as mx
    else:
        import mxnet as mx
    return mx


def gluon_models(name, models, cases, quick):
    mx = _import(name)
    res = {"version": getattr(mx, "__version__", "?")}
    rng = np.random.RandomState(0)
    for model in models:
        size = _size(model)
        for case in cases:
            if case == "train32" and model not in TRAINED:
                continue
            batch = 1 if case == "infer1" else 32
            net = mx.gluon.model_zoo.vision.get_model(model, classes=1000)
            net.initialize(mx.init.Xavier())
            net.hybridize(static_alloc=True, static_shape=True)
            x = mx.nd.array(rng.uniform(-1, 1, (batch, 3, size, size)).astype(np.float32))
            warm, reps = _reps(case, quick)
            if case == "train32":
                y = mx.nd.array(rng.randint(0, 1000, batch).astype(np.float32))
                loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
                trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01, "momentum": 0.9})

                def step():
                    with mx.autograd.record():
                        loss = loss_fn(net(x), y)
                    loss.backward()
                    trainer.step(batch)
                    loss.wait_to_read()
                fn = step
            else:
                def fn():
                    net(x).wait_to_read()
            res["%s/%s" % (model, case)] = 1000 * _median(fn, warm, reps, budget=60)
    return res


def gluon_layers(name, spec, quick):
    mx = _import(name)
    res = {"version": getattr(mx, "__version__", "?")}
    if name == "oxnet":
        a = mx.nd.array(np.random.rand(1024, 1024).astype(np.float32))
        mx.nd.dot(a, a).wait_to_read()
        t = _median(lambda: mx.nd.dot(a, a).wait_to_read(), 3, 15)
        res["peak_gflops"] = 2 * 1024 ** 3 / t / 1e9
    rng = np.random.RandomState(0)
    for key, L in spec.items():
        c, h, w, f, k, s, p, d, g = (L[n] for n in ("c", "h", "w", "f", "k", "s", "p", "d", "g"))
        kw = dict(kernel=tuple(k), stride=tuple(s), pad=tuple(p), dilate=tuple(d), num_filter=f, num_group=g,
                  no_bias=True)
        wt = mx.nd.array(rng.uniform(-0.1, 0.1, (f, c // g, k[0], k[1])).astype(np.float32))
        x1 = mx.nd.array(rng.uniform(-1, 1, (1, c, h, w)).astype(np.float32))
        fwd = _median(lambda: mx.nd.Convolution(x1, wt, **kw).wait_to_read(), 2, 5 if quick else 15, budget=10)
        xb = mx.nd.array(rng.uniform(-1, 1, (LAYER_BATCH, c, h, w)).astype(np.float32))
        xb.attach_grad()
        wt.attach_grad()

        def fb():
            with mx.autograd.record():
                out = mx.nd.Convolution(xb, wt, **kw)
            out.backward(mx.nd.ones_like(out))
            xb.grad.wait_to_read()
            wt.grad.wait_to_read()
        res[key] = {"fwd1": 1000 * fwd, "fb": 1000 * _median(fb, 1, 3 if quick else 7, budget=20)}
    return res


def conv_spec():
    """The distinct convolutions of LAYER_MODELS, read from oxnet's model zoo: key ->
    geometry and where it occurs."""
    mx = _import("oxnet")
    spec = {}
    for model, size in LAYER_MODELS:
        net = mx.gluon.model_zoo.vision.get_model(model)
        sym = net(mx.sym.var("data"))
        internals = sym.get_internals()
        _, outs, _ = internals.infer_shape(data=(1, 3, size, size))
        shapes = dict(zip(internals.list_outputs(), outs))
        nodes = json.loads(sym.tojson())["nodes"]
        for n in nodes:
            if n["op"] != "Convolution":
                continue
            src = nodes[n["inputs"][0][0]]
            dname = src["name"] if src["op"] == "null" else src["name"] + "_output"
            if src["op"] != "null" and n["inputs"][0][1] > 0:
                dname = src["name"] + "_output%d" % n["inputs"][0][1]
            _, c, h, w = shapes[dname]
            a = n.get("attrs", {})

            def tup(v, dflt):
                return [int(t) for t in v.strip("()").split(",") if t.strip()] if v else dflt
            L = {"c": c, "h": h, "w": w, "f": int(a["num_filter"]), "k": tup(a.get("kernel"), [1, 1]),
                 "s": tup(a.get("stride"), [1, 1]), "p": tup(a.get("pad"), [0, 0]),
                 "d": tup(a.get("dilate"), [1, 1]), "g": int(a.get("num_group", 1))}
            key = "%dx%dx%d f%d k%dx%d s%d p%d%s" % (c, h, w, L["f"], L["k"][0], L["k"][1], L["s"][0], L["p"][0],
                                                      " g%d" % L["g"] if L["g"] > 1 else "")
            if key not in spec:
                L["models"] = []
                spec[key] = L
            if model not in spec[key]["models"]:
                spec[key]["models"].append(model)
    return spec


# ---- PyTorch --------------------------------------------------------------------------

def torch_models(models, cases, quick):
    import torch
    import torchvision
    res = {"version": torch_setup(torch), "threads": torch.get_num_threads()}
    rng = np.random.RandomState(0)
    for model in models:
        for case in cases:
            if case == "train32" and model not in TRAINED:
                continue
            batch = 1 if case == "infer1" else 32
            net = getattr(torchvision.models, TORCHVISION[model])()
            x = torch.from_numpy(rng.uniform(-1, 1, (batch, 3, 224, 224)).astype(np.float32))
            warm, reps = _reps(case, quick)
            if case == "train32":
                net.train()
                y = torch.from_numpy(rng.randint(0, 1000, batch)).long()
                opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
                lossf = torch.nn.CrossEntropyLoss()

                def fn():
                    opt.zero_grad()
                    lossf(net(x), y).backward()
                    opt.step()
            else:
                net.eval()

                def fn():
                    with torch.no_grad():
                        net(x)
            res["%s/%s" % (model, case)] = 1000 * _median(fn, warm, reps, budget=60)
    return res


def torch_layers(spec, quick):
    import torch
    import torch.nn.functional as F
    res = {"version": torch_setup(torch), "threads": torch.get_num_threads()}
    for key, L in spec.items():
        c, h, w, f, k, s, p, d, g = (L[n] for n in ("c", "h", "w", "f", "k", "s", "p", "d", "g"))
        wt = torch.rand(f, c // g, k[0], k[1]) * 0.2 - 0.1
        x1 = torch.rand(1, c, h, w)

        def fwd():
            with torch.no_grad():
                F.conv2d(x1, wt, None, tuple(s), tuple(p), tuple(d), g)
        xb = (torch.rand(LAYER_BATCH, c, h, w)).requires_grad_()
        wg = wt.clone().requires_grad_()

        def fb():
            out = F.conv2d(xb, wg, None, tuple(s), tuple(p), tuple(d), g)
            xb.grad = None
            wg.grad = None
            out.backward(torch.ones_like(out))
        res[key] = {"fwd1": 1000 * _median(fwd, 2, 5 if quick else 15, budget=10),
                    "fb": 1000 * _median(fb, 1, 3 if quick else 7, budget=20)}
    return res


# ---- onnxruntime ----------------------------------------------------------------------

def ort_models(models, cases, quick):
    import onnxruntime as ort
    mx = _import("oxnet")
    res = {"version": ort.__version__}
    rng = np.random.RandomState(0)
    for model in models:
        for case in cases:
            if case == "train32":
                continue
            batch = 1 if case == "infer1" else 32
            net = mx.gluon.model_zoo.vision.get_model(model)
            net.initialize(mx.init.Xavier())
            x = rng.uniform(-1, 1, (batch, 3, 224, 224)).astype(np.float32)
            net(mx.nd.array(x))
            with tempfile.TemporaryDirectory() as tmp:
                sym = net(mx.sym.var("data"))
                params = {p.name: p.data() for p in net.collect_params().values()}
                path = mx.onnx.export_model(sym, params, [x.shape], np.float32, os.path.join(tmp, "m.onnx"))
                so = ort.SessionOptions()
                so.intra_op_num_threads = len(os.sched_getaffinity(0))
                sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            warm, reps = _reps(case, quick)
            res["%s/%s" % (model, case)] = 1000 * _median(lambda: sess.run(None, {"data": x}), warm, reps, budget=60)
    return res


# ---- driver ---------------------------------------------------------------------------

def worker(args):
    spec = None
    if args.spec:
        with open(args.spec) as f:
            spec = json.load(f)
    if args.worker == "spec":
        return conv_spec()
    if args.worker == "torch":
        return torch_layers(spec, args.quick) if args.layers else torch_models(args.models, args.cases, args.quick)
    if args.worker == "ort":
        return ort_models(args.models, args.cases, args.quick)
    if args.layers:
        return gluon_layers(args.worker, spec, args.quick)
    return gluon_models(args.worker, args.models, args.cases, args.quick)


def _ratio(a, b):
    return "%.2fx" % (a / b) if a and b else "-"


def models_table(args, results):
    backends = [b for b in ("oxnet", "mxnet", "torch", "ort") if results.get(b)]
    names = {"oxnet": "oxnet", "mxnet": "MXNet %s" % (results.get("mxnet") or {}).get("version", ""),
             "torch": "PyTorch %s (%s threads)" % ((results.get("torch") or {}).get("version", ""),
                                                   (results.get("torch") or {}).get("threads", "")),
             "ort": "onnxruntime %s" % (results.get("ort") or {}).get("version", "")}
    lines = ["| case (ms) | " + " | ".join(names[b] for b in backends)
             + " | MXNet / oxnet | PyTorch / oxnet | onnxruntime / oxnet |",
             "|---|" + "---|" * (len(backends) + 3)]
    for model in args.models:
        for case in args.cases:
            key = "%s/%s" % (model, case)
            if not any(key in results[b] for b in backends):
                continue
            vals = {b: results[b].get(key) for b in backends}
            ox = vals.get("oxnet")
            lines.append("| %s %s | " % (model, case) + " | ".join(
                "%.1f" % vals[b] if vals[b] else "-" for b in backends) + " | %s | %s | %s |" % (
                _ratio(vals.get("mxnet"), ox), _ratio(vals.get("torch"), ox), _ratio(vals.get("ort"), ox)))
    lines.append("")
    lines.append("(medians; a ratio > 1 means oxnet is faster)")
    return "\n".join(lines)


def layers_table(spec, results):
    ox, th, mxr = results.get("oxnet") or {}, results.get("torch") or {}, results.get("mxnet") or {}
    peak = ox.get("peak_gflops", 0)
    lines = ["GEMM peak (oxnet 1024x1024 float32 dot, this run): %.0f GFLOP/s" % peak, "",
             "| conv (c x h x w, filters, kernel, stride, pad, groups) | in | fwd b1 GFLOP/s oxnet | torch"
             " | mxnet | fwd+bwd b%d GFLOP/s oxnet | torch | mxnet | oxnet fwd %% of peak |" % LAYER_BATCH,
             "|---|---|---|---|---|---|---|---|---|"]

    def gf(r, key, case, flops):
        v = r.get(key, {}).get(case) if r else None
        return flops / (v / 1000) / 1e9 if v else None

    def fmt(v):
        return "%.0f" % v if v else "-"
    for key, L in spec.items():
        oh = (L["h"] + 2 * L["p"][0] - L["d"][0] * (L["k"][0] - 1) - 1) // L["s"][0] + 1
        ow = (L["w"] + 2 * L["p"][1] - L["d"][1] * (L["k"][1] - 1) - 1) // L["s"][1] + 1
        flops = 2.0 * L["f"] * oh * ow * (L["c"] // L["g"]) * L["k"][0] * L["k"][1]
        o1, t1, m1 = (gf(r, key, "fwd1", flops) for r in (ox, th, mxr))
        ob, tb, mb = (gf(r, key, "fb", 3 * LAYER_BATCH * flops) for r in (ox, th, mxr))
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            key, ",".join(m.split("_")[0] for m in L["models"]), fmt(o1), fmt(t1), fmt(m1), fmt(ob), fmt(tb),
            fmt(mb), "%.0f%%" % (100 * o1 / peak) if o1 and peak else "-"))
    tot = {}
    for b, r in (("oxnet", ox), ("torch", th), ("mxnet", mxr)):
        if r and all(k in r for k in spec):
            tot[b] = sum(r[k]["fwd1"] for k in spec), sum(r[k]["fb"] for k in spec)
    lines.append("")
    lines.append("Sum over the distinct shapes (ms, fwd b1 / fwd+bwd b%d): " % LAYER_BATCH
                 + "; ".join("%s %.1f / %.1f" % (b, *t) for b, t in tot.items()))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--spec")
    ap.add_argument("--layers", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--backends", default="oxnet,mxnet,torch,ort")
    args = ap.parse_args()
    args.models = args.models.split(",")
    args.cases = args.cases.split(",")
    if args.worker:
        print(json.dumps(worker(args)))
        return
    extra = ["--models", ",".join(args.models), "--cases", ",".join(args.cases)] + (["--quick"] if args.quick else [])
    backends = args.backends.split(",")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        spec = None
        if args.layers:
            spec = run_worker(sys.executable, __file__, "spec")
            path = os.path.join(tmp, "spec.json")
            with open(path, "w") as f:
                json.dump(spec, f)
            extra += ["--layers", "--spec", path]
        pythons = {"oxnet": sys.executable, "mxnet": mxnet_python(), "torch": torch_python(),
                   "ort": None if args.layers else sys.executable}
        for b in backends:
            if pythons.get(b):
                results[b] = run_worker(pythons[b], __file__, b, extra)
    table = layers_table(spec, results) if args.layers else models_table(args, results)
    print(table)
    if args.record:
        head = "\n## bench_models%s — %s — %s, %d cores, Python %s\n\n" % (
            " --layers" if args.layers else "", datetime.date.today().isoformat(), platform.machine(),
            len(os.sched_getaffinity(0)), platform.python_version())
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write(head + table + "\n")


if __name__ == "__main__":
    main()
