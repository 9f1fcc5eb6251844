"""Streaming (non-temporal) stores: the CPU's reading of `eviction_policy="evict_first"`.

`T.copy(src, dst, eviction_policy="evict_first")` says the copied data will not be read
again soon; `lower_tile_ops` puts the hint on the copy's innermost loop. Written through
the caches, every destination line would first be read for ownership and then evict
something useful; a non-temporal store writes whole lines to memory instead. x86 has
them for aligned full vectors only, so a loop of at least a line's worth of elements
is emitted in three parts (a shorter one is the plain loop):

    head   the elements before the first 64-byte boundary, stored one by one
    lines  every whole 64-byte line after it: each lane's value computed as the loop
           body computes it, the lanes gathered into one vector, stored `!nontemporal`
           at alignment 64
    tail   the elements after the last whole line, stored one by one

(Masked vector stores for the partial lines measured twice as slow on the whole loop as
these few scalar stores.)

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
    mis = b.and_(b.ptrtoint(first, I64), ir.Constant(I64, LINE - 1))
    # elements before the first line boundary (lines need elements aligned to their size)
    to_line = b.udiv(b.and_(b.sub(ir.Constant(I64, LINE), mis), ir.Constant(I64, LINE - 1)),
                     ir.Constant(I64, elem))
    aligned = b.icmp_unsigned("==", b.urem(mis, ir.Constant(I64, elem)), ir.Constant(I64, 0))
    plain = b.or_(b.icmp_signed("<", n, ir.Constant(ty, lanes)), b.not_(aligned))
    with b.if_else(plain) as (then, otherwise):
        with then:               # under a line, or misaligned elements: the plain loop
            em.counted_loop(ty, lo, hi, lambda iv: em._loop_body(loop, iv),
                            loop_metadata(em.ctx.module, loop.kind, False),
                            f"{loop.var.name}.plain")
        with otherwise:
            head = b.trunc(to_line, ty) if ty != I64 else to_line
            _emit_lines(em, loop, store, lo, hi, b.add(lo, head), lanes, ty)


def _emit_lines(em, loop: For, store: Store, lo, hi, lines_at, lanes: int, ty) -> None:
    """hi - lo >= lanes, `lines_at` the first element on a line boundary: the elements
    before it and those after the last whole line stored one by one, every whole line
    streamed."""
    b = em.b
    count = b.sdiv(b.sub(hi, lines_at), ir.Constant(ty, lanes))
    tail_at = b.add(lines_at, b.mul(count, ir.Constant(ty, lanes)))
    body = lambda iv: em._loop_body(loop, iv)                              # noqa: E731
    em.counted_loop(ty, lo, lines_at, body, None, f"{loop.var.name}.head")
    em.counted_loop(ty, ir.Constant(ty, 0), count,
                    lambda k: _line(em, loop, store, b.add(lines_at, b.mul(
                        k, ir.Constant(ty, lanes), flags=("nsw",)), flags=("nsw",)),
                        lanes), None, f"{loop.var.name}.lines")
    em.counted_loop(ty, tail_at, hi, body, None, f"{loop.var.name}.tail")


def _line(em, loop: For, store: Store, base, lanes: int) -> None:
    """One destination line: `lanes` values computed as the body computes them, gathered
    into one vector, one non-temporal store."""
    b, dt = em.b, store.buffer.dtype
    ty = base.type
    vec = ir.Constant(ir.VectorType(storage_type(dt), lanes), ir.Undefined)
    for k in range(lanes):
        em.ctx.env[loop.var] = b.add(base, ir.Constant(ty, k), flags=("nsw",)) if k else base
        value = convert.to_storage(b, dt, em.expr_as(store.value, dt))
        vec = b.insert_element(vec, value, ir.Constant(I32, k))
    em.ctx.env[loop.var] = base
    ptr, _ = em.address(store.buffer, store.indices)
    inst = b.store(vec, ptr, align=LINE)
    inst.set_metadata("nontemporal", em.ctx.module.add_metadata([ir.Constant(I32, 1)]))


__all__ = ["streams", "uses_streams", "try_emit", "fence", "LINE"]
