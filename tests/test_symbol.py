"""mx.sym: construction, automatic names, attributes, composition, inference,
MXNet 1.9.1 JSON (fixtures written by MXNet), pickling and bad inputs."""

import copy
import json
import os
import pickle

import numpy as np
import pytest

import oxnet as mx
from oxnet import _core

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "symbol")


def _registered(*names):
    ops = {n for n, _ in _core.list_ops()}
    return all(n in ops for n in names)


def test_variable_attrs_and_json_layout():
    d = mx.sym.Variable("d", shape=(2, 3), dtype="float32", lr_mult=2.0, wd_mult=0.5,
                        init='["zero", {}]', attr={"mood": "x"})
    assert d.name == "d" and d.list_arguments() == ["d"] and d.list_outputs() == ["d"]
    assert d.attr("mood") == "x" and d.attr("__shape__") == "(2, 3)" and d.attr("lr_mult") == "2.0"
    la = d.list_attr()
    assert la["__lr_mult__"] == la["lr_mult"] == "2.0" and la["wd_mult"] == "0.5"
    assert la["__dtype__"] == "0" and la["__init__"] == '["zero", {}]'
    js = d.tojson()
    assert '"attrs": {\n        "__dtype__": "0", \n        "__init__": "[\\"zero\\", {}]"' in js
    assert js.endswith('"heads": [[0, 0, 0]], \n  "attrs": {"mxnet_version": ["int", 10901]}\n}')
    with pytest.raises(ValueError):
        mx.sym.Variable("x", foo=1)
    assert mx.sym.var("y", __extra__="1").attr("__extra__") == "1"


def test_automatic_names_and_operators():
    d = mx.sym.Variable("d")
    with mx.name.NameManager():
        cases = {"d+d": "_plus0", "d-d": "_minus0", "d*d": "_mul0", "d/d": "_div0", "d%d": "_mod0",
                 "d**d": "_power0", "-d": "_mulscalar0", "abs(d)": "abs0", "1-d": "_rminusscalar0",
                 "1/d": "_rdivscalar0", "2**d": "_rpower_scalar0", "d**2": "_powerscalar0",
                 "3%d": "_rmodscalar0", "d==d": "_equal0", "d!=1": "_not_equal_scalar0",
                 "d>d": "_greater0", "d>=1": "_greater_equal_scalar0", "d<d": "_lesser0",
                 "d<=1": "_lesser_equal_scalar0", "1<d": "_greater_scalar0", "d+1": "_plusscalar0"}
        for expr, name in cases.items():
            assert eval(expr).name == name, expr
        assert mx.sym.exp(d).name == "exp0" and mx.sym.exp(d).name == "exp1"
        s = mx.sym.sum_axis(d, axis=1)
        assert s.name == "sum_axis0"
        node = json.loads(s.tojson())["nodes"][1]
        assert node["op"] == "sum" and node["attrs"] == {"axis": "1"}
    with mx.name.Prefix("p_"):
        assert mx.sym.exp(d).name == "p_exp0"
    assert mx.sym.exp(d, name="mine").name == "mine"


def test_attr_scope_and_attr_dict():
    d = mx.sym.Variable("d")
    with mx.AttrScope(ctx_group="g1"):
        e = mx.sym.exp(d, name="e")
        v = mx.sym.Variable("v")
    assert e.list_attr() == {"__ctx_group__": "g1", "ctx_group": "g1"}
    assert v.attr("ctx_group") == "g1"
    assert d.attr("ctx_group") is None
    ad = e.attr_dict()
    assert ad == {"e": {"__ctx_group__": "g1", "ctx_group": "g1"}}
    e._set_attr(__mood__="happy")
    assert e.attr("__mood__") == "happy"
    with pytest.raises(ValueError):
        e._set_attr(x=1)


