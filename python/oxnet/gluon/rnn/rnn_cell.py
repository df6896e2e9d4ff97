"""Recurrent cells: one time step ``cell(inputs, states) -> (output, new_states)``
written with ``F`` (so a cell runs imperatively, under autograd, or traced when
hybridized), and ``unroll`` over a whole sequence.

Cells: ``RNNCell``, ``LSTMCell`` (gates i, f, c, o), ``GRUCell`` (gates r, z, n),
containers (``SequentialRNNCell``, ``HybridSequentialRNNCell``,
``BidirectionalCell``) and modifiers (``DropoutCell``, ``ZoneoutCell``,
``ResidualCell``). Names, parameters, defaults and reprs follow MXNet 1.9.1.

Variable-length sequences (``valid_length``) are masked, reversed and reduced with
the registry's elementwise/broadcast ops (the ``Sequence*`` ops are not in the
registry): see ``_sequence_mask``, ``_sequence_last``, ``_sequence_reverse``.
"""

import numpy as np

from ... import ndarray, symbol
from ...base import MXNetError, numeric_types
from ...ndarray import NDArray
from ...symbol import Symbol
from ..block import Block, HybridBlock
from ..nn import LeakyReLU
from ..parameter import _indent

__all__ = ["RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell", "GRUCell",
           "SequentialRNNCell", "HybridSequentialRNNCell", "DropoutCell", "ModifierCell",
           "ZoneoutCell", "ResidualCell", "BidirectionalCell"]

_TENSORS = (NDArray, Symbol)


def _err(block, msg):
    return MXNetError("%s '%s': %s" % (type(block).__name__, block.name, msg))


# ---- states -------------------------------------------------------------------------
def _cells_state_info(cells, batch_size):
    return sum([c.state_info(batch_size) for c in cells], [])


def _cells_begin_state(cells, **kwargs):
    return sum([c.begin_state(**kwargs) for c in cells], [])


def _state_func_call(func, name, info):
    """``func(name=..., **info)`` for one ``state_info`` entry. MXNet's hidden
    ``__layout__`` key is left out: the registry's ops take no hidden attributes."""
    kwargs = {k: v for k, v in info.items() if not (k.startswith("__") and k.endswith("__"))}
    return func(name=name, **kwargs)


def _zeros_from(F, ref, batch_axis, shape):
    """Zeros of ``shape`` (from ``state_info(0)``: the batch dimension is 0) whose
    batch size is that of axis ``batch_axis`` of ``ref``, in ``ref``'s dtype: the
    initial states of a traced graph, where the batch size is not known."""
    per_batch = F.sum(F.zeros_like(ref), axis=batch_axis, exclude=True)
    view = [1] * len(shape)
    pos = list(shape).index(0)
    view[pos] = -1
    out = F.reshape(per_batch, shape=tuple(view))
    # broadcast_axis with the known sizes, not broadcast_to with a 0 in the shape:
    # a consumer that fixes the states' shape (the fused RNN op) then agrees with it
    axes = tuple(i for i in range(len(shape)) if i != pos and shape[i] != 1)
    if axes:
        out = F.broadcast_axis(out, axis=axes, size=tuple(shape[i] for i in axes))
    return out


def _get_begin_state(cell, F, begin_state, inputs, batch_size, layout):
    if begin_state is not None:
        return begin_state
    if F is ndarray:
        ref = inputs if isinstance(inputs, NDArray) else inputs[0]
        with ref.context:
            return cell.begin_state(func=ndarray.zeros, batch_size=batch_size, dtype=ref.dtype)
    if isinstance(inputs, Symbol):
        ref, batch_axis = inputs, layout.find("N")
    else:
        ref, batch_axis = inputs[0], 0
    return [_zeros_from(F, ref, batch_axis, info["shape"]) for info in cell.state_info(0)]


# ---- sequences ----------------------------------------------------------------------
def _split(F, x, num, axis):
    """``x`` cut into ``num`` pieces along ``axis`` (squeezed), always as a list."""
    parts = F.split(x, num_outputs=num, axis=axis, squeeze_axis=True)
    return [parts] if isinstance(parts, NDArray) else list(parts)


