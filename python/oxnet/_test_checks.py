"""The checks of ``mx.test_utils`` that run symbols or functions: forward/backward
against expected values, gradients against central differences, the same symbol on
several contexts/dtypes, speed, optimizers against each other."""

import time
import traceback

import numpy as np

from ._test_compare import (assert_almost_equal, default_context, default_dtype,
                            default_numeric_eps, get_tols, _as_np)

__all__ = ["numeric_grad", "check_numeric_gradient", "check_symbolic_forward",
           "check_symbolic_backward", "check_consistency", "check_speed", "simple_forward",
           "compare_ndarray_tuple", "compare_optimizer", "same_symbol_structure",
           "check_gluon_hybridize_consistency"]


def _nd():
    from . import ndarray
    return ndarray


def _parse_location(sym, location, ctx, dtype=default_dtype()):
    """``location`` (a list in ``list_arguments`` order, or a dict by name) as a dict of
    NDArrays on ``ctx``: NumPy inputs take ``dtype`` (their own with ``"asnumpy"``),
    NDArrays keep theirs."""
    nd = _nd()
    names = sym.list_arguments()
    if isinstance(location, dict):
        if set(location.keys()) != set(names):
            raise ValueError("Symbol arguments and keys of the given location do not match. "
                             "symbol args:%s, location.keys():%s"
                             % (str(set(names)), str(set(location.keys()))))
        items = location.items()
    else:
        if len(location) != len(names):
            raise ValueError("location has %d arrays, the symbol has %d arguments %s"
                             % (len(location), len(names), names))
        items = zip(names, location)
    out = {}
    for k, v in items:
        if isinstance(v, nd.NDArray):
            out[k] = v.as_in_context(ctx) if v.context != ctx else v
        else:
            out[k] = _to_nd(v, ctx, dtype)
    return out


def _to_nd(v, ctx, dtype):
    """A NumPy input as an NDArray of ``dtype``; MXNet's ``dtype="asnumpy"`` keeps the
    NumPy array's own dtype."""
    v = np.asarray(v)
    return _nd().array(v, ctx=ctx, dtype=v.dtype if _is_asnumpy(dtype) else dtype)


def _is_asnumpy(dtype):
    return isinstance(dtype, str) and dtype == "asnumpy"


def _parse_aux_states(sym, aux_states, ctx, dtype=default_dtype()):
    """``aux_states`` (list or dict) as a dict of NDArrays on ``ctx``, or None."""
    if aux_states is None:
        return None
    nd = _nd()
    names = sym.list_auxiliary_states()
    if isinstance(aux_states, dict):
        if set(aux_states.keys()) != set(names):
            raise ValueError("Symbol aux_states names and given aux_states do not match. "
                             "symbol aux_names:%s, aux_states.keys:%s"
                             % (str(set(names)), str(set(aux_states.keys()))))
        items = aux_states.items()
    else:
        items = zip(names, aux_states)
    return {k: v.as_in_context(ctx) if isinstance(v, nd.NDArray)
            else _to_nd(v, ctx, dtype) for k, v in items}


def numeric_grad(executor, location, aux_states=None, eps=1e-4, use_forward_train=True,
                 dtype=default_dtype(), head_grads=None):
    """Central-difference gradients of the sum of the outputs.

    MXNet's form: ``executor`` a bound executor, ``location`` a dict name → NumPy array
    of the arguments to differentiate; returns a dict name → gradient of
    ``sum(sum(output))`` (the executor's arguments are left as they were).

    oxnet's form: ``executor`` a function mapping a list of NumPy arrays to a list of
    NumPy outputs, ``location`` that list; returns a list of gradients of
    ``sum_k sum(outputs[k] * head_grads[k])`` (head_grads default to ones)."""
    if callable(executor) and not hasattr(executor, "arg_dict"):
        return _numeric_grad_fn(executor, location, eps, head_grads, dtype)
    for k, v in location.items():
        executor.arg_dict[k][:] = v
    if aux_states is not None:
        for k, v in aux_states.items():
            executor.aux_dict[k][:] = v

    def total():
        outs = executor.forward(is_train=use_forward_train)
        return sum(float(np.sum(o.asnumpy().astype(np.float64))) for o in outs)

    grads = {}
    for k, v in location.items():
        x = np.array(v, dtype=dtype)
        g = np.zeros(x.shape, np.float64)
        flat, gflat = x.reshape(-1), g.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps / 2
            executor.arg_dict[k][:] = x
            up = total()
            flat[i] = old - eps / 2
            executor.arg_dict[k][:] = x
            down = total()
            flat[i] = old
            gflat[i] = (up - down) / eps
        executor.arg_dict[k][:] = x
        grads[k] = g.astype(dtype)
    return grads


