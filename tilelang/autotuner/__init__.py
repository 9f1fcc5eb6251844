"""TileLang's autotuner API: `@autotune(configs=...)` on a `@tilelang.jit` factory and
`AutoTuner.from_kernel(kernel=, configs=).set_compile_args(...).set_profile_args(...)
.run(warmup=, rep=, timeout=)`; `default_configs` gives a search space for the library
kernels. See tuner.py for how a run prunes, measures and caches."""
from __future__ import annotations

__all__ = ["autotune", "AutoTuner", "AutotuneResult", "default_configs"]


def __getattr__(name):
    if name in ("autotune", "AutoTuner", "AutotuneResult", "AutoTuneImpl"):
        from . import tuner
        return getattr(tuner, name)
    if name == "default_configs":
        from .spaces import default_configs
        return default_configs
    raise AttributeError(f"module 'tilelang.autotuner' has no attribute {name!r}")