def _format_sequence(length, inputs, layout, merge, in_layout=None):
    """(inputs as a list of steps (merge False) or one tensor with the time axis of
    ``layout`` (merge True; None: as given), time axis, F, batch size (0 when
    unknown))."""
    if inputs is None:
        raise MXNetError("unroll: inputs must be given (an NDArray, a Symbol or a list "
                         "of steps)")
    if layout not in ("NTC", "TNC"):
        raise MXNetError("unroll: invalid layout %r; must be 'NTC' or 'TNC'" % (layout,))
    axis = layout.find("T")
    batch_axis = layout.find("N")
    in_axis = in_layout.find("T") if in_layout else axis
    batch_size = 0
    if isinstance(inputs, Symbol):
        F = symbol
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise MXNetError("unroll only accepts 1 input symbol; use a list of "
                                 "symbols for several")
            if length is None:
                raise MXNetError("unroll: the length must be given to unroll a Symbol")
            inputs = _split(symbol, inputs, length, in_axis)
    elif isinstance(inputs, NDArray):
        F = ndarray
        if inputs.ndim < 3:
            raise MXNetError("unroll: the inputs must have 3 dimensions (layout %s), got "
                             "shape %s" % (layout, inputs.shape))
        batch_size = inputs.shape[batch_axis]
        if merge is False:
            if length is not None and length != inputs.shape[in_axis]:
                raise MXNetError("unroll: length %d does not match the %d steps of the "
                                 "inputs (shape %s, layout %s)"
                                 % (length, inputs.shape[in_axis], inputs.shape, layout))
            inputs = _split(ndarray, inputs, inputs.shape[in_axis], in_axis)
    else:
        if not isinstance(inputs, (list, tuple)) or not inputs:
            raise MXNetError("unroll: inputs must be an NDArray, a Symbol or a non-empty "
                             "list of steps, got %s" % type(inputs).__name__)
        if length is not None and len(inputs) != length:
            raise MXNetError("unroll: length %d does not match the %d steps given"
                             % (length, len(inputs)))
        F = symbol if isinstance(inputs[0], Symbol) else ndarray
        if F is ndarray:
            batch_size = inputs[0].shape[0]
        if merge is True:
            inputs = F.stack(*inputs, axis=axis)
            in_axis = axis
    if isinstance(inputs, _TENSORS) and axis != in_axis:
        inputs = F.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis, F, batch_size


def _arange(F, length, like):
    if F is ndarray:
        return ndarray._internal._arange(start=0, stop=length, ctx=like.context)
    return symbol._internal._arange(start=0, stop=length)


def _steps_vs_length(F, op, length, valid_length, like, offset=0):
    """(T, N) 0/1 array ``op(t, valid_length[n] - offset)``."""
    t = F.reshape(_arange(F, length, like), shape=(-1, 1))
    vl = F.reshape(F.cast(valid_length, dtype="float32"), shape=(1, -1))
    if offset:
        vl = vl - offset
    return op(t, vl)


def _sequence_mask(F, data, valid_length, length, axis):
    """``data`` (time axis ``axis`` 0 or 1, 3 dimensions) with the steps at or past
    each sequence's length set to 0 (MXNet's SequenceMask)."""
    mask = _steps_vs_length(F, F.broadcast_lesser, length, valid_length, data)
    if axis == 1:
        mask = F.transpose(mask)
    mask = F.broadcast_like(F.expand_dims(mask, axis=2), data)
    return F.where(mask, data, F.zeros_like(data))


def _sequence_last(F, data, valid_length, length):
    """The step ``valid_length - 1`` of each sequence of ``data`` (T, N, ...)
    (MXNet's SequenceLast)."""
    mask = _steps_vs_length(F, F.broadcast_equal, length, valid_length, data, offset=1)
    mask = F.broadcast_like(F.expand_dims(mask, axis=2), data)
    return F.sum(F.where(mask, data, F.zeros_like(data)), axis=0)