def test_group_indexing_internals_children_compose():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    c = mx.sym.elemwise_add(a, b, name="c")
    e = mx.sym.exp(c, name="e")
    g = mx.sym.Group([e, c])
    assert g.list_outputs() == ["e_output", "c_output"] and g.name is None and len(g) == 2
    assert repr(g) == "<Symbol group [e, c]>" and repr(e) == "<Symbol e>"
    assert g[1].name == "c" and g["e_output"].name == "e"
    with pytest.raises(IndexError):
        g[2]
    internals = e.get_internals()
    assert internals.list_outputs() == ["a", "b", "c_output", "e_output"]
    assert internals["c_output"].list_arguments() == ["a", "b"]
    assert e.get_children().list_outputs() == ["c_output"]
    assert a.get_children() is None
    sp = mx.sym.split(a, num_outputs=3, axis=1, name="sp")
    assert sp.list_outputs() == ["sp_output0", "sp_output1", "sp_output2"] and repr(sp) == "<Symbol sp>"
    # composition by call replaces variables in a copy
    x = mx.sym.Variable("x")
    net = e(a=mx.sym.exp(x, name="ex"))
    assert net.list_arguments() == ["x", "b"] and e.list_arguments() == ["a", "b"]
    net2 = e(x, mx.sym.Variable("y"))
    assert net2.list_arguments() == ["x", "y"]
    with pytest.raises(mx.MXNetError, match="no argument named 'zz'"):
        e(zz=x)
    assert copy.deepcopy(e).tojson() == e.tojson()


def test_auto_created_inputs_copy_op_attrs():
    s = mx.sym.elemwise_add(name="add", attr={"__mood__": "x"})
    assert s.list_arguments() == ["add_lhs", "add_rhs"]
    assert s.get_internals()["add_lhs"].attr("__mood__") == "x"


def test_infer_shape_and_type():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    # a broadcast op cannot tell b's shape from a's; an elementwise one can (as in
    # MXNet, where every input of an elementwise op has the one shape)
    bs = mx.sym.sum(mx.sym.broadcast_mul(a, b) + 1, axis=1)
    assert bs.infer_shape(a=(2, 3)) == (None, None, None)
    assert bs.infer_shape_partial(a=(2, 3)) == ([(2, 3), ()], [()], [])
    s = mx.sym.sum(mx.sym.elemwise_mul(a, b) + 1, axis=1)
    assert s.infer_shape(a=(2, 3)) == ([(2, 3), (2, 3)], [(2,)], [])
    assert s.infer_shape(b=(2, 3)) == ([(2, 3), (2, 3)], [(2,)], [])
    assert s.infer_shape(a=(2, 3), b=(2, 3)) == ([(2, 3), (2, 3)], [(2,)], [])
    assert s.infer_shape((2, 3), (2, 3)) == ([(2, 3), (2, 3)], [(2,)], [])
    assert s.infer_type(a="float64") == ([np.float64, np.float64], [np.float64], [])
    v = mx.sym.Variable("v", shape=(4, 5))
    assert mx.sym.exp(v).infer_shape() == ([(4, 5)], [(4, 5)], [])


def test_infer_shape_conflict_names_op_and_shapes():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    s = mx.sym.elemwise_add(a, b, name="plus")
    with pytest.raises(mx.MXNetError) as e:
        s.infer_shape(a=(2, 3), b=(2, 4))
    msg = str(e.value)
    assert "elemwise_add" in msg and "(2, 3)" in msg and "(2, 4)" in msg and "plus" in msg
    with pytest.raises(mx.MXNetError, match="not an argument"):
        s.infer_shape(c=(1,))


def test_infer_shape_conflict_backward_fill():
    w = mx.sym.Variable("w")
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), weight=w, num_hidden=10, name="fc1")
    with pytest.raises(mx.MXNetError) as e:
        fc.infer_shape(data=(4, 6), w=(10, 5))
    msg = str(e.value)
    assert "fc1" in msg and "FullyConnected" in msg and "weight" in msg and "(10, 5)" in msg and "(10, 6)" in msg


def test_json_round_trip_save_load_pickle(tmp_path):
    a = mx.sym.Variable("a", shape=(2, 3))
    s = mx.sym.Group([mx.sym.exp(a * 2, name="e"), mx.sym.split(a, num_outputs=3, axis=1, name="sp")[2]])
    js = s.tojson()
    assert mx.sym.load_json(js).tojson() == js
    f = str(tmp_path / "net-symbol.json")
    s.save(f)
    assert mx.sym.load(f).tojson() == js
    p = pickle.loads(pickle.dumps(s))
    assert p.tojson() == js and p.list_outputs() == ["e_output", "sp_output2"]


