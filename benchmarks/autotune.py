"""The autotuner against an exhaustive sweep of the same space, in the same run.

The GEMM example (examples/gemm.tl, fp32, M = N = K = 1024 by default) over the
default CPU space (`default_configs`: BLOCK_M x BLOCK_N x BLOCK_K). The sweep times
every config in 5 alternating turns (each turn calls every config once, so load from
other processes spreads over all of them) and takes medians; the tuner runs as a user
would (a fresh result cache). The sweep's 3 best and the tuner's pick are then timed
again in alternating turns, and the figure is the tuner's pick over the sweep's best
(target <= 1.05), with the share of the space the tuner measured (target <= 0.30) and
the time of a second, cached tuning run in a fresh process (target < 1 s).

    python benchmarks/autotune.py [--size 1024] [--turns 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, report, run_python  # noqa: E402

EXAMPLE = str(ROOT / "examples" / "gemm.tl")

SECOND_RUN = """
import json, time
t0 = time.perf_counter()
from tilelang.autotuner import AutoTuner, default_configs
n = {n}
configs = default_configs({path!r}, M=n, N=n, K=n)
t1 = time.perf_counter()
r = (AutoTuner.from_kernel(kernel={path!r}, configs=configs)
     .set_compile_args(out_idx=[-1]).set_profile_args(sizes=dict(M=n, N=n, K=n))
     .run(warmup=5, rep=40))
t2 = time.perf_counter()
print(json.dumps({{"run_s": t2 - t1, "total_s": t2 - t0, "from_cache": r.from_cache,
                  "config": r.config}}))
"""


def sweep(configs, n, turns):
    """Median ms of every config over `turns` alternating turns (one call each)."""
    import numpy as np
    import tilelang
    kernels = []
    for c in configs:
        kernels.append(tilelang.compile(EXAMPLE, defines=c).runtime_kernel)
    a = np.random.rand(n, n).astype(np.float32)
    b = np.random.rand(n, n).astype(np.float32)
    out = np.empty((n, n), np.float32)
    for k in kernels:
        k(a, b, out)                                      # warm
    times = [[] for _ in kernels]
    for _ in range(turns):
        for i, k in enumerate(kernels):
            t0 = time.perf_counter()
            k(a, b, out)
            times[i].append((time.perf_counter() - t0) * 1e3)
    return [statistics.median(t) for t in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--turns", type=int, default=5)
    args = parser.parse_args()
    n = args.size
    cache = tempfile.mkdtemp(prefix="tilelang-autotune-bench-")
    os.environ["TILELANG_CACHE_DIR"] = cache
    from tilelang.autotuner import AutoTuner, default_configs
    configs = default_configs(EXAMPLE, M=n, N=n, K=n)
    print(f"space: {len(configs)} configs of examples/gemm.tl, {n}^3 fp32; cache {cache}")

    t0 = time.perf_counter()
    result = (AutoTuner.from_kernel(kernel=EXAMPLE, configs=configs)
              .set_compile_args(out_idx=[-1])
              .set_profile_args(sizes=dict(M=n, N=n, K=n)).run(warmup=5, rep=40))
    tune_s = time.perf_counter() - t0
    print(f"tuner: {result.config} in {tune_s:.1f} s, measured {result.measured} of "
          f"{result.total}, {len(result.skipped)} skipped")

    t0 = time.perf_counter()
    medians = sweep(configs, n, args.turns)
    sweep_s = time.perf_counter() - t0
    order = sorted(range(len(configs)), key=lambda i: medians[i])
    print(f"sweep: {len(configs)} configs x {args.turns} turns in {sweep_s:.1f} s; best "
          f"{configs[order[0]]} {medians[order[0]]:.3f} ms")

    finalists = [configs[i] for i in order[:3]]
    if result.config not in finalists:
        finalists.append(result.config)
    final = sweep(finalists, n, 3 * args.turns)
    best = min(range(min(3, len(order))), key=lambda i: final[i])   # the sweep's best
    pick = finalists.index(result.config)
    flops = 2.0 * n ** 3
    report("autotune", f"tuner's pick {result.config}, {n}^3 fp32",
           final[pick], "ms", baseline=final[best],
           baseline_name=f"exhaustive best {finalists[best]}", target=final[best] * 1.05,
           extra={"pick_gflops": flops / final[pick] / 1e6,
                  "best_gflops": flops / final[best] / 1e6})
    report("autotune", "share of the space measured", result.measured / result.total, "",
           target=0.30, extra={"measured": result.measured, "total": result.total})
    second = run_python(SECOND_RUN.format(n=n, path=EXAMPLE),
                        env={"TILELANG_CACHE_DIR": cache})
    report("autotune", "cached second run (fresh process, run() call)", second["run_s"],
           "s", target=1.0, baseline=tune_s, baseline_name="first run",
           extra={"from_cache": second["from_cache"], "process_s": second["total_s"]})


if __name__ == "__main__":
    main()
