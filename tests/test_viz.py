"""mx.viz: plot_network's Digraph source and print_summary's table, compared with
what MXNet 1.9.1 printed for the same networks; rendering with dot when present."""

import os
import shutil

import pytest

import oxnet as mx

graphviz = pytest.importorskip("graphviz")


def _net():
    a = mx.sym.Variable("a")
    b = mx.sym.Variable("b")
    with mx.name.NameManager():
        c = mx.sym.Reshape(a * b, shape=(0, -1))
        d = mx.sym.Flatten(mx.sym.exp(c))
        e = mx.sym.Concat(d, c, dim=1)
        return mx.sym.sum_axis(e, axis=1)


# What MXNet 1.9.1 (graphviz 0.8.4) printed for _net().
MX_SOURCE_SHAPES = """digraph plot {
\ta [label=a fillcolor="#8dd3c7" fixedsize=true height=0.8034 shape=oval style=filled width=1.3]
\tb [label=b fillcolor="#8dd3c7" fixedsize=true height=0.8034 shape=oval style=filled width=1.3]
\t_mul0 [label=_mul0 fillcolor="#fccde5" fixedsize=true height=0.8034 shape=box style=filled width=1.3]
\treshape0 [label=reshape0 fillcolor="#fdb462" fixedsize=true height=0.8034 shape=box style=filled width=1.3]
\texp0 [label=exp0 fillcolor="#fccde5" fixedsize=true height=0.8034 shape=box style=filled width=1.3]
\tflatten0 [label=flatten0 fillcolor="#fdb462" fixedsize=true height=0.8034 shape=box style=filled width=1.3]
\tconcat0 [label=concat0 fillcolor="#fdb462" fixedsize=true height=0.8034 shape=box style=filled width=1.3]
\tsum_axis0 [label=sum_axis0 fillcolor="#fccde5" fixedsize=true height=0.8034 shape=box style=filled width=1.3]
\t_mul0 -> a [label="3x4" arrowtail=open dir=back]
\t_mul0 -> b [label="3x4" arrowtail=open dir=back]
\treshape0 -> _mul0 [label="3x4" arrowtail=open dir=back]
\texp0 -> reshape0 [label=12 arrowtail=open dir=back]
\tflatten0 -> exp0 [label=12 arrowtail=open dir=back]
\tconcat0 -> flatten0 [label=12 arrowtail=open dir=back]
\tconcat0 -> reshape0 [label=12 arrowtail=open dir=back]
\tsum_axis0 -> concat0 [label=24 arrowtail=open dir=back]
}"""

MX_SUMMARY = """______________________________________________________________________
Layer (type)                  Output Shape  Param #Previous Layer     
======================================================================
a(null)                                     0                         
______________________________________________________________________
_mul0(elemwise_mul)                         0      a                  
______________________________________________________________________
reshape0(Reshape)                           0      _mul0              
______________________________________________________________________
exp0(exp)                                   0      reshape0           
______________________________________________________________________
flatten0(Flatten)                           0      exp0               
______________________________________________________________________
concat0(Concat)                             0      flatten0           
                                                   reshape0           
______________________________________________________________________
sum_axis0(sum)                              0      concat0            
======================================================================
Total params: 0
______________________________________________________________________
"""


def test_plot_network_source_matches_mxnet():
    g = mx.viz.plot_network(_net(), shape={"a": (2, 3, 4), "b": (2, 3, 4)})
    assert isinstance(g, graphviz.Digraph)
    assert g.source.rstrip("\n") == MX_SOURCE_SHAPES


def test_plot_network_title_format_node_attrs():
    g = mx.viz.plot_network(_net(), title="net", save_format="svg", node_attrs={"shape": "oval"})
    assert g.name == "net" and g.format == "svg"
    src = g.source
    assert src.startswith("digraph net {")
    assert "shape=box" not in src and 'label=""' in src


def test_plot_network_hides_weights_and_labels_ops():
    x = mx.sym.Variable("x")
    w = mx.sym.Variable("fc_weight")
    s = mx.sym.dot(x, w, name="d")
    assert "fc_weight" not in mx.viz.plot_network(s).source
    assert "d -> fc_weight" in mx.viz.plot_network(s, hide_weights=False).source


def test_plot_network_bad_inputs():
    with pytest.raises(TypeError):
        mx.viz.plot_network("not a symbol")
    # shapes that leave an input unknown (a broadcast op infers nothing backward; an
    # elementwise one would give b a's shape, as in MXNet)
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    with pytest.raises(ValueError):
        mx.viz.plot_network(mx.sym.broadcast_add(a, b), shape={"a": (2, 3, 4)})


def test_print_summary_matches_mxnet(capsys):
    mx.viz.print_summary(_net(), line_length=70)
    assert capsys.readouterr().out == MX_SUMMARY


def test_print_summary_one_dim_shapes_do_not_crash(capsys):
    x = mx.sym.Variable("x")
    s = mx.sym.Flatten(mx.sym.exp(x, name="e"), name="f")
    mx.viz.print_summary(s, shape={"x": (32,)})
    out = capsys.readouterr().out
    assert "e(exp)" in out and "f(Flatten)" in out and "Total params: 0" in out


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz 'dot' program not installed")
@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_render(tmp_path, fmt):
    g = mx.viz.plot_network(_net(), save_format=fmt, shape={"a": (2, 3, 4), "b": (2, 3, 4)})
    path = g.render(filename=str(tmp_path / "net"))
    assert os.path.exists(path) and os.path.getsize(path) > 100