def _numeric_grad_fn(f, location, eps, head_grads, dtype):
    location = [np.array(x, dtype=dtype) for x in location]
    outs = [np.asarray(o, dtype=dtype) for o in f([x.copy() for x in location])]
    if head_grads is None:
        head_grads = [np.ones_like(o) for o in outs]
    head_grads = [np.asarray(h, dtype=dtype) for h in head_grads]

    def loss(loc):
        return sum(float(np.sum(np.asarray(o, dtype=dtype) * h))
                   for o, h in zip(f(loc), head_grads))

    grads = []
    for i, x in enumerate(location):
        g = np.zeros_like(x)
        flat = g.reshape(-1)
        for j in range(x.size):
            loc = [y.copy() for y in location]
            loc[i].reshape(-1)[j] += eps
            fp = loss(loc)
            loc[i].reshape(-1)[j] -= 2 * eps
            fm = loss(loc)
            flat[j] = (fp - fm) / (2 * eps)
        grads.append(g)
    return grads


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=default_dtype(), head_grads=None):
    """Checks the gradients of ``sym`` against central differences, with random head
    gradients (unless ``head_grads`` is given).

    ``sym`` is a Symbol (bound to ``location``, a list or dict of arrays; ``grad_nodes``
    a list of argument names, or a dict name → grad_req) or, as an oxnet extension, a
    function of NDArrays returning an NDArray or a list of them (checked through
    autograd). ``numeric_eps``, ``rtol`` and ``atol`` default per ``dtype``."""
    from .symbol import Symbol
    # grad_stype_dict: the gradients' storage types; the values checked are the same
    # (they are compared densely), so the check runs on dense gradients.
    del grad_stype_dict
    if numeric_eps is None:
        numeric_eps = default_numeric_eps()[np.dtype(dtype)]
    if isinstance(sym, Symbol):
        return _check_numeric_gradient_symbol(sym, location, aux_states, numeric_eps, rtol,
                                              atol, grad_nodes, use_forward_train, ctx, dtype,
                                              head_grads)
    if not callable(sym):
        raise TypeError("check_numeric_gradient: expected a Symbol or a function of NDArrays, "
                        "got %s" % type(sym).__name__)
    return _check_numeric_gradient_fn(sym, location, aux_states, numeric_eps, rtol, atol,
                                      grad_nodes, use_forward_train, ctx, dtype, head_grads)


def _check_numeric_gradient_fn(fn, location, aux_states, numeric_eps, rtol, atol, grad_nodes,
                               use_forward_train, ctx, dtype, head_grads):
    from . import autograd
    nd = _nd()
    if aux_states is not None:
        raise ValueError("check_numeric_gradient: aux_states apply to symbols only")
    names = list(location.keys()) if isinstance(location, dict) else None
    values = list(location.values()) if isinstance(location, dict) else list(location)
    values = [np.array(_as_np(v), dtype=dtype) for v in values]
    ctx = ctx or default_context()
    rtol = rtol or (1e-4 if np.dtype(dtype) == np.float64 else 1e-2)
    atol = atol if atol is not None else rtol

    def call(arrays):
        out = fn(*arrays) if names is None else fn(**dict(zip(names, arrays)))
        return [out] if isinstance(out, nd.NDArray) else list(out)

    def forward_np(loc):
        with autograd.pause(train_mode=use_forward_train):
            return [o.asnumpy() for o in call([nd.array(x, ctx=ctx, dtype=dtype) for x in loc])]

    outs = forward_np(values)
    if head_grads is None:
        head_grads = [np.random.normal(size=o.shape).astype(dtype) for o in outs]
    checked = range(len(values))
    if grad_nodes is not None:
        checked = [names.index(n) if isinstance(n, str) else n for n in grad_nodes]
    arrays = [nd.array(x, ctx=ctx, dtype=dtype) for x in values]
    for i in checked:
        arrays[i].attach_grad()
    with autograd.record(train_mode=use_forward_train):
        ys = call(arrays)
    autograd.backward(ys, [nd.array(h, ctx=ctx, dtype=dtype) for h in head_grads],
                      train_mode=use_forward_train)
    numeric = _numeric_grad_fn(forward_np, values, numeric_eps, head_grads, dtype)
    for i in checked:
        label = names[i] if names else "input %d" % i
        assert_almost_equal(arrays[i].grad.asnumpy(), numeric[i], rtol=rtol, atol=atol,
                            names=("autograd gradient of %s" % label, "numeric gradient"))


