"""The register-tile form -> an explicit SIMD micro-kernel.

`passes/tiling.py` writes each register tile of a `T.gemm` (and a user may write one by
hand) as

    for k in T.serial(K):
        for ii in T.unroll(MR):            # optional (MR = 1)
            for jj in T.vectorized(NR):
                C[.., c + jj] = C[.., c + jj] + a(ii, k) * b(k, c + jj)

where C's element does not depend on k, `a` does not depend on jj and `b` is a load
contiguous in jj. LLVM's own vectoriser would pick the wrong loop here (it gathers
along k), so this module emits the micro-kernel directly:

  * the MR accumulator rows `<NR x float>` (a non-power-of-two NR as several vectors)
    start at zero, are carried in registers
    (phi nodes) through the k loop and added into C once after it (C's rows are
    prefetched before the loop, so loading them costs no stall);
  * per k, the row of B is one vector load, reused by all MR rows; each row's `a` is
    computed once and broadcast; the update is `llvm.fma.vNfT`;
  * address arithmetic that does not depend on k is left to LLVM's LICM.

`try_emit` returns False for any loop not of this form, which then goes the generic way.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ... import dtypes
from ...ir.nodes import Binary, Cast, Const, For, Load, Store, Var
from ...ir.visitor import walk
from . import prefetch
from .convert import intrinsic
from .metadata import loop_metadata
from .types import I64, compute_type, storage_type

_ACCUMULATORS = ("float32", "float64")
_K_UNROLL = 4           # k iterations per trip: hides the FMA latency chain per register


@dataclass(frozen=True)
class _Tile:
    k: For
    ii: Var | None
    mr: int
    jj: Var
    nr: int
    store: Store
    a: object            # the scalar factor (no jj)
    b: Load              # the vector factor (contiguous in jj)
    b_cast: bool         # b's buffer dtype differs from C's and is widened on load


def try_emit(em, loop: For) -> bool:
    tile = _match(loop)
    if tile is None:
        return False
    _Emitter(em, tile).emit()
    return True


# ----------------------------------------------------------------------------- matching

def register_tile_nest(loop: For):
    """(ii, mr, jj, nr, store) when `loop` is the register-tile nest: a serial k loop over
    an optional unrolled row loop (ii, mr rows; None, 1 without) over a vectorized column
    loop (jj, nr lanes) whose body is one store. Shared with the bf16 dot kernel."""
    if loop.kind != "serial":
        return None
    body, ii, mr = loop.body, None, 1
    if isinstance(body, For) and body.kind == "unroll" and _const(body.extent) \
            and _zero(body.min):
        ii, mr, body = body.var, int(body.extent.value), body.body
    if not (isinstance(body, For) and body.kind == "vectorized" and _const(body.extent)
            and _zero(body.min)):
        return None
    if not isinstance(body.body, Store):
        return None
    return ii, mr, body.var, int(body.extent.value), body.body


def _match(loop: For) -> _Tile | None:
    nest = register_tile_nest(loop)
    if nest is None:
        return None
    ii, mr, jj, nr, store = nest
    if store.buffer.dtype not in _ACCUMULATORS:
        return None
    factors = _accumulation(store)
    if factors is None:
        return None
    k = loop.var
    if _uses(store.indices, k) or not _contiguous(store.indices, jj):
        return None
    for a, b in (factors, factors[::-1]):
        load, widened = _vector_load(b, store.buffer.dtype)
        if load is None or _uses((a,), jj) or not _contiguous(load.indices, jj):
            continue
        if load.buffer.name == store.buffer.name or _reads(a, store.buffer.name):
            return None     # C must not be read through another path inside the loop
        return _Tile(loop, ii, mr, jj, nr, store, a, load, widened)
    return None


def _accumulation(store: Store):
    """(x, y) when the store is `C[idx] = C[idx] + x * y` (either operand order)."""
    v = store.value
    if not (isinstance(v, Binary) and v.op == "+"):
        return None
    for old, prod in ((v.lhs, v.rhs), (v.rhs, v.lhs)):
        if isinstance(old, Load) and old.buffer.name == store.buffer.name \
                and old.indices == store.indices and isinstance(prod, Binary) \
                and prod.op == "*" and prod.dtype == store.buffer.dtype:
            return prod.lhs, prod.rhs
    return None


_WIDENED = ("float16", "bfloat16")


def _vector_load(e, dtype: str):
    """(the Load, whether it is widened) when `e` is a load of `dtype`, or a Cast to
    float32 of a float16 load (F16C widens vectors in one instruction) or a bfloat16
    one (a shift)."""
    if isinstance(e, Load) and e.dtype == dtype and e.buffer.dtype == dtype:
        return e, False
    if isinstance(e, Cast) and e.dtype == dtype == "float32" and isinstance(e.value, Load) \
            and e.value.buffer.dtype in _WIDENED and e.value.dtype == e.value.buffer.dtype:
        return e.value, True
    return None, False


def _contiguous(indices, jj: Var) -> bool:
    """jj appears only in the last index, as `x + jj` / `jj + x` / `jj`."""
    if not indices or _uses(indices[:-1], jj):
        return False
    last = indices[-1]
    if last == jj:
        return True
    return isinstance(last, Binary) and last.op == "+" and (
        (last.rhs == jj and not _uses((last.lhs,), jj)) or
        (last.lhs == jj and not _uses((last.rhs,), jj)))


def _uses(exprs, var: Var) -> bool:
    return any(n == var for e in exprs for n in walk(e) if isinstance(n, Var))


def _reads(e, name: str) -> bool:
    return any(isinstance(n, Load) and n.buffer.name == name for n in walk(e))


def _const(e) -> bool:
    return isinstance(e, Const)


def _zero(e) -> bool:
    return isinstance(e, Const) and e.value == 0


# ----------------------------------------------------------------------------- emission

def _chunk(nr: int) -> int:
    """The lanes of one accumulator vector: all NR when NR is a power of two, else its
    largest power-of-two divisor (LLVM widens a `<48 x float>` to 64 lanes and shuffles
    every operation; three `<16 x float>` are three registers)."""
    return nr if nr & (nr - 1) == 0 else nr & -nr


class TileEmitter:
    """What the register-tile emitters (here, dotkernel.py) share: the statement
    emitter `em`'s builder, and binding the tile's unrolled loop variables."""
    def __init__(self, em, tile):
        self.em, self.t = em, tile

    @property
    def b(self) -> ir.IRBuilder:
        return self.em.b

    def bind(self, var: Var | None, value: int) -> None:
        if var is not None:
            self.em.ctx.env[var] = ir.Constant(compute_type(var.dtype), value)


class _Emitter(TileEmitter):
    def __init__(self, em, tile: _Tile):
        super().__init__(em, tile)
        self.dtype = tile.store.buffer.dtype
        self.scalar = compute_type(self.dtype)
        self.width = _chunk(tile.nr)
        self.chunks = tile.nr // self.width
        self.vec = ir.VectorType(self.scalar, self.width)
        suffix = "f64" if self.dtype == "float64" else "f32"
        self.fma = intrinsic(em.b.module, f"llvm.fma.v{self.width}{suffix}", self.vec,
                             [self.vec] * 3)

    def vector_ptr(self, buf, indices, chunk: int = 0):
        """Address of the first lane of accumulator vector `chunk` (jj = chunk * width)
        and its alignment."""
        self.bind(self.t.jj, chunk * self.width)
        ptr, _ = self.em.address(buf, indices)
        return ptr, dtypes.nbytes(buf.dtype)

    def c_rows(self):
        """The C vectors, row by row, each row's `chunks` vectors left to right."""
        for r in range(self.t.mr):
            self.bind(self.t.ii, r)
            for c in range(self.chunks):
                yield self.vector_ptr(self.t.store.buffer, self.t.store.indices, c)

    def emit(self) -> None:
        em, b, t = self.em, self.b, self.t
        rows = list(self.c_rows())
        # The accumulators start at zero and C is added once after the k loop: its rows
        # are prefetched now, so their (L2/L3) latency hides behind the FMAs.
        self.prefetch([p for p, _ in rows])
        init = [ir.Constant(self.vec, None) for _ in rows]
        outs = accumulate_over_k(em, t.k, init, self.step, "mk", _K_UNROLL)
        for (p, al), out in zip(rows, outs):
            c = b.load(p, typ=self.vec, align=al)
            b.store(b.fadd(c, out), p, align=al)

    def prefetch(self, ptrs) -> None:
        c_rows_prefetch(self.b, ptrs, self.width * dtypes.nbytes(self.dtype))

    def step(self, accs):
        """One k iteration: the B row once, then one broadcast and FMA per C vector."""
        t, b = self.t, self.b
        b_row = None
        out = []
        for r in range(t.mr):
            self.bind(t.ii, r)
            if b_row is None or (t.ii is not None and _uses(t.b.indices, t.ii)):
                b_row = [self.load_b(c) for c in range(self.chunks)]
            a = self.em.expr_as(t.a, self.dtype)
            splat = b.shuffle_vector(
                b.insert_element(ir.Constant(self.vec, ir.Undefined), a, ir.Constant(I64, 0)),
                ir.Constant(self.vec, ir.Undefined),
                ir.Constant(ir.VectorType(ir.IntType(32), self.width), [0] * self.width))
            for c in range(self.chunks):
                acc = accs[r * self.chunks + c]
                out.append(b.call(self.fma, [splat, b_row[c], acc]))
        return out

    def load_b(self, chunk: int):
        t, b = self.t, self.b
        ptr, align = self.vector_ptr(t.b.buffer, t.b.indices, chunk)
        lanes = self.width
        if not t.b_cast:
            return b.load(ptr, typ=self.vec, align=align)
        narrow = t.b.buffer.dtype
        raw = b.load(ptr, typ=ir.VectorType(storage_type(narrow), lanes), align=align)
        if narrow == "float16":
            return b.fpext(raw, self.vec)
        # bfloat16 is the top half of a float32
        wide = b.shl(b.zext(raw, ir.VectorType(ir.IntType(32), lanes)),
                     ir.Constant(ir.VectorType(ir.IntType(32), lanes), [16] * lanes))
        return b.bitcast(wide, self.vec)


