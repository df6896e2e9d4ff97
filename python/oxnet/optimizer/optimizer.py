"""Optimizers with MXNet 1.9.1's names, parameters and state layouts.

Each optimizer describes its step as one fused registry op and its arguments
(``_fused_op``): ``update`` runs that op on the arrays, and a KVStore with
``set_optimizer`` runs the same op inside the store after summing the pushed
gradients. The bookkeeping around a step (update counts, the learning-rate
schedule, ``lr_mult``/``wd_mult``, Adam's bias correction) is plain Python, as in
MXNet; the arithmetic on arrays is always a Rust op.
"""

import math
import pickle
import warnings

import numpy

from .. import ndarray as nd
from ..base import MXNetError
from ..ndarray import NDArray
from ..base import bfloat16 as _bfloat16


def _lowp(dtype):
    """float16 or bfloat16: the weight types ``multi_precision`` keeps float32
    master copies for (MXNet 1.9.1 does it for float16; bfloat16 has even fewer
    mantissa bits, so oxnet treats it the same way)."""
    return dtype == numpy.float16 or dtype == _bfloat16

__all__ = ["Optimizer", "SGD", "NAG", "Adam", "AdaGrad", "RMSProp", "AdaDelta", "Signum", "Ftrl",
           "FTRL", "LAMB", "Updater", "create", "register", "get_updater", "NDabs"]


def _zeros_like(weight, dtype=None):
    return nd.zeros(weight.shape, ctx=weight.context, dtype=dtype or weight.dtype)


