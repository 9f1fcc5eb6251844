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

    def tiled(self) -> Stmt:
        op = self.op
        stmts = []
        if op.clear_accum:
            stmts.append(Fill(op.c, make_const(0, op.c.buffer.dtype), span=op.span))
        full_n, tail_n = divmod(self.n, self.nr)
        if full_n:
            jo = self.names.var("jo")
            stmts.append(self._loop(jo, full_n, "serial",
                                    self._column_panel(_scaled(jo, self.nr), self.nr)))
        if tail_n:
            stmts.append(self._column_panel(make_const(full_n * self.nr, "int32"), tail_n))
        return stmts[0] if len(stmts) == 1 else Seq(tuple(stmts), span=op.span)

    def _column_panel(self, col: Expr, nr: int) -> Stmt:
        """All register tiles of the NR-wide column panel starting at `col`."""
        full_m, tail_m = divmod(self.m, self.mr)
        parts = []
        if full_m:
            io = self.names.var("io")
            parts.append(self._loop(io, full_m, "serial",
                                    self._register_tile(_scaled(io, self.mr), col, self.mr, nr)))
        if tail_m:
            parts.append(self._register_tile(make_const(full_m * self.mr, "int32"), col,
                                             tail_m, nr))
        return parts[0] if len(parts) == 1 else Seq(tuple(parts), span=self.op.span)

    def _register_tile(self, row: Expr, col: Expr, mr: int, nr: int) -> Stmt:
        """The register-tile form for C[row : row + mr, col : col + nr]."""
        op = self.op
        k, ii, jj = (self.names.var(n) for n in ("k", "ii", "jj"))
        i, j = _plus(row, ii), _plus(col, jj)
        cdt = op.c.buffer.dtype
        c_idx = _indices(op.c, _bind(self.c_axes, (i, j)))
        a_val = _cast(_load(op.a, _bind(self.a_axes, (i, k)), op.span), cdt)
        b_val = _cast(_load(op.b, _bind(self.b_axes, (k, j)), op.span), cdt)
        acc = Binary("+", Load(op.c.buffer, c_idx, cdt, span=op.span),
                     Binary("*", a_val, b_val, cdt, span=op.span), cdt, span=op.span)
        body = Store(op.c.buffer, c_idx, acc, span=op.span)
        body = self._loop(jj, nr, "vectorized", body)
        body = self._loop(ii, mr, "unroll", body)
        return self._loop(k, self.k, "serial", body)

    def _loop(self, var: Var, extent: int, kind: str, body: Stmt) -> For:
        return For(var, make_const(0, var.dtype), make_const(extent, var.dtype), kind, body,
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
