"""Profiling kernels: TileLang's profiler API and the bottleneck report.

    from tilelang.profiler import do_bench, TensorSupplyType
    ms = do_bench(lambda: a @ b, warmup=25, rep=100)      # any callable, milliseconds
    profiler = kernel.get_profiler(tensor_supply_type=TensorSupplyType.Auto)
    profiler.do_bench(); profiler.assert_allclose(ref_program)
    report = kernel.profile(sizes={"M": 1024})            # time, roofline, bound, advice

Submodules load on first use: `import tilelang.profiler` stays light.
"""
from __future__ import annotations

__all__ = ["do_bench", "TensorSupplyType", "Profiler", "profile", "ProfileReport"]


def __getattr__(name):
    if name == "do_bench":
        from .bench import do_bench
        return do_bench
    if name == "TensorSupplyType":
        from .supply import TensorSupplyType
        return TensorSupplyType
    if name == "Profiler":
        from .profiler import Profiler
        return Profiler
    if name in ("profile", "ProfileReport"):
        from . import analyze
        return getattr(analyze, name)
    raise AttributeError(f"module 'tilelang.profiler' has no attribute {name!r}")