class Optimizer:
    """The base class of optimizers.

    Parameters
    ----------
    rescale_grad : float, optional, default 1.0
        Multiply the gradient with `rescale_grad` before updating.
    param_idx2name : dict from int to string, optional
        Maps parameter indices to names (for ``lr_mult``/``wd_mult`` by name).
    wd : float, optional, default 0.0
        The weight decay.
    clip_gradient : float, optional
        Clip the gradient to ``[-clip_gradient, clip_gradient]``.
    learning_rate : float, optional, default 0.01
        The initial learning rate.
    lr_scheduler : LRScheduler, optional
        The learning rate scheduler.
    sym : Symbol, optional
        The symbol whose attributes give ``__lr_mult__``/``__wd_mult__``.
    begin_num_update : int, optional
        The initial number of updates.
    multi_precision : bool, optional
        Keep float32 master weights (and states) for float16 weights.
    param_dict : dict of int -> gluon.Parameter, optional
        Parameters whose ``lr_mult``/``wd_mult`` apply.
    """

    opt_registry = {}

    def __init__(self, rescale_grad=1., param_idx2name=None, wd=0., clip_gradient=None,
                 learning_rate=None, lr_scheduler=None, sym=None, begin_num_update=0,
                 multi_precision=False, param_dict=None):
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        # Without a scheduler the rate defaults to 0.01; with one, the scheduler's
        # base_lr is the rate unless learning_rate is given, which then overrides it.
        if lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if lr_scheduler is not None and learning_rate is not None and \
                lr_scheduler.base_lr != learning_rate:
            print(UserWarning("learning rate from ``lr_scheduler`` has been overwritten by "
                              "``learning_rate`` in optimizer."))
            lr_scheduler.base_lr = learning_rate
        self.wd = wd
        self.lr_mult = {}
        self.wd_mult = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._all_index_update_counts = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.aggregate_num = 0
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise MXNetError("param_idx2name should be a dict of param indexes to names.")
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.set_lr_mult({})
        self.set_wd_mult({})

    # -- registry -------------------------------------------------------------------

    @staticmethod
    def register(klass):
        """Registers an optimizer class under its lower-cased name."""
        if not isinstance(klass, type):
            raise MXNetError("register expects a class")
        name = klass.__name__.lower()
        if name in Optimizer.opt_registry:
            warnings.warn("WARNING: New optimizer %s.%s is overriding existing optimizer %s.%s"
                          % (klass.__module__, klass.__name__, Optimizer.opt_registry[name].__module__,
                             Optimizer.opt_registry[name].__name__))
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name, **kwargs):
        """An optimizer instance from its registered (case-insensitive) name."""
        if name.lower() in Optimizer.opt_registry:
            return Optimizer.opt_registry[name.lower()](**kwargs)
        raise ValueError("Cannot find optimizer %s" % name)

    # -- learning rate --------------------------------------------------------------

    @property
    def learning_rate(self):
        """The current learning rate (from the scheduler when there is one)."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr):
        """Sets a new learning rate (not allowed with a scheduler)."""
        if self.lr_scheduler is not None:
            raise UserWarning("LRScheduler of the optimizer has already been defined. This operation "
                              "would be ignored.")
        self.lr = lr

    def set_lr_mult(self, args_lr_mult):
        """Per-parameter learning-rate multipliers (by index or name)."""
        self.lr_mult = {}
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__lr_mult__" in attr[name]:
                    self.lr_mult[name] = float(attr[name]["__lr_mult__"])
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """Per-parameter weight-decay multipliers; parameters whose names end neither
        in ``_weight`` nor ``_gamma`` get 0 by default, as in MXNet."""
        self.wd_mult = {}
        for n in self.idx2name.values():
            if not (n.endswith("_weight") or n.endswith("_gamma")):
                self.wd_mult[n] = 0.0
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__wd_mult__" in attr[name]:
                    self.wd_mult[name] = float(attr[name]["__wd_mult__"])
        self.wd_mult.update(args_wd_mult)

    def _set_current_context(self, device_id):
        if device_id not in self._all_index_update_counts:
            self._all_index_update_counts[device_id] = {}
        self._index_update_count = self._all_index_update_counts[device_id]

    def _update_count(self, index):
        if not isinstance(index, (list, tuple)):
            index = [index]
        for idx in index:
            if idx not in self._index_update_count:
                self._index_update_count[idx] = self.begin_num_update
            self._index_update_count[idx] += 1
            self.num_update = max(self._index_update_count[idx], self.num_update)

    def _mult(self, index, table, attr):
        if index in self.param_dict:
            return getattr(self.param_dict[index], attr)
        if index in table:
            return table[index]
        if index in self.idx2name:
            return table.get(self.idx2name[index], 1.0)
        return 1.0

    def _get_lrs(self, indices):
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        return [lr * self._mult(i, self.lr_mult, "lr_mult") for i in indices]

    def _get_lr(self, index):
        return self._get_lrs([index])[0]

    def _get_wds(self, indices):
        return [self.wd * self._mult(i, self.wd_mult, "wd_mult") for i in indices]

    def _get_wd(self, index):
        return self._get_wds([index])[0]

    def _common_kwargs(self):
        kw = {"rescale_grad": self.rescale_grad}
        if self.clip_gradient is not None:
            kw["clip_gradient"] = self.clip_gradient
        return kw

    # -- states and updates ---------------------------------------------------------

    def create_state(self, index, weight):
        """The auxiliary state of one weight (None when there is none)."""
        return None

    def create_state_multi_precision(self, index, weight):
        """Like ``create_state``; with ``multi_precision`` a float16 weight gets a
        float32 master copy: ``(weight32, state)``."""
        if self.multi_precision and _lowp(weight.dtype):
            w32 = weight.astype(numpy.float32)
            return (w32, self.create_state(index, w32))
        if _lowp(weight.dtype) and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or slow "
                          "convergence. Consider using multi_precision=True option of the optimizer")
        return self.create_state(index, weight)

    def _fused_op(self, index, weight, state):
        """Counts the update of ``index`` and returns ``(op name, attrs, state arrays)``:
        the registry op ``op(weight, grad, *states, **attrs)`` gives the new weight."""
        raise NotImplementedError("%s has no fused update op" % type(self).__name__)

    def _fused_ops(self, index, weight, state):
        """``_fused_op``'s triple plus a second phase: ``(op name, attrs)`` of an op run
        as ``op(weight, g, weight.norm(), g.norm(), out=weight, **attrs)`` on the
        first op's result ``g`` (LAMB), or None for one-op updates."""
        return tuple(self._fused_op(index, weight, state)) + (None,)

    def _has_fused_op(self):
        """True when a step is registry ops only (so a KVStore can run it in Rust)."""
        fused = (type(self)._fused_op is not Optimizer._fused_op
                 or type(self)._fused_ops is not Optimizer._fused_ops)
        return fused and (not self.multi_precision or self._native_mp)

    _native_mp = False

    def update(self, index, weight, grad, state):
        """Updates ``weight`` in place from ``grad`` and ``state``."""
        op, attrs, states = self._fused_op(index, weight, state)
        getattr(nd, op)(weight, grad, *states, out=weight, **attrs)

    def update_multi_precision(self, index, weight, grad, state):
        """``update`` through the float32 master copy when there is one. ``index``,
        ``weight``, ``grad`` and ``state`` may also be lists (an aggregated update of
        several weights, as MXNet's multi-tensor path): each is updated in turn."""
        if isinstance(index, (list, tuple)):
            for i, w, g, st in zip(index, weight, grad, state):
                self.update_multi_precision(i, w, g, st)
            return
        if self.multi_precision and _lowp(weight.dtype) and not self._native_mp:
            w32, inner = state
            self.update(index, w32, grad.astype(numpy.float32), inner)
            w32.astype(weight.dtype).copyto(weight)
        else:
            self.update(index, weight, grad, state)

    def __getstate__(self):
        ret = self.__dict__.copy()
        # gluon Parameters are not pickled with the optimizer
        ret["param_dict"] = {}
        return ret

    def __setstate__(self, state):
        self.__dict__ = state


