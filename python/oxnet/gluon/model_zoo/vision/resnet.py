"""ResNet V1 (He et al. 2015, "Deep Residual Learning for Image Recognition") and V2
(He et al. 2016, "Identity Mappings in Deep Residual Networks"), with MXNet 1.9.1's
blocks and parameter names (``resnetv10_stage1_conv0_weight``)."""

from ... import nn
from ...block import HybridBlock
from ._common import DEFAULT_CTX, DEFAULT_ROOT, load_pretrained

__all__ = ["ResNetV1", "ResNetV2", "BasicBlockV1", "BasicBlockV2", "BottleneckV1",
           "BottleneckV2", "resnet18_v1", "resnet34_v1", "resnet50_v1", "resnet101_v1",
           "resnet152_v1", "resnet18_v2", "resnet34_v2", "resnet50_v2", "resnet101_v2",
           "resnet152_v2", "get_resnet"]


def _conv3x3(channels, stride, in_channels):
    return nn.Conv2D(channels, kernel_size=3, strides=stride, padding=1, use_bias=False,
                     in_channels=in_channels)


def _shortcut_v1(channels, stride, in_channels):
    """1x1 projection + BatchNorm for a V1 block whose shape changes."""
    seq = nn.HybridSequential(prefix="")
    seq.add(nn.Conv2D(channels, kernel_size=1, strides=stride, use_bias=False,
                      in_channels=in_channels))
    seq.add(nn.BatchNorm())
    return seq


class BasicBlockV1(HybridBlock):
    """Two 3x3 convolutions with BatchNorm, added to the input (or its projection),
    then ReLU. ResNet-18/34 V1."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        body = nn.HybridSequential(prefix="")
        body.add(_conv3x3(channels, stride, in_channels), nn.BatchNorm(),
                 nn.Activation("relu"))
        body.add(_conv3x3(channels, 1, channels), nn.BatchNorm())
        self.body = body
        self.downsample = _shortcut_v1(channels, stride, in_channels) if downsample else None

    def hybrid_forward(self, F, x):
        shortcut = self.downsample(x) if self.downsample else x
        return F.Activation(shortcut + self.body(x), act_type="relu")


class BottleneckV1(HybridBlock):
    """1x1 reduce, 3x3, 1x1 expand (each with BatchNorm), added to the input (or its
    projection), then ReLU. ResNet-50/101/152 V1."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        mid = channels // 4
        body = nn.HybridSequential(prefix="")
        body.add(nn.Conv2D(mid, kernel_size=1, strides=stride), nn.BatchNorm(),
                 nn.Activation("relu"))
        body.add(_conv3x3(mid, 1, mid), nn.BatchNorm(), nn.Activation("relu"))
        body.add(nn.Conv2D(channels, kernel_size=1, strides=1), nn.BatchNorm())
        self.body = body
        self.downsample = _shortcut_v1(channels, stride, in_channels) if downsample else None

    def hybrid_forward(self, F, x):
        shortcut = self.downsample(x) if self.downsample else x
        return F.Activation(self.body(x) + shortcut, act_type="relu")


class BasicBlockV2(HybridBlock):
    """Pre-activation basic block: BN-ReLU-conv3x3 twice, plus the input (or a 1x1
    projection of the activated input). ResNet-18/34 V2."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = _conv3x3(channels, stride, in_channels)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels, 1, channels)
        self.downsample = (nn.Conv2D(channels, 1, stride, use_bias=False,
                                     in_channels=in_channels) if downsample else None)

    def hybrid_forward(self, F, x):
        act = F.Activation(self.bn1(x), act_type="relu")
        shortcut = self.downsample(act) if self.downsample else x
        out = self.conv1(act)
        out = self.conv2(F.Activation(self.bn2(out), act_type="relu"))
        return out + shortcut


class BottleneckV2(HybridBlock):
    """Pre-activation bottleneck: BN-ReLU-conv1x1, BN-ReLU-conv3x3, BN-ReLU-conv1x1,
    plus the input (or a projection of the activated input). ResNet-50/101/152 V2."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        mid = channels // 4
        self.bn1 = nn.BatchNorm()
        self.conv1 = nn.Conv2D(mid, kernel_size=1, strides=1, use_bias=False)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(mid, stride, mid)
        self.bn3 = nn.BatchNorm()
        self.conv3 = nn.Conv2D(channels, kernel_size=1, strides=1, use_bias=False)
        self.downsample = (nn.Conv2D(channels, 1, stride, use_bias=False,
                                     in_channels=in_channels) if downsample else None)

    def hybrid_forward(self, F, x):
        act = F.Activation(self.bn1(x), act_type="relu")
        shortcut = self.downsample(act) if self.downsample else x
        out = self.conv1(act)
        out = self.conv2(F.Activation(self.bn2(out), act_type="relu"))
        out = self.conv3(F.Activation(self.bn3(out), act_type="relu"))
        return out + shortcut