def test_mxnet_written_fixture_loads_and_round_trips():
    exp = json.load(open(os.path.join(FIX, "expected.json")))["elemwise"]
    text = open(os.path.join(FIX, "elemwise-symbol.json")).read()
    s = mx.sym.load_json(text)
    assert s.list_arguments() == exp["arguments"]
    assert s.list_outputs() == exp["outputs"]
    assert s.get_internals().list_outputs() == exp["internals"]
    arg, out, aux = s.infer_shape(**{k: tuple(v) for k, v in exp["shapes"].items()})
    assert [list(x) for x in arg] == exp["arg_shapes"] and [list(x) for x in out] == exp["out_shapes"]
    # what we write is byte-identical to what MXNet wrote
    assert s.tojson() == text


@pytest.mark.parametrize("name", ["mlp_bn", "lenet"])
def test_mxnet_written_nn_fixtures(name):
    text = open(os.path.join(FIX, name + "-symbol.json")).read()
    ops = {n["op"] for n in json.loads(text)["nodes"]} - {"null"}
    assert _registered(*ops), sorted(o for o in ops if not _registered(o))
    exp = json.load(open(os.path.join(FIX, "expected.json")))[name]
    s = mx.sym.load_json(text)
    assert s.list_arguments() == exp["arguments"]
    assert s.list_auxiliary_states() == exp["aux"]
    assert s.get_internals().list_outputs() == exp["internals"]
    arg, out, aux = s.infer_shape(**{k: tuple(v) for k, v in exp["shapes"].items()})
    assert [list(x) for x in arg] == exp["arg_shapes"]
    assert [list(x) for x in out] == exp["out_shapes"]
    assert [list(x) for x in aux] == exp["aux_shapes"]
    ours = s.tojson()
    if name == "lenet":
        # MXNet's oneDNN build gives max Pooling a hidden workspace output, which shows
        # only in node_row_ptr (derived data MXNet recomputes on load); compare the rest.
        a, b = json.loads(ours), json.loads(text)
        a.pop("node_row_ptr")
        b.pop("node_row_ptr")
        assert a == b
    else:
        assert ours == text


@pytest.mark.parametrize("text,match", [
    ("{", "malformed"),
    ('{"nodes": [{"op": "NoSuchOp", "name": "x", "inputs": []}], "heads": [[0,0,0]]}', "NoSuchOp"),
    ('{"nodes": [{"op": "null", "name": "x", "inputs": []}], "heads": [[4,0,0]]}', "node 4"),
    ('{"nodes": [{"op": "exp", "name": "e", "inputs": []}], "heads": [[0,0,0]]}', "exp"),
    # (sum: parameterless ops such as exp ignore unknown attributes, as MXNet 1.9.1)
    ('{"nodes": [{"op": "sum", "name": "e", "attrs": {"bogus": "1"}, "inputs": []}], "heads": [[0,0,0]]}',
     "bogus"),
    ('{"heads": []}', "nodes"),
])
def test_bad_json_raises_mxneterror(text, match):
    with pytest.raises(mx.MXNetError, match=match):
        mx.sym.load_json(text)


def test_bad_op_arguments():
    d = mx.sym.Variable("d")
    with pytest.raises(mx.MXNetError, match="foo"):
        mx.sym.sum(d, foo=2)
    mx.sym.exp(d, foo=2)  # parameterless: extra arguments are ignored, as MXNet 1.9.1
    with pytest.raises(TypeError):
        mx.sym.exp(mx.nd.ones((2,)))
    with pytest.raises(mx.MXNetError, match="group"):
        mx.sym.exp(mx.sym.Group([d, d]))
    with pytest.raises(TypeError):
        mx.sym.Group([d, 1])


def test_duplicate_argument_names_infer_but_do_not_bind():
    # As in MXNet: inference treats each variable on its own (a given shape applies to
    # every variable of that name); binding needs unique names.
    s = mx.sym.elemwise_add(mx.sym.Variable("x"), mx.sym.Variable("x"))
    assert s.list_arguments() == ["x", "x"]
    assert s.infer_shape(x=(2,)) == ([(2,), (2,)], [(2,)], [])
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), name="fc", num_hidden=4)
    net = mx.sym.FullyConnected(net, name="fc", num_hidden=3)
    args, outs, _ = net.infer_shape(data=(5, 6))
    assert args == [(5, 6), (4, 6), (4,), (3, 4), (3,)] and outs == [(5, 3)]
    with pytest.raises(mx.MXNetError, match="'x'"):
        s.simple_bind(mx.cpu(), x=(2,))
    with pytest.warns(RuntimeWarning, match="fc_weight"):
        mx.viz.plot_network(net, shape={"data": (5, 6)})


