"""``VariationalDropoutCell`` (Gal and Ghahramani 2016): dropout on a cell's inputs,
states and outputs with one mask per sequence, the same at every step."""

from ...rnn.rnn_cell import (BidirectionalCell, ModifierCell, _format_sequence,
                             _get_begin_state, _mask_sequence_variable_length, _TENSORS)
from ....base import MXNetError

__all__ = ["VariationalDropoutCell"]


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
