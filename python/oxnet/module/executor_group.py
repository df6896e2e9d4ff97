"""``DataParallelExecutorGroup``: one executor per context for a Symbol, the batch
split between them by ``workload``, sharing parameter arrays (and, through
``shared_data_arrays``, the other input arrays) with another group, as MXNet's
bucketing modules do."""

from collections import OrderedDict

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from ..executor import _groups, _placer
from ..io import DataDesc

__all__ = ["DataParallelExecutorGroup"]


def _prepare_group2ctxs(group2ctxs, ctx_len):
    """``group2ctxs`` as one {group: Context} dict (or None) per context, as MXNet
    reads it: a list of dicts (one per context), or one dict whose values are a
    Context (the same for every context) or a list of 1 or ``ctx_len`` Contexts."""
    from ..context import Context
    if group2ctxs is None:
        return [None] * ctx_len
    if isinstance(group2ctxs, (list, tuple)):
        if len(group2ctxs) != ctx_len:
            raise MXNetError("group2ctxs: a list needs one dict per context (%d), got %d"
                             % (ctx_len, len(group2ctxs)))
        return list(group2ctxs)
    if isinstance(group2ctxs, dict):
        ret = [{} for _ in range(ctx_len)]
        for k, v in group2ctxs.items():
            if isinstance(v, Context):
                ctxs = [v] * ctx_len
            else:
                v = list(v)
                if len(v) == 1:
                    ctxs = v * ctx_len
                elif len(v) == ctx_len:
                    ctxs = v
                else:
                    raise MXNetError("group2ctxs['%s']: needs 1 or %d contexts, got %d"
                                     % (k, ctx_len, len(v)))
            for i in range(ctx_len):
                ret[i][k] = ctxs[i]
        return ret
    raise MXNetError("group2ctxs should be a list of dicts of str to Context, or a dict of "
                     "str to Context or list of Context; got %s" % type(group2ctxs).__name__)


def _split_input_slice(batch_size, work_load_list):
    """Slices of ``batch_size`` proportional to ``work_load_list``."""
    total = float(sum(work_load_list))
    sizes = [int(round(w * batch_size / total)) for w in work_load_list]
    sizes[-1] = batch_size - sum(sizes[:-1])
    slices, start = [], 0
    for s in sizes:
        if s <= 0:
            raise MXNetError("DataParallelExecutorGroup: workload %s leaves a context with "
                             "no part of a batch of %d" % (work_load_list, batch_size))
        slices.append(slice(start, start + s))
        start += s
    return slices


def _descs(shapes):
    return [s if isinstance(s, DataDesc) else DataDesc(*s) for s in (shapes or [])]


