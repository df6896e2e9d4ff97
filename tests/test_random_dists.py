"""Random distributions (issue 16): the `_random_*`, `_random_*_like`, `_sample_*`,
`_sample_multinomial`, `_shuffle`, `_sample_unique_zipfian` and `_random_pdf_*` ops,
and the `mx.nd.random` / `mx.sym.random` front ends.

Statistical tests use fixed seeds (oxnet's streams are deterministic for a seed on
any number of threads), so they cannot flake; scipy.stats is the oracle."""

import numpy as np
import pytest
import scipy.stats as ss

import oxnet as mx
from oxnet.test_utils import check_numeric_gradient

N = 200_000


def draw(fn, *args, seed=3, **kwargs):
    mx.random.seed(seed)
    return fn(*args, **kwargs).asnumpy().astype(np.float64)


# ---- shapes, dtypes, dispatch -------------------------------------------------------

def test_scalar_params_give_shape_one_and_float32():
    for f, args in [(mx.nd.random.uniform, (2, 10)), (mx.nd.random.normal, (0, 1)),
                    (mx.nd.random.gamma, (2, 1)), (mx.nd.random.exponential, (2,)),
                    (mx.nd.random.poisson, (3,)), (mx.nd.random.negative_binomial, (3, 0.4)),
                    (mx.nd.random.generalized_negative_binomial, (2, 0.3))]:
        a = f(*args)
        assert a.shape == (1,) and a.dtype == np.float32, f
        b = f(*args, shape=(2, 3), dtype="float64")
        assert b.shape == (2, 3) and b.dtype == np.float64
    assert mx.nd.random.randint(1, 5).dtype == np.int32
    assert mx.nd.random.randint(1, 5, shape=(4,), dtype="int64").dtype == np.int64


def test_ndarray_params_dispatch_to_sample_ops():
    low = mx.nd.array([[0, 1], [2, 3]])
    high = low + 1
    assert mx.nd.random.uniform(low, high).shape == (2, 2)
    x = mx.nd.random.uniform(low, high, shape=(3, 4))
    assert x.shape == (2, 2, 3, 4) and x.dtype == np.float32
    xn = x.asnumpy()
    assert (xn >= low.asnumpy()[:, :, None, None]).all() and (xn < high.asnumpy()[:, :, None, None]).all()
    assert mx.nd.sample_normal(low, high, shape=5, dtype="float16").dtype == np.float16
    assert mx.nd.random.gamma(mx.nd.ones((3,)), mx.nd.ones((3,)), shape=2).shape == (3, 2)
    assert mx.nd.random.exponential(mx.nd.ones((3,))).shape == (3,)
    with pytest.raises(AssertionError):
        mx.nd.random.uniform(low, 1.0)


def test_like_forms_and_names():
    d = mx.nd.ones((3, 4), dtype="float64")
    for name in ["uniform_like", "normal_like", "gamma_like", "exponential_like", "poisson_like",
                 "negative_binomial_like", "generalized_negative_binomial_like"]:
        y = getattr(mx.nd.random, name)(d)
        assert y.shape == (3, 4) and y.dtype == np.float64, name
        assert hasattr(mx.sym.random, name)
    expected = {"uniform", "normal", "randn", "poisson", "exponential", "gamma", "multinomial",
                "negative_binomial", "generalized_negative_binomial", "shuffle", "randint"}
    assert expected <= set(dir(mx.nd.random)) and expected <= set(dir(mx.sym.random))
    for n in ["sample_uniform", "sample_gamma", "sample_multinomial", "random_pdf_dirichlet",
              "random_gamma", "random_poisson", "shuffle"]:
        assert hasattr(mx.nd, n) and hasattr(mx.sym, n), n


def test_randn_and_out():
    assert mx.nd.random.randn(2, 3).shape == (2, 3)
    out = mx.nd.zeros((4, 5), dtype="float64")
    mx.nd.random.normal(1, 2, out=out)
    assert out.dtype == np.float64 and out.asnumpy().std() > 0


# ---- reproducibility ----------------------------------------------------------------

