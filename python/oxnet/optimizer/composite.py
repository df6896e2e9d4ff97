"""MXNet 1.9.1's optimizers whose step is a short sequence of NDArray ops rather than one
fused update op: Adamax, Nadam, FTML, SGLD, DCASGD, LBSGD, LARS, and the ``Test``
optimizer and ``ccSGD`` alias. Update rules, defaults and state layouts are MXNet's.
Every piece of arithmetic on arrays is a registry op (through ``mx.nd``); only scalar
bookkeeping (step counts, schedules, norms read back as floats) is Python."""

import logging
import math
import os

import numpy

from .. import ndarray as nd
from .. import random as _random
from .optimizer import Optimizer, SGD, register, _lowp

__all__ = ["Adamax", "Nadam", "FTML", "SGLD", "DCASGD", "LBSGD", "LARS", "Test", "ccSGD"]


def _zeros(weight):
    return nd.zeros(weight.shape, ctx=weight.context, dtype=weight.dtype)


def _prepared_grad(opt, grad, weight, wd, decay_before_clip):
    """The rescaled gradient, with weight decay added before clipping
    (``decay_before_clip``) or not at all (the caller adds it)."""
    g = grad * opt.rescale_grad
    if decay_before_clip and wd:
        g = g + wd * weight
    if opt.clip_gradient is not None:
        g = nd.clip(g, -opt.clip_gradient, opt.clip_gradient)
    return g


@register
class Adamax(Optimizer):
    """AdaMax (Adam with the infinity norm), from Kingma & Ba, section 7::

        grad = clip(grad * rescale_grad + wd * weight, clip_gradient)
        m = beta1 * m + (1 - beta1) * grad
        u = maximum(beta2 * u, abs(grad))
        weight -= lr / (1 - beta1**t) * m / u
    """

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2

    def create_state(self, index, weight):
        return (_zeros(weight), _zeros(weight))  # mean, infinity-norm estimate

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        t = self._index_update_count[index]
        lr /= (1. - self.beta1 ** t)
        g = _prepared_grad(self, grad, weight, wd, True)
        m, u = state
        m[:] = self.beta1 * m + (1. - self.beta1) * g
        u[:] = nd.maximum(self.beta2 * u, nd.abs(g))
        weight[:] -= lr * m / u


