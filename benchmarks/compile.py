"""Compile-time benchmark for examples/gemm.tl, each measurement in a fresh process.

- cold: the compile of examples/gemm.tl into an empty cache directory (parse, passes,
  LLVM codegen, object emission, cache store, load): target <= 1 s;
- warm: the same call when the cache already holds the artifact (no compiling, only the
  cache lookup and the load): target <= 30 ms.

Both are timed inside the child from just before `import tilelang` to the return of
`tilelang.compile(...)`; interpreter start-up and `import numpy` (which any caller passing
arrays has already paid) come before and are excluded. The baseline is `import numpy`
timed the same way in a fresh process: the cost of loading a widely used compiled
Python library on this machine, measured in the same run. The children keep Python's
bytecode cache (`__pycache__`) as an installed package does, even where
PYTHONDONTWRITEBYTECODE is set; a first untimed run fills it.

    python benchmarks/compile.py [--repeats N]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, report, run_python  # noqa: E402

GEMM = str(ROOT / "examples" / "gemm.tl")

CHILD = """
import json, time
import numpy            # the caller's own import: a user passing arrays has it loaded
t0 = time.perf_counter()
import tilelang
t1 = time.perf_counter()
kernel = tilelang.compile({path!r})
t2 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "compile": t2 - t1, "total": t2 - t0}}))
"""

NUMPY_CHILD = """
import json, time
t0 = time.perf_counter()
import numpy
print(json.dumps({"total": time.perf_counter() - t0}))
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="cold and warm compile time of gemm.tl")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)

    child = CHILD.format(path=GEMM)
    with tempfile.TemporaryDirectory(prefix="tilelang-bench-") as cache:
        run_python(child, env={"TILELANG_CACHE_DIR": cache})   # fills __pycache__
    baseline = statistics.median(run_python(NUMPY_CHILD)["total"]
                                 for _ in range(args.repeats))

    cold = []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory(prefix="tilelang-bench-") as cache:
            cold.append(run_python(child, env={"TILELANG_CACHE_DIR": cache,
                                               "TILELANG_DISABLE_CACHE": "0"}))
    with tempfile.TemporaryDirectory(prefix="tilelang-bench-") as cache:
        env = {"TILELANG_CACHE_DIR": cache, "TILELANG_DISABLE_CACHE": "0"}
        run_python(child, env=env)                      # fills the cache
        warm = [run_python(child, env=env) for _ in range(args.repeats)]

    def med(rows, key):
        return statistics.median(r[key] for r in rows)

    print(f"examples/gemm.tl, median of {args.repeats} fresh processes each")
    for label, rows in (("cold", cold), ("warm", warm)):
        print(f"  {label}: import tilelang {med(rows, 'import') * 1e3:.1f} ms, "
              f"tilelang.compile {med(rows, 'compile') * 1e3:.1f} ms")
    report("compile", "cold compile (import + compile)", med(cold, "total"), "s",
           target=1.0, baseline=baseline, baseline_name="import numpy",
           extra={"import": med(cold, "import"), "compile": med(cold, "compile")})
    report("compile", "warm load (import + cached compile)", med(warm, "total"), "s",
           target=0.030, baseline=baseline, baseline_name="import numpy",
           extra={"import": med(warm, "import"), "compile": med(warm, "compile")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