def test_same_seed_same_numbers_every_op():
    p = mx.nd.array([0.5, 3.0, 12.0])
    calls = [lambda: mx.nd.random.gamma(0.7, 2, shape=(10000,)),
             lambda: mx.nd.random.poisson(40, shape=(10000,)),
             lambda: mx.nd.random.negative_binomial(3, 0.4, shape=(10000,)),
             lambda: mx.nd.random.gamma(p, p, shape=(5000,)),
             lambda: mx.nd.random.poisson(p, shape=(5000,)),
             lambda: mx.nd.random.multinomial(mx.nd.array([0.2, 0.3, 0.5]), shape=1000),
             lambda: mx.nd.random.shuffle(mx.nd.arange(100))]
    for c in calls:
        a, b = draw(c), draw(c)
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, draw(c, seed=4))


def test_per_device_generators():
    mx.random.seed(11, ctx=mx.cpu(1))
    a = mx.nd.random.gamma(2, 2, shape=(50,), ctx=mx.cpu(1)).asnumpy()
    mx.random.seed(99)  # a global seed reseeds every device
    mx.random.seed(11, ctx=mx.cpu(1))
    b = mx.nd.random.gamma(2, 2, shape=(50,), ctx=mx.cpu(1)).asnumpy()
    np.testing.assert_array_equal(a, b)


def test_symbolic_sampling_is_seeded():
    y = mx.sym.random.gamma(alpha=2.0, beta=1.0, shape=(100,))
    ex = y.bind(mx.cpu(), {})
    mx.random.seed(5)
    a = ex.forward()[0].asnumpy()
    mx.random.seed(5)
    b = ex.forward()[0].asnumpy()
    np.testing.assert_array_equal(a, b)
    lam = mx.sym.var("lam")
    ex = mx.sym.random.poisson(lam, shape=(1000,)).bind(mx.cpu(), {"lam": mx.nd.array([2.0, 50.0])})
    out = ex.forward()[0].asnumpy()
    assert out.shape == (2, 1000)
    np.testing.assert_allclose(out.mean(axis=1), [2.0, 50.0], rtol=0.05)


# ---- statistics against scipy --------------------------------------------------------

def ks(x, cdf):
    return ss.kstest(x, cdf).pvalue


def chi2_discrete(x, pmf, support):
    counts = np.array([(x == k).sum() for k in support] + [(x > support[-1]).sum()], dtype=np.float64)
    probs = np.array([pmf(k) for k in support] + [1 - sum(pmf(k) for k in support)])
    exp = probs * len(x)
    keep = exp > 5
    # merge the small-expectation cells into one
    c = np.append(counts[keep], counts[~keep].sum())
    e = np.append(exp[keep], exp[~keep].sum())
    if e[-1] == 0:
        c, e = c[:-1], e[:-1]
    return ss.chisquare(c, e * c.sum() / e.sum()).pvalue


@pytest.mark.parametrize("alpha,beta", [(0.3, 1.0), (1.0, 5.0), (2.5, 0.5), (40.0, 2.0)])
def test_gamma_matches_scipy(alpha, beta):
    x = draw(mx.nd.random.gamma, alpha, beta, shape=(N,), dtype="float64")
    assert ks(x, ss.gamma(alpha, scale=beta).cdf) > 1e-3
    np.testing.assert_allclose(x.mean(), alpha * beta, rtol=0.02)
    np.testing.assert_allclose(x.var(), alpha * beta ** 2, rtol=0.05)


def test_continuous_dists_match_scipy():
    assert ks(draw(mx.nd.random.uniform, -1, 3, shape=(N,), dtype="float64"), ss.uniform(-1, 4).cdf) > 1e-3
    assert ks(draw(mx.nd.random.normal, 2, 0.5, shape=(N,), dtype="float64"), ss.norm(2, 0.5).cdf) > 1e-3
    assert ks(draw(mx.nd.random.exponential, 0.25, shape=(N,), dtype="float64"), ss.expon(scale=0.25).cdf) > 1e-3
    assert ks(draw(mx.nd.random.randn, N, dtype="float64"), ss.norm().cdf) > 1e-3


@pytest.mark.parametrize("lam", [0.5, 4.0, 9.9, 10.0, 30.0, 1000.0])
def test_poisson_matches_scipy(lam):
    x = draw(mx.nd.random.poisson, lam, shape=(N,), dtype="float64")
    assert (x == np.round(x)).all() and (x >= 0).all()
    lo, hi = int(ss.poisson.ppf(1e-4, lam)), int(ss.poisson.ppf(1 - 1e-4, lam))
    assert chi2_discrete(x, lambda k: ss.poisson.pmf(k, lam), list(range(lo, hi + 1))) > 1e-3
    np.testing.assert_allclose(x.mean(), lam, rtol=0.02, atol=0.01)


