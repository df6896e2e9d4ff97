"""HybridBlock inputs as MXNet 1.9.1 takes them: None (also for trailing defaults),
nested lists, scalars when not hybridized; mixing NDArrays and Symbols, scalars in a
hybridized block or several contexts are ValueErrors."""

import numpy as np
import pytest

import oxnet as mx
from oxnet import gluon, nd


class AddOpt(gluon.HybridBlock):
    def hybrid_forward(self, F, a, b=None):
        if a is None:
            return b * 2
        if b is None:
            return a + 1
        if isinstance(b, (list, tuple)):
            total = b[0]
            for item in b[1:]:
                total = total + item
            b = total
        return a + b


@pytest.mark.parametrize("hybridize", [False, True])
def test_none_and_defaults(hybridize):
    x = nd.array(np.arange(4.0))
    blk = AddOpt()
    if hybridize:
        blk.hybridize()
    for _ in range(2):
        np.testing.assert_allclose(blk(x).asnumpy(), np.arange(4.0) + 1)
        np.testing.assert_allclose(blk(x, None).asnumpy(), np.arange(4.0) + 1)
    blk2 = AddOpt()
    if hybridize:
        blk2.hybridize()
    np.testing.assert_allclose(blk2(None, x).asnumpy(), np.arange(4.0) * 2)
    if hybridize:
        with pytest.raises(ValueError):     # another structure than the cached one
            blk2(x, x)
    with pytest.raises(ValueError):
        blk2(None, None)


@pytest.mark.parametrize("hybridize", [False, True])
def test_list_inputs(hybridize):
    blk = AddOpt()
    if hybridize:
        blk.hybridize()
    x = nd.ones((3,))
    out = blk(x, [nd.ones((3,)) * 2, nd.ones((3,)) * 3])
    np.testing.assert_allclose(out.asnumpy(), np.full(3, 6.0))


def test_scalar_and_mixed_inputs():
    blk = AddOpt()
    np.testing.assert_allclose(blk(nd.ones((2,)), 5).asnumpy(), [6, 6])   # imperative: fine
    blk.hybridize()
    with pytest.raises(ValueError):
        blk(nd.ones((2,)), 5)
    with pytest.raises(ValueError):
        AddOpt()(nd.ones((2,)), mx.sym.var("a"))
    hyb = AddOpt()
    hyb.hybridize()
    with pytest.raises(ValueError):
        hyb(nd.ones((2,), ctx=mx.cpu(1)), nd.ones((2,), ctx=mx.cpu(2)))
    sym = AddOpt()(mx.sym.var("a"), None)
    assert isinstance(sym, mx.sym.Symbol)
