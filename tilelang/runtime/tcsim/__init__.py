"""tcsim's simulator: the discrete-event model of the simulated tensor-core accelerator,
which runs a program (`tilelang.targets.tcsim`: ISA, assembler, encoding, artifacts,
machine configs) on numpy arrays, counts its cycles and reports them.

Part of the runtime: imports nothing of the compiler. Names load on first use.
"""
__all__ = ["run", "Report", "RaceError", "DeadlockError", "SimError", "LaunchError",
           "SimKernel", "SimLibrary"]

_HOME = {"run": "sim", "Report": "report", "RaceError": "errors", "DeadlockError": "errors",
         "SimError": "errors", "LaunchError": "errors", "SimKernel": "kernel",
         "SimLibrary": "kernel"}


def __getattr__(name):
    if name in _HOME:
        import importlib
        return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
