"""The main demo: train the seed CNN (LeNet-style, from the Gluon seed program) on the
MNIST subset in data/mnist-subset, with a progress bar per epoch, then print the test
accuracy.

    python examples/train_mnist.py                 # imperative Gluon
    python examples/train_mnist.py --hybridize     # the same net, hybridized
    python examples/train_mnist.py --epochs 3 --module mxnet   # same code on MXNet 1.9.1
    python -m oxnet.tools.launch -n 2 -s 1 python examples/train_mnist.py --kvstore dist_sync
                          # 2 workers + 1 parameter server; each worker trains on its half
                          # of the data with half the batch (the global batch stays
                          # --batch-size), rank 0 reports

`make demo` runs it.
"""

import argparse
import importlib
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "mnist-subset")


def progress(prefix, done, total, loss, t0, width=30):
    """One line, redrawn in place: [=====>    ] 37/63  loss 0.4123  1250 samples/s."""
    filled = int(width * done / total)
    bar = "=" * filled + (">" if filled < width else "") + " " * (width - filled - 1)
    rate = done * ARGS.batch_size / max(time.time() - t0, 1e-9)
    sys.stdout.write("\r%s [%s] %d/%d  loss %.4f  %5.0f samples/s" % (prefix, bar[:width], done, total, loss, rate))
    sys.stdout.flush()


def load_mnist(mx):
    try:
        return mx.test_utils.get_mnist(path=DATA)
    except TypeError:  # MXNet's get_mnist reads the working directory
        cwd = os.getcwd()
        os.chdir(DATA)
        try:
            return mx.test_utils.get_mnist()
        finally:
            os.chdir(cwd)


def build_net(mx):
    nn = mx.gluon.nn
    net = nn.HybridSequential() if ARGS.hybridize else nn.Sequential()
    with net.name_scope():
        net.add(nn.Conv2D(channels=20, kernel_size=5, activation="relu"))
        net.add(nn.MaxPool2D(pool_size=2, strides=2))
        net.add(nn.Conv2D(channels=50, kernel_size=5, activation="relu"))
        net.add(nn.MaxPool2D(pool_size=2, strides=2))
        net.add(nn.Flatten())
        net.add(nn.Dense(500, activation="relu"))
        net.add(nn.Dense(10))
    return net


def accuracy(mx, net, it, ctx):
    metric = mx.metric.Accuracy()
    it.reset()
    for batch in it:
        out = net(batch.data[0].as_in_context(ctx))
        metric.update([batch.label[0].as_in_context(ctx)], [out])
    return metric.get()[1]


def main():
    mx = importlib.import_module(ARGS.module)
    autograd, gluon = mx.autograd, mx.gluon
    mx.random.seed(1)
    ctx = mx.gpu() if ARGS.gpu else mx.cpu()
    mnist = load_mnist(mx)
    kv, batch = ARGS.kvstore, ARGS.batch_size
    if kv and kv.startswith("dist"):
        # each worker trains on its shard with its share of the global batch
        kv = mx.kv.create(kv)
        batch = ARGS.batch_size // kv.num_workers
        for k in ("train_data", "train_label"):
            mnist[k] = mnist[k][kv.rank::kv.num_workers]
    train = mx.io.NDArrayIter(mnist["train_data"], mnist["train_label"], batch, shuffle=True)
    test = mx.io.NDArrayIter(mnist["test_data"], mnist["test_label"], ARGS.batch_size)
    n_batches = (mnist["train_data"].shape[0] + batch - 1) // batch

    net = build_net(mx)
    net.collect_params().initialize(mx.init.Xavier(magnitude=2.24), ctx=ctx)
    if ARGS.hybridize:
        net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": ARGS.lr},
                            **({"kvstore": kv} if kv else {}))

    print("%s: training the seed CNN on %d MNIST digits (%s, batch %d)" % (
        ARGS.module, mnist["train_data"].shape[0], "hybridized" if ARGS.hybridize else "imperative",
        ARGS.batch_size))
    start = time.time()
    for epoch in range(ARGS.epochs):
        train.reset()
        t0, moving = time.time(), None
        for i, batch in enumerate(train):
            data = batch.data[0].as_in_context(ctx)
            label = batch.label[0].as_in_context(ctx)
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(data.shape[0] * (kv.num_workers if hasattr(kv, "num_workers") else 1))
            cur = loss.mean().asscalar()
            moving = cur if moving is None else 0.95 * moving + 0.05 * cur
            progress("epoch %d" % (epoch + 1), i + 1, n_batches, moving, t0)
        sys.stdout.write("  test acc %.4f\n" % accuracy(mx, net, test, ctx))
    print("final test accuracy %.4f after %d epochs, %.1f s" % (accuracy(mx, net, test, ctx), ARGS.epochs,
                                                                 time.time() - start))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--hybridize", action="store_true")
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--module", default="oxnet", help="oxnet, or mxnet to compare")
    ap.add_argument("--kvstore", default=None, help="e.g. dist_sync (run under the launcher)")
    ARGS = ap.parse_args()
    main()