def _bind(sym, args, aux, ctx, reqs, grad_stypes=None):
    nd = _nd()
    grad_stypes = grad_stypes or {}
    grads = {k: nd.zeros(v.shape, ctx=ctx, dtype=v.dtype, stype=grad_stypes.get(k, "default"))
             for k, v in args.items() if reqs.get(k, "null") != "null"}
    if aux is None and sym.list_auxiliary_states():
        _, _, aux_shapes = sym.infer_shape(**{k: v.shape for k, v in args.items()})
        aux = {k: nd.zeros(s, ctx=ctx)
               for k, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    return sym.bind(ctx, args, args_grad=grads or None, grad_req=reqs, aux_states=aux)


def _check_numeric_gradient_symbol(sym, location, aux_states, numeric_eps, rtol, atol,
                                   grad_nodes, use_forward_train, ctx, dtype, head_grads):
    nd = _nd()
    ctx = ctx or default_context()
    args = _parse_location(sym, location, ctx, dtype)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    names = sym.list_arguments()
    if grad_nodes is None:
        reqs = {k: "write" for k in names}
    elif isinstance(grad_nodes, (list, tuple)):
        reqs = {k: ("write" if k in grad_nodes else "null") for k in names}
    elif isinstance(grad_nodes, dict):
        reqs = {k: grad_nodes.get(k, "null") for k in names}
    else:
        raise ValueError("grad_nodes must be a list, tuple or dict, got %s"
                         % type(grad_nodes).__name__)
    checked = [k for k in names if reqs[k] != "null"]
    base = {k: v.asnumpy() for k, v in args.items()}
    ex = _bind(sym, {k: nd.array(v, ctx=ctx, dtype=v.dtype) for k, v in base.items()},
               aux, ctx, reqs)
    outs = ex.forward(is_train=use_forward_train)
    if head_grads is None:
        # MXNet's random projection: uniform in [0.1, 1.1), never near zero, so that
        # the projected gradients are not sums that cancel to a few ULPs of the
        # finite differences (which the relative tolerance could not absorb)
        heads = [np.random.rand(*o.shape) + 0.1 for o in outs]
    else:
        heads = [np.asarray(_as_np(h), np.float64) for h in head_grads]
    ex.backward([nd.array(h, ctx=ctx, dtype=o.dtype) for h, o in zip(heads, outs)])
    analytic = {k: ex.grad_dict[k].asnumpy() for k in checked}
    probe = _bind(sym, {k: nd.array(v, ctx=ctx, dtype=v.dtype) for k, v in base.items()},
                  aux, ctx, {k: "null" for k in names})

    def value():
        return sum(float(np.sum(o.asnumpy().astype(np.float64) * h))
                   for o, h in zip(probe.forward(is_train=use_forward_train), heads))

    for k in checked:
        x = base[k].astype(np.float64)
        num = np.zeros(x.shape, np.float64)
        flat = x.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + numeric_eps / 2
            probe.arg_dict[k][:] = x
            up = value()
            flat[i] = old - numeric_eps / 2
            probe.arg_dict[k][:] = x
            down = value()
            flat[i] = old
            num.reshape(-1)[i] = (up - down) / numeric_eps
        probe.arg_dict[k][:] = x
        want = num.astype(analytic[k].dtype)
        assert_almost_equal(want, analytic[k], rtol=rtol, atol=atol,
                            names=("NUMERICAL_%s" % k, "BACKWARD_%s" % k))


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=default_dtype()):
    """Binds ``sym`` to ``location``, runs forward (inference) and compares each output
    with ``expected`` (a list, or a dict by output name). Returns the executor's
    outputs (NDArrays), as MXNet does."""
    ctx = ctx or default_context()
    args = _parse_location(sym, location, ctx, dtype)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    ex = _bind(sym, args, aux, ctx, {k: "null" for k in sym.list_arguments()})
    outputs = ex.forward(is_train=False)
    for name, exp, out in zip(sym.list_outputs(), expected, outputs):
        assert_almost_equal(exp, out.asnumpy(), rtol, atol, ("EXPECTED_%s" % name, "FORWARD_%s" % name),
                            equal_nan=equal_nan)
    return outputs


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None,
                            aux_states=None, grad_req="write", ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=default_dtype()):
    """Binds ``sym``, runs forward (training) and backward with ``out_grads`` (a list or
    dict of arrays; None for a loss output) and compares the arguments' gradients with
    ``expected`` (a list or dict). ``grad_req`` is one request for all or a dict; with
    'add' the gradient arrays start from random values that the check accounts for.
    Returns the gradient arrays (a dict of NDArrays by name), as MXNet does."""
    nd = _nd()
    ctx = ctx or default_context()
    args = _parse_location(sym, location, ctx, dtype)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    names = sym.list_arguments()
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(names, expected))
    reqs = grad_req if isinstance(grad_req, dict) else {k: grad_req for k in names}
    reqs = {k: reqs.get(k, "null") for k in names}
    ex = _bind(sym, args, aux, ctx, reqs, grad_stypes)
    initial = {}
    for k, g in ex.grad_dict.items():
        if g is not None and reqs.get(k) == "add":
            initial[k] = np.random.normal(size=g.shape).astype(np.dtype(g.dtype))
            g[:] = initial[k]
    ex.forward(is_train=True)
    if isinstance(out_grads, dict):
        out_grads = [out_grads[k] for k in sym.list_outputs()]
    if out_grads is not None:
        out_grads = [g if isinstance(g, nd.NDArray) or g is None
                     else _to_nd(g, ctx, dtype) for g in out_grads]
    ex.backward(out_grads)
    grads = {k: g.asnumpy() for k, g in ex.grad_dict.items() if g is not None}
    for k, exp in expected.items():
        if reqs.get(k, "null") == "null":
            continue
        want = _as_np(exp) + initial[k] if k in initial else _as_np(exp)
        assert_almost_equal(want, grads[k], rtol, atol,
                            ("EXPECTED_%s" % k, "BACKWARD_%s" % k), equal_nan=equal_nan)
    return {k: g for k, g in ex.grad_dict.items() if g is not None}


