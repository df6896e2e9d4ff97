"""``SequentialModule``: modules run one after another, each one's outputs the next
one's data; backward passes each module's input gradients to the one before."""

import copy
import logging

from ..initializer import Uniform
from .base_module import BaseModule, _require

__all__ = ["SequentialModule"]


class SequentialModule(BaseModule):
    """A chain of modules.

    ``add(module, take_labels=False, auto_wiring=False)`` appends a module:
    ``take_labels`` gives it the labels (and makes it the one whose outputs the
    metric sees), ``auto_wiring`` renames the previous outputs to its data names.
    """

    META_TAKE_LABELS = "take_labels"
    META_AUTO_WIRING = "auto_wiring"

    def __init__(self, logger=logging):
        super().__init__(logger=logger)
        self._modules = []
        self._metas = []
        self._label_shapes = None
        self._data_shapes = None
        self._meta_keys = {self.META_TAKE_LABELS, self.META_AUTO_WIRING}

    def add(self, module, **kwargs):
        """Appends ``module`` (options: take_labels, auto_wiring); returns self."""
        unknown = [k for k in kwargs if k not in self._meta_keys]
        if unknown:
            raise ValueError('Unknown meta "%s", a typo?' % unknown[0])
        self._modules.append(module)
        self._metas.append(kwargs)
        self.binded = False
        self.params_initialized = False
        self.optimizer_initialized = False
        return self

    @property
    def data_names(self):
        return self._modules[0].data_names if self._modules else []

    @property
    def output_names(self):
        return self._modules[-1].output_names if self._modules else []

    @property
    def data_shapes(self):
        _require(self.binded, "data_shapes: bind the module first")
        return self._modules[0].data_shapes

    @property
    def label_shapes(self):
        _require(self.binded, "label_shapes: bind the module first")
        return self._label_shapes

    @property
    def output_shapes(self):
        _require(self.binded, "output_shapes: bind the module first")
        return self._modules[-1].output_shapes

    def get_params(self):
        """The parameters of all the modules in two dicts."""
        _require(self.binded and self.params_initialized,
                 "get_params: bind the module and initialize its parameters first")
        arg_params, aux_params = {}, {}
        for module in self._modules:
            arg, aux = module.get_params()
            arg_params.update(arg)
            aux_params.update(aux)
        return arg_params, aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initializes every module's parameters; two modules may not share a
        parameter name."""
        if self.params_initialized and not force_init:
            return
        _require(self.binded, "call bind before initializing the parameters")
        for module in self._modules:
            module.init_params(initializer=initializer, arg_params=arg_params,
                               aux_params=aux_params, allow_missing=allow_missing,
                               force_init=force_init, allow_extra=allow_extra)
        seen_arg, seen_aux = {}, {}
        for i, module in enumerate(self._modules):
            arg, aux = module.get_params()
            for seen, names in ((seen_arg, arg), (seen_aux, aux)):
                for name in names:
                    if name in seen:
                        raise ValueError(
                            'Duplicated parameter names: name "%s" in layer %d (%s) is already '
                            "used in layer %d (%s)." % (name, i, type(module),
                                                        seen[name],
                                                        type(self._modules[seen[name]])))
                    seen[name] = i
        self.params_initialized = True

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Binds each module to the previous one's output shapes (the first to
        ``data_shapes``); modules after the first compute input gradients when
        training."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise ValueError("bind: inputs_need_grad=True needs for_training=True")
        if shared_module is not None:
            raise ValueError("Shared module is not supported")
        if not self._modules:
            raise ValueError("Attempting to bind an empty SequentialModule")
        self.binded = True
        self._label_shapes = label_shapes
        shapes = data_shapes
        takes_labels = False
        for i, (module, meta) in enumerate(zip(self._modules, self._metas)):
            labels = None
            if meta.get(self.META_TAKE_LABELS, False):
                labels = label_shapes
                takes_labels = True
            if meta.get(self.META_AUTO_WIRING, False):
                names = module.data_names
                if len(names) != len(shapes):
                    raise ValueError("auto_wiring: module %d has %d data inputs, the previous "
                                     "one gives %d outputs" % (i, len(names), len(shapes)))
                shapes = [(name, s[1]) for name, s in zip(names, shapes)]
            module.bind(data_shapes=shapes, label_shapes=labels, for_training=for_training,
                        inputs_need_grad=bool(inputs_need_grad or (for_training and i > 0)),
                        force_rebind=force_rebind, shared_module=None, grad_req=grad_req)
            shapes = module.output_shapes
        if not takes_labels:
            self._label_shapes = None

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        """Creates an optimizer in every module."""
        _require(self.binded and self.params_initialized,
                 "init_optimizer: bind the module and initialize its parameters first")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        for module in self._modules:
            module.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                                  optimizer_params=optimizer_params, force_init=force_init)
        self.optimizer_initialized = True

    def forward(self, data_batch, is_train=None):
        """Runs the modules in order, each on the previous one's outputs."""
        _require(self.binded and self.params_initialized,
                 "forward: bind the module and initialize its parameters first")
        batch = copy.copy(data_batch)
        for i, module in enumerate(self._modules):
            module.forward(batch, is_train=is_train)
            if i + 1 == len(self._modules):
                break
            batch.data = module.get_outputs()
            if hasattr(batch, "provide_data"):
                names = [s[0] for s in module.output_shapes]
                batch.provide_data = [(n, x.shape) for n, x in zip(names, batch.data)]

    def backward(self, out_grads=None):
        """Backward through the modules in reverse order."""
        _require(self.binded and self.params_initialized,
                 "backward: bind the module and initialize its parameters first")
        for i in reversed(range(len(self._modules))):
            module = self._modules[i]
            module.backward(out_grads=out_grads)
            if i == 0:
                break
            out_grads = module.get_input_grads()

    def update(self):
        _require(self.binded and self.params_initialized and self.optimizer_initialized,
                 "update: bind the module, initialize its parameters and the optimizer first")
        for module in self._modules:
            module.update()

    def get_outputs(self, merge_multi_context=True):
        _require(self.binded and self.params_initialized,
                 "get_outputs: bind the module and initialize its parameters first")
        return self._modules[-1].get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        _require(self.binded and self.params_initialized and self.inputs_need_grad,
                 "get_input_grads: bind with inputs_need_grad=True first")
        return self._modules[0].get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Updates ``eval_metric`` with the outputs of the modules that take labels."""
        _require(self.binded and self.params_initialized,
                 "update_metric: bind the module and initialize its parameters first")
        for meta, module in zip(self._metas, self._modules):
            if meta.get(self.META_TAKE_LABELS, False):
                module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        _require(self.binded, "install_monitor: bind the module first")
        for module in self._modules:
            module.install_monitor(mon)
