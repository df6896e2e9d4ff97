"""Writes the MXNet-exported model fixture in this folder. Run it with MXNet 1.9.1
(benches/.mxnet-venv: `benches/.mxnet-venv/bin/python data/mxnet-models/make_fixture.py`);
the committed files are its output, so oxnet's tests never need MXNet.

mobilenet0.25/: gluon's model-zoo `mobilenet0.25` with seeded random weights (He init, so activations keep their scale), exported
by `HybridBlock.export` (model-symbol.json, model-0000.params); `chelsea.jpg`
preprocessed as an ImageNet classifier expects (shorter side 256, centre crop 224,
x/255 normalised by ImageNet's mean and std, NCHW) in input.params; MXNet's output for
it (logits, 1 x 1000) in expected.params.
"""
import os

import mxnet as mx
import numpy as np
from mxnet.gluon.model_zoo import vision

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mobilenet0.25")
mx.random.seed(7)
np.random.seed(7)
net = vision.get_model("mobilenet0.25", pretrained=False)
net.initialize(mx.init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=2.0))
net.hybridize()
img = mx.image.imread(os.path.join(here, "chelsea.jpg"))  # RGB, HWC uint8
img = mx.image.resize_short(img, 256)
img, _ = mx.image.center_crop(img, (224, 224))
x = img.astype("float32") / 255
x = mx.image.color_normalize(x, mx.nd.array([0.485, 0.456, 0.406]), mx.nd.array([0.229, 0.224, 0.225]))
x = x.transpose((2, 0, 1)).expand_dims(0)
y = net(x)
net.export(os.path.join(here, "model"))
mx.nd.save(os.path.join(here, "input.params"), {"data": x})
mx.nd.save(os.path.join(here, "expected.params"), {"out": y})
print("top-5:", np.argsort(-y.asnumpy()[0])[:5], "sum", float(y.sum().asscalar()))
