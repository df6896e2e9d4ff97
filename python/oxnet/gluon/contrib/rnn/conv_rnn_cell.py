"""Convolutional recurrent cells (MXNet 1.9.1's ``gluon.contrib.rnn``): the RNN, LSTM
(Shi et al. 2015) and GRU cells with their two matrix products replaced by
convolutions, in 1, 2 and 3 spatial dimensions.

One step takes ``inputs`` of shape (batch,) + ``input_shape`` (layout ``conv_layout``,
channels first ``NC...`` or last ``N...C``) and states of shape
(batch, hidden_channels, *out) (or (batch, *out, hidden_channels)), where ``out`` is the
spatial size of the input convolution (kernel ``i2h_kernel``, padding ``i2h_pad``,
dilation ``i2h_dilate``, stride 1). The state convolution (odd ``h2h_kernel``, dilation
``h2h_dilate``) is padded to keep that size. The gates are stacked along the channel
axis of both convolutions' outputs (``num_gates * hidden_channels`` filters), in the
order of the flat cells (LSTM: i, f, c, o; GRU: r, z, n).

The parameters are those of the flat cells: ``i2h_weight`` (gates * hidden,
in_channels, *i2h_kernel) (channels-last: (gates * hidden, *i2h_kernel, in_channels)),
``h2h_weight``, ``i2h_bias``, ``h2h_bias``. An ``input_shape`` whose channel count is
0 leaves ``in_channels`` to the first call.
"""

from ....base import MXNetError, numeric_types
from ....ndarray import NDArray
from ...rnn.rnn_cell import HybridRecurrentCell

__all__ = ["Conv1DRNNCell", "Conv2DRNNCell", "Conv3DRNNCell",
           "Conv1DLSTMCell", "Conv2DLSTMCell", "Conv3DLSTMCell",
           "Conv1DGRUCell", "Conv2DGRUCell", "Conv3DGRUCell"]

