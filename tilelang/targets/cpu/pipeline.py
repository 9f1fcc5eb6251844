"""The cpu target's pass pipeline: tile IR down to the loops the LLVM codegen takes.

Its output is the codegen's input contract (docs/interfaces.md): no tile ops, every
possibly out-of-bounds global access guarded.
"""
from __future__ import annotations

from functools import partial

from ...passes.dce import dce
from ...passes.layout import layout
from ...passes.lower_tile_ops import lower_tile_ops
from ...passes.manager import Pass
from ...passes.memory_reuse import memory_reuse
from ...passes.predicate import predicate
from ...passes.simplify import simplify, simplify_lowered
from ...passes.tiling import tiling
from ...passes.vectorize import vectorize
from ...passes.versioning import versioning


def cpu_pipeline(machine) -> list[Pass]:
    """The passes, with the register tiles and panels of `machine` (a CpuMachine)."""
    return [
        Pass("simplify", simplify,
             "fold constants, apply algebraic identities, drop trivial ifs and loops"),
        Pass("tiling", partial(tiling, machine=machine),
             "split T.gemm into the CPU's register tiles (micro-kernel loop nests, tails)"),
        Pass("layout", partial(layout, machine=machine),
             "lay out shared gemm operands in register-tile panels; their T.copy packs them"),
        Pass("lower_tile_ops", lower_tile_ops,
             "turn T.copy / T.gemm / T.fill / T.reduce_* / tile atomics into loops"),
        Pass("predicate", predicate,
             "guard global accesses that may fall outside their tensor (ragged tiles)"),
        Pass("versioning", versioning,
             "a guard-free copy of each constant loop nest, taken when its tile is in bounds"),
        # before vectorize, which forgets which loops were pipelined (their stage buffers
        # stay live for the whole loop); the passes after it only drop buffers, never add
        Pass("memory_reuse", memory_reuse,
             "place block-local buffers with disjoint lifetimes in one arena per scope"),
        Pass("vectorize", vectorize,
             "innermost T.Parallel loops become SIMD loops, the other parallel loops serial"),
        Pass("simplify_lowered", simplify_lowered,
             "simplification again, on the index arithmetic of the lowered loops"),
        Pass("dce", dce, "remove unused lets, never-read buffers and empty statements"),
    ]
