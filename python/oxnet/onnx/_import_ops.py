"""ONNX operator -> oxnet symbols, one function per ONNX op type. Each takes
(imp, node, inputs, attrs, name) and returns the value of each node output (a Symbol,
a NumPy array when the result is constant, or a list of them)."""

import numpy as np

from ..base import MXNetError
from ._common import Translations, fail

_TABLE = Translations()
register, get, supported_ops = _TABLE.register, _TABLE.get, _TABLE.supported_ops
_fail = fail
INT_BIG = 2 ** 62




def _S(imp):
    return imp.sym


def _symfn(imp, name):
    """The symbol function of registry op ``name`` (public or ``_internal``)."""
    f = getattr(imp.sym, name, None)
    if f is None:
        f = getattr(imp.sym._internal, name)
    return f


def _ints(v):
    return [int(x) for x in np.asarray(v).reshape(-1)]


def _input_or_attr(imp, ins, k, attrs, key, since):
    """An argument that moved from an attribute to an input at opset ``since``."""
    if imp.opset >= since:
        if len(ins) > k and ins[k] != "":
            v = imp.const(ins[k])
            if v is None:
                _fail("input %r must be a constant (initializer or Constant)" % ins[k])
            return v
        return None
    return attrs.get(key)


def _sym_pads(pads, nd, what="pads"):
    if not pads:
        return (0,) * nd
    pads = [int(p) for p in pads]
    begin, end = pads[:nd], pads[nd:]
    if begin != end:
        return None
    return tuple(begin)


def _auto_pad(imp, attrs):
    ap = attrs.get("auto_pad", "NOTSET")
    if ap not in ("NOTSET", "VALID", ""):
        _fail("auto_pad=%s is not supported" % ap)
    return ap == "VALID"


# ---- layers ---------------------------------------------------------------------------

@register("Conv")
def _conv(imp, node, ins, attrs, name):
    S = _S(imp)
    wshape = imp.shape(ins[1])
    if wshape is None:
        _fail("the weight shape of Conv is not known")
    kernel = tuple(attrs.get("kernel_shape", wshape[2:]))
    nd = len(kernel)
    valid = _auto_pad(imp, attrs)
    pads = (0,) * nd if valid else _sym_pads(attrs.get("pads"), nd)
    x = imp.get(ins[0])
    if pads is None:
        p = [int(v) for v in attrs["pads"]]
        x = S.pad(x, mode="constant", constant_value=0,
                  pad_width=(0, 0, 0, 0) + tuple(v for k in range(nd) for v in (p[k], p[nd + k])))
        pads = (0,) * nd
    group = int(attrs.get("group", 1))
    kw = dict(kernel=kernel, stride=tuple(attrs.get("strides", (1,) * nd)),
              dilate=tuple(attrs.get("dilations", (1,) * nd)), pad=pads,
              num_filter=int(wshape[0]), num_group=group, name=name)
    if len(ins) > 2 and ins[2]:
        return S.Convolution(x, imp.get(ins[1]), imp.get(ins[2]), no_bias=False, **kw)
    return S.Convolution(x, imp.get(ins[1]), no_bias=True, **kw)


@register("ConvTranspose")
def _convt(imp, node, ins, attrs, name):
    S = _S(imp)
    wshape = imp.shape(ins[1])
    if wshape is None:
        _fail("the weight shape of ConvTranspose is not known")
    kernel = tuple(attrs.get("kernel_shape", wshape[2:]))
    nd = len(kernel)
    valid = _auto_pad(imp, attrs)
    pads = (0,) * nd if valid else _sym_pads(attrs.get("pads"), nd)
    if pads is None:
        _fail("asymmetric pads are not supported")
    group = int(attrs.get("group", 1))
    kw = dict(kernel=kernel, stride=tuple(attrs.get("strides", (1,) * nd)),
              dilate=tuple(attrs.get("dilations", (1,) * nd)), pad=pads,
              num_filter=int(wshape[1]) * group, num_group=group, name=name)
    if "output_padding" in attrs:
        kw["adj"] = tuple(int(a) for a in attrs["output_padding"])
    if "output_shape" in attrs:
        kw["target_shape"] = tuple(int(a) for a in attrs["output_shape"])[-nd:]
    x = imp.get(ins[0])
    if len(ins) > 2 and ins[2]:
        return S.Deconvolution(x, imp.get(ins[1]), imp.get(ins[2]), no_bias=False, **kw)
    return S.Deconvolution(x, imp.get(ins[1]), no_bias=True, **kw)


def _pool(pool_type):
    def fn(imp, node, ins, attrs, name):
        S = _S(imp)
        if len(node.output) > 1 and node.output[1]:
            _fail("the Indices output of MaxPool is not supported")
        kernel = tuple(int(k) for k in attrs["kernel_shape"])
        nd = len(kernel)
        if any(int(d) != 1 for d in attrs.get("dilations", ())):
            _fail("dilated pooling is not supported")
        valid = _auto_pad(imp, attrs)
        pads = (0,) * nd if valid else _sym_pads(attrs.get("pads"), nd)
        x = imp.get(ins[0])
        if pads is None:
            if pool_type != "max":
                _fail("asymmetric pads are not supported")
            p = [int(v) for v in attrs["pads"]]
            x = S.pad(x, mode="constant", constant_value=-3.4e38,
                      pad_width=(0, 0, 0, 0) + tuple(v for k in range(nd)
                                                     for v in (p[k], p[nd + k])))
            pads = (0,) * nd
        kw = dict(kernel=kernel, stride=tuple(int(s) for s in attrs.get("strides", (1,) * nd)),
                  pad=pads, pool_type=pool_type, name=name,
                  pooling_convention="full" if int(attrs.get("ceil_mode", 0)) else "valid")
        if pool_type == "avg":
            kw["count_include_pad"] = bool(int(attrs.get("count_include_pad", 0)))
        if pool_type == "lp":
            kw["p_value"] = int(attrs.get("p", 2))
        return S.Pooling(x, **kw)
    return fn