def _sequence_reverse(F, data, valid_length, length):
    """``data`` (T, N, C) with the first ``valid_length[n]`` steps of each sequence
    reversed and the rest in place (MXNet's SequenceReverse), as a product with
    permutation matrices."""
    t = F.reshape(_arange(F, length, data), shape=(1, -1))                 # (1, T)
    vl = F.reshape(F.cast(valid_length, dtype="float32"), shape=(-1, 1))  # (N, 1)
    inside = F.broadcast_lesser(t, vl)                                     # (N, T)
    src = F.where(inside, F.broadcast_minus(vl - 1, t), F.broadcast_like(t, inside))
    perm = F.broadcast_equal(F.expand_dims(src, axis=2), F.reshape(t, shape=(1, 1, -1)))
    x = F.transpose(data, axes=(1, 0, 2))                                  # (N, T, C)
    one = F.slice_axis(F.zeros_like(x), axis=2, begin=0, end=1) + 1        # (N, T, 1)
    perm = F.where(perm, F.broadcast_like(one, perm), F.broadcast_like(one * 0, perm))
    return F.transpose(F.batch_dot(perm, x), axes=(1, 0, 2))


def _mask_sequence_variable_length(F, data, length, valid_length, time_axis, merge):
    if not isinstance(data, _TENSORS):
        data = F.stack(*data, axis=time_axis)
    outputs = _sequence_mask(F, data, valid_length, length, time_axis)
    if not merge:
        outputs = _split(F, outputs, length, time_axis)
    return outputs


def _reverse_sequences(sequences, unroll_step, valid_length=None):
    if valid_length is None:
        return list(reversed(sequences))
    F = symbol if isinstance(sequences[0], Symbol) else ndarray
    rev = _sequence_reverse(F, F.stack(*sequences, axis=0), valid_length, unroll_step)
    return _split(F, rev, unroll_step, 0)


# ---- base cells ---------------------------------------------------------------------
class RecurrentCell(Block):
    """Abstract base class of recurrent cells: ``cell(inputs, states)`` computes one
    step, ``unroll`` a whole sequence.

    Parameters
    ----------
    prefix : str
        Prefix of the names of the cell's parameters.
    params : ParameterDict
        Parameters to share instead of creating new ones.
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self):
        """Resets the step counters before a new sequence (``unroll`` calls it)."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            if isinstance(cell, RecurrentCell):
                cell.reset()

    def state_info(self, batch_size=0):
        """A list of dicts (``shape``, ``__layout__``), one per state."""
        raise MXNetError("%s must define state_info()" % type(self).__name__)

    def _check_unmodified(self, example="ZoneoutCell"):
        """A cell wrapped by a modifier cell is only run through the modifier."""
        if self._modified:
            raise _err(self, "after applying modifier cells (e.g. %s) the base "
                             "cell cannot be called directly. Call the modifier cell "
                             "instead." % example)

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        """The initial states, made by ``func`` (``nd.zeros`` by default; e.g.
        ``sym.zeros``, ``nd.random.uniform``) with each state's shape and ``kwargs``
        (``ctx``, ``dtype``...)."""
        self._check_unmodified()
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            info = dict(kwargs) if info is None else dict(info, **kwargs)
            states.append(_state_func_call(
                func, "%sbegin_state_%d" % (self._prefix, self._init_counter), info))
        return states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        """Runs the cell over ``length`` steps of ``inputs`` (one tensor with layout
        ``layout``, or a list of (batch, features) steps). Returns (outputs, states):
        outputs as one tensor (``merge_outputs=True``), a list of steps (False), or
        as the inputs were given (None). With ``valid_length`` (batch,), outputs past
        each sequence's end are 0 and the states are those of its last step."""
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        if length is None:
            length = len(inputs)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size, layout)
        outputs, all_states = [], []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
            if valid_length is not None:
                all_states.append(states)
        if valid_length is not None:
            states = [_sequence_last(F, F.stack(*ele, axis=0), valid_length, length)
                      for ele in zip(*all_states)]
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis,
                                                     True)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, F, inputs, activation, **kwargs):
        """``activation`` (a name, a LeakyReLU block or a callable) of ``inputs``."""
        if isinstance(activation, str):
            fn = {"tanh": F.tanh, "sigmoid": F.sigmoid, "relu": F.relu,
                  "softsign": F.softsign}.get(activation)
            if fn is not None:
                return fn(inputs, **kwargs)
            return F.Activation(inputs, act_type=activation, **kwargs)
        if isinstance(activation, LeakyReLU):
            return F.LeakyReLU(inputs, act_type="leaky", slope=activation._alpha, **kwargs)
        return activation(inputs, **kwargs)

    def forward(self, inputs, states):
        """One step: (output, new states)."""
        self._counter += 1
        return super().forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A recurrent cell whose step is ``hybrid_forward(F, inputs, states, **params)``."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)