class DataParallelExecutorGroup:
    """Executors of ``symbol`` on ``contexts`` for inputs of ``data_shapes`` /
    ``label_shapes``; ``param_names`` are the learnable arguments (gradients with
    ``grad_req`` when ``for_training``), every other argument is an input whose array
    is kept in ``shared_data_arrays[i]`` (shared with ``shared_group``'s when given,
    reused there when the shape matches)."""

    def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names,
                 for_training, inputs_need_grad, shared_group=None, logger=None,
                 fixed_param_names=None, grad_req="write", state_names=None,
                 group2ctxs=None):
        self.symbol = symbol
        self.contexts = list(contexts)
        self.workload = list(workload) if workload else [1] * len(self.contexts)
        self.param_names = list(param_names)
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.fixed_param_names = list(fixed_param_names or [])
        self.state_names = list(state_names or [])
        self.logger = logger
        self.group2ctxs = _prepare_group2ctxs(group2ctxs, len(self.contexts))
        if shared_group is not None:
            self.shared_data_arrays = shared_group.shared_data_arrays
        else:
            self.shared_data_arrays = [{} for _ in self.contexts]
        self.data_shapes = _descs(data_shapes)
        self.label_shapes = _descs(label_shapes) if label_shapes else None
        self.data_names = [d.name for d in self.data_shapes]
        self.label_names = [d.name for d in self.label_shapes or []]

        self.grad_req = {}
        for name in self.arg_names:
            req = grad_req.get(name, "null") if isinstance(grad_req, dict) else grad_req
            if name in self.param_names:
                self.grad_req[name] = "null" if (not for_training or
                                                 name in self.fixed_param_names) else req
            elif name in self.data_names:
                self.grad_req[name] = req if inputs_need_grad else "null"
            else:
                self.grad_req[name] = "null"
        self.bind_exec(self.data_shapes, self.label_shapes, shared_group)

    def _batch_axis(self, desc):
        return max(DataDesc.get_batch_axis(getattr(desc, "layout", None)), 0)

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
        """(Re)binds the executors for these input shapes."""
        descs = _descs(data_shapes) + _descs(label_shapes)
        batch_size = descs[0].shape[self._batch_axis(descs[0])]
        self.batch_size = batch_size
        self.slices = _split_input_slice(batch_size, self.workload)
        self.execs = []
        for i, ctx in enumerate(self.contexts):
            shapes, types = {}, {}
            for d in descs:
                shape = list(d.shape)
                sl = self.slices[i]
                shape[self._batch_axis(d)] = sl.stop - sl.start
                shapes[d.name] = tuple(shape)
                types[d.name] = d.dtype
            shared_exec = None if shared_group is None else shared_group.execs[i]
            self.execs.append(self._bind_ith_exec(i, ctx, shapes, types, shared_exec))
        # MB of planned buffers over the executors, as MXNet's group totals them
        self._total_exec_bytes = sum(e.planned_bytes()[0] >> 20 for e in self.execs)
        self.data_arrays = [[(self.slices[i], e.arg_dict[n]) for i, e in enumerate(self.execs)]
                            for n in self.data_names]
        self.label_arrays = [[(self.slices[i], e.arg_dict[n])
                              for i, e in enumerate(self.execs)]
                             for n in self.label_names if n in self.arg_names]
        self.param_arrays = [[e.arg_dict[n] for e in self.execs] for n in self.param_names]
        self.grad_arrays = [[e.grad_dict[n] for e in self.execs] for n in self.param_names
                            if self.grad_req[n] != "null"] if self.for_training else []
        self.aux_arrays = [[e.aux_dict[n] for e in self.execs] for n in self.aux_names]
        self.input_grad_arrays = [[e.grad_dict[n] for e in self.execs]
                                  for n in self.data_names] if self.inputs_need_grad else []

    def _bind_ith_exec(self, i, ctx, shapes, types, shared_exec):
        sym = self.symbol
        arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
        if arg_shapes is None:
            raise MXNetError("DataParallelExecutorGroup: cannot infer the shapes of every "
                             "argument from %s" % shapes)
        arg_types = [t or np.float32 for t in sym.infer_type_partial(**types)[0]]
        shared_data = self.shared_data_arrays[i]
        group2ctx = self.group2ctxs[i]
        place = _placer(sym, ctx, _groups(group2ctx), "DataParallelExecutorGroup")
        args, grads = {}, {}
        for name, shape, dtype in zip(self.arg_names, arg_shapes, arg_types):
            req = self.grad_req[name]
            ctx = place(name)
            if name in self.param_names:
                if shared_exec is not None and name in shared_exec.arg_dict:
                    arr = shared_exec.arg_dict[name]
                    if tuple(arr.shape) != tuple(shape):
                        raise MXNetError("DataParallelExecutorGroup: shared parameter '%s' "
                                         "has shape %s, this symbol needs %s"
                                         % (name, tuple(arr.shape), tuple(shape)))
                    args[name] = arr
                    if req != "null":
                        grads[name] = shared_exec.grad_dict[name]
                    continue
                args[name] = nd.zeros(shape, ctx=ctx, dtype=dtype)
                if req != "null":
                    grads[name] = nd.zeros(shape, ctx=ctx, dtype=dtype)
            else:
                arr = shared_data.get(name)
                if arr is None or tuple(arr.shape) != tuple(shape):
                    arr = nd.zeros(shape, ctx=ctx, dtype=dtype)
                    shared_data[name] = arr
                args[name] = arr
                if req != "null":
                    grads[name] = nd.zeros(shape, ctx=ctx, dtype=dtype)
        aux = {}
        for name, shape in zip(self.aux_names, aux_shapes):
            if shared_exec is not None and name in shared_exec.aux_dict and \
                    tuple(shared_exec.aux_dict[name].shape) == tuple(shape):
                aux[name] = shared_exec.aux_dict[name]
            else:
                aux[name] = nd.zeros(shape, ctx=place(name))
        return sym.bind(self.contexts[i], args, args_grad=grads, grad_req=self.grad_req,
                        aux_states=aux, group2ctx=group2ctx)

    def set_params(self, arg_params, aux_params, allow_extra=False):
        """Copies ``arg_params``/``aux_params`` into every executor."""
        for exe in self.execs:
            for name, arr in arg_params.items():
                if name in exe.arg_dict:
                    arr.copyto(exe.arg_dict[name])
                elif not allow_extra:
                    raise MXNetError("set_params: '%s' is not an argument" % name)
            for name, arr in aux_params.items():
                if name in exe.aux_dict:
                    arr.copyto(exe.aux_dict[name])
                elif not allow_extra:
                    raise MXNetError("set_params: '%s' is not an auxiliary state" % name)

    def get_params(self, arg_params, aux_params):
        """Writes the average over devices of each parameter into the given dicts."""
        for name, block in zip(self.param_names, self.param_arrays):
            avg = sum(w.copyto(block[0].context) for w in block) / len(block)
            arg_params[name] = avg.as_in_context(arg_params[name].context) \
                if name in arg_params else avg
        for name, block in zip(self.aux_names, self.aux_arrays):
            avg = sum(w.copyto(block[0].context) for w in block) / len(block)
            aux_params[name] = avg

    def _load(self, arrays, names):
        whole = len(self.execs) == 1
        for arr, name in zip(arrays, names):
            if name not in self.arg_names:
                continue
            for sl, exe in zip(self.slices, self.execs):
                src = arr if whole else arr[sl]
                if not isinstance(src, nd.NDArray):
                    src = nd.array(src)
                src.copyto(exe.arg_dict[name])

    def forward(self, data_batch, is_train=None):
        """Splits ``data_batch`` over the executors and runs them."""
        if is_train is None:
            is_train = self.for_training
        self._load(data_batch.data, self.data_names)
        if data_batch.label:
            self._load(data_batch.label, self.label_names)
        for exe in self.execs:
            exe.forward(is_train=is_train)

    def backward(self, out_grads=None):
        """Backward on every executor (``out_grads`` split like the batch)."""
        if not self.for_training:
            raise MXNetError("backward: the group was bound with for_training=False")
        for sl, exe in zip(self.slices, self.execs):
            grads = None
            if out_grads is not None:
                grads = [g if len(self.execs) == 1 else g[sl] for g in out_grads]
            exe.backward(out_grads=grads)

    def _merge(self, per_exec, merge_multi_context):
        by_output = [list(x) for x in zip(*per_exec)]
        if not merge_multi_context:
            return by_output
        return [arrs[0] if len(arrs) == 1 else
                nd.concat(*[a.as_in_context(arrs[0].context) for a in arrs], dim=0)
                for arrs in by_output]

    def get_outputs(self, merge_multi_context=True):
        """Outputs of the last forward (merged over devices by default)."""
        return self._merge([e.outputs for e in self.execs], merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """Gradients of the data inputs (``inputs_need_grad=True``)."""
        if not self.inputs_need_grad:
            raise MXNetError("get_input_grads: bind with inputs_need_grad=True")
        return self._merge([[e.grad_dict[n] for n in self.data_names] for e in self.execs],
                           merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Updates ``eval_metric`` with each executor's outputs and its part of
        ``labels``."""
        output_names = self.symbol.list_outputs()
        for i, (sl, exe) in enumerate(zip(self.slices, self.execs)):
            if pre_sliced:
                part = labels[i]
            else:
                part = [lb if len(self.execs) == 1 else lb[sl] for lb in (labels or [])]
            eval_metric.update_dict(OrderedDict(zip(self.label_names, part)),
                                    OrderedDict(zip(output_names, exe.outputs)))

    def install_monitor(self, mon):
        for exe in self.execs:
            mon.install(exe)
