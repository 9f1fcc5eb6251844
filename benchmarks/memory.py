"""Block-local memory of every example kernel, with and without the memory_reuse pass.

For each kernel of examples/*.tl (default constants) and each memory scope, the bytes of
its arena compiled with `--no-memory-reuse` (the baseline, every buffer side by side) and
with the pass (buffers with disjoint lifetimes share bytes), and the saving. Both come
from compiling the kernel in this run. A last line gives examples/gemm_epilogue.tl's
shared arena under the planner's tcsim rules, where every pipeline stage of a buffer is
a separate copy (the T.Pipelined ring the tcsim codegen builds).

    python benchmarks/memory.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, report  # noqa: E402

from tilelang.driver import make_options, parse, read_source  # noqa: E402
from tilelang.driver.stages import memory_report  # noqa: E402

EXAMPLES = ROOT / "examples"


def _module(path: Path):
    return parse(read_source(str(path)), str(path), make_options())


def _figures(path: Path) -> list[tuple[str, str, int, int]]:
    """(kernel, scope, bytes without reuse, bytes with reuse) of one example file."""
    module = _module(path)
    on = memory_report(module, make_options(memory_reuse=True))
    off = memory_report(module, make_options(memory_reuse=False))
    rows = []
    for k_on, k_off in zip(on.kernels, off.kernels):
        for s_on in k_on.scopes:
            s_off = k_off.scope(s_on.scope)
            rows.append((k_on.name, s_on.scope, s_off.after, s_on.after))
    return rows


def _tcsim_epilogue() -> tuple[int, int]:
    """gemm_epilogue's shared arena (before, after) with pipeline stages as copies."""
    from tilelang.passes.liveness import kernel_of
    from tilelang.driver import make_options
    from tilelang.driver.stages import lower
    from tilelang.passes.memory_reuse import TCSIM_RULES, plan_kernel
    tile_ir = lower(_module(EXAMPLES / "gemm_epilogue.tl"), make_options(target="tcsim"), until="simplify")
    arenas = plan_kernel(kernel_of(tile_ir.funcs[0].body), TCSIM_RULES)
    shared = next(a for a in arenas if a.scope == "shared")
    return shared.before, shared.after


def main() -> None:
    header = f"{'example':<22} {'kernel':<16} {'scope':<9} {'without':>9} {'with':>9} " \
             f"{'saving':>7}"
    print(header)
    print("-" * len(header))
    total_off = total_on = 0
    for path in sorted(EXAMPLES.glob("*.tl")):
        for kernel, scope, off, on in _figures(path):
            total_off, total_on = total_off + off, total_on + on
            saving = 0.0 if off == 0 else 100.0 * (1 - on / off)
            print(f"{path.name:<22} {kernel:<16} {scope:<9} {off:>9} {on:>9} {saving:>6.1f}%")
    print("-" * len(header))
    print(f"{'all examples':<48} {total_off:>9} {total_on:>9} "
          f"{100.0 * (1 - total_on / total_off):>6.1f}%")
    print()
    report("memory", "block-local bytes of all example kernels", total_on, "B",
           baseline=total_off, baseline_name="no reuse")
    before, after = _tcsim_epilogue()
    print(f"{'gemm_epilogue.tl':<22} {'(tcsim rings)':<16} {'shared':<9} {before:>9} "
          f"{after:>9} {100.0 * (1 - after / before):>6.1f}%")
    report("memory", "gemm_epilogue shared bytes, stages as copies (tcsim rules)", after, "B",
           baseline=before, baseline_name="no reuse", target=0.6 * before)


if __name__ == "__main__":
    main()