class _GatedCell(HybridRecurrentCell):
    """What RNNCell, LSTMCell and GRUCell share: the parameters ``i2h_weight``
    (gates * hidden, input), ``h2h_weight`` (gates * hidden, hidden), ``i2h_bias``,
    ``h2h_bias``, the state shapes and the checks of one step's inputs."""

    _gates = 1
    _num_states = 1

    def __init__(self, hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        n = self._gates * hidden_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(n, input_size),
                                          init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(n, hidden_size),
                                          init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(n,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(n,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}
                for _ in range(self._num_states)]

    def infer_shape(self, x, *args):
        self.i2h_weight.shape = (self._gates * self._hidden_size,
                                 int(np.prod(x.shape[1:])))

    def _check_step(self, inputs, states):
        if inputs.ndim < 2:
            raise _err(self, "the input of one step must be (batch_size, input_size), got "
                             "shape %s" % (inputs.shape,))
        n_in = self.i2h_weight.shape[1]
        if n_in and int(np.prod(inputs.shape[1:])) != n_in:
            raise _err(self, "input of shape %s has %d features, the cell takes %d"
                       % (inputs.shape, int(np.prod(inputs.shape[1:])), n_in))
        if not isinstance(states, (list, tuple)) or len(states) != self._num_states:
            raise _err(self, "states must be a list of %d arrays (see begin_state), got %s"
                       % (self._num_states, type(states).__name__ if not
                          isinstance(states, (list, tuple)) else "%d" % len(states)))
        want = (inputs.shape[0], self._hidden_size)
        for i, s in enumerate(states):
            if not isinstance(s, NDArray) or s.shape != want:
                raise _err(self, "state %d must have shape %s, got %s"
                           % (i, want, getattr(s, "shape", type(s).__name__)))

    def forward(self, inputs, states):
        if isinstance(inputs, NDArray):
            self._check_step(inputs, states)
        return super().forward(inputs, states)

    def __repr__(self):
        shape = self.i2h_weight.shape
        mapping = "{0} -> {1}".format(shape[1] if shape[1] else None, shape[0])
        s = "{name}({mapping}".format(name=self.__class__.__name__, mapping=mapping)
        if hasattr(self, "_activation"):
            s += ", {}".format(self._activation)
        return s + ")"


class RNNCell(_GatedCell):
    r"""Elman RNN cell: ``h_t = activation(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)``.

    Parameters
    ----------
    hidden_size : int
        Number of units in the output.
    activation : str or Block
        Activation (``'tanh'``, ``'relu'``, ``'sigmoid'``, ``'softsign'``, another
        ``Activation`` name, a LeakyReLU block or a callable).
    i2h_weight_initializer, h2h_weight_initializer : str or Initializer
        Initializers of the input-to-hidden and hidden-to-hidden weights.
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer
        Initializers of the biases (default zeros).
    input_size : int
        Number of input features (0: inferred at the first call).
    """

    def __init__(self, hidden_size, activation="tanh", i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", input_size=0, prefix=None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix,
                         params)
        self._activation = activation

    def _alias(self):
        return "rnn"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        p = "t%d_" % self._counter
        i2h = F.FullyConnected(inputs, i2h_weight, i2h_bias, num_hidden=self._hidden_size,
                               name=p + "i2h")
        h2h = F.FullyConnected(states[0], h2h_weight, h2h_bias,
                               num_hidden=self._hidden_size, name=p + "h2h")
        out = self._get_activation(F, F.elemwise_add(i2h, h2h, name=p + "plus0"),
                                   self._activation, name=p + "out")
        return out, [out]


class LSTMCell(_GatedCell):
    r"""Long short-term memory cell. Gates, in the order of the weights' rows:
    input ``i``, forget ``f``, cell candidate ``c``, output ``o``;
    ``c_t = f * c_{t-1} + i * c``, ``h_t = o * activation(c_t)``.
    States: [h, c], each (batch_size, hidden_size).

    Parameters
    ----------
    hidden_size : int
        Number of units in the output.
    activation : str
        Activation of the candidate and of the cell state (default tanh).
    recurrent_activation : str
        Activation of the gates (default sigmoid).
    input_size : int
        Number of input features (0: inferred at the first call).
    """

    _gates = 4
    _num_states = 2

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 prefix=None, params=None, activation="tanh", recurrent_activation="sigmoid"):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix,
                         params)
        self._act = activation
        self._recurrent_act = recurrent_activation

    def _alias(self):
        return "lstm"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        p = "t%d_" % self._counter
        n = 4 * self._hidden_size
        i2h = F.FullyConnected(inputs, i2h_weight, i2h_bias, num_hidden=n, name=p + "i2h")
        h2h = F.FullyConnected(states[0], h2h_weight, h2h_bias, num_hidden=n, name=p + "h2h")
        gates = F.SliceChannel(F.elemwise_add(i2h, h2h, name=p + "plus0"), num_outputs=4,
                               name=p + "slice")
        act, ract = self._act, self._recurrent_act
        in_gate = self._get_activation(F, gates[0], ract, name=p + "i")
        forget_gate = self._get_activation(F, gates[1], ract, name=p + "f")
        in_transform = self._get_activation(F, gates[2], act, name=p + "c")
        out_gate = self._get_activation(F, gates[3], ract, name=p + "o")
        next_c = F.elemwise_add(F.elemwise_mul(forget_gate, states[1], name=p + "mul0"),
                                F.elemwise_mul(in_gate, in_transform, name=p + "mul1"),
                                name=p + "state")
        next_h = F.elemwise_mul(out_gate,
                                self._get_activation(F, next_c, act, name=p + "activation0"),
                                name=p + "out")
        return next_h, [next_h, next_c]


