"""``mx.init`` (alias ``mx.initializer``): weight initializers.

An initializer is called as ``init(desc, arr)`` and fills ``arr`` in place. ``desc``
is an :class:`InitDesc` (a parameter name carrying attributes); the name decides what
is filled unless the description names its own initializer (``attrs['__init__']``):
``*weight`` gets the initializer's distribution, ``*bias``/``*beta`` zeros,
``*gamma`` ones, ``*min``/``*max`` zeros/ones, ``*moving_mean``/``*moving_var`` (legacy
names) zeros/ones. Random fills use the registry's sampling ops (``mx.nd.random``).
"""

import json
import logging  # noqa: F401
import re
import warnings  # noqa: F401
from math import sqrt  # noqa: F401

import numpy as np

from .base import string_types
from .ndarray import NDArray
from .ndarray import random as _random
from . import ndarray  # noqa: F401
from . import random  # noqa: F401
from . import registry  # noqa: F401
from .ndarray import load  # noqa: F401
from .util import is_np_array  # noqa: F401

__all__ = ["InitDesc", "Initializer", "register", "create", "Load", "Mixed", "Zero", "One",
           "Constant", "Uniform", "Normal", "Orthogonal", "Xavier", "MSRAPrelu", "Bilinear",
           "LSTMBias"]

_REGISTRY = {}


class InitDesc(str):
    """A parameter's name with the attributes that guide its initialization.

    Parameters
    ----------
    name : str
        Name of the variable.
    attrs : dict of str to str
        Attributes of this variable taken from ``Symbol.attr_dict``.
    global_init : Initializer
        Global initializer to fall back to.
    """

    def __new__(cls, name, attrs=None, global_init=None):
        ret = super().__new__(cls, name)
        ret.attrs = attrs or {}
        ret.global_init = global_init
        return ret


def register(klass):
    """Registers an initializer class under its lower-cased class name, so that
    ``create('name')`` and ``'["name", {kwargs}]'`` strings find it."""
    if not (isinstance(klass, type) and issubclass(klass, Initializer)):
        raise TypeError("can only register subclasses of Initializer, got %r" % (klass,))
    name = klass.__name__.lower()
    _REGISTRY[name] = klass
    return klass


def _alias(*names):
    def deco(klass):
        for n in names:
            _REGISTRY[n.lower()] = klass
        return klass
    return deco


alias = _alias


def create(init, /, **kwargs):
    """Creates an initializer from an instance, a registered name (``'xavier'``) or a
    JSON string ``'["xavier", {"magnitude": 2}]'`` as written by ``dumps``."""
    if isinstance(init, Initializer):
        if kwargs:
            raise ValueError("cannot give keyword arguments with an Initializer instance")
        return init
    if init is None:
        raise ValueError("initializer must be an Initializer, a name or a JSON string, not None")
    if not isinstance(init, string_types):
        raise TypeError("initializer must be an Initializer, a name or a JSON string, got %s"
                        % type(init).__name__)
    if init.startswith("["):
        name, kw = json.loads(init)
        kw = dict(kw)
        kw.update(kwargs)
        return create(name, **kw)
    klass = _REGISTRY.get(init.lower())
    if klass is None:
        raise ValueError("Cannot find initializer %r. Registered initializers: %s"
                         % (init, ", ".join(sorted(_REGISTRY))))
    return klass(**kwargs)


