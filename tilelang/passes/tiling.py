"""`tiling`: split each `T.gemm` into the CPU target's register tiles.

C (m x n) is cut into MR x NR register tiles (MR, NR from the machine description in
`targets/cpu/machine.py`, for C's dtype). Each register tile becomes one loop nest of a
fixed, printable shape, the *register-tile form*:

    for k in T.serial(K):                  # the reduction, innermost but for the tile
        for ii in T.unroll(MR):            # rows of the register tile
            for jj in T.vectorized(NR):    # one vector row of C and of B
                C[r + ii, c + jj] = C[r + ii, c + jj] + A[r + ii, k] * B[k, c + jj]

which the CPU code generator emits as a micro-kernel (accumulators in vector registers
for the whole K loop, B row loaded once per k and reused by every row, A broadcast once
per row and k). The tiles are walked row panel by row panel: the MR x K panel of A stays
in L1 while B's K x NR panels (packed by `layout`) stream past it; a machine
description may ask for column panels outermost instead (`resident`). Ragged edges get
explicit tail tiles: a last row tile of m % MR rows, a last column tile of n % NR.

A's panel is then all a row panel needs of A. So when A is a block-local buffer that a
whole-buffer `T.copy` from a global tensor fills just for this gemm (nothing else
touches it, nothing between them touches it or writes the source), the copy is *sunk*
into the row panels: each copies its MR rows into an MR x K buffer right before using
them (from L1, not from a whole A tile written through L2 and read back), and the big
tile is gone (more of the block's memory for C and B):

    T.copy(A[r0, k0], A_s)             for io in T.serial(BM // MR):
    T.gemm(A_s, B_s, C_f)      ->          T.copy(A[r0 + io * MR, k0], A_s)   # A_s: MR x K
                                           ... row panel io, reading A_s[ii, k]

(at n = 2048 on one core of a shared host: 0.79 against 0.74 of the FMA peak unsunk in a
run at a load of 7, level within the noise in runs at 11). A last
row panel of fewer rows copies just its rows: the panels read what the whole copy read.
A tile of one row panel or less keeps its copy where it was.

C gets the same treatment when it is a block-local accumulator cleared right before the
k loop that holds the gemm and copied whole into a global tensor right after it (nothing
else touching it): each row panel clears its rows of C in the loop's first iteration
and writes them back in its last, right after its tiles computed them, while they are
still in L1/L2 — rather than a clear of the whole C tile before the loop and a copy of
it after, each a pass over a tile that need not fit in any cache (measured in
`_sinkable_accumulators`). A loop that runs no iteration still clears and writes back C
whole, after it:

    T.clear(C_f)                          for k in T.serial(KT):
    for k in T.serial(KT):                    for io in T.serial(BM // MR):
        ...                                       if k == 0:
        T.gemm(A_s, B_s, C_f)          ->              T.clear(C_f[io * MR:io * MR + MR, :])
    T.copy(C_f, C[r0, c0])                        ... row panel io ...
                                                  if k == KT - 1:
                                                      T.copy(C_f[io * MR:.., :], C[r0 + io * MR, c0])
                                          if KT < 1:
                                              T.clear(C_f)
                                              T.copy(C_f, C[r0, c0])

Only float32/float64 accumulators are tiled; any other `T.gemm` is left for
`lower_tile_ops`. `clear_accum` becomes a `T.clear` of C before the tiles.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..ir import Alloc, Binary, Cast, Const, Copy, Expr, Fill, For, Gemm, If, Load, Module, \
    PrimFunc, Region, Seq, Stmt, Store, Var, rewrite, walk
from ..ir.canon import canonicalize
from ..targets.cpu import machine as cpu_machine
from .fold import make_const
from .lower_tile_ops import _bind, _cast, _extent, _indices, _load, _matrix_axes, _paired_axes
from .names import NameSupply, names_in

_ACCUMULATORS = {"float32": 32, "float64": 64}


def tiling(module: Module, machine: cpu_machine.CpuMachine | None = None) -> Module:
    machine = machine or cpu_machine.host()
    funcs = tuple(_tile_func(f, machine) for f in module.funcs)
    return canonicalize(replace(module, funcs=funcs))


def _tile_func(func: PrimFunc, machine) -> PrimFunc:
    names = NameSupply(names_in(func))
    sunk = _sinkable_copies(func, machine)     # id(gemm) -> (A's copy, its panel buffer)
    accumulations = _sinkable_accumulators(func, machine)   # id(gemm) -> _Accumulation
    # the statements the sinking takes away: id -> what stays in their place (or None)
    moved = {id(c): None for c, _ in sunk.values()}
    for acc in accumulations.values():
        moved[id(acc.fill)] = None
        moved[id(acc.copy)] = acc.no_iteration()
    panels = {c.dst.buffer.name: panel for c, panel in sunk.values()}

    def visit(node):
        if isinstance(node, Gemm) and node.c.buffer.dtype in _ACCUMULATORS:
            return _Tiler(node, machine, names, sunk.get(id(node)),
                          accumulations.get(id(node))).tiled()
        if isinstance(node, Seq) and any(id(st) in moved for st in node.stmts):
            kept = tuple(moved.get(id(st), st) for st in node.stmts)
            return replace(node, stmts=tuple(st for st in kept if st is not None))
        if isinstance(node, Alloc) and node.buffer.name in panels:
            return replace(node, buffer=panels[node.buffer.name])
        return None

    return rewrite(func, visit)


def _sinkable_copies(func: PrimFunc, machine) -> dict:
    """id(gemm) -> (the T.copy whose rows can be sunk into its row panels (see above),
    the MR x K buffer that replaces the copy's destination)."""
    if machine.resident != "A":
        return {}
    uses = _uses(func)
    out = {}
    for seq in (n for n in walk(func.body) if isinstance(n, Seq)):
        for j, g in enumerate(seq.stmts):
            if not (isinstance(g, Gemm) and g.c.buffer.dtype in _ACCUMULATORS) \
                    or g.transpose_a or not g.a.covers_buffer:
                continue
            x = g.a.buffer
            mr, _ = machine.register_tile(_ACCUMULATORS[g.c.buffer.dtype])
            for i in range(j - 1, -1, -1):
                c = seq.stmts[i]
                if isinstance(c, Copy) and c.dst.buffer.name == x.name:
                    if _sinkable(c, x, uses, seq.stmts[i + 1:j], mr):
                        out[id(g)] = (c, _panel_buffer(x, mr))
                    break
                if _writes(c, x.name):
                    break
    return out


@dataclass(frozen=True)
class _Accumulation:
    """A gemm's C cleared by `fill` right before `loop` (the k loop holding the gemm) and
    written back by `copy` right after it: what the row panels take over."""
    fill: Fill
    loop: For
    copy: Copy

    def first(self) -> Expr:
        return Binary("==", self.loop.var, self.loop.min, "bool")

    def last(self) -> Expr:
        v, lo, n = self.loop.var, self.loop.min, self.loop.extent
        if isinstance(lo, Const) and isinstance(n, Const):
            return Binary("==", v, make_const(int(lo.value) + int(n.value) - 1, v.dtype), "bool")
        one = make_const(1, v.dtype)
        return Binary("==", Binary("+", v, one, v.dtype), _plus_expr(lo, n), "bool")

    def no_iteration(self) -> Stmt | None:
        """What replaces the write-back after the loop: the clear and the write-back of
        the whole of C when the loop may run no iteration, else nothing."""
        e = self.loop.extent
        if isinstance(e, Const) and int(e.value) >= 1:
            return None
        cond = Binary("<", e, make_const(1, e.dtype), "bool")
        return If(cond, Seq((self.fill, self.copy), span=self.copy.span), span=self.copy.span)

    def rows(self, row: Expr, mr: int) -> tuple[Stmt, Stmt]:
        """The clear of C's rows [row, row + mr) in the loop's first iteration and their
        write-back in its last."""
        c = self.fill.dst
        rows = Region(c.buffer, (row, make_const(0, "int32")), (mr, c.extents[1]), span=c.span)
        dst_axes, src_axes = _paired_axes(self.copy, self.copy.src, self.copy.dst)
        d = dst_axes[src_axes.index(0)]
        starts, extents = list(self.copy.dst.starts), list(self.copy.dst.extents)
        starts[d], extents[d] = _plus_expr(starts[d], row), mr
        dst = replace(self.copy.dst, starts=tuple(starts), extents=tuple(extents))
        span = self.copy.span
        clear = If(self.first(), Fill(rows, self.fill.value, span=self.fill.span), span=span)
        back = If(self.last(), Copy(rows, dst, self.copy.eviction_policy, span=span), span=span)
        return clear, back


def _sinkable_accumulators(func: PrimFunc, machine) -> dict:
    """id(gemm) -> _Accumulation for each gemm whose C is a block-local 2-D tile cleared
    right before the serial k loop that holds the gemm and copied whole into a global
    tensor right after it, used by nothing else, and that loop not touching that tensor.
    At n = 2048 on one thread of a 2-port AVX-512 core (a shared host, alternating runs):
    with blocks 512 x 1024 x 293 the whole-tile clear and write-back cost 3-7% (both
    taken out, wrong results) and sinking them was level (0.99-1.00x); it is what lets a
    block grow to all of M, so that B is packed once: blocks 2048 x 1024 x 293 ran 1.020x
    the 512 x 1024 kernel sunk, 0.989x unsunk (61 turns)."""
    if machine.resident != "A":
        return {}
    uses = _uses(func)
    out = {}
    for seq in (n for n in walk(func.body) if isinstance(n, Seq)):
        for fill, loop, copy in zip(seq.stmts, seq.stmts[1:], seq.stmts[2:]):
            if isinstance(fill, Fill) and isinstance(loop, For) and isinstance(copy, Copy):
                g = _gemm_of(loop)
                if g is not None and _sinkable_accumulator(fill, loop, copy, g, uses):
                    out[id(g)] = _Accumulation(fill, loop, copy)
    return out


def _gemm_of(loop: For) -> Gemm | None:
    """The one tiled gemm of a serial or pipelined loop's body (directly in it)."""
    if loop.kind not in ("serial", "pipelined"):
        return None
    body = loop.body.stmts if isinstance(loop.body, Seq) else (loop.body,)
    gemms = [s for s in body if isinstance(s, Gemm)]
    if len(gemms) != 1 or gemms[0].c.buffer.dtype not in _ACCUMULATORS:
        return None
    return gemms[0]


def _sinkable_accumulator(fill: Fill, loop: For, copy: Copy, g: Gemm, uses: dict) -> bool:
    x = g.c.buffer
    if g.clear_accum or not g.c.covers_buffer or x.ndim != 2 \
            or x.scope not in ("shared", "fragment", "local") \
            or not all(isinstance(d, Const) for d in x.shape):
        return False
    if not (fill.dst.buffer.name == x.name and fill.dst.covers_buffer
            and isinstance(fill.value, Const)):
        return False
    if not (copy.src.buffer.name == x.name and copy.src.covers_buffer
            and copy.dst.buffer.scope == "global" and copy.dst.limits is None):
        return False
    if uses.get(x.name, 0) != 4 or copy.dst.buffer.name in loop.effects().names() \
            or any(isinstance(n, Load) for e in copy.dst.starts for n in walk(e)):
        return False
    return 0 in _paired_axes(copy, copy.src, copy.dst)[1]


def _uses(func: PrimFunc) -> dict[str, int]:
    uses: dict[str, int] = {}
    for n in walk(func.body):
        for name in _buffers_named(n):
            uses[name] = uses.get(name, 0) + 1
    return uses


def _sinkable(c: Copy, x, uses: dict, between, mr: int) -> bool:
    """The copy fills all of x (block-local, 2-D, constant shape, more than one row
    panel high) from a global tensor, and x is used by nothing but the copy, the gemm
    and its own declaration."""
    return c.dst.covers_buffer and x.scope in ("shared", "fragment", "local") \
        and x.ndim == 2 and all(isinstance(d, Const) for d in x.shape) \
        and int(x.shape[0].value) > mr \
        and c.src.buffer.scope == "global" and c.src.limits is None \
        and uses.get(x.name, 0) == 3 \
        and not any(c.src.buffer.name in s.effects().writes() for s in between)


def _writes(s: Stmt, name: str) -> bool:
    return name in s.effects().writes()


def _buffers_named(n) -> tuple[str, ...]:
    """The buffers node `n` itself names (a Region for its tile op, an Alloc, an access)."""
    if isinstance(n, (Load, Store, Region, Alloc)):
        return (n.buffer.name,)
    return ()


def _panel_buffer(x, mr: int):
    """x shrunk to one row panel: MR x K."""
    return replace(x, shape=(make_const(mr, "int32"), x.shape[1]))


def _dot_pairs(op: Gemm, machine) -> bool:
    """Whether the machine multiplies this gemm's operands two k steps at a time (a dot
    of bf16 pairs into float32, vdpbf16ps), a fact the machine description holds only
    where it was measured to pay."""
    return machine.bf16_dot and op.c.buffer.dtype == "float32" \
        and op.a.buffer.dtype == op.b.buffer.dtype == "bfloat16"


class _Tiler:
    def __init__(self, op: Gemm, machine, names: NameSupply, sunk=None, accumulation=None):
        self.op, self.names = op, names
        self.sunk = sunk          # (A's copy, the MR x K panel buffer) when sunk
        self.accumulation = accumulation    # C's clear and write-back, when sunk
        self.a_axes, self.b_axes, self.c_axes = (_matrix_axes(r, op) for r in (op.a, op.b, op.c))
        if op.transpose_a:
            self.a_axes = self.a_axes[::-1]
        if op.transpose_b:
            self.b_axes = self.b_axes[::-1]
        self.m, self.n = (_extent(op.c, d) for d in self.c_axes)
        self.k = _extent(op.a, self.a_axes[1])
        self.mr, self.nr = machine.register_tile(_ACCUMULATORS[op.c.buffer.dtype])
        self.rows_outer = machine.resident == "A"
        self.pairs = _dot_pairs(op, machine) and self.k >= 2

    def tiled(self) -> Stmt:
        op = self.op
        stmts = [Fill(op.c, make_const(0, op.c.buffer.dtype), span=op.span)] \
            if op.clear_accum else []
        if self.rows_outer:
            stmts += self._panels(self.m, self.mr, "io",
                                  lambda row, mr: self._row_panel(row, mr))
        else:
            stmts += self._panels(self.n, self.nr, "jo",
                                  lambda col, nr: self._column_panel(col, nr))
        return stmts[0] if len(stmts) == 1 else Seq(tuple(stmts), span=op.span)

    def _panels(self, size: int, step: int, name: str, panel) -> list[Stmt]:
        """`panel(start, width)` over `size` in whole `step`-wide panels (a serial loop)
        and a narrower last one."""
        full, tail = divmod(size, step)
        parts = []
        if full:
            v = self.names.var(name)
            parts.append(self._loop(v, full, "serial", panel(_scaled(v, step), step)))
        if tail:
            parts.append(panel(make_const(full * step, "int32"), tail))
        return parts

    def _column_panel(self, col: Expr, nr: int) -> Stmt:
        """All register tiles of the NR-wide column panel starting at `col`."""
        parts = self._panels(self.m, self.mr, "io",
                             lambda row, mr: self._register_tile(row, col, mr, nr))
        return parts[0] if len(parts) == 1 else Seq(tuple(parts), span=self.op.span)

    def _row_panel(self, row: Expr, mr: int) -> Stmt:
        """All register tiles of the MR-high row panel starting at `row` (after the copy
        of its rows of A, when that copy is sunk)."""
        parts = self._panels(self.n, self.nr, "jo",
                             lambda col, nr: self._register_tile(row, col, mr, nr))
        if self.accumulation is not None:
            clear, back = self.accumulation.rows(row, mr)
            parts = [clear] + parts + [back]
        if self.sunk is not None:
            parts.insert(0, self._panel_copy(row, mr))
        return parts[0] if len(parts) == 1 else Seq(tuple(parts), span=self.op.span)

    def _panel_copy(self, row: Expr, mr: int) -> Copy:
        """The sunk copy of the `mr` rows of A from `row` (what the whole copy wrote
        there) into the top of the panel buffer."""
        copy, panel = self.sunk
        dst_axes, src_axes = _paired_axes(copy, copy.src, copy.dst)
        d = src_axes[dst_axes.index(0)]
        starts, extents = list(copy.src.starts), list(copy.src.extents)
        starts[d], extents[d] = _plus_expr(starts[d], row), mr
        src = replace(copy.src, starts=tuple(starts), extents=tuple(extents))
        zero = make_const(0, "int32")
        dst = Region(panel, (zero, zero), (mr, copy.dst.extents[1]), span=copy.dst.span)
        return Copy(src, dst, span=copy.span)

    def _register_tile(self, row: Expr, col: Expr, mr: int, nr: int) -> Stmt:
        """The register-tile form for C[row : row + mr, col : col + nr]: one k step per
        iteration, or with the dot form two (`_dot_pairs`) and a last single step when K
        is odd."""
        if not self.pairs:
            return self._tile_loop(row, col, mr, nr, 0, self.k)
        kk, ii, jj = (self.names.var(n) for n in ("kk", "ii", "jj"))
        i, j = _plus(row, ii), _plus(col, jj)
        k_even = _scaled(kk, 2)
        k_odd = Binary("+", k_even, make_const(1, kk.dtype), kk.dtype)
        c = self._c_load(i, j)
        # (C + a[2kk+1] b[2kk+1]) + a[2kk] b[2kk]: the order, and the single rounding of
        # each add, of vdpbf16ps (each bf16 x bf16 product is exact in float32)
        acc = c
        for k in (k_odd, k_even):
            acc = Binary("+", acc, self._product(i, j, k, ii), c.dtype, span=self.op.span)
        body = self._loop(jj, nr, "vectorized", Store(c.buffer, c.indices, acc, span=self.op.span))
        body = self._loop(kk, self.k // 2, "serial", self._loop(ii, mr, "unroll", body))
        if self.k % 2 == 0:
            return body
        return Seq((body, self._tile_loop(row, col, mr, nr, self.k - 1, 1)), span=self.op.span)

    def _tile_loop(self, row: Expr, col: Expr, mr: int, nr: int, k0: int, steps: int) -> Stmt:
        """The one-step-per-iteration register tile over k = k0 .. k0 + steps - 1."""
        k, ii, jj = (self.names.var(n) for n in ("k", "ii", "jj"))
        i, j = _plus(row, ii), _plus(col, jj)
        c = self._c_load(i, j)
        acc = Binary("+", c, self._product(i, j, k, ii), c.dtype, span=self.op.span)
        body = Store(c.buffer, c.indices, acc, span=self.op.span)
        body = self._loop(jj, nr, "vectorized", body)
        body = self._loop(ii, mr, "unroll", body)
        return self._loop(k, steps, "serial", body, start=k0)

    def _c_load(self, i: Expr, j: Expr) -> Load:
        op = self.op
        idx = _indices(op.c, _bind(self.c_axes, (i, j)))
        return Load(op.c.buffer, idx, op.c.buffer.dtype, span=op.span)

    def _product(self, i: Expr, j: Expr, k: Expr, ii: Var) -> Expr:
        """A[i, k] * B[k, j] in C's dtype (A's panel row ii when its copy is sunk)."""
        op, cdt = self.op, self.op.c.buffer.dtype
        a = op.a if self.sunk is None else replace(op.a, buffer=self.sunk[1])
        a_row = i if self.sunk is None else ii
        a_val = _cast(_load(a, _bind(self.a_axes, (a_row, k)), op.span), cdt)
        b_val = _cast(_load(op.b, _bind(self.b_axes, (k, j)), op.span), cdt)
        return Binary("*", a_val, b_val, cdt, span=op.span)

    def _loop(self, var: Var, extent: int, kind: str, body: Stmt, start: int = 0) -> For:
        return For(var, make_const(start, var.dtype), make_const(extent, var.dtype), kind, body,
                   span=self.op.span)


def _scaled(var: Var, step: int):
    return Binary("*", var, make_const(step, var.dtype), var.dtype)


def _plus_expr(base: Expr, e: Expr) -> Expr:
    if isinstance(e, Const) and e.value == 0:
        return base
    if isinstance(base, Const) and base.value == 0:
        return e
    if base.dtype != e.dtype:
        e = Cast(e, base.dtype)
    return Binary("+", base, e, base.dtype)


def _plus(base, var: Var):
    if isinstance(base, Const) and base.value == 0:
        return var
    if base.dtype != var.dtype:
        base = Cast(base, var.dtype)
    return Binary("+", base, var, var.dtype)


__all__ = ["tiling"]
