"""The measuring side of benchmarks/gemm.py, run in a child process whose OpenBLAS and
tilelang thread counts were fixed by the parent (OPENBLAS_NUM_THREADS is read once, when
numpy loads). Reads a JSON list of cases from argv[1]; prints one JSON object per case.

Each case times the tilelang side, its numpy baselines and the host's FMA loop (the peak,
`hostpeaks.FmaProbe`, on the same threads) in turns, repetition by repetition (so a slow
spell of the shared machine hits every side alike), pausing after each multi-threaded
call so that OpenBLAS's spinning worker threads do not slow the next. Each side's times
are printed, all of them: the parent takes their medians (and bests).
"""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

PAUSE = 0.5


# On one thread both sides run on the calling thread (tilelang runs a one-thread launch
# inline, OPENBLAS_NUM_THREADS=1 keeps sgemm there too), so its CPU time is what each
# side costs, unaffected by other processes taking the core for a while (the machine is
# shared). With more threads the work is on worker threads: wall time, best of more runs.
SINGLE = os.environ.get("OPENBLAS_NUM_THREADS") == "1"
CLOCK = time.thread_time if SINGLE else time.perf_counter


_PEAK = []


def peak_probe():
    """The FMA loop on this launch's threads (made once per process)."""
    if not _PEAK:
        from tilelang.profiler.hostpeaks import FmaProbe
        threads = int(os.environ.get("TILELANG_NUM_THREADS", "1"))
        _PEAK.append(FmaProbe(threads, seconds=0.02))
    return _PEAK[0]


def best(fn, repeats: int) -> float:
    return min(interleaved({"x": fn}, repeats)["x"])


def interleaved(sides: dict, repeats: int) -> dict:
    """The times of each callable in `sides`, timed in turns (a, b, c, b, c, a, ...)
    so that every side sees the same spells of a noisy, shared machine, and the order
    rotates so that no side always follows the same one (the astype path frees 48 MB,
    and the kernel's background work on that memory took a core from the next call);
    a pause after each multi-threaded call lets OpenBLAS's spinning workers sleep."""
    for fn in sides.values():
        fn()                              # warm-up: compile, page in, fill caches
    times = {name: [] for name in sides}
    order = list(sides.items())
    for r in range(repeats if SINGLE else 2 * repeats):
        for name, fn in order[r % len(order):] + order[:r % len(order)]:
            t0 = CLOCK()
            fn()
            times[name].append(CLOCK() - t0)
            if not SINGLE:
                time.sleep(PAUSE)
    return times


def arrays(m, n, k, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    return a.astype(dtype), b.astype(dtype)


def tl_side(case, a, b):
    """The callable timed for the tilelang side of `case`, and its result checker."""
    kind = case["kind"]
    if kind == "library":
        from tilelang.ops import gemm
        c = np.empty((a.shape[0], b.shape[1]), np.float32)
        return lambda: gemm(a, b, precision=case["precision"], out=c), c
    if kind == "user":
        import tilelang
        k = tilelang.compile(case["path"])
        bias = np.linspace(-1, 1, b.shape[1], dtype=np.float32)
        c = np.empty((a.shape[0], b.shape[1]), np.float32)
        return lambda: k(a, b, bias, c), c
    if kind == "fp8":
        from tilelang.ops import fp8_gemm, quantize_per_token, quantize_per_block
        qa, sa = quantize_per_token(a)
        qb, sb = quantize_per_block(b)
        c = np.empty((a.shape[0], b.shape[1]), np.float32)
        return lambda: fp8_gemm(qa, sa, qb, sb, out=c), c
    raise ValueError(kind)


def measure(case) -> dict:
    m, n, k = case["m"], case["n"], case["k"]
    in_dtype = np.float16 if case["precision"] == "fp16" else np.float32
    a, b = arrays(m, n, k, in_dtype)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    run, c = tl_side(case, a, b)
    c_np = np.empty((m, n), np.float32)      # both sides write into a preallocated C
    sides = {"tl_s": run, "numpy_s": lambda: np.matmul(a32, b32, out=c_np),
             "peak_s": peak_probe()}
    if case["precision"] == "fp16":
        sides["astype_s"] = lambda: a.astype(np.float32) @ b.astype(np.float32)
    if case["kind"] == "fp8":
        from tilelang.ops import gemm
        c32 = np.empty((m, n), np.float32)
        sides["fp32_kernel_s"] = lambda: gemm(a32, b32, out=c32)
    out = {**case, **interleaved(sides, case["repeats"]), "peak_flops": peak_probe().flops}
    ref = a32.astype(np.float64) @ b32.astype(np.float64)
    if case["kind"] == "user":
        ref = np.maximum(ref + np.linspace(-1, 1, n), 0)
    out["rel_err"] = float(np.abs(c - ref).max() / max(1e-30, np.abs(ref).max()))
    time.sleep(PAUSE)
    return out


def measure_seed(case) -> dict:
    """The seed's case: n^3 fp16-in. numpy has no fp16 BLAS path, so its fp16 matmul is
    timed at n = 1024 and scaled by (n / 1024)^3; the astype(float32) path is timed."""
    n = case["n"]
    a, b = arrays(n, n, n, np.float16)
    from tilelang.ops import gemm
    c = np.empty((n, n), np.float32)
    t_tl = best(lambda: gemm(a, b, precision="fp16", out=c), 1)
    time.sleep(PAUSE)
    t_astype = best(lambda: a.astype(np.float32) @ b.astype(np.float32), 1)
    small_a, small_b = a[:1024, :1024].copy(), b[:1024, :1024].copy()
    t_small = best(lambda: small_a @ small_b, 1)
    return {**case, "tl_s": t_tl, "astype_s": t_astype,
            "numpy_fp16_s": t_small * (n / 1024) ** 3}


def main() -> None:
    cases = json.loads(sys.argv[1])
    for case in cases:
        result = measure_seed(case) if case["kind"] == "seed" else measure(case)
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    main()
