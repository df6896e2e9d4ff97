"""Convolution and pooling layers (1-D/2-D/3-D, transposed convolution, global
pooling) over the registry ops Convolution, Deconvolution and Pooling."""

from ...base import numeric_types
from ..block import HybridBlock
from .activations import Activation

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose",
           "Conv3DTranspose", "MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D",
           "AvgPool3D", "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D",
           "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D"]


def _tuple(v, n, what):
    if isinstance(v, numeric_types):
        return (int(v),) * n
    v = tuple(v)
    if len(v) != n:
        raise ValueError("%s must be a number or a list of %d ints, got %r" % (what, n, v))
    return v


def _weight_shape(op_name, layout, channels, in_channels, groups, kernel):
    """MXNet's weight layout: Convolution (out, in/groups, *k) for channel-first
    layouts, (out, *k, in/groups) for channel-last; Deconvolution (in, out/groups, *k)."""
    if op_name == "Deconvolution":
        return (in_channels, channels // groups) + tuple(kernel)
    cin = in_channels // groups
    if layout.find("C") == 1:
        return (channels, cin) + tuple(kernel)
    return (channels,) + tuple(kernel) + (cin,)


class _Conv(HybridBlock):
    """Shared implementation of the convolution layers."""

    def __init__(self, channels, kernel_size, strides, padding, dilation, groups, layout,
                 in_channels=0, activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", op_name="Convolution", adj=None, prefix=None,
                 params=None):
        super().__init__(prefix=prefix, params=params)
        with self.name_scope():
            n = len(kernel_size)
            self._channels = channels
            self._in_channels = in_channels
            self._groups = groups
            self._layout = layout
            strides = _tuple(strides, n, "strides")
            padding = _tuple(padding, n, "padding")
            dilation = _tuple(dilation, n, "dilation")
            self._op_name = op_name
            self._kwargs = {"kernel": kernel_size, "stride": strides, "dilate": dilation,
                            "pad": padding, "num_filter": channels, "num_group": groups,
                            "no_bias": not use_bias, "layout": layout}
            if adj is not None:
                self._kwargs["adj"] = adj
            self.weight = self.params.get(
                "weight", shape=_weight_shape(op_name, layout, channels, in_channels, groups,
                                              kernel_size),
                init=weight_initializer, allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get("bias", shape=(channels,), init=bias_initializer,
                                            allow_deferred_init=True)
            else:
                self.bias = None
            if activation is not None:
                self.act = Activation(activation, prefix=activation + "_")
            else:
                self.act = None

    def _alias(self):
        return "conv"

    def infer_shape(self, x, *args):
        c = x.shape[self._layout.find("C")]
        self.weight.shape = _weight_shape(self._op_name, self._layout, self._channels, c,
                                          self._groups, self._kwargs["kernel"])

    def hybrid_forward(self, F, x, weight, bias=None):
        op = getattr(F, self._op_name)
        if bias is None:
            act = op(x, weight, name="fwd", **self._kwargs)
        else:
            act = op(x, weight, bias, name="fwd", **self._kwargs)
        if self.act is not None:
            act = self.act(act)
        return act

    def __repr__(self):
        s = "{name}({mapping}, kernel_size={kernel}, stride={stride}"
        len_kernel_size = len(self._kwargs["kernel"])
        if self._kwargs["pad"] != (0,) * len_kernel_size:
            s += ", padding={pad}"
        if self._kwargs["dilate"] != (1,) * len_kernel_size:
            s += ", dilation={dilate}"
        if hasattr(self, "out_pad") and self.out_pad != (0,) * len_kernel_size:
            s += ", output_padding={out_pad}".format(out_pad=self.out_pad)
        if self._kwargs["num_group"] != 1:
            s += ", groups={num_group}"
        if self.bias is None:
            s += ", bias=False"
        if self.act:
            s += ", {}".format(self.act)
        s += ")"
        shape = self.weight.shape
        return s.format(name=self.__class__.__name__,
                        mapping="{0} -> {1}".format(shape[1] if shape[1] else None, shape[0]),
                        **self._kwargs)


def _conv_init(self, n, layouts, channels, kernel_size, strides, padding, dilation, groups,
               layout, activation, use_bias, weight_initializer, bias_initializer, in_channels,
               kwargs, op_name="Convolution", adj=None):
    if layout not in layouts:
        raise ValueError("Only supports %s layout for now" % " and ".join(
            "'%s'" % lt for lt in layouts))
    kernel_size = _tuple(kernel_size, n, "kernel_size")
    _Conv.__init__(self, channels, kernel_size, strides, padding, dilation, groups, layout,
                   in_channels, activation, use_bias, weight_initializer, bias_initializer,
                   op_name=op_name, adj=adj, **kwargs)


class Conv1D(_Conv):
    """1-D convolution over (N, C, W) inputs."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1, groups=1,
                 layout="NCW", activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        _conv_init(self, 1, ("NCW", "NWC"), channels, kernel_size, strides, padding, dilation,
                   groups, layout, activation, use_bias, weight_initializer, bias_initializer,
                   in_channels, kwargs)


class Conv2D(_Conv):
    """2-D convolution over (N, C, H, W) inputs (or NHWC)."""

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, layout="NCHW", activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer="zeros", in_channels=0, **kwargs):
        _conv_init(self, 2, ("NCHW", "NHWC"), channels, kernel_size, strides, padding,
                   dilation, groups, layout, activation, use_bias, weight_initializer,
                   bias_initializer, in_channels, kwargs)


class Conv3D(_Conv):
    """3-D convolution over (N, C, D, H, W) inputs (or NDHWC)."""

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0),
                 dilation=(1, 1, 1), groups=1, layout="NCDHW", activation=None,
                 use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 in_channels=0, **kwargs):
        _conv_init(self, 3, ("NCDHW", "NDHWC"), channels, kernel_size, strides, padding,
                   dilation, groups, layout, activation, use_bias, weight_initializer,
                   bias_initializer, in_channels, kwargs)


def _transpose_init(self, n, layouts, channels, kernel_size, strides, padding,
                    output_padding, dilation, groups, layout, activation, use_bias,
                    weight_initializer, bias_initializer, in_channels, kwargs):
    output_padding = _tuple(output_padding, n, "output_padding")
    _conv_init(self, n, layouts, channels, kernel_size, strides, padding, dilation, groups,
               layout, activation, use_bias, weight_initializer, bias_initializer,
               in_channels, kwargs, op_name="Deconvolution", adj=output_padding)
    self.outpad = output_padding


class Conv1DTranspose(_Conv):
    """1-D transposed convolution."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, output_padding=0,
                 dilation=1, groups=1, layout="NCW", activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer="zeros", in_channels=0, **kwargs):
        _transpose_init(self, 1, ("NCW",), channels, kernel_size, strides, padding,
                        output_padding, dilation, groups, layout, activation, use_bias,
                        weight_initializer, bias_initializer, in_channels, kwargs)


class Conv2DTranspose(_Conv):
    """2-D transposed convolution (deconvolution)."""

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0),
                 output_padding=(0, 0), dilation=(1, 1), groups=1, layout="NCHW",
                 activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        _transpose_init(self, 2, ("NCHW", "NHWC"), channels, kernel_size, strides, padding,
                        output_padding, dilation, groups, layout, activation, use_bias,
                        weight_initializer, bias_initializer, in_channels, kwargs)