register("MaxPool")(_pool("max"))
register("AveragePool")(_pool("avg"))
register("LpPool")(_pool("lp"))


def _global_pool(pool_type):
    def fn(imp, node, ins, attrs, name):
        rank = imp.rank(ins[0]) or 4
        kw = {"p_value": int(attrs.get("p", 2))} if pool_type == "lp" else {}
        return _S(imp).Pooling(imp.get(ins[0]), kernel=(1,) * (rank - 2), global_pool=True,
                               pool_type=pool_type, name=name, **kw)
    return fn


register("GlobalMaxPool")(_global_pool("max"))
register("GlobalAveragePool")(_global_pool("avg"))
register("GlobalLpPool")(_global_pool("lp"))


@register("BatchNormalization")
def _batchnorm(imp, node, ins, attrs, name):
    if int(attrs.get("training_mode", 0)):
        _fail("training_mode=1 is not supported")
    return _S(imp).BatchNorm(*[imp.get(i) for i in ins[:5]], eps=float(attrs.get("epsilon", 1e-5)),
                             momentum=float(attrs.get("momentum", 0.9)), fix_gamma=False,
                             use_global_stats=True, name=name)


@register("InstanceNormalization")
def _instnorm(imp, node, ins, attrs, name):
    return _S(imp).InstanceNorm(*[imp.get(i) for i in ins[:3]],
                                eps=float(attrs.get("epsilon", 1e-5)), name=name)


@register("LayerNormalization")
def _layernorm(imp, node, ins, attrs, name):
    axis = int(attrs.get("axis", -1))
    rank = imp.rank(ins[0])
    if axis != -1 and (rank is None or axis != rank - 1):
        _fail("LayerNormalization over more than the last axis is not supported")
    if len(node.output) > 1 and any(node.output[1:]):
        _fail("the Mean/InvStdDev outputs are not supported")
    if len(ins) > 2 and ins[2]:
        beta = imp.get(ins[2])
    else:
        c = imp.shape(ins[1])
        beta = imp.param(name + "_beta", np.zeros(c, dtype=np.float32))
    return _S(imp).LayerNorm(imp.get(ins[0]), imp.get(ins[1]), beta, axis=-1,
                             eps=float(attrs.get("epsilon", 1e-5)), name=name)


@register("LRN")
def _lrn(imp, node, ins, attrs, name):
    return _S(imp).LRN(imp.get(ins[0]), alpha=float(attrs.get("alpha", 1e-4)),
                       beta=float(attrs.get("beta", 0.75)), knorm=float(attrs.get("bias", 1.0)),
                       nsize=int(attrs["size"]), name=name)


def _transposed_param(imp, tensor, hint):
    return imp.param(hint, np.ascontiguousarray(imp.const(tensor).T))


@register("Gemm")
def _gemm(imp, node, ins, attrs, name):
    S = _S(imp)
    alpha = float(attrs.get("alpha", 1.0))
    beta = float(attrs.get("beta", 1.0))
    ta, tb = int(attrs.get("transA", 0)), int(attrs.get("transB", 0))
    has_c = len(ins) > 2 and ins[2] != ""
    b_const = imp.const(ins[1])
    c_ok = not has_c or (beta == 1.0 and imp.rank(ins[2]) == 1)
    if not ta and alpha == 1.0 and c_ok and b_const is not None and b_const.ndim == 2:
        w = imp.get(ins[1]) if tb else _transposed_param(imp, ins[1], ins[1] + "_T")
        n = b_const.shape[0] if tb else b_const.shape[1]
        if has_c:
            return S.FullyConnected(imp.get(ins[0]), w, imp.get(ins[2]), num_hidden=int(n),
                                    no_bias=False, flatten=True, name=name)
        return S.FullyConnected(imp.get(ins[0]), w, num_hidden=int(n), no_bias=True,
                                flatten=True, name=name)
    y = S.dot(imp.get(ins[0]), imp.get(ins[1]), transpose_a=bool(ta), transpose_b=bool(tb))
    if alpha != 1.0:
        y = y * alpha
    if has_c:
        c = imp.get(ins[2])
        if beta != 1.0:
            c = c * beta
        y = S.broadcast_add(y, c, name=name)
    return y