register = Optimizer.register
create = Optimizer.create_optimizer
NDabs = nd.abs


def _states(state):
    if state is None:
        return []
    if isinstance(state, (list, tuple)):
        return [s for s in state if s is not None]
    return [state]


def _momentum_op(opt, kind, index, weight, state, **extra):
    """SGD's and NAG's fused op: ``{kind}_mom_update`` with a momentum state, plain
    ``sgd_update`` without one, the ``mp_`` forms for float16 weights with
    multi_precision (state ``(momentum or None, float32 weight)``)."""
    opt._update_count(index)
    kw = opt._common_kwargs()
    kw["lr"] = opt._get_lr(index)
    kw["wd"] = opt._get_wd(index)
    kw.update(extra)
    if opt.multi_precision and _lowp(weight.dtype):
        mom, w32 = state
        if mom is not None:
            kw["momentum"] = opt.momentum
            return "mp_%s_mom_update" % kind, kw, [mom, w32]
        return "mp_sgd_update", kw, [w32]
    if state is not None:
        kw["momentum"] = opt.momentum
        return "%s_mom_update" % kind, kw, [state]
    return "sgd_update", kw, []


@register
class SGD(Optimizer):
    """Stochastic gradient descent with momentum, weight decay and (for float16
    weights with ``multi_precision``) float32 master weights.

    ``state = momentum * state + lr * (rescale_grad * grad + wd * weight)``,
    ``weight = weight - state`` (MXNet's ``sgd_mom_update``).
    """

    _native_mp = True

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update

    def create_state_multi_precision(self, index, weight):
        w32 = None
        if self.multi_precision and _lowp(weight.dtype):
            w32 = weight.astype(numpy.float32)
            return (self.create_state(index, w32), w32)
        if _lowp(weight.dtype) and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or slow "
                          "convergence. Consider using multi_precision=True option of the SGD optimizer")
        return self.create_state(index, weight)

    def create_state(self, index, weight):
        if self.momentum != 0.0:
            return _zeros_like(weight)
        return None

    def _fused_op(self, index, weight, state):
        return _momentum_op(self, "sgd", index, weight, state, lazy_update=self.lazy_update)

    def update_multi_precision(self, index, weight, grad, state):
        self.update(index, weight, grad, state)