@register
class Nadam(Optimizer):
    """Adam with Nesterov momentum (Dozat, "Incorporating Nesterov Momentum into Adam"),
    with the momentum schedule ``beta1 * (1 - 0.5 * 0.96**(t * schedule_decay))``."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 schedule_decay=0.004, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.schedule_decay = schedule_decay
        self.m_schedule = 1.

    def create_state(self, index, weight):
        return (_zeros(weight), _zeros(weight))  # mean, variance

    def _momentum(self, t):
        return self.beta1 * (1. - 0.5 * (0.96 ** (t * self.schedule_decay)))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        t = self._index_update_count[index]
        g = _prepared_grad(self, grad, weight, wd, True)
        mom_t, mom_next = self._momentum(t), self._momentum(t + 1)
        self.m_schedule = self.m_schedule * mom_t
        schedule_next = self.m_schedule * mom_next
        m, v = state
        m[:] = self.beta1 * m + (1. - self.beta1) * g
        v[:] = self.beta2 * v + (1. - self.beta2) * g * g
        g_hat = g / (1. - self.m_schedule)
        m_hat = m / (1. - schedule_next)
        v_hat = v / (1. - self.beta2 ** t)
        m_bar = (1. - mom_t) * g_hat + mom_next * m_hat
        weight[:] -= lr * m_bar / (nd.sqrt(v_hat) + self.epsilon)


@register
class FTML(Optimizer):
    """Follow the Moving Leader (Zheng & Kwok, ICML 2017)::

        g = clip(grad * rescale_grad + wd * weight, clip_gradient)
        v = beta2 * v + (1 - beta2) * g**2
        d_t = (1 - beta1**t) / lr * (sqrt(v / (1 - beta2**t)) + epsilon)
        z = beta1 * z + (1 - beta1) * g - (d_t - beta1 * d) * weight
        d = d_t
        weight = -z / d
    """

    def __init__(self, beta1=0.6, beta2=0.999, epsilon=1e-8, **kwargs):
        super().__init__(**kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return (_zeros(weight), _zeros(weight), _zeros(weight))  # d, v, z

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        t = self._index_update_count[index]
        kwargs = dict(beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon,
                      rescale_grad=self.rescale_grad, t=t)
        if self.clip_gradient:
            kwargs["clip_grad"] = self.clip_gradient
        d, v, z = state
        nd.ftml_update(weight, grad, d, v, z, out=weight, lr=lr, wd=wd, **kwargs)


@register
class SGLD(Optimizer):
    """Stochastic Gradient Langevin Dynamics (Welling & Teh, 2011)::

        weight += -lr / 2 * (clip(grad * rescale_grad) + wd * weight) + N(0, sqrt(lr))

    The noise is drawn with ``mx.random.normal`` in the weight's dtype and context (so
    ``mx.random.seed`` makes a step reproducible)."""

    def create_state(self, index, weight):
        return None

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        g = _prepared_grad(self, grad, weight, wd, False)
        weight[:] += -lr / 2 * (g + wd * weight) + \
            _random.normal(0, math.sqrt(lr), shape=weight.shape, dtype=weight.dtype,
                           ctx=weight.context)


@register
class DCASGD(Optimizer):
    """Delay-compensated asynchronous SGD (Zheng et al., 2016)::

        mom = momentum * mom - lr * (g + wd * weight + lamda * g * g * (weight - previous))
        previous = weight
        weight += mom
    """

    def __init__(self, momentum=0.0, lamda=0.04, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.weight_previous = {}
        self.lamda = lamda

    def create_state(self, index, weight):
        mom = None if self.momentum == 0.0 else _zeros(weight)
        return (mom, weight.copy())  # momentum, previous weight

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        g = _prepared_grad(self, grad, weight, wd, False)
        mom, previous = state
        step = -lr * (g + wd * weight + self.lamda * g * g * (weight - previous))
        if mom is not None:
            mom[:] = self.momentum * mom + step
            step = mom
        previous[:] = weight
        weight[:] += step


def _sgd_step(weight, grad, state, lr, wd, kwargs):
    """One (momentum) SGD step with the fused ops; ``state`` is a momentum array, None,
    or a multi-precision pair ``(momentum or None, float32 weight)``."""
    if isinstance(state, (list, tuple)):
        mom, w32 = state
        if mom is not None:
            nd.mp_sgd_mom_update(weight, grad, mom, w32, out=weight, lr=lr, wd=wd, **kwargs)
        else:
            nd.mp_sgd_update(weight, grad, w32, out=weight, lr=lr, wd=wd, **kwargs)
    elif state is not None:
        nd.sgd_mom_update(weight, grad, state, out=weight, lr=lr, wd=wd, **kwargs)
    else:
        kwargs = {k: v for k, v in kwargs.items() if k != "momentum"}
        nd.sgd_update(weight, grad, out=weight, lr=lr, wd=wd, **kwargs)


def _momentum_state(opt, weight):
    """A momentum array (or None without momentum); for float16 weights with
    multi_precision, ``(momentum or None, float32 weight)``."""
    if opt.multi_precision and _lowp(weight.dtype):
        w32 = weight.astype(numpy.float32)
        mom = nd.zeros(weight.shape, ctx=weight.context, dtype=numpy.float32) \
            if opt.momentum != 0.0 else None
        return (mom, w32)
    return _zeros(weight) if opt.momentum != 0.0 else None


@register
class LBSGD(Optimizer):
    """Large-batch SGD: gradients are accumulated over ``batch_scale`` steps, and each
    large-batch step is a momentum SGD step whose learning rate is scaled up during
    ``warmup_epochs`` (strategy 'linear', 'power2' or 'sqrt' from 1 to
    ``batch_scale``) or set by layer-wise adaptive rate scaling ('lars'). Steps in
    between leave the weight unchanged."""

    def __init__(self, momentum=0.0, multi_precision=False, warmup_strategy="linear",
                 warmup_epochs=5, batch_scale=1, updates_per_epoch=32, begin_epoch=0,
                 num_epochs=60, **kwargs):
        super().__init__(**kwargs)
        logging.info("Running Large-Batch SGD Algorithm")
        logging.info("(Batch_scale=%f, warmup_epochs=%d, warmup_strategy=%s, "
                     "updates_per_epoch=%d)", batch_scale, warmup_epochs, warmup_strategy,
                     updates_per_epoch)
        self.momentum = momentum
        self.multi_precision = multi_precision
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = warmup_epochs
        self.batch_scale = batch_scale
        self.updates_per_epoch = updates_per_epoch
        self.init_updates = begin_epoch * updates_per_epoch
        self.num_epochs = num_epochs
        self.lbmult = 1
        self.cumgrads = {}
        self.adaptive = False
        self.admult = 1

    def create_state(self, index, weight):
        return _zeros(weight) if self.momentum != 0.0 else None

    def create_state_multi_precision(self, index, weight):
        if self.multi_precision and _lowp(weight.dtype):
            return _momentum_state(self, weight)
        return super().create_state_multi_precision(index, weight)

    def update_multi_precision(self, index, weight, grad, state):
        if isinstance(index, (list, tuple)):
            return super().update_multi_precision(index, weight, grad, state)
        return self.update(index, weight, grad, state)

    def _get_lbmult(self, nup):
        """The warm-up multiplier of the learning rate after ``nup`` updates."""
        nwup = self.warmup_epochs * self.updates_per_epoch
        maxmult = float(self.batch_scale)
        if nup >= nwup:
            return maxmult
        if nwup <= 1:
            return 1.0
        frac = float(nup) / nwup
        if self.warmup_strategy == "linear":
            return 1.0 + (maxmult - 1) * frac
        if self.warmup_strategy == "power2":
            return 1.0 + (maxmult - 1) * frac * frac
        if self.warmup_strategy == "sqrt":
            return 1.0 + (maxmult - 1) * math.sqrt(frac)
        return 1.0

    @staticmethod
    def _l2norm(v):
        """The squared L2 norm of ``v`` as a float."""
        return float(nd.sum(v * v).asscalar())

    def _get_lars(self, weight, g, wd):
        """The LARS multiplier sqrt(|w|^2 / (|g|^2 + wd |w|^2)), kept in [0.01, 100]."""
        w2 = self._l2norm(weight)
        g2 = self._l2norm(g)
        lars = math.sqrt(w2 / (g2 + wd * w2 + 1e-18))
        return min(max(lars, 0.01), 100.0)

    def _reset_cum_gradient(self, index):
        self.cumgrads[index]["cum_grad"] = 0

    def _get_cum_gradient(self, index):
        return self.cumgrads.get(index, {})

    def _put_cum_gradient(self, index, cgrad):
        self.cumgrads[index] = cgrad

    def _cumulate_gradient(self, grad, index):
        """Adds ``grad`` to the accumulated gradient of ``index``."""
        cgrad = self._get_cum_gradient(index)
        if cgrad and cgrad["num_cums"] > 0:
            cum_grad, num_cums = cgrad["cum_grad"] + grad, cgrad["num_cums"] + 1
        else:
            cum_grad, num_cums = grad, self.init_updates + 1
        cgrad = {"cum_grad": cum_grad, "num_cums": num_cums}
        self._put_cum_gradient(index, cgrad)
        return cgrad

    def update(self, index, weight, grad, state):
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        self._update_count(index)
        cgrad = self._cumulate_gradient(grad, index)
        if cgrad["num_cums"] % self.batch_scale != 0:
            nd.sgd_update(weight, grad, out=weight, lr=0.0, wd=wd)
            return
        g = cgrad["cum_grad"] / self.batch_scale
        if self.warmup_strategy == "lars":
            lbmult = self._get_lars(weight, g, wd)
        else:
            lbmult = self._get_lbmult(cgrad["num_cums"])
        kwargs = {"rescale_grad": self.rescale_grad}
        if self.momentum > 0:
            kwargs["momentum"] = self.momentum
        if self.clip_gradient:
            kwargs["clip_gradient"] = self.clip_gradient
        _sgd_step(weight, g, state, lr * lbmult, wd, kwargs)
        self._reset_cum_gradient(index)


@register
class LARS(Optimizer):
    """SGD with layer-wise adaptive rate scaling (You et al., 2017). Each weight's
    learning rate is multiplied by ``eta * |w| / (|g| + wd * |w| + eps)`` (``g`` the
    rescaled gradient; 1 when either norm is 0), except for parameters whose names end
    in 'gamma', 'beta' or 'bias'. The step is momentum SGD; with
    ``momentum_correction`` the momentum is scaled by the ratio of the current to the
    previous learning rate when the rate changes."""

    def __init__(self, momentum=0.0, lazy_update=True, eta=0.001, eps=0,
                 momentum_correction=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.momentum_correction = momentum_correction
        self.lazy_update = lazy_update
        self.aggregate_num = int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", "4"))
        self.eta = eta
        self.eps = eps
        self.skip = 0
        self.last_lr = None
        self.cur_lr = None

    def _get_lrs(self, indices):
        if self.lr_scheduler is not None:
            lr = self.lr_scheduler(self.num_update)
        else:
            lr = self.lr
        if self.cur_lr is None:
            self.last_lr = lr
        self.cur_lr = lr
        return [lr * self._mult(i, self.lr_mult, "lr_mult") for i in indices]

    def create_state(self, index, weight):
        return _zeros(weight) if self.momentum != 0.0 else None

    def create_state_multi_precision(self, index, weight):
        if self.multi_precision and _lowp(weight.dtype):
            return _momentum_state(self, weight)
        return super().create_state_multi_precision(index, weight)

    def _l2norm(self, v, rescale=False):
        factor = self.rescale_grad if rescale else 1.0
        return float(nd.norm(v * factor).asscalar())

    def _get_lars(self, index, weight, grad, wd):
        """The LARS multiplier of ``index``'s learning rate."""
        name = self.idx2name.get(index, str(index))
        if name.endswith("gamma") or name.endswith("beta") or name.endswith("bias"):
            return 1.0
        w_norm = self._l2norm(weight)
        g_norm = self._l2norm(grad, rescale=True)
        if w_norm > 0.0 and g_norm > 0.0:
            return self.eta * w_norm / (g_norm + wd * w_norm + self.eps)
        return 1.0

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        w_for_norm = weight.astype(numpy.float32) if _lowp(weight.dtype) else weight
        lr *= self._get_lars(index, w_for_norm, grad.astype(w_for_norm.dtype), wd)
        kwargs = {"rescale_grad": self.rescale_grad}
        if self.momentum > 0:
            kwargs["momentum"] = self.momentum * (self.cur_lr / self.last_lr) \
                if self.momentum_correction and self.last_lr != 0 else self.momentum
        if self.clip_gradient:
            kwargs["clip_gradient"] = self.clip_gradient
        _sgd_step(weight, grad, state, lr, wd, kwargs)
        self.last_lr = self.cur_lr

    def update_multi_precision(self, index, weight, grad, state):
        if isinstance(index, (list, tuple)):
            return super().update_multi_precision(index, weight, grad, state)
        return self.update(index, weight, grad, state)


@register
class ccSGD(SGD):  # pylint: disable=invalid-name
    """[Deprecated, same as SGD] the former C++ SGD."""


@register
class Test(Optimizer):
    """The optimizer MXNet uses in its tests: ``weight += grad * rescale_grad`` and the
    state records the new weight."""

    def create_state(self, index, weight):
        return nd.zeros(weight.shape, ctx=weight.context)

    def update(self, index, weight, grad, state):
        step = grad * self.rescale_grad
        if step.stype != "default" and weight.stype == "default":
            # a row_sparse gradient changes only its rows of a dense weight
            step = step.tostype("default")
        weight[:] += step
        state[:] = weight
