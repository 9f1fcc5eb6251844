"""What a vector-unit instruction costs, per op: the pipe it runs on and how many
elements that pipe takes per clock.

A GPU's SM runs plain float arithmetic on its FMA lanes (H100: 128 per clock), special
functions on the much narrower SFU/MUFU pipe (16 per clock: exp2, log2, rsqrt, rcp,
tanh), conversions between widths on a pipe of their own, and moves between registers
and shared memory through the shared-memory path (bytes per clock). An instruction
takes as long as its slowest pipe: `ceil(elements / rate)` for each pipe it uses, the
maximum of those. A config that leaves a rate at 0 runs that pipe at the lane rate (the
old one-rate model, which `tiny` keeps so its tests state round numbers).
"""
from __future__ import annotations

import math

from ...dtypes import nbytes

# special functions: the SFU pipe (sigmoid is an exp2 and a reciprocal)
SFU_OPS = {"EXP": 1, "EXP2": 1, "LOG": 1, "LOG2": 1, "SQRT": 1, "RSQRT": 1, "TANH": 1,
           "ERF": 1, "DIV": 1, "FDIV": 1, "SIGMOID": 2, "SIN": 1, "COS": 1, "TAN": 2,
           "POW": 2}
_NARROW = {"bfloat16", "float16", "float8_e4m3fn", "float8_e4m3", "float8_e5m2", "int8",
           "uint8", "int16", "uint16"}


def vec_cycles(cfg, op: str, elems: int, dst, srcs) -> float:
    """Busy cycles of VEC instruction `op` over `elems` elements; `dst` and `srcs` are
    its decoded tile operands (TileSpec: `.decl.dtype`, `.decl.level`)."""
    lanes = cfg.vec_elems_per_clk
    pipes = [elems / lanes]
    base = op[4:] if op.startswith("VEC.") else op
    n_sfu = SFU_OPS.get(base, 0)
    if n_sfu:
        pipes.append(elems * n_sfu / (cfg.sfu_elems_per_clk or lanes))
    if cfg.cvt_elems_per_clk and _converts(dst, srcs):
        pipes.append(elems / cfg.cvt_elems_per_clk)
    if cfg.smem_bytes_per_clk and op in ("COPY", "ACC.READ"):
        moved = sum(t.elems * nbytes(t.decl.dtype) for t in (dst,) + tuple(srcs)
                    if t.decl.level != "RF")
        if moved:
            pipes.append(moved / cfg.smem_bytes_per_clk)
    return max(cfg.issue_interval, math.ceil(max(pipes)))


def _converts(dst, srcs) -> bool:
    """A result written in a different width than its tile operands (fp32 scores to a
    bf16 tile, an fp8 tile widened to fp32)."""
    out = dst.decl.dtype
    return any((t.decl.dtype in _NARROW) != (out in _NARROW) for t in srcs)