@register
class NAG(Optimizer):
    """Nesterov accelerated gradient (MXNet's ``nag_mom_update``)."""

    _native_mp = True

    def __init__(self, momentum=0.0, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum

    create_state_multi_precision = SGD.create_state_multi_precision

    def create_state(self, index, weight):
        if self.momentum != 0.0:
            return _zeros_like(weight)
        return None

    def _fused_op(self, index, weight, state):
        return _momentum_op(self, "nag", index, weight, state)

    def update_multi_precision(self, index, weight, grad, state):
        self.update(index, weight, grad, state)


@register
class Adam(Optimizer):
    """Adam; the bias correction is folded into the step's learning rate:
    ``lr * sqrt(1 - beta2^t) / (1 - beta1^t)``."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 lazy_update=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))

    def _fused_op(self, index, weight, state):
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        t = self._index_update_count[index]
        lr *= math.sqrt(1. - self.beta2 ** t) / (1. - self.beta1 ** t)
        kw = self._common_kwargs()
        kw.update(lr=lr, wd=wd, beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon,
                  lazy_update=self.lazy_update)
        return "adam_update", kw, list(state)


@register
class AdaGrad(Optimizer):
    """AdaGrad: ``history += g^2``; ``weight -= lr * (g / sqrt(history + eps) + wd * weight)``."""

    def __init__(self, eps=1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        return _zeros_like(weight)

    def _fused_op(self, index, weight, state):
        self._update_count(index)
        kw = self._common_kwargs()
        kw.update(lr=self._get_lr(index), wd=self._get_wd(index), epsilon=self.float_stable_eps)
        return "adagrad_update", kw, [state]


@register
class RMSProp(Optimizer):
    """RMSProp (Tieleman & Hinton), or with ``centered=True`` Graves' variant
    (MXNet's ``rmsprop_update`` / ``rmspropalex_update``)."""

    def __init__(self, learning_rate=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8,
                 centered=False, clip_weights=None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.centered = centered
        self.epsilon = epsilon
        self.clip_weights = clip_weights

    def create_state(self, index, weight):
        if self.centered:
            return (_zeros_like(weight), _zeros_like(weight), _zeros_like(weight))
        return (_zeros_like(weight),)

    def _fused_op(self, index, weight, state):
        self._update_count(index)
        kw = self._common_kwargs()
        kw.update(lr=self._get_lr(index), wd=self._get_wd(index), gamma1=self.gamma1,
                  epsilon=self.epsilon)
        if self.clip_weights:
            kw["clip_weights"] = self.clip_weights
        if self.centered:
            kw["gamma2"] = self.gamma2
            return "rmspropalex_update", kw, list(state)
        return "rmsprop_update", kw, list(state)


@register
class AdaDelta(Optimizer):
    """AdaDelta (no learning rate: the step is ``sqrt(acc_delta + eps) /
    sqrt(acc_g + eps) * g``, plus ``wd * weight``)."""

    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))

    def _fused_op(self, index, weight, state):
        self._update_count(index)
        kw = self._common_kwargs()
        kw.update(wd=self._get_wd(index), rho=self.rho, epsilon=self.epsilon)
        return "adadelta_update", kw, list(state)


@register
class Signum(Optimizer):
    """Signum (SIGN momentUM); ``momentum=0`` gives signSGD."""

    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def create_state(self, index, weight):
        if self.momentum != 0.0:
            return _zeros_like(weight)
        return None

    def _fused_op(self, index, weight, state):
        self._update_count(index)
        kw = self._common_kwargs()
        kw.update(lr=self._get_lr(index), wd=self._get_wd(index))
        if state is not None:
            kw["momentum"] = self.momentum
            if self.wd_lh:
                kw["wd_lh"] = self.wd_lh
            return "signum_update", kw, [state]
        return "signsgd_update", kw, []


@register
class Ftrl(Optimizer):
    """FTRL-proximal (McMahan et al.), MXNet's ``ftrl_update``."""

    def __init__(self, lamda1=0.01, learning_rate=0.1, beta=1, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.lamda1 = lamda1
        self.beta = beta

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))

    def _fused_op(self, index, weight, state):
        self._update_count(index)
        kw = self._common_kwargs()
        kw.update(lr=self._get_lr(index), wd=self._get_wd(index), lamda1=self.lamda1, beta=self.beta)
        return "ftrl_update", kw, list(state)


