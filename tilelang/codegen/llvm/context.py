"""State shared by the expression and statement emitters of one LLVM function."""
from __future__ import annotations

from dataclasses import dataclass, field

from llvmlite import ir

from ...diagnostics import Diagnostic, Label, TileLangError, InternalError
from ...ir.nodes import NO_SPAN


@dataclass
class BufferSlot:
    """Where a buffer lives: its base pointer and its dims as i64 values (row-major)."""
    base: ir.Value
    dims: list[ir.Value]
    align: int            # alignment guaranteed for the base pointer, in bytes


@dataclass
class FuncContext:
    module: ir.Module
    fn: ir.Function
    builder: ir.IRBuilder
    alloca_builder: ir.IRBuilder           # positioned in the entry block
    env: dict = field(default_factory=dict)          # Var -> ir.Value
    buffers: dict = field(default_factory=dict)      # buffer name -> BufferSlot
    arenas: dict = field(default_factory=dict)       # scope -> arena base (arena.py)
    arena_bases: dict = field(default_factory=dict)  # id(base) -> (scope, lo, hi) bytes
    loop_count: int = 0
    rank_table: ir.Value | None = None              # multi-rank kernels (ranks.py)
    rank_sites: dict = field(default_factory=dict)   # id(node) -> manifest site index
    local: object = None                             # localmem.LocalPlan of name__impl
    address_builder: ir.IRBuilder | None = None      # where block-local addresses go
    streams: bool = False          # non-temporal stores: fence before publishing (streaming.py)

    def __post_init__(self):
        if self.address_builder is None:
            self.address_builder = self.alloca_builder

    def new_block(self, name: str) -> ir.Block:
        return self.fn.append_basic_block(name)


def entry_alloca(ctx: FuncContext, ty: ir.Type, name: str, align: int) -> ir.Value:
    """An alloca in the entry block, typed as an opaque pointer (llvmlite's IR layer
    would otherwise give it a typed pointer type that GEP/store then insist on)."""
    slot = ctx.alloca_builder.alloca(ty, name=name)
    slot.align = align
    slot.type = ir.PointerType()
    return slot


def user_error(code: str, message: str, span=NO_SPAN, help: str | None = None):
    """A TL05xx diagnostic pointing at the IR node's source span."""
    primary = None if span is NO_SPAN or span is None else Label.from_span(span)
    return TileLangError(Diagnostic(code, message, primary=primary, help=help))


def internal(message: str) -> InternalError:
    return InternalError(f"LLVM codegen: {message}")
