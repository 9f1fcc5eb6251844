"""`import tvm` as `tilelang.tvm` where no TVM is installed (TileLang programs import
both). A finder at the end of `sys.meta_path`: consulted only after every other finder
missed, so an installed TVM is always the one imported. Standard library only: it is
installed by `import tilelang`."""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys


class _Loader(importlib.abc.Loader):
    def __init__(self, real: str):
        self.real = real

    def create_module(self, spec):
        return importlib.import_module(self.real)

    def exec_module(self, module):
        pass                                # the real module ran when it was imported


class _TvmFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "tvm" and not name.startswith("tvm."):
            return None
        real = "tilelang." + name
        if importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(name, _Loader(real))


def install() -> None:
    if not any(isinstance(f, _TvmFinder) for f in sys.meta_path):
        sys.meta_path.append(_TvmFinder())
