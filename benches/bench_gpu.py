"""GPU benchmarks against PyTorch on the same GPU, in the same run (issue 6):

- ``c = a + b`` on 2.5e8 float32 vs torch's device-to-device copy bandwidth
  (target: at least 85% of it);
- an 8192^2 ``dot`` in float32, float16 and bfloat16 vs ``torch.mm`` (target: within 5%);
- host time of a tiny op (target: at most 5 us);
- LeNet (the seed's Gluon CNN) training steps per second vs PyTorch eager;
- ResNet-18 (model zoo ``resnet18_v1``, 32x32 input, batch 128, hybridized, SGD with
  momentum) training images per second vs torchvision's resnet18 in PyTorch eager;
- the same ResNet-18 step in bfloat16: with ``mx.contrib.amp.init('bfloat16')``
  (float32 master weights, GEMM ops in bfloat16; target: at least 1.5x the float32
  step) and with the whole net cast to bfloat16 plus ``multi_precision`` SGD, next to
  PyTorch's ``torch.autocast(dtype=torch.bfloat16)``. Each bfloat16 run is its own
  process (``amp.init`` patches the op namespaces for the rest of a process).

Needs an NVIDIA GPU and a CUDA build of PyTorch; exits with a message otherwise.
Run: ``.venv/bin/python benches/bench_gpu.py`` (add ``--quick`` for small sizes).
"""

import sys
import time


def _need(cond, msg):
    if not cond:
        print("bench_gpu: " + msg, file=sys.stderr)
        sys.exit(2)


def best_of(fn, sync, reps=5, inner=1):
    fn()
    sync()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t) / inner)
    return best