def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """Runs ``sym`` once on the NumPy ``inputs`` (by argument name); returns the output
    as NumPy (a list when there are several)."""
    nd = _nd()
    ctx = ctx or default_context()
    args = {k: nd.array(v, ctx=ctx) for k, v in inputs.items()}
    ex = sym.bind(ctx, args=args)
    outputs = [o.asnumpy() for o in ex.forward(is_train=is_train)]
    return outputs[0] if len(outputs) == 1 else outputs


def check_speed(sym, location=None, ctx=None, N=20, grad_req=None, typ="whole", **kwargs):
    """Seconds per run of ``sym``: ``typ='whole'`` forward+backward, ``'forward'`` only.
    Arguments come from ``location`` (dict name → array) or random normal values for the
    shapes in ``kwargs``."""
    nd = _nd()
    ctx = ctx or default_context()
    grad_req = grad_req or "write"
    if location is None:
        exe = sym.simple_bind(grad_req=grad_req, ctx=ctx, **kwargs)
        location = {k: np.random.normal(size=arr.shape, scale=1.0)
                    for k, arr in exe.arg_dict.items()}
    else:
        if not isinstance(location, dict):
            raise ValueError("Expect dict, get \"location\"=%s" % str(location))
        exe = sym.simple_bind(grad_req=grad_req, ctx=ctx,
                              **{k: v.shape for k, v in location.items()})
    for name, val in location.items():
        exe.arg_dict[name][:] = nd.array(_as_np(val))
    if typ == "whole":
        def run():
            exe.forward(is_train=True)
            exe.backward(out_grads=exe.outputs)
    elif typ == "forward":
        def run():
            exe.forward(is_train=False)
    else:
        raise ValueError('typ can only be "whole" or "forward".')
    run()
    for o in exe.outputs:
        o.wait_to_read()
    tic = time.time()
    for _ in range(N):
        run()
    nd.waitall()
    return (time.time() - tic) / N


