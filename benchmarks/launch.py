"""Per-call launch overhead: a trivial kernel (C = A + B) on 16-element float32 arrays,
called through the runtime, beside `numpy.add(a, b, out=c)` on the same arrays.

    python benchmarks/launch.py [--kernel tl|c] [--calls 1000] [--batches 50]

`--kernel tl` (the default) compiles examples/vector_add.tl; `--kernel c` uses a
hand-written C library following the kernel ABI (docs/interfaces.md), built with the
system C compiler, which isolates the runtime's own overhead: argument checks, packing
and the two foreign calls. Prints the medians and their ratio, and appends a JSON line to
benchmarks/results.jsonl (benchmarks/common.py).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, report  # noqa: E402

MANIFEST = {
    "format": 1, "compiler_version": "0.1.0",
    "target": {"triple": "", "cpu": "", "features": ""},
    "kernels": [{"name": "vadd",
                 "params": [{"name": "A", "kind": "tensor", "dtype": "float32", "shape": ["N"]},
                            {"name": "B", "kind": "tensor", "dtype": "float32", "shape": ["N"]},
                            {"name": "C", "kind": "tensor", "dtype": "float32", "shape": ["N"]}],
                 "symbols": ["N"], "workspaces": [], "grid": ["(N + 1023) // 1024"],
                 "threads": 1}]}

SOURCE = r"""
#include <stdint.h>
int64_t vadd__num_blocks(const int64_t *a) { return (a[3] + 1023) / 1024; }
void vadd__blocks(const int64_t *a, int64_t begin, int64_t end) {
    const float *A = (const float *)a[0], *B = (const float *)a[1];
    float *C = (float *)a[2];
    for (int64_t i = begin * 1024; i < end * 1024 && i < a[3]; i++) C[i] = A[i] + B[i];
}
const char *tilelang_manifest(void) { return MANIFEST; }
"""


def build_kernel(directory: str) -> str:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        sys.exit("benchmarks/launch.py needs a C compiler (cc) for its kernel")
    text = json.dumps(MANIFEST).replace("\\", "\\\\").replace('"', '\\"')
    c_path, so_path = os.path.join(directory, "vadd.c"), os.path.join(directory, "vadd.so")
    with open(c_path, "w") as f:
        f.write(f'#define MANIFEST "{text}"\n' + SOURCE)
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", so_path, c_path], check=True)
    return so_path


def tl_kernel():
    """examples/vector_add.tl, compiled (or taken from the cache) by the driver."""
    from tilelang.driver import compile_file
    return compile_file(str(ROOT / "examples" / "vector_add.tl")).vector_add


def median_call_us(fn, calls: int, batches: int) -> float:
    for _ in range(calls):            # warm up: plans, caches, branch predictors
        fn()
    samples = []
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", choices=("tl", "c"), default="tl",
                    help="the compiled .tl vector add, or the hand-written C one")
    ap.add_argument("--calls", type=int, default=100,
                    help="calls per timed batch (short batches: the median skips preemptions)")
    ap.add_argument("--batches", type=int, default=300, help="timed batches (median taken)")
    opts = ap.parse_args()

    from tilelang.runtime.artifact import load
    with tempfile.TemporaryDirectory(prefix="tilelang-bench-") as tmp:
        kernel = tl_kernel() if opts.kernel == "tl" else load(build_kernel(tmp)).vadd
        a = np.arange(16, dtype=np.float32)
        b = np.ones(16, dtype=np.float32)
        c = np.zeros(16, dtype=np.float32)
        kernel(a, b, c)
        assert np.array_equal(c, a + b), "the benchmark kernel computed a wrong result"
        t_kernel = median_call_us(lambda: kernel(a, b, c), opts.calls, opts.batches)
        t_numpy = median_call_us(lambda: np.add(a, b, out=c), opts.calls, opts.batches)

    report("launch", f"per-call overhead (16 x float32 add, {opts.kernel} kernel, median)",
           t_kernel * 1e-6, "s", target=20e-6, baseline=t_numpy * 1e-6,
           baseline_name="numpy.add on the same arrays",
           extra={"kernel": opts.kernel, "calls_per_batch": opts.calls,
                  "batches": opts.batches})

if __name__ == "__main__":
    main()
