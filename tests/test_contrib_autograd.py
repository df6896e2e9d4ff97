"""mx.contrib.autograd (MXNet's legacy autograd API) on oxnet's tape: scopes,
mark_variables/backward, grad_and_loss/grad; NumPy as the oracle."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import nd
from oxnet.base import MXNetError
from oxnet.contrib import autograd as cag


def test_train_section_records_and_trains():
    assert not mx.autograd.is_recording() and not mx.autograd.is_training()
    with cag.train_section():
        assert mx.autograd.is_recording() and mx.autograd.is_training()
        with cag.test_section():
            assert not mx.autograd.is_recording() and not mx.autograd.is_training()
        assert mx.autograd.is_recording()
    assert not mx.autograd.is_recording() and not mx.autograd.is_training()
    assert cag.set_is_training(True) is False
    assert cag.set_is_training(False) is True


def test_mark_variables_and_backward():
    x = nd.array([[1.0, 2.0], [3.0, 4.0]])
    dx = nd.zeros_like(x)
    cag.mark_variables([x], [dx])
    with cag.train_section():
        y = x * x * 3
    cag.backward([y], [nd.ones_like(y) * 2])
    np.testing.assert_allclose(dx.asnumpy(), 12 * x.asnumpy())
    # grad_req 'add' accumulates
    x2 = nd.array([1.0, -2.0])
    dx2 = nd.ones_like(x2)
    cag.mark_variables([x2], [dx2], grad_reqs="add")
    with cag.train_section():
        z = x2 * 5
    cag.compute_gradient([z])
    np.testing.assert_allclose(dx2.asnumpy(), [6.0, 6.0])


def test_grad_and_loss_and_grad():
    def f(a, b):
        return a * b + a

    a = nd.array([1.0, 2.0, 3.0])
    b = nd.array([4.0, 5.0, 6.0])
    grads, loss = cag.grad_and_loss(f)(a, b)
    np.testing.assert_allclose(grads[0].asnumpy(), b.asnumpy() + 1)
    np.testing.assert_allclose(grads[1].asnumpy(), a.asnumpy())
    np.testing.assert_allclose(loss.asnumpy(), [5.0, 12.0, 21.0])
    only_b = cag.grad(f, argnum=1)(a, b)
    assert len(only_b) == 1
    np.testing.assert_allclose(only_b[0].asnumpy(), a.asnumpy())


def test_bad_inputs():
    with pytest.raises(MXNetError, match="list or tuple"):
        cag.backward(nd.ones((2,)))
    with pytest.raises(MXNetError, match="same length"):
        cag.backward([nd.ones((2,))], [nd.ones((2,)), nd.ones((2,))])
    with pytest.raises(MXNetError, match="NDArrays"):
        cag.grad(lambda a: a)(np.ones(3))
    with pytest.raises(MXNetError):
        cag.mark_variables([nd.ones((2,))], [])
