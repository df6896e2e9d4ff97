"""AlexNet (Krizhevsky et al. 2012, "One weird trick..." variant), with MXNet
1.9.1's blocks and parameter names."""

from ... import nn
from ...block import HybridBlock
from ._common import DEFAULT_CTX, DEFAULT_ROOT, load_pretrained

__all__ = ["AlexNet", "alexnet"]


class AlexNet(HybridBlock):
    """AlexNet: five convolutions and two 4096-unit dense layers with dropout.

    Parameters
    ----------
    classes : int, default 1000
        Size of the output.
    """

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                f = self.features
                f.add(nn.Conv2D(64, kernel_size=11, strides=4, padding=2, activation="relu"))
                f.add(nn.MaxPool2D(pool_size=3, strides=2))
                f.add(nn.Conv2D(192, kernel_size=5, padding=2, activation="relu"))
                f.add(nn.MaxPool2D(pool_size=3, strides=2))
                for channels in (384, 256, 256):
                    f.add(nn.Conv2D(channels, kernel_size=3, padding=1, activation="relu"))
                f.add(nn.MaxPool2D(pool_size=3, strides=2))
                f.add(nn.Flatten())
                for _ in range(2):
                    f.add(nn.Dense(4096, activation="relu"))
                    f.add(nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def alexnet(pretrained=False, ctx=DEFAULT_CTX, root=DEFAULT_ROOT, **kwargs):
    """AlexNet; ``pretrained`` loads ImageNet weights from ``root`` onto ``ctx``."""
    net = AlexNet(**kwargs)
    if pretrained:
        load_pretrained(net, "alexnet", ctx, root)
    return net
