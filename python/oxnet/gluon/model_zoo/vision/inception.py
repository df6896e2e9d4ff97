"""Inception V3 (Szegedy et al. 2015, "Rethinking the Inception Architecture for
Computer Vision"), with MXNet 1.9.1's blocks and parameter names. The classifier
ends with 8x8 average pooling, so the input is 299x299."""

from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent
from ._common import DEFAULT_CTX, DEFAULT_ROOT, load_pretrained

__all__ = ["Inception3", "inception_v3"]


def _basic_conv(**kwargs):
    """Conv2D (no bias) + BatchNorm(epsilon=0.001) + ReLU."""
    seq = nn.HybridSequential(prefix="")
    seq.add(nn.Conv2D(use_bias=False, **kwargs))
    seq.add(nn.BatchNorm(epsilon=0.001))
    seq.add(nn.Activation("relu"))
    return seq


_SETTING_NAMES = ("channels", "kernel_size", "strides", "padding")


def _branch(pool, *convs):
    """An optional pooling ('avg': 3x3 stride 1 pad 1; 'max': 3x3 stride 2) followed
    by basic convolutions, each given as (channels, kernel_size, strides, padding)
    with None for a default."""
    seq = nn.HybridSequential(prefix="")
    if pool == "avg":
        seq.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
    elif pool == "max":
        seq.add(nn.MaxPool2D(pool_size=3, strides=2))
    for setting in convs:
        kwargs = {k: v for k, v in zip(_SETTING_NAMES, setting) if v is not None}
        seq.add(_basic_conv(**kwargs))
    return seq


def _concurrent(prefix, *branch_makers):
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        for make in branch_makers:
            out.add(make())
    return out


def _make_A(pool_features, prefix):
    return _concurrent(
        prefix,
        lambda: _branch(None, (64, 1, None, None)),
        lambda: _branch(None, (48, 1, None, None), (64, 5, None, 2)),
        lambda: _branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, None, 1)),
        lambda: _branch("avg", (pool_features, 1, None, None)))


def _make_B(prefix):
    return _concurrent(
        prefix,
        lambda: _branch(None, (384, 3, 2, None)),
        lambda: _branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, 2, None)),
        lambda: _branch("max"))


def _make_C(c7, prefix):
    return _concurrent(
        prefix,
        lambda: _branch(None, (192, 1, None, None)),
        lambda: _branch(None, (c7, 1, None, None), (c7, (1, 7), None, (0, 3)),
                        (192, (7, 1), None, (3, 0))),
        lambda: _branch(None, (c7, 1, None, None), (c7, (7, 1), None, (3, 0)),
                        (c7, (1, 7), None, (0, 3)), (c7, (7, 1), None, (3, 0)),
                        (192, (1, 7), None, (0, 3))),
        lambda: _branch("avg", (192, 1, None, None)))


def _make_D(prefix):
    return _concurrent(
        prefix,
        lambda: _branch(None, (192, 1, None, None), (320, 3, 2, None)),
        lambda: _branch(None, (192, 1, None, None), (192, (1, 7), None, (0, 3)),
                        (192, (7, 1), None, (3, 0)), (192, 3, 2, None)),
        lambda: _branch("max"))


def _split_pair():
    """1x3 and 3x1 convolutions of the same input, concatenated."""
    pair = HybridConcurrent(axis=1, prefix="")
    pair.add(_branch(None, (384, (1, 3), None, (0, 1))))
    pair.add(_branch(None, (384, (3, 1), None, (1, 0))))
    return pair


def _make_E(prefix):
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        out.add(_branch(None, (320, 1, None, None)))
        b3 = nn.HybridSequential(prefix="")
        out.add(b3)
        b3.add(_branch(None, (384, 1, None, None)))
        b3.add(_split_pair())
        b3dbl = nn.HybridSequential(prefix="")
        out.add(b3dbl)
        b3dbl.add(_branch(None, (448, 1, None, None), (384, 3, None, 1)))
        b3dbl.add(_split_pair())
        out.add(_branch("avg", (192, 1, None, None)))
    return out


def make_aux(classes):
    """The auxiliary classifier head of Inception V3 (not used by Inception3)."""
    out = nn.HybridSequential(prefix="")
    out.add(nn.AvgPool2D(pool_size=5, strides=3))
    out.add(_basic_conv(channels=128, kernel_size=1))
    out.add(_basic_conv(channels=768, kernel_size=5))
    out.add(nn.Flatten())
    out.add(nn.Dense(classes))
    return out


class Inception3(HybridBlock):
    """Inception V3.

    Parameters
    ----------
    classes : int, default 1000
        Size of the output.
    """

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            f = nn.HybridSequential(prefix="")
            self.features = f
            f.add(_basic_conv(channels=32, kernel_size=3, strides=2))
            f.add(_basic_conv(channels=32, kernel_size=3))
            f.add(_basic_conv(channels=64, kernel_size=3, padding=1))
            f.add(nn.MaxPool2D(pool_size=3, strides=2))
            f.add(_basic_conv(channels=80, kernel_size=1))
            f.add(_basic_conv(channels=192, kernel_size=3))
            f.add(nn.MaxPool2D(pool_size=3, strides=2))
            f.add(_make_A(32, "A1_"), _make_A(64, "A2_"), _make_A(64, "A3_"))
            f.add(_make_B("B_"))
            f.add(_make_C(128, "C1_"), _make_C(160, "C2_"), _make_C(160, "C3_"),
                  _make_C(192, "C4_"))
            f.add(_make_D("D_"))
            f.add(_make_E("E1_"), _make_E("E2_"))
            f.add(nn.AvgPool2D(pool_size=8), nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def inception_v3(pretrained=False, ctx=DEFAULT_CTX, root=DEFAULT_ROOT, **kwargs):
    """Inception V3; ``pretrained`` loads ImageNet weights from ``root`` onto ``ctx``."""
    net = Inception3(**kwargs)
    if pretrained:
        load_pretrained(net, "inceptionv3", ctx, root)
    return net