@register("MatMul")
def _matmul(imp, node, ins, attrs, name):
    S = _S(imp)
    ra, rb = imp.rank(ins[0]), imp.rank(ins[1])
    b_const = imp.const(ins[1])
    if b_const is not None and b_const.ndim == 2:
        w = _transposed_param(imp, ins[1], ins[1] + "_T")
        return S.FullyConnected(imp.get(ins[0]), w, num_hidden=int(b_const.shape[1]),
                                no_bias=True, flatten=False, name=name)
    a, b = imp.get(ins[0]), imp.get(ins[1])
    if rb == 2 or (ra == 2 and rb == 2):
        return S.dot(a, b, name=name)
    if ra == 3 and rb == 3:
        return S.batch_dot(a, b, name=name)
    if ra is not None and ra == rb and ra > 3:
        return S.linalg.gemm2(a, b, name=name)
    _fail("MatMul of ranks %s and %s is not supported" % (ra, rb))


# ---- elementwise ----------------------------------------------------------------------

def _align_const(imp, const_name, other_name):
    """A constant operand as a parameter reshaped to the other operand's rank (ONNX
    broadcasting aligns trailing dims)."""
    v = imp.const(const_name)
    r = imp.rank(other_name)
    if r is not None and v.ndim < r:
        return imp.param(const_name, v.reshape((1,) * (r - v.ndim) + v.shape))
    return imp.get(const_name)


_SCALAR_OPS = {"Add": ("_plus_scalar", "_plus_scalar"), "Sub": ("_minus_scalar", "_rminus_scalar"),
               "Mul": ("_mul_scalar", "_mul_scalar"), "Div": ("_div_scalar", "_rdiv_scalar"),
               "Pow": ("_power_scalar", "_rpower_scalar"),
               "Max": ("_maximum_scalar", "_maximum_scalar"),
               "Min": ("_minimum_scalar", "_minimum_scalar")}
_BCAST_OPS = {"Add": "broadcast_add", "Sub": "broadcast_sub", "Mul": "broadcast_mul",
              "Div": "broadcast_div", "Pow": "broadcast_power", "Max": "broadcast_maximum",
              "Min": "broadcast_minimum", "Equal": "broadcast_equal",
              "Greater": "broadcast_greater", "Less": "broadcast_lesser",
              "GreaterOrEqual": "broadcast_greater_equal", "LessOrEqual": "broadcast_lesser_equal",
              "And": "broadcast_logical_and", "Or": "broadcast_logical_or",
              "Xor": "broadcast_logical_xor"}
_NP_OPS = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": None,
           "Pow": np.power, "Max": np.maximum, "Min": np.minimum}


def _binary(imp, op_type, a_name, b_name, name):
    S = _S(imp)
    ca, cb = imp.const(a_name), imp.const(b_name)
    if ca is not None and cb is not None and _NP_OPS.get(op_type) is not None:
        return _NP_OPS[op_type](ca, cb).astype(np.result_type(ca, cb))
    if op_type in _SCALAR_OPS:
        if cb is not None and cb.size == 1 and (imp.rank(a_name) or 0) >= cb.ndim:
            return _symfn(imp, _SCALAR_OPS[op_type][0])(imp.get(a_name), scalar=float(cb.reshape(-1)[0]),
                                                        name=name)
        if ca is not None and ca.size == 1 and (imp.rank(b_name) or 0) >= ca.ndim:
            return _symfn(imp, _SCALAR_OPS[op_type][1])(imp.get(b_name), scalar=float(ca.reshape(-1)[0]),
                                                        name=name)
    a = _align_const(imp, a_name, b_name) if ca is not None else imp.get(a_name)
    b = _align_const(imp, b_name, a_name) if cb is not None else imp.get(b_name)
    return getattr(S, _BCAST_OPS[op_type])(a, b, name=name)


def _binary_op(op_type):
    def fn(imp, node, ins, attrs, name):
        if int(attrs.get("broadcast", 1)) and "axis" in attrs and imp.opset < 7:
            _fail("legacy broadcast with axis is not supported")
        return _binary(imp, op_type, ins[0], ins[1], name)
    return fn


for _op in ("Add", "Sub", "Mul", "Div", "Pow", "Equal", "Greater", "Less", "GreaterOrEqual",
            "LessOrEqual", "And", "Or", "Xor"):
    register(_op)(_binary_op(_op))


def _variadic(op_type):
    def fn(imp, node, ins, attrs, name):
        ins = [i for i in ins if i]
        if len(ins) == 1:
            return _S(imp).identity(imp.get(ins[0]), name=name)
        y = _binary(imp, op_type, ins[0], ins[1], name if len(ins) == 2 else None)
        for k, i in enumerate(ins[2:]):
            tmp = name + "_acc%d" % k
            imp.symbols[tmp] = y
            y = _binary(imp, op_type, tmp, i, name if k == len(ins) - 3 else None)
        return y
    return fn


register("Max")(_variadic("Max"))
register("Min")(_variadic("Min"))
register("Sum")(_variadic("Add"))


@register("Mean")
def _mean(imp, node, ins, attrs, name):
    y = _variadic("Add")(imp, node, ins, attrs, name + "_sum")
    return _symfn(imp, "_div_scalar")(y, scalar=float(len([i for i in ins if i])), name=name)


def _unary(fn_name, **kw):
    def fn(imp, node, ins, attrs, name):
        return getattr(_S(imp), fn_name)(imp.get(ins[0]), name=name, **kw)
    return fn