class Initializer:
    """The base class of initializers: dispatches on the parameter's name."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func = None

    def set_verbosity(self, verbose=False, print_func=None):
        """Switches printing a statistic of every initialized array on or off."""
        self._verbose = verbose
        if print_func is None:
            def print_func(x):
                return str((x.norm() / np.sqrt(x.size)).asscalar())
        self._print_func = print_func
        return self

    def _verbose_print(self, desc, init, arr):
        if self._verbose and self._print_func:
            import logging
            logging.info("Initialized %s as %s: %s", desc, init, self._print_func(arr))

    def dumps(self):
        """The initializer as a JSON string ``'["name", {kwargs}]'``."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __repr__(self):
        return "%s(%s)" % (self.__class__.__name__,
                           ", ".join("%s=%r" % kv for kv in sorted(self._kwargs.items())))

    def __eq__(self, other):
        return (isinstance(other, Initializer) and type(self) is type(other)
                and self._kwargs == other._kwargs)

    def __hash__(self):
        return hash((type(self).__name__, self.dumps()))

    def __call__(self, desc, arr):
        """Fills ``arr`` (an NDArray) for the parameter described by ``desc``."""
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get("__init__", "")
        if init:
            create(init)._init_weight(desc, arr)
            self._verbose_print(desc, init, arr)
            return
        if desc.endswith("weight"):
            self._init_weight(desc, arr)
            self._verbose_print(desc, "weight", arr)
        elif desc.endswith("bias"):
            self._init_bias(desc, arr)
            self._verbose_print(desc, "bias", arr)
        elif desc.endswith("gamma"):
            self._init_gamma(desc, arr)
            self._verbose_print(desc, "gamma", arr)
        elif desc.endswith("beta"):
            self._init_beta(desc, arr)
            self._verbose_print(desc, "beta", arr)
        elif desc.endswith("min"):
            self._init_zero(desc, arr)
        elif desc.endswith("max"):
            self._init_one(desc, arr)
        else:
            self._init_default(desc, arr)

    def _legacy_init(self, name, arr):
        if not isinstance(name, string_types):
            raise TypeError("name must be a string")
        if not isinstance(arr, NDArray):
            raise TypeError("arr must be an NDArray")
        if name.startswith("upsampling"):
            self._init_bilinear(name, arr)
        elif name.endswith("bias"):
            self._init_bias(name, arr)
        elif name.endswith("gamma"):
            self._init_gamma(name, arr)
        elif name.endswith("beta"):
            self._init_beta(name, arr)
        elif name.endswith("weight"):
            self._init_weight(name, arr)
        elif name.endswith("moving_mean") or name.endswith("moving_inv_var") \
                or name.endswith("moving_avg"):
            self._init_zero(name, arr)
        elif name.endswith("moving_var"):
            self._init_one(name, arr)
        elif name.endswith("min"):
            self._init_zero(name, arr)
        elif name.endswith("max"):
            self._init_one(name, arr)
        else:
            self._init_default(name, arr)

    def _init_bilinear(self, _, arr):
        arr[:] = _bilinear_kernel(arr.shape)

    def _init_zero(self, _, arr):
        arr[:] = 0.0

    def _init_one(self, _, arr):
        arr[:] = 1.0

    def _init_bias(self, _, arr):
        arr[:] = 0.0

    def _init_gamma(self, _, arr):
        arr[:] = 1.0

    def _init_beta(self, _, arr):
        arr[:] = 0.0

    def _init_weight(self, name, arr):
        raise TypeError("%s has no weight initialization of its own (parameter %s): use a "
                        "subclass such as Uniform or Xavier" % (type(self).__name__, name))

    def _init_default(self, name, _):
        raise ValueError(
            'Unknown initialization pattern for %s. Default initialization is now limited '
            'to "weight", "bias", "gamma" (1.0), and "beta" (0.0). Please use '
            'mx.sym.Variable(init=mx.init.*) to set initialization pattern' % name)


def _bilinear_kernel(shape):
    """Bilinear upsampling weights for a (.., .., kh, kw) array, computed with NumPy."""
    shape = tuple(shape)
    f = np.ceil(shape[3] / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    flat = np.arange(int(np.prod(shape)))
    x = flat % shape[3]
    y = (flat // shape[3]) % shape[2]
    w = (1 - np.abs(x / f - c)) * (1 - np.abs(y / f - c))
    return w.reshape(shape).astype(np.float32)


class Load:
    """Initializes parameters from a saved dict (or a file written by ``mx.nd.save``),
    falling back to ``default_init`` for names it does not hold. ``arg:``/``aux:``
    prefixes of saved names are dropped."""

    def __init__(self, param, default_init=None, verbose=False):
        from .ndarray import load
        if isinstance(param, string_types):
            param = load(param)
        if not isinstance(param, dict):
            raise TypeError("Load: param must be a dict of NDArrays or a file name")
        self.param = {}
        for name, arr in param.items():
            if name.startswith("arg:") or name.startswith("aux:"):
                name = name[4:]
            self.param[name] = arr
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name, arr):
        if name in self.param:
            if arr.shape != self.param[name].shape:
                raise ValueError("Parameter %s cannot be initialized from loading. Shape "
                                 "mismatch, target %s vs loaded %s"
                                 % (name, arr.shape, self.param[name].shape))
            arr[:] = self.param[name]
        else:
            if self.default_init is None:
                raise ValueError("Cannot Initialize %s. Not found in loaded param and no "
                                 "default Initializer is provided." % name)
            self.default_init(name, arr)


class Mixed:
    """Initializes each parameter with the first initializer whose regular expression
    matches its name (``re.match``)."""

    def __init__(self, patterns, initializers):
        if len(patterns) != len(initializers):
            raise ValueError("Mixed: %d patterns but %d initializers"
                             % (len(patterns), len(initializers)))
        self.map = list(zip([re.compile(p) for p in patterns], initializers))

    def __call__(self, name, arr):
        for prog, init in self.map:
            if prog.match(name):
                init(name, arr)
                return
        raise ValueError('Parameter name %s did not match any pattern. Consider add a ".*" '
                         'pattern at the and with default Initializer.' % name)


@_alias("zeros")
@register
class Zero(Initializer):
    """Initializes weights to zero."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        arr[:] = 0


@_alias("ones")
@register
class One(Initializer):
    """Initializes weights to one."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        arr[:] = 1


@register
class Constant(Initializer):
    """Initializes weights to a given value (a scalar, or an array broadcastable to the
    parameter's shape)."""

    def __init__(self, value):
        super().__init__(value=value)
        self.value = value

    def _init_weight(self, _, arr):
        v = self.value
        if isinstance(v, (list, tuple)):
            v = np.asarray(v, dtype=np.float32)
        arr[:] = v

    def dumps(self):
        # An array value is stored in the kwargs as a nested list (as MXNet does), so
        # that ``_kwargs`` and the JSON agree.
        val = self._kwargs["value"]
        if not np.isscalar(val):
            if hasattr(val, "asnumpy"):
                val = val.asnumpy()
            self._kwargs["value"] = val.tolist() if hasattr(val, "tolist") else list(val)
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])


