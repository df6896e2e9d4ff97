"""DenseNet (Huang et al. 2016, "Densely Connected Convolutional Networks"), with
MXNet 1.9.1's blocks and parameter names. The classifier ends with 7x7 average
pooling, so the input is 224x224."""

from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent, Identity
from ._common import DEFAULT_CTX, DEFAULT_ROOT, load_pretrained

__all__ = ["DenseNet", "densenet121", "densenet161", "densenet169", "densenet201"]


def _bn_relu_conv(seq, channels, kernel_size, padding=0):
    seq.add(nn.BatchNorm(), nn.Activation("relu"))
    seq.add(nn.Conv2D(channels, kernel_size=kernel_size, padding=padding, use_bias=False))


def _dense_layer(growth_rate, bn_size, dropout):
    """The input concatenated with ``growth_rate`` new channels."""
    new = nn.HybridSequential(prefix="")
    _bn_relu_conv(new, bn_size * growth_rate, 1)
    _bn_relu_conv(new, growth_rate, 3, 1)
    if dropout:
        new.add(nn.Dropout(dropout))
    layer = HybridConcurrent(axis=1, prefix="")
    layer.add(Identity())
    layer.add(new)
    return layer


def _dense_block(num_layers, bn_size, growth_rate, dropout, index):
    block = nn.HybridSequential(prefix="stage%d_" % index)
    with block.name_scope():
        for _ in range(num_layers):
            block.add(_dense_layer(growth_rate, bn_size, dropout))
    return block


def _transition(channels):
    seq = nn.HybridSequential(prefix="")
    _bn_relu_conv(seq, channels, 1)
    seq.add(nn.AvgPool2D(pool_size=2, strides=2))
    return seq


class DenseNet(HybridBlock):
    """DenseNet.

    Parameters
    ----------
    num_init_features : int
        Channels of the first convolution.
    growth_rate : int
        Channels each dense layer adds.
    block_config : list of int
        Dense layers in each block.
    bn_size : int, default 4
        Bottleneck width factor (1x1 convolutions give ``bn_size * growth_rate``).
    dropout : float, default 0
        Dropout after each dense layer.
    classes : int, default 1000
        Size of the output.
    """

    def __init__(self, num_init_features, growth_rate, block_config, bn_size=4, dropout=0,
                 classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            f = nn.HybridSequential(prefix="")
            self.features = f
            f.add(nn.Conv2D(num_init_features, kernel_size=7, strides=2, padding=3,
                            use_bias=False))
            f.add(nn.BatchNorm(), nn.Activation("relu"))
            f.add(nn.MaxPool2D(pool_size=3, strides=2, padding=1))
            channels = num_init_features
            last = len(block_config) - 1
            for i, n in enumerate(block_config):
                f.add(_dense_block(n, bn_size, growth_rate, dropout, i + 1))
                channels += n * growth_rate
                if i != last:
                    channels //= 2
                    f.add(_transition(channels))
            f.add(nn.BatchNorm(), nn.Activation("relu"))
            f.add(nn.AvgPool2D(pool_size=7), nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth -> (num_init_features, growth_rate, block_config)
densenet_spec = {121: (64, 32, [6, 12, 24, 16]),
                 161: (96, 48, [6, 12, 36, 24]),
                 169: (64, 32, [6, 12, 32, 32]),
                 201: (64, 32, [6, 12, 48, 32])}


def get_densenet(num_layers, pretrained=False, ctx=DEFAULT_CTX, root=DEFAULT_ROOT, **kwargs):
    """DenseNet with ``num_layers`` (121, 161, 169, 201) layers; ``pretrained`` loads
    ImageNet weights from ``root`` onto ``ctx``."""
    if num_layers not in densenet_spec:
        raise ValueError("Invalid number of layers: %d. Options are %s"
                         % (num_layers, str(list(densenet_spec.keys()))))
    init_features, growth_rate, config = densenet_spec[num_layers]
    net = DenseNet(init_features, growth_rate, config, **kwargs)
    if pretrained:
        load_pretrained(net, "densenet%d" % num_layers, ctx, root)
    return net


def densenet121(**kwargs):
    """DenseNet-121; keyword arguments as :func:`get_densenet`."""
    return get_densenet(121, **kwargs)


def densenet161(**kwargs):
    """DenseNet-161; keyword arguments as :func:`get_densenet`."""
    return get_densenet(161, **kwargs)


def densenet169(**kwargs):
    """DenseNet-169; keyword arguments as :func:`get_densenet`."""
    return get_densenet(169, **kwargs)


def densenet201(**kwargs):
    """DenseNet-201; keyword arguments as :func:`get_densenet`."""
    return get_densenet(201, **kwargs)
