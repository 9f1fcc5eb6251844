"""Streaming (non-temporal) stores: the CPU's reading of `eviction_policy="evict_first"`.

`T.copy(src, dst, eviction_policy="evict_first")` says the copied data will not be read
again soon; `lower_tile_ops` puts the hint on the copy's innermost loop. Written through
the caches, every destination line would first be read for ownership and then evict
something useful; a non-temporal store writes whole lines to memory instead. x86 has
them for aligned full vectors only. A loop whose destination starts on a 64-byte line
boundary, with at least a line's worth of elements, is emitted as

    lines  every whole line: each lane's value computed as the loop body computes it,
           the lanes gathered into one vector, stored `!nontemporal` at alignment 64
    tail   the elements after the last whole line: the line's worth of elements up to
           the end computed as one vector into the stack, then stored one by one

and any other as the plain loop. A destination off the line boundary is not streamed
at all: each block would then leave partial lines at both ends, stored through the
cache next to lines in flight to memory, and that measured slower than plain stores
throughout (so are masked vector stores for the partial lines).

This applies when the body is one unguarded store to a global tensor, at unit stride
along the loop, of a value that does not read the stored tensor; anything else (a guarded
body at a ragged edge, a strided or block-local destination) is the plain loop. The hint
never changes a result.

Non-temporal stores are weakly ordered: a kernel that has them fences (`sfence`) before
it publishes anything (a signal, a barrier arrival, an atomic) and at the end of each
chunk of blocks, so a peer or the launching thread never reads stale lines.
"""
from __future__ import annotations

from llvmlite import ir

from ... import dtypes
from ...ir.nodes import Binary, For, Load, Store, Var
from ...ir.visitor import walk
from . import convert
from .context import entry_alloca
from .metadata import loop_metadata
from .types import I32, I64, VOID, compute_type, storage_type

LINE = 64                     # bytes a streaming store writes: one cache line
HINT = "eviction_policy"


def streams(loop: For) -> bool:
    return loop.annotation(HINT) == "evict_first"


def uses_streams(body) -> bool:
    """Whether a kernel body has a loop that may store non-temporally (it then fences)."""
    return any(isinstance(n, For) and streams(n) for n in walk(body))


def try_emit(em, loop: For) -> bool:
    """Emit `loop` with streaming stores if its hint and shape allow; False otherwise."""
    if not streams(loop):
        return False
    store = _streamable_store(loop)
    if store is None:
        return False
    _emit(em, loop, store)
    return True


def fence(em) -> None:
    """Order the streaming stores before whatever follows (x86: sfence)."""
    b = em.b
    if em.ctx.module.triple.startswith(("x86_64", "i386", "i686")):
        b.call(convert.intrinsic(em.ctx.module, "llvm.x86.sse.sfence", VOID, []), [])
    else:
        b.fence("seq_cst")


# ----------------------------------------------------------------------------- shape

def _streamable_store(loop: For) -> Store | None:
    s, var = loop.body, loop.var
    if not isinstance(s, Store) or s.buffer.scope != "global" or not s.indices:
        return None
    if LINE % dtypes.nbytes(s.buffer.dtype):
        return None
    if any(_mentions(i, var) for i in s.indices[:-1]) or not _unit_step(s.indices[-1], var):
        return None
    if any(isinstance(n, Load) and n.buffer.name == s.buffer.name for n in walk(s.value)):
        return None          # lanes are computed before the line is stored
    return s


def _mentions(e, var: Var) -> bool:
    return any(isinstance(n, Var) and n == var for n in walk(e))


def _unit_step(e, var: Var) -> bool:
    """e == var + (something free of var)."""
    if isinstance(e, Var):
        return e == var
    if isinstance(e, Binary) and e.op == "+":
        if not _mentions(e.rhs, var):
            return _unit_step(e.lhs, var)
        if not _mentions(e.lhs, var):
            return _unit_step(e.rhs, var)
    return False


# ----------------------------------------------------------------------------- emission