class GRUCell(_GatedCell):
    r"""Gated recurrent unit cell (MXNet's formula). Gates, in the order of the
    weights' rows: reset ``r``, update ``z``, new ``n``;
    ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``, ``h_t = (1 - z) * n + z * h``.

    Parameters
    ----------
    hidden_size : int
        Number of units in the output.
    input_size : int
        Number of input features (0: inferred at the first call).
    """

    _gates = 3

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 prefix=None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix,
                         params)

    def _alias(self):
        return "gru"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        p = "t%d_" % self._counter
        n = 3 * self._hidden_size
        prev_h = states[0]
        i2h = F.FullyConnected(inputs, i2h_weight, i2h_bias, num_hidden=n, name=p + "i2h")
        h2h = F.FullyConnected(prev_h, h2h_weight, h2h_bias, num_hidden=n, name=p + "h2h")
        i2h_r, i2h_z, i2h_n = F.SliceChannel(i2h, num_outputs=3, name=p + "i2h_slice")
        h2h_r, h2h_z, h2h_n = F.SliceChannel(h2h, num_outputs=3, name=p + "h2h_slice")
        reset_gate = F.sigmoid(F.elemwise_add(i2h_r, h2h_r, name=p + "plus0"),
                               name=p + "r_act")
        update_gate = F.sigmoid(F.elemwise_add(i2h_z, h2h_z, name=p + "plus1"),
                                name=p + "z_act")
        new = F.tanh(F.elemwise_add(i2h_n, F.elemwise_mul(reset_gate, h2h_n, name=p + "mul0"),
                                    name=p + "plus2"), name=p + "h_act")
        keep = F.elemwise_sub(F.ones_like(update_gate), update_gate, name=p + "minus0")
        next_h = F.elemwise_add(F.elemwise_mul(keep, new, name=p + "mul1"),
                                F.elemwise_mul(update_gate, prev_h, name=p + "mul2"),
                                name=p + "out")
        return next_h, [next_h]


# ---- containers ---------------------------------------------------------------------
class _ChildStatesMixin:
    """Cells whose states are their children's, in order."""
    _modifier_example = "ZoneoutCell"

    def state_info(self, batch_size=0):
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        self._check_unmodified(self._modifier_example)
        return _cells_begin_state(self._children.values(), **kwargs)