for _op, _fn in [("Relu", "relu"), ("Sigmoid", "sigmoid"), ("Tanh", "tanh"), ("Exp", "exp"),
                 ("Log", "log"), ("Sqrt", "sqrt"), ("Abs", "abs"), ("Neg", "negative"),
                 ("Reciprocal", "reciprocal"), ("Floor", "floor"), ("Ceil", "ceil"),
                 ("Erf", "erf"), ("Sin", "sin"), ("Cos", "cos"), ("Tan", "tan"),
                 ("Asin", "arcsin"), ("Acos", "arccos"), ("Atan", "arctan"), ("Sign", "sign"),
                 ("Softsign", "softsign"), ("Identity", "identity"), ("Not", "logical_not")]:
    register(_op)(_unary(_fn))


@register("Dropout")
def _dropout(imp, node, ins, attrs, name):
    return _S(imp).identity(imp.get(ins[0]), name=name)


@register("Softplus")
def _softplus(imp, node, ins, attrs, name):
    return _S(imp).Activation(imp.get(ins[0]), act_type="softrelu", name=name)


@register("LeakyRelu")
def _leaky(imp, node, ins, attrs, name):
    return _S(imp).LeakyReLU(imp.get(ins[0]), act_type="leaky",
                             slope=float(attrs.get("alpha", 0.01)), name=name)


@register("Elu")
def _elu(imp, node, ins, attrs, name):
    return _S(imp).LeakyReLU(imp.get(ins[0]), act_type="elu", slope=float(attrs.get("alpha", 1.0)),
                             name=name)


@register("Selu")
def _selu(imp, node, ins, attrs, name):
    if abs(float(attrs.get("alpha", 1.67326319217681884765625)) - 1.6732632) > 1e-6 or \
            abs(float(attrs.get("gamma", 1.05070102214813232421875)) - 1.0507010) > 1e-6:
        _fail("Selu with non-default alpha/gamma is not supported")
    return _S(imp).LeakyReLU(imp.get(ins[0]), act_type="selu", name=name)


@register("Gelu")
def _gelu(imp, node, ins, attrs, name):
    if attrs.get("approximate", "none") != "none":
        _fail("approximate=tanh is not supported")
    return _S(imp).LeakyReLU(imp.get(ins[0]), act_type="gelu", name=name)


@register("PRelu")
def _prelu(imp, node, ins, attrs, name):
    slope = imp.const(ins[1])
    if slope is None:
        _fail("the slope of PRelu must be a constant")
    if slope.size == 1:
        return _S(imp).LeakyReLU(imp.get(ins[0]), act_type="leaky",
                                 slope=float(slope.reshape(-1)[0]), name=name)
    gamma = imp.param(ins[1], slope.reshape(-1))
    return _S(imp).LeakyReLU(imp.get(ins[0]), gamma, act_type="prelu", name=name)


@register("HardSigmoid")
def _hard_sigmoid(imp, node, ins, attrs, name):
    return _S(imp).hard_sigmoid(imp.get(ins[0]), alpha=float(attrs.get("alpha", 0.2)),
                                beta=float(attrs.get("beta", 0.5)), name=name)


@register("Clip")
def _clip(imp, node, ins, attrs, name):
    if imp.opset >= 11:
        lo = imp.const(ins[1]) if len(ins) > 1 and ins[1] else None
        hi = imp.const(ins[2]) if len(ins) > 2 and ins[2] else None
        if (len(ins) > 1 and ins[1] and lo is None) or (len(ins) > 2 and ins[2] and hi is None):
            _fail("the min/max of Clip must be constants")
        lo = -3.4e38 if lo is None else float(np.asarray(lo).reshape(-1)[0])
        hi = 3.4e38 if hi is None else float(np.asarray(hi).reshape(-1)[0])
    else:
        lo = float(attrs.get("min", -3.4e38))
        hi = float(attrs.get("max", 3.4e38))
    return _S(imp).clip(imp.get(ins[0]), a_min=lo, a_max=hi, name=name)


_NP_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 6: "int32", 7: "int64", 9: "bool",
              10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 16: "bfloat16"}


@register("Cast")
def _cast(imp, node, ins, attrs, name):
    to = int(attrs["to"])
    dt = _NP_DTYPES.get(to)
    if dt is None or dt in ("uint32", "uint64", "bfloat16"):
        _fail("Cast to ONNX type %d is not supported" % to)
    c = imp.const(ins[0])
    if c is not None:
        return c.astype(dt)
    if dt == "bool":
        dt = "float32"  # MXNet has no bool tensors: comparisons give 0/1 floats
    return _S(imp).Cast(imp.get(ins[0]), dtype=dt, name=name)


@register("Where")
def _where(imp, node, ins, attrs, name):
    return _S(imp).where(imp.get(ins[0]), imp.get(ins[1]), imp.get(ins[2]), name=name)


# ---- softmax --------------------------------------------------------------------------

def _softmax(fn_name):
    def fn(imp, node, ins, attrs, name):
        S = _S(imp)
        x = imp.get(ins[0])
        rank = imp.rank(ins[0])
        if imp.opset >= 13:
            return getattr(S, fn_name)(x, axis=int(attrs.get("axis", -1)), name=name)
        axis = int(attrs.get("axis", 1))
        if rank is not None:
            axis %= rank
            if axis == rank - 1:
                return getattr(S, fn_name)(x, axis=-1, name=name)
        if axis == 1:
            flat = S.Reshape(x, shape=(0, -1))
            y = getattr(S, fn_name)(flat, axis=-1)
            return S.reshape_like(y, x, name=name)
        _fail("softmax over axis %d of an input of unknown rank (opset < 13) is not supported"
              % axis)
    return fn


