"""Run by tests/wheel/check.sh in a fresh venv with the release wheel installed: the
installed package (not a source tree) imports and works with that venv's NumPy."""
import os
import tempfile

import numpy as np

import oxnet as mx

assert "site-packages" in mx.__file__, mx.__file__
a = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
b = (a * 2 + 1).asnumpy()
assert np.array_equal(b, np.arange(6).reshape(2, 3) * 2 + 1), b
x = mx.nd.ones((2, 3))
x.attach_grad()
with mx.autograd.record():
    y = (x * x).sum()
y.backward()
assert np.array_equal(x.grad.asnumpy(), 2 * np.ones((2, 3)))
net = mx.gluon.nn.HybridSequential()
net.add(mx.gluon.nn.Dense(4, activation="relu"), mx.gluon.nn.Dense(2))
net.initialize()
net.hybridize()
out = net(mx.nd.ones((3, 5)))
assert out.shape == (3, 2)
with tempfile.TemporaryDirectory() as d:
    f = os.path.join(d, "p.params")
    net.save_parameters(f)
    net.load_parameters(f)
print("smoke ok: oxnet", getattr(mx, "__version__", "?"), "numpy", np.__version__)
