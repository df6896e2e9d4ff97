"""Statistical checks of random generators, as MXNet 1.9.1's ``mxnet.test_utils``
has them (``gen_buckets_probs_with_ppf``, ``chi_square_check``, ``verify_generator``,
``mean_check``, ``var_check``) and its ``retry`` decorator; re-exported by
``oxnet.test_utils``."""

import functools

import numpy as np


def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """``nbuckets`` equiprobable buckets ``(ppf(i/n), ppf((i+1)/n))`` and their
    probabilities, from a distribution's percent-point function."""
    probs = [1.0 / nbuckets for _ in range(nbuckets)]
    buckets = [(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets))) for i in range(nbuckets)]
    return buckets, probs


def mean_check(generator, mu, sigma, nsamples=1000000):
    """Whether the mean of ``nsamples`` draws lies within 3 standard errors of ``mu``."""
    samples = np.array(generator(nsamples))
    sample_mean = samples.mean()
    return (mu - 3 * sigma / np.sqrt(nsamples) < sample_mean) and \
        (sample_mean < mu + 3 * sigma / np.sqrt(nsamples))


def var_check(generator, sigma, nsamples=1000000):
    """Whether the variance of ``nsamples`` draws is within 3 standard errors of sigma²."""
    samples = np.array(generator(nsamples))
    sample_var = samples.var(ddof=1)
    return (sigma ** 2 - 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1)) < sample_var) and \
        (sample_var < sigma ** 2 + 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1)))


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """Pearson's chi-square test of ``nsamples`` draws of ``generator`` against the
    bucket probabilities. ``buckets`` are ``(low, high)`` intervals for a continuous
    distribution, or the values themselves for a discrete one. Returns the p-value,
    the observed and the expected frequencies."""
    import scipy.stats as ss
    if not isinstance(buckets, list) or len(buckets) != len(probs):
        raise ValueError("buckets must be a list of the same length as probs")
    continuous_dist = isinstance(buckets[0], (tuple, list))
    expected_freq = (nsamples * np.array(probs) / np.sum(probs)).astype(np.float64)
    if continuous_dist:
        buckets_npy = np.zeros((len(buckets) * 2,), dtype=np.float32)
        for i, _ in enumerate(buckets):
            buckets_npy[i * 2] = buckets[i][0]
            buckets_npy[i * 2 + 1] = buckets[i][1]
    else:
        buckets_npy = np.array(buckets, dtype=np.float32)
    samples = generator(nsamples)
    assert len(samples) == nsamples, "the generator gave %d samples, not %d" % (len(samples), nsamples)
    samples = np.asarray(samples)
    if continuous_dist:
        ids = np.searchsorted(buckets_npy, samples, side="right") // 2
        obs_freq = np.array([(ids == i).sum() for i in range(len(buckets))])
    else:
        obs_freq = np.array([(samples == buckets[i]).sum() for i in range(len(buckets))])
    _, cs_ret = ss.chisquare(f_obs=obs_freq, f_exp=expected_freq * obs_freq.sum() / expected_freq.sum())
    return cs_ret, obs_freq, expected_freq


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5, success_rate=0.2,
                     alpha=0.05):
    """Runs :func:`chi_square_check` ``nrepeat`` times; fails unless at least
    ``nrepeat * success_rate`` of the p-values exceed ``alpha``."""
    cs_ret_l = []
    obs_freq_l = []
    expected_freq_l = []
    for _ in range(nrepeat):
        cs_ret, obs_freq, expected_freq = chi_square_check(generator=generator, buckets=buckets,
                                                           probs=probs, nsamples=nsamples)
        cs_ret_l.append(cs_ret)
        obs_freq_l.append(obs_freq)
        expected_freq_l.append(expected_freq)
    success_num = (np.array(cs_ret_l) > alpha).sum()
    if success_num < nrepeat * success_rate:
        raise AssertionError("Generator test fails, Chi-square p=%s, obs_freq=%s, expected_freq=%s."
                             "\nbuckets=%s, probs=%s" % (str(cs_ret_l), str(obs_freq_l),
                                                         str(expected_freq_l), str(buckets),
                                                         str(probs)))
    return cs_ret_l


def retry(n):
    """Decorator: reruns a test up to ``n`` times while it fails an assertion."""
    assert n > 0

    def decorate(orig_test):
        @functools.wraps(orig_test)
        def test_new(*args, **kwargs):
            for i in range(n):
                try:
                    orig_test(*args, **kwargs)
                    return
                except AssertionError:
                    if i == n - 1:
                        raise
        return test_new
    return decorate