register("Softmax")(_softmax("softmax"))
register("LogSoftmax")(_softmax("log_softmax"))


# ---- shapes ---------------------------------------------------------------------------

@register("Flatten")
def _flatten(imp, node, ins, attrs, name):
    S = _S(imp)
    axis = int(attrs.get("axis", 1))
    rank = imp.rank(ins[0])
    if rank is not None:
        axis %= rank if rank else 1
    x = imp.get(ins[0])
    if axis == 1:
        return S.Flatten(x, name=name)
    if axis == 0:
        return S.Reshape(x, shape=(1, -1), name=name)
    shape = imp.shape(ins[0])
    if shape is None or any(d == 0 for d in shape[1:axis]):
        _fail("Flatten(axis=%d) needs the input's static shape" % axis)
    return S.Reshape(x, shape=(-1, int(np.prod(shape[axis:]))), name=name)


@register("Reshape")
def _reshape(imp, node, ins, attrs, name):
    shape = _input_or_attr(imp, ins, 1, attrs, "shape", 5)
    if shape is None:
        _fail("the shape input of Reshape must be a constant")
    shape = _ints(shape)
    if int(attrs.get("allowzero", 0)) and 0 in shape:
        _fail("allowzero=1 with a 0 in the shape is not supported")
    c = imp.const(ins[0])
    if c is not None:
        in_shape = c.shape
        out = [in_shape[k] if d == 0 else d for k, d in enumerate(shape)]
        return c.reshape(out)
    return _S(imp).Reshape(imp.get(ins[0]), shape=tuple(shape), name=name)


@register("Transpose")
def _transpose(imp, node, ins, attrs, name):
    perm = attrs.get("perm")
    c = imp.const(ins[0])
    if c is not None:
        return np.transpose(c, perm)
    if perm is None:
        return _S(imp).transpose(imp.get(ins[0]), name=name)
    return _S(imp).transpose(imp.get(ins[0]), axes=tuple(int(p) for p in perm), name=name)


@register("Concat")
def _concat(imp, node, ins, attrs, name):
    axis = int(attrs.get("axis", 1))
    ins = [i for i in ins if i]
    consts = [imp.const(i) for i in ins]
    if all(c is not None for c in consts):
        return np.concatenate(consts, axis=axis)
    rank = imp.rank(ins[0])
    if axis < 0 and rank is not None:
        axis %= rank
    return _S(imp).Concat(*[imp.get(i) for i in ins], dim=axis, num_args=len(ins), name=name)


def _axes_arg(imp, ins, attrs, since):
    v = _input_or_attr(imp, ins, 1, attrs, "axes", since)
    return None if v is None else _ints(v)


@register("Squeeze")
def _squeeze(imp, node, ins, attrs, name):
    axes = _axes_arg(imp, ins, attrs, 13)
    c = imp.const(ins[0])
    if c is not None:
        return np.squeeze(c, axis=None if axes is None else tuple(axes))
    if axes is None:
        return _S(imp).squeeze(imp.get(ins[0]), name=name)
    return _S(imp).squeeze(imp.get(ins[0]), axis=tuple(axes), name=name)


@register("Unsqueeze")
def _unsqueeze(imp, node, ins, attrs, name):
    axes = _axes_arg(imp, ins, attrs, 13)
    if axes is None:
        _fail("Unsqueeze needs axes")
    c = imp.const(ins[0])
    rank = imp.rank(ins[0])
    if c is not None:
        out_rank = c.ndim + len(axes)
        for a in sorted(a % out_rank for a in axes):
            c = np.expand_dims(c, a)
        return c
    if rank is None and any(a < 0 for a in axes):
        _fail("negative axes need the input's rank")
    out_rank = (rank or 0) + len(axes)
    axes = sorted(a % out_rank if a < 0 else a for a in axes)
    y = imp.get(ins[0])
    for k, a in enumerate(axes):
        y = _S(imp).expand_dims(y, axis=a, name=name if k == len(axes) - 1 else None)
    return y


@register("Slice")
def _slice(imp, node, ins, attrs, name):
    S = _S(imp)
    if imp.opset >= 10:
        vals = []
        for k in range(1, 5):
            if len(ins) > k and ins[k]:
                v = imp.const(ins[k])
                if v is None:
                    _fail("the starts/ends/axes/steps of Slice must be constants")
                vals.append(_ints(v))
            else:
                vals.append(None)
        starts, ends, axes, steps = vals
    else:
        starts, ends = list(attrs["starts"]), list(attrs["ends"])
        axes, steps = attrs.get("axes"), None
    if axes is None:
        axes = list(range(len(starts)))
    if steps is None:
        steps = [1] * len(starts)
    rank = imp.rank(ins[0])
    if any(a < 0 for a in axes):
        if rank is None:
            _fail("negative axes need the input's rank")
        axes = [a % rank for a in axes]
    c = imp.const(ins[0])
    if c is not None:
        idx = [slice(None)] * c.ndim
        for s, e, a, st in zip(starts, ends, axes, steps):
            idx[a] = slice(s, e, st)
        return c[tuple(idx)]
    y = imp.get(ins[0])
    if all(st == 1 for st in steps):
        for k, (s, e, a) in enumerate(zip(starts, ends, axes)):
            last = k == len(axes) - 1
            y = S.slice_axis(y, axis=a, begin=s, end=None if e >= INT_BIG else e,
                             name=name if last else None)
        return y
    n = max(axes) + 1
    begin, end, step = [None] * n, [None] * n, [None] * n
    for s, e, a, st in zip(starts, ends, axes, steps):
        big = abs(e) >= INT_BIG
        begin[a] = None if (st < 0 and s >= INT_BIG) else s
        end[a] = None if big else e
        step[a] = st
    return S.slice(y, begin=tuple(begin), end=tuple(end), step=tuple(step), name=name)


