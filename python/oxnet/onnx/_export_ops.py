"""MXNet operator -> ONNX nodes, one translation function per MXNet op (aliases share
it). Each takes (ctx, name, inputs, outputs, attrs): ``inputs`` are ONNX tensor names
(None for a dropped label input), ``outputs`` the names its visible outputs must get,
``attrs`` MXNet's attribute strings."""

import numpy as np

from ..base import MXNetError
from ._common import Translations, fail, a_bool, a_float, a_int, a_str, a_tuple

INT64_MAX = np.iinfo(np.int64).max
_TABLE = Translations()
register, get, supported_ops = _TABLE.register, _TABLE.get, _TABLE.supported_ops
_fail = fail




def _pairs(values, n, default):
    if not values:
        return [default] * n
    values = [int(v) for v in values]
    if len(values) == 1 and n > 1:
        values = values * n
    return values


# ---- neural network layers ----------------------------------------------------------

@register("Convolution")
def _conv(ctx, name, ins, outs, attrs):
    layout = a_str(attrs, "layout")
    if layout not in (None, "NCW", "NCHW", "NCDHW"):
        _fail("layout %s cannot be exported (channels-first layouts only)" % layout)
    kernel = a_tuple(attrs, "kernel")
    nd = len(kernel)
    stride = _pairs(a_tuple(attrs, "stride", ()), nd, 1)
    dilate = _pairs(a_tuple(attrs, "dilate", ()), nd, 1)
    pad = _pairs(a_tuple(attrs, "pad", ()), nd, 0)
    group = a_int(attrs, "num_group", 1)
    no_bias = a_bool(attrs, "no_bias", False)
    inputs = ins[:2] if no_bias or len(ins) < 3 else ins[:3]
    ctx.add1("Conv", inputs, outs[0], name=name, kernel_shape=list(kernel), strides=stride,
             dilations=dilate, pads=pad + pad, group=group)


@register("Deconvolution")
def _deconv(ctx, name, ins, outs, attrs):
    layout = a_str(attrs, "layout")
    if layout not in (None, "NCW", "NCHW", "NCDHW"):
        _fail("layout %s cannot be exported (channels-first layouts only)" % layout)
    kernel = a_tuple(attrs, "kernel")
    nd = len(kernel)
    stride = _pairs(a_tuple(attrs, "stride", ()), nd, 1)
    dilate = _pairs(a_tuple(attrs, "dilate", ()), nd, 1)
    pad = _pairs(a_tuple(attrs, "pad", ()), nd, 0)
    adj = _pairs(a_tuple(attrs, "adj", ()), nd, 0)
    target = a_tuple(attrs, "target_shape", ())
    group = a_int(attrs, "num_group", 1)
    no_bias = a_bool(attrs, "no_bias", True)
    inputs = ins[:2] if no_bias or len(ins) < 3 else ins[:3]
    if target and any(int(t) for t in target):
        # MXNet chooses pads and adj so that the output is target_shape; with static
        # input dims that is total padding = stride*(in-1) + dilated kernel - target
        in_sp = ctx.shape(ins[0])[2:]
        pad, adj = [], []
        for i in range(nd):
            k = dilate[i] * (kernel[i] - 1) + 1
            total = stride[i] * (in_sp[i] - 1) + k - int(target[i])
            p = (total + 1) // 2
            pad.append(p)
            adj.append(2 * p - total)
    ctx.add1("ConvTranspose", inputs, outs[0], name=name, kernel_shape=list(kernel),
             strides=stride, dilations=dilate, pads=pad + pad, group=group,
             output_padding=adj if any(adj) else None)