class _SequentialCellMixin(_ChildStatesMixin):
    """What SequentialRNNCell and HybridSequentialRNNCell share."""

    def add(self, cell):
        """Appends a cell."""
        self.register_child(cell)


    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, _, F, batch_size = _format_sequence(length, inputs, layout, None)
        cells = list(self._children.values())
        begin_state = _get_begin_state(self, F, begin_state, inputs, batch_size, layout)
        p = 0
        next_states = []
        for i, cell in enumerate(cells):
            n = len(cell.state_info())
            states = begin_state[p:p + n]
            p += n
            inputs, states = cell.unroll(length, inputs=inputs, begin_state=states,
                                         layout=layout,
                                         merge_outputs=None if i < len(cells) - 1
                                         else merge_outputs,
                                         valid_length=valid_length)
            next_states.extend(states)
        return inputs, next_states

    def __call__(self, inputs, states):
        self._counter += 1
        next_states = []
        p = 0
        for cell in self._children.values():
            if isinstance(cell, BidirectionalCell):
                raise _err(self, "a BidirectionalCell cannot be stepped; use unroll")
            n = len(cell.state_info())
            state = states[p:p + n]
            p += n
            inputs, state = cell(inputs, state)
            next_states.append(state)
        return inputs, sum(next_states, [])

    def __getitem__(self, i):
        return self._children[str(i)]

    def __len__(self):
        return len(self._children)

    def __repr__(self):
        modstr = "\n".join(["({i}): {m}".format(i=i, m=_indent(repr(m), 2))
                            for i, m in self._children.items()])
        return "{name}(\n{modstr}\n)".format(name=self.__class__.__name__, modstr=modstr)


class SequentialRNNCell(_SequentialCellMixin, RecurrentCell):
    """Stacks recurrent cells: each one's output is the next one's input; the states
    are the cells' states one after the other."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)


class HybridSequentialRNNCell(_SequentialCellMixin, HybridRecurrentCell):
    """Stacks hybrid recurrent cells (see SequentialRNNCell)."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, inputs, states):
        return self.__call__(inputs, states)


class DropoutCell(HybridRecurrentCell):
    """Applies dropout (rate ``rate``, masks shared along ``axes``) to the input; has
    no states.

    Parameters
    ----------
    rate : float
        Fraction of the inputs set to 0 (in training).
    axes : tuple of int
        Axes along which the mask is shared.
    """

    def __init__(self, rate, axes=(), prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        if not isinstance(rate, numeric_types):
            raise _err(self, "rate must be a number, got %s" % type(rate).__name__)
        self._rate = rate
        self._axes = axes

    def __repr__(self):
        return "{name}(rate={_rate}, axes={_axes})".format(name=self.__class__.__name__,
                                                            **self.__dict__)

    def state_info(self, batch_size=0):
        return []

    def _alias(self):
        return "dropout"

    def hybrid_forward(self, F, inputs, states):
        if self._rate > 0:
            inputs = F.Dropout(inputs, p=self._rate, axes=self._axes,
                               name="t%d_fwd" % self._counter)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, _, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, _TENSORS):
            return self.hybrid_forward(F, inputs, begin_state if begin_state else [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs, valid_length=valid_length)


# ---- modifiers ----------------------------------------------------------------------
class ModifierCell(HybridRecurrentCell):
    """Base class of cells that change another cell (``base_cell``), e.g. Zoneout or
    Residual. The modifier shares the base cell's parameters; the base cell cannot
    be used directly afterwards."""

    def __init__(self, base_cell):
        if base_cell._modified:
            raise MXNetError("Cell %s is already modified. One cell cannot be modified "
                             "twice" % base_cell.name)
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self):
        return self.base_cell.params

    def state_info(self, batch_size=0):
        return self.base_cell.state_info(batch_size)

    def begin_state(self, func=symbol.zeros, **kwargs):
        self._check_unmodified()
        self.base_cell._modified = False
        try:
            begin = self.base_cell.begin_state(func=func, **kwargs)
        finally:
            self.base_cell._modified = True
        return begin

    def __repr__(self):
        return "{name}({base_cell})".format(name=self.__class__.__name__, **self.__dict__)