def check_consistency(sym, ctx_list, scale=1.0, grad_req="write", arg_params=None,
                      aux_params=None, rtol=None, atol=None, raise_on_err=True,
                      ground_truth=None, equal_nan=False, use_uniform=False,
                      rand_type=np.float64):
    """Runs ``sym`` (one symbol, or one per entry) on every entry of ``ctx_list`` (dicts
    of ``ctx``, argument shapes and optionally ``type_dict``) with the same random
    arguments and compares outputs and gradients with the most precise entry (or with
    ``ground_truth``). Returns the ground truth dict (outputs and gradients)."""
    nd = _nd()
    if not isinstance(sym, (list, tuple)):
        sym = [sym] * len(ctx_list)
    if len(sym) != len(ctx_list):
        raise ValueError("check_consistency: %d symbols for %d contexts"
                         % (len(sym), len(ctx_list)))
    output_names = sym[0].list_outputs()
    arg_names = sym[0].list_arguments()
    exes = []
    for s, spec in zip(sym, ctx_list):
        if s.list_arguments() != arg_names or s.list_outputs() != output_names:
            raise ValueError("check_consistency: the symbols differ in arguments or outputs")
        exes.append(s.simple_bind(grad_req=grad_req, **spec))
    arg_params = {} if arg_params is None else dict(arg_params)
    aux_params = {} if aux_params is None else dict(aux_params)
    for n in sorted(exes[0].arg_dict):
        if n not in arg_params:
            shape = exes[0].arg_dict[n].shape
            if use_uniform:
                arg_params[n] = np.random.uniform(-0.92 * scale, 0.92 * scale,
                                                  size=shape).astype(rand_type)
            else:
                arg_params[n] = np.random.normal(size=shape, scale=scale).astype(rand_type)
    for n in exes[0].aux_dict:
        aux_params.setdefault(n, 0)
    for exe in exes:
        for n, arr in exe.arg_dict.items():
            arr[:] = arg_params[n]
        for n, arr in exe.aux_dict.items():
            arr[:] = aux_params[n]
        if grad_req == "add":
            for arr in exe.grad_arrays:
                if arr is not None:
                    arr[:] = 0

    def itemsize(dt):
        return np.dtype(dt).itemsize

    dtypes = [np.dtype(exe.outputs[0].dtype) for exe in exes]
    gt_idx = int(np.argmax([itemsize(d) for d in dtypes]))
    for exe in exes:
        exe.forward(is_train=False)
    gt = ground_truth
    if gt is None:
        gt = dict(zip(output_names, [o.copy() for o in exes[gt_idx].outputs]))

    def compare(arr, want, what, i, name, rt, at):
        try:
            assert_almost_equal(arr, want, rtol=rt, atol=at, equal_nan=equal_nan)
        except AssertionError:
            print("%s Err: ctx %d vs ctx %d at %s" % (what, i, gt_idx, name))
            traceback.print_exc()
            if raise_on_err:
                raise

    for i, exe in enumerate(exes):
        if i == gt_idx and ground_truth is None:
            continue
        for name, arr in zip(output_names, exe.outputs):
            compare(arr.asnumpy(), _as_np(gt[name]), "Predict", i, name, rtol, atol)
    if grad_req == "null":
        return gt
    for exe in exes:
        exe.forward(is_train=True)
    least = [min((np.dtype(e.outputs[j].dtype) for e in exes), key=itemsize)
             for j in range(len(output_names))]
    heads = [exes[0].outputs[j].asnumpy().astype(least[j]) for j in range(len(output_names))]
    for exe in exes:
        exe.backward([nd.array(h, ctx=o.context, dtype=o.dtype) for h, o in zip(heads, exe.outputs)])
    if ground_truth is None:
        gt.update({n: o.copy() for n, o in zip(output_names, exes[gt_idx].outputs)})
        gt.update({n: (g.copy() if g is not None else None)
                   for n, g in exes[gt_idx].grad_dict.items()})
    for i, exe in enumerate(exes):
        if i == gt_idx and ground_truth is None:
            continue
        pairs = list(zip(output_names, exe.outputs)) + \
            [(n, exe.grad_dict.get(n)) for n in arg_names]
        for name, arr in pairs:
            want = gt.get(name)
            if want is None:
                continue
            if arr is None:
                raise AssertionError("check_consistency: ctx %d has no gradient for %s"
                                     % (i, name))
            a_np, w_np = arr.asnumpy(), _as_np(want)
            small = min((np.dtype(a_np.dtype), dtypes[i]), key=itemsize)
            small_gt = min((np.dtype(w_np.dtype), dtypes[gt_idx]), key=itemsize)
            rt, at = rtol, atol
            if small != a_np.dtype or small_gt != w_np.dtype:
                rt, at = get_tols(a_np.astype(small), w_np.astype(small_gt), rtol, atol)
            compare(a_np, w_np, "Train", i, name, rt, at)
    return gt