def _emit(em, loop: For, store: Store) -> None:
    b, elem = em.b, dtypes.nbytes(store.buffer.dtype)
    ty = compute_type(loop.var.dtype)
    lanes = LINE // elem
    lo = em.expr_as(loop.min, loop.var.dtype)
    n = em.expr_as(loop.extent, loop.var.dtype)
    hi = b.add(lo, n)
    em.ctx.env[loop.var] = lo
    first, _ = em.address(store.buffer, store.indices, inbounds=False)
    on_line = b.icmp_unsigned("==", b.and_(b.ptrtoint(first, I64), ir.Constant(I64, LINE - 1)),
                              ir.Constant(I64, 0))
    stream = b.and_(on_line, b.icmp_signed(">=", n, ir.Constant(ty, lanes)))
    with b.if_else(stream) as (then, otherwise):
        with then:
            count = b.sdiv(n, ir.Constant(ty, lanes))
            tail_at = b.add(lo, b.mul(count, ir.Constant(ty, lanes)))
            em.counted_loop(ty, ir.Constant(ty, 0), count,
                            lambda k: _line(em, loop, store, b.add(lo, b.mul(
                                k, ir.Constant(ty, lanes), flags=("nsw",)), flags=("nsw",)),
                                lanes), None, f"{loop.var.name}.lines")
            last = b.sub(hi, ir.Constant(ty, lanes))
            _partial(em, loop, store, last, b.sub(tail_at, last), ir.Constant(ty, lanes))
        with otherwise:     # not on a line boundary, or under a line: the plain loop
            em.counted_loop(ty, lo, hi, lambda iv: em._loop_body(loop, iv),
                            loop_metadata(em.ctx.module, loop.kind, False),
                            f"{loop.var.name}.plain")


def _lanes(em, loop: For, store: Store, base, lanes: int) -> ir.Value:
    """The stored values of elements base .. base + lanes - 1, as the body computes
    them, gathered into one vector (LLVM's SLP vectoriser turns the lanes into vector
    code)."""
    b, dt = em.b, store.buffer.dtype
    ty = base.type
    vec = ir.Constant(ir.VectorType(storage_type(dt), lanes), ir.Undefined)
    for k in range(lanes):
        em.ctx.env[loop.var] = b.add(base, ir.Constant(ty, k), flags=("nsw",)) if k else base
        vec = b.insert_element(vec, em.storage_value(store.value, dt), ir.Constant(I32, k))
    em.ctx.env[loop.var] = base
    return vec


def _line(em, loop: For, store: Store, base, lanes: int) -> None:
    """One destination line, one non-temporal store."""
    vec = _lanes(em, loop, store, base, lanes)
    ptr, _ = em.address(store.buffer, store.indices)
    inst = em.b.store(vec, ptr, align=LINE)
    inst.set_metadata("nontemporal", em.ctx.module.add_metadata([ir.Constant(I32, 1)]))


def _partial(em, loop: For, store: Store, base, first, end) -> None:
    """Elements base + first .. base + end - 1 (the part of the last line the loop
    writes): the line's worth of elements up to the end computed as one vector into the
    stack, then one plain store each (cheaper than a masked vector store here)."""
    b, dt = em.b, store.buffer.dtype
    elem = storage_type(dt)
    lanes = LINE // dtypes.nbytes(dt)
    slot = entry_alloca(em.ctx, ir.ArrayType(elem, lanes), "tail.lanes", LINE)
    with b.if_then(b.icmp_signed("<", first, end)):     # a loop of whole lines has none
        b.store(_lanes(em, loop, store, base, lanes), slot, align=LINE)
        _, align = em.address(store.buffer, store.indices, inbounds=False)

        def one(k):
            em.ctx.env[loop.var] = b.add(base, k, flags=("nsw",))
            ptr, _ = em.address(store.buffer, store.indices)
            value = b.load(b.gep(slot, [k], inbounds=True, source_etype=elem), typ=elem,
                           align=dtypes.nbytes(dt))
            b.store(value, ptr, align=align)

        em.counted_loop(base.type, first, end, one, None, f"{loop.var.name}.tail")


__all__ = ["streams", "uses_streams", "try_emit", "fence", "LINE"]
