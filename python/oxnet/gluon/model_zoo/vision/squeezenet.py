"""SqueezeNet 1.0 and 1.1 (Iandola et al. 2016), with MXNet 1.9.1's blocks and
parameter names. The classifier ends with 13x13 average pooling, so the input is
224x224 (or anything giving a 13x13 feature map)."""

from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent
from ._common import DEFAULT_CTX, DEFAULT_ROOT, load_pretrained

__all__ = ["SqueezeNet", "squeezenet1_0", "squeezenet1_1", "get_squeezenet"]


def _conv_relu(channels, kernel_size, padding=0):
    seq = nn.HybridSequential(prefix="")
    seq.add(nn.Conv2D(channels, kernel_size, padding=padding))
    seq.add(nn.Activation("relu"))
    return seq


def _fire(squeeze, expand1x1, expand3x3):
    """Fire module: a 1x1 squeeze, then 1x1 and 3x3 expansions concatenated."""
    fire = nn.HybridSequential(prefix="")
    fire.add(_conv_relu(squeeze, 1))
    expand = HybridConcurrent(axis=1, prefix="")
    expand.add(_conv_relu(expand1x1, 1))
    expand.add(_conv_relu(expand3x3, 3, 1))
    fire.add(expand)
    return fire


def _pool():
    return nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True)


class SqueezeNet(HybridBlock):
    """SqueezeNet.

    Parameters
    ----------
    version : str
        '1.0' or '1.1'.
    classes : int, default 1000
        Size of the output.
    """

    def __init__(self, version, classes=1000, **kwargs):
        super().__init__(**kwargs)
        if version not in ("1.0", "1.1"):
            raise ValueError("Unsupported SqueezeNet version {version}:1.0 or 1.1 "
                             "expected".format(version=version))
        with self.name_scope():
            f = nn.HybridSequential(prefix="")
            self.features = f
            if version == "1.0":
                f.add(nn.Conv2D(96, kernel_size=7, strides=2), nn.Activation("relu"))
                f.add(_pool())
                f.add(_fire(16, 64, 64), _fire(16, 64, 64), _fire(32, 128, 128))
                f.add(_pool())
                f.add(_fire(32, 128, 128), _fire(48, 192, 192), _fire(48, 192, 192),
                      _fire(64, 256, 256))
                f.add(_pool())
                f.add(_fire(64, 256, 256))
            else:
                f.add(nn.Conv2D(64, kernel_size=3, strides=2), nn.Activation("relu"))
                f.add(_pool())
                f.add(_fire(16, 64, 64), _fire(16, 64, 64))
                f.add(_pool())
                f.add(_fire(32, 128, 128), _fire(32, 128, 128))
                f.add(_pool())
                f.add(_fire(48, 192, 192), _fire(48, 192, 192), _fire(64, 256, 256),
                      _fire(64, 256, 256))
            f.add(nn.Dropout(0.5))
            out = nn.HybridSequential(prefix="")
            self.output = out
            out.add(nn.Conv2D(classes, kernel_size=1), nn.Activation("relu"),
                    nn.AvgPool2D(13), nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def get_squeezenet(version, pretrained=False, ctx=DEFAULT_CTX, root=DEFAULT_ROOT, **kwargs):
    """SqueezeNet ``version`` ('1.0' or '1.1'); ``pretrained`` loads ImageNet weights
    from ``root`` onto ``ctx``."""
    net = SqueezeNet(version, **kwargs)
    if pretrained:
        load_pretrained(net, "squeezenet%s" % version, ctx, root)
    return net


def squeezenet1_0(**kwargs):
    """SqueezeNet 1.0; keyword arguments as :func:`get_squeezenet`."""
    return get_squeezenet("1.0", **kwargs)


def squeezenet1_1(**kwargs):
    """SqueezeNet 1.1; keyword arguments as :func:`get_squeezenet`."""
    return get_squeezenet("1.1", **kwargs)
