"""``mx.gluon.model_zoo.vision``: image classification networks with MXNet 1.9.1's
block structure and parameter names, so weights saved by MXNet
(``save_parameters``, the published pretrained files) load here.

    net = mx.gluon.model_zoo.vision.get_model('resnet18_v1', classes=10)
    net = mx.gluon.model_zoo.vision.resnet50_v2(pretrained=True)  # needs the file

``pretrained=True`` reads ``<root>/<name>-<hash8>.params`` (root defaults to
``$MXNET_HOME/models``, i.e. ``~/.mxnet/models``), fetching it when absent.
"""

from .alexnet import *  # noqa: F401,F403
from .densenet import *  # noqa: F401,F403
from .inception import *  # noqa: F401,F403
from .mobilenet import *  # noqa: F401,F403
from .resnet import *  # noqa: F401,F403
from .squeezenet import *  # noqa: F401,F403
from .vgg import *  # noqa: F401,F403

_models = {
    "resnet18_v1": resnet18_v1, "resnet34_v1": resnet34_v1,  # noqa: F405
    "resnet50_v1": resnet50_v1, "resnet101_v1": resnet101_v1,  # noqa: F405
    "resnet152_v1": resnet152_v1, "resnet18_v2": resnet18_v2,  # noqa: F405
    "resnet34_v2": resnet34_v2, "resnet50_v2": resnet50_v2,  # noqa: F405
    "resnet101_v2": resnet101_v2, "resnet152_v2": resnet152_v2,  # noqa: F405
    "vgg11": vgg11, "vgg13": vgg13, "vgg16": vgg16, "vgg19": vgg19,  # noqa: F405
    "vgg11_bn": vgg11_bn, "vgg13_bn": vgg13_bn,  # noqa: F405
    "vgg16_bn": vgg16_bn, "vgg19_bn": vgg19_bn,  # noqa: F405
    "alexnet": alexnet,  # noqa: F405
    "densenet121": densenet121, "densenet161": densenet161,  # noqa: F405
    "densenet169": densenet169, "densenet201": densenet201,  # noqa: F405
    "squeezenet1.0": squeezenet1_0, "squeezenet1.1": squeezenet1_1,  # noqa: F405
    "inceptionv3": inception_v3,  # noqa: F405
    "mobilenet1.0": mobilenet1_0, "mobilenet0.75": mobilenet0_75,  # noqa: F405
    "mobilenet0.5": mobilenet0_5, "mobilenet0.25": mobilenet0_25,  # noqa: F405
    "mobilenetv2_1.0": mobilenet_v2_1_0, "mobilenetv2_0.75": mobilenet_v2_0_75,  # noqa: F405
    "mobilenetv2_0.5": mobilenet_v2_0_5, "mobilenetv2_0.25": mobilenet_v2_0_25,  # noqa: F405
}


def get_model(name, **kwargs):
    """A model of the zoo by name ('resnet18_v1', 'mobilenetv2_0.25', 'squeezenet1.1',
    'inceptionv3', ...; case-insensitive).

    Parameters
    ----------
    name : str
        Name of the model.
    pretrained : bool
        Load the published ImageNet weights.
    classes : int
        Size of the output layer.
    ctx : Context, default CPU
        Where the pretrained weights are loaded.
    root : str, default '$MXNET_HOME/models'
        Folder of the weight files.

    Returns
    -------
    HybridBlock
    """
    key = name.lower()
    if key not in _models:
        raise ValueError("Model %s is not supported. Available options are\n\t%s"
                         % (key, "\n\t".join(sorted(_models))))
    return _models[key](**kwargs)
