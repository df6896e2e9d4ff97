"""Recurrent layers ``RNN``, ``LSTM``, ``GRU``: multi-layer, optionally bidirectional,
over a whole sequence (layout ``TNC`` or ``NTC``), with MXNet 1.9.1's parameters
(``l0_i2h_weight``, ``r0_h2h_bias``..., so MXNet's ``save_parameters`` files load).

MXNet runs these with its fused ``RNN`` operator, which is not in oxnet's registry:
here ``hybrid_forward`` unrolls the recurrence over time with registry ops
(FullyConnected over the whole sequence for the input projection, then one
FullyConnected and the gate arithmetic per step; ``reverse`` for the backward
direction; Dropout between layers). So the layers run imperatively, under autograd
and hybridized. ``use_sequence_length=True`` (a keyword of all three) takes
``layer(x, states, sequence_length)`` with per-sequence lengths as cuDNN does: states
stop at each sequence's end, outputs past it are 0, the backward direction starts at
it (MXNet 1.9.1's CPU kernel does not honour the lengths). A traced graph is
specialised to the sequence length it was traced for
(``gluon.block._trace_input_shapes``) and traced again for another length.
"""

from ... import ndarray
from ...base import MXNetError
from ...ndarray import NDArray
from ...symbol import Symbol
from ..block import HybridBlock, _trace_input_shapes
from .rnn_cell import (_sequence_reverse, _split, _state_func_call, _steps_vs_length,
                       _zeros_from)

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
        if self._active and isinstance(x, NDArray) and self._traced_skip != self.skip_states:
            # the traced graph returns (output, states) or only the output
            self._clear_cached_op()
            self._traced_skip = self.skip_states
        return super().forward(x, *args)

    def _seq_len(self, F, inputs):
        t_axis = self._layout.find("T")
        if F is ndarray:
            return inputs.shape[t_axis]
        shapes = _trace_input_shapes() or {}
        args = set(inputs.list_arguments())
        try:
            _, out_shapes, _ = inputs.infer_shape_partial(
                **{k: v for k, v in shapes.items() if k in args and v is not None})
        except MXNetError:
            out_shapes = None
        shape = tuple(out_shapes[0]) if out_shapes else ()
        if len(shape) != 3 or shape[t_axis] <= 0:
            if len(shape) not in (0, 3):
                raise self._error("input data should be a rank-3 tensor of layout %s, got "
                                  "shape %s" % (self._layout, shape))
            raise self._error("the sequence length of the Symbol input is not known: the "
                              "layer is unrolled over time for a fixed length, so call it "
                              "(or the hybridized block holding it) on NDArrays, or give "
                              "the input variable a shape")
        return shape[t_axis]

    def hybrid_forward(self, F, inputs, states=None, sequence_length=None, **kwargs):
        length = self._seq_len(F, inputs)
        x = F.swapaxes(inputs, dim1=0, dim2=1) if self._layout == "NTC" else inputs
        if states is None:
            states = [_zeros_from(F, x, 1, info["shape"]) for info in self.state_info(0)]
        out, new_states = self._unrolled(F, x, states, length, kwargs, sequence_length)
        if self._layout == "NTC":
            out = F.swapaxes(out, dim1=0, dim2=1)
        return out if self.skip_states else (out, new_states)

    # ---- the recurrence -----------------------------------------------------------
    def _step(self, F, i2h, h, c, w):
        """One step from the input projection ``i2h`` (N, gates * H) and the previous
        states: (h, c) (c None but for LSTM)."""
        nh = self._hidden_size
        h2h = F.FullyConnected(h, w("h2h_weight"), w("h2h_bias"), num_hidden=self._gates * nh)
        if self._mode in ("rnn_relu", "rnn_tanh"):
            act = F.relu if self._mode == "rnn_relu" else F.tanh
            return act(F.elemwise_add(i2h, h2h)), None
        if self._mode == "gru":
            i_r, i_z, i_n = F.SliceChannel(i2h, num_outputs=3)
            h_r, h_z, h_n = F.SliceChannel(h2h, num_outputs=3)
            r = F.sigmoid(F.elemwise_add(i_r, h_r))
            z = F.sigmoid(F.elemwise_add(i_z, h_z))
            n = F.tanh(F.elemwise_add(i_n, F.elemwise_mul(r, h_n)))
            keep = F.elemwise_sub(F.ones_like(z), z)
            return F.elemwise_add(F.elemwise_mul(keep, n), F.elemwise_mul(z, h)), None
        g_i, g_f, g_c, g_o = F.SliceChannel(F.elemwise_add(i2h, h2h), num_outputs=4)
        c = F.elemwise_add(F.elemwise_mul(F.sigmoid(g_f), c),
                           F.elemwise_mul(F.sigmoid(g_i), F.tanh(g_c)))
        lo, hi = self._lstm_state_clip_min, self._lstm_state_clip_max
        if lo is not None or hi is not None:
            c = F.clip(c, a_min=float("-inf") if lo is None else lo,
                       a_max=float("inf") if hi is None else hi)
            if self._lstm_state_clip_nan:  # NaN becomes the lower bound (cuDNN's rule)
                c = F.where(F.broadcast_equal(c, c), c,
                            F.ones_like(c) * (hi if lo is None else lo))
        h = F.elemwise_mul(F.sigmoid(g_o), F.tanh(c))
        if self._projection_size:
            h = F.FullyConnected(h, w("h2r_weight"), no_bias=True,
                                 num_hidden=self._projection_size)
        return h, c

    def _unrolled(self, F, x, states, length, params, valid=None):
        """(outputs (T, N, D * H), [h (L * D, N, H), c]) of the stacked layers over
        ``x`` (T, N, C). With ``valid`` (N,) lengths: the states stop changing after
        each sequence's end, the outputs there are 0, and the backward direction reads
        each sequence from its own end."""
        n = self._num_layers * self._dir
        masks = None
        if valid is not None:
            masks = _split(F, F.expand_dims(
                _steps_vs_length(F, F.broadcast_lesser, length, valid, x), axis=2), length, 0)

        def reverse(seq):
            if valid is None:
                return F.reverse(seq, axis=0)
            return _sequence_reverse(F, seq, valid, length)

        lstm = self._mode == "lstm"
        hs = _split(F, states[0], n, 0)
        cs = _split(F, states[1], n, 0) if lstm else [None] * n
        out_h, out_c = [], []
        for layer in range(self._num_layers):
            outs = []
            for d in range(self._dir):
                idx = layer * self._dir + d
                prefix = "%s%d_" % ("lr"[d], layer)

                def w(name, prefix=prefix):
                    return params[prefix + name]

                seq = x if d == 0 else reverse(x)
                i2h = F.FullyConnected(seq, w("i2h_weight"), w("i2h_bias"),
                                       num_hidden=self._gates * self._hidden_size,
                                       flatten=False)
                h, c = hs[idx], cs[idx]
                steps = []
                for t, i2h_t in enumerate(_split(F, i2h, length, 0)):
                    h_new, c_new = self._step(F, i2h_t, h, c, w)
                    if masks is None:
                        h, c = h_new, c_new
                        steps.append(h)
                        continue
                    m = F.broadcast_like(masks[t], h_new)
                    h = F.where(m, h_new, h)
                    if c_new is not None:
                        c = F.where(F.broadcast_like(masks[t], c_new), c_new, c)
                    steps.append(F.where(m, h_new, F.zeros_like(h_new)))
                out_h.append(h)
                out_c.append(c)
                y = F.stack(*steps, axis=0)
                outs.append(y if d == 0 else reverse(y))
            x = outs[0] if len(outs) == 1 else F.concat(*outs, dim=2)
            if self._dropout and layer < self._num_layers - 1:
                x = F.Dropout(x, p=self._dropout)
        new_states = [F.stack(*out_h, axis=0)]
        if lstm:
            new_states.append(F.stack(*out_c, axis=0))
        return x, new_states


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
