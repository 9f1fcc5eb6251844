"""`do_bench(fn, warmup=25, rep=100)`: the time of one call of `fn`, in milliseconds.

TileLang's spelling and meaning: `warmup` and `rep` are *milliseconds* to spend warming
up and measuring (the counts follow from a first estimate of one call's time), or
exact counts through `_n_warmup` / `_n_repeat`; `return_mode` picks the mean (the
default), median, min or max of the timed calls, and `quantiles` returns those
quantiles instead. On the CPU every call is timed with the wall clock around it (the
kernel's launch returns when its last block is done), so there is no device to
synchronise; `backend=` ("event", "cupti", "cudagraph") is accepted for compatibility
and means the same thing here.
"""
from __future__ import annotations

import math
import statistics
import time

_RETURN_MODES = ("min", "max", "mean", "median")
_BACKENDS = ("event", "cupti", "cudagraph", "wall")


def do_bench(fn, warmup: float = 25, rep: float = 100, _n_warmup: int = 0,
             _n_repeat: int = 0, quantiles=None, fast_flush: bool = True,
             backend: str = "event", return_mode: str = "mean", device=None,
             cache_size: int = 256, early_stop_baseline: float | None = None):
    """Milliseconds per call of `fn()` (see the module docstring). `early_stop_baseline`
    (ms): stop after the warm-up when one call already takes more than it (a tuner's
    cut-off for configs far slower than its best) and return that estimate.
    `fast_flush`, `device` and `cache_size` are accepted for compatibility (there is no
    device cache to flush on the CPU)."""
    if return_mode not in _RETURN_MODES:
        raise ValueError(f"return_mode must be one of {', '.join(_RETURN_MODES)}, "
                         f"got {return_mode!r}")
    if backend not in _BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(_BACKENDS)}, got {backend!r}")
    if device not in (None, "cpu"):
        raise ValueError(f"device={device!r}: kernels run on the CPU here (device=None)")
    times = measure(fn, warmup, rep, _n_warmup, _n_repeat, early_stop_baseline)
    if quantiles is not None:
        return [quantile(times, q) for q in quantiles]
    return summarize(times, return_mode)


def measure(fn, warmup: float = 25, rep: float = 100, n_warmup: int = 0,
            n_repeat: int = 0, early_stop: float | None = None) -> list[float]:
    """The times of the timed calls, in milliseconds."""
    estimate = time_call(fn)                     # also the first warm-up call
    if early_stop is not None and estimate > early_stop:
        return [estimate]
    n_warmup = n_warmup or _count(warmup, estimate)
    n_repeat = n_repeat or _count(rep, estimate)
    for _ in range(max(0, n_warmup - 1)):
        fn()
    return [time_call(fn) for _ in range(max(1, n_repeat))]


def time_call(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def _count(budget_ms: float, estimate_ms: float) -> int:
    """Calls that fill `budget_ms` at `estimate_ms` each (at least one)."""
    if budget_ms <= 0:
        return 1
    return max(1, int(budget_ms / max(estimate_ms, 1e-6)))


def summarize(times: list[float], return_mode: str = "mean") -> float:
    if return_mode == "min":
        return min(times)
    if return_mode == "max":
        return max(times)
    if return_mode == "median":
        return statistics.median(times)
    return statistics.fmean(times)


def quantile(times: list[float], q: float) -> float:
    """The q-quantile (0..1) of `times`, interpolated between the nearest ranks."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantiles must lie in [0, 1], got {q}")
    ordered = sorted(times)
    pos = q * (len(ordered) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
