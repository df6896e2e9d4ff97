"""``mx.viz``: draw a symbol with graphviz (:func:`plot_network`) and print its
layer table (:func:`print_summary`), with MXNet 1.9.1's names, colours, labels and
layout.

Rendering the returned ``graphviz.Digraph`` to PDF/PNG/SVG needs the graphviz
``dot`` program (Debian/Ubuntu: ``apt-get install graphviz``) besides the
``graphviz`` Python package (``pip install oxnet[viz]``).

Differences from MXNet 1.9.1, on purpose: ``print_summary`` does not crash on
1-D input shapes (MXNet raises IndexError); a layer with 1-D inputs simply adds
nothing to the next layer's input-channel count.
"""

import collections
import copy
import json
import re
import warnings

from .base import MXNetError
from .symbol import Symbol

_COLORS = ("#8dd3c7", "#fb8072", "#ffffb3", "#bebada", "#80b1d3", "#fdb462", "#b3de69", "#fccde5")
_WEIGHT_SUFFIXES = ("_weight", "_bias", "_beta", "_gamma", "_moving_var", "_moving_mean",
                    "_running_var", "_running_mean")


def _str2tuple(s):
    return re.findall(r"\d+", str(s))


def _looks_like_weight(name):
    return name.endswith(_WEIGHT_SUFFIXES)


def _shape_dict(symbol, shape, dtype=None):
    internals = symbol.get_internals()
    _, out_shapes, _ = internals.infer_shape(**shape)
    if out_shapes is None:
        raise ValueError("Input shape is incomplete")
    return dict(zip(internals.list_outputs(), out_shapes))


def _entry_key(node):
    """The internals output name of a node's (first) output."""
    if node["op"] == "null":
        return node["name"]
    return node["name"] + "_output"


def print_summary(symbol, shape=None, line_length=120, positions=(.44, .64, .74, 1.)):
    """Prints a table of the layers: name (type), output shape, parameter count and
    previous layers, then the total parameter count.

    Parameters
    ----------
    symbol : Symbol
    shape : dict of str to tuple, optional
        Input shapes; without them the output-shape column stays empty.
    line_length : int
    positions : sequence of float
        Where each column ends, relative (<= 1) or absolute.
    """
    if not isinstance(symbol, Symbol):
        raise TypeError("symbol must be Symbol")
    show_shape = shape is not None
    shape_dict = _shape_dict(symbol, shape) if show_shape else {}
    conf = json.loads(symbol.tojson())
    nodes = conf["nodes"]
    heads = set(conf["heads"][0])
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    to_display = ["Layer (type)", "Output Shape", "Param #", "Previous Layer"]

    def print_row(fields, positions):
        line = ""
        for i, field in enumerate(fields):
            line += str(field)
            line = line[:positions[i]]
            line += " " * (positions[i] - len(line))
        print(line)

    print("_" * line_length)
    print_row(to_display, positions)
    print("=" * line_length)

    def layer_summary(node, out_shape):
        op = node["op"]
        pre_node = []
        pre_filter = 0
        if op != "null":
            for item in node["inputs"]:
                input_node = nodes[item[0]]
                input_name = input_node["name"]
                if input_node["op"] != "null" or item[0] in heads:
                    pre_node.append(input_name)
                    if show_shape:
                        key = _entry_key(input_node)
                        if key in shape_dict:
                            in_shape = shape_dict[key][1:]
                            if in_shape:
                                pre_filter += int(in_shape[0])
        attrs = node.get("attrs", {})
        cur_param = 0
        if op == "Convolution":
            num_filter = int(attrs["num_filter"])
            cur_param = pre_filter * num_filter // int(attrs.get("num_group", 1))
            for k in _str2tuple(attrs["kernel"]):
                cur_param *= int(k)
            if attrs.get("no_bias", "False") not in ("True", "true", "1"):
                cur_param += num_filter
        elif op == "FullyConnected":
            num_hidden = int(attrs["num_hidden"])
            cur_param = pre_filter * num_hidden
            if attrs.get("no_bias", "False") not in ("True", "true", "1"):
                cur_param += num_hidden
        elif op == "BatchNorm":
            key = node["name"] + "_output"
            if show_shape and key in shape_dict and len(shape_dict[key]) > 1:
                cur_param = int(shape_dict[key][1]) * 2
        elif op == "Embedding":
            cur_param = int(attrs["input_dim"]) * int(attrs["output_dim"])
        first = pre_node[0] if pre_node else ""
        print_row(["%s(%s)" % (node["name"], op), "x".join(str(x) for x in out_shape), cur_param, first],
                  positions)
        for extra in pre_node[1:]:
            print_row(["", "", "", extra], positions)
        return cur_param

    total = 0
    for i, node in enumerate(nodes):
        out_shape = []
        op = node["op"]
        if op == "null" and i > 0:
            continue
        if op != "null" or i in heads:
            if show_shape:
                key = _entry_key(node)
                if key in shape_dict:
                    out_shape = shape_dict[key][1:]
        total += layer_summary(node, out_shape)
        print(("=" if i == len(nodes) - 1 else "_") * line_length)
    print("Total params: %s" % total)
    print("_" * line_length)