def test_reshaped_executor_shares_output_memory():
    x = mx.sym.Variable("x")
    y = mx.sym.FullyConnected(x, num_hidden=4)
    exe = y.simple_bind(mx.cpu(), x=(5, 4), grad_req="null")
    exe.arg_arrays[0][:] = 1
    exe.arg_arrays[1][:] = mx.nd.ones((4, 4))
    exe.arg_arrays[2][:] = 0
    small = exe.reshape(x=(3, 4))
    small.forward(is_train=False)
    np.testing.assert_array_equal(small.outputs[0].asnumpy(), np.full((3, 4), 4.0))
    np.testing.assert_array_equal(exe.outputs[0].asnumpy()[:3], np.full((3, 4), 4.0))
    exe.forward(is_train=False)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), np.full((5, 4), 4.0))


def test_eval_and_variadic():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    c = mx.sym.Concat(a, b, dim=1)
    assert c.list_arguments() == ["a", "b"]
    assert json.loads(c.tojson())["nodes"][2]["attrs"] == {"dim": "1", "num_args": "2"}
    x, y = np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((2, 2), np.float32)
    out = c.eval(ctx=mx.cpu(), a=mx.nd.array(x), b=mx.nd.array(y))
    np.testing.assert_array_equal(out[0].asnumpy(), np.concatenate([x, y], 1))


def test_fluent_methods_and_constructors():
    x = mx.sym.Variable("x")
    s = x.reshape((2, -1)).sum(axis=1)
    assert s.infer_shape(x=(2, 3, 4)) == ([(2, 3, 4)], [(2,)], [])
    assert x.astype("float16").infer_type(x="float32")[1] == [np.float16]
    z = mx.sym.zeros((2, 3))
    np.testing.assert_array_equal(z.eval(ctx=mx.cpu())[0].asnumpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(mx.sym.ones((2,)).eval(ctx=mx.cpu())[0].asnumpy(), np.ones(2))


def test_symbol_ufuncs_with_scalars_and_symbols():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    av = np.array([[0.5, -2.0, 3.0]], dtype=np.float32)
    bv = np.array([[1.0], [-1.0]], dtype=np.float32)
    cases = [
        (mx.sym.maximum(a, 1.0), np.maximum(av, 1.0)),
        (mx.sym.maximum(1.0, a), np.maximum(av, 1.0)),
        (mx.sym.minimum(a, b), np.minimum(av, bv)),
        (mx.sym.power(a, 2), av ** 2),
        (mx.sym.power(2, a), 2.0 ** av),
        (mx.sym.hypot(a, b), np.hypot(av, bv)),
    ]
    for s, want in cases:
        args = {"a": mx.nd.array(av)}
        if "b" in s.list_arguments():
            args["b"] = mx.nd.array(bv)
        np.testing.assert_allclose(s.eval(**args)[0].asnumpy(), want, rtol=1e-6)
    assert mx.sym.maximum(2, 3) == 3 and mx.sym.pow(2, 3) == 8


def test_symbol_truth_value_is_not_implemented_for_symbol():
    x = mx.sym.Variable("x")
    with pytest.raises(mx.base.NotImplementedForSymbol) as e:
        bool(x)
    assert isinstance(e.value, mx.MXNetError)
    assert "bool" in str(e.value)


def test_tojson_marks_np_shape_graphs():
    from oxnet.util import np_shape
    s = mx.sym.FullyConnected(mx.sym.var("data"), mx.sym.var("w", shape=(4, 0)), num_hidden=4)
    assert "is_np_shape" not in json.loads(s.tojson())["attrs"]
    with np_shape(True):
        text = s.tojson()
        assert json.loads(text)["attrs"]["is_np_shape"] == ["int", 1]
        # the marked JSON loads back and keeps the mark
        assert json.loads(mx.sym.load_json(text).tojson())["attrs"]["is_np_shape"] == ["int", 1]
    # a legacy file (no mark): 0 in a variable's shape is an unknown dim
    legacy = mx.sym.load_json(s.tojson())
    args, outs, _ = legacy.infer_shape(data=(3, 5))
    assert args[1] == (4, 5) and outs[0] == (3, 4)
