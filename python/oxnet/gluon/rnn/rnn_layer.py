"""Recurrent layers ``RNN``, ``LSTM``, ``GRU``: multi-layer, optionally bidirectional,
over a whole sequence (layout ``TNC`` or ``NTC``), with MXNet 1.9.1's parameters
(``l0_i2h_weight``, ``r0_h2h_bias``..., so MXNet's ``save_parameters`` files load).

As in MXNet 1.9.1, ``hybrid_forward`` calls the fused ``RNN`` op once, with the
parameters flattened and concatenated in its layout, so the layers run imperatively,
under autograd and hybridized (any sequence length, one graph).
``use_sequence_length=True`` (a keyword of all three) takes
``layer(x, states, sequence_length)`` with per-sequence lengths as cuDNN does: states
stop at each sequence's end, outputs past it are 0, the backward direction starts at
it (MXNet 1.9.1's CPU kernel refuses the option).
"""

from ... import ndarray
from ...base import MXNetError
from ...ndarray import NDArray
from ...symbol import Symbol
from ..block import HybridBlock, _trace_input_shapes
from .rnn_cell import _state_func_call, _zeros_from

__all__ = ["RNN", "LSTM", "GRU"]

_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


class _RNNLayer(HybridBlock):
    """What RNN, LSTM and GRU share: parameters, states, checks and the unrolled
    computation."""

    def __init__(self, hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                 i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                 h2h_bias_initializer, mode, projection_size, h2r_weight_initializer,
                 lstm_state_clip_min, lstm_state_clip_max, lstm_state_clip_nan, dtype,
                 use_sequence_length=False, **kwargs):
        super().__init__(**kwargs)
        if layout not in ("TNC", "NTC"):
            raise self._error("invalid layout %r; must be one of ['TNC' or 'NTC']"
                              % (layout,))
        if mode not in _GATES:
            raise self._error("invalid mode %r; must be one of %s (RNN's activation: "
                              "'relu' or 'tanh')" % (mode, sorted(_GATES)))
        self._hidden_size = hidden_size
        self._projection_size = projection_size if projection_size else None
        self._num_layers = num_layers
        self._mode = mode
        self._layout = layout
        self._dropout = dropout
        self._dir = 2 if bidirectional else 1
        self._input_size = input_size
        self._i2h_weight_initializer = i2h_weight_initializer
        self._h2h_weight_initializer = h2h_weight_initializer
        self._i2h_bias_initializer = i2h_bias_initializer
        self._h2h_bias_initializer = h2h_bias_initializer
        self._h2r_weight_initializer = h2r_weight_initializer
        self._lstm_state_clip_min = lstm_state_clip_min
        self._lstm_state_clip_max = lstm_state_clip_max
        self._lstm_state_clip_nan = lstm_state_clip_nan
        self._dtype = dtype
        self._use_sequence_length = use_sequence_length
        self._gates = _GATES[mode]
        self.skip_states = None
        self._traced_skip = None

        ng, ni, nh = self._gates, input_size, hidden_size
        npj = self._projection_size
        for i in range(num_layers):
            for j in ["l", "r"][:self._dir]:
                self._register_param("{}{}_i2h_weight".format(j, i), (ng * nh, ni),
                                     i2h_weight_initializer, dtype)
                self._register_param("{}{}_h2h_weight".format(j, i), (ng * nh, npj or nh),
                                     h2h_weight_initializer, dtype)
                self._register_param("{}{}_i2h_bias".format(j, i), (ng * nh,),
                                     i2h_bias_initializer, dtype)
                self._register_param("{}{}_h2h_bias".format(j, i), (ng * nh,),
                                     h2h_bias_initializer, dtype)
                if npj:
                    self._register_param("{}{}_h2r_weight".format(j, i), (npj, nh),
                                         h2r_weight_initializer, dtype)
            ni = (npj or nh) * self._dir

    def _error(self, msg):
        return MXNetError("%s '%s': %s" % (type(self).__name__, self.name, msg))

    def _register_param(self, name, shape, init, dtype):
        p = self.params.get(name, shape=shape, init=init, allow_deferred_init=True,
                            dtype=dtype)
        setattr(self, name, p)
        return p

    def _collect_params_with_prefix(self, prefix=""):
        # the structural names of MXNet 1.9.1's files, which name the parameters after
        # the equivalent stack of cells: l0_i2h_weight -> _unfused.0.i2h_weight, or
        # _unfused.0.l_cell.i2h_weight when bidirectional (r0_... -> r_cell)
        if prefix:
            prefix += "."
        ret = {}
        for key, val in self._reg_params.items():
            layer, pname = key[1:].split("_", 1)
            cell = "%s_cell." % key[0] if self._dir == 2 else ""
            ret["%s_unfused.%s.%s%s" % (prefix, layer, cell, pname)] = val
        return ret

    def __repr__(self):
        s = "{name}({mapping}, {_layout}"
        if self._num_layers != 1:
            s += ", num_layers={_num_layers}"
        if self._dropout != 0:
            s += ", dropout={_dropout}"
        if self._dir == 2:
            s += ", bidirectional"
        s += ")"
        shape = self.l0_i2h_weight.shape
        mapping = "{0} -> {1}".format(shape[1] if shape[1] else None, shape[0] // self._gates)
        return s.format(name=self.__class__.__name__, mapping=mapping, **self.__dict__)

    def cast(self, dtype):
        self._dtype = dtype
        super().cast(dtype)

    def _unfuse(self):
        """The equivalent stack of cells (``HybridSequentialRNNCell`` of RNNCell /
        LSTMCell / GRUCell, in ``BidirectionalCell`` pairs when bidirectional, with a
        ``DropoutCell`` between layers) sharing this layer's parameters, so
        ``stack.unroll(T, x, layout=...)`` computes what the layer does."""
        if self._projection_size:
            raise self._error("_unfuse does not support a projection (projection_size); "
                              "stack gluon.contrib.rnn.LSTMPCell cells instead")
        if self._lstm_state_clip_min is not None or self._lstm_state_clip_max is not None:
            raise self._error("_unfuse does not support state clipping")
        from . import rnn_cell

        def make_cell(prefix, input_size):
            kwargs = {"input_size": input_size, "prefix": prefix,
                      "i2h_weight_initializer": self._i2h_weight_initializer,
                      "h2h_weight_initializer": self._h2h_weight_initializer,
                      "i2h_bias_initializer": self._i2h_bias_initializer,
                      "h2h_bias_initializer": self._h2h_bias_initializer}
            if self._mode == "lstm":
                return rnn_cell.LSTMCell(self._hidden_size, **kwargs)
            if self._mode == "gru":
                return rnn_cell.GRUCell(self._hidden_size, **kwargs)
            return rnn_cell.RNNCell(self._hidden_size, activation=self._mode[len("rnn_"):],
                                    **kwargs)

        stack = rnn_cell.HybridSequentialRNNCell(prefix=self.prefix, params=self.params)
        with stack.name_scope():
            ni = self._input_size
            for i in range(self._num_layers):
                if self._dir == 2:
                    stack.add(rnn_cell.BidirectionalCell(make_cell("l%d_" % i, ni),
                                                         make_cell("r%d_" % i, ni)))
                else:
                    stack.add(make_cell("l%d_" % i, ni))
                if self._dropout > 0 and i != self._num_layers - 1:
                    stack.add(rnn_cell.DropoutCell(self._dropout))
                ni = self._hidden_size * self._dir
        return stack

    def state_info(self, batch_size=0):
        """One dict (``shape``, ``__layout__`` 'LNC', ``dtype``) per state."""
        n = self._num_layers * self._dir
        h = self._projection_size or self._hidden_size
        info = [{"shape": (n, batch_size, h), "__layout__": "LNC", "dtype": self._dtype}]
        if self._mode == "lstm":
            info.append({"shape": (n, batch_size, self._hidden_size), "__layout__": "LNC",
                         "dtype": self._dtype})
        return info

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        """The initial recurrent states, made by ``func`` (``nd.zeros`` by default)
        with each state's shape, dtype and ``kwargs`` (``ctx``...)."""
        states = []
        for i, info in enumerate(self.state_info(batch_size)):
            info = dict(kwargs) if info is None else dict(info, **kwargs)
            states.append(_state_func_call(func, "%sh0_%d" % (self.prefix, i), info))
        return states

    def infer_shape(self, inputs, *args):
        if inputs.ndim != 3:
            raise self._error("input data should be a rank-3 tensor of layout %s, got shape "
                              "%s" % (self._layout, inputs.shape))
        ni = inputs.shape[2]
        step = self._projection_size or self._hidden_size
        for i in range(self._num_layers):
            for j in ["l", "r"][:self._dir]:
                getattr(self, "{}{}_i2h_weight".format(j, i)).shape = (
                    self._gates * self._hidden_size, ni)
            ni = step * self._dir

    def _check(self, inputs, states, sequence_length):
        """Clear errors for bad NDArray inputs, before anything runs."""
        if inputs.ndim != 3:
            raise self._error("input data should be a rank-3 tensor of layout %s (T: "
                              "sequence length, N: batch size, C: input size), got shape %s"
                              % (self._layout, inputs.shape))
        n_in = self.l0_i2h_weight.shape[1]
        if n_in and inputs.shape[2] != n_in:
            raise self._error("input of shape %s has %d features (layout %s), the layer "
                              "takes %d" % (inputs.shape, inputs.shape[2], self._layout,
                                            n_in))
        batch = inputs.shape[self._layout.find("N")]
        if self._use_sequence_length:
            if not isinstance(sequence_length, NDArray) or sequence_length.shape != (batch,):
                raise self._error("use_sequence_length=True needs sequence_length, an "
                                  "NDArray of shape (%d,) (batch size), got %s"
                                  % (batch, getattr(sequence_length, "shape",
                                                    type(sequence_length).__name__)))
            lengths = sequence_length.asnumpy()
            t = inputs.shape[self._layout.find("T")]
            if lengths.min() < 1 or lengths.max() > t:
                raise self._error("sequence_length values must lie in [1, %d] (the sequence "
                                  "length), got %s" % (t, lengths.tolist()))
        if states is None:
            return
        if isinstance(states, NDArray):
            states = [states]
        infos = self.state_info(batch)
        if not isinstance(states, (list, tuple)) or len(states) != len(infos):
            raise self._error("expected %d recurrent state(s) (see begin_state), got %s"
                              % (len(infos), len(states) if isinstance(states, (list, tuple))
                                 else type(states).__name__))
        for state, info in zip(states, infos):
            if not isinstance(state, NDArray) or state.shape != info["shape"]:
                raise self._error("Invalid recurrent state shape. Expecting %s, got %s."
                                  % (str(info["shape"]),
                                     str(getattr(state, "shape", type(state).__name__))))

    def __call__(self, inputs, states=None, sequence_length=None, **kwargs):
        if kwargs:
            raise self._error("unexpected arguments %s" % sorted(kwargs))
        if sequence_length is not None and not self._use_sequence_length:
            raise self._error("sequence_length is given but the layer was created with "
                              "use_sequence_length=False")
        self.skip_states = states is None
        if isinstance(inputs, NDArray):
            self._check(inputs, states, sequence_length)
            if states is None:
                batch_size = inputs.shape[self._layout.find("N")]
                states = self.begin_state(batch_size, ctx=inputs.context, dtype=inputs.dtype)
        if isinstance(states, (NDArray, Symbol)):
            states = [states]
        if self._use_sequence_length:
            return super().__call__(inputs, states, sequence_length)
        return super().__call__(inputs, states)

    def forward(self, x, *args):
        if isinstance(x, Symbol):
            self._shapes_from_trace(x)
        if self._active and isinstance(x, NDArray) and self._traced_skip != self.skip_states:
            # the traced graph returns (output, states) or only the output
            self._clear_cached_op()
            self._traced_skip = self.skip_states
        if self._active and isinstance(x, NDArray) and self._cached_op is None and \
                any(p._data is None and p._deferred_init for p in self._reg_params.values()):
            # the traced graph concatenates the flattened parameters, which tells
            # nothing of their shapes: give them from the input first
            self._deferred_infer_shape(x, *args)
            for p in self._reg_params.values():
                p._finish_deferred_init()
        return super().forward(x, *args)

    def hybrid_forward(self, F, inputs, states=None, sequence_length=None, **kwargs):
        x = F.swapaxes(inputs, dim1=0, dim2=1) if self._layout == "NTC" else inputs
        if states is None:
            states = [_zeros_from(F, x, 1, info["shape"]) for info in self.state_info(0)]
        out, new_states = self._forward_kernel(F, x, states, sequence_length, kwargs)
        if self._layout == "NTC":
            out = F.swapaxes(out, dim1=0, dim2=1)
        return out if self.skip_states else (out, new_states)

    def _shapes_from_trace(self, x):
        """When the layer is called on a Symbol and the first layer's weights have no
        shape yet: gives them (G * H, C), C from the shapes a graph holding the layer
        is traced for (the graph is then traced again for other input shapes) or from
        the input variable's own shape. (The flattened parameters of the fused op tell
        shape inference nothing about them: a Symbol input of unknown shape leaves
        them, and the output, unknown, where MXNet's _rnn_param_concat infers them.)"""
        shape = self.l0_i2h_weight.shape
        if shape and len(shape) == 2 and shape[1] > 0:
            return
        shapes = _trace_input_shapes() or {}
        args = set(x.list_arguments())
        try:
            _, out, _ = x.infer_shape_partial(
                **{k: v for k, v in shapes.items() if k in args and v is not None})
        except MXNetError:
            return
        out = tuple(out[0]) if out else ()
        if len(out) != 3 or out[2] <= 0:
            return
        for j in ["l", "r"][:self._dir]:
            p = getattr(self, "%s0_i2h_weight" % j)
            p.shape = (self._gates * self._hidden_size, out[2])
            p._var = None  # made again with the shape

    def _forward_kernel(self, F, inputs, states, sequence_length, params):
        """The fused ``RNN`` op over ``inputs`` (T, N, C), as MXNet 1.9.1 calls it: the
        parameters flattened and concatenated in the op's layout (every weight, layer
        by layer and direction by direction: i2h, h2h[, h2r]; then every bias)."""
        gates = ["i2h", "h2h", "h2r"] if self._projection_size else ["i2h", "h2h"]
        flat = [F.reshape(params["{}{}_{}_{}".format(d, l, g, t)], shape=(-1,))
                for t in ["weight", "bias"]
                for l in range(self._num_layers)
                for d in ["l", "r"][:self._dir]
                for g in gates
                if g != "h2r" or t != "bias"]
        args = [inputs, F.concat(*flat, dim=0)] + list(states)
        kw = {}
        if self._use_sequence_length:
            kw["sequence_length"] = sequence_length
            kw["use_sequence_length"] = True
        if self._projection_size:
            kw["projection_size"] = self._projection_size
        if self._lstm_state_clip_min is not None:
            kw["lstm_state_clip_min"] = self._lstm_state_clip_min
        if self._lstm_state_clip_max is not None:
            kw["lstm_state_clip_max"] = self._lstm_state_clip_max
        if self._lstm_state_clip_nan:
            kw["lstm_state_clip_nan"] = True
        rnn = F.RNN(*args, state_size=self._hidden_size, num_layers=self._num_layers,
                    bidirectional=self._dir == 2, p=self._dropout, state_outputs=True,
                    mode=self._mode, **kw)
        if self._mode == "lstm":
            return rnn[0], [rnn[1], rnn[2]]
        return rnn[0], [rnn[1]]


class RNN(_RNNLayer):
    r"""Multi-layer Elman RNN with ``relu`` or ``tanh``:
    ``h_t = activation(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)``.

    Parameters
    ----------
    hidden_size : int
        Number of features in the hidden state.
    num_layers : int
        Number of stacked layers.
    activation : {'relu', 'tanh'}
        The activation.
    layout : {'TNC', 'NTC'}
        Layout of the input and output (T: time, N: batch, C: features).
    dropout : float
        Dropout on the outputs of each layer but the last (in training).
    bidirectional : bool
        Adds a backward direction (parameters ``r0_...``); outputs are concatenated.
    input_size : int
        Number of input features (0: inferred at the first call).

    Inputs: ``data`` and optionally ``states`` ([(num_layers * dirs, N, H)]).
    Outputs: ``out`` (and the new ``states`` when states were given).
    """

    def __init__(self, hidden_size, num_layers=1, activation="relu", layout="TNC", dropout=0,
                 bidirectional=False, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, "rnn_" + str(activation),
                         None, None, None, None, False, dtype, **kwargs)


class LSTM(_RNNLayer):
    r"""Multi-layer LSTM (gates i, f, c, o as in LSTMCell), optionally with a
    projection of the hidden state (``projection_size``, parameter ``h2r_weight``)
    and the cell state clipped to [``state_clip_min``, ``state_clip_max``] after each
    step (as MXNet does with cuDNN; its CPU kernel ignores the bounds), NaN states
    becoming the lower bound with ``state_clip_nan=True``.

    Parameters
    ----------
    hidden_size : int
        Number of features in the hidden state.
    num_layers, layout, dropout, bidirectional, input_size
        As in RNN.
    projection_size : int
        Size of the projected hidden state (None: no projection).

    Inputs: ``data`` and optionally ``states`` ([h, c]).
    Outputs: ``out`` (and the new ``states`` when states were given).
    """

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 projection_size=None, h2r_weight_initializer=None, state_clip_min=None,
                 state_clip_max=None, state_clip_nan=False, dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, "lstm", projection_size,
                         h2r_weight_initializer, state_clip_min, state_clip_max,
                         state_clip_nan, dtype, **kwargs)


class GRU(_RNNLayer):
    r"""Multi-layer GRU (gates r, z, n as in GRUCell).

    Parameters
    ----------
    hidden_size : int
        Number of features in the hidden state.
    num_layers, layout, dropout, bidirectional, input_size
        As in RNN.

    Inputs: ``data`` and optionally ``states`` ([h]).
    Outputs: ``out`` (and the new ``states`` when states were given).
    """

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", dtype="float32",
                 **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, "gru", None, None, None,
                         None, False, dtype, **kwargs)