_LAYOUTS = {1: ("NCW", "NWC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _conv_out_size(dims, kernel, pad, dilate):
    """Spatial size of a stride-1 convolution (0 stays 0: not known yet)."""
    return tuple(x + 2 * p - d * (k - 1) if x else 0
                 for x, k, p, d in zip(dims, kernel, pad, dilate))


class _BaseConvRNNCell(HybridRecurrentCell):
    """What the convolutional cells share: settings, parameters, states, the two
    convolutions of one step."""

    _gate_names = ("",)
    _num_states = 1

    def __init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad,
                 i2h_dilate, h2h_dilate, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, dims, conv_layout, activation,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        name = type(self).__name__
        if conv_layout not in _LAYOUTS[dims]:
            raise MXNetError("%s: conv_layout must be one of %s, got %r"
                             % (name, list(_LAYOUTS[dims]), conv_layout))
        input_shape = tuple(int(d) for d in input_shape)
        if len(input_shape) != dims + 1:
            raise MXNetError("%s: input_shape must have %d entries (the shape of one "
                             "step's sample in layout %s without N), got %s"
                             % (name, dims + 1, conv_layout, input_shape))
        if not isinstance(hidden_channels, numeric_types) or hidden_channels <= 0:
            raise MXNetError("%s: hidden_channels must be a positive int, got %r"
                             % (name, hidden_channels))

        def spec(value, what):
            if isinstance(value, numeric_types):
                return (int(value),) * dims
            value = tuple(int(v) for v in value)
            if len(value) != dims:
                raise MXNetError("%s: for %dD convolution, %s must be an int or %d ints, "
                                 "got %s" % (name, dims, what, dims, value))
            return value

        self._dims = dims
        self._hidden_channels = int(hidden_channels)
        self._input_shape = input_shape
        self._conv_layout = conv_layout
        self._activation = activation
        self._i2h_kernel = spec(i2h_kernel, "i2h_kernel")
        self._i2h_pad = spec(i2h_pad, "i2h_pad")
        self._i2h_dilate = spec(i2h_dilate, "i2h_dilate")
        self._h2h_kernel = spec(h2h_kernel, "h2h_kernel")
        self._h2h_dilate = spec(h2h_dilate, "h2h_dilate")
        self._stride = (1,) * dims
        if any(k % 2 == 0 for k in self._h2h_kernel):
            raise MXNetError("%s: only odd h2h_kernel sizes are supported (the state keeps "
                             "its size), got %s" % (name, self._h2h_kernel))
        self._h2h_pad = tuple(d * (k - 1) // 2
                              for d, k in zip(self._h2h_dilate, self._h2h_kernel))

        first = conv_layout.find("C") == 1
        self._channel_axis = 1 if first else dims + 1
        self._in_channels = input_shape[0] if first else input_shape[-1]
        spatial = input_shape[1:] if first else input_shape[:-1]
        out = _conv_out_size(spatial, self._i2h_kernel, self._i2h_pad, self._i2h_dilate)
        if any(o <= 0 for o, x in zip(out, spatial) if x):
            raise MXNetError("%s: the input convolution (kernel %s, pad %s, dilate %s) does "
                             "not fit the input of spatial size %s"
                             % (name, self._i2h_kernel, self._i2h_pad, self._i2h_dilate,
                                spatial))
        hc = self._hidden_channels
        total = hc * len(self._gate_names)
        if first:
            i2h_shape = (total, self._in_channels) + self._i2h_kernel
            h2h_shape = (total, hc) + self._h2h_kernel
            self._state_shape = (hc,) + out
        else:
            i2h_shape = (total,) + self._i2h_kernel + (self._in_channels,)
            h2h_shape = (total,) + self._h2h_kernel + (hc,)
            self._state_shape = out + (hc,)

        self.i2h_weight = self.params.get("i2h_weight", shape=i2h_shape,
                                          init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=h2h_shape,
                                          init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(total,),
                                        init=i2h_bias_initializer, allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(total,),
                                        init=h2h_bias_initializer, allow_deferred_init=True)

    @property
    def _num_gates(self):
        return len(self._gate_names)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size,) + self._state_shape, "__layout__": self._conv_layout}
                for _ in range(self._num_states)]

    def infer_shape(self, x, *args):
        shape = list(self.i2h_weight.shape)
        shape[1 if self._channel_axis == 1 else -1] = x.shape[self._channel_axis]
        self.i2h_weight.shape = tuple(shape)

    def _check_step(self, inputs, states):
        name = "%s '%s'" % (type(self).__name__, self.name)
        if inputs.ndim != self._dims + 2:
            raise MXNetError("%s: one step's input must have %d dimensions (layout %s), got "
                             "shape %s" % (name, self._dims + 2, self._conv_layout,
                                           inputs.shape))
        if not isinstance(states, (list, tuple)) or len(states) != self._num_states:
            raise MXNetError("%s: states must be a list of %d arrays (see begin_state)"
                             % (name, self._num_states))
        want = (inputs.shape[0],) + self._state_shape
        for i, s in enumerate(states):
            if not isinstance(s, NDArray) or s.shape != want:
                raise MXNetError("%s: state %d must have shape %s, got %s"
                                 % (name, i, want, getattr(s, "shape", type(s).__name__)))

    def forward(self, inputs, states):
        if isinstance(inputs, NDArray):
            self._check_step(inputs, states)
        return super().forward(inputs, states)

    def _conv_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias,
                      prefix):
        num_filter = self._hidden_channels * self._num_gates
        i2h = F.Convolution(inputs, i2h_weight, i2h_bias, num_filter=num_filter,
                            kernel=self._i2h_kernel, stride=self._stride, pad=self._i2h_pad,
                            dilate=self._i2h_dilate, layout=self._conv_layout,
                            name=prefix + "i2h")
        h2h = F.Convolution(states[0], h2h_weight, h2h_bias, num_filter=num_filter,
                            kernel=self._h2h_kernel, stride=self._stride, pad=self._h2h_pad,
                            dilate=self._h2h_dilate, layout=self._conv_layout,
                            name=prefix + "h2h")
        return i2h, h2h

    def __repr__(self):
        shape = self.i2h_weight.shape
        in_channels = shape[1 if self._channel_axis == 1 else -1]
        mapping = "{0} -> {1}".format(in_channels if in_channels else None, shape[0])
        return "{name}({mapping}, {act}, {layout})".format(
            name=type(self).__name__, mapping=mapping, act=self._activation,
            layout=self._conv_layout)


class _ConvRNNCell(_BaseConvRNNCell):
    """``h_t = activation(W * x_t + R * h_{t-1} + b)``."""

    def _alias(self):
        return "conv_rnn"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = "t%d_" % self._counter
        i2h, h2h = self._conv_forward(F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                                      h2h_bias, prefix)
        out = self._get_activation(F, F.elemwise_add(i2h, h2h, name=prefix + "plus0"),
                                   self._activation, name=prefix + "out")
        return out, [out]


class _ConvLSTMCell(_BaseConvRNNCell):
    """Gates i, f, c, o; ``c_t = f * c_{t-1} + i * activation(c)``,
    ``h_t = o * activation(c_t)``; states [h, c]."""

    _gate_names = ("_i", "_f", "_c", "_o")
    _num_states = 2

    def _alias(self):
        return "conv_lstm"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = "t%d_" % self._counter
        i2h, h2h = self._conv_forward(F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                                      h2h_bias, prefix)
        gates = F.SliceChannel(F.elemwise_add(i2h, h2h, name=prefix + "plus0"), num_outputs=4,
                               axis=self._channel_axis, name=prefix + "slice")
        in_gate = self._get_activation(F, gates[0], "sigmoid", name=prefix + "i")
        forget_gate = self._get_activation(F, gates[1], "sigmoid", name=prefix + "f")
        in_transform = self._get_activation(F, gates[2], self._activation, name=prefix + "c")
        out_gate = self._get_activation(F, gates[3], "sigmoid", name=prefix + "o")
        next_c = F.elemwise_add(F.elemwise_mul(forget_gate, states[1], name=prefix + "mul0"),
                                F.elemwise_mul(in_gate, in_transform, name=prefix + "mul1"),
                                name=prefix + "state")
        next_h = F.elemwise_mul(out_gate, self._get_activation(F, next_c, self._activation),
                                name=prefix + "out")
        return next_h, [next_h, next_c]


