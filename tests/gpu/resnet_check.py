"""Device-session diagnosis: a few ResNet-18 training steps on gpu(0) under several
settings, each in its own process, printing the outcome and, on failure, where it
failed (CUDA_LAUNCH_BLOCKING=1 makes an asynchronous kernel fault surface at the op
that caused it). Not a test; run by hand or from run_on_device.sh.

    python tests/gpu/resnet_check.py            # every case
    python tests/gpu/resnet_check.py --case hyb # one case (used by the driver)
"""

import os
import subprocess
import sys
import time

CASES = {
    # name: (hybridize, batch, dtype mode, extra environment)
    "hyb": (True, 128, "fp32", {}),
    "imperative": (False, 128, "fp32", {}),
    "hyb_cudnn": (True, 128, "fp32", {"OXNET_CUDNN": "1"}),
    "hyb_cudnn_tf32": (True, 128, "fp32", {"OXNET_CUDNN": "1", "OXNET_CUDA_ALLOW_TF32": "1"}),
    "hyb_workers": (True, 128, "fp32", {"OXNET_CUDA_INLINE": "0"}),
    "amp_bf16": (True, 128, "amp", {}),
    "amp_bf16_cudnn": (True, 128, "amp", {"OXNET_CUDNN": "1"}),
    "cast_bf16": (True, 128, "cast", {}),
    "cast_bf16_cudnn": (True, 128, "cast", {"OXNET_CUDNN": "1"}),
}


def one(name):
    hybridize, batch, mode, _ = CASES[name]
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benches"))
    from bench_gpu import resnet_step
    import oxnet as mx
    step = resnet_step(mx, mx.gpu(0), batch, mode if mode == "fp32" else mode + "_bf16", hybridize)
    losses = []
    t = None
    for i in range(12):
        if i == 2:
            mx.nd.waitall()
            t = time.perf_counter()
        losses.append(step())
    mx.nd.waitall()
    dt = time.perf_counter() - t
    losses = [float(v.astype("float32").mean().asscalar()) for v in losses]
    print("OK %s losses %s  %.0f img/s  cudnn %s" % (name, [round(v, 3) for v in losses[::3]], 10 * batch / dt,
                                                     mx._core.cudnn_info()))


def main():
    if "--case" in sys.argv:
        one(sys.argv[sys.argv.index("--case") + 1])
        return
    for name, (_, _, _, env) in CASES.items():
        t = time.perf_counter()
        try:
            r = subprocess.run([sys.executable, __file__, "--case", name], capture_output=True, text=True,
                               timeout=120, env=dict(os.environ, **env))
            out = (r.stdout + r.stderr).strip().splitlines()
            ok = r.returncode == 0
        except subprocess.TimeoutExpired:
            out, ok = ["timed out"], False
        print("== %s (%.0f s): %s" % (name, time.perf_counter() - t, "ok" if ok else "FAILED"))
        keep = [ln for ln in out if ln.startswith("OK ")] if ok else out[-12:]
        for line in keep:
            print("   " + line[:400])


if __name__ == "__main__":
    main()
