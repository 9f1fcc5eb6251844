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
from . import localmem
from .context import FuncContext, entry_alloca
from .metadata import DistinctNode
from .types import I8, I64


def arena_sizes(kernel) -> dict[str, tuple[int, int]]:
    """scope -> (bytes, alignment) of the arena holding `kernel`'s planned buffers: up
    to the end of the highest of them, aligned to the largest alignment among them."""
    sizes: dict[str, tuple[int, int]] = {}
    for node in walk(kernel):
        if isinstance(node, Alloc) and node.offset is not None:
            end, align = sizes.get(node.buffer.scope, (1, 1))
            sizes[node.buffer.scope] = (max(end, node.offset + _bytes(node.buffer)),
                                        max(align, node.align))
    return sizes


def declare_arenas(ctx: FuncContext, kernel, func_name: str = "") -> None:
    """Place the arena of every scope with planned buffers: an alloca in the entry
    block, or its part of the heap block when the kernel's block-local memory is too
    large for the stack (localmem.py)."""
    sizes = arena_sizes(kernel)
    ctx.local = localmem.plan(kernel, sizes, func_name)
    localmem.allocate(ctx, ctx.local)
    for scope, (size, align) in sizes.items():
        base = localmem.slot(ctx, f"arena.{scope}")
        if base is None:
            base = entry_alloca(ctx, ir.ArrayType(I8, size), f"arena.{scope}", align)
        ctx.arenas[scope] = base


def planned_base(ctx: FuncContext, alloc: Alloc) -> ir.Value:
    """The address of a planned buffer: its arena plus its offset (computed in the entry
    block, so it dominates every use). Each buffer gets a GEP of its own, even at offset
    0, so that `mark_disjoint` can tell which buffer an access goes through."""
    arena = ctx.arenas[alloc.buffer.scope]
    base = ctx.address_builder.gep(arena, [ir.Constant(I64, alloc.offset)], inbounds=True,
                                  source_etype=I8, name=alloc.buffer.name)
    start = alloc.offset
    ctx.arena_bases[id(base)] = (alloc.buffer.scope, start, start + _bytes(alloc.buffer))
    return base


def mark_disjoint(ctx: FuncContext) -> None:
    """Tell LLVM which planned buffers cannot alias: those of one arena whose byte
    ranges are disjoint. Separate allocas told it that for free; in one arena, accesses
    at variable indices off one base may alias as far as LLVM can prove, which can keep
    a value in memory or a loop unvectorised (with this, flash_attention's machine code
    is within a few lines of the build without reuse; without it, 2% longer). Buffers
    whose bytes overlap (they are never live together) stay may-alias: the truth.

    Every load and store whose address is a GEP chain from a planned buffer's base gets
    `!alias.scope` (its buffer) and `!noalias` (the buffers disjoint from it)."""
    if not ctx.arena_bases:
        return
    module = ctx.module
    domain = DistinctNode(module, [], name=str(len(module.metadata)))
    scopes = {key: DistinctNode(module, [domain], name=str(len(module.metadata)))
              for key in ctx.arena_bases}
    tags = {}
    for key, (scope, lo, hi) in ctx.arena_bases.items():
        others = [scopes[k] for k, (sc, l2, h2) in ctx.arena_bases.items()
                  if k != key and (sc != scope or h2 <= lo or hi <= l2)]
        tags[key] = (module.add_metadata([scopes[key]]),
                     module.add_metadata(others) if others else None)
    for block in ctx.fn.blocks:
        for instr in block.instructions:
            ptr = _address_of(instr)
            key = _base_key(ptr, tags) if ptr is not None else None
            if key is None:
                continue
            scope_md, noalias_md = tags[key]
            instr.set_metadata("alias.scope", scope_md)
            if noalias_md is not None:
                instr.set_metadata("noalias", noalias_md)


def _address_of(instr):
    if isinstance(instr, ir.LoadInstr):
        return instr.operands[0]
    if isinstance(instr, ir.StoreInstr):
        return instr.operands[1]
    return None


def _base_key(ptr, tags):
    """The planned buffer `ptr` is computed from (through GEPs), if any."""
    while True:
        if id(ptr) in tags:
            return id(ptr)
        if not isinstance(ptr, ir.GEPInstr):
            return None
        ptr = ptr.pointer


def _bytes(buf) -> int:
    return prod(int(d.value) for d in buf.shape) * dtypes.nbytes(buf.dtype)
