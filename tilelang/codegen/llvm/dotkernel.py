"""The dot form of a register tile -> a micro-kernel on the CPU's bf16 dot product.

`passes/tiling.py` writes a bf16 x bf16 -> float32 register tile, on a machine whose
description says the native dot pays, two k steps at a time, and `passes/layout.py`
packs B's panels in K pairs:

    for kk in T.serial(K // 2):
        for ii in T.unroll(MR):
            for jj in T.vectorized(NR):
                C[.., c + jj] = C[.., c + jj]
                    + T.cast(A[r + ii, 2 * kk + 1], "float32") * T.cast(B[q, kk, jj, 1], "float32")
                    + T.cast(A[r + ii, 2 * kk], "float32") * T.cast(B[q, kk, jj, 0], "float32")

which is exactly what `vdpbf16ps` computes per float32 lane (the odd product added
first, each add rounded once; bf16 products are exact in float32), save that the
instruction treats denormal inputs and results as zero. This module emits it: the MR x
NR accumulators live in registers (vectors of the instruction's width) through the kk
loop; per kk, B's NR pairs are loaded once (one contiguous run), and each row's pair of
A, adjacent in memory, is one 32-bit load broadcast to every lane.

`try_emit` returns False for anything else, which then goes the generic way (the
single-k micro-kernel of microkernel.py, or plain loops).
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ...ir.nodes import Binary, Cast, Const, For, Load, Store, Var
from .convert import intrinsic
from .microkernel import (TileEmitter, _contiguous, _reads, _uses, accumulate_over_k,
                          c_rows_prefetch, register_tile_nest)
from .types import I32, I64

_K_UNROLL = 2


class BFloatType(ir.types._BaseFloatType):
    """LLVM's `bfloat` (llvmlite's IR layer has no spelling for it): the element type of
    the dot instruction's operands."""
    null = "0.0"
    intrinsic_name = "bf16"

    def __str__(self):
        return "bfloat"


BFloatType._create_instance()
BF16 = BFloatType()


@dataclass(frozen=True)
class _DotTile:
    k: For
    ii: Var | None
    mr: int
    jj: Var
    nr: int
    store: Store
    a_even: Load         # A[.., 2kk]; A[.., 2kk + 1] follows it in memory
    b_even: Load         # B[.., jj, 0]; the NR pairs are contiguous from jj = 0


def try_emit(em, loop: For) -> bool:
    tile = _match(loop)
    if tile is None:
        return False
    _DotEmitter(em, tile).emit()
    return True


# ----------------------------------------------------------------------------- matching

def _match(loop: For) -> _DotTile | None:
    nest = register_tile_nest(loop)
    if nest is None:
        return None
    ii, mr, jj, nr, store = nest
    if store.buffer.dtype != "float32" or _lanes(nr) is None:
        return None
    v = store.value
    if not (isinstance(v, Binary) and v.op == "+" and isinstance(v.lhs, Binary)
            and v.lhs.op == "+" and isinstance(v.lhs.lhs, Load)
            and v.lhs.lhs.buffer.name == store.buffer.name
            and v.lhs.lhs.indices == store.indices):
        return None
    odd, even = _factors(v.lhs.rhs, jj), _factors(v.rhs, jj)
    if odd is None or even is None or _uses(store.indices, loop.var) \
            or not _contiguous(store.indices, jj):
        return None
    (a1, b1), (a0, b0) = odd, even
    if not (_pair(a0, a1, last_dim=False) and _pair(b0, b1, last_dim=True)
            and _contiguous(b0.indices[:-1], jj)):
        return None
    if any(_reads(x, store.buffer.name) or x.buffer.name == store.buffer.name
           for x in (a0, b0)):
        return None
    return _DotTile(loop, ii, mr, jj, nr, store, a0, b0)


def _factors(e, jj: Var):
    """(a, b) bf16 loads of a product `cast(a) * cast(b)`, b the one indexed by jj."""
    if not (isinstance(e, Binary) and e.op == "*"):
        return None
    loads = [_widened_bf16(x) for x in (e.lhs, e.rhs)]
    if None in loads:
        return None
    x, y = loads
    if _uses(x.indices, jj) and not _uses(y.indices, jj):
        x, y = y, x
    if _uses(x.indices, jj) or not _uses(y.indices, jj):
        return None
    return x, y


