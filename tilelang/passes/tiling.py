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
per row and k). The tiles are walked column panel by column panel (BLIS order: the
K x NR panel of B stays in L1 while the rows of A stream past it). Ragged edges get
explicit tail tiles: a last row tile of m % MR rows, a last column tile of n % NR.

Only float32/float64 accumulators are tiled; any other `T.gemm` is left for
`lower_tile_ops`. `clear_accum` becomes a `T.clear` of C before the tiles.
"""
from __future__ import annotations

from dataclasses import replace

from ..ir import Binary, Cast, Const, Expr, Fill, For, Gemm, Load, Module, PrimFunc, Seq, Stmt, \
    Store, Var, rewrite
from ..ir.canon import canonicalize
from ..targets.cpu import machine as cpu_machine
from .fold import make_const
from .lower_tile_ops import _bind, _cast, _extent, _indices, _load, _matrix_axes
from .names import NameSupply, names_in

_ACCUMULATORS = {"float32": 32, "float64": 64}


def tiling(module: Module, machine: cpu_machine.CpuMachine | None = None) -> Module:
    machine = machine or cpu_machine.host()
    funcs = tuple(_tile_func(f, machine) for f in module.funcs)
    return canonicalize(replace(module, funcs=funcs))


def _tile_func(func: PrimFunc, machine) -> PrimFunc:
    names = NameSupply(names_in(func))

    def visit(node):
        if isinstance(node, Gemm) and node.c.buffer.dtype in _ACCUMULATORS:
            return _Tiler(node, machine, names).tiled()
        return None

    return rewrite(func, visit)


def _dot_pairs(op: Gemm, machine) -> bool:
    """Whether the machine multiplies this gemm's operands two k steps at a time (a dot
    of bf16 pairs into float32, vdpbf16ps), a fact the machine description holds only
    where it was measured to pay."""
    return machine.bf16_dot and op.c.buffer.dtype == "float32" \
        and op.a.buffer.dtype == op.b.buffer.dtype == "bfloat16"


class _Tiler:
    def __init__(self, op: Gemm, machine, names: NameSupply):
        self.op, self.names = op, names
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
        """All register tiles of the MR-high row panel starting at `row`."""
        parts = self._panels(self.n, self.nr, "jo",
                             lambda col, nr: self._register_tile(row, col, mr, nr))
        return parts[0] if len(parts) == 1 else Seq(tuple(parts), span=self.op.span)

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
            acc = Binary("+", acc, self._product(i, j, k), c.dtype, span=self.op.span)
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
        acc = Binary("+", c, self._product(i, j, k), c.dtype, span=self.op.span)
        body = Store(c.buffer, c.indices, acc, span=self.op.span)
        body = self._loop(jj, nr, "vectorized", body)
        body = self._loop(ii, mr, "unroll", body)
        return self._loop(k, steps, "serial", body, start=k0)

    def _c_load(self, i: Expr, j: Expr) -> Load:
        op = self.op
        idx = _indices(op.c, _bind(self.c_axes, (i, j)))
        return Load(op.c.buffer, idx, op.c.buffer.dtype, span=op.span)

    def _product(self, i: Expr, j: Expr, k: Expr) -> Expr:
        """A[i, k] * B[k, j] in C's dtype."""
        op, cdt = self.op, self.op.c.buffer.dtype
        a_val = _cast(_load(op.a, _bind(self.a_axes, (i, k)), op.span), cdt)
        b_val = _cast(_load(op.b, _bind(self.b_axes, (k, j)), op.span), cdt)
        return Binary("*", a_val, b_val, cdt, span=op.span)

    def _loop(self, var: Var, extent: int, kind: str, body: Stmt, start: int = 0) -> For:
        return For(var, make_const(start, var.dtype), make_const(extent, var.dtype), kind, body,
                   span=self.op.span)


def _scaled(var: Var, step: int):
    return Binary("*", var, make_const(step, var.dtype), var.dtype)


def _plus(base, var: Var):
    if isinstance(base, Const) and base.value == 0:
        return var
    if base.dtype != var.dtype:
        base = Cast(base, var.dtype)
    return Binary("+", base, var, var.dtype)


__all__ = ["tiling"]