def main():
    import oxnet as mx
    _need(mx.context.num_gpus() > 0, "no GPU (mx.context.num_gpus() == 0); nothing to measure")
    try:
        import torch
    except ImportError:
        torch = None
    _need(torch is not None and torch.cuda.is_available(), "PyTorch with CUDA is needed for the comparison")
    quick = "--quick" in sys.argv
    ctx, dev = mx.gpu(0), torch.device("cuda:0")
    tsync = torch.cuda.synchronize
    results = []
    if "--tiny" in sys.argv:
        print("tiny op host time (us): %.3f" % (tiny_host(mx, ctx) * 1e6))
        return
    if "--resnet-mode" in sys.argv:
        mode = sys.argv[sys.argv.index("--resnet-mode") + 1]
        steps = 3 if quick else 30
        print("IMG_PER_S %.3f" % resnet_oxnet(mx, ctx, steps, mode=mode))
        return

    # 1. c = a + b vs torch's copy bandwidth (bytes moved: 3 arrays vs 2).
    n = 10 ** 6 if quick else 250_000_000
    a, b = mx.nd.ones((n,), ctx=ctx), mx.nd.ones((n,), ctx=ctx)
    c = mx.nd.empty((n,), ctx=ctx)
    t_add = best_of(lambda: mx.nd.elemwise_add(a, b, out=c), c.wait_to_read)
    ta, tb = torch.ones(n, device=dev), torch.empty(n, device=dev)
    t_copy = best_of(lambda: tb.copy_(ta), tsync)
    bw_add, bw_copy = 3 * 4 * n / t_add, 2 * 4 * n / t_copy
    results.append(("c = a + b bandwidth (GB/s)", bw_add / 1e9, bw_copy / 1e9, bw_add / bw_copy, 0.85))
    del a, b, c, ta, tb

    # 2. 8192^2 dot, float32 and float16.
    m = 1024 if quick else 8192
    for dt, tdt in (("float32", torch.float32), ("float16", torch.float16), ("bfloat16", torch.bfloat16)):
        x, y = mx.nd.ones((m, m), ctx=ctx, dtype=dt), mx.nd.ones((m, m), ctx=ctx, dtype=dt)
        try:
            t_dot = best_of(lambda: mx.nd.dot(x, y), lambda: mx.nd.waitall())
        except mx.base.MXNetError as e:
            print("dot on gpu not available: %s" % str(e).splitlines()[0])
            t_dot = float("nan")
        tx, ty = torch.ones(m, m, device=dev, dtype=tdt), torch.ones(m, m, device=dev, dtype=tdt)
        t_mm = best_of(lambda: torch.mm(tx, ty), tsync)
        flops = 2 * m ** 3
        results.append(("%d^2 dot %s (TFLOP/s)" % (m, dt), flops / t_dot / 1e12, flops / t_mm / 1e12, t_mm / t_dot, 0.95))
        del x, y, tx, ty

    # 3. Host time of a tiny op (pushing only; no wait inside the loop).
    host = tiny_host(mx, ctx)
    reps = 20000
    ts = torch.ones(4, device=dev)
    t = time.perf_counter()
    for _ in range(reps):
        ts = ts + 1
    thost = (time.perf_counter() - t) / reps
    tsync()
    results.append(("tiny op host time (us)", host * 1e6, thost * 1e6, thost / host, None))

    # 4. LeNet training steps/s (batch 64, random data).
    steps = 20 if quick else 200
    try:
        sps = lenet_oxnet(mx, ctx, steps)
    except mx.base.MXNetError as e:
        print("LeNet on gpu not available: %s" % str(e).splitlines()[0])
        sps = float("nan")
    tsps = lenet_torch(torch, dev, steps)
    results.append(("LeNet train steps/s (batch 64)", sps, tsps, sps / tsps, 1.0))

    # 5. ResNet-18 on 32x32 images, batch 128.
    steps = 3 if quick else 30
    try:
        ips = resnet_oxnet(mx, ctx, steps)
    except mx.base.MXNetError as e:
        print("ResNet-18 on gpu not available: %s" % str(e).splitlines()[0])
        ips = float("nan")
    try:
        tips = resnet_torch(torch, dev, steps)
    except ImportError:
        tips = float("nan")
    results.append(("ResNet-18 train img/s (b128, 32x32)", ips, tips, ips / tips, 1.0))

    # The float32 step with convolutions through cuDNN (OXNET_CUDNN=1) instead of
    # im2col + cuBLAS.
    iips = resnet_subprocess("fp32", quick, {"OXNET_CUDNN": "1"})
    results.append(("ResNet-18 fp32 cuDNN img/s", iips, tips, iips / tips, None))

    # 6. The same step in bfloat16 (each oxnet mode in its own process).
    tamp = resnet_torch(torch, dev, steps, autocast=True)
    for mode, label in (("amp_bf16", "ResNet-18 AMP bf16 img/s"), ("cast_bf16", "ResNet-18 bf16 cast img/s")):
        bips = resnet_subprocess(mode, quick)
        results.append((label, bips, tamp, bips / tamp, None))
        # Speed-up over each framework's own float32 step (the ratio column: oxnet's).
        results.append(("  speed-up over fp32", bips / ips, tamp / tips, bips / ips, 1.5 if mode == "amp_bf16" else None))

    print("%-34s %14s %14s %8s %8s" % ("benchmark", "oxnet", "torch", "ratio", "target"))
    for name, o, t_, r, target in results:
        print("%-34s %14.3f %14.3f %8.3f %8s" % (name, o, t_, r, "" if target is None else ">= %.2f" % target))
    print("tiny-op target: oxnet host time <= 5 us")


def lenet_oxnet(mx, ctx, steps):
    from oxnet import autograd, gluon
    net = gluon.nn.Sequential()
    with net.name_scope():
        net.add(gluon.nn.Conv2D(channels=20, kernel_size=5, activation="relu"))
        net.add(gluon.nn.MaxPool2D(pool_size=2, strides=2))
        net.add(gluon.nn.Conv2D(channels=50, kernel_size=5, activation="relu"))
        net.add(gluon.nn.MaxPool2D(pool_size=2, strides=2))
        net.add(gluon.nn.Flatten())
        net.add(gluon.nn.Dense(500, activation="relu"))
        net.add(gluon.nn.Dense(10))
    net.collect_params().initialize(mx.init.Xavier(), ctx=ctx)
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    data = mx.nd.random.uniform(shape=(64, 1, 28, 28), ctx=ctx)
    label = mx.nd.array([i % 10 for i in range(64)], ctx=ctx)

    def step():
        with autograd.record():
            out = loss(net(data), label)
        out.backward()
        trainer.step(64)

    step()
    mx.nd.waitall()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    mx.nd.waitall()
    return steps / (time.perf_counter() - t)


