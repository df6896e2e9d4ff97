"""``BucketingModule``: one ``Module`` per bucket key (e.g. a sequence length), all
sharing the parameters, gradients, auxiliary states and optimizer of the default
bucket's module. ``sym_gen(bucket_key)`` returns ``(symbol, data_names,
label_names)``; each batch's ``bucket_key`` picks (and on first sight binds) its
module."""

import logging

import numpy as np

from .. import context as _ctx
from .. import name as _name
from .. import ndarray as nd
from .. import symbol as _sym
from ..initializer import Uniform
from .base_module import BaseModule, _require
from .module import Module

__all__ = ["BucketingModule"]


class BucketingModule(BaseModule):
    """Modules for inputs of several shapes sharing one set of parameters.

    Parameters
    ----------
    sym_gen : callable
        ``sym_gen(bucket_key) -> (symbol, data_names, label_names)``.
    default_bucket_key : hashable
        The key of the largest bucket; its module owns the parameters.
    logger, context, work_load_list, fixed_param_names, state_names, group2ctxs,
    compression_params :
        As for :class:`Module`.
    """

    def __init__(self, sym_gen, default_bucket_key=None, logger=logging, context=_ctx.cpu(),
                 work_load_list=None, fixed_param_names=None, state_names=None,
                 group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise ValueError("BucketingModule: default_bucket_key is required")
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        self._context = context
        self._work_load_list = work_load_list
        self._fixed_param_names = fixed_param_names
        self._state_names = state_names
        self._group2ctxs = group2ctxs
        self._compression_params = compression_params
        # check the names now, as Module does
        Module(symbol, data_names, label_names, logger=logger, context=context,
               work_load_list=work_load_list, fixed_param_names=fixed_param_names,
               state_names=state_names, group2ctxs=group2ctxs,
               compression_params=compression_params)
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None
        self._params_dirty = False
        self._monitor = None
        self._grad_req = None
        self._preloaded = None  # (arg_params, aux_params) read by load, set at bind
        self._saved_symbols = {}  # bucket key -> Symbol read by load

    def _reset_bind(self):
        self.binded = False
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None

    def _call_sym_gen(self, *args, **kwargs):
        # each bucket's symbol gets its automatic names from fresh counters, as in
        # MXNet, so every bucket names its arguments alike (embedding0_weight, ...)
        with _name.NameManager():
            return self._sym_gen(*args, **kwargs)

    def _new_module(self, bucket_key):
        symbol, data_names, label_names = self._call_sym_gen(bucket_key)
        symbol = self._saved_symbols.get(bucket_key, symbol)
        return Module(symbol, data_names, label_names, logger=self.logger,
                      context=self._context, work_load_list=self._work_load_list,
                      fixed_param_names=self._fixed_param_names, state_names=self._state_names,
                      group2ctxs=self._group2ctxs, compression_params=self._compression_params)

    # ---- names and shapes ------------------------------------------------------
    @property
    def data_names(self):
        """Names of the data inputs (of the current bucket once bound)."""
        if self.binded:
            return self._curr_module.data_names
        return self._call_sym_gen(self._default_bucket_key)[1]

    @property
    def output_names(self):
        """Names of the outputs (of the current bucket once bound)."""
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    @property
    def data_shapes(self):
        _require(self.binded, "data_shapes: bind the module first")
        return self._curr_module.data_shapes

    @property
    def label_shapes(self):
        _require(self.binded, "label_shapes: bind the module first")
        return self._curr_module.label_shapes

    @property
    def output_shapes(self):
        _require(self.binded, "output_shapes: bind the module first")
        return self._curr_module.output_shapes

    @property
    def symbol(self):
        """The current bucket's Symbol."""
        _require(self.binded, "symbol: bind the module first")
        return self._curr_module.symbol

    # ---- parameters --------------------------------------------------------------
    def get_params(self):
        """(arg_params, aux_params): host copies of the shared parameters."""
        _require(self.params_initialized, "get_params: initialize the parameters first")
        self._curr_module._params_dirty = self._params_dirty
        params = self._curr_module.get_params()
        self._params_dirty = False
        return params

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Sets the shared parameters."""
        if self._set_params_shared(arg_params, aux_params, allow_missing, force_init, allow_extra):
            return
        self._curr_module.set_params(arg_params, aux_params, allow_missing=allow_missing,
                                     force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initializes the shared parameters (see :meth:`Module.init_params`)."""
        if self.params_initialized and not force_init:
            return
        _require(self.binded, "call bind before initializing the parameters")
        self._curr_module.init_params(initializer=initializer, arg_params=arg_params,
                                      aux_params=aux_params, allow_missing=allow_missing,
                                      force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = False
        self.params_initialized = True

    def get_states(self, merge_multi_context=True):
        _require(self.binded and self.params_initialized,
                 "get_states: bind the module and initialize its parameters first")
        return self._curr_module.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        _require(self.binded and self.params_initialized,
                 "set_states: bind the module and initialize its parameters first")
        self._curr_module.set_states(states, value)

    # ---- binding -------------------------------------------------------------------
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Binds the default bucket's module (its shapes are the largest)."""
        if self.params_initialized:
            arg_params, aux_params = self.get_params()
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            raise ValueError("shared_module for BucketingModule is not supported")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.binded = True
        self._grad_req = grad_req
        module = self._new_module(self._default_bucket_key)
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                    force_rebind=False, shared_module=None, grad_req=grad_req)
        self._curr_module = module
        self._curr_bucket_key = self._default_bucket_key
        self._buckets[self._default_bucket_key] = module
        if self.params_initialized:
            self.set_params(arg_params, aux_params)
        elif self._preloaded is not None:
            self.init_params(arg_params=self._preloaded[0], aux_params=self._preloaded[1])
            self._preloaded = None

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        """Makes ``bucket_key``'s module current, binding it (sharing the default
        module's arrays) the first time."""
        _require(self.binded, "call bind before switching bucket")
        if bucket_key not in self._buckets:
            module = self._new_module(bucket_key)
            module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                        self._curr_module.inputs_need_grad, force_rebind=False,
                        shared_module=self._buckets[self._default_bucket_key],
                        grad_req=self._grad_req)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
            if self.optimizer_initialized:
                module.borrow_optimizer(self._buckets[self._default_bucket_key])
            self._buckets[bucket_key] = module
        self._curr_module = self._buckets[bucket_key]
        self._curr_bucket_key = bucket_key

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        """Creates the optimizer on the current module; every bucket uses it."""
        _require(self.binded and self.params_initialized,
                 "init_optimizer: bind the module and initialize its parameters first")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params,
                                         force_init=force_init)
        for mod in self._buckets.values():
            if mod is not self._curr_module:
                mod.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    # ---- computation -----------------------------------------------------------------
    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Binds the module of ``data_batch``'s bucket ahead of its forward."""
        _require(self.binded and self.params_initialized,
                 "prepare: bind the module and initialize its parameters first")
        original = self._curr_bucket_key
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data,
                           data_batch.provide_label)
        self._curr_module.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self.switch_bucket(original, None, None)

    def forward(self, data_batch, is_train=None):
        """Runs ``data_batch`` on its bucket's module (``data_batch.bucket_key``,
        ``provide_data``, ``provide_label``)."""
        _require(self.binded and self.params_initialized,
                 "forward: bind the module and initialize its parameters first")
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data,
                           data_batch.provide_label)
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads=None):
        _require(self.binded and self.params_initialized,
                 "backward: bind the module and initialize its parameters first")
        self._curr_module.backward(out_grads=out_grads)

    def update(self):
        _require(self.binded and self.params_initialized and self.optimizer_initialized,
                 "update: bind the module, initialize its parameters and the optimizer first")
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context=True):
        _require(self.binded and self.params_initialized,
                 "get_outputs: bind the module and initialize its parameters first")
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        _require(self.binded and self.params_initialized and self.inputs_need_grad,
                 "get_input_grads: bind with inputs_need_grad=True first")
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        _require(self.binded and self.params_initialized,
                 "update_metric: bind the module and initialize its parameters first")
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        """Installs ``mon`` on every bucket's module (and the ones bound later)."""
        _require(self.binded, "install_monitor: bind the module first")
        self._monitor = mon
        for mod in self._buckets.values():
            mod.install_monitor(mon)

    # ---- files -----------------------------------------------------------------------
    def save_checkpoint(self, prefix, epoch, remove_amp_cast=False):
        """Writes ``prefix-%04d.params``, ``prefix-<key>-symbol.json`` for every bound
        bucket and ``prefix.buckets`` (the integer keys)."""
        if not self._buckets:
            raise ValueError("Empty BucketingModule cannot be saved")
        self.save_params("%s-%04d.params" % (prefix, epoch))
        for key in self._buckets:
            symbol, _, _ = self._sym_gen(key)
            symbol.save("%s-%s-symbol.json" % (prefix, key), remove_amp_cast=remove_amp_cast)
        nd.save("%s.buckets" % prefix, nd.array(list(self._buckets.keys()), dtype=np.int32))

    @staticmethod
    def load(prefix, epoch, sym_gen=None, default_bucket_key=None, **kwargs):
        """A BucketingModule from ``save_checkpoint``'s files; ``sym_gen`` and
        ``default_bucket_key`` as when it was saved. ``bind`` sets the loaded
        parameters."""
        if sym_gen is None:
            raise ValueError("sym_gen is required for loading BucketingModule")
        if default_bucket_key is None:
            raise ValueError("default_bucket_key is required for loading BucketingModule")
        keys = [int(k) for k in nd.load("%s.buckets" % prefix)[0].asnumpy()]
        sym_dict = {key: _sym.load("%s-%s-symbol.json" % (prefix, key)) for key in keys}
        loaded = nd.load("%s-%04d.params" % (prefix, epoch))
        arg_params = {k[4:]: v for k, v in loaded.items() if k.startswith("arg:")}
        aux_params = {k[4:]: v for k, v in loaded.items() if k.startswith("aux:")}
        return BucketingModule.load_dict(sym_dict, sym_gen, default_bucket_key, arg_params,
                                         aux_params, **kwargs)

    @staticmethod
    def load_dict(sym_dict=None, sym_gen=None, default_bucket_key=None, arg_params=None,
                  aux_params=None, **kwargs):
        """A BucketingModule from a dict of bucket key to Symbol and the parameters;
        ``bind`` sets the parameters."""
        for value, what in ((sym_dict, "sym_dict needs"), (arg_params, "arg_params need"),
                            (aux_params, "aux_params need"),
                            (default_bucket_key, "default_bucket_key needs")):
            if value is None:
                raise ValueError("%s to be provided for BucketingModule.load_dict" % what)
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        mod._saved_symbols = dict(sym_dict)
        mod._preloaded = (arg_params, aux_params)
        return mod