@register
class Uniform(Initializer):
    """Initializes weights with values drawn uniformly from ``[-scale, scale]``."""

    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _, arr):
        _random.uniform(-self.scale, self.scale, out=arr)


@register
class Normal(Initializer):
    """Initializes weights with values drawn from N(0, sigma**2)."""

    def __init__(self, sigma=0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _, arr):
        _random.normal(0, self.sigma, out=arr)


@register
class Orthogonal(Initializer):
    """Initializes weights as an orthogonal matrix (Saxe et al. 2013) times ``scale``;
    ``rand_type`` 'uniform' or 'normal' picks the matrix the SVD starts from."""

    def __init__(self, scale=1.414, rand_type="uniform"):
        super().__init__(scale=scale, rand_type=rand_type)
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, _, arr):
        nout = arr.shape[0]
        nin = int(np.prod(arr.shape[1:]))
        if self.rand_type == "uniform":
            tmp = _random.uniform(-1.0, 1.0, shape=(nout, nin)).asnumpy()
        elif self.rand_type == "normal":
            tmp = _random.normal(0.0, 1.0, shape=(nout, nin)).asnumpy()
        else:
            raise ValueError("Orthogonal: unknown rand_type %r (expected 'uniform' or "
                             "'normal')" % (self.rand_type,))
        u, _s, v = np.linalg.svd(tmp, full_matrices=False)
        res = u if u.shape == tmp.shape else v
        arr[:] = (self.scale * res.reshape(arr.shape)).astype(np.float32)


@register
class Xavier(Initializer):
    """Xavier/Glorot initialization: samples with variance scaled by the fan.

    Parameters
    ----------
    rnd_type : str, optional
        'uniform' (in ``[-s, s]``) or 'gaussian' (std ``s``), with
        ``s = sqrt(magnitude / factor)``.
    factor_type : str, optional
        'avg' (``(fan_in + fan_out) / 2``), 'in' or 'out'.
    magnitude : float, optional
        Scale of the random numbers.
    """

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name, arr):
        shape = arr.shape
        if len(shape) < 2:
            raise ValueError("Xavier initializer cannot be applied to vector {0}. It requires "
                             "at least 2D.".format(name))
        hw_scale = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * hw_scale, shape[0] * hw_scale
        if self.factor_type == "avg":
            factor = (fan_in + fan_out) / 2.0
        elif self.factor_type == "in":
            factor = fan_in
        elif self.factor_type == "out":
            factor = fan_out
        else:
            raise ValueError("Incorrect factor type")
        scale = float(np.sqrt(self.magnitude / factor))
        if self.rnd_type == "uniform":
            _random.uniform(-scale, scale, out=arr)
        elif self.rnd_type == "gaussian":
            _random.normal(0, scale, out=arr)
        else:
            raise ValueError("Unknown random type")


