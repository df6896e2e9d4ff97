"""``gluon.contrib.cnn``: deformable convolution layers (v1 and the modulated v2)."""

from .conv_layers import *  # noqa: F401,F403