@register("Split")
def _split(imp, node, ins, attrs, name):
    S = _S(imp)
    axis = int(attrs.get("axis", 0))
    rank = imp.rank(ins[0])
    if axis < 0:
        if rank is None:
            _fail("a negative axis needs the input's rank")
        axis %= rank
    n = len(node.output)
    sizes = _input_or_attr(imp, ins, 1, attrs, "split", 13)
    x = imp.get(ins[0])
    if sizes is None or len(set(_ints(sizes))) == 1:
        if n == 1:
            return [S.identity(x, name=name)]
        sc = S.SliceChannel(x, num_outputs=n, axis=axis, name=name)
        return [sc[k] for k in range(n)]
    outs = []
    off = 0
    for k, s in enumerate(_ints(sizes)):
        outs.append(S.slice_axis(x, axis=axis, begin=off, end=off + s, name=node.output[k]))
        off += s
    return outs


@register("Gather")
def _gather(imp, node, ins, attrs, name):
    S = _S(imp)
    axis = int(attrs.get("axis", 0))
    data, idx = imp.const(ins[0]), imp.const(ins[1])
    if data is not None and idx is not None:
        return np.take(data, idx.astype(np.int64), axis=axis)
    if data is not None and data.ndim == 2 and axis == 0:
        return S.Embedding(imp.get(ins[1]), imp.get(ins[0]), input_dim=int(data.shape[0]),
                           output_dim=int(data.shape[1]), name=name)
    if idx is not None and idx.ndim == 0:
        return S.squeeze(S.slice_axis(imp.get(ins[0]), axis=axis, begin=int(idx),
                                      end=int(idx) + 1 if int(idx) != -1 else None),
                         axis=axis, name=name)
    return S.take(imp.get(ins[0]), imp.get(ins[1]), axis=axis, mode="wrap", name=name)


class ShapeOf:
    """The run-time shape of a tensor (an ONNX Shape output without a static value)."""

    def __init__(self, tensor):
        self.tensor = tensor


@register("Shape")
def _shape(imp, node, ins, attrs, name):
    s = imp.shape(ins[0])
    start, end = attrs.get("start"), attrs.get("end")
    if s is None or any(d == 0 for d in s):
        if start is not None or end is not None:
            _fail("Shape with start/end of a tensor without a static shape is not supported")
        # the run-time shape: ConstantOfShape and Expand read it as *_like ops
        return ShapeOf(ins[0])
    s = np.array(s, dtype=np.int64)
    if start is not None or end is not None:
        s = s[slice(start, end)]
    return s


@register("Constant")
def _constant(imp, node, ins, attrs, name):
    for key in ("value", "value_float", "value_int", "value_floats", "value_ints"):
        if key in attrs:
            v = attrs[key]
            if key in ("value_float", "value_floats"):
                return np.asarray(v, dtype=np.float32)
            if key in ("value_int", "value_ints"):
                return np.asarray(v, dtype=np.int64)
            return np.asarray(v)
    _fail("Constant without a supported value attribute")


@register("ConstantOfShape")
def _constant_of_shape(imp, node, ins, attrs, name):
    v = attrs.get("value")
    value = np.zeros((1,), np.float32) if v is None else np.asarray(v).reshape(-1)
    marker = imp.symbols.get(ins[0])
    if isinstance(marker, ShapeOf):
        S = _S(imp)
        y = S.zeros_like(imp.get(marker.tensor))
        if value[0] != 0:
            y = _symfn(imp, "_plus_scalar")(y, scalar=float(value[0]))
        return S.Cast(y, dtype=str(value.dtype), name=name)
    shape = imp.const(ins[0])
    if shape is None:
        _fail("the shape input of ConstantOfShape must be a constant")
    return np.full(_ints(shape), value[0], dtype=value.dtype)


@register("Expand")
def _expand(imp, node, ins, attrs, name):
    marker = imp.symbols.get(ins[1])
    if isinstance(marker, ShapeOf):
        return _S(imp).broadcast_like(imp.get(ins[0]), imp.get(marker.tensor), name=name)
    shape = imp.const(ins[1])
    if shape is None:
        _fail("the shape input of Expand must be a constant")
    shape = _ints(shape)
    rank = imp.rank(ins[0])
    x = imp.get(ins[0])
    if rank is not None and rank < len(shape):
        for _ in range(len(shape) - rank):
            x = _S(imp).expand_dims(x, axis=0)
    shape = [0 if d == 1 else d for d in shape]
    return _S(imp).broadcast_to(x, shape=tuple(shape), name=name)


