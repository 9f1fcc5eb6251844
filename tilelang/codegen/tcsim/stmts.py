"""Statements to tcsim instructions: tile ops to DMA / COPY / MMA / VEC, serial loops
to LOOP / ENDLOOP, ifs to IF / ELSE / ENDIF, lets to scalar registers."""
from __future__ import annotations

import math

from ...ir.nodes import (Alloc, Const, Copy, Fill, For, Gemm, If, Let, Reduce, Seq, Store,
                         TileAtomic, Atomic)
from ...runtime.tcsim.isa import Glob, Imm, Reg
from .scalar import ScalarLowering, const_value, unsupported

SCOPES = ("shared", "fragment", "local")


class StmtLowering:
    def __init__(self, em, env: dict, plan):
        self.em = em
        self.plan = plan
        self.gemm_operands: set[str] = set()
        self.env = env
        self.scalar = ScalarLowering(em, env)
        self.local: dict[str, object] = {}          # on-chip buffer name -> Buffer
        self.accumulators: set[str] = set()         # T.gemm outputs: zeroed by ACC.ZERO
        self.vec_pool: dict = {}                    # temporaries of T.Parallel lowering
        self.kernel_body = None

    # ------------------------------------------------------------------ dispatch
    def stmt(self, s) -> None:
        if isinstance(s, Seq):
            for x in s.stmts:
                self.stmt(x)
        elif isinstance(s, Alloc):
            self.alloc(s)
        elif isinstance(s, Let):
            reg = Reg(self.em.reg())
            self.scalar.into(reg, s.value)
            self.env[s.var] = reg
        elif isinstance(s, Copy):
            self.copy(s)
        elif isinstance(s, Gemm):
            self.gemm(s)
        elif isinstance(s, Fill):
            self.fill(s)
        elif isinstance(s, Reduce):
            self.reduce(s)
        elif isinstance(s, TileAtomic):
            self.atomic(s)
        elif isinstance(s, For):
            self.loop(s)
        elif isinstance(s, If):
            self.if_(s)
        elif isinstance(s, (Store, Atomic)):
            raise unsupported(s, "element stores outside T.Parallel loops")
        else:
            raise unsupported(s, f"`{type(s).__name__}` statements")

    def alloc(self, s: Alloc) -> None:
        b = s.buffer
        if b.scope not in SCOPES:
            raise unsupported(s, f"buffers of scope `{b.scope}`")
        shape = []
        for d in b.shape:
            if not isinstance(d, Const):
                raise unsupported(s, "on-chip buffers need constant shapes")
            shape.append(int(d.value))
        level = self.plan.level(b.scope, b.name, self.gemm_operands, self.accumulators)
        offset = s.offset if self.plan.uses_arena(b.scope) else None
        self.em.declare(b.name, level, b.dtype, shape or [1], offset=offset)
        self.local[b.name] = b

    # ------------------------------------------------------------------ tile ops
    def _whole(self, region, what):
        b = region.buffer
        if b.name not in self.local:
            raise unsupported(region, f"{what}: `{b.name}` is not an on-chip buffer")
        starts_zero = all(isinstance(x, Const) and x.value == 0 for x in region.starts)
        decl = self.em.buffers[b.name]
        if not starts_zero or math.prod(region.extents) != decl.stage_elems:
            raise unsupported(region, f"{what}: partial regions of on-chip buffer "
                                      f"`{b.name}`")
        return b.name

    def _glob(self, region):
        starts = tuple(self.scalar.operand(x) for x in region.starts)
        return Glob(region.buffer.name, starts), tuple(region.extents)

    def copy(self, s: Copy) -> None:
        src_g = s.src.buffer.name not in self.local
        dst_g = s.dst.buffer.name not in self.local
        if src_g and dst_g:
            raise unsupported(s, "T.copy from global memory to global memory")
        if src_g:
            self.load(self._whole(s.dst, "T.copy"), s.src)
        elif dst_g:
            self.store(self._whole(s.src, "T.copy"), s.dst)
        else:
            src = self._whole(s.src, "T.copy")
            dst = self._whole(s.dst, "T.copy")
            if self.em.buffers[src].shape != self.em.buffers[dst].shape:
                raise unsupported(s, "on-chip T.copy between differently shaped buffers")
            self.move(dst, src)

    def move(self, dst: str, src: str) -> None:
        em = self.em
        em.engine_op("VEC", "COPY", (em.tile(dst), em.tile(src)), reads=(src,),
                     writes=(dst,))

    def staging(self, like: str, level: str, tag: str) -> str:
        """A one-stage buffer shaped like `like` in `level` (reused per (like, level))."""
        em = self.em
        name = f"{like}__{tag}"
        if name not in em.buffers:
            d = em.buffers[like]
            em.declare(name, level, d.dtype, d.shape)
        return name

    def load(self, name: str, region) -> None:
        em = self.em
        target = name
        if em.buffers[name].level not in self.plan.dma:
            target = self.staging(name, self.plan.fragment, "in")
        g, box = self._glob(region)
        em.engine_op("DMA_IN", "DMA.LD", (em.tile(target), g), reads=(g.tensor,),
                     writes=(target,), box=box)
        if target != name:
            self.move(name, target)

    def store(self, name: str, region, reduce: str | None = None) -> None:
        em = self.em
        if em.buffers[name].level not in self.plan.dma:
            staged = self.staging(name, self.plan.fragment, "out")
            self.move(staged, name)
            name = staged
        g, box = self._glob(region)
        em.engine_op("DMA_OUT", "DMA.ST", (g, em.tile(name)), reads=(name,),
                     writes=(g.tensor,), box=box, reduce=reduce)

    def gemm(self, s: Gemm) -> None:
        em = self.em
        a = self._operand(self._whole(s.a, "T.gemm"), self.plan.stage_a, "l0a")
        b = self._operand(self._whole(s.b, "T.gemm"), self.plan.stage_b, "l0b")
        c = self._whole(s.c, "T.gemm")
        if s.clear_accum:
            em.engine_op("MMA", "ACC.ZERO", (em.tile(c),), writes=(c,))
        em.engine_op("MMA", "MMA", (em.tile(c), em.tile(a), em.tile(b)), reads=(a, b, c),
                     writes=(c,), ta=1 if s.transpose_a else None,
                     tb=1 if s.transpose_b else None)

    def _operand(self, name: str, level: str, tag: str) -> str:
        """`name`, or a staging copy of it where the MMA can read it."""
        if self.em.buffers[name].level in self.plan.mma_ab:
            return name
        staged = self.staging(name, level, tag)
        self.move(staged, name)
        return staged

    def fill(self, s: Fill) -> None:
        em = self.em
        name = self._whole(s.dst, "T.fill")
        value = self.scalar.operand(s.value)
        if isinstance(value, Imm) and value.value == 0 and name in self.accumulators:
            em.engine_op("MMA", "ACC.ZERO", (em.tile(name),), writes=(name,))
            return
        target = name
        if em.buffers[name].level not in self.plan.vec:
            target = self.staging(name, self.plan.fragment, "fill")
        em.engine_op("VEC", "VEC.MOV", (em.tile(target), value), writes=(target,),
                     shape=em.buffers[name].shape)
        if target != name:
            self.move(name, target)

    def reduce(self, s: Reduce) -> None:
        em = self.em
        src, dst = s.src.name, s.dst.name
        for n in (src, dst):
            if n not in self.local:
                raise unsupported(s, f"reductions of global tensor `{n}`")
            if self.em.buffers[n].level not in self.plan.vec:
                raise unsupported(s, f"reduction of `{n}`, which the vector unit of "
                                     f"{self.plan.cfg.name} cannot reach")
        reads = (src,) if s.clear else (src, dst)
        em.engine_op("VEC", f"VEC.RED.{s.kind.upper()}", (em.tile(dst), em.tile(src)),
                     reads=reads, writes=(dst,), dim=s.dim, acc=0 if s.clear else 1)

    def atomic(self, s: TileAtomic) -> None:
        self.store(self._whole(s.src, "T.atomic_" + s.op), s.dst, reduce=s.op)

    # ------------------------------------------------------------------ control flow
    def loop(self, s: For) -> None:
        if s.kind in ("parallel", "vectorized"):
            from .vec import lower_parallel
            lower_parallel(self, s)
            return
        if s.kind == "pipelined" and int(s.annotation("num_stages", 1) or 1) >= 1:
            from .pipeline import lower_pipelined
            if lower_pipelined(self, s):
                return
        self.serial(s, s.body)

    def serial(self, s: For, body) -> None:
        em = self.em
        var = Reg(em.reg())
        count = self.scalar.operand(s.extent)
        em.emit("MOV", var, self.scalar.operand(s.min))
        self.env[s.var] = var
        em.emit("LOOP", count)
        self.stmt(body)
        em.emit("ADDI", var, var, Imm(1))
        em.emit("ENDLOOP")

    def if_(self, s: If) -> None:
        em = self.em
        cond = self.scalar.operand(s.cond)
        if isinstance(cond, Imm):
            branch = s.then_body if cond.value else s.else_body
            if branch is not None:
                self.stmt(branch)
            return
        em.emit("IF", cond)
        self.stmt(s.then_body)
        if s.else_body is not None:
            em.emit("ELSE")
            self.stmt(s.else_body)
        em.emit("ENDIF")


__all__ = ["StmtLowering", "const_value"]
