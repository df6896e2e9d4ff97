"""MXNet's symbolic control flow, ``mx.sym.contrib.foreach``, ``while_loop`` and
``cond``: each calls the user's function once on fresh variables, inside an
``AttrScope`` that marks every node it creates with ``__subgraph_name__``; the
marked nodes are cut out as a subgraph (``SymbolHandle.cut_subgraph``: edges from
outside become variables, the outside entries become the node's inputs) and one
graph node (``_foreach``, ``_while_loop``, ``_cond``) holds the subgraphs. Shape
inference, execution, gradients and JSON of those nodes are in the core
(``op::control_flow``, ``graph::subgraph``)."""

from .. import _core
from .. import attribute as _attribute
from .. import name as _name
from ..attribute import AttrScope
from .symbol import Symbol, Group, var, _attr_str

_KEY = "__subgraph_name__"


def _flatten(args, inout_str):
    """A (nested) list of Symbols as a flat list and its format (a Symbol of several
    outputs counts as one item whose format is its number of outputs)."""
    if isinstance(args, Symbol):
        n = len(args.list_outputs())
        return [args], int(n if n > 1 else 0)
    if not isinstance(args, (list, tuple)):
        raise AssertionError("%s must be (nested) list of Symbol, but got %s of type %s"
                             % (inout_str, str(args), str(type(args))))
    flat, fmts = [], []
    for item in args:
        sub, fmt = _flatten(item, inout_str)
        flat.extend(sub)
        fmts.append(fmt)
    return flat, fmts


def _regroup(args, fmt):
    if isinstance(fmt, int):
        if fmt == 0:
            return args[0], args[1:]
        return args[:fmt], args[fmt:]
    if not isinstance(args, (list, tuple)):
        raise AssertionError("output must be (nested) list of Symbol, but got %s of type %s"
                             % (str(args), str(type(args))))
    out = []
    for f in fmt:
        res, args = _regroup(args, f)
        out.append(res)
    return out, args


def _check_all(items, msg):
    if not all(isinstance(i, Symbol) for i in items):
        raise AssertionError(msg)


def _uniq_name(sym):
    """The name of the variable standing for ``sym`` inside a subgraph: its node
    name and output index (so two outputs of one node get two variables)."""
    return "%s-%s" % (sym.name, sym.attr("_value_index"))


def _unique_subgraph_name(name):
    outer = _attribute.current()._attr.get(_KEY, "")
    if outer:
        name = outer + "$" + name
    AttrScope._subgraph_names[name] += 1
    return name + str(AttrScope._subgraph_names[name] - 1)


def _graph_inputs(g):
    """{name: variable symbol} of a graph's variables."""
    return {s.name: s for s in (Symbol(h) for h in g.handle.input_vars())}


def _cut(g):
    """(the subgraph cut out of ``g``, {variable name: outside symbol})."""
    h, cut = g.handle.cut_subgraph()
    cut = [Symbol(c) for c in cut]
    return Symbol(h), {c.list_outputs()[0]: c for c in cut}


def _in_graph(sym, name):
    return sym.list_attr().get(_KEY, "") == name


def _wrap_outputs(outputs, name, avoid=()):
    """``outputs``, each made a node of the subgraph of its own: an output that is
    an input of the graph, one made outside the function, or (``avoid``) one whose
    name another output has, goes through ``identity``."""
    from . import op
    all_inputs = set(Group(outputs).list_inputs()) if outputs else set()
    return [op.identity(o) if o.name in all_inputs or o.name in avoid or not _in_graph(o, name)
            else o for o in outputs]


def _make_node(opname, hint, subgraphs, inputs, attrs):
    op = _core.get_op(opname)
    all_attrs = {k: _attr_str(k, v) for k, v in attrs.items()}
    all_attrs["num_args"] = str(len(subgraphs) + len(inputs))
    all_attrs.update(_attribute.current().get(None))
    name = _name.current().get(None, hint)
    return Symbol(_core.sym_create_subgraph_op(op, name, list(all_attrs.items()),
                                               [g.handle for g in subgraphs],
                                               [s.handle for s in inputs]))


