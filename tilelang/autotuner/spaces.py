"""Default search spaces, from a kernel's knobs and the target.

    configs = default_configs("tilelang/ops/gemm.tl", M=1024, N=1024, K=1024)

A GEMM-shaped kernel (its `T.gemm` block names BLOCK_M / BLOCK_N / BLOCK_K, found by
`profiler.knobs`) gets the block shapes its target's runner proposes (`Runner.gemm_blocks`:
whole register tiles up to the caches' reach on the CPU, MMA-atom-friendly powers of two
on tcsim), each with the pipeline depths the runner lists (`pipeline_depths`). An
elementwise kernel (one grid block size) gets 256 to 4096 elements a block. Sizes clip
the space (no block larger than its dimension's rounded-up size), so small problems get
small spaces.
"""
from __future__ import annotations

import os

from .. import targets

_LIBRARY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "ops")


def default_configs(kernel="gemm", target: str = "cpu", **sizes) -> list[dict]:
    """The default space of `kernel`: "gemm" (the library's `ops/gemm.tl`), a `.tl`
    path or text, or a compiled `.tl` kernel; `sizes` as the kernel names them."""
    from ..profiler.knobs import from_source
    text = _text(kernel)
    knobs = from_source(text)
    m, n, k = (_size(sizes, names) for names in (("M", "m"), ("N", "n"), ("K", "k")))
    roles = ("block_m", "block_n", "block_k")
    if all(knobs.name(r) in knobs.settable for r in roles):
        runner = targets.get(target).profile_runner()
        names = [knobs.name(r) for r in roles]
        out = [dict(zip(names, combo[:3])) for combo in runner.gemm_blocks(m, n, k)]
        stages = knobs.name("num_stages")
        if runner.pipeline_depths and stages in knobs.settable:
            out = [{**c, stages: s} for c in out for s in runner.pipeline_depths]
        if out:
            return out
    block = knobs.name("block")
    if block in knobs.settable:
        return [{block: b} for b in (256, 512, 1024, 2048, 4096)]
    raise ValueError("no default search space: the kernel has no block-size constants "
                     "(BLOCK_M/BLOCK_N/BLOCK_K of a T.gemm, or the grid's block size)")


def _text(kernel) -> str:
    from ..decorators import KernelFunction, _source_text
    if isinstance(kernel, KernelFunction) and kernel._text is not None:
        return kernel._text
    if kernel == "gemm":
        kernel = os.path.join(_LIBRARY, "gemm.tl")
    return _source_text(kernel)[0]


def _size(sizes: dict, names) -> int | None:
    for name in names:
        if name in sizes:
            return int(sizes[name])
    return None