def test_negative_binomials_match_scipy():
    x = draw(mx.nd.random.negative_binomial, 3, 0.4, shape=(N,), dtype="float64")
    assert chi2_discrete(x, lambda k: ss.nbinom.pmf(k, 3, 0.4), list(range(0, 30))) > 1e-3
    mu, alpha = 2.0, 0.3
    x = draw(mx.nd.random.generalized_negative_binomial, mu, alpha, shape=(N,), dtype="float64")
    pmf = lambda k: ss.nbinom.pmf(k, 1 / alpha, 1 / (1 + mu * alpha))  # noqa: E731
    assert chi2_discrete(x, pmf, list(range(0, 20))) > 1e-3
    x = draw(mx.nd.random.generalized_negative_binomial, 3.0, 0.0, shape=(N,), dtype="float64")
    np.testing.assert_allclose([x.mean(), x.var()], [3.0, 3.0], rtol=0.03)


def test_sample_ops_per_element_moments():
    alpha = mx.nd.array([0.5, 2.0, 9.0])
    beta = mx.nd.array([1.0, 0.5, 3.0])
    x = draw(mx.nd.random.gamma, alpha, beta, shape=(N // 4,))
    np.testing.assert_allclose(x.mean(axis=1), (alpha * beta).asnumpy(), rtol=0.03)
    lam = mx.nd.array([1.0, 25.0])
    x = draw(mx.nd.random.poisson, lam, shape=(N // 4,))
    np.testing.assert_allclose(x.var(axis=1), lam.asnumpy(), rtol=0.05)
    loc, scale = mx.nd.array([-3.0, 5.0]), mx.nd.array([0.1, 4.0])
    x = draw(mx.nd.random.normal, loc, scale, shape=(N // 4,))
    np.testing.assert_allclose(x.std(axis=1), scale.asnumpy(), rtol=0.03)
    x = draw(mx.nd.random.negative_binomial, mx.nd.array([2.0, 5.0]), mx.nd.array([0.3, 0.8]), shape=(N // 4,))
    np.testing.assert_allclose(x.mean(axis=1), [2 * 0.7 / 0.3, 5 * 0.2 / 0.8], rtol=0.03)


def test_randint_range_and_uniformity():
    x = draw(mx.nd.random.randint, -3, 4, shape=(N,), dtype="int64")
    assert x.min() == -3 and x.max() == 3
    assert chi2_discrete(x + 3, lambda k: 1 / 7, list(range(7))) > 1e-3
    big = mx.nd.random.randint(50000000, 50000010, shape=(1000,), dtype="int64").asnumpy()
    assert big.min() >= 50000000 and big.max() < 50000010


# ---- multinomial, shuffle, zipfian ---------------------------------------------------

def test_multinomial_frequencies_and_log_prob_gradient():
    probs = np.array([[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]])
    x = mx.nd.array(probs)
    x.attach_grad()
    mx.random.seed(8)
    with mx.autograd.record():
        y, lp = mx.nd.random.multinomial(x, shape=20000, get_prob=True)
        (lp * 5).backward()
    y = y.asnumpy()
    assert y.shape == (2, 20000) and y.dtype == np.int32
    for i in range(2):
        counts = np.bincount(y[i], minlength=4)
        assert ss.chisquare(counts, probs[i] * 20000).pvalue > 1e-3
        np.testing.assert_allclose(lp.asnumpy()[i], np.log(probs[i][y[i]]), rtol=1e-6)
        np.testing.assert_allclose(x.grad.asnumpy()[i], counts * 5 / probs[i], rtol=1e-5)
    one = mx.nd.random.multinomial(mx.nd.array([0.5, 0.5]))
    assert one.shape == (1,) or one.shape == ()
    assert mx.nd.random.multinomial(x, shape=(2, 3), dtype="float32").shape == (2, 2, 3)


def test_multinomial_rejects_too_many_outcomes_for_dtype():
    with pytest.raises(mx.MXNetError, match="_sample_multinomial"):
        mx.nd.random.multinomial(mx.nd.zeros(300), dtype="uint8")


def test_shuffle_permutes_rows_uniformly():
    data = mx.nd.arange(0, 12).reshape((4, 3))
    counts = {}
    mx.random.seed(1)
    for _ in range(2400):
        r = mx.nd.random.shuffle(data).asnumpy()
        assert sorted(map(tuple, r)) == sorted(map(tuple, data.asnumpy()))
        counts[tuple(r[:, 0])] = counts.get(tuple(r[:, 0]), 0) + 1
    assert len(counts) == 24
    assert ss.chisquare(list(counts.values())).pvalue > 1e-3
    a = mx.sym.var("a")
    out = mx.sym.random.shuffle(a).eval(a=data)[0].asnumpy()
    assert sorted(out[:, 0]) == [0, 3, 6, 9]


def test_unique_zipfian():
    mx.random.seed(2)
    classes, trials = mx.nd._internal._sample_unique_zipfian(793472, shape=(4, 8192))
    assert classes.dtype == np.int64 and trials.shape == (4,)
    for i in range(4):
        assert np.unique(classes[i].asnumpy()).size == 8192
        assert 14500 < trials[i].asscalar() < 17000


# ---- pdfs: values vs scipy, gradients ----------------------------------------------

PDFS = [
    ("uniform", [(-1.0, 1.0), (0.3, 1.5)], lambda x, a, b: ss.uniform.pdf(x, a, b - a), "inside"),
    ("normal", [(-1.0, 1.5), (0.5, 2.0)], lambda x, m, s: ss.norm.pdf(x, m, s), None),
    ("gamma", [(0.7, 3.0), (0.5, 2.0)], lambda x, a, b: ss.gamma.pdf(x, a, 0, 1 / b), (0.2, 3.0)),
    ("exponential", [(0.5, 3.0)], lambda x, lam: ss.expon.pdf(x, 0, 1 / lam), (0.1, 3.0)),
    ("poisson", [(0.5, 20.0)], ss.poisson.pmf, "int"),
    ("negative_binomial", [(1.0, 6.0), (0.2, 0.8)], ss.nbinom.pmf, "int"),
    ("generalized_negative_binomial", [(0.5, 4.0), (0.1, 1.0)],
     lambda x, mu, al: ss.nbinom.pmf(x, 1 / al, 1 / (1 + mu * al)), "int"),
]


def _pdf_case(name, ranges, support, rng):
    params = [rng.uniform(lo, hi, size=(2, 3)) for lo, hi in ranges]
    if support == "int":
        x = rng.randint(0, 8, size=(2, 3, 5)).astype(np.float64)
    elif support is None:
        x = rng.normal(size=(2, 3, 5))
    elif name == "uniform":
        a, b = params[0][..., None], params[0][..., None] + params[1][..., None]
        params[1] = params[0] + params[1]
        x = a + (b - a) * rng.uniform(0.05, 0.95, size=(2, 3, 5))
    else:
        x = rng.uniform(*support, size=(2, 3, 5))
    return x, params


@pytest.mark.parametrize("name,ranges,ref,support", PDFS, ids=[p[0] for p in PDFS])
def test_pdf_values_and_gradients(name, ranges, ref, support):
    rng = np.random.RandomState(0)
    x, params = _pdf_case(name, ranges, support, rng)
    op = getattr(mx.nd, "random_pdf_" + name)
    expected = ref(x, *[p[..., None] for p in params])
    for dtype in ["float32", "float64"]:
        args = [mx.nd.array(v, dtype=dtype) for v in [x] + params]
        got = op(*args).asnumpy()
        assert got.dtype == np.dtype(dtype) and got.shape == x.shape
        np.testing.assert_allclose(got, expected, rtol=1e-4 if dtype == "float32" else 1e-9, atol=1e-7)
        np.testing.assert_allclose(op(*args, is_log=True).asnumpy(), np.log(expected), rtol=1e-4, atol=1e-6)
    nodes = list(range(1, len(params) + 1)) if support == "int" else None
    for is_log in [False, True]:
        check_numeric_gradient(lambda *a: op(*a, is_log=is_log), [x] + params, grad_nodes=nodes,
                               numeric_eps=1e-6, rtol=1e-3, atol=1e-5, dtype=np.float64)


def test_pdf_dirichlet():
    rng = np.random.RandomState(1)
    alpha = rng.uniform(0.5, 2, size=(2, 3))
    samples = np.stack([ss.dirichlet.rvs(a, size=4) for a in alpha])  # (2, 4, 3)
    expected = np.stack([ss.dirichlet.logpdf(samples[i].T, alpha[i]) for i in range(2)])
    got = mx.nd.random_pdf_dirichlet(mx.nd.array(samples, dtype="float64"), mx.nd.array(alpha, dtype="float64"),
                                     is_log=True).asnumpy()
    assert got.shape == (2, 4)
    np.testing.assert_allclose(got, expected, rtol=1e-9)
    check_numeric_gradient(lambda s, a: mx.nd.random_pdf_dirichlet(s, a), [samples, alpha],
                           numeric_eps=1e-6, rtol=1e-3, atol=1e-5, dtype=np.float64)


def test_pdf_symbolic():
    s, mu, sig = mx.sym.var("s"), mx.sym.var("mu"), mx.sym.var("sig")
    y = mx.sym.random_pdf_normal(s, mu, sig, is_log=True)
    x = np.array([[0.0, 1.0], [2.0, 3.0]])
    out = y.eval(s=mx.nd.array(x), mu=mx.nd.array([0.0, 1.0]), sig=mx.nd.array([1.0, 2.0]))[0]
    np.testing.assert_allclose(out.asnumpy(), ss.norm.logpdf(x, [[0.0], [1.0]], [[1.0], [2.0]]), rtol=1e-5)


# ---- bad inputs -----------------------------------------------------------------------

@pytest.mark.parametrize("call,msg", [
    (lambda: mx.nd.random.normal(0, -1), "scale"),
    (lambda: mx.nd.random.uniform(3, 1), "low"),
    (lambda: mx.nd.random.gamma(-1, 1), "alpha"),
    (lambda: mx.nd.random.poisson(-1), "lambda"),
    (lambda: mx.nd.random.exponential(-1), "lambda"),
    (lambda: mx.nd.random.randint(5, 1), "low"),
    (lambda: mx.nd.random.uniform(0, 1, dtype="int32"), "int32"),
    (lambda: mx.nd.sample_uniform(mx.nd.ones((2,)), mx.nd.ones((3,))), "same shape"),
    (lambda: mx.nd.random_pdf_normal(mx.nd.ones((2, 3)), mx.nd.ones((3,)), mx.nd.ones((3,))), "Shape inconsistent"),
    (lambda: mx.nd.random_pdf_normal(mx.nd.ones((2, 3), dtype="float64"), mx.nd.ones((2,)), mx.nd.ones((2,))), "Incompatible"),
    (lambda: mx.nd.random_pdf_dirichlet(mx.nd.ones((2, 4)), mx.nd.ones((2, 3))), "Shape inconsistent"),
    (lambda: mx.nd._internal._sample_unique_zipfian(5, shape=(2, 10)), "range_max"),
])
def test_bad_inputs_raise_clear_errors(call, msg):
    with pytest.raises(mx.MXNetError, match=msg):
        call().asnumpy()


def test_bad_shapes_leave_inputs_intact():
    a = mx.nd.array([1.0, 2.0])
    with pytest.raises(mx.MXNetError):
        mx.nd.sample_gamma(a, mx.nd.ones((3,)))
    np.testing.assert_array_equal(a.asnumpy(), [1.0, 2.0])


def test_sample_ops_do_not_check_values_as_mxnet():
    # MXNet's _sample_* ops take the parameters as they are.
    x = mx.nd.sample_normal(mx.nd.array([0.0]), mx.nd.array([-1.0]), shape=1000).asnumpy()
    assert np.isfinite(x).all()
    assert (mx.nd.sample_poisson(mx.nd.array([-1.0]), shape=10).asnumpy() == 0).all()


def test_out_on_another_device_than_the_default_context():
    # the sample goes to `out`'s device, whatever the thread's default context is
    out = mx.nd.zeros((3, 4), ctx=mx.cpu(0))
    with mx.cpu(3):
        mx.nd.random.uniform(-1, 1, out=out)
        mx.nd.random.normal(0, 1, shape=(3, 4), out=out)
    assert out.context == mx.cpu(0)
    v = out.asnumpy()
    assert v.std() > 0 and np.isfinite(v).all()


def test_bad_parameters_fail_at_the_wait_like_mxnet():
    # MXNet checks distribution parameters in the kernel: the call returns, the error
    # comes at the next blocking call, and later independent work is unaffected.
    b = mx.nd.random.normal(0, -1, (2, 2))
    c = mx.nd.dot(b, b)
    with pytest.raises(mx.MXNetError, match="scale"):
        c.asnumpy()
    ok = mx.nd.random.normal(0, 1, (2, 2))
    assert ok.asnumpy().shape == (2, 2)
