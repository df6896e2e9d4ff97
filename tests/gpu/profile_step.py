"""Device-session diagnosis: per-op time of ResNet-18 training steps on gpu(0) from
oxnet's profiler. Run with CUDA_LAUNCH_BLOCKING=1 so each op's time includes its
kernels (launches wait for completion). Not a test.

    CUDA_LAUNCH_BLOCKING=1 python tests/gpu/profile_step.py fp32|cast_bf16|amp_bf16
"""

import sys

import oxnet as mx
from oxnet import autograd, gluon


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "fp32"
    ctx = mx.gpu(0)
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
    net.hybridize()
    lossf = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", opt)
    data = mx.nd.random.uniform(shape=(128, 3, 32, 32), ctx=ctx).astype(dtype)
    label = mx.nd.array([i % 10 for i in range(128)], ctx=ctx).astype(dtype)

    def step():
        with autograd.record():
            loss = lossf(net(data), label)
        loss.backward()
        trainer.step(128)

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
