"""GEMM GFLOP/s: tilelang (the library's `tilelang.ops.gemm`, a user kernel with a fused
epilogue, the fp8 block-scaled kernel) against numpy/OpenBLAS sgemm, in the same run.

Each thread count runs in its own child process with OPENBLAS_NUM_THREADS and
TILELANG_NUM_THREADS set to it, so both sides use the same number of cores. Cases:
square n in {256, 512, 1024, 2048, 4096}, ragged {1000, 1023, 1025, 257x4097x513}, with
fp32 and fp16 inputs (fp16 is compared with numpy's fp32 sgemm and with its
`astype(float32) @` path; numpy has no fast fp16 matmul); the user kernel
examples/gemm_bias_relu.tl and fp8 at n = 2048; and the seed's case, 8192^3 fp16 on all
threads (run, or extrapolated from n = 2048 with --quick).

Every side is timed in the same alternating turns as the host's FMA loop on the same
threads (`hostpeaks.FmaProbe`), so each figure is printed as a fraction of the FMA peak
measured beside it, and as a ratio to numpy. Figures are medians over the turns (the
best turn is kept in results.jsonl). One thread is timed by CPU time, several by the
wall clock: on a shared machine run the latter under `chrt -f 1` or when it is quiet.

    python benchmarks/gemm.py [--quick] [--threads 1,2] [--sizes 256,512] [--repeats 5]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, report  # noqa: E402

SQUARE = (256, 512, 1024, 2048, 4096)
RAGGED = ((1000, 1000, 1000), (1023, 1023, 1023), (1025, 1025, 1025), (257, 4097, 513))
SEED_N = 8192
SEED_TARGET_S = 8.1


def cases(sizes, repeats: int, extras: bool) -> list[dict]:
    shapes = [(n, n, n) for n in sizes] + [s for s in RAGGED if extras]
    out = []
    for m, n, k in shapes:
        # every case gets enough turns for its best time to be a quiet one (a 2048^3 run
        # takes ~0.17 s); only the 4096^3 cases (1.4 s a run) get fewer
        reps = repeats if m * n * k <= 2048 ** 3 else max(2, repeats // 2)
        for precision in ("fp32", "fp16"):
            out.append({"kind": "library", "precision": precision, "m": m, "n": n, "k": k,
                        "repeats": reps})
    if extras:
        user = str(ROOT / "examples" / "gemm_bias_relu.tl")
        out.append({"kind": "user", "precision": "fp32", "m": 2048, "n": 2048, "k": 2048,
                    "repeats": repeats, "path": user})
        out.append({"kind": "fp8", "precision": "fp32", "m": 2048, "n": 2048, "k": 2048,
                    "repeats": repeats})
    return out


def run_child(threads: int, case_list: list[dict]) -> list[dict]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads),
               TILELANG_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gemm_child.py"),
                           json.dumps(case_list)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark child failed:\n{proc.stdout}\n{proc.stderr}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def gflops(r: dict, seconds) -> float:
    """GFLOP/s of the median of `seconds` (a list of turns) or of one time."""
    if isinstance(seconds, list):
        seconds = statistics.median(seconds)
    return 2.0 * r["m"] * r["n"] * r["k"] / seconds / 1e9


def peak_gflops(r: dict) -> float:
    """The FMA loop's median GFLOP/s over the case's turns."""
    return r["peak_flops"] / statistics.median(r["peak_s"]) / 1e9


def show(r: dict, threads: int) -> None:
    shape = f"{r['m']}x{r['n']}x{r['k']}"
    name = {"library": f"ops.gemm {r['precision']}-in", "user": "gemm+bias+relu (.tl)",
            "fp8": "fp8_gemm (block-scaled)"}[r["kind"]]
    extra = {"threads": threads, "rel_err": r["rel_err"], "turns": len(r["tl_s"]),
             "best_gflops": gflops(r, min(r["tl_s"])),
             "numpy_best_gflops": gflops(r, min(r["numpy_s"])),
             "peak_best_gflops": r["peak_flops"] / min(r["peak_s"]) / 1e9}
    report("gemm", f"{name} {shape} {threads}T GFLOP/s", gflops(r, r["tl_s"]), "GFLOP/s",
           baseline=gflops(r, r["numpy_s"]), baseline_name="numpy fp32 sgemm",
           peak=peak_gflops(r), peak_name=f"FMA peak {threads}T",
           higher_is_better=True, extra=extra)
    if "astype_s" in r:
        report("gemm", f"{name} {shape} {threads}T vs astype(float32) @",
               gflops(r, r["tl_s"]), "GFLOP/s", baseline=gflops(r, r["astype_s"]),
               baseline_name="numpy astype(float32) @", higher_is_better=True, extra=extra)
    if "fp32_kernel_s" in r:
        report("gemm", f"{name} {shape} {threads}T vs the fp32 library kernel",
               gflops(r, r["tl_s"]), "GFLOP/s", baseline=gflops(r, r["fp32_kernel_s"]),
               baseline_name="tilelang fp32 gemm", higher_is_better=True, extra=extra)


def seed_case(threads: int, quick: bool, results: list[dict]) -> None:
    """8192^3 fp16-in on all threads: run it, or extrapolate from the fp16 n=2048 case."""
    if quick:
        base = next((r for r in results if r["kind"] == "library" and r["precision"] == "fp16"
                     and r["m"] == r["n"] == r["k"] == 2048), None)
        if base is None:
            return
        scale = (SEED_N / 2048) ** 3
        r = {"tl_s": statistics.median(base["tl_s"]) * scale,
             "astype_s": statistics.median(base["astype_s"]) * scale,
             "numpy_fp16_s": None}
        how = "extrapolated from n=2048"
    else:
        r = run_child(threads, [{"kind": "seed", "precision": "fp16", "n": SEED_N}])[0]
        how = "measured"
    name = f"seed case {SEED_N}^3 fp16-in {threads}T"
    report("gemm", f"{name} seconds ({how})", r["tl_s"], "s", target=SEED_TARGET_S)
    report("gemm", f"{name} speed-up over numpy astype(float32) @", r["astype_s"] / r["tl_s"],
           "x", baseline=1.0, baseline_name=f"astype path {r['astype_s']:.2f} s",
           higher_is_better=True)
    if r["numpy_fp16_s"]:
        report("gemm", f"{name} speed-up over numpy fp16 matmul", r["numpy_fp16_s"] / r["tl_s"],
               "x", baseline=1.0, higher_is_better=True,
               baseline_name=f"np.matmul fp16, {r['numpy_fp16_s']:.0f} s extrapolated from n=1024")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="n <= 2048 and the seed case extrapolated")
    ap.add_argument("--threads", default=f"1,{os.cpu_count() or 1}")
    ap.add_argument("--sizes", default=None, help="square sizes, comma-separated")
    ap.add_argument("--repeats", type=int, default=5,
                    help="timed runs per side (twice as many with several threads)")
    ap.add_argument("--no-extras", action="store_true",
                    help="square sizes only (no ragged, user-kernel, fp8 or seed cases)")
    opts = ap.parse_args()
    sizes = [int(s) for s in opts.sizes.split(",")] if opts.sizes else \
        [n for n in SQUARE if not (opts.quick and n > 2048)]
    threads = sorted({int(t) for t in opts.threads.split(",")})
    for t in threads:
        print(f"== {t} thread(s): tilelang and numpy each on {t} core(s)", flush=True)
        results = run_child(t, cases(sizes, opts.repeats, not opts.no_extras))
        for r in results:
            show(r, t)
        if t == max(threads) and not opts.no_extras:
            seed_case(t, opts.quick, results)


if __name__ == "__main__":
    main()
