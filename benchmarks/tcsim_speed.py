"""Simulator speed: CPU seconds per simulated launch on the fidelity table's kernels,
this tree's engine against a baseline commit's, in the same run.

    python benchmarks/tcsim_speed.py [--baseline 7e2729b] [--turns 2] [--full]

The baseline is the engine as the mechanisms left it (commit 7e2729b, before the
speed-up); its tilelang package is extracted with `git archive` into a temporary
directory. Each case is compiled once, by this tree, into an artifact file that a child
interpreter of either side loads and simulates, alternating turn by turn (the machine
is shared: each side's figure is its best turn). Every case must report
the same cycle count on both sides: the speed-up may change how the simulation runs,
never what it predicts (tests/tcsim/test_engine_counts.py pins the counts too). Both
sides run the config without the L2 latency of scalar loads, which the baseline does
not have (a scalar load there always takes the DMA latency).
Without `--full` the shapes are the table's kernels at a quarter to a sixteenth of
the table's work, so a turn takes minutes, not the table's ten.

CPU times on a shared machine spread by tens of percent from run to run. With
`--instructions` (valgrind on the PATH) each side's launch is also counted in executed
machine instructions (cachegrind: one child that simulates the launch, less one that
only loads it), which repeat to the last digit, and their ratio is printed beside the
times'.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, report  # noqa: E402

CHILD = r'''
import json, sys, time
import numpy as np
import tilelang.runtime.tcsim.sim as S
from tilelang.runtime.tcsim import run
from tilelang.targets.tcsim.artifact import load
from tilelang.targets.tcsim.config import get_config
S.CLOCK_TOLERANCE = float(sys.argv[3])       # both engines under this tree's clock policy
art = load(sys.argv[1])
cfg = get_config(art.config_name)
if getattr(cfg, "l2_latency", 0):            # the baseline's rule: every scalar load
    cfg = cfg.with_(l2_latency=0)            # takes the DMA latency
args = [np.load(a) if isinstance(a, str) else (tuple(a[0]), a[1])
        for a in json.loads(open(sys.argv[2]).read())]
if sys.argv[4:] == ["load-only"]:             # the part an instruction count subtracts
    sys.exit(0)
t = time.process_time()
rep = run(art, *args, config=cfg, mode="timing")
print(json.dumps({"cpu": time.process_time() - t, "cycles": rep.cycles}))
'''
CASES = ("gemm", "deepgemm", "attention", "copy")


def prepare(case: str, full: bool, into: Path) -> tuple[str, str]:
    """Compile the case with this tree's compiler once; both engines run the same
    artifact (file) on the same arguments (shapes, and the arrays read by value)."""
    import numpy as np
    import tcsim_fidelity as F
    build = {"gemm": F.gemm(8192 if full else 4096, 4, 8, (1, 2)),
             "deepgemm": F.deepgemm(4096, 7168, 2048) if full
             else F.deepgemm(2048, 2048, 2048),
             "attention": F.attention("ws", 128, False, 2048 if full else 512),
             "copy": F.stream_copy(1 << (28 if full else 24))}[case]
    art, args, _ = build()
    art_path, args_path = into / f"{case}.tcsim", into / f"{case}.json"
    art.save(art_path)
    spec = []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            np.save(into / f"{case}_{i}.npy", a)
            spec.append(str(into / f"{case}_{i}.npy"))
        else:
            spec.append([list(a[0]), a[1]])
    args_path.write_text(json.dumps(spec))
    return str(art_path), str(args_path)


def baseline_tree(commit: str, into: str) -> str:
    """The baseline's tilelang package, extracted from git."""
    data = subprocess.run(["git", "archive", "--format=tar", commit, "tilelang"], cwd=ROOT,
                          check=True, capture_output=True).stdout
    tar_path = Path(into) / "base.tar"
    tar_path.write_bytes(data)
    with tarfile.open(tar_path) as tar:
        tar.extractall(into)
    return into


def turn(tree: str, art: str, args: str) -> dict:
    env = dict(os.environ, PYTHONPATH=tree)
    from tilelang.runtime.tcsim.sim import CLOCK_TOLERANCE
    out = subprocess.run([sys.executable, "-c", CHILD, art, args, str(CLOCK_TOLERANCE)],
                         cwd=tree, env=env, capture_output=True, text=True, timeout=3600)
    if out.returncode:
        raise RuntimeError(f"{art} under {tree} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def instructions(tree: str, art: str, args: str) -> int:
    """Machine instructions a launch of `art` executes under `tree`'s engine: a child
    that simulates it, less one that only loads it (cachegrind, no cache model). The
    count repeats exactly when nothing else varies: one interpreter, fixed string
    hashes, one BLAS thread, no cycle collector, a fixed working directory."""
    from tilelang.runtime.tcsim.sim import CLOCK_TOLERANCE
    env = dict(os.environ, PYTHONPATH=tree, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1")
    child = "import gc; gc.disable()\n" + CHILD
    counts = []
    for extra in (["load-only"], []):
        out = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                              "--cachegrind-out-file=/dev/null", sys.executable, "-c",
                              child, art, args, str(CLOCK_TOLERANCE)] + extra,
                             cwd=tree, env=env, capture_output=True, text=True,
                             timeout=7200)
        found = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
        if out.returncode or not found:
            raise RuntimeError(f"{art} under {tree}: cachegrind failed:\n{out.stderr[-2000:]}")
        counts.append(int(found.group(1).replace(",", "")))
    return counts[1] - counts[0]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", default="7e2729b")
    ap.add_argument("--turns", type=int, default=2)
    ap.add_argument("--full", action="store_true", help="the table's own shapes")
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    ap.add_argument("--instructions", action="store_true",
                    help="also count each side's executed instructions (valgrind)")
    args = ap.parse_args(argv)
    if args.instructions and shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind on the PATH")
    with tempfile.TemporaryDirectory() as tmp:
        base = baseline_tree(args.baseline, tmp)
        ratios = []
        for case in args.cases:
            art, spec = prepare(case, args.full, Path(tmp))
            new_t, base_t, cycles = [], [], set()
            for _ in range(args.turns):               # alternate the sides
                b = turn(base, art, spec)
                n = turn(str(ROOT), art, spec)
                base_t.append(b["cpu"])
                new_t.append(n["cpu"])
                cycles |= {b["cycles"], n["cycles"]}
            if len(cycles) != 1:
                raise SystemExit(f"{case}: cycle counts differ: {sorted(cycles)}")
            ratio = min(base_t) / min(new_t)
            ratios.append(ratio)
            extra = {"cycles": cycles.pop(), "full": args.full,
                     "turns_new": new_t, "turns_baseline": base_t}
            if args.instructions:
                extra["instructions_baseline"] = instructions(base, art, spec)
                extra["instructions_new"] = instructions(str(ROOT), art, spec)
            report("tcsim_speed", f"{case}: CPU seconds per launch", min(new_t), "s",
                   baseline=min(base_t), baseline_name=f"engine of {args.baseline}",
                   extra=extra)
            print(f"  {case}: {ratio:.2f}x faster, same cycle count")
            if args.instructions:
                b, n = extra["instructions_baseline"], extra["instructions_new"]
                print(f"  {case}: {n / 1e9:.3f} G instructions against {b / 1e9:.3f} G: "
                      f"{b / n:.2f}x fewer")
        geo = 1.0
        for r in ratios:
            geo *= r
        geo **= 1.0 / len(ratios)
        print(f"speed-up over the baseline engine: geometric mean {geo:.2f}x, "
              f"lowest {min(ratios):.2f}x")


if __name__ == "__main__":
    main()