def accumulate_over_k(em, k: For, init: list, step, tag: str, unroll: int) -> list:
    """Emit the k loop of a register tile with its accumulators in registers: each
    starts at its `init` value, `step(accs)` gives the next values, and the values after
    the loop (init when it runs no trip) are returned, for the caller to add to C once.
    The loop is unrolled `unroll` times by LLVM (k-unroll hides the FMA latency)."""
    b = em.b
    ity = compute_type(k.var.dtype)
    lo = em.expr_as(k.min, k.var.dtype)
    hi = b.add(lo, em.expr_as(k.extent, k.var.dtype))
    pre = b.block
    body_bb = em.ctx.new_block(f"{k.var.name}.{tag}.body")
    exit_bb = em.ctx.new_block(f"{k.var.name}.{tag}.exit")
    b.cbranch(b.icmp_signed("<", lo, hi), body_bb, exit_bb)
    b.position_at_end(body_bb)
    iv = b.phi(ity, name=k.var.name)
    iv.add_incoming(lo, pre)
    accs = [b.phi(v.type) for v in init]
    for phi, v in zip(accs, init):
        phi.add_incoming(v, pre)
    em.ctx.env[k.var] = iv
    new = step(accs)
    nxt = b.add(iv, ir.Constant(ity, 1), flags=("nsw",))
    latch = b.cbranch(b.icmp_signed("<", nxt, hi), body_bb, exit_bb)
    latch.set_metadata("llvm.loop", loop_metadata(b.module, "unroll", False, unroll))
    iv.add_incoming(nxt, b.block)
    for phi, v in zip(accs, new):
        phi.add_incoming(v, b.block)
    last = b.block
    b.position_at_end(exit_bb)
    outs = []
    for v0, v1 in zip(init, new):       # phis first: LLVM wants them atop the block
        out = b.phi(v0.type)
        out.add_incoming(v0, pre)
        out.add_incoming(v1, last)
        outs.append(out)
    return outs


def c_rows_prefetch(b: ir.IRBuilder, ptrs, row_bytes: int) -> None:
    """Prefetch every cache line of the C rows at `ptrs` into L1, for writing: they
    are added into once after the k loop, whose FMAs hide the fetch."""
    for p in ptrs:
        prefetch.lines(b, p, range(0, row_bytes, 64), write=True, locality=3)
