"""Contributed recurrent cells (MXNet 1.9.1's ``gluon.contrib.rnn.rnn_cell``):

- ``VariationalDropoutCell`` (Gal and Ghahramani 2016): dropout on a cell's inputs,
  states and outputs with one mask per sequence, the same at every step;
- ``LSTMPCell`` (Sak et al. 2014): an LSTM whose hidden state is projected to
  ``projection_size`` (parameter ``h2r_weight``), the cell of ``gluon.rnn.LSTM`` with
  ``projection_size``;
- ``dynamic_unroll``: runs a cell over a sequence with ``F.contrib.foreach`` (one loop
  op in a graph instead of one copy of the cell per step).
"""

import numpy as np

from ...rnn.rnn_cell import (BidirectionalCell, HybridRecurrentCell, ModifierCell,
                             _format_sequence, _get_begin_state,
                             _mask_sequence_variable_length, _TENSORS)
from ....base import MXNetError
from ....ndarray import NDArray

__all__ = ["VariationalDropoutCell", "LSTMPCell", "dynamic_unroll"]


class VariationalDropoutCell(ModifierCell):
    """Applies variational dropout to ``base_cell``: the masks of the inputs
    (``drop_inputs``), of the first state (``drop_states``) and of the outputs
    (``drop_outputs``) are drawn at the first step after ``reset`` (``unroll``
    resets) and reused at every step. In predict mode the cell is ``base_cell``.

    Parameters
    ----------
    base_cell : RecurrentCell
        The cell to modify.
    drop_inputs, drop_states, drop_outputs : float
        Dropout rates.
    """

    def __init__(self, base_cell, drop_inputs=0., drop_states=0., drop_outputs=0.):
        if drop_states and isinstance(base_cell, BidirectionalCell):
            raise MXNetError("BidirectionalCell doesn't support variational state dropout. "
                             "Please add VariationalDropoutCell to the cells underneath "
                             "instead.")
        super().__init__(base_cell)
        self.drop_inputs = drop_inputs
        self.drop_states = drop_states
        self.drop_outputs = drop_outputs
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def _alias(self):
        return "vardrop"

    def reset(self):
        super().reset()
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def __repr__(self):
        return "{name}(p_out = {drop_outputs}, p_state = {drop_states})".format(
            name=self.__class__.__name__, drop_outputs=self.drop_outputs,
            drop_states=self.drop_states)

    def _initialize_input_masks(self, F, inputs, states):
        if self.drop_states and self.drop_states_mask is None:
            self.drop_states_mask = F.Dropout(F.ones_like(states[0]), p=self.drop_states)
        if self.drop_inputs and self.drop_inputs_mask is None:
            self.drop_inputs_mask = F.Dropout(F.ones_like(inputs), p=self.drop_inputs)

    def _initialize_output_mask(self, F, output):
        if self.drop_outputs and self.drop_outputs_mask is None:
            self.drop_outputs_mask = F.Dropout(F.ones_like(output), p=self.drop_outputs)

    def hybrid_forward(self, F, inputs, states):
        self._initialize_input_masks(F, inputs, states)
        if self.drop_states:
            states = list(states)
            states[0] = F.elemwise_mul(states[0], self.drop_states_mask)
        if self.drop_inputs:
            inputs = F.elemwise_mul(inputs, self.drop_inputs_mask)
        next_output, next_states = self.base_cell(inputs, states)
        self._initialize_output_mask(F, next_output)
        if self.drop_outputs:
            next_output = F.elemwise_mul(next_output, self.drop_outputs_mask)
        return next_output, next_states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        if self.drop_states:
            return super().unroll(length, inputs, begin_state, layout, merge_outputs,
                                  valid_length=valid_length)
        # no state dropout: the input and output masks apply to whole sequences, shared
        # along the time axis
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, True)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size, layout)
        if self.drop_inputs:
            inputs = F.Dropout(inputs, p=self.drop_inputs, axes=(axis,))
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs, states, layout,
                                                    merge_outputs=True,
                                                    valid_length=valid_length)
        finally:
            self.base_cell._modified = True
        if self.drop_outputs:
            outputs = F.Dropout(outputs, p=self.drop_outputs, axes=(axis,))
        merge_outputs = isinstance(outputs, _TENSORS) if merge_outputs is None \
            else merge_outputs
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis,
                                                     merge_outputs)
        return outputs, states


