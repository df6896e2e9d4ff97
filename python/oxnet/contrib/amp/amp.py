"""Loss scaling with a gluon Trainer:

    amp.init_trainer(trainer)
    with autograd.record():
        loss = ...
        with amp.scale_loss(loss, trainer) as scaled:
            autograd.backward(scaled)
    trainer.step(batch_size)      # skipped (and the scale lowered) on inf/NaN gradients
"""

import contextlib

from ...gluon import trainer as _trainer
from ...optimizer import Optimizer
from .loss_scaler import LossScaler

__all__ = ["init_trainer", "scale_loss", "unscale"]


def init_trainer(optimizer_or_trainer):
    """Gives ``trainer`` a dynamic loss scaler (only gluon Trainers are supported)."""
    if isinstance(optimizer_or_trainer, _trainer.Trainer):
        optimizer_or_trainer._amp_loss_scaler = LossScaler()
        optimizer_or_trainer._amp_original_scale = optimizer_or_trainer._scale
    elif isinstance(optimizer_or_trainer, Optimizer):
        raise TypeError("AMP is currently only compatible with Gluon Trainer")
    else:
        raise TypeError("optimizer_or_trainer should be a Gluon Trainer or an optimizer, "
                        "instead is %s" % type(optimizer_or_trainer))


@contextlib.contextmanager
def scale_loss(loss, optimizer_or_trainer):
    """Yields ``loss`` (or a list of losses) times the current loss scale, and makes the
    trainer divide the gradients by it again."""
    scaler = getattr(optimizer_or_trainer, "_amp_loss_scaler", None)
    assert scaler is not None, \
        "Loss scaler is not initialized, did you forget to call amp.init_trainer()?"
    optimizer_or_trainer._scale = optimizer_or_trainer._amp_original_scale / scaler.loss_scale
    if isinstance(loss, (list, tuple)):
        yield [l * scaler.loss_scale for l in loss]
    else:
        yield scaler.loss_scale * loss


def unscale(optimizer_or_trainer):
    """Divides the trainer's gradients by the loss scale (before, e.g., gradient
    clipping) and resets the trainer's own rescaling."""
    scaler = getattr(optimizer_or_trainer, "_amp_loss_scaler", None)
    assert scaler is not None, \
        "Loss scaler is not initialized, did you forget to call amp.init_trainer()?"
    if optimizer_or_trainer._scale == optimizer_or_trainer._amp_original_scale:
        return
    for param in optimizer_or_trainer._params:
        if param.grad_req != "null" and param._data is not None:
            for grad in param.list_grad():
                grad[:] *= optimizer_or_trainer._scale
    optimizer_or_trainer._scale = optimizer_or_trainer._amp_original_scale
