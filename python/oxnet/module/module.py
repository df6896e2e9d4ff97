"""``Module``: a Symbol bound to one executor per context (the batch split evenly
between them), with host (CPU) copies of the parameters, an optimizer, and MXNet
1.x's checkpoint files.

Parameters live in the executors while training; ``get_params`` copies them back to
the host dicts (averaging over devices), ``set_params`` / ``init_params`` copy host
values into every executor. With several contexts the gradients are summed on the
first device, the optimizer updates there, and the new weights are copied to the
others (what MXNet's local kvstore does with ``update_on_kvstore``).
"""

import logging
import os
import warnings
from collections import OrderedDict

import numpy as np

from .. import context as _ctx
from .. import ndarray as nd
from .. import optimizer as opt
from ..base import MXNetError
from ..executor import _groups, _placer
from ..initializer import InitDesc, Uniform
from ..io import DataDesc
from ..model import load_checkpoint
from .base_module import BaseModule, _check_input_names, _parse_descs, _require
from .executor_group import _prepare_group2ctxs

__all__ = ["Module"]


def _split(batch_size, num):
    """Even slices of ``batch_size`` over ``num`` devices (the first ones get one more
    when it does not divide)."""
    if batch_size < num:
        raise MXNetError("Module: batch size %d is smaller than the number of contexts %d"
                         % (batch_size, num))
    step, extra = divmod(batch_size, num)
    slices, start = [], 0
    for i in range(num):
        end = start + step + (1 if i < extra else 0)
        slices.append(slice(start, end))
        start = end
    return slices


def _take(arr, sl, axis, whole):
    """``arr``'s part ``sl`` along ``axis`` (the array itself when it is one slice)."""
    if whole:
        return arr
    if axis == 0:
        return arr[sl]
    return nd.slice_axis(arr, axis=axis, begin=sl.start, end=sl.stop)


class _ExecGroupView:
    """Read-only view of a Module's executors under MXNet's executor-group names."""

    def __init__(self, module):
        self.execs = module._execs
        self.param_names = list(module._param_names)
        self.aux_names = list(module._aux_names)
        self.data_names = list(module._data_names)
        self.label_names = list(module._label_names)
        self.grad_req = dict(module._grad_req_by_name)
        self.slices = module._slices
        self.contexts = module._context
        self.for_training = module.for_training
        self.inputs_need_grad = module.inputs_need_grad
        self.param_arrays = [[e.arg_dict[n] for e in self.execs] for n in self.param_names]
        self.grad_arrays = [[e.grad_dict[n] for e in self.execs] for n in self.param_names
                            if n in self.execs[0].grad_dict]
        self.aux_arrays = [[e.aux_dict[n] for e in self.execs] for n in self.aux_names]


