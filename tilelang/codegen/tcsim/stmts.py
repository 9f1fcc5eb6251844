"""Statements to tcsim instructions: tile ops to DMA / COPY / MMA / VEC, serial loops
to LOOP / ENDLOOP, while loops to LOOP / BREAKZ / ENDLOOP, ifs to IF / ELSE / ENDIF, lets
to scalar registers."""
from __future__ import annotations

from contextlib import contextmanager

from ...ir.nodes import (Alloc, Const, Copy, Fill, For, Gemm, If, Let, Load, Prefetch, Reduce,
                         Region, Seq, Store, TileAtomic, Atomic, AtomicFetch, While)
from ...ir.visitor import substitute, walk
from ...targets.tcsim.isa import Glob, Imm, Reg, Tile
from .scalar import ScalarLowering, unsupported

SCOPES = ("shared", "fragment", "local")
WHILE_LIMIT = 2 ** 31 - 1       # the trip count of a while loop's LOOP: left by BREAKZ
UNROLL_LIMIT = 16               # the longest loop unrolled to place on-chip regions


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
        self.loaded: set = set()                    # lets whose value is read from a tensor
        self.kernel_body = None
        self.cluster = None                         # ClusterVarying (cluster.py)
        self.steered = 0                            # depth of cluster-varying control
        self.views: dict[str, str] = {}             # view name -> the tensor it views
        self.view_params: list = []

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
            if self._data_dependent(s.value):
                self.loaded.add(s.var)
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
        elif isinstance(s, Prefetch):
            pass        # a cache hint: tcsim's DMA engines load tiles explicitly
        elif isinstance(s, For):
            self.loop(s)
        elif isinstance(s, If):
            self.if_(s)
        elif isinstance(s, While):
            self.while_(s)
        elif isinstance(s, Store) and s.buffer.scope == "var":
            self.scalar.into(self.scalar.var_reg(s.buffer), s.value)
        elif isinstance(s, (Store, Atomic)):
            from .vec_elems import lower_element
            lower_element(self, s)
        elif isinstance(s, AtomicFetch):
            self.atomic_fetch(s)
        else:
            raise unsupported(s, f"`{type(s).__name__}` statements")

    def tensor_key(self, name: str) -> str:
        """The global tensor a name's accesses are ordered on (a view's source)."""
        return self.views.get(name, name)

    def alloc(self, s: Alloc) -> None:
        b = s.buffer
        if s.source is not None:                 # a view: no memory, another shape
            from . import _shape
            from ...targets.tcsim.isa import Param
            self.views[b.name] = self.tensor_key(s.source.name)
            self.view_params.append(Param(b.name, "view", b.dtype, _shape(b), None,
                                          self.views[b.name]))
            return
        if b.scope == "var":                     # a scalar: one register
            reg = Reg(self.em.reg())
            self.scalar.vars[b.name] = reg
            init = s.init if s.init is not None else Const(0, b.dtype)
            self.scalar.into(reg, init)
            return
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
    # An on-chip operand is a View: (buffer name, static sub-box or None for all of it).

    def _view(self, region, what):
        b = region.buffer
        if b.name not in self.local:
            raise unsupported(region, f"{what}: `{b.name}` is not an on-chip buffer")
        if not all(isinstance(x, Const) for x in region.starts):
            raise unsupported(region, f"{what}: on-chip region of `{b.name}` at a computed "
                                      f"offset")
        shape = self.em.buffers[b.name].shape
        box = tuple((int(x.value), int(e)) for x, e in zip(region.starts, region.extents))
        if len(box) != len(shape) or any(s < 0 or s + e > n for (s, e), n in zip(box, shape)):
            raise unsupported(region, f"{what}: region outside `{b.name}`")
        whole = all(s == 0 and e == n for (s, e), n in zip(box, shape))
        return b.name, None if whole else box

    def _tile(self, view):
        name, box = view
        t = self.em.tile(name)
        return Tile(t.buf, t.stage, None, box)

    def _shape(self, view):
        name, box = view
        return tuple(e for _, e in box) if box is not None else self.em.buffers[name].shape

    def _glob(self, region):
        starts = tuple(self.scalar.operand(x) for x in region.starts)
        return Glob(region.buffer.name, starts), tuple(region.extents)

    def _dma_attrs(self, region, load: bool) -> dict:
        """`stop=` for a region's limits (a masked ragged tail); `gather=1` for a load
        whose start is read from another tensor (`KV[block_table[b, i], ...]`)."""
        attrs = {}
        if region.limits is not None and any(x is not None for x in region.limits):
            attrs["stop"] = tuple(None if x is None else self.scalar.operand(x)
                                  for x in region.limits)
        if load and any(self._data_dependent(x) for x in region.starts):
            attrs["gather"] = 1
        return attrs

    def _data_dependent(self, e) -> bool:
        """Whether `e` holds a value read from a tensor (directly or through lets)."""
        return any((isinstance(n, Load) and n.buffer.scope == "global") or n in self.loaded
                   for n in walk(e))

    def copy(self, s: Copy) -> None:
        src_g = s.src.buffer.name not in self.local
        dst_g = s.dst.buffer.name not in self.local
        if src_g and dst_g:
            self.copy_global(s)
        elif src_g:
            self.load(self._view(s.dst, "T.copy"), s.src)
        elif dst_g:
            self.store(self._view(s.src, "T.copy"), s.dst)
        else:
            src = self._view(s.src, "T.copy")
            dst = self._view(s.dst, "T.copy")
            if [e for e in self._shape(src) if e != 1] != \
                    [e for e in self._shape(dst) if e != 1]:
                raise unsupported(s, "on-chip T.copy between differently shaped regions")
            self.move(dst, src)

    def copy_global(self, s: Copy) -> None:
        """Global to global: through a tile of the region's extents (loaded, converted
        to the destination's dtype, stored)."""
        shape = [int(e) for e in s.src.extents if int(e) != 1] or [1]
        name = f"__gg{len(self.em.buffers)}"
        self.em.declare(name, self.plan.fragment, s.dst.buffer.dtype, shape)
        self.load((name, None), s.src)
        self.store((name, None), s.dst)

    def move(self, dst, src) -> None:
        self.em.engine_op("VEC", "COPY", (self._tile(dst), self._tile(src)),
                          reads=(src[0],), writes=(dst[0],))

    def staging(self, like, level: str, tag: str, rows_cols: bool = False):
        """A whole one-stage buffer shaped like view `like` (its last two dims with
        `rows_cols`: the matrix of a GEMM operand), in `level`."""
        em = self.em
        name, box = like
        shape = self._shape(like)[-2:] if rows_cols else self._shape(like)
        sname = f"{name}__{tag}" + ("" if box is None else "_" + "x".join(map(str, shape)))
        if sname not in em.buffers:
            em.declare(sname, level, em.buffers[name].dtype, shape)
        return sname, None

    def load(self, view, region) -> None:
        target = view
        if self.em.buffers[view[0]].level not in self.plan.dma:
            target = self.staging(view, self.plan.fragment, "in")
        g, box = self._glob(region)
        self.em.engine_op("DMA_IN", "DMA.LD", (self._tile(target), g),
                          reads=(self.tensor_key(g.tensor),),
                          writes=(target[0],), box=box,
                          mcast=1 if self._shared_by_cluster(region) else None,
                          **self._dma_attrs(region, True))
        if target != view:
            self.move(view, target)

    def _shared_by_cluster(self, region) -> bool:
        """Whether every block of a cluster loads this very box at this point."""
        c = self.cluster
        return c is not None and c.active and not self.steered and \
            not any(c.depends(x) for x in region.starts)

    def store(self, view, region, reduce: str | None = None) -> None:
        if self.em.buffers[view[0]].level not in self.plan.dma:
            staged = self.staging(view, self.plan.fragment, "out")
            self.move(staged, view)
            view = staged
        g, box = self._glob(region)
        self.em.engine_op("DMA_OUT", "DMA.ST", (g, self._tile(view)), reads=(view[0],),
                          writes=(self.tensor_key(g.tensor),), box=box, reduce=reduce,
                          **self._dma_attrs(region, False))

    def gemm(self, s: Gemm) -> None:
        em = self.em
        c = self._view(s.c, "T.gemm")
        if s.clear_accum:
            em.engine_op("MMA", "ACC.ZERO", (self._tile(c),), writes=(c[0],))
        for a_part, b_part in self._k_chunks(self._view(s.a, "T.gemm"),
                                             self._view(s.b, "T.gemm"), s):
            a = self._operand(a_part, self.plan.stage_a, "l0a")
            b = self._operand(b_part, self.plan.stage_b, "l0b")
            em.engine_op("MMA", "MMA", (self._tile(c), self._tile(a), self._tile(b)),
                         reads=(a[0], b[0], c[0]), writes=(c[0],),
                         ta=1 if s.transpose_a else None, tb=1 if s.transpose_b else None)

    def _k_chunks(self, a, b, s: Gemm):
        """The operands as K slices whose staging copies fit the MMA's operand buffers
        (half of L0A / L0B each, so two gemms' stagings fit): one slice where the
        operands need no staging or fit whole."""
        # the matrix dims are an operand's last two (`A_shared[b, :, :]` of a 3-d tile)
        ka = len(self._shape(a)) - 2 + (0 if s.transpose_a else 1)
        kb = len(self._shape(b)) - 2 + (1 if s.transpose_b else 0)
        k = self._shape(a)[ka]
        kc = k
        for view, level, kdim in ((a, self.plan.stage_a, ka), (b, self.plan.stage_b, kb)):
            if self.em.buffers[view[0]].level in self.plan.mma_ab and \
                    len(self._shape(view)) == 2:
                continue
            shape = self._shape(view)
            row = self.em.buffers[view[0]].nbytes() // (
                self.em.buffers[view[0]].stages * self.em.buffers[view[0]].stage_elems)
            row *= shape[-1] if kdim == len(shape) - 2 else shape[-2]
            budget = self.plan.cfg.level_bytes(level) // 2
            kc = min(kc, max(self.plan.cfg.atom_k(self.em.buffers[view[0]].dtype),
                             budget // row))
        return [(_k_slice(a, self._shape(a), ka, k0, min(kc, k - k0)),
                 _k_slice(b, self._shape(b), kb, k0, min(kc, k - k0)))
                for k0 in range(0, k, kc)]

    def _operand(self, view, level: str, tag: str):
        """`view`, or a staging copy of it where the MMA can read it (a 2-d one for a
        slice of a higher-rank tile)."""
        matrix = len(self._shape(view)) == 2
        if self.em.buffers[view[0]].level in self.plan.mma_ab and matrix:
            return view
        staged = self.staging(view, level, tag, rows_cols=not matrix)
        self.move(staged, view)
        return staged

    def fill(self, s: Fill) -> None:
        em = self.em
        if s.dst.buffer.name not in self.local:
            self.fill_global(s)
            return
        view = self._view(s.dst, "T.fill")
        value = self.scalar.operand(s.value)
        if isinstance(value, Imm) and value.value == 0 and view[0] in self.accumulators:
            em.engine_op("MMA", "ACC.ZERO", (self._tile(view),), writes=(view[0],))
            return
        target = view
        if em.buffers[view[0]].level not in self.plan.vec:
            target = self.staging(view, self.plan.fragment, "fill")
        em.engine_op("VEC", "VEC.MOV", (self._tile(target), value), writes=(target[0],),
                     shape=self._shape(target))
        if target != view:
            self.move(view, target)

    def fill_global(self, s: Fill) -> None:
        """A global region filled (`T.fill(A, T.infinity(dtype))`): through a tile of the
        region's extents, filled on the vector unit and stored."""
        if not all(isinstance(e, int) or isinstance(e, Const) for e in s.dst.extents):
            raise unsupported(s.dst, "T.fill of a global region of computed extents")
        shape = [int(getattr(e, "value", e)) for e in s.dst.extents]
        shape = [e for e in shape if e != 1] or [1]
        name = f"__gf{len(self.em.buffers)}"
        self.em.declare(name, self.plan.fragment, s.dst.buffer.dtype, shape)
        self.em.engine_op("VEC", "VEC.MOV", (self.em.tile(name), self.scalar.operand(s.value)),
                          writes=(name,), shape=tuple(shape))
        self.store((name, None), s.dst)

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

    def atomic_fetch(self, s: AtomicFetch) -> None:
        """`old = T.atomic_add(G[i], v, return_prev=True)`: one ATOM.ADD on the scalar
        unit (a global tensor only: on chip a block has nothing to share)."""
        if s.buffer.name in self.local:
            raise unsupported(s, "an atomic that returns the previous value of an on-chip "
                                 "buffer")
        if s.op != "add":           # the scalar unit's one read-modify-write is ATOM.ADD
            raise unsupported(s, f"T.atomic_{s.op} returning the previous value")
        reg = Reg(self.em.reg())
        starts = tuple(self.scalar.operand(i) for i in s.indices)
        self.em.emit("ATOM.ADD", reg, Glob(s.buffer.name, starts),
                     self.scalar.operand(s.value))
        self.env[s.var] = reg

    def atomic(self, s: TileAtomic) -> None:
        if s.src.buffer.name not in self.local:     # global source: staged as copy_global
            shape = [int(e) for e in s.src.extents if int(e) != 1] or [1]
            name = f"__ga{len(self.em.buffers)}"
            self.em.declare(name, self.plan.fragment, s.dst.buffer.dtype, shape)
            self.load((name, None), s.src)
            self.store((name, None), s.dst, reduce=s.op)
            return
        self.store(self._view(s.src, "T.atomic_" + s.op), s.dst, reduce=s.op)

    # ------------------------------------------------------------------ control flow
    @contextmanager
    def steering(self, s):
        """Inside loop or if `s`, counted in `steered` where the blocks of a cluster may
        take different paths through it (ClusterVarying.steers): no load in it is
        multicast (_shared_by_cluster)."""
        steered = self.cluster is not None and self.cluster.steers(s)
        self.steered += steered
        try:
            yield
        finally:
            self.steered -= steered

    def loop(self, s: For) -> None:
        with self.steering(s):
            self._loop(s)

    def _loop(self, s: For) -> None:
        if s.kind in ("parallel", "vectorized") and (not isinstance(s.extent, Const) or any(
                isinstance(n, AtomicFetch) for n in walk(s.body))):
            # `T.Parallel(n)` of a run-time n (no tile shape), or with atomics returning
            # the previous value (one ATOM.ADD each): its iterations are independent, so
            # one after the other on the scalar unit is the same result
            self.serial(s, s.body)
            return
        if s.kind in ("parallel", "vectorized"):
            from .vec import lower_parallel
            lower_parallel(self, s)
            return
        if s.kind == "pipelined":
            from .schedule import has_schedule, lower_scheduled
            if has_schedule(s):
                lower_scheduled(self, s)
                return
        # num_stages=0: no pipelining, as in TileLang
        if s.kind == "pipelined" and int(s.annotation("num_stages", 1)) >= 1:
            from .pipeline import lower_pipelined
            if lower_pipelined(self, s):
                return
        if self._unrolls(s):
            for k in range(int(s.extent.value)):
                at = Const(int(s.min.value) + k, s.var.dtype, span=s.span)
                self.stmt(substitute(s.body, {s.var: at}))
            return
        self.serial(s, s.body)

    def _unrolls(self, s: For) -> bool:
        """A short loop of constant bounds whose variable places an on-chip region
        (`T.copy(A[b, ...], A_shared[b, :, :])`, a batched GEMM) or an on-chip element
        (`mask_local[i] = Mask[..., i]`): unrolled, as the engines address on-chip tiles
        by constant offsets only. Not with allocations in the body
        (each copy would declare them again)."""
        if not (isinstance(s.extent, Const) and isinstance(s.min, Const)) or \
                int(s.extent.value) > UNROLL_LIMIT:
            return False
        body = list(walk(s.body))
        if any(isinstance(n, Alloc) for n in body):
            return False
        def placed(n):          # an on-chip region or element indexed by the loop
            if isinstance(n, Region):
                at = n.starts
            elif isinstance(n, Store) and not any(isinstance(p, For) and p.kind in (
                    "parallel", "vectorized") for p in body):
                at = n.indices              # `src[i] = A[i]` in a serial loop
            else:
                return False
            return n.buffer.name in self.local and any(v == s.var for x in at
                                                       for v in walk(x))
        return any(placed(n) for n in body)

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

    def while_(self, s: While) -> None:
        """A loop of at most WHILE_LIMIT iterations that the condition leaves (BREAKZ),
        evaluated by the scalar unit before each iteration."""
        em = self.em
        em.emit("LOOP", Imm(WHILE_LIMIT))
        em.emit("BREAKZ", self.scalar.operand(s.cond))
        self.stmt(s.body)
        em.emit("ENDLOOP")

    def if_(self, s: If) -> None:
        with self.steering(s):
            self._if(s)

    def _if(self, s: If) -> None:
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


def _k_slice(view, shape, kdim: int, k0: int, kc: int):
    """`view` restricted to K range [k0, k0 + kc) along dim `kdim`."""
    name, box = view
    if k0 == 0 and kc == shape[kdim]:
        return view
    base = list(box) if box is not None else [(0, n) for n in shape]
    start, _ = base[kdim]
    base[kdim] = (start + k0, kc)
    return name, tuple(base)


__all__ = ["StmtLowering"]