@register
class MSRAPrelu(Xavier):
    """He/MSRA initialization for PReLU networks: Gaussian with magnitude
    ``2 / (1 + slope**2)``."""

    def __init__(self, factor_type="avg", slope=0.25):
        magnitude = 2.0 / (1 + slope ** 2)
        super().__init__("gaussian", factor_type, magnitude)
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Bilinear(Initializer):
    """Initializes weights for bilinear upsampling (deconvolution)."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        arr[:] = _bilinear_kernel(arr.shape)


@register
class LSTMBias(Initializer):
    """Initializes LSTM biases to zero except the forget gate's (the second quarter),
    set to ``forget_bias``."""

    def __init__(self, forget_bias=1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name, arr):
        n = arr.shape[0] // 4
        b = np.zeros(arr.shape, dtype=np.float32)
        b[n:2 * n] = self.forget_bias
        arr[:] = b


_RNN_GATES = {"rnn_relu": [""], "rnn_tanh": [""], "lstm": ["_i", "_f", "_c", "_o"],
              "gru": ["_r", "_z", "_o"]}


@register
class FusedRNN(Initializer):
    """Initializes the single parameter vector of a fused RNN layer (MXNet's ``RNN`` op
    layout: for each layer and direction the input-to-hidden then hidden-to-hidden
    weights, then all biases likewise). Each gate's piece is initialized on its own by
    ``init`` (or the global initializer) under its unpacked name (``l0_i2h_f_weight``,
    ``r1_h2h_o_bias``, ...); LSTM forget-gate biases get ``forget_bias``.

    Parameters
    ----------
    init : Initializer or JSON string, or None
        Initializer for the pieces; None uses the global initializer.
    num_hidden : int
    num_layers : int
    mode : {'rnn_relu', 'rnn_tanh', 'lstm', 'gru'}
    bidirectional : bool
    forget_bias : float
    """

    def __init__(self, init, num_hidden, num_layers, mode, bidirectional=False,
                 forget_bias=1.0):
        if isinstance(init, string_types):
            klass, kwargs = json.loads(init)
            init = _REGISTRY[klass.lower()](**kwargs)
        if mode not in _RNN_GATES:
            raise ValueError("FusedRNN: mode must be one of %s, got %r"
                             % (sorted(_RNN_GATES), mode))
        super().__init__(init=init.dumps() if init is not None else None,
                         num_hidden=num_hidden, num_layers=num_layers, mode=mode,
                         bidirectional=bidirectional, forget_bias=forget_bias)
        self._init = init
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._forget_bias = forget_bias

    def _pieces(self, total):
        """``[(name, offset, shape)]`` of every gate piece in the packed vector."""
        gates = _RNN_GATES[self._mode]
        g, h, layers = len(gates), self._num_hidden, self._num_layers
        dirs = ["l", "r"] if self._bidirectional else ["l"]
        nd_ = len(dirs)
        rest = total - layers * nd_ * 2 * g * h \
            - (layers - 1) * nd_ * g * h * (h * nd_ + h)
        if rest % (nd_ * g * h):
            raise ValueError("FusedRNN: %d parameters do not fit %d layer(s) of %s with %d "
                             "hidden units" % (total, layers, self._mode, h))
        inputs = rest // (nd_ * g * h) - h
        if inputs <= 0:
            raise ValueError("FusedRNN: %d parameters are too few for %d layer(s) of %s with "
                             "%d hidden units" % (total, layers, self._mode, h))
        pieces, off = [], 0
        for layer in range(layers):
            width = inputs if layer == 0 else h * nd_
            for d in dirs:
                for kind, cols in (("i2h", width), ("h2h", h)):
                    for gate in gates:
                        pieces.append(("%s%d_%s%s_weight" % (d, layer, kind, gate), off,
                                       (h, cols)))
                        off += h * cols
        for layer in range(layers):
            for d in dirs:
                for kind in ("i2h", "h2h"):
                    for gate in gates:
                        pieces.append(("%s%d_%s%s_bias" % (d, layer, kind, gate), off, (h,)))
                        off += h
        return pieces

    def _init_weight(self, desc, arr):
        from . import ndarray as nd
        flat = np.zeros(int(np.prod(arr.shape)), dtype=np.float32)
        global_init = getattr(desc, "global_init", None)
        for name, off, shape in self._pieces(flat.size):
            piece = nd.zeros(shape, ctx=arr.context, dtype=arr.dtype)
            if self._mode == "lstm" and name.endswith("_f_bias"):
                piece[:] = self._forget_bias
            else:
                init = self._init if self._init is not None else global_init
                if init is None:
                    raise ValueError("FusedRNN for %s: no initializer given and no global "
                                     "initializer in the description" % str(desc))
                init(InitDesc(name, global_init=global_init), piece)
            flat[off:off + piece.size] = piece.asnumpy().reshape(-1)
        arr[:] = flat.reshape(arr.shape)