def plot_network(symbol, title="plot", save_format="pdf", shape=None, dtype=None, node_attrs=None,
                 hide_weights=True):
    """The graph of ``symbol`` as a ``graphviz.Digraph`` (MXNet's colours, shapes
    and labels; edges labelled with shapes when ``shape`` is given).

    Parameters
    ----------
    symbol : Symbol
    title : str
    save_format : str
        'pdf', 'png', 'svg', ... (what ``render`` writes).
    shape : dict of str to tuple, optional
    dtype : dict of str to dtype, optional
    node_attrs : dict, optional
        Graphviz node attributes overriding the defaults.
    hide_weights : bool
        Leave out the edges to weights, biases and BatchNorm statistics.
    """
    try:
        from graphviz import Digraph
    except ImportError as e:
        raise ImportError("Draw network requires graphviz library (pip install graphviz)") from e
    if not isinstance(symbol, Symbol):
        raise TypeError("symbol must be a Symbol")
    draw_shape = shape is not None
    shape_dict = _shape_dict(symbol, shape, dtype) if draw_shape else {}
    conf = json.loads(symbol.tojson())
    nodes = conf["nodes"]
    counts = collections.Counter(node["name"] for node in nodes)
    repeated = sorted(n for n, c in counts.items() if c > 1)
    if repeated:
        # Graphviz joins nodes by name, so repeated names draw a wrong (maybe cyclic) graph.
        warnings.warn("There are multiple variables with the same name in your graph, this may "
                      "result in cyclic graph. Repeated names: " + ",".join(repeated), RuntimeWarning)
    node_attr = {"shape": "box", "fixedsize": "true", "width": "1.3", "height": "0.8034",
                 "style": "filled"}
    node_attr.update(node_attrs or {})
    dot = Digraph(name=title, format=save_format)
    hidden = set()
    for node in nodes:
        op = node["op"]
        name = node["name"]
        attr = copy.deepcopy(node_attr)
        attrs = node.get("attrs", {})
        label = name
        if op == "null":
            if _looks_like_weight(name):
                if hide_weights:
                    hidden.add(name)
                continue
            attr["shape"] = "oval"
            attr["fillcolor"] = _COLORS[0]
        elif op == "Convolution":
            stride = "x".join(_str2tuple(attrs["stride"])) if "stride" in attrs else "1"
            label = "Convolution\n%s/%s, %s" % ("x".join(_str2tuple(attrs["kernel"])), stride,
                                                attrs["num_filter"])
            attr["fillcolor"] = _COLORS[1]
        elif op == "FullyConnected":
            label = "FullyConnected\n%s" % attrs["num_hidden"]
            attr["fillcolor"] = _COLORS[1]
        elif op == "BatchNorm":
            attr["fillcolor"] = _COLORS[3]
        elif op in ("Activation", "LeakyReLU"):
            label = "%s\n%s" % (op, attrs.get("act_type", "Leaky" if op == "LeakyReLU" else ""))
            attr["fillcolor"] = _COLORS[2]
        elif op == "Pooling":
            stride = "x".join(_str2tuple(attrs["stride"])) if "stride" in attrs else "1"
            label = "Pooling\n%s, %s/%s" % (attrs.get("pool_type", "max"),
                                            "x".join(_str2tuple(attrs.get("kernel", ""))), stride)
            attr["fillcolor"] = _COLORS[4]
        elif op in ("Concat", "Flatten", "Reshape"):
            attr["fillcolor"] = _COLORS[5]
        elif op == "Softmax":
            attr["fillcolor"] = _COLORS[6]
        else:
            attr["fillcolor"] = _COLORS[7]
        dot.node(name=name, label=label, **attr)

    for node in nodes:
        if node["op"] == "null":
            continue
        name = node["name"]
        for item in node["inputs"]:
            input_node = nodes[item[0]]
            input_name = input_node["name"]
            if input_name in hidden:
                continue
            label = ""
            if draw_shape:
                key = _entry_key(input_node)
                if input_node["op"] != "null" and "num_outputs" in input_node.get("attrs", {}):
                    key += str(int(input_node["attrs"]["num_outputs"]) - 1)
                if key in shape_dict:
                    label = "x".join(str(x) for x in shape_dict[key][1:])
            dot.edge(tail_name=name, head_name=input_name, label=label, dir="back", arrowtail="open")
    return dot


__all__ = ["plot_network", "print_summary"]
