"""tilelang: an ahead-of-time compiler for a tile language.

This module only re-exports; compiler parts load on first use so that
``import tilelang`` stays light and an AOT library loads without the compiler.
"""
from .version import __version__
from .tvm_alias import install as _install_tvm_alias

_install_tvm_alias()        # `from tvm import tirx` in TileLang programs (tilelang/tvm/)

__all__ = ["kernel", "jit", "compile", "load", "language", "autotune", "TensorSupplyType",
           "PassConfigKey", "cdiv", "next_power_of_2", "__version__"]


def __getattr__(name):
    if name in ("kernel", "jit", "compile"):
        from . import decorators as _dec
        return getattr(_dec, name)
    if name == "load":
        from .runtime.artifact import load
        return load
    if name == "autotune":
        from .autotuner import autotune
        return autotune
    if name == "TensorSupplyType":
        from .profiler.supply import TensorSupplyType
        return TensorSupplyType
    if name == "PassConfigKey":
        from .passconfig import PassConfigKey
        return PassConfigKey
    if name in ("cdiv", "next_power_of_2"):
        from . import math as _math
        return getattr(_math, name)
    if name in ("profiler", "autotuner", "layout", "math", "language"):
        # import_module, not `from . import x`: that asks this __getattr__ again, forever
        import importlib
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'tilelang' has no attribute {name!r}")