@register("Tile")
def _tile(imp, node, ins, attrs, name):
    reps = imp.const(ins[1])
    if reps is None:
        _fail("the repeats input of Tile must be a constant")
    return _S(imp).tile(imp.get(ins[0]), reps=tuple(_ints(reps)), name=name)


@register("Pad")
def _pad(imp, node, ins, attrs, name):
    mode = attrs.get("mode", "constant")
    if imp.opset >= 11:
        pads = _ints(imp.const(ins[1]))
        value = 0.0
        if len(ins) > 2 and ins[2]:
            value = float(np.asarray(imp.const(ins[2])).reshape(-1)[0])
        if len(ins) > 3 and ins[3]:
            _fail("the axes input of Pad is not supported")
    else:
        pads = [int(p) for p in attrs["pads"]]
        value = float(attrs.get("value", 0.0))
    n = len(pads) // 2
    width = tuple(v for k in range(n) for v in (pads[k], pads[n + k]))
    return _S(imp).pad(imp.get(ins[0]), mode=mode, pad_width=width, constant_value=value,
                       name=name)


@register("Resize", "Upsample")
def _resize(imp, node, ins, attrs, name):
    """Nearest-neighbour upsampling by one integer factor over the spatial dims (what
    MXNet's UpSampling does); other Resize modes are not supported."""
    mode = attrs.get("mode", "nearest")
    if mode != "nearest":
        _fail("mode=%s is not supported (nearest only)" % mode)
    if node.op_type == "Upsample":
        scales = attrs.get("scales") if imp.opset < 9 else imp.const(ins[1])
    else:
        ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
        nm = attrs.get("nearest_mode", "round_prefer_floor")
        if ctm != "asymmetric" or nm != "floor":
            _fail("coordinate_transformation_mode=%s nearest_mode=%s is not supported "
                  "(asymmetric/floor, as MXNet's UpSampling)" % (ctm, nm))
        scales = imp.const(ins[2]) if len(ins) > 2 and ins[2] else None
        if scales is None or np.asarray(scales).size == 0:
            _fail("Resize by sizes is not supported (scales only)")
    scales = [float(v) for v in np.asarray(scales).reshape(-1)]
    sp = scales[2:]
    if scales[:2] != [1.0, 1.0] or len(set(sp)) != 1 or sp[0] != int(sp[0]):
        _fail("scales %s are not supported (one integer factor over the spatial dims)"
              % scales)
    return _S(imp).UpSampling(imp.get(ins[0]), scale=int(sp[0]), sample_type="nearest",
                              num_args=1, name=name)


# ---- reductions -----------------------------------------------------------------------

def _reduce(fn_name, since=18, **extra):
    def fn(imp, node, ins, attrs, name):
        axes = _axes_arg(imp, ins, attrs, since)
        keep = bool(int(attrs.get("keepdims", 1)))
        if axes is None or len(axes) == 0:
            if int(attrs.get("noop_with_empty_axes", 0)):
                return _S(imp).identity(imp.get(ins[0]), name=name)
            axes = None
        kw = dict(extra)
        if axes is not None:
            kw["axis"] = tuple(axes)
        # a full reduction gives shape (1,), not (), in MXNet's (legacy) shapes
        return getattr(_S(imp), fn_name)(imp.get(ins[0]), keepdims=keep, name=name, **kw)
    return fn


register("ReduceSum")(_reduce("sum", since=13))
register("ReduceMean")(_reduce("mean"))
register("ReduceMax")(_reduce("max"))
register("ReduceMin")(_reduce("min"))
register("ReduceProd")(_reduce("prod"))
register("ReduceL2")(_reduce("norm", ord=2))
register("ReduceL1")(_reduce("norm", ord=1))


def _argreduce(fn_name):
    def fn(imp, node, ins, attrs, name):
        if int(attrs.get("select_last_index", 0)):
            _fail("select_last_index=1 is not supported")
        y = getattr(_S(imp), fn_name)(imp.get(ins[0]), axis=int(attrs.get("axis", 0)),
                                      keepdims=bool(int(attrs.get("keepdims", 1))))
        return _S(imp).Cast(y, dtype="int64", name=name)
    return fn


register("ArgMax")(_argreduce("argmax"))
register("ArgMin")(_argreduce("argmin"))


# ---- recurrent layers (need the fused RNN operator) -----------------------------------

_RNN_GATES = {"LSTM": (4, [0, 2, 3, 1], "lstm"), "GRU": (3, [1, 0, 2], "gru"),
              "RNN": (1, [0], None)}


