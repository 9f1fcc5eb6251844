"""Where buffers live on the target machine, and the staging copies its memories need.

GPU-like configs (SMEM, RF) need none: shared buffers are SMEM, fragments RF, and every
engine reaches both. Split-buffer configs (Ascend-like: L1, L0A, L0B, L0C, UB) do: MMA
operands must sit in L0A / L0B, accumulators in L0C, DMA reaches only L1 and UB, VEC only
UB and L0C. The plan puts a shared buffer in the DMA level that feeds the cube (L1) only
when it is a T.gemm operand, and in the vector buffer (UB) otherwise; fragments go to UB,
T.gemm accumulators to L0C. Where an engine cannot reach a buffer, the lowering copies
through a staging buffer with COPY (the on-chip mover, which reaches every level).
"""
from __future__ import annotations


class LevelPlan:
    def __init__(self, cfg):
        names = [lv.name for lv in cfg.levels]
        self.cfg = cfg
        self.dma = set(cfg.dma_levels)
        self.vec = set(cfg.vec_levels)
        self.mma_ab = set(cfg.mma_ab_levels)
        self.mma_c = set(cfg.mma_c_levels)
        gpu = "SMEM" in names and "RF" in names
        self.fragment = "RF" if gpu else _first(cfg.vec_levels, self.dma)
        self.shared_gemm = "SMEM" if gpu else _first(cfg.dma_levels, set(names) - self.vec)
        self.shared_other = "SMEM" if gpu else self.fragment
        self.acc = self.fragment if self.fragment in self.mma_c else cfg.mma_c_levels[0]
        # A operands stage into the first MMA operand level, B into the last
        self.stage_a, self.stage_b = cfg.mma_ab_levels[0], cfg.mma_ab_levels[-1]

    def uses_arena(self, scope: str) -> bool:
        """Whether the memory_reuse plan's offsets of `scope` hold on this machine: on
        GPU-like configs a scope's arena is one level (shared: SMEM, fragment: RF);
        `local` buffers also live in RF and would collide with the fragment arena, and
        split-buffer configs scatter a scope over several levels — those are unplanned."""
        return self.fragment == "RF" and scope in ("shared", "fragment")

    def level(self, scope: str, name: str, gemm_operands: set, accumulators: set) -> str:
        if name in accumulators:
            return self.acc
        if scope == "shared":
            return self.shared_gemm if name in gemm_operands else self.shared_other
        return self.fragment


def _first(levels, prefer: set) -> str:
    for lv in levels:
        if lv in prefer:
            return lv
    return levels[0]
