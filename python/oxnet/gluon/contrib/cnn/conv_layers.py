"""Deformable convolution layers (MXNet 1.9.1's ``gluon.contrib.cnn``):
``DeformableConvolution`` (v1, Dai et al. 2017) and ``ModulatedDeformableConvolution``
(v2, Zhu et al. 2018). Each holds an ordinary convolution that predicts the sampling
offsets (``offset_weight``, ``offset_bias``; zeros by default, so a fresh layer samples
the regular grid) and the deformable convolution itself (``deformable_conv_weight``,
``deformable_conv_bias``), run by the registry's ``_contrib_DeformableConvolution`` /
``_contrib_ModulatedDeformableConvolution``.

The offset convolution predicts ``2 * kh * kw * num_deformable_group`` channels (v2:
``3 * ...``, the last third a mask through a sigmoid). MXNet 1.9.1's v2 layer fixes
these numbers at 27 and 18, right only for a 3x3 kernel and one deformable group; here
they follow the kernel and the groups (the same layer for 3x3).
"""

from ....base import MXNetError, numeric_types
from ...block import HybridBlock
from ...nn import Activation

__all__ = ["DeformableConvolution", "ModulatedDeformableConvolution"]


def _pair(value, what, name):
    if isinstance(value, numeric_types):
        return (int(value),) * 2
    value = tuple(int(v) for v in value)
    if len(value) != 2:
        raise MXNetError("%s: %s must be an int or 2 ints (2-D convolution), got %s"
                         % (name, what, value))
    return value


def _contrib_op(F, name, block):
    fn = getattr(F.contrib, name, None)
    if fn is None:
        raise MXNetError("%s '%s': this build has no operator _contrib_%s"
                         % (type(block).__name__, block.name, name))
    return fn