FTRL = Ftrl


@register
class LAMB(Optimizer):
    """LAMB: ``lamb_update_phase1`` gives the Adam-like direction ``g``, then
    ``lamb_update_phase2`` scales the step by ``||weight|| / ||g||``."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6,
                 lower_bound=None, upper_bound=None, bias_correction=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        self.bias_correction = bias_correction

    def create_state(self, index, weight):
        return (_zeros_like(weight), _zeros_like(weight))

    def _fused_ops(self, index, weight, state):
        self._update_count(index)
        kw = self._common_kwargs()
        kw.update(beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon,
                  bias_correction=self.bias_correction, t=self._index_update_count[index],
                  wd=self._get_wd(index))
        kw2 = {"lr": self._get_lr(index)}
        if self.lower_bound:
            kw2["lower_bound"] = self.lower_bound
        if self.upper_bound:
            kw2["upper_bound"] = self.upper_bound
        return "lamb_update_phase1", kw, list(state), ("lamb_update_phase2", kw2)

    def update(self, index, weight, grad, state):
        op1, kw, states, (op2, kw2) = self._fused_ops(index, weight, state)
        g = getattr(nd, op1)(weight, grad, *states, **kw)
        getattr(nd, op2)(weight, g, weight.norm(), g.norm(), out=weight, **kw2)


class Updater:
    """Applies an optimizer to (index, grad, weight) and keeps one state per index.
    ``get_states``/``set_states`` pickle the states (and the optimizer)."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.states = {}
        self.states_synced = {}
        self.aggregate_updates = False

    def __call__(self, index, grad, weight):
        if not isinstance(index, (list, tuple)):
            indices, grads, weights = [index], [grad], [weight]
        else:
            indices, grads, weights = index, grad, weight
        for i, g, w in zip(indices, grads, weights):
            if i not in self.states:
                self.states[i] = self.optimizer.create_state_multi_precision(i, w)
                self.states_synced[i] = True
            elif not self.states_synced[i]:
                self.states[i] = self.sync_state_context(self.states[i], w.context)
                self.states_synced[i] = True
            self.optimizer.update_multi_precision(i, w, g, self.states[i])

    def sync_state_context(self, state, context):
        """Moves a state (an array, or a tuple/list of them) to ``context``."""
        if isinstance(state, NDArray):
            return state.as_in_context(context)
        if isinstance(state, (tuple, list)):
            synced = [self.sync_state_context(s, context) for s in state]
            return tuple(synced) if isinstance(state, tuple) else synced
        return state

    def set_states(self, states):
        """Sets the states from ``get_states``' bytes."""
        states = pickle.loads(states)
        if isinstance(states, tuple) and len(states) == 2:
            self.states, self.optimizer = states
        else:
            self.states = states
        self.states_synced = dict.fromkeys(self.states.keys(), False)

    def get_states(self, dump_optimizer=False):
        """The states (and with ``dump_optimizer`` the optimizer) as pickled bytes."""
        return pickle.dumps((self.states, self.optimizer) if dump_optimizer else self.states)


def get_updater(optimizer):
    """An ``Updater`` for ``optimizer``."""
    return Updater(optimizer)
