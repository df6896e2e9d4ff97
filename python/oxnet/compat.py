"""`import mxnet` answered by oxnet, for code nobody can edit.

Libraries such as GluonTS, GluonCV or d2l say ``import mxnet`` themselves. After

    python -m oxnet.compat enable

every ``import mxnet`` and ``import mxnet.X`` in that Python environment yields oxnet's
own modules (``mxnet.gluon is oxnet.gluon``, so isinstance checks hold).

    python -m oxnet.compat disable      # undo it
    python -m oxnet.compat status       # say whether it is on

``enable`` writes two small files into the environment's site-packages: a ``.pth`` file
that Python reads at start-up and the module it imports, which installs an import hook.
The hook does not import oxnet until ``mxnet`` is first imported. ``enable`` refuses when
a real MXNet is installed in that environment (the two would shadow each other).

In one process, without touching the environment, :func:`install` does the same.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import sysconfig

__all__ = ["install", "uninstall", "enable", "disable", "is_enabled"]

_HOOK_MODULE = "_oxnet_mxnet_alias"
_PTH_NAME = "oxnet-mxnet-alias.pth"

# The import hook, written once: `enable` writes this source as the start-up module
# (self-contained: it must not import oxnet at start-up), and `install` runs the same
# source in this process.
_HOOK_CLASS = '''
class OxnetMXNetAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers ``mxnet`` and ``mxnet.X`` with the importable ``oxnet`` and ``oxnet.X``
    module objects (so both names are the same module)."""

    target = "oxnet"

    def find_spec(self, name, path=None, target=None):
        if name != "mxnet" and not name.startswith("mxnet."):
            return None
        real = self.target + name[len("mxnet"):]
        try:
            importlib.import_module(real)
        except ImportError:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        module = sys.modules[self.target + spec.name[len("mxnet"):]]
        # importlib sets __spec__ to the mxnet spec after this; exec_module puts the
        # module's own back (relative imports compare __package__ with it)
        self.__dict__.setdefault("_own_specs", {})[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        own = self.__dict__.get("_own_specs", {}).pop(module.__spec__.name, None)
        if own is not None:
            module.__spec__ = own
'''

_HOOK_SOURCE = ('''"""Written by `python -m oxnet.compat enable`: `import mxnet` yields oxnet.
Remove with `python -m oxnet.compat disable`."""
import importlib
import importlib.abc
import importlib.util
import sys

''' + _HOOK_CLASS + '''

if not any(type(f).__name__ == "OxnetMXNetAlias" for f in sys.meta_path):
    sys.meta_path.insert(0, OxnetMXNetAlias())
''')

_ns = {"importlib": importlib, "sys": sys}
exec(_HOOK_CLASS, _ns)
OxnetMXNetAlias = _ns["OxnetMXNetAlias"]
del _ns


def _hooked() -> bool:
    return any(type(f).__name__ == "OxnetMXNetAlias" for f in sys.meta_path)


def install() -> None:
    """Answers ``import mxnet`` with oxnet in this process (idempotent)."""
    if not _hooked():
        sys.meta_path.insert(0, OxnetMXNetAlias())


def uninstall() -> None:
    """Removes this process's hook; modules already imported as ``mxnet`` stay."""
    sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "OxnetMXNetAlias"]


def _site_packages() -> str:
    return sysconfig.get_paths()["purelib"]


def _real_mxnet(site: str) -> str | None:
    """Where a real MXNet lives in `site`, or None."""
    for entry in os.listdir(site):
        low = entry.lower()
        if low == "mxnet" and os.path.isdir(os.path.join(site, entry)):
            return os.path.join(site, entry)
        if (low.startswith("mxnet-") or low.startswith("mxnet_")) and low.endswith(
            (".dist-info", ".egg-info")
        ):
            return os.path.join(site, entry)
    return None


def is_enabled(site: str | None = None) -> bool:
    """Whether ``enable`` has been run for this environment."""
    site = site or _site_packages()
    return os.path.exists(os.path.join(site, _PTH_NAME))


def enable(site: str | None = None) -> str:
    """Makes ``import mxnet`` yield oxnet in this environment; returns the .pth path.

    Raises RuntimeError when a real MXNet is installed there."""
    site = site or _site_packages()
    real = _real_mxnet(site)
    if real is not None:
        raise RuntimeError(
            f"a real MXNet is installed in this environment ({real}); oxnet will not shadow "
            "it. Uninstall it (pip uninstall mxnet) or use another environment."
        )
    with open(os.path.join(site, _HOOK_MODULE + ".py"), "w") as f:
        f.write(_HOOK_SOURCE)
    pth = os.path.join(site, _PTH_NAME)
    with open(pth, "w") as f:
        f.write(f"import {_HOOK_MODULE}\n")
    return pth


def disable(site: str | None = None) -> bool:
    """Undoes :func:`enable`; returns whether anything was removed."""
    site = site or _site_packages()
    removed = False
    for name in (_PTH_NAME, _HOOK_MODULE + ".py"):
        p = os.path.join(site, name)
        if os.path.exists(p):
            os.remove(p)
            removed = True
    return removed


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    usage = "usage: python -m oxnet.compat enable|disable|status"
    if len(argv) != 1 or argv[0] not in ("enable", "disable", "status"):
        print(usage, file=sys.stderr)
        return 2
    cmd = argv[0]
    site = _site_packages()
    if cmd == "enable":
        try:
            pth = enable(site)
        except RuntimeError as e:
            print(f"oxnet.compat: {e}", file=sys.stderr)
            return 1
        print(f"import mxnet now yields oxnet in this environment ({pth})")
    elif cmd == "disable":
        if disable(site):
            print("import mxnet no longer yields oxnet in this environment")
        else:
            print("import mxnet was not redirected to oxnet in this environment")
    else:
        print("enabled" if is_enabled(site) else "disabled")
    return 0


if __name__ == "__main__":
    sys.exit(main())