class Conv3DTranspose(_Conv):
    """3-D transposed convolution."""

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0),
                 output_padding=(0, 0, 0), dilation=(1, 1, 1), groups=1, layout="NCDHW",
                 activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        _transpose_init(self, 3, ("NCDHW", "NDHWC"), channels, kernel_size, strides, padding,
                        output_padding, dilation, groups, layout, activation, use_bias,
                        weight_initializer, bias_initializer, in_channels, kwargs)


class _Pooling(HybridBlock):
    """Shared implementation of the pooling layers."""

    def __init__(self, pool_size, strides, padding, ceil_mode, global_pool, pool_type,
                 layout, count_include_pad=None, **kwargs):
        super().__init__(**kwargs)
        n = len(pool_size)
        if strides is None:
            strides = pool_size
        strides = _tuple(strides, n, "strides")
        padding = _tuple(padding, n, "padding")
        self._kwargs = {"kernel": pool_size, "stride": strides, "pad": padding,
                        "global_pool": global_pool, "pool_type": pool_type, "layout": layout,
                        "pooling_convention": "full" if ceil_mode else "valid"}
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def _alias(self):
        return "pool"

    def hybrid_forward(self, F, x):
        return F.Pooling(x, name="fwd", **self._kwargs)

    def __repr__(self):
        s = ("{name}(size={kernel}, stride={stride}, padding={pad}, ceil_mode={ceil_mode}, "
             "global_pool={global_pool}, pool_type={pool_type}, layout={layout})")
        return s.format(name=self.__class__.__name__,
                        ceil_mode=self._kwargs["pooling_convention"] == "full", **self._kwargs)


