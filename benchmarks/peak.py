"""The host's peaks, measured once and kept in the host memo: the CPU roofline of
`tilec profile` and `kernel.profile()` is drawn from them.

Figures (tilelang/profiler/hostpeaks.py says how each loop keeps its results used):
FMA GFLOP/s per vector width, dtype and thread count; the native bf16 dot product
(vdpbf16ps) where the CPU has it; AMX where present; streaming read and copy GB/s over
buffers twice the last-level cache; the read GB/s of working sets that stay in the L2
and in the L3. Baselines measured in the same run: numpy/OpenBLAS sgemm and dgemm at
2048^3 on the same thread count (the best a real kernel gets), and numpy's own sum and
copy of the same buffer (of the same working set for a cache level) on one thread.
The memo is replaced whatever it held (a profile only ever raises its figures).

    python benchmarks/peak.py [--quick] [--no-store]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from common import report, run_python  # noqa: E402

BLAS_CHILD = """
import json, time, numpy as np
n = {n}
a = np.random.rand(n, n).astype("{dtype}"); b = np.random.rand(n, n).astype("{dtype}")
a @ b
best = min((lambda t0: (a @ b, time.perf_counter() - t0)[1])(time.perf_counter())
           for _ in range(5))
print(json.dumps({{"flops": 2 * n ** 3 / best}}))
"""


def blas_rate(dtype: str, threads: int, n: int) -> float:
    env = {"OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
           "MKL_NUM_THREADS": str(threads)}
    return run_python(BLAS_CHILD.format(n=n, dtype=dtype), env=env)["flops"]


def numpy_stream(nbytes: int) -> tuple[float, float]:
    """numpy's sum and copy of an `nbytes` float32 buffer: (read B/s, copy B/s)."""
    import numpy as np
    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    read = min(_time(lambda: src.sum()) for _ in range(3))
    copy = min(_time(lambda: np.copyto(dst, src)) for _ in range(3))
    return nbytes / read, 2 * nbytes / copy


def numpy_cache_read(nbytes: int, seconds: float = 0.2) -> float:
    """numpy's sum of an `nbytes` float32 buffer read again and again: the best B/s."""
    import numpy as np
    src = np.ones(nbytes // 4, np.float32)
    src.sum()
    best, spent = float("inf"), 0.0
    while spent < seconds:
        took = _time(lambda: src.sum())
        best, spent = min(best, took), spent + took
    return nbytes / best


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short loops (noisier)")
    parser.add_argument("--no-store", action="store_true", help="do not update the memo")
    args = parser.parse_args()
    from tilelang.profiler import hostpeaks

    figures = hostpeaks.measure(quick=args.quick)
    print(f"host: {figures['cpu']}, threads {', '.join(figures['threads'])}, "
          f"vector widths {figures['vector_widths']}")
    widest = str(max(figures["vector_widths"]))
    n = 1024 if args.quick else 2048
    for dtype in ("float32", "float64"):
        for t in figures["threads"]:
            blas = blas_rate(dtype, int(t), n)
            for width, rates in figures["fma"][dtype].items():
                base = dict(baseline=blas / 1e9, baseline_name=f"numpy {n}^3 {dtype} gemm")
                report("peak", f"FMA {dtype} {width}-bit, {t} thread(s)", rates[t] / 1e9,
                       "GFLOP/s", higher_is_better=True,
                       **(base if width == widest else {}))
    dot = figures.get("bf16_dot")
    if dot:
        for width, rates in dot.items():
            for t, rate in rates.items():
                report("peak", f"bf16 dot (vdpbf16ps) {width}-bit, {t} thread(s)", rate / 1e9,
                       "GFLOP/s", higher_is_better=True,
                       baseline=figures["fma"]["float32"][width][t] / 1e9,
                       baseline_name=f"fp32 FMA {width}-bit")
    else:
        print("bf16 dot: not present (no avx512_bf16 flag)")
    print(f"AMX: {figures['amx'] or 'not present (no amx_tile / amx_bf16 flags)'}")
    np_read, np_copy = numpy_stream(figures["stream_bytes"])
    for t in figures["threads"]:
        report("peak", f"stream read, {t} thread(s)", figures["bandwidth"]["read"][t] / 1e9,
               "GB/s", higher_is_better=True, baseline=np_read / 1e9,
               baseline_name="numpy sum, 1 thread")
        report("peak", f"stream copy (read + write), {t} thread(s)",
               figures["bandwidth"]["copy"][t] / 1e9, "GB/s", higher_is_better=True,
               baseline=np_copy / 1e9, baseline_name="numpy copyto, 1 thread")
    from tilelang.profiler.hostpeaks import cache_working_sets
    caches = figures["caches"]
    for level, rates in figures["cache_read"].items():
        sets = cache_working_sets(caches["l2"], caches["l3"], 1)
        base = numpy_cache_read(sets[level]) if level in sets else None
        for t, rate in rates.items():
            size = cache_working_sets(caches["l2"], caches["l3"], int(t))[level]
            report("peak", f"{level.upper()} read ({size / 2 ** 20:.3g} MiB), {t} thread(s)",
                   rate / 1e9, "GB/s", higher_is_better=True,
                   **({} if base is None else dict(baseline=base / 1e9,
                                                   baseline_name="numpy sum, 1 thread")))
    print(f"measured in {figures['seconds']:.1f} s at load {figures['load']:.2f} "
          f"({figures['cores']} cores)")
    if not args.no_store:
        hostpeaks.store(figures)
        print(f"stored in {hostpeaks.memo_path()}")


if __name__ == "__main__":
    main()