class _DeformableBase(HybridBlock):
    """Parameters, shapes and the offset convolution of both versions."""

    _op = None
    _offset_parts = 2   # offset channels per sampling point and deformable group

    def __init__(self, channels, kernel_size=(1, 1), strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, num_deformable_group=1, layout="NCHW",
                 use_bias=True, in_channels=0, activation=None, weight_initializer=None,
                 bias_initializer="zeros", offset_weight_initializer="zeros",
                 offset_bias_initializer="zeros", offset_use_bias=True, op_name=None, adj=None,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        name = type(self).__name__
        if layout not in ("NCHW", "NHWC"):
            raise MXNetError("%s: only the layouts 'NCHW' and 'NHWC' are supported, got %r"
                             % (name, layout))
        kernel = _pair(kernel_size, "kernel_size", name)
        strides = _pair(strides, "strides", name)
        padding = _pair(padding, "padding", name)
        dilation = _pair(dilation, "dilation", name)
        for what, v in (("channels", channels), ("groups", groups),
                        ("num_deformable_group", num_deformable_group)):
            if not isinstance(v, numeric_types) or int(v) <= 0:
                raise MXNetError("%s: %s must be a positive int, got %r" % (name, what, v))
        if in_channels and in_channels % groups:
            raise MXNetError("%s: in_channels (%d) must be divisible by groups (%d)"
                             % (name, in_channels, groups))
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            self._layout = layout
            self._groups = groups
            self._offset_channels = (self._offset_parts * kernel[0] * kernel[1]
                                     * num_deformable_group)
            self._kwargs_offset = {
                "kernel": kernel, "stride": strides, "dilate": dilation, "pad": padding,
                "num_filter": self._offset_channels, "num_group": groups,
                "no_bias": not offset_use_bias, "layout": layout}
            self._kwargs_deformable_conv = {
                "kernel": kernel, "stride": strides, "dilate": dilation, "pad": padding,
                "num_filter": channels, "num_group": groups,
                "num_deformable_group": num_deformable_group, "no_bias": not use_bias,
                "layout": layout}
            if adj:
                self._kwargs_offset["adj"] = adj
                self._kwargs_deformable_conv["adj"] = adj
            per_group = in_channels // groups if in_channels else 0
            self.offset_weight = self.params.get(
                "offset_weight", shape=self._weight_shape(self._offset_channels, per_group,
                                                          kernel),
                init=offset_weight_initializer, allow_deferred_init=True)
            self.offset_bias = self.params.get(
                "offset_bias", shape=(self._offset_channels,), init=offset_bias_initializer,
                allow_deferred_init=True) if offset_use_bias else None
            self.deformable_conv_weight = self.params.get(
                "deformable_conv_weight", shape=(channels, per_group) + kernel,
                init=weight_initializer, allow_deferred_init=True)
            self.deformable_conv_bias = self.params.get(
                "deformable_conv_bias", shape=(channels,), init=bias_initializer,
                allow_deferred_init=True) if use_bias else None
            self.act = Activation(activation, prefix=activation + "_") if activation else None

    def _weight_shape(self, num_filter, per_group, kernel):
        if self._layout == "NHWC":
            return (num_filter,) + kernel + (per_group,)
        return (num_filter, per_group) + kernel

    def infer_shape(self, x, *args):
        if x.ndim != 4:
            raise MXNetError("%s '%s': the input must be 4-D (%s), got shape %s"
                             % (type(self).__name__, self.name, self._layout, x.shape))
        in_channels = x.shape[self._layout.find("C")]
        if in_channels % self._groups:
            raise MXNetError("%s '%s': the input's %d channels are not divisible by groups "
                             "(%d)" % (type(self).__name__, self.name, in_channels,
                                       self._groups))
        per_group = in_channels // self._groups
        kernel = self._kwargs_offset["kernel"]
        self.offset_weight.shape = self._weight_shape(self._offset_channels, per_group, kernel)
        self.deformable_conv_weight.shape = (self._channels, per_group) + kernel

    def _offsets(self, F, x, offset_weight, offset_bias):
        if offset_bias is None:
            return F.Convolution(x, offset_weight, **self._kwargs_offset)
        return F.Convolution(x, offset_weight, offset_bias, **self._kwargs_offset)

    def __repr__(self):
        kw = self._kwargs_deformable_conv
        s = "{name}({mapping}, kernel_size={kernel}, stride={stride}"
        if kw["pad"] != (0, 0):
            s += ", padding={pad}"
        if kw["dilate"] != (1, 1):
            s += ", dilation={dilate}"
        if kw["num_group"] != 1:
            s += ", groups={num_group}"
        if self.deformable_conv_bias is None:
            s += ", bias=False"
        if self.act:
            s += ", {}".format(self.act)
        s += ")"
        shape = self.deformable_conv_weight.shape
        return s.format(name=self.__class__.__name__,
                        mapping="{0} -> {1}".format(shape[1] if shape[1] else None, shape[0]),
                        **kw)


class DeformableConvolution(_DeformableBase):
    """2-D deformable convolution v1 (Dai et al. 2017): the sampling points of each
    output position are moved by offsets that an ordinary convolution of the input
    predicts (learned with the rest).

    Parameters
    ----------
    channels : int
        Number of output channels.
    kernel_size, strides, padding, dilation : int or 2 ints
    groups : int
        Convolution groups.
    num_deformable_group : int
        Number of groups of input channels with their own offsets.
    layout : str
        'NCHW' or 'NHWC'.
    use_bias, offset_use_bias : bool
    in_channels : int
        0: inferred at the first call.
    activation : str
        Activation applied to the output (None: none).
    weight_initializer, bias_initializer, offset_weight_initializer,
    offset_bias_initializer : str or Initializer
        The offsets' are zeros by default.
    """

    def _alias(self):
        return "deformable_conv"

    def hybrid_forward(self, F, x, offset_weight, deformable_conv_weight, offset_bias=None,
                       deformable_conv_bias=None):
        op = _contrib_op(F, "DeformableConvolution", self)
        offset = self._offsets(F, x, offset_weight, offset_bias)
        inputs = {"data": x, "offset": offset, "weight": deformable_conv_weight}
        if deformable_conv_bias is not None:
            inputs["bias"] = deformable_conv_bias
        out = op(name="fwd", **inputs, **self._kwargs_deformable_conv)
        return self.act(out) if self.act else out


class ModulatedDeformableConvolution(_DeformableBase):
    """2-D modulated deformable convolution v2 (Zhu et al. 2018): deformable
    convolution whose sampled values are also scaled by a mask in (0, 1), both
    predicted by an ordinary convolution of the input (offsets: the first
    ``2 * kh * kw * num_deformable_group`` channels, the mask: the rest, through a
    sigmoid). Parameters as ``DeformableConvolution``."""

    _offset_parts = 3

    def _alias(self):
        return "modulated_deformable_conv"

    def hybrid_forward(self, F, x, offset_weight, deformable_conv_weight, offset_bias=None,
                       deformable_conv_bias=None):
        op = _contrib_op(F, "ModulatedDeformableConvolution", self)
        offset = self._offsets(F, x, offset_weight, offset_bias)
        split = self._offset_channels * 2 // 3
        axis = self._layout.find("C")
        offset_t = F.slice_axis(offset, axis=axis, begin=0, end=split)
        mask = F.sigmoid(F.slice_axis(offset, axis=axis, begin=split, end=None))
        inputs = {"data": x, "offset": offset_t, "mask": mask,
                  "weight": deformable_conv_weight}
        if deformable_conv_bias is not None:
            inputs["bias"] = deformable_conv_bias
        out = op(name="fwd", **inputs, **self._kwargs_deformable_conv)
        return self.act(out) if self.act else out
