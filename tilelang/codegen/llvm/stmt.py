"""Statements of the lowered IR -> LLVM IR (inside one block of the grid).

Loops are canonical counted loops (guard, one body block chain, latch) with an i32/i64
induction variable whose increment is `nsw`, so the vectoriser sees affine addresses.
Block-local buffers are entry-block allocas, reused by every block a call runs: the
arena of their scope when `memory_reuse` placed them (arena.py), else one of their own.
"""
from __future__ import annotations

from math import prod

from llvmlite import ir

from ... import dtypes
from ...diagnostics import codes_codegen as codes
from ...ir.nodes import (Alloc, Atomic, Binary, Cast, Const, For, If, Let, Load, Prefetch,
                         Seq, Store, While)
from . import arena, convert, dotkernel, localmem, microkernel, prefetch, streaming
from .ranks import RankEmitter
from .context import BufferSlot, entry_alloca, user_error
from .expr import ExprEmitter
from .metadata import loop_metadata
from .types import I64, compute_type, storage_type

LOCAL_ALIGN = 64   # allocas are created with this alignment, so it may be claimed


class StmtEmitter(ExprEmitter, RankEmitter):

    def stmt(self, s) -> None:
        method = getattr(self, "_s_" + type(s).__name__, None)
        if method is None:
            raise user_error(codes.UNSUPPORTED_NODE,
                             f"{type(s).__name__} reached the CPU code generator; tile "
                             f"operations must be lowered to loops first", s.span,
                             help="run the CPU pass pipeline (tilelang.passes) before codegen")
        method(s)

    def _s_Seq(self, s: Seq) -> None:
        for child in s.stmts:
            self.stmt(child)

    def _s_Let(self, s: Let) -> None:
        self.ctx.env[s.var] = self.expr_as(s.value, s.var.dtype)

    # ------------------------------------------------------------------ memory

    def _s_Alloc(self, s: Alloc) -> None:
        buf = s.buffer
        if s.source is not None:                 # a view: the source's memory, its shape
            src = self.ctx.buffers[s.source.name]
            base = src.base
            if s.pe is not None:                 # ... on rank pe (checked: TL0907)
                base, _ = self._peer(s, base, s.pe)
            self.ctx.buffers[buf.name] = BufferSlot(base, [self.index64(d) for d in
                                                           buf.shape], src.align)
            return
        if buf.scope == "global":
            raise user_error(codes.UNSUPPORTED_NODE,
                             f"global workspace {buf.name!r} must be allocated before "
                             f"T.Kernel, not inside it", s.span)
        dims = []
        for d in buf.shape:
            if not isinstance(d, Const):
                raise user_error(codes.DYNAMIC_LOCAL_BUFFER,
                                 f"{buf.scope} buffer {buf.name!r} has a non-constant "
                                 f"shape", s.span)
            dims.append(int(d.value))
        count = max(1, prod(dims))
        if s.offset is not None and buf.scope in self.ctx.arenas:   # memory_reuse's plan
            slot, align = arena.planned_base(self.ctx, s), s.align
        else:
            slot, align = localmem.slot(self.ctx, buf.name), LOCAL_ALIGN
            if slot is None:
                slot = entry_alloca(self.ctx, ir.ArrayType(storage_type(buf.dtype), count),
                                    buf.name, LOCAL_ALIGN)
        self.ctx.buffers[buf.name] = BufferSlot(slot, [ir.Constant(I64, d) for d in dims],
                                                align)
        if s.init is not None:
            self._init_buffer(buf, s.init, count)

    def _init_buffer(self, buf, init, count: int) -> None:
        value = convert.to_storage(self.b, buf.dtype, self.expr_as(init, buf.dtype))
        base = self.ctx.buffers[buf.name].base
        elem, align = storage_type(buf.dtype), dtypes.nbytes(buf.dtype)

        def store_at(i):
            ptr = self.b.gep(base, [i], inbounds=True, source_etype=elem)
            self.b.store(value, ptr, align=align)

        if count == 1:
            store_at(ir.Constant(I64, 0))
        else:
            self.counted_loop(I64, ir.Constant(I64, 0), ir.Constant(I64, count), store_at,
                              name=f"{buf.name}.init")

    def _s_Store(self, s: Store) -> None:
        ptr, align = self.address(s.buffer, s.indices)
        acc = _accumulated(s)
        if acc is not None:
            # buf[i] = buf[i] + x: a float sum may be reassociated, which is what lets
            # LLVM vectorise reductions (the order of a reduction is unspecified)
            old, x = self.expr_as(acc[0], s.buffer.dtype), self.expr_as(acc[1], s.buffer.dtype)
            value = self.b.fadd(old, x, flags=("reassoc", "contract"))
        else:
            self.b.store(self.storage_value(s.value, s.buffer.dtype), ptr, align=align)
            return
        self.b.store(convert.to_storage(self.b, s.buffer.dtype, value), ptr, align=align)

    def storage_value(self, e, dtype: str) -> ir.Value:
        """The bits `e` stores into a `dtype` buffer. A float cast to the buffer's
        low-precision dtype is rounded once: widening it back and rounding again gives
        the same bits, but costs a second rounding that LLVM cannot remove."""
        if isinstance(e, Cast) and e.dtype == dtype and dtypes.is_float(e.value.dtype) \
                and dtypes.is_low_precision_float(dtype):
            return convert.to_storage(self.b, dtype, self.expr(e.value))
        return convert.to_storage(self.b, dtype, self.expr_as(e, dtype))

    # ------------------------------------------------------------------ atomics

    def _s_Atomic(self, s: Atomic) -> None:
        dt = s.buffer.dtype
        ptr, _ = self.address(s.buffer, s.indices)
        value = self.expr_as(s.value, dt)
        native = _native_rmw(s.op, dt)
        if native is not None:
            if dt == "bool":
                value = convert.to_storage(self.b, dt, value)
            self.b.atomic_rmw(native, ptr, value, "monotonic")
            return
        if s.op not in ("add", "max", "min"):
            raise user_error(codes.UNSUPPORTED_ATOMIC, f"unknown atomic operation {s.op!r}",
                             s.span)
        self._cmpxchg_loop(s.op, ptr, value, dt)

    def atomic_update(self, op: str, ptr, value, dt: str, ordering: str = "monotonic"):
        """Atomically combine `value` (compute type) into *ptr; the previous value, in
        the compute type."""
        native = _native_rmw(op, dt)
        if native is None:
            return self._cmpxchg_loop(op, ptr, value, dt)
        if dt == "bool":
            value = convert.to_storage(self.b, dt, value)
        old = self.b.atomic_rmw(native, ptr, value, ordering)
        return convert.from_storage(self.b, dt, old) if dt == "bool" else old

    def _cmpxchg_loop(self, op: str, ptr, value, dt: str):
        """Atomic read-modify-write of a low-precision float: convert, combine, round and
        compare-and-swap the storage bits until no other block interfered. Returns the
        previous value (compute type)."""
        b, ctx = self.b, self.ctx
        bits = ir.IntType(dtypes.bits(dt))
        start = b.load(ptr, typ=bits, align=dtypes.nbytes(dt))
        pre = b.block
        loop_bb, done_bb = ctx.new_block("atomic.loop"), ctx.new_block("atomic.done")
        b.branch(loop_bb)
        b.position_at_end(loop_bb)
        old = b.phi(bits)
        old.add_incoming(start, pre)
        raw_old = b.bitcast(old, storage_type(dt))
        combined = self.arith({"add": "+"}.get(op, op),
                              convert.from_storage(b, dt, raw_old), value, dt)
        new = b.bitcast(convert.to_storage(b, dt, combined), bits)
        pair = b.cmpxchg(ptr, old, new, "monotonic", "monotonic")
        old.add_incoming(b.extract_value(pair, 0), loop_bb)
        b.cbranch(b.extract_value(pair, 1), done_bb, loop_bb)
        b.position_at_end(done_bb)
        return convert.from_storage(b, dt, raw_old)

    # ------------------------------------------------------------------ control flow

    def _s_If(self, s: If) -> None:
        ctx, b = self.ctx, self.b
        cond = self.expr_as(s.cond, "bool")
        then_bb, end_bb = ctx.new_block("if.then"), ctx.new_block("if.end")
        else_bb = ctx.new_block("if.else") if s.else_body is not None else end_bb
        b.cbranch(cond, then_bb, else_bb)
        b.position_at_end(then_bb)
        self.stmt(s.then_body)
        b.branch(end_bb)
        if s.else_body is not None:
            b.position_at_end(else_bb)
            self.stmt(s.else_body)
            b.branch(end_bb)
        b.position_at_end(end_bb)

    def _s_While(self, s: While) -> None:
        ctx, b = self.ctx, self.b
        head, body, end = (ctx.new_block(f"while.{n}") for n in ("cond", "body", "end"))
        b.branch(head)
        b.position_at_end(head)
        b.cbranch(self.expr_as(s.cond, "bool"), body, end)
        b.position_at_end(body)
        self.stmt(s.body)
        b.branch(head)
        b.position_at_end(end)

    def _s_Prefetch(self, s: Prefetch) -> None:
        prefetch.emit(self, s)

    def _s_For(self, s: For) -> None:
        # the register-tile forms of passes/tiling.py: two k steps a bf16 dot, or one
        if dotkernel.try_emit(self, s) or microkernel.try_emit(self, s):
            return
        if streaming.try_emit(self, s):          # eviction_policy="evict_first"
            return
        ty = compute_type(s.var.dtype)
        lo = self.expr_as(s.min, s.var.dtype)
        hi = self.b.add(lo, self.expr_as(s.extent, s.var.dtype))
        count = s.annotation("unroll_factor") or s.annotation("unroll")
        md = loop_metadata(self.ctx.module, s.kind, isinstance(s.extent, Const),
                           count if isinstance(count, int) and count > 1 else None)
        self.counted_loop(ty, lo, hi, lambda iv: self._loop_body(s, iv), md, s.var.name)

    def _loop_body(self, s: For, iv) -> None:
        self.ctx.env[s.var] = iv
        self.stmt(s.body)

    def counted_loop(self, ty, lo, hi, body_fn, md=None, name="i") -> None:
        """for (iv = lo; iv < hi; ++iv) body_fn(iv), in rotated form."""
        ctx, b = self.ctx, self.b
        body_bb, exit_bb = ctx.new_block(f"{name}.body"), ctx.new_block(f"{name}.exit")
        pre = b.block
        b.cbranch(b.icmp_signed("<", lo, hi), body_bb, exit_bb)
        b.position_at_end(body_bb)
        iv = b.phi(ty, name=name)
        iv.add_incoming(lo, pre)
        body_fn(iv)
        nxt = b.add(iv, ir.Constant(ty, 1), flags=("nsw",))
        latch = b.cbranch(b.icmp_signed("<", nxt, hi), body_bb, exit_bb)
        if md is not None:
            latch.set_metadata("llvm.loop", md)
        iv.add_incoming(nxt, b.block)
        b.position_at_end(exit_bb)


def _accumulated(s: Store):
    """(the Load of the stored element, the addend) when `s` is `b[i] = b[i] + x` on a
    float32/float64 buffer, else None."""
    v = s.value
    if not (isinstance(v, Binary) and v.op == "+" and v.dtype == s.buffer.dtype
            and s.buffer.dtype in ("float32", "float64")):
        return None
    for old, x in ((v.lhs, v.rhs), (v.rhs, v.lhs)):
        if isinstance(old, Load) and old.buffer.name == s.buffer.name \
                and old.indices == s.indices:
            return old, x
    return None


def _native_rmw(op: str, dt: str) -> str | None:
    """The `atomicrmw` operation for (op, dtype), or None where a cmpxchg loop is needed."""
    if dt in ("float32", "float64"):
        return {"add": "fadd", "max": "fmax", "min": "fmin"}.get(op)
    if dt == "bool":
        return {"add": "or", "max": "or", "min": "and"}.get(op)
    if dtypes.is_int(dt):
        if not dtypes.is_signed(dt):
            return {"add": "add", "max": "umax", "min": "umin"}.get(op)
        return {"add": "add", "max": "max", "min": "min"}.get(op)
    return None