class Module(BaseModule):
    """A Symbol turned into a trainable model.

    Parameters
    ----------
    symbol : Symbol
    data_names : list of str, default ('data',)
    label_names : list of str or None, default ('softmax_label',)
    logger : Logger
    context : Context or list of Context, default cpu()
        One executor per context; the batch is split between them.
    work_load_list : list of number, optional
        Accepted for compatibility; the batch is split evenly.
    fixed_param_names : list of str, optional
        Parameters that are not updated.
    state_names : list of str, optional
        Inputs that are states set with ``set_states`` (not data, not parameters).
    group2ctxs : dict or list of dict, optional
        Model parallelism: the device of each ``ctx_group`` (``mx.AttrScope``) per
        context -- one dict per context, or one dict whose values are a Context or a
        list of 1 or ``len(context)`` Contexts.
    compression_params :
        Accepted for compatibility (gradient compression is not supported; giving
        it raises).
    """

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",),
                 logger=logging, context=_ctx.cpu(), work_load_list=None,
                 fixed_param_names=None, state_names=None, group2ctxs=None,
                 compression_params=None):
        super().__init__(logger=logger)
        if isinstance(context, _ctx.Context):
            context = [context]
        self._context = list(context)
        if not self._context:
            raise ValueError("Module: context must name at least one device")
        if work_load_list is not None and len(work_load_list) != len(self._context):
            raise ValueError("Module: work_load_list has %d entries for %d contexts"
                             % (len(work_load_list), len(self._context)))
        # per context, {ctx_group: Context}: nodes and arrays of a group go there
        self._group2ctxs = _prepare_group2ctxs(group2ctxs, len(self._context))
        if compression_params:
            raise MXNetError("Module: compression_params (gradient compression) is not "
                             "supported")
        self._symbol = symbol
        self._data_names = list(data_names) if data_names is not None else []
        self._label_names = list(label_names) if label_names is not None else []
        self._state_names = list(state_names) if state_names is not None else []
        self._fixed_param_names = list(fixed_param_names) if fixed_param_names else []
        _check_input_names(symbol, self._data_names, "data", True)
        _check_input_names(symbol, self._label_names, "label", False)
        _check_input_names(symbol, self._state_names, "state", True)
        _check_input_names(symbol, self._fixed_param_names, "fixed_param", True)
        inputs = set(self._data_names + self._label_names + self._state_names)
        self._param_names = [a for a in symbol.list_arguments() if a not in inputs]
        self._aux_names = symbol.list_auxiliary_states()
        self._output_names = symbol.list_outputs()
        # the batch axis of each output, from its '__layout__' attribute (N: axis 0)
        self._output_axes = [max(DataDesc.get_batch_axis(symbol[i].attr("__layout__")), 0)
                             for i in range(len(self._output_names))]

        self._arg_params = None
        self._aux_params = None
        self._params_dirty = False
        self._optimizer = None
        self._kvstore = None
        self._update_on_kvstore = None
        self._updater = None
        self._preload_opt_states = None
        self._grad_req = None
        self._grad_req_by_name = None
        self._execs = []
        self._slices = []
        self._data_shapes = None
        self._label_shapes = None

    # ---- files ---------------------------------------------------------------
    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A Module from a checkpoint (``prefix-symbol.json``, ``prefix-%04d.params``;
        with ``load_optimizer_states`` also ``prefix-%04d.states``, read by
        ``init_optimizer``). ``kwargs`` go to the constructor; call ``bind`` next."""
        sym, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = "%s-%04d.states" % (prefix, epoch)
        return mod

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False,
                        remove_amp_cast=True):
        """Writes ``prefix-symbol.json``, ``prefix-%04d.params`` and, with
        ``save_optimizer_states``, ``prefix-%04d.states``."""
        self._symbol.save("%s-symbol.json" % prefix, remove_amp_cast=remove_amp_cast)
        param_name = "%s-%04d.params" % (prefix, epoch)
        self.save_params(param_name)
        logging.info('Saved checkpoint to "%s"', param_name)
        if save_optimizer_states:
            state_name = "%s-%04d.states" % (prefix, epoch)
            self.save_optimizer_states(state_name)
            logging.info('Saved optimizer state to "%s"', state_name)

    def save_optimizer_states(self, fname):
        """Writes the optimizer's states (pickled) to ``fname``."""
        _require(self.optimizer_initialized, "save_optimizer_states: call init_optimizer first")
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
            return
        with open(fname, "wb") as f:
            f.write(self._updater.get_states())

    def load_optimizer_states(self, fname):
        """Reads optimizer states written by ``save_optimizer_states``."""
        _require(self.optimizer_initialized, "load_optimizer_states: call init_optimizer first")
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            return
        with open(fname, "rb") as f:
            self._updater.set_states(f.read())

    # ---- names and shapes ----------------------------------------------------
    @property
    def data_names(self):
        """Names of the data inputs."""
        return self._data_names

    @property
    def label_names(self):
        """Names of the label inputs."""
        return self._label_names

    @property
    def output_names(self):
        """Names of the outputs."""
        return self._output_names

    @property
    def data_shapes(self):
        """DataDesc of the bound data inputs."""
        _require(self.binded, "data_shapes: bind the module first")
        return self._data_shapes

    @property
    def label_shapes(self):
        """DataDesc of the bound labels (None when bound without labels)."""
        _require(self.binded, "label_shapes: bind the module first")
        return self._label_shapes

    @property
    def output_shapes(self):
        """(name, shape) of every output for the whole batch."""
        _require(self.binded, "output_shapes: bind the module first")
        shapes = {d.name: d.shape for d in self._data_shapes + (self._label_shapes or [])}
        shapes = {k: v for k, v in shapes.items() if k in self._symbol.list_arguments()}
        _, out_shapes, _ = self._symbol.infer_shape(**shapes)
        return list(zip(self._output_names, out_shapes))

    # ---- parameters ----------------------------------------------------------
    def get_params(self):
        """(arg_params, aux_params): host copies of the current parameters."""
        _require(self.binded and self.params_initialized,
                 "get_params: bind the module and initialize its parameters first")
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initializes the parameters: values from ``arg_params`` / ``aux_params``
        where given, else from ``initializer`` (a missing one is an error unless
        ``allow_missing``). Names the network does not have are ignored, as in MXNet
        (``allow_extra`` matters to ``set_params(..., allow_missing=True)``)."""
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "init_params call ignored.", stacklevel=2)
            return
        _require(self.binded, "call bind before initializing the parameters")
        attrs = self._symbol.attr_dict()

        def fill(name, arr, given):
            if given is not None:
                if name in given:
                    src = given[name]
                    if src is not arr:
                        if tuple(src.shape) != tuple(arr.shape):
                            raise MXNetError("init_params: '%s' has shape %s, the network needs "
                                             "%s" % (name, tuple(src.shape), tuple(arr.shape)))
                        src.copyto(arr)
                    return
                if not allow_missing:
                    raise RuntimeError("%s is not presented" % name)
            if initializer is not None:
                initializer(InitDesc(name, attrs.get(name, None)), arr)

        for name in self._param_names:
            fill(name, self._arg_params[name], arg_params)
        for name in self._aux_names:
            fill(name, self._aux_params[name], aux_params)
        self.params_initialized = True
        self._params_dirty = False
        self._copy_params_to_devices()

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Sets the parameters from dicts of name to NDArray (every parameter needed
        unless ``allow_missing``)."""
        if self._set_params_shared(arg_params, aux_params, allow_missing, force_init, allow_extra):
            return
        _require(self.binded, "set_params: bind the module first")
        for exe in self._execs:
            exe.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def _copy_params_to_devices(self):
        for exe in self._execs:
            for name in self._param_names:
                self._arg_params[name].copyto(exe.arg_dict[name])
            for name in self._aux_names:
                self._aux_params[name].copyto(exe.aux_dict[name])

    def _sync_params_from_devices(self):
        n = len(self._execs)
        for names, host, get in ((self._param_names, self._arg_params, lambda e: e.arg_dict),
                                 (self._aux_names, self._aux_params, lambda e: e.aux_dict)):
            for name in names:
                copies = [get(e)[name].as_in_context(_ctx.cpu()) for e in self._execs]
                total = copies[0]
                for c in copies[1:]:
                    total = total + c
                (total / n if n > 1 else total).copyto(host[name])
        self._params_dirty = False

    # ---- binding ---------------------------------------------------------------
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Allocates the executors for inputs of ``data_shapes`` / ``label_shapes``
        (lists of (name, shape) or DataDesc).

        Parameters
        ----------
        for_training : bool
            Allocate gradients (parameters get ``grad_req``, fixed ones 'null').
        inputs_need_grad : bool
            Also compute gradients of the data inputs (``get_input_grads``).
        force_rebind : bool
            Bind again when already bound.
        shared_module : Module
            Share parameter arrays with this bound module.
        grad_req : str or dict of str to str
            'write', 'add' or 'null' (per argument name with a dict).
        """
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise MXNetError("bind: inputs_need_grad=True needs for_training=True")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._data_shapes = _parse_descs(self._data_names, data_shapes, "data")
        if label_shapes:
            self._label_shapes = _parse_descs(self._label_names, label_shapes, "label", False)
        else:
            self._label_shapes = None
        # the request as given (MXNet keeps it), and resolved per argument
        self._grad_req = grad_req
        self._grad_req_by_name = self._grad_reqs(grad_req)
        shared_execs = None
        if shared_module is not None:
            if not (isinstance(shared_module, Module) and shared_module.binded
                    and shared_module.params_initialized):
                raise MXNetError("bind: shared_module must be a bound Module with initialized "
                                 "parameters")
            if len(shared_module._execs) < len(self._context):
                raise MXNetError("bind: shared_module has fewer contexts than this module")
            shared_execs = shared_module._execs
        self._bind_execs(self._data_shapes, self._label_shapes, shared_execs)
        self.binded = True
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif self.params_initialized:
            # parameters loaded before binding (Module.load): copy them in
            self._copy_params_to_devices()
        else:
            exe = self._execs[0]
            self._arg_params = {n: nd.zeros(exe.arg_dict[n].shape, dtype=exe.arg_dict[n].dtype,
                                            stype=exe.arg_dict[n].stype)
                                for n in self._param_names}
            self._aux_params = {n: nd.zeros(exe.aux_dict[n].shape, dtype=exe.aux_dict[n].dtype)
                                for n in self._aux_names}

    @property
    def _exec_group(self):
        """The bound executors as MXNet's ``DataParallelExecutorGroup`` exposes them
        (``execs``, ``param_names``, ``data_names``, ``label_names``, ``grad_req``,
        ``slices``), for code that inspects a module's executors."""
        if not self.binded:
            return None
        return _ExecGroupView(self)

    def _reset_bind(self):
        self.binded = False
        self._execs = []
        self._slices = []
        self._data_shapes = None
        self._label_shapes = None

    def _grad_reqs(self, grad_req):
        reqs = {}
        for name in self._symbol.list_arguments():
            if isinstance(grad_req, dict):
                req = grad_req.get(name, "null")
            else:
                req = grad_req
            if name in self._param_names:
                reqs[name] = "null" if (not self.for_training
                                        or name in self._fixed_param_names) else req
            elif name in self._data_names:
                reqs[name] = req if self.inputs_need_grad else "null"
            else:
                reqs[name] = "null"
        return reqs

    def _batch_axis(self, desc):
        return max(DataDesc.get_batch_axis(getattr(desc, "layout", None)), 0)

    def _bind_execs(self, data_shapes, label_shapes, shared_execs=None):
        descs = data_shapes + (label_shapes or [])
        batch_size = data_shapes[0].shape[self._batch_axis(data_shapes[0])]
        self._slices = _split(batch_size, len(self._context))
        args = set(self._symbol.list_arguments())
        types = {d.name: d.dtype for d in descs if d.name in args}
        self._execs = []
        for i, (ctx, sl) in enumerate(zip(self._context, self._slices)):
            shapes = {}
            for d in descs:
                if d.name not in args:
                    continue
                shape = list(d.shape)
                shape[self._batch_axis(d)] = sl.stop - sl.start
                shapes[d.name] = tuple(shape)
            if shared_execs is None:
                exe = self._symbol.simple_bind(ctx, grad_req=self._grad_req_by_name,
                                               type_dict=types, group2ctx=self._group2ctxs[i],
                                               **shapes)
            else:
                exe = self._bind_shared(ctx, shapes, types, shared_execs[i],
                                        self._group2ctxs[i])
            self._execs.append(exe)
        # MB of planned buffers over the executors (MXNet sums its debug_str's figure)
        self._total_exec_bytes = sum(e.planned_bytes()[0] >> 20 for e in self._execs)

    def _bind_shared(self, ctx, shapes, types, shared, group2ctx=None):
        """An executor whose parameters, their gradients and the auxiliary states are
        ``shared``'s arrays (as MXNet's bucketing shares them); inputs are new."""
        sym = self._symbol
        place = _placer(sym, ctx, _groups(group2ctx), "bind")
        arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
        if arg_shapes is None:
            raise MXNetError("bind: cannot infer every shape of the network from %s" % shapes)
        arg_types = [t or np.float32 for t in sym.infer_type_partial(**types)[0]]
        args, grads = {}, {}
        for name, shape, dtype in zip(sym.list_arguments(), arg_shapes, arg_types):
            req = self._grad_req_by_name[name]
            if name in self._param_names:
                if name not in shared.arg_dict:
                    raise MXNetError("bind: parameter '%s' is not in the shared module" % name)
                src = shared.arg_dict[name]
                if tuple(src.shape) != tuple(shape):
                    raise MXNetError("bind: parameter '%s' has shape %s in the shared module, "
                                     "this network needs %s" % (name, tuple(src.shape),
                                                                tuple(shape)))
                args[name] = src
                if req != "null":
                    if name not in shared.grad_dict:
                        raise MXNetError("bind: the shared module has no gradient for '%s'"
                                         % name)
                    grads[name] = shared.grad_dict[name]
            else:
                args[name] = nd.zeros(shape, ctx=place(name), dtype=dtype)
                if req != "null":
                    grads[name] = nd.zeros(shape, ctx=place(name), dtype=dtype)
        aux = {}
        for name, shape in zip(sym.list_auxiliary_states(), aux_shapes):
            if name not in shared.aux_dict or tuple(shared.aux_dict[name].shape) != tuple(shape):
                raise MXNetError("bind: auxiliary state '%s' %s does not match the shared "
                                 "module" % (name, tuple(shape)))
            aux[name] = shared.aux_dict[name]
        return sym.bind(ctx, args, args_grad=grads, grad_req=self._grad_req_by_name,
                        aux_states=aux, group2ctx=group2ctx)

    def reshape(self, data_shapes, label_shapes=None):
        """Rebinds for new input shapes (e.g. another batch size), keeping the
        parameters."""
        _require(self.binded, "reshape: bind the module first")
        self._data_shapes = _parse_descs(self._data_names, data_shapes, "data")
        self._label_shapes = (_parse_descs(self._label_names, label_shapes, "label", False)
                              if label_shapes else None)
        descs = self._data_shapes + (self._label_shapes or [])
        batch_size = self._data_shapes[0].shape[self._batch_axis(self._data_shapes[0])]
        slices = _split(batch_size, len(self._context))
        args = set(self._symbol.list_arguments())
        new_execs = []
        for exe, sl in zip(self._execs, slices):
            shapes = {}
            for d in descs:
                if d.name in args:
                    shape = list(d.shape)
                    shape[self._batch_axis(d)] = sl.stop - sl.start
                    shapes[d.name] = tuple(shape)
            new_execs.append(exe.reshape(partial_shaping=True, allow_up_sizing=True, **shapes))
        self._execs = new_execs
        self._slices = slices

    # ---- optimizer -------------------------------------------------------------
    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        """Creates the optimizer (a name with ``optimizer_params``, or an Optimizer);
        its ``rescale_grad`` defaults to 1 / batch size."""
        _require(self.binded and self.params_initialized,
                 "init_optimizer: bind the module and initialize its parameters first")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        kv, update_on_kvstore = self._create_kvstore(kvstore)
        batch_size = self._data_shapes[0].shape[self._batch_axis(self._data_shapes[0])]
        if kv is not None and "dist" in kv.type and "_sync" in kv.type:
            # as MXNet: the servers sum the gradients of every worker's batch
            batch_size *= kv.num_workers
        rescale_grad = 1.0 / batch_size
        idx2name = dict(enumerate(self._param_names))
        if isinstance(optimizer, str):
            params = dict(optimizer_params)
            params.setdefault("rescale_grad", rescale_grad)
            optimizer = opt.create(optimizer, sym=self._symbol, param_idx2name=idx2name,
                                   **params)
        else:
            if not isinstance(optimizer, opt.Optimizer):
                raise MXNetError("init_optimizer: optimizer must be a name or an Optimizer, "
                                 "got %s" % type(optimizer).__name__)
            if optimizer.rescale_grad != rescale_grad:
                warnings.warn("Optimizer created manually outside Module but rescale_grad is "
                              "not normalized to 1.0/batch_size/num_workers (%s vs. %s). Is "
                              "this intended?" % (optimizer.rescale_grad, rescale_grad),
                              stacklevel=2)
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()
        self._optimizer = optimizer
        self._kvstore, self._update_on_kvstore = kv, update_on_kvstore
        if self._kvstore is not None:
            if self._update_on_kvstore:
                self._kvstore.set_optimizer(optimizer)
            # the store starts from the (identical) device copies of each parameter
            for index, name in enumerate(self._param_names):
                weights = [exe.arg_dict[name] for exe in self._execs]
                self._kvstore.init(index, weights[0])
                if self._update_on_kvstore:
                    self._kvstore.pull(index, weights, priority=-index)
        self._updater = None if self._update_on_kvstore else opt.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def _create_kvstore(self, kvstore):
        """(store, update_on_kvstore) as MXNet's model._create_kvstore: no store for one
        device; with several, the named (or given) store, running the optimizer unless
        MXNET_UPDATE_ON_KVSTORE=0."""
        from .. import kvstore as kvs
        if kvstore is None or (isinstance(kvstore, str) and len(self._execs) == 1
                               and "dist" not in kvstore):
            return None, False
        kv = kvs.create(kvstore) if isinstance(kvstore, str) else kvstore
        update_on_kvstore = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
        if not kv.is_capable(kvs.KVStoreBase.OPTIMIZER):
            update_on_kvstore = False
        return kv, update_on_kvstore

    def borrow_optimizer(self, shared_module):
        """Uses ``shared_module``'s optimizer (and its states)."""
        _require(shared_module.optimizer_initialized,
                 "borrow_optimizer: the shared module has no optimizer")
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    # ---- computation -----------------------------------------------------------
    def _load(self, arrays, descs, exe_dicts):
        whole = len(self._execs) == 1
        for arr, desc in zip(arrays, descs):
            if arr is None:
                continue
            axis = self._batch_axis(desc)
            for sl, d in zip(self._slices, exe_dicts):
                if desc.name in d:
                    src = _take(arr, sl, axis, whole)
                    if not isinstance(src, nd.NDArray):
                        src = nd.array(src)
                    src.copyto(d[desc.name])

    def forward(self, data_batch, is_train=None):
        """Runs the network on ``data_batch`` (a DataBatch); ``is_train`` defaults to
        ``for_training``. A batch of another shape rebinds first."""
        _require(self.binded and self.params_initialized,
                 "forward: bind the module and initialize its parameters first")
        if is_train is None:
            is_train = self.for_training
        new_shapes = tuple(tuple(d.shape) for d in data_batch.data)
        if new_shapes != tuple(tuple(d.shape) for d in self._data_shapes):
            if getattr(data_batch, "provide_data", None):
                new_dshape = data_batch.provide_data
            else:
                new_dshape = [DataDesc(d.name, s, d.dtype, d.layout)
                              for d, s in zip(self._data_shapes, new_shapes)]
            if getattr(data_batch, "provide_label", None):
                new_lshape = data_batch.provide_label
            elif getattr(data_batch, "label", None) and self._label_shapes:
                new_lshape = [DataDesc(d.name, a.shape, d.dtype, d.layout)
                              for d, a in zip(self._label_shapes, data_batch.label)]
            else:
                new_lshape = None
            self.reshape(new_dshape, new_lshape)
        arg_dicts = [e.arg_dict for e in self._execs]
        self._load(data_batch.data, self._data_shapes, arg_dicts)
        if getattr(data_batch, "label", None) and self._label_shapes:
            self._load(data_batch.label, self._label_shapes, arg_dicts)
        for exe in self._execs:
            exe.forward(is_train=is_train)

    def backward(self, out_grads=None):
        """Computes the gradients (``out_grads``: head gradients for outputs that are
        not loss layers)."""
        _require(self.binded and self.params_initialized,
                 "backward: bind the module and initialize its parameters first")
        _require(self.for_training, "backward: the module was bound with for_training=False")
        whole = len(self._execs) == 1
        for exe, sl in zip(self._execs, self._slices):
            grads = None
            if out_grads is not None:
                grads = [_take(g, sl, axis, whole) for g, axis in
                         zip(out_grads if isinstance(out_grads, (list, tuple)) else [out_grads],
                             self._output_axes)]
            exe.backward(out_grads=grads)

    def update(self):
        """Applies the optimizer to every parameter with its gradient of the last
        ``backward``."""
        _require(self.binded and self.params_initialized and self.optimizer_initialized,
                 "update: bind the module, initialize its parameters and the optimizer first")
        self._params_dirty = True
        first = self._execs[0]
        for index, name in enumerate(self._param_names):
            if self._grad_req_by_name.get(name, "null") == "null":
                continue
            if self._kvstore is not None:
                grads = [exe.grad_dict[name] for exe in self._execs]
                if self._update_on_kvstore:
                    # the store sums the gradients, runs the optimizer, hands back weights
                    self._kvstore.push(index, grads, priority=-index)
                    self._kvstore.pull(index, [exe.arg_dict[name] for exe in self._execs],
                                       priority=-index)
                    continue
                self._kvstore.pushpull(index, grads, priority=-index)
                # one state per (parameter, device), as MXNet's _update_params keys them
                n = len(self._execs)
                for k, exe in enumerate(self._execs):
                    self._updater(index * n + k, exe.grad_dict[name], exe.arg_dict[name])
                continue
            weight = first.arg_dict[name]
            grad = first.grad_dict[name]
            if len(self._execs) > 1:
                grad = grad.copy()
                for exe in self._execs[1:]:
                    grad += exe.grad_dict[name].as_in_context(weight.context)
            self._updater(index, grad, weight)
            for exe in self._execs[1:]:
                weight.copyto(exe.arg_dict[name])

    def _merge(self, per_exec, merge_multi_context, axes=None):
        """Per output, the device arrays (``[[dev0, dev1], ...]``) or, merged, one
        array concatenated along the batch axis (``axes``: per output, default 0)."""
        by_output = [list(x) for x in zip(*per_exec)]
        if not merge_multi_context:
            return by_output
        axes = axes or [0] * len(by_output)
        return [arrs[0] if len(arrs) == 1 or arrs[0] is None else
                nd.concat(*[a.as_in_context(arrs[0].context) for a in arrs], dim=axis)
                for arrs, axis in zip(by_output, axes)]

    def get_outputs(self, merge_multi_context=True):
        """The outputs of the last ``forward``."""
        _require(self.binded and self.params_initialized,
                 "get_outputs: bind the module and initialize its parameters first")
        return self._merge([e.outputs for e in self._execs], merge_multi_context,
                           self._output_axes)

    def get_input_grads(self, merge_multi_context=True):
        """Gradients of the data inputs (bound with ``inputs_need_grad=True``)."""
        _require(self.binded and self.params_initialized and self.inputs_need_grad,
                 "get_input_grads: bind with inputs_need_grad=True first")
        # grad_req 'null' for the data: None, as in MXNet
        return self._merge([[e.grad_dict.get(n) for n in self._data_names] for e in self._execs],
                           merge_multi_context)

    def get_states(self, merge_multi_context=True):
        """The arrays of the ``state_names`` inputs."""
        _require(self.binded and self.params_initialized,
                 "get_states: bind the module and initialize its parameters first")
        return self._merge([[e.arg_dict[n] for n in self._state_names] for e in self._execs],
                           merge_multi_context)

    def set_states(self, states=None, value=None):
        """Sets the state inputs from arrays (per state, per device) or to a scalar
        ``value``."""
        _require(self.binded and self.params_initialized,
                 "set_states: bind the module and initialize its parameters first")
        if (states is None) == (value is None):
            raise ValueError("set_states: give exactly one of states and value")
        for k, name in enumerate(self._state_names):
            for i, exe in enumerate(self._execs):
                if value is not None:
                    exe.arg_dict[name][:] = value
                else:
                    states[k][i].copyto(exe.arg_dict[name])

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Updates ``eval_metric`` with the outputs of the last ``forward`` against
        ``labels`` (per device when ``pre_sliced``)."""
        whole = len(self._execs) == 1
        for i, (exe, sl) in enumerate(zip(self._execs, self._slices)):
            if pre_sliced:
                label_part = labels[i]
            else:
                label_part = [_take(lb, sl, 0, whole) for lb in (labels or [])]
            label_dict = OrderedDict(zip(self._label_names, label_part))
            preds = OrderedDict(zip(self._output_names, exe.outputs))
            eval_metric.update_dict(label_dict, preds)

    def install_monitor(self, mon):
        """Installs ``mon`` (an ``mx.monitor.Monitor``) on every executor."""
        _require(self.binded, "install_monitor: bind the module first")
        for exe in self._execs:
            mon.install(exe)
