"""A sparse linear classifier trained end to end on CSR data.

    python examples/sparse_linear.py [--dim 5000] [--samples 4000] [--epochs 10]

The example writes a LibSVM-format file of synthetic data (each sample: a few active
features out of ``dim``; the label is the sign of a hidden sparse weight vector's
score), reads it back into a ``CSRNDArray``, and trains logistic regression with a
``row_sparse`` weight gradient: each batch's gradient holds only the features the batch
uses, and the lazy SGD update touches only those rows.
"""

import argparse
import os
import tempfile
import time

import numpy as np

import oxnet as mx


def write_libsvm(path, samples, dim, active, rng):
    """Synthetic LibSVM data: `active` random features per sample, values in [0, 1)."""
    truth = np.zeros(dim, dtype=np.float32)
    hot = rng.choice(dim, size=dim // 10, replace=False)
    truth[hot] = rng.normal(0, 1, size=hot.size)
    with open(path, "w") as f:
        for _ in range(samples):
            cols = np.sort(rng.choice(dim, size=active, replace=False))
            vals = rng.uniform(0, 1, size=active)
            label = 1 if float(vals @ truth[cols]) > 0 else 0
            f.write("%d %s\n" % (label, " ".join("%d:%.4f" % (c, v) for c, v in zip(cols, vals))))


def read_libsvm(path, dim):
    """The file as (CSRNDArray of features, labels)."""
    data, indices, indptr, labels = [], [], [0], []
    with open(path) as f:
        for line in f:
            parts = line.split()
            labels.append(float(parts[0]))
            for item in parts[1:]:
                c, v = item.split(":")
                indices.append(int(c))
                data.append(float(v))
            indptr.append(len(indices))
    x = mx.nd.sparse.csr_matrix((np.array(data, dtype=np.float32), np.array(indices), np.array(indptr)),
                                shape=(len(labels), dim))
    return x, mx.nd.array(labels)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dim", type=int, default=5000)
    ap.add_argument("--samples", type=int, default=4000)
    ap.add_argument("--active", type=int, default=20)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--lr", type=float, default=20.0)
    args = ap.parse_args()
    rng = np.random.RandomState(0)
    mx.random.seed(0)

    path = os.path.join(tempfile.mkdtemp(), "train.libsvm")
    write_libsvm(path, args.samples, args.dim, args.active, rng)
    x, y = read_libsvm(path, args.dim)
    print("data: %s, %d stored values (density %.3f%%)"
          % (x.shape, x.data.shape[0], 100.0 * x.data.shape[0] / (x.shape[0] * x.shape[1])))

    weight = mx.nd.zeros((args.dim, 1))
    bias = mx.nd.zeros((1,))
    weight.attach_grad(stype="row_sparse")
    bias.attach_grad()
    loss_fn = mx.gluon.loss.SigmoidBinaryCrossEntropyLoss()
    nbatch = args.samples // args.batch
    for epoch in range(args.epochs):
        t0 = time.time()
        total = 0.0
        for b in range(nbatch):
            xb = x[b * args.batch:(b + 1) * args.batch]
            yb = y[b * args.batch:(b + 1) * args.batch]
            with mx.autograd.record():
                score = mx.nd.dot(xb, weight) + bias
                loss = loss_fn(score.reshape((-1,)), yb)
            loss.backward()
            # lazy updates: only the rows of the features this batch uses
            mx.nd.sgd_update(weight, weight.grad, lr=args.lr / args.batch, out=weight)
            mx.nd.sgd_update(bias, bias.grad, lr=args.lr / args.batch, out=bias)
            total += float(loss.sum().asscalar())
        score = mx.nd.dot(x, weight) + bias
        acc = float(((score.reshape((-1,)) > 0) == y).mean().asscalar())
        print("epoch %d: loss %.4f, train accuracy %.3f (%.2fs)"
              % (epoch, total / (nbatch * args.batch), acc, time.time() - t0))


if __name__ == "__main__":
    main()