def tiny_host(mx, ctx, reps=20000):
    s = mx.nd.ones((4,), ctx=ctx)
    mx.nd.waitall()
    t = time.perf_counter()
    for _ in range(reps):
        s = s + 1
    host = (time.perf_counter() - t) / reps
    mx.nd.waitall()
    return host


def resnet_subprocess(mode, quick, env=None):
    """img/s of resnet_oxnet in `mode`, run in a fresh process (nan when it fails)."""
    import os
    import subprocess
    cmd = [sys.executable, __file__, "--resnet-mode", mode] + (["--quick"] if quick else [])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=dict(os.environ, **(env or {})))
    for line in r.stdout.splitlines():
        if line.startswith("IMG_PER_S "):
            return float(line.split()[1])
    print("ResNet-18 %s failed:\n%s" % (mode, (r.stdout + r.stderr)[-3000:]))
    return float("nan")


def resnet_step(mx, ctx, batch=128, mode="fp32", hybridize=True):
    """One ResNet-18 (model zoo resnet18_v1, 32x32, SGD momentum) training step on
    `ctx` as a function returning the loss; `mode` fp32, amp_bf16 (amp.init) or
    cast_bf16 (net.cast + multi_precision). Also used by tests/gpu/resnet_check.py and
    tests/gpu/profile_step.py."""
    from oxnet import autograd, gluon
    if mode == "amp_bf16":
        from oxnet.contrib import amp
        amp.init(target_dtype="bfloat16")
    net = gluon.model_zoo.vision.resnet18_v1(classes=10)
    net.initialize(mx.init.Xavier(), ctx=ctx)
    opt = {"learning_rate": 0.05, "momentum": 0.9, "wd": 1e-4}
    dtype = "float32"
    if mode == "cast_bf16":
        net.cast("bfloat16")
        opt["multi_precision"] = True
        dtype = "bfloat16"
    if hybridize:
        net.hybridize()
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", opt)
    data = mx.nd.random.uniform(shape=(batch, 3, 32, 32), ctx=ctx).astype(dtype)
    label = mx.nd.array([i % 10 for i in range(batch)], ctx=ctx).astype(dtype)

    def step():
        with autograd.record():
            out = loss(net(data), label)
        out.backward()
        trainer.step(batch)
        return out

    return step


def resnet_oxnet(mx, ctx, steps, batch=128, mode="fp32"):
    step = resnet_step(mx, ctx, batch, mode)
    step()
    mx.nd.waitall()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    mx.nd.waitall()
    return steps * batch / (time.perf_counter() - t)


def resnet_torch(torch, dev, steps, batch=128, autocast=False):
    import contextlib
    import torchvision
    net = torchvision.models.resnet18(num_classes=10).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    lossf = torch.nn.CrossEntropyLoss()
    data = torch.rand(batch, 3, 32, 32, device=dev)
    label = torch.arange(batch, device=dev) % 10

    def step():
        opt.zero_grad()
        ctx = torch.autocast("cuda", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
        with ctx:
            loss = lossf(net(data), label)
        loss.backward()
        opt.step()

    step()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return steps * batch / (time.perf_counter() - t)


def lenet_torch(torch, dev, steps):
    nn = torch.nn
    net = nn.Sequential(nn.Conv2d(1, 20, 5), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Conv2d(20, 50, 5), nn.ReLU(),
                        nn.MaxPool2d(2, 2), nn.Flatten(), nn.Linear(800, 500), nn.ReLU(), nn.Linear(500, 10)).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    lossf = nn.CrossEntropyLoss()
    data = torch.rand(64, 1, 28, 28, device=dev)
    label = torch.arange(64, device=dev) % 10

    def step():
        opt.zero_grad()
        lossf(net(data), label).backward()
        opt.step()

    step()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return steps / (time.perf_counter() - t)


if __name__ == "__main__":
    main()