def _stage(block, num_blocks, channels, stride, index, in_channels):
    """Stage ``index``: ``num_blocks`` blocks under the prefix ``stage<index>_``; the
    first one strides and projects when the channel count changes."""
    stage = nn.HybridSequential(prefix="stage%d_" % index)
    with stage.name_scope():
        stage.add(block(channels, stride, channels != in_channels, in_channels=in_channels,
                        prefix=""))
        for _ in range(num_blocks - 1):
            stage.add(block(channels, 1, False, in_channels=channels, prefix=""))
    return stage


def _stem(features, channels, thumbnail):
    if thumbnail:  # for small (e.g. 32x32) images
        features.add(_conv3x3(channels, 1, 0))
    else:
        features.add(nn.Conv2D(channels, 7, 2, 3, use_bias=False), nn.BatchNorm(),
                     nn.Activation("relu"), nn.MaxPool2D(3, 2, 1))


class ResNetV1(HybridBlock):
    """ResNet V1.

    Parameters
    ----------
    block : HybridBlock class
        BasicBlockV1 or BottleneckV1.
    layers : list of int
        Blocks per stage.
    channels : list of int
        Channels of the stem, then of each stage (``len(layers) + 1`` numbers).
    classes : int, default 1000
        Size of the output.
    thumbnail : bool, default False
        A 3x3 stem without pooling, for small images such as CIFAR's.
    """

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(channels) - 1:
            raise ValueError("ResNetV1: channels needs one more entry than layers, got %d "
                             "layers and %d channels" % (len(layers), len(channels)))
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            _stem(self.features, channels[0], thumbnail)
            for i, n in enumerate(layers):
                self.features.add(_stage(block, n, channels[i + 1], 1 if i == 0 else 2,
                                         i + 1, channels[i]))
            self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.Dense(classes, in_units=channels[-1])

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class ResNetV2(HybridBlock):
    """ResNet V2 (pre-activation); parameters as :class:`ResNetV1`, with
    BasicBlockV2 or BottleneckV2. The input first goes through a BatchNorm without
    scale and shift."""

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(channels) - 1:
            raise ValueError("ResNetV2: channels needs one more entry than layers, got %d "
                             "layers and %d channels" % (len(layers), len(channels)))
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.BatchNorm(scale=False, center=False))
            _stem(self.features, channels[0], thumbnail)
            in_channels = channels[0]
            for i, n in enumerate(layers):
                self.features.add(_stage(block, n, channels[i + 1], 1 if i == 0 else 2,
                                         i + 1, in_channels))
                in_channels = channels[i + 1]
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.GlobalAvgPool2D(),
                              nn.Flatten())
            self.output = nn.Dense(classes, in_units=in_channels)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth -> (block kind, blocks per stage, channels of stem and stages)
resnet_spec = {18: ("basic_block", [2, 2, 2, 2], [64, 64, 128, 256, 512]),
               34: ("basic_block", [3, 4, 6, 3], [64, 64, 128, 256, 512]),
               50: ("bottle_neck", [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
               101: ("bottle_neck", [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
               152: ("bottle_neck", [3, 8, 36, 3], [64, 256, 512, 1024, 2048])}
resnet_net_versions = [ResNetV1, ResNetV2]
resnet_block_versions = [{"basic_block": BasicBlockV1, "bottle_neck": BottleneckV1},
                         {"basic_block": BasicBlockV2, "bottle_neck": BottleneckV2}]


def get_resnet(version, num_layers, pretrained=False, ctx=DEFAULT_CTX, root=DEFAULT_ROOT,
               **kwargs):
    """ResNet ``version`` (1 or 2) with ``num_layers`` (18, 34, 50, 101, 152) layers;
    ``pretrained`` loads ImageNet weights from ``root`` onto ``ctx``; other keyword
    arguments (classes, thumbnail, prefix, params) go to the network class."""
    if num_layers not in resnet_spec:
        raise ValueError("Invalid number of layers: %d. Options are %s"
                         % (num_layers, str(list(resnet_spec.keys()))))
    if version not in (1, 2):
        raise ValueError("Invalid resnet version: %d. Options are 1 and 2." % version)
    kind, layers, channels = resnet_spec[num_layers]
    block = resnet_block_versions[version - 1][kind]
    net = resnet_net_versions[version - 1](block, layers, channels, **kwargs)
    if pretrained:
        load_pretrained(net, "resnet%d_v%d" % (num_layers, version), ctx, root)
    return net


def _maker(version, depth):
    def make(**kwargs):
        return get_resnet(version, depth, **kwargs)
    make.__name__ = "resnet%d_v%d" % (depth, version)
    make.__doc__ = ("ResNet-%d V%d; keyword arguments as :func:`get_resnet` "
                    "(pretrained, ctx, root, classes, thumbnail)." % (depth, version))
    return make


resnet18_v1 = _maker(1, 18)
resnet34_v1 = _maker(1, 34)
resnet50_v1 = _maker(1, 50)
resnet101_v1 = _maker(1, 101)
resnet152_v1 = _maker(1, 152)
resnet18_v2 = _maker(2, 18)
resnet34_v2 = _maker(2, 34)
resnet50_v2 = _maker(2, 50)
resnet101_v2 = _maker(2, 101)
resnet152_v2 = _maker(2, 152)
