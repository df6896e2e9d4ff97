"""The numerical gradient check shared by the op tests: autograd's gradient of
sum(w * fn(x)) (w random in [0.5, 1.5]) against float64 central differences."""
import numpy as np

import oxnet as mx
from oxnet import nd


def grad_check(fn, x, h=1e-6, rtol=1e-5, atol=1e-7, seed=1):
    x = np.asarray(x, dtype="float64")

    def f(v):
        return fn(nd.array(v, dtype="float64")).asnumpy()

    w = np.random.RandomState(seed).uniform(0.5, 1.5, size=f(x).shape)
    a = nd.array(x, dtype="float64")
    a.attach_grad()
    with mx.autograd.record():
        y = fn(a)
    y.backward(nd.array(w, dtype="float64"))
    num = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        num[i] = ((f(xp) - f(xm)) * w).sum() / (2 * h)
    np.testing.assert_allclose(a.grad.asnumpy(), num, rtol=rtol, atol=atol)