class LSTMPCell(HybridRecurrentCell):
    r"""LSTM cell with a projection of the hidden state (LSTMP, Sak et al. 2014).
    Gates i, f, c, o as in ``LSTMCell``, computed from the input and the previous
    projected state ``r``; ``c_t = f * c_{t-1} + i * tanh(c)``,
    ``h_t = o * tanh(c_t)``, ``r_t = W_hr h_t``. States: [r (batch, projection_size),
    c (batch, hidden_size)]; the output is ``r_t``.

    Parameters
    ----------
    hidden_size : int
        Number of units of the cell state.
    projection_size : int
        Number of units of the output (the projected hidden state).
    i2h_weight_initializer, h2h_weight_initializer, h2r_weight_initializer : str or Initializer
    i2h_bias_initializer, h2h_bias_initializer : str or Initializer
        Default zeros.
    input_size : int
        Number of input features (0: inferred at the first call).
    """

    def __init__(self, hidden_size, projection_size, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, h2r_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        for what, v in (("hidden_size", hidden_size), ("projection_size", projection_size)):
            if not isinstance(v, (int, np.integer)) or v <= 0:
                raise MXNetError("LSTMPCell: %s must be a positive int, got %r" % (what, v))
        self._hidden_size = int(hidden_size)
        self._projection_size = int(projection_size)
        self._input_size = input_size
        n = 4 * self._hidden_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(n, input_size),
                                          init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(n, self._projection_size),
                                          init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2r_weight = self.params.get("h2r_weight",
                                          shape=(self._projection_size, self._hidden_size),
                                          init=h2r_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(n,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(n,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._projection_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self):
        return "lstmp"

    def infer_shape(self, x, *args):
        self.i2h_weight.shape = (4 * self._hidden_size, int(np.prod(x.shape[1:])))

    def forward(self, inputs, states):
        if isinstance(inputs, NDArray):
            want = [(inputs.shape[0], self._projection_size),
                    (inputs.shape[0], self._hidden_size)]
            got = [getattr(s, "shape", None) for s in states] \
                if isinstance(states, (list, tuple)) else None
            if inputs.ndim < 2 or got != want:
                raise MXNetError("LSTMPCell '%s': expected an input (batch, features) and "
                                 "states of shapes %s, got input %s and states %s"
                                 % (self.name, want, inputs.shape, got))
        return super().forward(inputs, states)

    def __repr__(self):
        shape = self.i2h_weight.shape
        mapping = "{0} -> {1} -> {2}".format(shape[1] if shape[1] else None, shape[0],
                                             self.h2r_weight.shape[0])
        return "{name}({mapping})".format(name=self.__class__.__name__, mapping=mapping)

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, h2r_weight, i2h_bias,
                       h2h_bias):
        p = "t%d_" % self._counter
        n = 4 * self._hidden_size
        i2h = F.FullyConnected(inputs, i2h_weight, i2h_bias, num_hidden=n, name=p + "i2h")
        h2h = F.FullyConnected(states[0], h2h_weight, h2h_bias, num_hidden=n, name=p + "h2h")
        gates = F.SliceChannel(F.elemwise_add(i2h, h2h, name=p + "plus0"), num_outputs=4,
                               name=p + "slice")
        in_gate = F.sigmoid(gates[0], name=p + "i")
        forget_gate = F.sigmoid(gates[1], name=p + "f")
        in_transform = F.tanh(gates[2], name=p + "c")
        out_gate = F.sigmoid(gates[3], name=p + "o")
        next_c = F.elemwise_add(F.elemwise_mul(forget_gate, states[1], name=p + "mul0"),
                                F.elemwise_mul(in_gate, in_transform, name=p + "mul1"),
                                name=p + "state")
        hidden = F.elemwise_mul(out_gate, F.tanh(next_c, name=p + "activation0"),
                                name=p + "hidden")
        next_r = F.FullyConnected(hidden, h2r_weight, num_hidden=self._projection_size,
                                  no_bias=True, name=p + "out")
        return next_r, [next_r, next_c]


def dynamic_unroll(cell, inputs, begin_state, drop_inputs=0, drop_outputs=0, layout="TNC",
                   valid_length=None):
    """Runs ``cell`` over the time axis of ``inputs`` (one tensor, layout ``layout``)
    with ``F.contrib.foreach``: in a hybridized block the graph holds one loop op
    instead of one copy of the cell per step. ``drop_inputs`` / ``drop_outputs``:
    dropout with one mask per sequence (shared along time). With ``valid_length``
    (batch,), the states stop at each sequence's end and the outputs after it are 0.

    Returns (outputs with the layout of ``inputs``, final states)."""
    inputs, axis, F, _ = _format_sequence(0, inputs, layout, True)
    foreach = getattr(F.contrib, "foreach", None)
    if foreach is None:
        raise MXNetError("dynamic_unroll needs the control-flow operator "
                         "%s.contrib.foreach, which this build does not have"
                         % F.__name__.split(".")[-1])
    axes = None
    if axis != 0:
        axes = list(range(len(layout)))
        axes[0], axes[axis] = axes[axis], axes[0]
        inputs = F.transpose(inputs, axes=axes)
    states = list(begin_state) if isinstance(begin_state, (list, tuple)) else [begin_state]
    if drop_inputs:
        inputs = F.Dropout(inputs, p=drop_inputs, axes=(0,))

    if valid_length is None:
        def body(step, states):
            return cell(step, states)
    else:
        states.append(F.zeros((1,)))

        def body(step, states):
            cell_states, iter_no = states[:-1], states[-1]
            out, new_states = cell(step, cell_states)
            alive = F.broadcast_greater(valid_length, iter_no)
            new_states = [F.where(alive, new, old) for new, old in zip(new_states, cell_states)]
            return out, new_states + [iter_no + 1]

    outputs, states = foreach(body, inputs, states)
    if drop_outputs:
        outputs = F.Dropout(outputs, p=drop_outputs, axes=(0,))
    if valid_length is not None:
        outputs = F.SequenceMask(outputs, sequence_length=valid_length,
                                 use_sequence_length=True, axis=0)
        states = states[:-1]
    if axes is not None:
        outputs = F.transpose(outputs, axes=axes)
    return outputs, states
