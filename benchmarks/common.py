"""Shared helpers for the benchmarks: timing, machine details, reporting.

Every benchmark prints its figure beside the baseline measured in the same run (and the
ratio between them) and appends one JSON line per figure to benchmarks/results.jsonl,
with the machine's details, so that results from different machines and commits can be
compared later. results.jsonl is a local log, not part of the repository.
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
RESULTS = BENCH_DIR / "results.jsonl"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def machine_info() -> dict:
    """Platform, CPU, core count and the versions that matter for the figures."""
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "num_threads": os.environ.get("TILELANG_NUM_THREADS"),
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "llvmlite": _version("llvmlite"),
        "tilelang": _version("tilelang"),
        "commit": _git_commit(),
    }


def median_time(fn, repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time of fn() in seconds over `repeats` calls after `warmup` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run_python(code: str, env: dict | None = None, timeout: float = 300,
               bytecode_cache: bool = True) -> dict:
    """Runs `code` in a fresh interpreter (cwd = repository root) and returns the JSON
    object it prints on its last line of stdout. The child measures its own times, so
    interpreter start-up is not part of them unless the child says so.

    With `bytecode_cache` (the default) the child may read and write `__pycache__`
    even where PYTHONDONTWRITEBYTECODE is set, as an installed package would: otherwise
    every import recompiles its module from source and start-up figures measure that."""
    full_env = dict(os.environ)
    if bytecode_cache:
        full_env.pop("PYTHONDONTWRITEBYTECODE", None)
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=full_env,
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark child failed (exit {proc.returncode}):\n"
                           f"{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _fmt(value: float, unit: str) -> str:
    if unit == "s":
        if value < 1e-3:
            return f"{value * 1e6:.1f} us"
        if value < 1:
            return f"{value * 1e3:.2f} ms"
        return f"{value:.3f} s"
    return f"{value:.4g} {unit}"


def report(benchmark: str, metric: str, value: float, unit: str, *,
           baseline: float | None = None, baseline_name: str = "",
           target: float | None = None, higher_is_better: bool = False,
           peak: float | None = None, peak_name: str = "",
           extra: dict | None = None) -> dict:
    """Prints one figure with its target, its fraction of the machine's peak measured
    in the same run (`peak`, same unit) and its ratio to the baseline, and appends it
    (with machine details) to benchmarks/results.jsonl. Returns the record."""
    parts = [f"{metric}: {_fmt(value, unit)}"]
    if peak is not None and peak > 0:
        parts.append(f"= {100 * value / peak:.1f}% of {peak_name} {_fmt(peak, unit)}")
    met = None
    if target is not None:
        met = value >= target if higher_is_better else value <= target
        parts.append(f"target {'>=' if higher_is_better else '<='} {_fmt(target, unit)} "
                     f"[{'met' if met else 'MISSED'}]")
    ratio = None
    if baseline is not None and baseline > 0:
        ratio = value / baseline
        parts.append(f"baseline ({baseline_name}) {_fmt(baseline, unit)}, ratio {ratio:.2f}x")
    print("  ".join(parts), flush=True)
    record = {
        "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "benchmark": benchmark, "metric": metric, "value": value, "unit": unit,
        "target": target, "target_met": met, "higher_is_better": higher_is_better,
        "baseline_name": baseline_name or None, "baseline": baseline, "ratio": ratio,
        "peak_name": peak_name or None, "peak": peak,
        "fraction_of_peak": value / peak if peak else None,
        "machine": machine_info(), **({"extra": extra} if extra else {}),
    }
    with open(RESULTS, "a") as f:
        f.write(json.dumps(record) + "\n")
    return record