@register("Pooling")
def _pooling(ctx, name, ins, outs, attrs):
    layout = a_str(attrs, "layout")
    if layout not in (None, "NCW", "NCHW", "NCDHW"):
        _fail("layout %s cannot be exported (channels-first layouts only)" % layout)
    pool_type = a_str(attrs, "pool_type", "max")
    if a_bool(attrs, "global_pool", False):
        if pool_type == "max":
            ctx.add1("GlobalMaxPool", ins[:1], outs[0], name=name)
        elif pool_type == "avg":
            ctx.add1("GlobalAveragePool", ins[:1], outs[0], name=name)
        elif pool_type == "sum":
            ctx.reduce("ReduceSum", ins[0], list(range(2, ctx.ndim(ins[0]))), True, outs[0])
        elif pool_type == "lp":
            ctx.add1("GlobalLpPool", ins[:1], outs[0], name=name, p=a_int(attrs, "p_value", 2))
        else:
            _fail("pool_type %s cannot be exported" % pool_type)
        return
    kernel = [int(k) for k in a_tuple(attrs, "kernel")]
    nd = len(kernel)
    stride = _pairs(a_tuple(attrs, "stride", ()), nd, 1)
    pad = _pairs(a_tuple(attrs, "pad", ()), nd, 0)
    conv = a_str(attrs, "pooling_convention", "valid")
    if conv not in ("valid", "full"):
        _fail("pooling_convention %s cannot be exported" % conv)
    ceil = 1 if conv == "full" else 0
    pads = pad + pad
    x = ins[0]
    include = pool_type == "sum" or a_bool(attrs, "count_include_pad", True)
    divisor = None
    if ceil and pool_type in ("max", "avg", "sum"):
        # MXNet's 'full' convention: out = ceil((in + 2p - k) / s) + 1, every window kept
        # and clipped to the padded input (the valid input when count_include_pad is
        # False). ONNX runtimes drop a last window that starts in the padding, so: the
        # input padded explicitly up to the last window, pooled with ceil_mode 0, and
        # averages rescaled to MXNet's window sizes.
        in_sp = ctx.shape(x)[2:]
        end, sizes = [], []
        for k in range(nd):
            n_out = -(-(in_sp[k] + 2 * pad[k] - kernel[k]) // stride[k]) + 1
            end.append(max(pad[k], (n_out - 1) * stride[k] + kernel[k] - in_sp[k] - pad[k]))
            starts = np.arange(n_out) * stride[k] - pad[k]
            if include:
                sz = np.minimum(starts + kernel[k], in_sp[k] + pad[k]) - starts
            else:
                sz = np.minimum(starts + kernel[k], in_sp[k]) - np.maximum(starts, 0)
            sizes.append(np.maximum(sz, 1))
        ceil = 0
        if end != pad:
            fill = np.finfo(ctx.dtype(x)).min if pool_type == "max" else 0.0
            x = ctx.add1("Pad", [x, ctx.i64([0, 0] + pad + [0, 0] + end, "pads"),
                                 ctx.scalar(fill, x)], mode="constant")
            pads = [0] * (2 * nd)
            divisor = sizes[0]
            for sz in sizes[1:]:
                divisor = np.multiply.outer(divisor, sz)
            include = True
    if pool_type == "max":
        ctx.add1("MaxPool", [x], outs[0], name=name, kernel_shape=kernel, strides=stride,
                 pads=pads, ceil_mode=ceil)
    elif pool_type in ("avg", "sum"):
        final = pool_type == "avg" and divisor is None
        y = ctx.add1("AveragePool", [x], outs[0] if final else None, name=name,
                     kernel_shape=kernel, strides=stride, pads=pads, ceil_mode=ceil,
                     count_include_pad=1 if include else 0)
        if final:
            return
        total = float(np.prod(kernel))
        if pool_type == "sum":
            ctx.add1("Mul", [y, ctx.scalar(total, x)], outs[0])
        else:  # the mean over each of MXNet's clipped windows
            ctx.add1("Mul", [y, ctx.const((total / divisor).astype(ctx.dtype(x)),
                                          hint=name + "_div")], outs[0])
    elif pool_type == "lp":
        if ceil:
            _fail("lp pooling with pooling_convention='full' cannot be exported")
        ctx.add1("LpPool", ins[:1], outs[0], name=name, kernel_shape=kernel, strides=stride,
                 pads=pad + pad, p=a_int(attrs, "p_value", 2))
    else:
        _fail("pool_type %s cannot be exported" % pool_type)


@register("FullyConnected")
def _fc(ctx, name, ins, outs, attrs):
    no_bias = a_bool(attrs, "no_bias", False)
    flatten = a_bool(attrs, "flatten", True)
    x, w = ins[0], ins[1]
    b = None if no_bias or len(ins) < 3 else ins[2]
    nd = ctx.ndim(x)
    if flatten or nd <= 2:
        if nd != 2:
            x = ctx.add1("Flatten", [x], axis=1)
        ctx.add1("Gemm", [x, w] + ([b] if b else []), outs[0], name=name, transB=1)
        return
    wv = ctx.value(w)
    wt = ctx.const(wv.T, hint=w + "_T") if wv is not None else ctx.add1("Transpose", [w])
    if b is None:
        ctx.add1("MatMul", [x, wt], outs[0], name=name)
    else:
        y = ctx.add1("MatMul", [x, wt], name=name)
        ctx.add1("Add", [y, b], outs[0])


@register("BatchNorm")
def _batchnorm(ctx, name, ins, outs, attrs):
    eps = a_float(attrs, "eps", 1e-3)
    axis = a_int(attrs, "axis", 1)
    x, gamma, beta, mean, var = ins[:5]
    nd = ctx.ndim(x)
    axis = axis % nd
    if a_bool(attrs, "fix_gamma", True):
        gamma = ctx.const(np.ones(ctx.shape(gamma), dtype=ctx.dtype(gamma)), hint=name + "_gamma1")
    if axis == 1:
        ctx.add1("BatchNormalization", [x, gamma, beta, mean, var], outs[0], name=name,
                 epsilon=eps)
        return
    perm = list(range(nd))
    perm[1], perm[axis] = perm[axis], perm[1]
    t = ctx.add1("Transpose", [x], perm=perm)
    y = ctx.add1("BatchNormalization", [t, gamma, beta, mean, var], name=name, epsilon=eps)
    ctx.add1("Transpose", [y], outs[0], perm=perm)


@register("InstanceNorm")
def _instancenorm(ctx, name, ins, outs, attrs):
    ctx.add1("InstanceNormalization", ins[:3], outs[0], name=name,
             epsilon=a_float(attrs, "eps", 1e-3))


def _bcast_param(ctx, p, axis, nd):
    """A (C,) parameter unsqueezed so that it broadcasts along ``axis`` of an nd tensor."""
    trailing = nd - axis - 1
    if trailing == 0:
        return p
    return ctx.unsqueeze(p, list(range(1, trailing + 1)))


@register("LayerNorm")
def _layernorm(ctx, name, ins, outs, attrs):
    if a_bool(attrs, "output_mean_var", False):
        _fail("output_mean_var=True cannot be exported")
    x, gamma, beta = ins[:3]
    nd = ctx.ndim(x)
    axis = a_int(attrs, "axis", -1) % nd
    eps = a_float(attrs, "eps", 1e-5)
    if ctx.opset >= 17 and axis == nd - 1:
        ctx.add1("LayerNormalization", [x, gamma, beta], outs[0], name=name, axis=-1,
                 epsilon=eps)
        return
    mean = ctx.reduce("ReduceMean", x, [axis], True)
    d = ctx.add1("Sub", [x, mean])
    var = ctx.reduce("ReduceMean", ctx.add1("Mul", [d, d]), [axis], True)
    std = ctx.add1("Sqrt", [ctx.add1("Add", [var, ctx.scalar(eps, x)])])
    y = ctx.add1("Div", [d, std])
    y = ctx.add1("Mul", [y, _bcast_param(ctx, gamma, axis, nd)])
    ctx.add1("Add", [y, _bcast_param(ctx, beta, axis, nd)], outs[0], name=name)


@register("L2Normalization")
def _l2norm(ctx, name, ins, outs, attrs):
    mode = a_str(attrs, "mode", "instance")
    eps = a_float(attrs, "eps", 1e-10)
    x = ins[0]
    nd = ctx.ndim(x)
    axes = {"instance": list(range(1, nd)), "channel": [1], "spatial": list(range(2, nd))}.get(mode)
    if axes is None:
        _fail("mode %s cannot be exported" % mode)
    ss = ctx.reduce("ReduceSum", ctx.add1("Mul", [x, x]), axes, True)
    norm = ctx.add1("Sqrt", [ctx.add1("Add", [ss, ctx.scalar(eps, x)])])
    ctx.add1("Div", [x, norm], outs[0], name=name)


@register("LRN")
def _lrn(ctx, name, ins, outs, attrs):
    ctx.add1("LRN", ins[:1], outs[0], name=name, size=a_int(attrs, "nsize"),
             alpha=a_float(attrs, "alpha", 1e-4), beta=a_float(attrs, "beta", 0.75),
             bias=a_float(attrs, "knorm", 2.0))


@register("Dropout", "identity", "_copy", "BlockGrad", "stop_gradient", "make_loss", "MakeLoss",
          "LinearRegressionOutput", "MAERegressionOutput", "_contrib_gradientmultiplier")
def _identity(ctx, name, ins, outs, attrs):
    ctx.add1("Identity", ins[:1], outs[0], name=name)


@register("LogisticRegressionOutput")
def _logistic_out(ctx, name, ins, outs, attrs):
    ctx.add1("Sigmoid", ins[:1], outs[0], name=name)


def _act(ctx, kind, x, out, name=None):
    if kind == "relu":
        return ctx.add1("Relu", [x], out, name=name)
    if kind == "sigmoid":
        return ctx.add1("Sigmoid", [x], out, name=name)
    if kind == "tanh":
        return ctx.add1("Tanh", [x], out, name=name)
    if kind == "softrelu":
        return ctx.add1("Softplus", [x], out, name=name)
    if kind == "softsign":
        return ctx.add1("Softsign", [x], out, name=name)
    if kind == "log_sigmoid":
        return ctx.add1("Log", [ctx.add1("Sigmoid", [x])], out, name=name)
    if kind == "mish":
        t = ctx.add1("Tanh", [ctx.add1("Softplus", [x])])
        return ctx.add1("Mul", [x, t], out, name=name)
    _fail("act_type %s cannot be exported" % kind)


@register("Activation")
def _activation(ctx, name, ins, outs, attrs):
    _act(ctx, a_str(attrs, "act_type"), ins[0], outs[0], name)


def _gelu(ctx, x, out, name):
    e = ctx.add1("Erf", [ctx.add1("Div", [x, ctx.scalar(np.sqrt(2.0), x)])])
    h = ctx.add1("Add", [e, ctx.scalar(1.0, x)])
    y = ctx.add1("Mul", [x, h])
    return ctx.add1("Mul", [y, ctx.scalar(0.5, x)], out, name=name)


@register("LeakyReLU")
def _leaky(ctx, name, ins, outs, attrs):
    kind = a_str(attrs, "act_type", "leaky")
    slope = a_float(attrs, "slope", 0.25)
    x = ins[0]
    if kind == "leaky":
        ctx.add1("LeakyRelu", [x], outs[0], name=name, alpha=slope)
    elif kind == "elu":
        ctx.add1("Elu", [x], outs[0], name=name, alpha=slope)
    elif kind == "selu":
        ctx.add1("Selu", [x], outs[0], name=name)
    elif kind == "gelu":
        _gelu(ctx, x, outs[0], name)
    elif kind == "rrelu":
        lo = a_float(attrs, "lower_bound", 0.125)
        hi = a_float(attrs, "upper_bound", 0.334)
        ctx.add1("LeakyRelu", [x], outs[0], name=name, alpha=(lo + hi) / 2.0)
    elif kind == "prelu":
        gamma = ins[1]
        nd = ctx.ndim(x)
        gshape = ctx.shape(gamma)
        if nd > 2 and len(gshape) == 1 and gshape[0] != 1:
            gamma = ctx.unsqueeze(gamma, list(range(1, nd - 1)))
        ctx.add1("PRelu", [x, gamma], outs[0], name=name)
    else:
        _fail("act_type %s cannot be exported" % kind)


# ---- softmax family -----------------------------------------------------------------

def _softmax_axis(ctx, op_type, x, axis, out, name):
    nd = ctx.ndim(x)
    axis = axis % nd
    if ctx.opset >= 13 or axis == nd - 1:
        return ctx.add1(op_type, [x], out, name=name, axis=axis)
    perm = list(range(nd))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    t = ctx.add1("Transpose", [x], perm=perm)
    s = ctx.add1(op_type, [t], axis=nd - 1, name=name)
    return ctx.add1("Transpose", [s], out, perm=perm)


def _softmax_common(op_type):
    def fn(ctx, name, ins, outs, attrs):
        if a_bool(attrs, "use_length", False):
            _fail("use_length=True cannot be exported")
        x = ins[0]
        t = a_float(attrs, "temperature")
        if t is not None and t != 1.0:
            x = ctx.add1("Div", [x, ctx.scalar(t, x)])
            ctx.shapes[x] = ctx.shape(ins[0])
        dtype = a_str(attrs, "dtype")
        y = _softmax_axis(ctx, op_type, x, a_int(attrs, "axis", -1),
                          None if dtype else outs[0], name)
        if dtype:
            ctx.cast(y, dtype, outs[0])
    return fn


register("softmax")(_softmax_common("Softmax"))
register("log_softmax")(_softmax_common("LogSoftmax"))


def _softmax_flat(ctx, x, out, name):
    """Softmax of each sample over all its non-batch entries (SoftmaxOutput)."""
    nd = ctx.ndim(x)
    if nd == 2:
        return ctx.add1("Softmax", [x], out, name=name, axis=1)
    f = ctx.add1("Flatten", [x], axis=1)
    s = ctx.add1("Softmax", [f], axis=1, name=name)
    shape = [0] + list(ctx.shape(x)[1:])
    return ctx.add1("Reshape", [s, ctx.i64(shape, "shape")], out)


@register("SoftmaxOutput", "Softmax")
def _softmax_output(ctx, name, ins, outs, attrs):
    x = ins[0]
    if a_bool(attrs, "preserve_shape", False):
        _softmax_axis(ctx, "Softmax", x, -1, outs[0], name)
    elif a_bool(attrs, "multi_output", False):
        _softmax_axis(ctx, "Softmax", x, 1, outs[0], name)
    else:
        _softmax_flat(ctx, x, outs[0], name)


@register("SoftmaxActivation")
def _softmax_activation(ctx, name, ins, outs, attrs):
    # instance mode: over the last axis (MXNet flattens all the leading axes)
    axis = 1 if a_str(attrs, "mode", "instance") == "channel" else -1
    _softmax_axis(ctx, "Softmax", ins[0], axis, outs[0], name)


# ---- elementwise --------------------------------------------------------------------

def _binary(op_type):
    def fn(ctx, name, ins, outs, attrs):
        ctx.add1(op_type, ins[:2], outs[0], name=name)
    return fn


for _names, _op in [
        (("elemwise_add", "_plus", "_Plus", "_add", "broadcast_add", "broadcast_plus"), "Add"),
        (("elemwise_sub", "_minus", "_Minus", "_sub", "broadcast_sub", "broadcast_minus"), "Sub"),
        (("elemwise_mul", "_mul", "_Mul", "broadcast_mul"), "Mul"),
        (("elemwise_div", "_div", "_Div", "broadcast_div"), "Div"),
        (("_power", "_Power", "broadcast_power"), "Pow"),
        (("_maximum", "_Maximum", "broadcast_maximum"), "Max"),
        (("_minimum", "_Minimum", "broadcast_minimum"), "Min")]:
    register(*_names)(_binary(_op))


def _compare(op_type, negate=False):
    def fn(ctx, name, ins, outs, attrs):
        b = ctx.add1(op_type, ins[:2], name=name)
        if negate:
            b = ctx.add1("Not", [b])
        ctx.cast(b, ctx.dtype(outs[0]) if outs[0] in ctx.dtypes else ctx.dtype(ins[0]), outs[0])
    return fn


for _names, _op, _neg in [
        (("_equal", "broadcast_equal"), "Equal", False),
        (("_not_equal", "broadcast_not_equal"), "Equal", True),
        (("_greater", "broadcast_greater"), "Greater", False),
        (("_greater_equal", "broadcast_greater_equal"), "GreaterOrEqual", False),
        (("_lesser", "broadcast_lesser"), "Less", False),
        (("_lesser_equal", "broadcast_lesser_equal"), "LessOrEqual", False)]:
    register(*_names)(_compare(_op, _neg))


def _logical(op_type):
    def fn(ctx, name, ins, outs, attrs):
        a = ctx.cast(ins[0], np.bool_)
        b = ctx.cast(ins[1], np.bool_)
        r = ctx.add1(op_type, [a, b], name=name)
        ctx.cast(r, ctx.dtype(ins[0]), outs[0])
    return fn


register("_logical_and", "broadcast_logical_and")(_logical("And"))
register("_logical_or", "broadcast_logical_or")(_logical("Or"))
register("_logical_xor", "broadcast_logical_xor")(_logical("Xor"))


def _scalar_op(op_type, reverse=False, compare=False, negate=False):
    def fn(ctx, name, ins, outs, attrs):
        s = ctx.scalar(a_float(attrs, "scalar", 0.0), ins[0])
        args = [s, ins[0]] if reverse else [ins[0], s]
        if not compare:
            ctx.add1(op_type, args, outs[0], name=name)
            return
        b = ctx.add1(op_type, args, name=name)
        if negate:
            b = ctx.add1("Not", [b])
        ctx.cast(b, ctx.dtype(ins[0]), outs[0])
    return fn


for _names, _args in [
        (("_plus_scalar", "_PlusScalar"), ("Add",)),
        (("_minus_scalar", "_MinusScalar"), ("Sub",)),
        (("_rminus_scalar", "_RMinusScalar"), ("Sub", True)),
        (("_mul_scalar", "_MulScalar"), ("Mul",)),
        (("_div_scalar", "_DivScalar"), ("Div",)),
        (("_rdiv_scalar", "_RDivScalar"), ("Div", True)),
        (("_power_scalar", "_PowerScalar"), ("Pow",)),
        (("_rpower_scalar", "_RPowerScalar"), ("Pow", True)),
        (("_maximum_scalar", "_MaximumScalar"), ("Max",)),
        (("_minimum_scalar", "_MinimumScalar"), ("Min",)),
        (("_equal_scalar", "_EqualScalar"), ("Equal", False, True)),
        (("_not_equal_scalar", "_NotEqualScalar"), ("Equal", False, True, True)),
        (("_greater_scalar", "_GreaterScalar"), ("Greater", False, True)),
        (("_greater_equal_scalar", "_GreaterEqualScalar"), ("GreaterOrEqual", False, True)),
        (("_lesser_scalar", "_LesserScalar"), ("Less", False, True)),
        (("_lesser_equal_scalar", "_LesserEqualScalar"), ("LessOrEqual", False, True))]:
    register(*_names)(_scalar_op(*_args))


def _unary(op_type):
    def fn(ctx, name, ins, outs, attrs):
        ctx.add1(op_type, ins[:1], outs[0], name=name)
    return fn


for _name, _op in [("exp", "Exp"), ("log", "Log"), ("sqrt", "Sqrt"), ("abs", "Abs"),
                   ("negative", "Neg"), ("reciprocal", "Reciprocal"), ("floor", "Floor"),
                   ("ceil", "Ceil"), ("sin", "Sin"), ("cos", "Cos"), ("tan", "Tan"),
                   ("arcsin", "Asin"), ("arccos", "Acos"), ("arctan", "Atan"),
                   ("sinh", "Sinh"), ("cosh", "Cosh"), ("arcsinh", "Asinh"),
                   ("arccosh", "Acosh"), ("arctanh", "Atanh"), ("erf", "Erf"),
                   ("sign", "Sign"), ("relu", "Relu"), ("sigmoid", "Sigmoid"),
                   ("tanh", "Tanh"), ("softsign", "Softsign")]:
    register(_name)(_unary(_op))


@register("logical_not")
def _logical_not(ctx, name, ins, outs, attrs):
    b = ctx.add1("Not", [ctx.cast(ins[0], np.bool_)], name=name)
    ctx.cast(b, ctx.dtype(ins[0]), outs[0])


@register("rsqrt")
def _rsqrt(ctx, name, ins, outs, attrs):
    ctx.add1("Reciprocal", [ctx.add1("Sqrt", ins[:1])], outs[0], name=name)


@register("square")
def _square(ctx, name, ins, outs, attrs):
    ctx.add1("Mul", [ins[0], ins[0]], outs[0], name=name)


@register("log1p")
def _log1p(ctx, name, ins, outs, attrs):
    ctx.add1("Log", [ctx.add1("Add", [ins[0], ctx.scalar(1.0, ins[0])])], outs[0], name=name)


@register("expm1")
def _expm1(ctx, name, ins, outs, attrs):
    ctx.add1("Sub", [ctx.add1("Exp", ins[:1]), ctx.scalar(1.0, ins[0])], outs[0], name=name)


@register("round")
def _round(ctx, name, ins, outs, attrs):
    # MXNet rounds halves away from zero; ONNX Round to even: sign(x) * floor(|x| + 0.5)
    x = ins[0]
    f = ctx.add1("Floor", [ctx.add1("Add", [ctx.add1("Abs", [x]), ctx.scalar(0.5, x)])])
    ctx.add1("Mul", [ctx.add1("Sign", [x]), f], outs[0], name=name)


@register("hard_sigmoid")
def _hard_sigmoid(ctx, name, ins, outs, attrs):
    ctx.add1("HardSigmoid", ins[:1], outs[0], name=name, alpha=a_float(attrs, "alpha", 0.2),
             beta=a_float(attrs, "beta", 0.5))


@register("clip")
def _clip(ctx, name, ins, outs, attrs):
    x = ins[0]
    ctx.add1("Clip", [x, ctx.scalar(a_float(attrs, "a_min"), x),
                      ctx.scalar(a_float(attrs, "a_max"), x)], outs[0], name=name)


@register("add_n", "ElementWiseSum")
def _add_n(ctx, name, ins, outs, attrs):
    ctx.add1("Sum", [i for i in ins if i is not None], outs[0], name=name)


@register("_contrib_quadratic")
def _quadratic(ctx, name, ins, outs, attrs):
    x = ins[0]
    a, b, c = (a_float(attrs, k, 0.0) for k in ("a", "b", "c"))
    y = ctx.add1("Add", [ctx.add1("Mul", [x, ctx.scalar(a, x)]), ctx.scalar(b, x)])
    y = ctx.add1("Mul", [y, x])
    ctx.add1("Add", [y, ctx.scalar(c, x)], outs[0], name=name)


@register("Cast", "cast", "amp_cast")
def _cast(ctx, name, ins, outs, attrs):
    ctx.cast(ins[0], a_str(attrs, "dtype"), outs[0])


@register("where")
def _where(ctx, name, ins, outs, attrs):
    cond = ctx.cast(ins[0], np.bool_)
    ctx.add1("Where", [cond, ins[1], ins[2]], outs[0], name=name)


# ---- shapes -------------------------------------------------------------------------

@register("Flatten", "flatten")
def _flatten(ctx, name, ins, outs, attrs):
    ctx.add1("Flatten", ins[:1], outs[0], name=name, axis=1)


def _reshape_spec(ctx, in_shape, spec, out_shape):
    """The ONNX Reshape shape for MXNet's spec (codes 0, -1, -2, -3, -4): static except
    that dims copied from the input keep ONNX's 0 (so a dynamic batch passes), and a
    dim made from the batch dim becomes -1 when that is the only unknown."""
    res = []
    batch_derived = []
    i = 0
    j = 0
    spec = list(spec)
    while j < len(spec):
        c = int(spec[j])
        if c > 0:
            res.append(c)
            i += 1
        elif c == 0:
            res.append(0 if len(res) == i else in_shape[i])
            if i == 0 and len(res) - 1 != 0:
                batch_derived.append(len(res) - 1)
            i += 1
        elif c == -1:
            res.append(-1)
            i += 1
        elif c == -2:
            while i < len(in_shape):
                res.append(0 if len(res) == i else in_shape[i])
                if i == 0 and len(res) - 1 != 0:
                    batch_derived.append(len(res) - 1)
                i += 1
        elif c == -3:
            if i == 0:
                batch_derived.append(len(res))
            res.append(in_shape[i] * in_shape[i + 1])
            i += 2
        elif c == -4:
            a, b = int(spec[j + 1]), int(spec[j + 2])
            d = in_shape[i]
            if a == -1:
                a = d // b
            if b == -1:
                b = d // a
            if i == 0:
                batch_derived.append(len(res))
            res += [a, b]
            i += 1
            j += 2
        else:
            return list(out_shape)
        j += 1
    if len(res) != len(out_shape):
        return list(out_shape)
    if ctx.dynamic and batch_derived and -1 not in res and len(batch_derived) == 1:
        res[batch_derived[0]] = -1
    if not ctx.dynamic:
        # all static (0 copies kept: they equal the static dims)
        return [r if r in (0, -1) else r for r in res]
    return res


@register("Reshape", "reshape")
def _reshape(ctx, name, ins, outs, attrs):
    x = ins[0]
    out_shape = ctx.shape(outs[0])
    if ctx.value(x) is not None:  # constant folding (e.g. the flattened RNN parameters)
        ctx.initializers[outs[0]] = ctx.value(x).reshape(out_shape)
        return
    spec = a_tuple(attrs, "shape", ())
    if a_bool(attrs, "reverse", False) or not spec:
        target = list(out_shape)
        if ctx.dynamic and target and ctx.shape(x) and target[0] == ctx.shape(x)[0]:
            target[0] = 0
    else:
        target = _reshape_spec(ctx, ctx.shape(x), spec, out_shape)
    ctx.add1("Reshape", [x, ctx.i64(target, "shape")], outs[0], name=name)


@register("transpose")
def _transpose(ctx, name, ins, outs, attrs):
    axes = a_tuple(attrs, "axes", ())
    if axes:
        nd = len(axes)
        ctx.add1("Transpose", ins[:1], outs[0], name=name, perm=[int(a) % nd for a in axes])
    else:
        ctx.add1("Transpose", ins[:1], outs[0], name=name)


@register("SwapAxis", "swapaxes")
def _swapaxis(ctx, name, ins, outs, attrs):
    nd = ctx.ndim(ins[0])
    a, b = a_int(attrs, "dim1", 0) % nd, a_int(attrs, "dim2", 0) % nd
    perm = list(range(nd))
    perm[a], perm[b] = perm[b], perm[a]
    ctx.add1("Transpose", ins[:1], outs[0], name=name, perm=perm)


@register("expand_dims")
def _expand_dims(ctx, name, ins, outs, attrs):
    ctx.unsqueeze(ins[0], [a_int(attrs, "axis")], outs[0])


@register("squeeze")
def _squeeze(ctx, name, ins, outs, attrs):
    axes = a_tuple(attrs, "axis")
    if axes is None:
        axes = [k for k, d in enumerate(ctx.shape(ins[0])) if d == 1]
    ctx.squeeze(ins[0], list(axes), outs[0])


@register("Concat", "concat")
def _concat(ctx, name, ins, outs, attrs):
    ins = [i for i in ins if i is not None]
    axis = a_int(attrs, "dim", 1)
    vals = [ctx.value(i) for i in ins]
    if all(v is not None for v in vals):  # constant folding (e.g. RNN parameters)
        ctx.initializers[outs[0]] = np.concatenate(vals, axis=axis)
        return
    ctx.add1("Concat", ins, outs[0], name=name, axis=axis)


@register("_rnn_param_concat")
def _rnn_param_concat(ctx, name, ins, outs, attrs):
    ins = [i for i in ins if i is not None]
    vals = [ctx.value(i) for i in ins]
    if all(v is not None for v in vals):
        ctx.initializers[outs[0]] = np.concatenate([v.reshape(-1) for v in vals])
        return
    flat = [ctx.add1("Reshape", [i, ctx.i64([-1], "shape")]) for i in ins]
    ctx.add1("Concat", flat, outs[0], name=name, axis=0)


@register("stack")
def _stack(ctx, name, ins, outs, attrs):
    axis = a_int(attrs, "axis", 0)
    nd = ctx.ndim(ins[0]) + 1
    axis = axis % nd
    parts = [ctx.unsqueeze(i, [axis]) for i in ins if i is not None]
    ctx.add1("Concat", parts, outs[0], name=name, axis=axis)


@register("SliceChannel", "split")
def _split(ctx, name, ins, outs, attrs):
    n = a_int(attrs, "num_outputs")
    x = ins[0]
    nd = ctx.ndim(x)
    axis = a_int(attrs, "axis", 1) % nd
    squeeze = a_bool(attrs, "squeeze_axis", False)
    dim = ctx.shape(x)[axis]
    if dim % n:
        _fail("cannot split %d into %d equal parts" % (dim, n))
    if n == 1:
        if squeeze:
            ctx.squeeze(x, [axis], outs[0])
        else:
            ctx.add1("Identity", [x], outs[0], name=name)
        return
    parts = outs if not squeeze else [ctx.fresh(name + "_part") for _ in range(n)]
    ctx.split(x, axis, [dim // n] * n, parts)
    if squeeze:
        for p, o in zip(parts, outs):
            ctx.squeeze(p, [axis], o)


@register("slice", "crop")
def _slice(ctx, name, ins, outs, attrs):
    begin = a_tuple(attrs, "begin")
    end = a_tuple(attrs, "end")
    step = a_tuple(attrs, "step", ())
    starts, ends, axes, steps = [], [], [], []
    for k in range(len(begin)):
        s = int(step[k]) if k < len(step) and step[k] is not None else 1
        b = begin[k]
        e = end[k] if k < len(end) else None
        if b is None:
            b = 0 if s > 0 else INT64_MAX
        if e is None:
            e = INT64_MAX if s > 0 else -INT64_MAX
        starts.append(int(b))
        ends.append(int(e))
        axes.append(k)
        steps.append(s)
    ctx.slice(ins[0], starts, ends, axes, steps, outs[0])


@register("slice_axis")
def _slice_axis(ctx, name, ins, outs, attrs):
    e = a_int(attrs, "end")
    ctx.slice(ins[0], [a_int(attrs, "begin", 0)], [INT64_MAX if e is None else e],
              [a_int(attrs, "axis")], None, outs[0])


@register("slice_like")
def _slice_like(ctx, name, ins, outs, attrs):
    x, like = ins[:2]
    nd = ctx.ndim(x)
    axes = a_tuple(attrs, "axes", ())
    axes = [int(a) % nd for a in axes] if axes else list(range(min(nd, ctx.ndim(like))))
    shp = ctx.add1("Shape", [like])
    ends = ctx.add1("Gather", [shp, ctx.i64(axes, "axes")], axis=0)
    ctx.add1("Slice", [x, ctx.i64([0] * len(axes), "starts"), ends, ctx.i64(axes, "axes")],
             outs[0], name=name)


@register("tile")
def _tile(ctx, name, ins, outs, attrs):
    reps = [int(r) for r in a_tuple(attrs, "reps")]
    x = ins[0]
    nd = ctx.ndim(x)
    if len(reps) > nd:
        x = ctx.unsqueeze(x, list(range(len(reps) - nd)))
    elif len(reps) < nd:
        reps = [1] * (nd - len(reps)) + reps
    ctx.add1("Tile", [x, ctx.i64(reps, "repeats")], outs[0], name=name)


@register("broadcast_to")
def _broadcast_to(ctx, name, ins, outs, attrs):
    shape = [int(d) for d in a_tuple(attrs, "shape")]
    shape = [1 if d == 0 else d for d in shape]
    ctx.add1("Expand", [ins[0], ctx.i64(shape, "shape")], outs[0], name=name)


@register("broadcast_axis", "broadcast_axes")
def _broadcast_axis(ctx, name, ins, outs, attrs):
    nd = ctx.ndim(ins[0])
    axes = [int(a) % nd for a in a_tuple(attrs, "axis", ())]
    sizes = [int(s) for s in a_tuple(attrs, "size", ())]
    shape = [1] * nd
    for a, s in zip(axes, sizes):
        shape[a] = s
    ctx.add1("Expand", [ins[0], ctx.i64(shape, "shape")], outs[0], name=name)


@register("broadcast_like")
def _broadcast_like(ctx, name, ins, outs, attrs):
    if a_tuple(attrs, "lhs_axes") or a_tuple(attrs, "rhs_axes"):
        _fail("lhs_axes/rhs_axes cannot be exported")
    ctx.add1("Expand", [ins[0], ctx.add1("Shape", [ins[1]])], outs[0], name=name)


def _fill_like(value):
    def fn(ctx, name, ins, outs, attrs):
        from onnx import helper
        dt = ctx.dtype(ins[0])
        tensor = helper.make_tensor("value", ctx.onnx_dtype(dt), [1], [value])
        ctx.add1("ConstantOfShape", [ctx.add1("Shape", ins[:1])], outs[0], name=name,
                 value=tensor)
        if value == 0:
            ctx.zeros.add(outs[0])
    return fn


register("zeros_like")(_fill_like(0))
register("ones_like")(_fill_like(1))


def _fill(value):
    def fn(ctx, name, ins, outs, attrs):
        dt = a_str(attrs, "dtype", "float32")
        v = a_float(attrs, "value", 0.0) if value is None else value
        arr = np.full(ctx.shape(outs[0]), v, dtype=dt)
        ctx.add1("Identity", [ctx.const(arr, hint=name)], outs[0], name=name)
        if v == 0:
            ctx.zeros.add(outs[0])
    return fn


register("_zeros")(_fill(0))
register("_ones")(_fill(1))
register("_full")(_fill(None))


@register("Pad", "pad")
def _pad(ctx, name, ins, outs, attrs):
    mode = a_str(attrs, "mode", "constant")
    if mode not in ("constant", "edge", "reflect"):
        _fail("mode %s cannot be exported" % mode)
    pw = [int(p) for p in a_tuple(attrs, "pad_width")]
    pads = pw[0::2] + pw[1::2]
    x = ins[0]
    args = [x, ctx.i64(pads, "pads")]
    if mode == "constant":
        args.append(ctx.scalar(a_float(attrs, "constant_value", 0.0), x))
    ctx.add1("Pad", args, outs[0], name=name, mode=mode)


@register("UpSampling")
def _upsampling(ctx, name, ins, outs, attrs):
    if a_str(attrs, "sample_type", "nearest") != "nearest" or a_int(attrs, "num_args", 1) != 1:
        _fail("only nearest UpSampling of one input can be exported")
    s = float(a_int(attrs, "scale", 1))
    nd = ctx.ndim(ins[0])
    scales = ctx.const(np.array([1.0, 1.0] + [s] * (nd - 2), dtype=np.float32), hint="scales")
    roi = ctx.const(np.zeros((0,), dtype=np.float32), hint="roi")
    ctx.add1("Resize", [ins[0], roi, scales], outs[0], name=name, mode="nearest",
             coordinate_transformation_mode="asymmetric", nearest_mode="floor")


# ---- linear algebra, reductions, indexing --------------------------------------------

def _swap_last2(ctx, x):
    nd = ctx.ndim(x)
    perm = list(range(nd))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    v = ctx.value(x)
    if v is not None:
        return ctx.const(np.transpose(v, perm), hint=x + "_T")
    return ctx.add1("Transpose", [x], perm=perm)


@register("dot")
def _dot(ctx, name, ins, outs, attrs):
    a, b = ins[:2]
    ta, tb = a_bool(attrs, "transpose_a"), a_bool(attrs, "transpose_b")
    na, nb = ctx.ndim(a), ctx.ndim(b)
    if na == 1 and nb == 1:
        ctx.reduce("ReduceSum", ctx.add1("Mul", [a, b]), [0], True, outs[0])
        return
    if (ta and na != 2) or (tb and nb != 2):
        _fail("dot with transpose of a tensor of more than 2 dims cannot be exported")
    if ta:
        a = _swap_last2(ctx, a)
    if tb:
        b = _swap_last2(ctx, b)
    if nb <= 2:
        ctx.add1("MatMul", [a, b], outs[0], name=name)
        return
    bs = ctx.shape(b)
    b2 = ctx.add1("Reshape", [b, ctx.i64([bs[0], -1], "shape")])
    y = ctx.add1("MatMul", [a, b2], name=name)
    target = list(ctx.shape(outs[0]))
    if ctx.dynamic and na > 1:
        target[0] = 0
    ctx.add1("Reshape", [y, ctx.i64(target, "shape")], outs[0])


@register("batch_dot")
def _batch_dot(ctx, name, ins, outs, attrs):
    a, b = ins[:2]
    if a_bool(attrs, "transpose_a"):
        a = _swap_last2(ctx, a)
    if a_bool(attrs, "transpose_b"):
        b = _swap_last2(ctx, b)
    ctx.add1("MatMul", [a, b], outs[0], name=name)


@register("Embedding")
def _embedding(ctx, name, ins, outs, attrs):
    idx = ctx.cast(ins[0], np.int64)
    ctx.add1("Gather", [ins[1], idx], outs[0], name=name, axis=0)


@register("take")
def _take(ctx, name, ins, outs, attrs):
    if a_str(attrs, "mode", "clip") != "clip":
        pass  # in-range indices give the same result in every mode
    idx = ctx.cast(ins[1], np.int64)
    ctx.add1("Gather", [ins[0], idx], outs[0], name=name, axis=a_int(attrs, "axis", 0))


def _reduce(op_type):
    def fn(ctx, name, ins, outs, attrs):
        x = ins[0]
        nd = ctx.ndim(x)
        axes = a_tuple(attrs, "axis", ())
        keep = a_bool(attrs, "keepdims", False)
        if axes:
            axes = sorted(set(int(a) % nd for a in axes))
        if a_bool(attrs, "exclude", False):
            axes = [k for k in range(nd) if k not in (axes or [])]
        if not axes:
            axes = None
        out_nd = len(ctx.shapes.get(outs[0], ())) if outs[0] in ctx.shapes else None
        reduced_all = axes is None or len(axes) == nd
        if reduced_all and not keep and out_nd == 1:
            # legacy MXNet gives shape (1,) for a full reduction
            r = ctx.reduce(op_type, x, axes, False)
            ctx.add1("Reshape", [r, ctx.i64([1], "shape")], outs[0], name=name)
            return
        ctx.reduce(op_type, x, axes, keep, outs[0])
    return fn


register("sum", "sum_axis")(_reduce("ReduceSum"))
register("mean")(_reduce("ReduceMean"))
register("max", "max_axis")(_reduce("ReduceMax"))
register("min", "min_axis")(_reduce("ReduceMin"))
register("prod")(_reduce("ReduceProd"))


@register("norm")
def _norm(ctx, name, ins, outs, attrs):
    ordv = a_int(attrs, "ord", 2)
    if ordv not in (1, 2):
        _fail("ord=%d cannot be exported" % ordv)
    _reduce("ReduceL2" if ordv == 2 else "ReduceL1")(ctx, name, ins, outs, attrs)


def _arg(op_type):
    def fn(ctx, name, ins, outs, attrs):
        x = ins[0]
        axis = a_int(attrs, "axis")
        keep = 1 if a_bool(attrs, "keepdims", False) else 0
        if axis is None:
            x = ctx.add1("Reshape", [x, ctx.i64([-1], "shape")])
            axis = 0
            keep = 0
        r = ctx.add1(op_type, [x], name=name, axis=axis, keepdims=keep)
        if a_int(attrs, "axis") is None:
            r = ctx.add1("Reshape", [r, ctx.i64([1], "shape")])
        ctx.cast(r, ctx.dtype(outs[0]) if outs[0] in ctx.dtypes else np.float32, outs[0])
    return fn


register("argmax")(_arg("ArgMax"))
register("argmin")(_arg("ArgMin"))


# ---- the fused RNN operator (once oxnet has it) ---------------------------------------

_GATES = {"lstm": (4, [0, 3, 1, 2], "LSTM"), "gru": (3, [1, 0, 2], "GRU"),
          "rnn_tanh": (1, [0], "RNN"), "rnn_relu": (1, [0], "RNN")}


@register("RNN")
def _rnn(ctx, name, ins, outs, attrs):
    mode = a_str(attrs, "mode")
    if mode not in _GATES:
        _fail("mode %s cannot be exported" % mode)
    if a_int(attrs, "projection_size") or a_bool(attrs, "use_sequence_length"):
        _fail("projection_size / use_sequence_length cannot be exported")
    if a_float(attrs, "lstm_state_clip_min") is not None:
        _fail("lstm_state_clip_min/max cannot be exported")
    H = a_int(attrs, "state_size")
    L = a_int(attrs, "num_layers", 1)
    D = 2 if a_bool(attrs, "bidirectional") else 1
    G, order, op_type = _GATES[mode]
    x, pvec, h0 = ins[0], ins[1], ins[2]
    c0 = ins[3] if mode == "lstm" and len(ins) > 3 else None
    params = ctx.value(pvec)
    if params is None:
        _fail("the parameters of RNN must be initializers (params of the model)")
    params = params.reshape(-1)
    T, N, I = ctx.shape(x)
    dt = params.dtype

    def reorder(w):
        return np.concatenate([w[g * H:(g + 1) * H] for g in order], axis=0)

    off = 0
    weights = []
    for layer in range(L):
        in_l = I if layer == 0 else D * H
        per_dir = []
        for _ in range(D):
            wi = params[off:off + G * H * in_l].reshape(G * H, in_l)
            off += G * H * in_l
            wh = params[off:off + G * H * H].reshape(G * H, H)
            off += G * H * H
            per_dir.append([wi, wh])
        weights.append(per_dir)
    for layer in range(L):
        for d in range(D):
            bi = params[off:off + G * H]
            off += G * H
            bh = params[off:off + G * H]
            off += G * H
            weights[layer][d] += [bi, bh]
    if off != params.size:
        _fail("the RNN parameter vector has %d values, the layers need %d" % (params.size, off))
    hs, cs = [], []
    y = x
    for layer in range(L):
        W = ctx.const(np.stack([reorder(w[0]) for w in weights[layer]]).astype(dt),
                      hint=name + "_W%d" % layer)
        R = ctx.const(np.stack([reorder(w[1]) for w in weights[layer]]).astype(dt),
                      hint=name + "_R%d" % layer)
        B = ctx.const(np.stack([np.concatenate([reorder(w[2]), reorder(w[3])])
                                for w in weights[layer]]).astype(dt), hint=name + "_B%d" % layer)
        lo, hi = layer * D, (layer + 1) * D
        # zero begin states (the usual `_zeros` of a batch filled in by shape inference)
        # are ONNX's default: left out, the graph keeps a dynamic batch size
        h_l = "" if h0 in ctx.zeros else ctx.slice(h0, [lo], [hi], [0])
        args = [y, W, R, B, "", h_l]
        extra = {}
        if mode == "lstm":
            args.append(ctx.slice(c0, [lo], [hi], [0]) if c0 and c0 not in ctx.zeros else "")
        if mode == "gru":
            extra["linear_before_reset"] = 1
        if mode.startswith("rnn"):
            extra["activations"] = ["Relu" if mode == "rnn_relu" else "Tanh"] * D
        n_out = 3 if mode == "lstm" else 2
        res = ctx.add(op_type, args, n_out=n_out, name=name, hidden_size=H,
                      direction="bidirectional" if D == 2 else "forward", **extra)
        t = ctx.add1("Transpose", [res[0]], perm=[0, 2, 1, 3])
        y = ctx.add1("Reshape", [t, ctx.i64([0, 0, -1], "shape")])
        hs.append(res[1])
        if mode == "lstm":
            cs.append(res[2])
    ctx.add1("Identity", [y], outs[0])
    if len(outs) > 1:
        ctx.add1("Concat", hs, outs[1], axis=0) if L > 1 else ctx.add1("Identity", hs, outs[1])
    if len(outs) > 2 and mode == "lstm":
        ctx.add1("Concat", cs, outs[2], axis=0) if L > 1 else ctx.add1("Identity", cs, outs[2])


# ---- more elementwise and shape ops ---------------------------------------------------

def _times(const):
    def fn(ctx, name, ins, outs, attrs):
        ctx.add1("Mul", [ins[0], ctx.scalar(const, ins[0])], outs[0], name=name)
    return fn


register("degrees")(_times(180.0 / np.pi))
register("radians")(_times(np.pi / 180.0))


def _log_base(base):
    def fn(ctx, name, ins, outs, attrs):
        ctx.add1("Div", [ctx.add1("Log", ins[:1]), ctx.scalar(np.log(base), ins[0])], outs[0],
                 name=name)
    return fn


register("log2")(_log_base(2.0))
register("log10")(_log_base(10.0))


def _cbrt(ctx, x):
    p = ctx.add1("Pow", [ctx.add1("Abs", [x]), ctx.scalar(1.0 / 3.0, x)])
    return ctx.add1("Mul", [ctx.add1("Sign", [x]), p])


@register("cbrt")
def _cbrt_op(ctx, name, ins, outs, attrs):
    ctx.add1("Identity", [_cbrt(ctx, ins[0])], outs[0], name=name)


@register("rcbrt")
def _rcbrt(ctx, name, ins, outs, attrs):
    ctx.add1("Reciprocal", [_cbrt(ctx, ins[0])], outs[0], name=name)


@register("trunc", "fix")
def _trunc(ctx, name, ins, outs, attrs):
    x = ins[0]
    f = ctx.add1("Floor", [ctx.add1("Abs", [x])])
    ctx.add1("Mul", [ctx.add1("Sign", [x]), f], outs[0], name=name)


@register("rint")
def _rint(ctx, name, ins, outs, attrs):
    ctx.add1("Round", ins[:1], outs[0], name=name)  # both round halves to even


@register("_hypot", "broadcast_hypot")
def _hypot(ctx, name, ins, outs, attrs):
    a, b = ins[:2]
    s = ctx.add1("Add", [ctx.add1("Mul", [a, a]), ctx.add1("Mul", [b, b])])
    ctx.add1("Sqrt", [s], outs[0], name=name)


@register("softmin")
def _softmin(ctx, name, ins, outs, attrs):
    x = ctx.add1("Neg", ins[:1])
    ctx.shapes[x] = ctx.shape(ins[0])
    t = a_float(attrs, "temperature")
    if t is not None and t != 1.0:
        x = ctx.add1("Div", [x, ctx.scalar(t, ins[0])])
        ctx.shapes[x] = ctx.shape(ins[0])
    _softmax_axis(ctx, "Softmax", x, a_int(attrs, "axis", -1), outs[0], name)


@register("reverse", "flip")
def _reverse(ctx, name, ins, outs, attrs):
    nd = ctx.ndim(ins[0])
    axes = [int(a) % nd for a in a_tuple(attrs, "axis")]
    n = len(axes)
    ctx.slice(ins[0], [-1] * n, [-INT64_MAX] * n, axes, [-1] * n, outs[0])


@register("repeat")
def _repeat(ctx, name, ins, outs, attrs):
    reps = a_int(attrs, "repeats")
    axis = a_int(attrs, "axis")
    x = ins[0]
    if axis is None:
        x = ctx.add1("Reshape", [x, ctx.i64([-1], "shape")])
        axis = 0
        nd = 1
    else:
        nd = ctx.ndim(x)
        axis %= nd
    u = ctx.unsqueeze(x, [axis + 1])
    t = ctx.add1("Tile", [u, ctx.i64([1] * (axis + 1) + [reps] + [1] * (nd - axis - 1),
                                     "repeats")])
    target = list(ctx.shape(outs[0]))
    if ctx.dynamic and axis > 0:
        target[0] = 0
    ctx.add1("Reshape", [t, ctx.i64(target, "shape")], outs[0], name=name)


@register("one_hot")
def _one_hot(ctx, name, ins, outs, attrs):
    dt = a_str(attrs, "dtype", "float32")
    values = ctx.const(np.array([a_float(attrs, "off_value", 0.0), a_float(attrs, "on_value", 1.0)],
                                dtype=dt), hint="values")
    idx = ctx.cast(ins[0], np.int64)
    ctx.add1("OneHot", [idx, ctx.i64([a_int(attrs, "depth")], "depth"), values], outs[0],
             name=name, axis=-1)


@register("depth_to_space")
def _depth_to_space(ctx, name, ins, outs, attrs):
    ctx.add1("DepthToSpace", ins[:1], outs[0], name=name, blocksize=a_int(attrs, "block_size"),
             mode="DCR")


@register("space_to_depth")
def _space_to_depth(ctx, name, ins, outs, attrs):
    ctx.add1("SpaceToDepth", ins[:1], outs[0], name=name, blocksize=a_int(attrs, "block_size"))


@register("reshape_like")
def _reshape_like(ctx, name, ins, outs, attrs):
    if any(a_int(attrs, k) is not None for k in ("lhs_begin", "lhs_end", "rhs_begin", "rhs_end")):
        _fail("reshape_like with lhs/rhs begin/end cannot be exported")
    ctx.add1("Reshape", [ins[0], ctx.add1("Shape", [ins[1]])], outs[0], name=name)


@register("shape_array")
def _shape_array(ctx, name, ins, outs, attrs):
    ctx.add1("Shape", ins[:1], outs[0], name=name)


@register("size_array")
def _size_array(ctx, name, ins, outs, attrs):
    s = ctx.add1("Size", ins[:1], name=name)
    ctx.add1("Reshape", [s, ctx.i64([1], "shape")], outs[0])


def _topk_common(ctx, name, x, axis, k, largest):
    nd = ctx.ndim(x)
    axis = nd - 1 if axis is None else axis % nd
    if k is None or k <= 0:
        k = ctx.shape(x)[axis]
    return ctx.add("TopK", [x, ctx.i64([k], "k")], n_out=2, name=name, axis=axis,
                   largest=1 if largest else 0, sorted=1), axis


@register("topk")
def _topk(ctx, name, ins, outs, attrs):
    ret = a_str(attrs, "ret_typ", "indices")
    if ret == "mask":
        _fail("ret_typ='mask' cannot be exported")
    x = ins[0]
    axis = a_int(attrs, "axis", -1)
    if axis is None:
        x = ctx.add1("Reshape", [x, ctx.i64([-1], "shape")])
        ctx.shapes[x] = (int(np.prod(ctx.shape(ins[0]))),)
    (vals, idx), _ = _topk_common(ctx, name, x, axis, a_int(attrs, "k", 1),
                                  not a_bool(attrs, "is_ascend", False))
    dt = a_str(attrs, "dtype", "float32")
    if ret == "value":
        ctx.add1("Identity", [vals], outs[0])
    elif ret == "indices":
        ctx.cast(idx, dt, outs[0])
    else:
        ctx.add1("Identity", [vals], outs[0])
        ctx.cast(idx, dt, outs[1])


@register("sort")
def _sort(ctx, name, ins, outs, attrs):
    (vals, _), _ = _topk_common(ctx, name, ins[0], a_int(attrs, "axis", -1), None,
                                not a_bool(attrs, "is_ascend", True))
    ctx.add1("Identity", [vals], outs[0])


@register("argsort")
def _argsort(ctx, name, ins, outs, attrs):
    (_, idx), _ = _topk_common(ctx, name, ins[0], a_int(attrs, "axis", -1), None,
                               not a_bool(attrs, "is_ascend", True))
    ctx.cast(idx, a_str(attrs, "dtype", "float32"), outs[0])


@register("argmax_channel")
def _argmax_channel(ctx, name, ins, outs, attrs):
    r = ctx.add1("ArgMax", ins[:1], name=name, axis=1, keepdims=0)
    ctx.cast(r, ctx.dtype(outs[0]) if outs[0] in ctx.dtypes else np.float32, outs[0])


@register("pick")
def _pick(ctx, name, ins, outs, attrs):
    x, index = ins[:2]
    nd = ctx.ndim(x)
    axis = a_int(attrs, "axis", -1)
    if axis is None:
        _fail("pick with axis=None cannot be exported")
    axis %= nd
    idx = ctx.cast(index, np.int64)
    if ctx.ndim(index) == nd - 1:
        idx = ctx.unsqueeze(idx, [axis])
    g = ctx.add1("GatherElements", [x, idx], name=name, axis=axis)
    if a_bool(attrs, "keepdims", False):
        ctx.add1("Identity", [g], outs[0])
    else:
        ctx.squeeze(g, [axis], outs[0])


@register("SequenceMask")
def _sequence_mask(ctx, name, ins, outs, attrs):
    x = ins[0]
    if not a_bool(attrs, "use_sequence_length", False):
        ctx.add1("Identity", [x], outs[0], name=name)
        return
    axis = a_int(attrs, "axis", 0)
    nd = ctx.ndim(x)
    T = ctx.shape(x)[axis]
    steps = np.arange(T, dtype=np.float32).reshape((T, 1) if axis == 0 else (1, T))
    lens = ctx.cast(ctx.cast(ins[1], np.int64), np.float32)  # lengths are whole steps
    lens = ctx.unsqueeze(lens, [0 if axis == 0 else 1])          # (1, N) or (N, 1)
    mask = ctx.add1("Less", [ctx.const(steps, hint="steps"), lens])  # (T, N) or (N, T)
    if nd > 2:
        mask = ctx.unsqueeze(mask, list(range(2, nd)))
    ctx.add1("Where", [mask, x, ctx.scalar(a_float(attrs, "value", 0.0), x)], outs[0],
             name=name)


@register("moments")
def _moments(ctx, name, ins, outs, attrs):
    x = ins[0]
    nd = ctx.ndim(x)
    axes = a_tuple(attrs, "axes")
    axes = None if not axes else [int(a) % nd for a in axes]
    keep = a_bool(attrs, "keepdims", False)
    mean_k = ctx.reduce("ReduceMean", x, axes, True)
    d = ctx.add1("Sub", [x, mean_k])
    ctx.reduce("ReduceMean", ctx.add1("Mul", [d, d]), axes, keep, outs[1])
    if keep:
        ctx.add1("Identity", [mean_k], outs[0], name=name)
    else:
        ctx.reduce("ReduceMean", x, axes, False, outs[0])


@register("smooth_l1")
def _smooth_l1(ctx, name, ins, outs, attrs):
    x = ins[0]
    s2 = a_float(attrs, "scalar", 1.0) ** 2
    ax = ctx.add1("Abs", [x])
    quad = ctx.add1("Mul", [ctx.add1("Mul", [x, x]), ctx.scalar(0.5 * s2, x)])
    lin = ctx.add1("Sub", [ax, ctx.scalar(0.5 / s2, x)])
    ctx.add1("Where", [ctx.add1("Less", [ax, ctx.scalar(1.0 / s2, x)]), quad, lin], outs[0],
             name=name)


@register("cumsum", "_np_cumsum")
def _cumsum(ctx, name, ins, outs, attrs):
    x = ins[0]
    axis = a_int(attrs, "axis")
    if axis is None:
        x = ctx.add1("Reshape", [x, ctx.i64([-1], "shape")])
        axis = 0
    dt = a_str(attrs, "dtype")
    if dt:
        x = ctx.cast(x, dt)
    ctx.add1("CumSum", [x, ctx.const(np.array(axis, dtype=np.int64), hint="axis")], outs[0],
             name=name)


@register("_arange")
def _arange(ctx, name, ins, outs, attrs):
    start = a_float(attrs, "start", 0.0)
    stop = a_float(attrs, "stop")
    step = a_float(attrs, "step", 1.0)
    rep = a_int(attrs, "repeat", 1)
    if stop is None:
        start, stop = 0.0, start
    v = np.arange(start, stop, step)
    if rep > 1:
        v = np.repeat(v, rep)
    arr = v.astype(a_str(attrs, "dtype", "float32"))
    ctx.add1("Identity", [ctx.const(arr, hint=name)], outs[0], name=name)


@register("GroupNorm")
def _groupnorm(ctx, name, ins, outs, attrs):
    if a_bool(attrs, "output_mean_var", False):
        _fail("output_mean_var=True cannot be exported")
    x, gamma, beta = ins[:3]
    G = a_int(attrs, "num_groups", 1)
    eps = a_float(attrs, "eps", 1e-5)
    g = ctx.add1("Reshape", [x, ctx.i64([0, G, -1], "shape")])   # (N, G, C/G * spatial)
    mean = ctx.reduce("ReduceMean", g, [2], True)
    d = ctx.add1("Sub", [g, mean])
    var = ctx.reduce("ReduceMean", ctx.add1("Mul", [d, d]), [2], True)
    y = ctx.add1("Div", [d, ctx.add1("Sqrt", [ctx.add1("Add", [var, ctx.scalar(eps, x)])])])
    y = ctx.add1("Mul", [y, ctx.unsqueeze(gamma, [1])])            # one value per group
    y = ctx.add1("Add", [y, ctx.unsqueeze(beta, [1])])
    ctx.add1("Reshape", [y, ctx.i64([0] + list(ctx.shape(x)[1:]), "shape")], outs[0], name=name)
