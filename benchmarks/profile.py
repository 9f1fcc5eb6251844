"""The profiler on every example kernel and on the planted-problem kernels.

Part 1: each kernel of examples/ on the CPU and on tcsim (h100_like, bf16 where the
kernel takes a dtype), with the fraction of the roofline it reaches and the bound the
profiler names (the roofline is the baseline here: the fraction is the ratio).

MLA decode (two grids, with FlashMLA's schedule as its index inputs) is profiled grid
by grid.

Part 2: the planted problems. Each kernel is built with one known problem; the
profiler names a bound and a top advice, whose defines are then applied, and the
speed-up is measured in the same run: on tcsim as the ratio of simulated cycles
(deterministic); on the CPU from plain calls of the two builds in alternating turns
(the side that goes first alternates too): the ratio of their least times (another
process only ever adds time) and the median of the turns' ratios; and the ratio of the
two builds' blocks' least times (timers build) scheduled over the threads as the
runtime does, plus the launch — what each would take with the cores to itself, which
load still moves when it slows every timed call of a block.

    python benchmarks/profile.py [--quick] [--only examples|planted]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, report  # noqa: E402

EX = ROOT / "examples"

EXAMPLES = [   # (file, kernel, cpu sizes, tcsim sizes, tcsim defines)
    ("vector_add.tl", None, {"N": 1 << 22}, {"N": 1 << 24}, {"dtype": "bfloat16"}),
    ("bias_gelu.tl", None, {"M": 1024, "N": 1024}, {"M": 4096, "N": 4096},
     {"dtype": "float16"}),
    ("softmax.tl", None, {"M": 1024, "N": 1024}, {"M": 4096, "N": 4096},
     {"dtype": "bfloat16"}),
    ("rmsnorm.tl", None, {"M": 1024, "N": 1024}, {"M": 4096, "N": 4096},
     {"dtype": "bfloat16"}),
    ("reduce.tl", "row_sum", {"M": 1024, "N": 1024}, {"M": 4096, "N": 4096}, {}),
    ("reduce.tl", "col_sum", {"M": 1024, "N": 1024}, {"M": 4096, "N": 4096}, {}),
    ("transpose.tl", None, {"M": 1024, "N": 1024}, {"M": 4096, "N": 4096}, {}),
    ("gemm.tl", None, {"M": 1024, "N": 1024, "K": 1024},
     {"M": 4096, "N": 4096, "K": 4096}, {"in_dtype": "bfloat16"}),
    ("gemm_bias_relu.tl", None, {"M": 1024, "N": 1024, "K": 1024},
     {"M": 2048, "N": 2048, "K": 2048}, {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}),
    ("gemm_epilogue.tl", None, {"M": 1024, "N": 1024, "K": 1024},
     {"M": 4096, "N": 4096, "K": 4096}, {}),
    ("splitk_gemm.tl", None, {"M": 512, "N": 512, "K": 4096},
     {"M": 1024, "N": 1024, "K": 8192}, {}),
    ("flash_attention.tl", None, {"BATCH": 1, "HEADS": 4, "SEQ_Q": 512, "SEQ_KV": 512},
     {"BATCH": 1, "HEADS": 16, "SEQ_Q": 1024, "SEQ_KV": 1024}, {"dtype": "bfloat16"}),
]

MLA = (ROOT / "tilelang" / "ops" / "mla" / "mla_decode.tl", "mla_decode",
       {"B": 4, "HKV": 1, "SQH": 128, "ROWS": 4 * 64 * 64, "MAX_BLOCKS": 64, "NUM_PARTS": 2,
        "B1": 5},
       {"B": 64, "HKV": 1, "SQH": 128, "ROWS": 64 * 64 * 64, "MAX_BLOCKS": 64,
        "NUM_PARTS": 132, "B1": 65},
       {"s_q": 1, "heads_per_kv": 128, "page_stride": 64, "sm_scale_log2": 0.06},
       {"block_table": "paged:64", "cache_seqlens": "uniform:1:4096",
        "sched": "mla_schedule:cache_seqlens",
        "num_splits": "mla_splits:cache_seqlens:sched"})

PLANTED = [    # (file, problem, target, sizes, defines, threads)
    ("gemm.tl", "single-stage pipeline", "tcsim:h100_like",
     {"M": 2048, "N": 2048, "K": 1024}, {"in_dtype": "bfloat16", "NUM_STAGES": 1}, None),
    ("gemm.tl", "ragged last wave (5 blocks, 4 cores)", "tcsim:tiny",
     {"M": 640, "N": 128, "K": 256},
     {"in_dtype": "bfloat16", "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, None),
    ("vector_add.tl", "memory-bound elementwise", "tcsim:tiny", {"N": 1 << 18}, {}, None),
    ("gemm.tl", "block too small to amortise packing (BLOCK_M=8)", "cpu",
     {"M": 256, "N": 1024, "K": 512}, {"BLOCK_M": 8, "BLOCK_N": 256, "BLOCK_K": 128}, 1),
    ("vector_add.tl", "memory-bound elementwise", "cpu", {"N": 1 << 22}, {}, 1),
    ("gemm.tl", "ragged last wave (3 blocks, 2 threads)", "cpu",
     {"M": 768, "N": 256, "K": 1024}, {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 256}, 2),
]


def _kernel(file, kernel, target, defines):
    import tilelang
    return tilelang.compile(str(EX / file), kernel=kernel, target=target, defines=defines)


def mla(quick: bool) -> None:
    """MLA decode, grid by grid (the split grid, then the combine grid)."""
    import tilelang
    path, kernel, cpu_sizes, sim_sizes, scalars, index = MLA
    print("== MLA decode (two grids): each grid's time, fraction of roofline and bound")
    for target, sizes, defines in (("cpu", cpu_sizes, {}),
                                   ("tcsim:h100_like", sim_sizes,
                                    {"TILE_DTYPE": "bfloat16", "BLOCK_H": 64})):
        if quick and target != "cpu":
            sizes = dict(sizes, B=16, NUM_PARTS=33, B1=17, ROWS=16 * 64 * 64)
        k = tilelang.compile(str(path), kernel=kernel, target=target, defines=defines)
        r = k.profile(sizes=sizes, scalars=scalars, index=index, rep=50)
        for g in r.grids:
            report("profile", f"mla_decode grid {g.index} on {target}: fraction of roofline",
                   g.roofline.fraction, "", higher_is_better=True,
                   extra={"bound": g.bound, "time_s": g.time_s, "launch_s": r.time_s,
                          "sizes": sizes, "kind": g.roofline.kind})
            print(f"    grid {g.index}: {g.time_s * 1e6:.1f} us of {r.time_s * 1e6:.1f} us, "
                  f"bound {g.bound}")
        print(f"    top advice: {r.advice[0].line if r.advice else '-'}")


def examples(quick: bool) -> None:
    print("== every example: fraction of the roofline reached, and the named bound")
    for file, kernel, cpu_sizes, sim_sizes, sim_defines in EXAMPLES:
        name = f"{file}{':' + kernel if kernel else ''}"
        for target, sizes, defines in (("cpu", cpu_sizes, {}),
                                       ("tcsim:h100_like", sim_sizes, sim_defines)):
            if quick and target != "cpu":
                sizes = {k: max(1, v // 4) for k, v in sizes.items()}
            try:
                r = _kernel(file, kernel, target, defines).profile(sizes=sizes, rep=50)
            except Exception as e:        # noqa: BLE001 - one kernel's failure is reported
                print(f"{name} on {target}: not profiled: {str(e).splitlines()[0]}")
                continue
            g = max(r.grids, key=lambda g: g.time_s)
            top = r.advice[0].line if r.advice else "-"
            report("profile", f"{name} on {target}: fraction of roofline",
                   g.roofline.fraction, "", higher_is_better=True,
                   extra={"bound": r.bound, "time_s": r.time_s, "sizes": sizes,
                          "kind": g.roofline.kind, "top_advice": top})
            print(f"    bound {r.bound}; top advice: {top}")


def planted() -> list:
    print("== planted problems: the named bound, the top advice, the speed-up of following it")
    rows = []
    for file, problem, target, sizes, defines, threads in PLANTED:
        k = _kernel(file, None, target, defines)
        r = k.profile(sizes=sizes, num_threads=threads, rep=50)
        top = r.advice[0] if r.advice else None
        follow = dict(defines, **(top.defines if top else {}))
        k2 = _kernel(file, None, target, follow)
        if target.startswith("tcsim"):
            after = k2.profile(sizes=sizes)
            speedup = r.grids[0].facts["cycles"] / after.grids[0].facts["cycles"]
            how = "simulated cycles"
        elif top is None:
            speedup, how = 1.0, "no advice"
        else:
            speedup, median = _cpu_speedup(k, k2, sizes, threads)
            replay = _replayed(r) / _replayed(k2.profile(sizes=sizes, num_threads=threads,
                                                          rep=50))
            how = (f"least times; median of turn ratios {median:.2f}x; blocks' least "
                   f"times replayed {replay:.2f}x")
        row = {"kernel": file, "problem": problem, "target": target, "bound": r.bound,
               "advice": top.line if top else "-",
               "applied": " ".join(f"-D {a}={b}" for a, b in (top.defines if top else {}).items()),
               "speedup": speedup, "how": how}
        rows.append(row)
        report("profile", f"planted {problem} on {target}: speed-up after the advice",
               speedup, "x", higher_is_better=True, baseline=1.0,
               baseline_name="before the advice", extra=row)
        print(f"    bound {r.bound}; advice: {row['advice']} [{row['applied']}]")
    print("\n| kernel | planted problem | target | named bound | top advice | applied | "
          "speed-up |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['kernel']} | {row['problem']} | {row['target']} | {row['bound']} | "
              f"{row['advice']} | {row['applied']} | {row['speedup']:.2f}x ({row['how']}) |")
    return rows


def _replayed(report) -> float:
    """A CPU launch's time from its blocks' least times scheduled over the threads as
    the runtime does, plus the least time outside the blocks: what the launch takes
    with the cores to itself."""
    spans = sum(g.facts["makespan_s"] for g in report.grids)
    launch = report.grids[0].facts.get("launch_share", 0.0)
    return spans / (1 - launch) if launch < 1 else spans


def _cpu_speedup(before, after, sizes, threads, turns: int = 201) -> tuple[float, float]:
    """(ratio of the least times, median of the turns' ratios) of plain calls of the two
    builds, in alternating turns whose first side alternates too."""
    from tilelang.profiler.supply import InputSupply
    sides = []
    for k in (before, after):                  # the advice may change the dtypes
        args = InputSupply(k._func(), target=k.options.target).make(sizes)
        k.runtime_kernel(*args, out_idx=None, num_threads=threads)
        sides.append((k.runtime_kernel, args))
    times: list[list[float]] = [[], []]
    for turn in range(turns):
        for side in ((0, 1) if turn % 2 == 0 else (1, 0)):
            kern, args = sides[side]
            t0 = time.perf_counter()
            kern(*args, out_idx=None, num_threads=threads)
            times[side].append(time.perf_counter() - t0)
    ratios = [b / a for b, a in zip(*times)]
    return min(times[0]) / min(times[1]), statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller tcsim shapes")
    parser.add_argument("--only", choices=("examples", "planted"), default=None)
    args = parser.parse_args()
    if args.only != "planted":
        examples(args.quick)
        mla(args.quick)
    if args.only != "examples":
        planted()


if __name__ == "__main__":
    main()
