"""Device-session diagnosis: per-op time of ResNet-18 training steps on gpu(0) from
oxnet's profiler. Run with CUDA_LAUNCH_BLOCKING=1 so each op's time includes its
kernels (launches wait for completion). Not a test.

    CUDA_LAUNCH_BLOCKING=1 python tests/gpu/profile_step.py fp32|cast_bf16|amp_bf16
"""

import os
import sys

import oxnet as mx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benches"))
from bench_gpu import resnet_step  # noqa: E402


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "fp32"
    step = resnet_step(mx, mx.gpu(0), 128, mode)
    step()
    step()
    mx.nd.waitall()
    mx.profiler.set_config(profile_all=True, aggregate_stats=True)
    mx.profiler.set_state("run")
    for _ in range(3):
        step()
    mx.nd.waitall()
    mx.profiler.set_state("stop")
    table = mx.profiler.dumps(sort_by="total", ascending=False).splitlines()
    print("== %s" % mode)
    print("\n".join(table[:32]))


if __name__ == "__main__":
    main()