@register("LSTM", "GRU", "RNN")
def _rnn(imp, node, ins, attrs, name):
    from .. import _core
    try:
        _core.get_op("RNN")
    except Exception:
        _fail("importing %s needs oxnet's fused RNN operator, which this build does not have"
              % node.op_type)
    S = _S(imp)
    G, order, mode = _RNN_GATES[node.op_type]
    H = int(attrs["hidden_size"])
    direction = attrs.get("direction", "forward")
    if direction not in ("forward", "bidirectional"):
        _fail("direction=%s is not supported" % direction)
    D = 2 if direction == "bidirectional" else 1
    if int(attrs.get("layout", 0)):
        _fail("layout=1 is not supported")
    if "clip" in attrs or int(attrs.get("input_forget", 0)):
        _fail("clip/input_forget are not supported")
    if node.op_type == "RNN":
        acts = [a.lower() for a in attrs.get("activations", ["Tanh"] * D)]
        if len(set(acts)) != 1 or acts[0] not in ("tanh", "relu"):
            _fail("activations %s are not supported" % acts)
        mode = "rnn_" + acts[0]
    elif "activations" in attrs:
        _fail("custom activations are not supported")
    if node.op_type == "GRU" and not int(attrs.get("linear_before_reset", 0)):
        _fail("GRU with linear_before_reset=0 is not supported (MXNet's GRU resets after the "
              "recurrent matmul)")
    if len(ins) > 4 and ins[4]:
        _fail("sequence_lens is not supported")
    if node.op_type == "LSTM" and len(ins) > 7 and ins[7]:
        _fail("peepholes are not supported")
    W, R = imp.const(ins[1]), imp.const(ins[2])
    if W is None or R is None:
        _fail("W and R must be constants")
    B = imp.const(ins[3]) if len(ins) > 3 and ins[3] else np.zeros((D, 2 * G * H), W.dtype)
    if B is None:
        _fail("B must be a constant")

    def mx_order(w):
        return np.concatenate([w[g * H:(g + 1) * H] for g in order], axis=0)

    ws = []
    bs = []
    for d in range(D):
        ws += [mx_order(W[d]).reshape(-1), mx_order(R[d]).reshape(-1)]
        bs += [mx_order(B[d][:G * H]), mx_order(B[d][G * H:])]
    flat = np.concatenate(ws + bs).astype(np.float32)
    params = imp.param(name + "_rnn_params", flat)
    x = imp.get(ins[0])

    def state(k):
        if len(ins) > k and ins[k]:
            return imp.get(ins[k])
        # ONNX's default: zeros of (D, batch, H), the batch read from x at run time
        first = S.slice_axis(x, axis=0, begin=0, end=1)
        z = _symfn(imp, "_mul_scalar")(S.sum(first, axis=2, keepdims=True), scalar=0.0)
        return S.broadcast_to(z, shape=(D, 0, H))

    args = [x, params, state(5)]
    if mode == "lstm":
        args.append(state(6))
    out = S.RNN(*args, state_size=H, num_layers=1, bidirectional=D == 2, mode=mode,
                state_outputs=True, name=name)
    y = S.transpose(S.Reshape(out[0], shape=(0, 0, D, H)), axes=(0, 2, 1, 3))
    res = [y, out[1]]
    if mode == "lstm":
        res.append(out[2])
    return res


# ---- more ops ----------------------------------------------------------------------------

@register("Round")
def _round(imp, node, ins, attrs, name):
    return _S(imp).rint(imp.get(ins[0]), name=name)  # both round halves to even


@register("DepthToSpace")
def _depth_to_space(imp, node, ins, attrs, name):
    if attrs.get("mode", "DCR") != "DCR":
        _fail("mode=%s is not supported (DCR, MXNet's order)" % attrs.get("mode"))
    return _S(imp).depth_to_space(imp.get(ins[0]), block_size=int(attrs["blocksize"]), name=name)


@register("SpaceToDepth")
def _space_to_depth(imp, node, ins, attrs, name):
    return _S(imp).space_to_depth(imp.get(ins[0]), block_size=int(attrs["blocksize"]), name=name)


@register("CumSum")
def _cumsum(imp, node, ins, attrs, name):
    if int(attrs.get("exclusive", 0)) or int(attrs.get("reverse", 0)):
        _fail("exclusive/reverse CumSum is not supported")
    axis = imp.const(ins[1])
    if axis is None:
        _fail("the axis input of CumSum must be a constant")
    return _S(imp).cumsum(imp.get(ins[0]), axis=int(np.asarray(axis).reshape(-1)[0]), name=name)


@register("TopK")
def _topk(imp, node, ins, attrs, name):
    k = imp.const(ins[1]) if imp.opset >= 10 else np.array([attrs["k"]])
    if k is None:
        _fail("the K input of TopK must be a constant")
    if not int(attrs.get("sorted", 1)):
        _fail("sorted=0 is not supported")
    res = _S(imp).topk(imp.get(ins[0]), k=int(np.asarray(k).reshape(-1)[0]),
                       axis=int(attrs.get("axis", -1)), ret_typ="both",
                       is_ascend=not int(attrs.get("largest", 1)), dtype="int64", name=name)
    return [res[0], res[1]]


@register("OneHot")
def _onehot(imp, node, ins, attrs, name):
    depth, values = imp.const(ins[1]), imp.const(ins[2])
    if depth is None or values is None:
        _fail("the depth and values inputs of OneHot must be constants")
    axis = int(attrs.get("axis", -1))
    rank = imp.rank(ins[0])
    if axis != -1 and (rank is None or axis != rank):
        _fail("OneHot with axis=%d is not supported (the last axis only)" % axis)
    values = np.asarray(values).reshape(-1)
    return _S(imp).one_hot(imp.get(ins[0]), depth=int(np.asarray(depth).reshape(-1)[0]),
                           off_value=float(values[0]), on_value=float(values[1]),
                           dtype=str(values.dtype), name=name)