def foreach(body, data, init_states, name="foreach"):
    """Run a for loop with user-defined computation over Symbols on dimension 0.

    ``body(data_t, states)`` returns ``(out, new_states)``; the graph it builds is
    the loop body of one ``_foreach`` node, which runs it on each slice of ``data``
    on axis 0. ``out`` of every step is stacked on a new axis 0; the states of the
    last step are the second result. Symbols from outside the function that the
    body uses become inputs of the node.

    Parameters
    ----------
    body : a Python function.
        Define computation in an iteration.
    data : a symbol or a list of symbols.
        The input data.
    init_states : a Symbol or nested lists of symbols.
        The initial values of the loop states.
    name : string.
        The name of the subgraph.

    Returns
    -------
    outputs : a Symbol or nested lists of Symbols.
        The output data stacked from the output of all iterations.
    states : a Symbol or nested lists of Symbols.
        The loop states in the last iteration.

    Examples
    --------
    >>> step = lambda data, states: (data + states[0], [states[0] * 2])
    >>> data = mx.sym.var('data')
    >>> states = [mx.sym.var('state')]
    >>> outs, states = mx.sym.contrib.foreach(step, data, states)
    """
    flat_data, data_fmt = _flatten(data, "foreach input")
    _check_all(flat_data, "data should be a symbol or a nested list of symbols")
    flat_states, state_fmt_in = _flatten(init_states, "foreach states")
    _check_all(flat_states, "init_states should be a symbol or a nested list of symbols")

    name = _unique_subgraph_name(name)
    with AttrScope(**{_KEY: name}):
        in_eles, _ = _regroup([var(_uniq_name(s)) for s in flat_data], data_fmt)
        states = _regroup([var(_uniq_name(s)) for s in flat_states], state_fmt_in)[0]
        sym_out, sym_states = body(in_eles, states)
        sym_out, out_fmt = _flatten(sym_out, "foreach output")
        sym_states, state_fmt = _flatten(sym_states, "foreach loop_vars")
        if state_fmt_in != state_fmt:
            raise AssertionError("The input and output loop_vars have different format")
        _check_all(sym_out, "the output should be an NDArray or a nested list of NDArrays")
        _check_all(sym_states, "the output states should be an NDArray or a nested list of NDArrays")
        num_out_data = len(sym_out)
        num_states = len(sym_states)
        if not sym_out and not sym_states:
            raise ValueError("foreach: the body returns no output and no state")
        g = Group(_wrap_outputs(sym_out, name)
                  + _wrap_outputs(sym_states, name, avoid={o.name for o in sym_out}))

    g, cut = _cut(g)
    inputs = _graph_inputs(g)
    names = g.list_inputs()
    if len(set(names)) != len(names):
        raise AssertionError("The inputs of the subgraph don't have unique names: " + str(names))
    data_names = [_uniq_name(s) for s in flat_data]
    state_names = [_uniq_name(s) for s in flat_states]
    ordered = list(flat_data)
    in_data_locs = []
    for d in data_names:
        if d not in names:
            raise AssertionError("the data arrays have to be used in the loop body")
        in_data_locs.append(names.index(d))
    ordered.extend(flat_states)
    in_state_locs = []
    for s in state_names:
        if s not in names:
            raise AssertionError("the state arrays have to be used in the loop body")
        in_state_locs.append(names.index(s))
    remain_locs = []
    for i, n in enumerate(names):
        if n in cut:
            ordered.append(cut[n])
            remain_locs.append(i)
        elif n not in data_names and n not in state_names:
            # a variable made inside the function (a parameter): an input as it is
            ordered.append(inputs[n])
            remain_locs.append(i)

    num_outputs = num_out_data + num_states
    ret = _make_node("_foreach", "_foreach", [g], ordered, dict(
        num_outputs=num_outputs, num_out_data=num_out_data, in_state_locs=in_state_locs,
        in_data_locs=in_data_locs, remain_locs=remain_locs))
    outs, _ = _regroup([ret[i] for i in range(num_out_data)], out_fmt)
    states, _ = _regroup([ret[num_out_data + i] for i in range(num_states)], state_fmt)
    return outs, states


