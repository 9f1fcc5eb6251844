"""Block-local arenas: one stack region per memory scope, holding the buffers that the
`memory_reuse` pass placed in it (`Alloc.offset` / `Alloc.align`).

The arenas are allocas in the entry block of `name__impl`, so they are made once per call
of `name__blocks` — once per block range a worker thread runs — and reused by every block
of that range. A planned buffer is its arena's base plus its offset; the arena is aligned
to the largest alignment of its buffers and every offset is a multiple of the buffer's
own, so that alignment is what the loads and stores may claim.
"""
from __future__ import annotations

from math import prod

from llvmlite import ir

from ... import dtypes
from ...ir.nodes import Alloc
from ...ir.visitor import walk
from .context import FuncContext, entry_alloca
from .types import I8, I64


def declare_arenas(ctx: FuncContext, kernel) -> None:
    """Allocate (in the entry block) the arena of every scope with planned buffers in
    `kernel`, sized to hold the highest of them."""
    sizes: dict[str, list[int]] = {}
    for node in walk(kernel):
        if isinstance(node, Alloc) and node.offset is not None:
            end, align = sizes.setdefault(node.buffer.scope, [1, 1])
            sizes[node.buffer.scope] = [max(end, node.offset + _bytes(node.buffer)),
                                        max(align, node.align)]
    for scope, (size, align) in sizes.items():
        ctx.arenas[scope] = entry_alloca(ctx, ir.ArrayType(I8, size), f"arena.{scope}", align)


def planned_base(ctx: FuncContext, alloc: Alloc) -> ir.Value:
    """The address of a planned buffer: its arena plus its offset (computed in the entry
    block, so it dominates every use)."""
    arena = ctx.arenas[alloc.buffer.scope]
    if alloc.offset == 0:
        return arena
    return ctx.alloca_builder.gep(arena, [ir.Constant(I64, alloc.offset)], inbounds=True,
                       source_etype=I8, name=alloc.buffer.name)


def _bytes(buf) -> int:
    return prod(int(d.value) for d in buf.shape) * dtypes.nbytes(buf.dtype)
