"""VGG (Simonyan & Zisserman 2014, "Very Deep Convolutional Networks for
Large-Scale Image Recognition"), optionally with BatchNorm, with MXNet 1.9.1's blocks,
parameter names and initializers."""

from .... import initializer
from ... import nn
from ...block import HybridBlock
from ._common import DEFAULT_CTX, DEFAULT_ROOT, load_pretrained

__all__ = ["VGG", "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn",
           "vgg19_bn", "get_vgg"]


class VGG(HybridBlock):
    """VGG.

    Parameters
    ----------
    layers : list of int
        3x3 convolutions in each of the five groups (each group ends with 2x2 max
        pooling).
    filters : list of int
        Channels of each group.
    classes : int, default 1000
        Size of the output.
    batch_norm : bool, default False
        BatchNorm after every convolution.
    """

    def __init__(self, layers, filters, classes=1000, batch_norm=False, **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(filters):
            raise ValueError("VGG: layers and filters must have the same length, got %d "
                             "and %d" % (len(layers), len(filters)))
        with self.name_scope():
            self.features = self._make_features(layers, filters, batch_norm)
            for _ in range(2):
                self.features.add(nn.Dense(4096, activation="relu",
                                           weight_initializer="normal",
                                           bias_initializer="zeros"))
                self.features.add(nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer="normal",
                                   bias_initializer="zeros")

    def _make_features(self, layers, filters, batch_norm):
        features = nn.HybridSequential(prefix="")
        for count, channels in zip(layers, filters):
            for _ in range(count):
                features.add(nn.Conv2D(channels, kernel_size=3, padding=1,
                                       weight_initializer=initializer.Xavier(
                                           rnd_type="gaussian", factor_type="out",
                                           magnitude=2),
                                       bias_initializer="zeros"))
                if batch_norm:
                    features.add(nn.BatchNorm())
                features.add(nn.Activation("relu"))
            features.add(nn.MaxPool2D(strides=2))
        return features

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth -> (convolutions per group, channels per group)
vgg_spec = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
            13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
            16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
            19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def get_vgg(num_layers, pretrained=False, ctx=DEFAULT_CTX, root=DEFAULT_ROOT, **kwargs):
    """VGG with ``num_layers`` (11, 13, 16, 19) layers; ``batch_norm=True`` adds
    BatchNorm; ``pretrained`` loads ImageNet weights from ``root`` onto ``ctx``."""
    if num_layers not in vgg_spec:
        raise ValueError("Invalid number of layers: %d. Options are %s"
                         % (num_layers, str(list(vgg_spec.keys()))))
    layers, filters = vgg_spec[num_layers]
    net = VGG(layers, filters, **kwargs)
    if pretrained:
        suffix = "_bn" if kwargs.get("batch_norm") else ""
        load_pretrained(net, "vgg%d%s" % (num_layers, suffix), ctx, root)
    return net


def _maker(depth, batch_norm):
    def make(**kwargs):
        if batch_norm:
            kwargs["batch_norm"] = True
        return get_vgg(depth, **kwargs)
    make.__name__ = "vgg%d%s" % (depth, "_bn" if batch_norm else "")
    make.__doc__ = ("VGG-%d%s; keyword arguments as :func:`get_vgg`."
                    % (depth, " with BatchNorm" if batch_norm else ""))
    return make


vgg11 = _maker(11, False)
vgg13 = _maker(13, False)
vgg16 = _maker(16, False)
vgg19 = _maker(19, False)
vgg11_bn = _maker(11, True)
vgg13_bn = _maker(13, True)
vgg16_bn = _maker(16, True)
vgg19_bn = _maker(19, True)