def _union_inputs(graphs, known):
    """The inputs of several subgraphs as one list, and per subgraph where each of
    its inputs is in it. ``known`` maps subgraph variable names to outer symbols
    (the loop variables)."""
    inputs = []
    where = {}
    locs = []
    for g in graphs:
        g, cut = _cut(g)
        own = _graph_inputs(g)
        mine = []
        for n in g.list_inputs():
            if n in known:
                sym = known[n]
            elif n in cut:
                sym = cut[n]
            else:
                sym = own[n]
            key = id(sym)
            if key not in where:
                where[key] = len(inputs)
                inputs.append(sym)
            mine.append(where[key])
        locs.append((g, mine, g.list_inputs()))
    return inputs, locs


def while_loop(cond, func, loop_vars, max_iterations=None, name="while_loop"):
    """Run a while loop with user-defined computation and loop condition.

    One ``_while_loop`` node holds two subgraphs: ``cond(*loop_vars)`` (a scalar
    symbol) and ``func(*loop_vars)``, which returns ``(step_output, new_loop_vars)``.
    The outputs of the steps are stacked on axis 0 with ``max_iterations`` rows
    (rows past the last step are zeros); the final loop variables follow.

    Parameters
    ----------
    cond : a Python function.
        The loop condition.
    func : a Python function.
        The loop body.
    loop_vars : a Symbol or nested lists of Symbol.
        The initial values of the loop variables.
    max_iterations : a python int.
        Maximum number of iterations.
    name : string.
        The name of the subgraphs.

    Returns
    -------
    outputs : a Symbol or nested lists of Symbols
        stacked output from each step
    states : a Symbol or nested lists of Symbols
        final state

    Examples
    --------
    >>> cond = lambda i, s: i <= 5
    >>> func = lambda i, s: ([i + s], [i + 1, s + i])
    >>> loop_vars = (mx.sym.var('i'), mx.sym.var('s'))
    >>> outputs, states = mx.sym.contrib.while_loop(cond, func, loop_vars, max_iterations=10)
    """
    def to_int(v):
        if hasattr(v, "asscalar"):
            v = v.asscalar()
        try:
            return int(v)
        except Exception:  # noqa: BLE001 - MXNet's message whatever the failure
            raise ValueError("Cannot convert max_iteration to python int") from None

    def cond_wrapper(lv):
        result = cond(*lv)
        if not isinstance(result, Symbol):
            raise ValueError("Return of cond must be a Symbol")
        return [], [result], [], []

    def func_wrapper(lv):
        out, new_vars = func(*lv)
        out = [] if out is None else (list(out) if isinstance(out, tuple) else out)
        new_vars = [] if new_vars is None else (list(new_vars) if isinstance(new_vars, tuple)
                                                else new_vars)
        out, out_fmt = _flatten(out, "while output")
        new_vars, var_fmt = _flatten(new_vars, "while loop_vars")
        if len(lv) != len(new_vars):
            raise ValueError("The number of loop_vars should be consistent during the loop")
        return out, new_vars, out_fmt, var_fmt

    def subgraph(graph_vars, graph_func, sub_name):
        sub_name = _unique_subgraph_name(sub_name)
        with AttrScope(**{_KEY: sub_name}):
            flat, fmt = _flatten(graph_vars, "while loop_vars")
            new_vars, _ = _regroup([var(_uniq_name(s)) for s in flat], fmt)
            outputs, final, out_fmt, var_fmt = graph_func(new_vars)
            if not outputs + final:
                raise ValueError("while_loop: the loop body returns nothing")
            graph = Group(_wrap_outputs(outputs + final, sub_name))
        return graph, len(outputs), len(outputs) + len(final), out_fmt, var_fmt

    flat_vars, init_fmt = _flatten(loop_vars, "while loop_vars")
    _check_all(flat_vars, "loop_vars should be a symbol or a nested list of symbols")
    if max_iterations is None:
        raise ValueError("max_iterations should be specified")
    max_iterations = to_int(max_iterations)
    if len(loop_vars) == 0:
        raise ValueError("loop_vars should contain at least one element")
    cond_g, n_data, n_out, _, _ = subgraph(loop_vars, cond_wrapper, name + "_cond")
    assert n_data == 0 and n_out == 1
    func_g, num_out_data, num_outputs, out_fmt, _ = \
        subgraph(loop_vars, func_wrapper, name + "_func")
    known = {_uniq_name(s): s for s in flat_vars}
    var_pos = {_uniq_name(s): i for i, s in enumerate(flat_vars)}
    inputs, ((cond_g, cond_locs, _), (func_g, func_locs, func_names)) = \
        _union_inputs([cond_g, func_g], known)
    func_var_locs = [-1] * len(flat_vars)
    for j, n in enumerate(func_names):
        if n in var_pos:
            func_var_locs[var_pos[n]] = j
    for i, loc in enumerate(func_var_locs, 1):
        if loc == -1:
            raise ValueError("The %d-th loop_var doesn't involve into the computation" % i)
    ret = _make_node("_while_loop", "_while_loop", [cond_g, func_g], inputs, dict(
        max_iterations=max_iterations, cond_input_locs=cond_locs, func_input_locs=func_locs,
        func_var_locs=func_var_locs, num_out_data=num_out_data, num_outputs=num_outputs))
    outputs, _ = _regroup([ret[i] for i in range(num_out_data)], out_fmt)
    # the final loop variables come back in the structure they were given in
    final, _ = _regroup([ret[i] for i in range(num_out_data, num_outputs)], init_fmt)
    return outputs, final


