"""`T.Pipelined(n, order=[...], stage=[...], group=[...])`: a software-pipelined loop
whose schedule the kernel states, as TileLang's manual pipelines do (FlashAttention-3's
intra-warpgroup overlap: the QK^T of iteration i+1 is issued before the softmax and
PV of iteration i).

The loop body's scheduled statements (every top-level statement but the lets, which are
replayed before each group that reads them) form groups (`group=`, one group per statement without it); each
group has a pipeline `stage` and an `order` within a pipeline step. Step t runs every
group g, in `order`, for iteration t - stage[g]. A group with stage -1 is a producer
(TileLang's warp-specialised loads): it runs num_stages - 1 steps (at least one) ahead
of the earliest group that reads what it writes.

A buffer written in a group of stage w and read in a group of stage r > w is live across
r - w steps: it gets r - w + 1 copies, and the step loop is unrolled so that every
access names its copy statically (iteration i uses copy i % copies). Each copy is a
buffer of its own to the synchronisation protocol, which is what lets a later step's
writes run while an earlier step's reads are still queued; these copies are the
registers a warp-specialised kernel's two consumer pipelines hold.
"""
from __future__ import annotations

from math import lcm

from dataclasses import replace

from ...ir.nodes import Alloc, Buffer, Const, For, If, Let, Seq, Var
from ...ir.visitor import rewrite, walk
from ...targets.tcsim.isa import Imm, Reg
from .scalar import unsupported


def has_schedule(loop: For) -> bool:
    return loop.annotation("order") is not None or loop.annotation("stage") is not None


def lower_scheduled(st, loop: For) -> None:
    stmts = list(loop.body.stmts if isinstance(loop.body, Seq) else (loop.body,))
    lets, scheduled = _split_lets(stmts)
    groups, stages, orders = _groups(loop, scheduled)
    lead = max(1, int(loop.annotation("num_stages", 2) or 2) - 1)
    stages = _producer_stages(st, groups, stages, lead)
    copies = _copies(st, loop, groups, stages)
    unroll = lcm(*copies.values()) if copies else 1
    em = st.em
    replaced = st.__dict__.setdefault("replaced_by_copies", {})
    for name, n in copies.items():
        # its copies replace it (an earlier scheduled loop may have replaced it already)
        d = replaced.setdefault(name, em.buffers.pop(name, None))
        for v in range(n):
            if _copy_name(name, v) not in em.buffers:
                # the first copy takes the buffer's place in the arena plan (its slot is
                # reserved for the loop), the others sit on top
                em.declare(_copy_name(name, v), d.level, d.dtype, d.shape,
                           offset=d.offset if v == 0 else None)
                st.local[_copy_name(name, v)] = replace(st.local[name],
                                                        name=_copy_name(name, v))
    first, last = min(stages), max(stages)
    count = Reg(em.reg())
    st.scalar.into(count, loop.extent)
    steps = Reg(em.reg())                       # ceil((n + last - first) / unroll)
    em.emit("ADDI", steps, count, Imm(last - first + unroll - 1))
    em.emit("FDIV", steps, steps, Imm(unroll))
    base = Reg(em.reg())
    em.emit("MOV", base, Imm(first))
    it, lo, hi = Reg(em.reg()), Reg(em.reg()), Reg(em.reg())
    em.emit("LOOP", steps)
    for u in range(unroll):
        for g in sorted(range(len(groups)), key=lambda k: (orders[k], k)):
            shift = u - stages[g]
            em.emit("ADDI", it, base, Imm(shift))      # the iteration this group runs
            em.emit("GE", lo, it, Imm(0))
            em.emit("LT", hi, it, count)
            em.emit("AND", lo, lo, hi)
            em.emit("IF", lo)
            _bind(st, loop, it)
            names = {n: _copy_name(n, (first + shift) % c) for n, c in copies.items()}
            for let in _needed(lets, groups[g]):      # replayed for this iteration
                st.stmt(let)
            for s in groups[g]:
                st.stmt(_renamed(s, names))
            em.emit("ENDIF")
    em.emit("ADDI", base, base, Imm(unroll))
    em.emit("ENDLOOP")


def _split_lets(stmts):
    """(the body's lets, in order; the scheduled statements)."""
    lets = [s for s in stmts if isinstance(s, Let)]
    return lets, [s for s in stmts if not isinstance(s, Let)]