def _widened_bf16(e) -> Load | None:
    if isinstance(e, Cast) and e.dtype == "float32" and isinstance(e.value, Load) \
            and e.value.buffer.dtype == "bfloat16":
        return e.value
    return None


def _pair(even: Load, odd: Load, last_dim: bool) -> bool:
    """B: the same element but the last index, 0 then 1 (a dim of extent 2). A: the same
    row, the odd one's last index the even one's plus 1 (`2 * kk`, `2 * kk + 1`)."""
    if even.buffer.name != odd.buffer.name or even.indices[:-1] != odd.indices[:-1]:
        return False
    e, o = even.indices[-1], odd.indices[-1]
    if last_dim:
        shape = even.buffer.shape[-1]
        return isinstance(shape, Const) and shape.value == 2 and isinstance(e, Const) \
            and e.value == 0 and isinstance(o, Const) and o.value == 1
    return isinstance(o, Binary) and o.op == "+" and o.lhs == e \
        and isinstance(o.rhs, Const) and o.rhs.value == 1


def _lanes(nr: int) -> int | None:
    """The float32 lanes of the dot instruction used for NR columns (512, 256 or 128
    bits), or None when NR is not a multiple of 4."""
    for lanes in (16, 8, 4):
        if nr % lanes == 0:
            return lanes
    return None


# ----------------------------------------------------------------------------- emission

class _DotEmitter(TileEmitter):
    def __init__(self, em, tile: _DotTile):
        super().__init__(em, tile)
        self.lanes = _lanes(tile.nr)
        self.pieces = tile.nr // self.lanes
        self.acc_ty = ir.VectorType(ir.FloatType(), self.lanes)
        self.pair_ty = ir.VectorType(BF16, 2 * self.lanes)
        self.dot = intrinsic(em.b.module, f"llvm.x86.avx512bf16.dpbf16ps.{32 * self.lanes}",
                             self.acc_ty, [self.acc_ty, self.pair_ty, self.pair_ty])

    def address(self, load_or_store, jj: int = 0):
        self.bind(self.t.jj, jj)
        ptr, _ = self.em.address(load_or_store.buffer, load_or_store.indices)
        return ptr

    def emit(self) -> None:
        em, b, t = self.em, self.b, self.t
        rows = []
        for r in range(t.mr):
            self.bind(t.ii, r)
            rows.append(self.address(t.store))
        c_rows_prefetch(b, rows, t.nr * 4)
        init = [ir.Constant(self.acc_ty, None) for _ in range(t.mr * self.pieces)]
        outs = accumulate_over_k(em, t.k, init, self.step, "dot", _K_UNROLL)
        for r, row in enumerate(rows):
            for p in range(self.pieces):
                ptr = row if p == 0 else b.gep(row, [ir.Constant(I64, 4 * p * self.lanes)],
                                               source_etype=ir.IntType(8))
                c = b.load(ptr, typ=self.acc_ty, align=4)
                b.store(b.fadd(c, outs[r * self.pieces + p]), ptr, align=4)

    def step(self, accs):
        """One kk: B's NR pairs once, then per row one broadcast A pair and a dot per
        piece."""
        t, b = self.t, self.b
        b_ptr = self.address(t.b_even)
        pairs = [b.load(b_ptr if p == 0 else
                        b.gep(b_ptr, [ir.Constant(I64, 4 * p * self.lanes)],
                              source_etype=ir.IntType(8)), typ=self.pair_ty, align=2)
                 for p in range(self.pieces)]
        out = []
        for r in range(t.mr):
            self.bind(t.ii, r)
            a = b.load(self.address(t.a_even), typ=I32, align=2)   # A[2kk] | A[2kk + 1] << 16
            splat = b.shuffle_vector(
                b.insert_element(ir.Constant(ir.VectorType(I32, self.lanes), ir.Undefined), a,
                                 ir.Constant(I64, 0)),
                ir.Constant(ir.VectorType(I32, self.lanes), ir.Undefined),
                ir.Constant(ir.VectorType(I32, self.lanes), [0] * self.lanes))
            a_pairs = b.bitcast(splat, self.pair_ty)
            for p in range(self.pieces):
                acc = accs[r * self.pieces + p]
                out.append(b.call(self.dot, [acc, a_pairs, pairs[p]]))
        return out
