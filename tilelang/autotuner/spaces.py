"""Default search spaces, from a kernel's knobs and the target.

    configs = default_configs("tilelang/ops/gemm.tl", M=1024, N=1024, K=1024)

A GEMM-shaped kernel (its `T.gemm` block names BLOCK_M / BLOCK_N / BLOCK_K, found by
`profiler.knobs`) gets, on the CPU, block rows in multiples of the register tile's MR
and columns in multiples of its NR (whole micro-kernels), from two register tiles to
the caches' reach, and K blocks of 64 to 512; on tcsim, MMA-atom-friendly powers of two
and 1 to 4 pipeline stages. An elementwise kernel (one grid block size) gets 256 to
4096 elements a block. Sizes clip the space (no block larger than its dimension's
rounded-up size), so small problems get small spaces.
"""
from __future__ import annotations

import itertools
import os

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
        name = _target_name(target)
        names = [knobs.name(r) for r in roles]
        out = [dict(zip(names, combo[:3])) for combo in _GEMM_SPACES[name](m, n, k)]
        stages = knobs.name("num_stages")
        if _STAGES.get(name) and stages in knobs.settable:
            out = [{**c, stages: s} for c in out for s in _STAGES[name]]
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


def _target_name(target) -> str:
    """The registry name of the target a spec (or Target) names."""
    from .. import targets
    return targets.get(target).name


def _upto(values, size, step):
    if size is None:
        return list(values)
    cap = -(-size // step) * step
    kept = [v for v in values if v <= cap]
    return kept or [min(values)]


def _gemm_cpu(m, n, k) -> list:
    from ..targets.cpu.machine import host
    mr, nr = host().register_tile(32)
    bm = _upto([mr * f for f in (2, 4, 8, 16, 32)], m, mr)
    bn = _upto([nr * f for f in (2, 4, 8, 16, 22)], n, nr)
    bk = _upto([64, 128, 256, 512], k, 1)
    return list(itertools.product(bm, bn, bk))


def _gemm_tcsim(m, n, k) -> list:
    bm = _upto([64, 128, 256], m, 64)
    bn = _upto([64, 128, 256], n, 64)
    bk = _upto([32, 64], k, 32)
    return list(itertools.product(bm, bn, bk))


# the default GEMM spaces and pipeline depths of each target, by its registry name
_GEMM_SPACES = {"cpu": _gemm_cpu, "tcsim": _gemm_tcsim}
_STAGES = {"tcsim": (1, 2, 3, 4)}