def _needed(lets, stmts) -> list:
    """The lets `stmts` read, with the lets those read, in program order."""
    used = {n for s in stmts for n in walk(s) if isinstance(n, Var)}
    out = []
    for let in reversed(lets):
        if let.var in used:
            out.append(let)
            used |= {n for n in walk(let.value) if isinstance(n, Var)}
    return out[::-1]


def _groups(loop: For, scheduled):
    order = loop.annotation("order")
    stage = loop.annotation("stage")
    group = loop.annotation("group") or tuple((i,) for i in range(len(scheduled)))
    if order is None or stage is None:
        raise unsupported(loop, "a T.Pipelined schedule needs both `order=` and `stage=`")
    members = [i for g in group for i in g]
    if sorted(members) != list(range(len(scheduled))):
        raise unsupported(loop, f"`group=` must name each of the loop's {len(scheduled)} "
                                f"scheduled statements once (lets are not counted)")
    if not len(order) == len(stage) == len(group):
        raise unsupported(loop, f"`order=` and `stage=` need one entry per group "
                                f"({len(group)}), not {len(order)} and {len(stage)}")
    return [[scheduled[i] for i in g] for g in group], list(stage), list(order)


def _producer_stages(st, groups, stages, lead: int):
    """Stage -1 (a producer): `lead` steps (num_stages - 1, at least one) before the
    earliest group reading what it writes."""
    out = list(stages)
    for g, s in enumerate(stages):
        if s != -1:
            continue
        written = {n for n in st.local if any(n in x.effects().writes() for x in groups[g])}
        readers = [stages[k] for k in range(len(groups)) if k != g and stages[k] >= 0
                   and _uses(groups[k], written)]
        out[g] = (min(readers) if readers else 0) - lead
    return out


def _copies(st, loop, groups, stages) -> dict[str, int]:
    """On-chip buffer -> copies, for the buffers live across pipeline steps."""
    out = {}
    outside = _used_outside(st, loop)
    for name in list(st.local):
        writers = [k for k, g in enumerate(groups)
                   if any(name in x.effects().writes() for x in g)]
        if not writers:
            continue
        w = {stages[k] for k in writers}
        readers = [stages[k] for k in range(len(groups))
                   if k not in writers and _uses(groups[k], {name})]
        span = max((r - min(w) for r in readers), default=0)
        if len(w) > 1 and span:
            raise unsupported(loop, f"`{name}` is written in pipeline stages "
                                    f"{sorted(w)} and read in a later one")
        if any(r < min(w) for r in readers) and span:
            raise unsupported(loop, f"`{name}` is read in a stage before the one writing "
                                    f"it and in one after")
        if span and name in outside:
            raise unsupported(loop, f"`{name}` lives across pipeline stages and is used "
                                    f"outside the loop")
        if span:
            out[name] = span + 1
    return out


def _used_outside(st, loop: For) -> set[str]:
    """Buffers the kernel uses outside `loop` and outside every other scheduled loop
    (whose own copies keep the values of such a buffer inside that loop); the
    allocations do not count."""
    used: set[str] = set()

    def visit(node):
        if isinstance(node, For) and (node is loop or has_schedule(node)):
            return
        if isinstance(node, Alloc):
            return
        if isinstance(node, Seq):
            for x in node.stmts:
                visit(x)
        elif isinstance(node, For):
            visit(node.body)
        elif isinstance(node, If):
            visit(node.then_body)
            if node.else_body is not None:
                visit(node.else_body)
        else:
            used.update(n.name for n in walk(node) if isinstance(n, Buffer))
    visit(st.kernel_body)
    return used


def _uses(stmts, names) -> bool:
    return any(isinstance(n, Buffer) and n.name in names for s in stmts for n in walk(s))


def _copy_name(name: str, v: int) -> str:
    return f"{name}__c{v}"


def _renamed(stmt, names: dict):
    """`stmt` with each multi-copy buffer replaced by the copy of this step."""
    if not names:
        return stmt
    cache = {}

    def fn(n):
        if isinstance(n, Buffer) and n.name in names:
            if n.name not in cache:
                cache[n.name] = replace(n, name=names[n.name])
            return cache[n.name]
        return None
    return rewrite(stmt, fn)


def _bind(st, loop: For, it: Reg) -> None:
    if isinstance(loop.min, Const) and loop.min.value == 0:
        st.env[loop.var] = it
    else:
        r = Reg(st.em.reg())
        st.em.emit("ADD", r, it, st.scalar.operand(loop.min))
        st.env[loop.var] = r
