"""``mx.nd.CachedOp``: a Symbol compiled once and called like a function on NDArrays
(the graph runs in Rust, one call per invocation, recorded by autograd as one node)."""

from .. import _core
from ..base import MXNetError
from .ndarray import NDArray


def _inline_limit(flags):
    """The ``inline_limit`` of a cached op's flags, as MXNet's CachedOp reads them:
    2 unless given, and no inlining (None) with ``static_alloc``."""
    flags = dict(flags)
    static = flags.get("static_alloc", False)
    if isinstance(static, str):
        static = static.strip().lower() in ("1", "true")
    if static:
        return None
    try:
        limit = int(flags.get("inline_limit", 2))
    except (TypeError, ValueError):
        raise MXNetError("CachedOp: inline_limit must be an integer, got %r"
                         % (flags.get("inline_limit"),)) from None
    return max(limit, 0)


class CachedOp:
    """``CachedOp(sym, flags=())``; call it with one NDArray per ``sym.list_inputs()``
    (in that order); returns an NDArray, or a list for several outputs. While
    autograd records, a graph of at most ``inline_limit`` operators (a flag, 2 by
    default; none with ``static_alloc``) is recorded operator by operator."""

    def __init__(self, sym, flags=()):
        self._sym = sym
        self._flags = dict(flags)
        self._handle = _core.CachedOpHandle(sym.handle, _inline_limit(flags))
        pos = {n: i for i, n in enumerate(sym.list_inputs())}
        self._order = [pos[n] for n in self._handle.input_names()]
        self._n = len(pos)

    def __call__(self, *args, out=None, **kwargs):
        if kwargs:
            raise TypeError("CachedOp.__call__ got unexpected keyword arguments %s"
                            % sorted(kwargs))
        if len(args) != self._n:
            raise MXNetError("CachedOp: %d inputs given, the symbol takes %d (%s)"
                             % (len(args), self._n, ", ".join(self._sym.list_inputs())))
        for i, a in enumerate(args):
            if not isinstance(a, NDArray):
                raise TypeError("CachedOp: input %d must be an NDArray, got %s"
                                % (i, type(a).__name__))
        outs = self._handle.forward([args[i] for i in self._order])
        if out is not None:
            targets = [out] if isinstance(out, NDArray) else list(out)
            if len(targets) != len(outs):
                raise MXNetError("CachedOp: %d out arrays given for %d outputs"
                                 % (len(targets), len(outs)))
            for src, dst in zip(outs, targets):
                src.copyto(dst)
            return out
        return outs[0] if len(outs) == 1 else outs


__all__ = ["CachedOp"]