def _pool(n, layouts, pool_size, strides, padding, ceil_mode, global_pool, pool_type, layout,
          count_include_pad=None):
    if layout not in layouts:
        raise ValueError("Only supports %s layout for now" % " and ".join(
            "'%s'" % lt for lt in layouts))
    pool_size = _tuple(pool_size, n, "pool_size")
    if strides is not None:
        strides = _tuple(strides, n, "strides")
    return pool_size, strides, _tuple(padding, n, "padding"), ceil_mode, global_pool, \
        pool_type, layout, count_include_pad


_L1 = ("NCW", "NWC")
_L2 = ("NCHW", "NHWC")
_L3 = ("NCDHW", "NDHWC")


class MaxPool1D(_Pooling):
    """1-D max pooling."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False,
                 **kwargs):
        super().__init__(*_pool(1, _L1, pool_size, strides, padding, ceil_mode, False, "max",
                                layout), **kwargs)


class MaxPool2D(_Pooling):
    """2-D max pooling."""

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, layout="NCHW",
                 ceil_mode=False, **kwargs):
        super().__init__(*_pool(2, _L2, pool_size, strides, padding, ceil_mode, False, "max",
                                layout), **kwargs)


class MaxPool3D(_Pooling):
    """3-D max pooling."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False,
                 layout="NCDHW", **kwargs):
        super().__init__(*_pool(3, _L3, pool_size, strides, padding, ceil_mode, False, "max",
                                layout), **kwargs)


class AvgPool1D(_Pooling):
    """1-D average pooling."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False,
                 count_include_pad=True, **kwargs):
        super().__init__(*_pool(1, _L1, pool_size, strides, padding, ceil_mode, False, "avg",
                                layout, count_include_pad), **kwargs)


class AvgPool2D(_Pooling):
    """2-D average pooling."""

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, ceil_mode=False,
                 layout="NCHW", count_include_pad=True, **kwargs):
        super().__init__(*_pool(2, _L2, pool_size, strides, padding, ceil_mode, False, "avg",
                                layout, count_include_pad), **kwargs)


class AvgPool3D(_Pooling):
    """3-D average pooling."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False,
                 layout="NCDHW", count_include_pad=True, **kwargs):
        super().__init__(*_pool(3, _L3, pool_size, strides, padding, ceil_mode, False, "avg",
                                layout, count_include_pad), **kwargs)


def _global(n, layouts, pool_type, layout):
    return _pool(n, layouts, (1,) * n, None, 0, True, True, pool_type, layout)


class GlobalMaxPool1D(_Pooling):
    """Max over the whole width."""

    def __init__(self, layout="NCW", **kwargs):
        super().__init__(*_global(1, _L1, "max", layout), **kwargs)


class GlobalMaxPool2D(_Pooling):
    """Max over the whole spatial extent."""

    def __init__(self, layout="NCHW", **kwargs):
        super().__init__(*_global(2, _L2, "max", layout), **kwargs)


class GlobalMaxPool3D(_Pooling):
    """Max over the whole volume."""

    def __init__(self, layout="NCDHW", **kwargs):
        super().__init__(*_global(3, _L3, "max", layout), **kwargs)


class GlobalAvgPool1D(_Pooling):
    """Mean over the whole width."""

    def __init__(self, layout="NCW", **kwargs):
        super().__init__(*_global(1, _L1, "avg", layout), **kwargs)


class GlobalAvgPool2D(_Pooling):
    """Mean over the whole spatial extent."""

    def __init__(self, layout="NCHW", **kwargs):
        super().__init__(*_global(2, _L2, "avg", layout), **kwargs)


class GlobalAvgPool3D(_Pooling):
    """Mean over the whole volume."""

    def __init__(self, layout="NCDHW", **kwargs):
        super().__init__(*_global(3, _L3, "avg", layout), **kwargs)