class ZoneoutCell(ModifierCell):
    """Zoneout (Krueger et al. 2016): in training, each output and state unit keeps
    its previous value with probability ``zoneout_outputs`` / ``zoneout_states``."""

    def __init__(self, base_cell, zoneout_outputs=0., zoneout_states=0.):
        if isinstance(base_cell, BidirectionalCell):
            raise MXNetError("BidirectionalCell doesn't support zoneout since it doesn't "
                             "support step. Please add ZoneoutCell to the cells underneath "
                             "instead.")
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self._prev_output = None

    def __repr__(self):
        return "{name}(p_out={zoneout_outputs}, p_state={zoneout_states}, {base_cell})".format(
            name=self.__class__.__name__, **self.__dict__)

    def _alias(self):
        return "zoneout"

    def reset(self):
        super().reset()
        self._prev_output = None

    def hybrid_forward(self, F, inputs, states):
        p_out, p_state = self.zoneout_outputs, self.zoneout_states
        next_output, next_states = self.base_cell(inputs, states)

        def keep_new(p, like):  # nonzero where the new value is taken
            return F.Dropout(F.ones_like(like), p=p)

        prev_output = self._prev_output
        if prev_output is None:
            prev_output = F.zeros_like(next_output)
        output = (F.where(keep_new(p_out, next_output), next_output, prev_output)
                  if p_out != 0. else next_output)
        new_states = ([F.where(keep_new(p_state, new), new, old)
                       for new, old in zip(next_states, states)]
                      if p_state != 0. else next_states)
        self._prev_output = output
        return output, new_states


class ResidualCell(ModifierCell):
    """Adds the input to the base cell's output (He et al. 2015)."""

    def __init__(self, base_cell):
        super().__init__(base_cell)

    def hybrid_forward(self, F, inputs, states):
        output, states = self.base_cell(inputs, states)
        output = F.elemwise_add(output, inputs, name="t%d_fwd" % self._counter)
        return output, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs,
                                                    begin_state=begin_state, layout=layout,
                                                    merge_outputs=merge_outputs,
                                                    valid_length=valid_length)
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, _TENSORS)
        inputs, axis, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if valid_length is not None:
            inputs = _mask_sequence_variable_length(F, inputs, length, valid_length, axis,
                                                    merge_outputs)
        if merge_outputs:
            outputs = F.elemwise_add(outputs, inputs)
        else:
            outputs = [F.elemwise_add(i, j) for i, j in zip(outputs, inputs)]
        return outputs, states


class BidirectionalCell(_ChildStatesMixin, HybridRecurrentCell):
    """Runs ``l_cell`` forward and ``r_cell`` backward over the sequence and
    concatenates their outputs (features axis). Only ``unroll`` (no stepping).

    Parameters
    ----------
    l_cell, r_cell : HybridRecurrentCell
        The forward and the backward cell.
    output_prefix : str
        Prefix of the output names.
    """

    _modifier_example = "DropoutCell"

    def __init__(self, l_cell, r_cell, output_prefix="bi_"):
        super().__init__(prefix="", params=None)
        self.register_child(l_cell, "l_cell")
        self.register_child(r_cell, "r_cell")
        self._output_prefix = output_prefix

    def __call__(self, inputs, states):
        raise _err(self, "Bidirectional cannot be stepped. Please use unroll")

    def __repr__(self):
        return "{name}(forward={l_cell}, backward={r_cell})".format(
            name=self.__class__.__name__, l_cell=self._children["l_cell"],
            r_cell=self._children["r_cell"])


    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        if length is None:
            length = len(inputs)
        reversed_inputs = _reverse_sequences(inputs, length, valid_length)
        begin_state = _get_begin_state(self, F, begin_state, inputs, batch_size, layout)
        l_cell, r_cell = self._children.values()
        n_l = len(l_cell.state_info(batch_size))
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs,
                                            begin_state=begin_state[:n_l], layout=layout,
                                            merge_outputs=merge_outputs,
                                            valid_length=valid_length)
        r_outputs, r_states = r_cell.unroll(length, inputs=reversed_inputs,
                                            begin_state=begin_state[n_l:], layout=layout,
                                            merge_outputs=False, valid_length=valid_length)
        reversed_r_outputs = _reverse_sequences(r_outputs, length, valid_length)
        if merge_outputs is None:
            merge_outputs = isinstance(l_outputs, _TENSORS)
        l_outputs, _, _, _ = _format_sequence(length, l_outputs, layout, merge_outputs)
        reversed_r_outputs, _, _, _ = _format_sequence(length, reversed_r_outputs, layout,
                                                       merge_outputs)
        if merge_outputs:
            outputs = F.concat(l_outputs, reversed_r_outputs, dim=2,
                               name="%sout" % self._output_prefix)
        else:
            outputs = [F.concat(l_o, r_o, dim=1, name="%st%d" % (self._output_prefix, i))
                       for i, (l_o, r_o) in enumerate(zip(l_outputs, reversed_r_outputs))]
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis,
                                                     merge_outputs)
        return outputs, l_states + r_states
