"""``gluon.Trainer``: applies an optimizer to a set of Parameters.

With the parameters on one device no KVStore is used (as in MXNet): ``step`` scales
the gradients by ``1 / batch_size`` and runs the optimizer's fused update op per
parameter. On several devices the gradients are summed across them first, through a
KVStore (``kvstore='device'``/``'local'`` or a ``KVStore``); with
``update_on_kvstore=True`` the store runs the optimizer and devices pull the weights.
"""

import os
from ..base import MXNetError
from .parameter import Parameter, ParameterDict

__all__ = ["Trainer"]


class StaleGradientError(MXNetError, UserWarning):
    """Trainer.step found a parameter whose gradient backward did not write since the
    last step (MXNet raises a UserWarning; this is both)."""


class Trainer:
    """Applies an Optimizer on a set of Parameters.

    Parameters
    ----------
    params : ParameterDict or list/dict of Parameter
        The parameters to optimize.
    optimizer : str or Optimizer
        The optimizer (``'sgd'``, ``'adam'``, ... or an instance).
    optimizer_params : dict
        Keyword arguments of the optimizer (``learning_rate``, ``wd``, ...).
    kvstore : str or KVStore
        How gradients of several devices are combined.
    compression_params : dict
        Gradient compression of the KVStore.
    update_on_kvstore : bool
        Run the optimizer in the KVStore (default: False).
    """

    def __init__(self, params, optimizer, optimizer_params=None, kvstore="device",
                 compression_params=None, update_on_kvstore=None):
        if isinstance(params, (dict, ParameterDict)):
            params = list(params.values())
        if not isinstance(params, (list, tuple)):
            raise ValueError("First argument must be a list or dict of Parameters, got %s."
                             % type(params))
        self._params = []
        seen = set()
        for param in params:
            if not isinstance(param, Parameter):
                raise ValueError("First argument must be a list or dict of Parameters, got "
                                 "list of %s." % type(param))
            if id(param) in seen:
                raise ValueError("Cannot add the same parameter twice: %s" % param.name)
            seen.add(id(param))
            self._params.append(param)
            param._set_trainer(self)
        self._compression_params = compression_params
        self._contexts = self._check_contexts()
        optimizer_params = optimizer_params if optimizer_params else {}
        self._init_optimizer(optimizer, optimizer_params)
        self._scale = self._optimizer.rescale_grad
        self._kvstore_params = {"kvstore": kvstore, "update_on_kvstore": update_on_kvstore}
        self._kv_initialized = False
        self._kvstore = None
        self._update_on_kvstore = None
        self._params_to_init = []
        self._param2idx = {p.name: i for i, p in enumerate(self._params)}
        self._contains_sparse_weight = any(p._stype != "default" for p in self._params)

    def _check_contexts(self):
        contexts = None
        for param in self._params:
            ctx = param.list_ctx()
            if contexts is not None and contexts != ctx:
                raise MXNetError("All Parameters must be initialized on the same set of "
                                 "contexts, but Parameter %s is initialized on %s while previous "
                                 "Parameters are initialized on %s."
                                 % (param.name, str(ctx), str(contexts)))
            contexts = ctx
        return contexts

    def _init_optimizer(self, optimizer, optimizer_params):
        from .. import optimizer as opt
        param_dict = {i: param for i, param in enumerate(self._params)}
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise ValueError("optimizer_params must be None if optimizer is an instance of "
                                 "Optimizer instead of str")
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        self._updaters = [opt.get_updater(self._optimizer) for _ in (self._contexts or [None])]

    def _init_kvstore(self):
        kv = self._kvstore_params["kvstore"]
        update_on_kv = self._kvstore_params["update_on_kvstore"]
        ndev = len(self._contexts or [])
        if self._contains_sparse_weight:
            # row_sparse weights live in the store, which runs the optimizer; devices pull
            # the rows a batch needs (Parameter.row_sparse_data), as in MXNet
            if update_on_kv is False:
                raise ValueError("Cannot set update_on_kvstore=False when sparse weights "
                                 "are present.")
            from .. import kvstore as kvs
            if not kv or isinstance(kv, str):
                kv = kvs.create(kv if isinstance(kv, str) and kv else "local")
            self._kvstore = kv
            self._update_on_kvstore = True
            kv.set_optimizer(self._optimizer)
            self._params_to_init = list(self._params)
            self._kv_initialized = True
            return
        dist = (isinstance(kv, str) and "dist" in kv.lower()) or \
            (kv is not None and not isinstance(kv, str) and "dist" in getattr(kv, "type", ""))
        if dist:
            self._init_dist_kvstore(kv, update_on_kv)
            return
        if ndev > 1 and kv:
            from .. import kvstore as kvs
            if isinstance(kv, str):
                kv = kvs.create(kv)
            if self._compression_params:
                kv.set_gradient_compression(self._compression_params)
            if not kv.is_capable(kvs.KVStoreBase.OPTIMIZER):
                # a custom store that cannot run the optimizer only sums gradients
                if update_on_kv:
                    raise ValueError("Please set update_on_kvstore=False when training with "
                                     "%s, which does not support running the optimizer"
                                     % type(kv).__name__)
                update_on_kv = False
            self._kvstore = kv
            if update_on_kv is None and any(p._grad_stype != "default" for p in self._params):
                # as MXNet: sparse gradients of dense weights are summed in the store and
                # applied on the devices
                update_on_kv = False
            if update_on_kv is None:
                # MXNet's default: update on the store unless MXNET_UPDATE_ON_KVSTORE=0
                update_on_kv = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
            self._update_on_kvstore = bool(update_on_kv)
            if self._update_on_kvstore:
                kv.set_optimizer(self._optimizer)
        else:
            if update_on_kv:
                raise MXNetError("Cannot set update_on_kvstore=True when there is no kvstore "
                                 "(parameters on %d device)" % ndev)
            self._kvstore = None
            self._update_on_kvstore = None
        self._params_to_init = list(self._params)
        self._kv_initialized = True

    def _init_dist_kvstore(self, kv, update_on_kv):
        """A distributed store, with MXNet 1.9.1's rules: the optimizer runs on the
        servers (update_on_kvstore) unless ``update_on_kvstore=False`` or
        ``MXNET_UPDATE_ON_KVSTORE=0``; async stores always update on the servers (async
        with ``update_on_kvstore=False`` is a ValueError). The servers get the optimizer
        as it is at the first ``step``, ``rescale_grad`` included."""
        from .. import kvstore as kvs
        if isinstance(kv, str):
            kv = kvs.create(kv)
        if "async" in kv.type and update_on_kv is False:
            raise ValueError("Please set update_on_kvstore=True when training in async mode.")
        if any(p._grad_stype != "default" for p in self._params):
            # as MXNet: sparse gradients are pushed to the servers, which update the
            # weights (pulled whole); row_sparse gradients are not pulled back
            if update_on_kv is False:
                raise ValueError("Cannot set update_on_kvstore=False on dist kvstore when "
                                 "sparse gradients are present.")
            update_on_kv = True
        if update_on_kv is None:
            update_on_kv = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
        if "async" in kv.type:
            update_on_kv = True
        if self._compression_params:
            kv.set_gradient_compression(self._compression_params)
        self._kvstore = kv
        self._update_on_kvstore = bool(update_on_kv)
        if self._update_on_kvstore:
            kv.set_optimizer(self._optimizer)
        self._params_to_init = list(self._params)
        self._kv_initialized = True

    def _init_params(self):
        if self._kvstore is None:
            self._params_to_init = []
            return
        left = []
        for i, param in enumerate(self._params_to_init):
            if param._deferred_init:
                left.append(param)
                continue
            idx = self._params.index(param)
            if param._stype != "default":
                self._kvstore.init(idx, param._data[0])
                continue
            # as MXNet: broadcast the first device's value into the store and every device
            self._kvstore.broadcast(idx, param.list_data()[0], param.list_data())
        self._params_to_init = left

    def _reset_kvstore(self):
        if self._kvstore is not None and "dist" in self._kvstore.type:
            raise RuntimeError("Cannot reset distributed KVStore.")
        self._kv_initialized = False
        self._kvstore = None
        self._update_on_kvstore = None
        self._params_to_init = list(self._params)

    def _row_sparse_pull(self, parameter, out, row_id, full_idx=False):
        """Pulls the rows ``row_id`` of a row_sparse parameter from the store into
        ``out`` (every row with ``full_idx``)."""
        self._prepare()
        idx = self._param2idx[parameter.name]
        if full_idx and "dist" not in self._kvstore.type:
            self._kvstore.pull(idx, out=out, priority=-idx, ignore_sparse=False)
        else:
            self._kvstore.row_sparse_pull(idx, out=out, row_ids=row_id, priority=-idx)

    @property
    def learning_rate(self):
        """The optimizer's current learning rate."""
        return self._optimizer.learning_rate

    @property
    def optimizer(self):
        """The Optimizer."""
        return self._optimizer

    def set_learning_rate(self, lr):
        """Sets the optimizer's learning rate."""
        self._optimizer.set_learning_rate(lr)

    def _prepare(self):
        if not self._kv_initialized:
            self._init_kvstore()
        if self._params_to_init:
            self._init_params()

    def step(self, batch_size, ignore_stale_grad=False):
        """One update: gradients are scaled by ``1 / batch_size``, combined across
        devices, and applied by the optimizer."""
        scale = self._scale / batch_size
        if self._update_on_kvstore and self._kv_initialized and self._kvstore is not None \
                and "dist" in self._kvstore.type and self._optimizer.rescale_grad != scale:
            # as MXNet: the servers keep the rescale factor of the first step
            raise UserWarning("Possible change in the `batch_size` from previous `step` "
                              "detected. Optimizer gradient normalizing factor will not change "
                              "w.r.t new batch_size when update_on_kvstore=True and when "
                              "distributed kvstore is used.")
        self._optimizer.rescale_grad = scale
        self._prepare()
        self._check_fresh(ignore_stale_grad)
        self._allreduce_grads()
        self._update(ignore_stale_grad)

    def allreduce_grads(self):
        """Sums the gradients across devices (for a manual ``update`` after, e.g.,
        gradient clipping)."""
        self._prepare()
        if self._kvstore is not None and self._update_on_kvstore:
            # an AssertionError, as MXNet raises
            raise AssertionError("allreduce_grads() when parameters are updated on kvstore is not "
                                 "supported. Try setting `update_on_kvstore` to False when "
                                 "creating trainer.")
        self._allreduce_grads()

    def _allreduce_grads(self):
        if self._kvstore is None:
            return
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            grads = param.list_grad()
            if param._stype != "default":
                # the store updates its row_sparse weight; devices pull rows on demand
                self._kvstore.push(i, grads, priority=-i)
                continue
            if self._update_on_kvstore:
                self._kvstore.pushpull(i, grads, out=param.list_data(), priority=-i)
            else:
                self._kvstore.pushpull(i, grads, priority=-i)

    def update(self, batch_size, ignore_stale_grad=False):
        """Applies the optimizer to the (already combined) gradients."""
        self._prepare()
        if self._kvstore is not None and self._update_on_kvstore:
            # an AssertionError, as MXNet raises
            raise AssertionError("update() when parameters are updated on kvstore is not "
                                 "supported. Try setting `update_on_kvstore` to False when "
                                 "creating trainer.")
        self._optimizer.rescale_grad = self._scale / batch_size
        self._check_fresh(ignore_stale_grad)
        self._update(ignore_stale_grad)

    def _check_fresh(self, ignore_stale_grad):
        """Before anything changes: every parameter must be initialized and (unless
        ``ignore_stale_grad``) have a gradient written by backward since the last step."""
        for param in self._params:
            if param.grad_req == "null":
                continue
            if param._data is None:
                if ignore_stale_grad:
                    continue
                raise MXNetError("Parameter '%s' has not been initialized (it is deferred until "
                                 "the first forward pass); run a forward and backward pass "
                                 "before Trainer.step" % param.name)
            if ignore_stale_grad or param._stype != "default":
                continue
            for data in param.list_data():
                if not data._fresh_grad:
                    raise StaleGradientError(
                        "Gradient of Parameter `%s` on context %s has not been updated by "
                        "backward since last `step`. This could mean a bug in your model that "
                        "made it only use a subset of the Parameters (Blocks) for this "
                        "iteration. If you are intentionally only using a subset, call step "
                        "with ignore_stale_grad=True to suppress this warning and skip "
                        "updating of Parameters with stale gradient"
                        % (param.name, str(data.context)))

    def _update(self, ignore_stale_grad=False):
        scaler = getattr(self, "_amp_loss_scaler", None)
        if scaler is not None:
            # contrib.amp: a step whose gradients overflowed is skipped
            overflow = scaler.has_overflow(self._params)
            scaler.update_scale(overflow)
            if overflow:
                for param in self._params:
                    if param._data is not None:
                        for arr in param.list_data():
                            arr._fresh_grad = False
                return
        for i, param in enumerate(self._params):
            if param.grad_req == "null" or param._data is None or param._stype != "default":
                continue
            for dev, (upd, arr, grad) in enumerate(zip(self._updaters, param.list_data(),
                                                        param.list_grad())):
                if not self._update_on_kvstore and (not ignore_stale_grad or arr._fresh_grad):
                    # update counts (lr schedules) are kept per device, as in MXNet
                    upd.optimizer._set_current_context(dev)
                    upd(i, grad, arr)
                arr._fresh_grad = False

    def save_states(self, fname):
        """Saves the optimizer's states (momentum, ...) to ``fname``."""
        self._prepare()
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
        else:
            with open(fname, "wb") as fout:
                fout.write(self._updaters[0].get_states(dump_optimizer=True))

    def load_states(self, fname):
        """Loads optimizer states saved by ``save_states``."""
        self._prepare()
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            self._optimizer = self._kvstore._updater.optimizer
        else:
            with open(fname, "rb") as f:
                states = f.read()
            for updater in self._updaters:
                updater.set_states(states)
                updater.optimizer = self._updaters[0].optimizer
            self._optimizer = self._updaters[0].optimizer
        self._optimizer.param_dict = {i: param for i, param in enumerate(self._params)}

