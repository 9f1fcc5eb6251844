"""The runtime: loads compiled kernels from their manifests, binds and checks arguments,
launches grids on a thread pool, and keeps the disk cache.

It imports nothing of the compiler (ir, frontend, passes, codegen, lark, llvmlite), so an
AOT library runs in a process that has none of it. Names load on first use.
"""
__all__ = ["load", "Library", "Kernel", "Cache", "ArtifactError", "LaunchTypeError",
           "LaunchValueError"]

_HOME = {"load": ".artifact", "Library": ".artifact", "Kernel": ".artifact",
         "Cache": ".cache", "ArtifactError": "..diagnostics", "LaunchTypeError": ".errors",
         "LaunchValueError": ".errors"}


def __getattr__(name):
    if name in _HOME:
        import importlib
        return getattr(importlib.import_module(_HOME[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