def compare_ndarray_tuple(t1, t2, rtol=None, atol=None):
    """Compares two (nested) tuples of NDArrays element by element; None matches None."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def compare_optimizer(opt1, opt2, shape, dtype, w_stype="default", g_stype="default",
                      rtol=1e-4, atol=1e-5, compare_states=True, ntensors=1):
    """Runs one update of ``opt1`` and ``opt2`` from the same random weight and gradient
    (``ntensors`` > 1: ``shape`` is a list of shapes, ``opt2`` updates them all at once
    and ``opt1`` one by one) and compares the states and weights."""
    from . import random as mxrandom
    from .test_utils import rand_ndarray
    ctx = default_context()
    if ntensors == 1:
        # opt2 gets the storage types asked for; opt1 the same values, dense
        if w_stype == "default":
            w2 = mxrandom.uniform(shape=shape, ctx=ctx, dtype=dtype)
            w1 = w2.copyto(ctx)
        else:
            w2 = rand_ndarray(shape, w_stype, density=1, dtype=dtype)
            w1 = w2.copyto(ctx).tostype("default")
        if g_stype == "default":
            g2 = mxrandom.uniform(shape=shape, ctx=ctx, dtype=dtype)
            g1 = g2.copyto(ctx)
        else:
            g2 = rand_ndarray(shape, g_stype, dtype=dtype)
            g1 = g2.copyto(ctx).tostype("default")
        state1 = opt1.create_state_multi_precision(0, w1)
        state2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(0, w1, g1, state1)
        opt2.update_multi_precision(0, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    w1 = tuple(mxrandom.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    g1 = tuple(mxrandom.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape)
    w2 = tuple(w.copy() for w in w1)
    g2 = tuple(g.copy() for g in g1)
    state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)


def same_symbol_structure(sym1, sym2):
    """Whether two symbols have the same graph: the same ops with the same inputs (names
    of variables may differ)."""
    import json
    nodes1 = json.loads(sym1.tojson())["nodes"]
    nodes2 = json.loads(sym2.tojson())["nodes"]
    if len(nodes1) != len(nodes2):
        return False
    for n1, n2 in zip(nodes1, nodes2):
        if n1["op"] != n2["op"]:
            return False
        if [i[:2] for i in n1.get("inputs", [])] != [i[:2] for i in n2.get("inputs", [])]:
            return False
    return True


def check_gluon_hybridize_consistency(net_builder, data_l, numpy_func=None, test_grad=True,
                                      rtol=1e-4, atol=1e-4):
    """Builds a net with ``net_builder()`` several times (plain, hybridized, hybridized
    static) and checks they give the same outputs (and input gradients when
    ``test_grad``) on the NDArrays ``data_l``, and match ``numpy_func`` when given.
    Returns the plain net's outputs as NumPy arrays."""
    from . import autograd
    saved_out, saved_grads = None, None
    for hybridize, static in ((False, False), (True, False), (True, True)):
        net = net_builder()
        net.initialize()
        if hybridize:
            net.hybridize(static_alloc=static, static_shape=static)
        data = [d.copy() for d in data_l]
        for d in data:
            d.attach_grad()
        with autograd.record():
            out = net(*data)
        outs = [out] if not isinstance(out, (list, tuple)) else list(out)
        if test_grad:
            autograd.backward(outs)
        out_np = [o.asnumpy() for o in outs]
        grads = [d.grad.asnumpy() for d in data] if test_grad else None
        if saved_out is None:
            saved_out, saved_grads = out_np, grads
            if numpy_func is not None:
                want = numpy_func(*[d.asnumpy() for d in data_l])
                want = list(want) if isinstance(want, (list, tuple)) else [want]
                for o, w in zip(out_np, want):
                    assert_almost_equal(o, w, rtol=rtol, atol=atol)
        else:
            for o, s in zip(out_np, saved_out):
                assert_almost_equal(o, s, rtol=rtol, atol=atol)
            if test_grad:
                for g, s in zip(grads, saved_grads):
                    assert_almost_equal(g, s, rtol=rtol, atol=atol)
    return saved_out
