"""Dynamic loss scaling: the scale halves when a step's gradients overflow (that step
is skipped) and doubles after ``scale_seq_len`` clean steps, up to 2**24."""

import numpy as np


class LossScaler:
    """Loss scale state of one Trainer (MXNet 1.9.1's start: 2**16)."""

    def __init__(self):
        self._loss_scale = 2.0 ** 16
        self._max_loss_scale = 2.0 ** 24
        self._scale_seq_len = 2000
        self._unskipped = 0

    @property
    def loss_scale(self):
        return self._loss_scale

    def has_overflow(self, params):
        """True when a gradient of ``params`` holds inf or NaN."""
        for param in params:
            if param.grad_req == "null" or param._data is None:
                continue
            for grad in param.list_grad():
                if not np.isfinite(grad.asnumpy()).all():
                    return True
        return False

    def update_scale(self, overflow):
        """Halves the scale on overflow, doubles it after enough clean steps."""
        if overflow:
            self._loss_scale = max(self._loss_scale / 2.0, 1.0)
            self._unskipped = 0
        else:
            self._unskipped += 1
            if self._unskipped == self._scale_seq_len:
                self._unskipped = 0
                self._loss_scale = min(self._max_loss_scale, self._loss_scale * 2.0)