class _ConvGRUCell(_BaseConvRNNCell):
    """Gates r, z, n; ``n = activation(W_n * x + b_n + r * (R_n * h + b_rn))``,
    ``h_t = (1 - z) * n + z * h_{t-1}``."""

    _gate_names = ("_r", "_z", "_o")

    def _alias(self):
        return "conv_gru"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = "t%d_" % self._counter
        i2h, h2h = self._conv_forward(F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                                      h2h_bias, prefix)
        axis = self._channel_axis
        i2h_r, i2h_z, i2h_n = F.SliceChannel(i2h, num_outputs=3, axis=axis,
                                             name=prefix + "i2h_slice")
        h2h_r, h2h_z, h2h_n = F.SliceChannel(h2h, num_outputs=3, axis=axis,
                                             name=prefix + "h2h_slice")
        reset_gate = self._get_activation(F, F.elemwise_add(i2h_r, h2h_r, name=prefix + "plus0"),
                                          "sigmoid", name=prefix + "r_act")
        update_gate = self._get_activation(F, F.elemwise_add(i2h_z, h2h_z,
                                                             name=prefix + "plus1"),
                                           "sigmoid", name=prefix + "z_act")
        new = self._get_activation(
            F, F.elemwise_add(i2h_n, F.elemwise_mul(reset_gate, h2h_n, name=prefix + "mul0"),
                              name=prefix + "plus2"),
            self._activation, name=prefix + "h_act")
        keep = F.elemwise_sub(F.ones_like(update_gate), update_gate, name=prefix + "minus0")
        next_h = F.elemwise_add(F.elemwise_mul(keep, new, name=prefix + "mul1"),
                                F.elemwise_mul(update_gate, states[0], name=prefix + "mul2"),
                                name=prefix + "out")
        return next_h, [next_h]


def _make(base, dims, doc):
    """The public class of ``base`` in ``dims`` spatial dimensions, with MXNet's
    signature and defaults."""
    layout = _LAYOUTS[dims][0]
    zeros, ones = (0,) * dims, (1,) * dims

    def __init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad=zeros,
                 i2h_dilate=ones, h2h_dilate=ones, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", conv_layout=layout, activation="tanh",
                 prefix=None, params=None):
        base.__init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad,
                      i2h_dilate, h2h_dilate, i2h_weight_initializer, h2h_weight_initializer,
                      i2h_bias_initializer, h2h_bias_initializer, dims, conv_layout,
                      activation, prefix=prefix, params=params)

    kind = {_ConvRNNCell: "RNN", _ConvLSTMCell: "LSTM", _ConvGRUCell: "GRU"}[base]
    name = "Conv%dD%sCell" % (dims, kind)
    __init__.__doc__ = None
    return type(name, (base,), {
        "__init__": __init__, "__module__": __name__,
        "__doc__": "%dD convolutional %s cell. %s\n\n    Parameters\n    ----------\n"
                   "    input_shape : tuple of int\n        Shape of one step's sample "
                   "(no batch axis), in ``conv_layout`` (default %s).\n"
                   "    hidden_channels : int\n        Channels of the states.\n"
                   "    i2h_kernel, h2h_kernel : int or tuple of int\n        Kernels of "
                   "the input and state convolutions (h2h: odd sizes).\n"
                   "    i2h_pad, i2h_dilate, h2h_dilate : int or tuple of int\n"
                   "    conv_layout : str\n        %s or %s.\n"
                   "    activation : str or Block\n        Default 'tanh'.\n"
                   % (dims, kind, doc, layout, _LAYOUTS[dims][0], _LAYOUTS[dims][1])})


_DOCS = {_ConvRNNCell: _ConvRNNCell.__doc__, _ConvLSTMCell: _ConvLSTMCell.__doc__,
         _ConvGRUCell: _ConvGRUCell.__doc__}

Conv1DRNNCell = _make(_ConvRNNCell, 1, _DOCS[_ConvRNNCell])
Conv2DRNNCell = _make(_ConvRNNCell, 2, _DOCS[_ConvRNNCell])
Conv3DRNNCell = _make(_ConvRNNCell, 3, _DOCS[_ConvRNNCell])
Conv1DLSTMCell = _make(_ConvLSTMCell, 1, _DOCS[_ConvLSTMCell])
Conv2DLSTMCell = _make(_ConvLSTMCell, 2, _DOCS[_ConvLSTMCell])
Conv3DLSTMCell = _make(_ConvLSTMCell, 3, _DOCS[_ConvLSTMCell])
Conv1DGRUCell = _make(_ConvGRUCell, 1, _DOCS[_ConvGRUCell])
Conv2DGRUCell = _make(_ConvGRUCell, 2, _DOCS[_ConvGRUCell])
Conv3DGRUCell = _make(_ConvGRUCell, 3, _DOCS[_ConvGRUCell])