def cond(pred, then_func, else_func, name="cond"):
    """Run an if-then-else using user-defined condition and computation.

    One ``_cond`` node holds three subgraphs: the predicate ``pred`` (a scalar
    symbol), ``then_func()`` and ``else_func()``; the branch the predicate picks
    runs when the graph runs. Both branches must give the same number of outputs,
    with the same shapes and dtypes.

    Parameters
    ----------
    pred : a MXNet Symbol representing a scalar.
        The branch condition.
    then_func : a Python function.
        The computation to be executed if `pred` is true.
    else_func : a Python function.
        The computation to be executed if `pred` is false.
    name : string.
        The name of the subgraphs.

    Returns
    -------
    outputs : a Symbol or nested lists of Symbols, representing the result of computation.

    Examples
    --------
    >>> a, b = mx.sym.var('a'), mx.sym.var('b')
    >>> pred = a * b < 5
    >>> then_func = lambda: (a + 5) * (b + 5)
    >>> else_func = lambda: (a - 5) * (b - 5)
    >>> outputs = mx.sym.contrib.cond(pred, then_func, else_func)
    """
    def subgraph(graph_func, sub_name):
        sub_name = _unique_subgraph_name(sub_name)
        with AttrScope(**{_KEY: sub_name}):
            outputs, fmt = _flatten(graph_func(), "cond outputs")
            if not outputs:
                raise ValueError("cond: a branch returns no output")
            graph = Group(_wrap_outputs(outputs, sub_name))
        return graph, len(outputs), fmt

    pred_g, n_pred, _ = subgraph(lambda: pred, name + "_pred")
    if n_pred != 1:
        raise ValueError("pred should always be a single output")
    then_g, n_then, then_fmt = subgraph(then_func, name + "_then")
    else_g, n_else, _ = subgraph(else_func, name + "_else")
    if n_then != n_else:
        raise ValueError("Number of outputs differs between then-branch and else-branch")
    inputs, parts = _union_inputs([pred_g, then_g, else_g], {})
    (pred_g, pred_locs, _), (then_g, then_locs, _), (else_g, else_locs, _) = parts
    ret = _make_node("_cond", "_cond", [pred_g, then_g, else_g], inputs, dict(
        cond_input_locs=pred_locs, then_input_locs=then_locs, else_input_locs=else_locs,
        num_outputs=n_then))
    outputs, _ = _regroup([ret[i] for i in range(n_then)], then_fmt)
    return outputs


def install(contrib):
    """Adds the functions to the ``contrib`` module."""
    for fn in (foreach, while_loop, cond):
        setattr(contrib, fn.__name__, fn)
