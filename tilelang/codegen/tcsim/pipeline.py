"""`T.Pipelined(n, num_stages=s)`: an s-stage ring of on-chip buffers, loads issued s-1
iterations ahead.

The loop's *producers* are the T.copy statements among the producers of its stage
buffers (`ir/pipelining.py`, the rule the arena planner follows too: a copy from global
memory into an on-chip buffer B that nothing else in the loop writes, that no statement
mentions before the copy, that is not used outside the loop, and whose source the loop
does not write). Each such B becomes a ring of s stages; iteration k uses stage k % s.
The prologue issues the producers of iterations 0 .. s-2; iteration k
issues the producers of iteration k + s - 1 (when it exists), then runs the rest of the
body. Synchronisation is the emitter's protocol, except that readers of B wait for the
load of *their* iteration, not the latest one: a chain of s registers holds the DMA
phases of the last s loads (shifted once per iteration), and readers wait on its oldest.
Overwriting stage k % s waits for the last reads of B, which are those of iteration k-1
— the same stage. With s = 1 nothing overlaps: load, wait, compute, wait, load.
"""
from __future__ import annotations

from ...ir.nodes import Alloc, Const, Copy, For, If, Let, Load, Seq, Stmt, Var
from ...ir.pipelining import stage_producers
from ...ir.visitor import substitute, walk
from ...targets.tcsim.isa import Imm, Reg


def _producers(st, loop: For, stmts) -> list[int]:
    """Indices (in stmts) of the loop's stage producers (`ir/pipelining.py`) that are
    copies: the loads the DMA engine can issue ahead."""
    found = stage_producers(loop.body, lambda name: name in st.local, _outside_uses(st, loop))
    return sorted(i for i in found.values() if isinstance(stmts[i], Copy))


def _outside_uses(st, loop: For) -> set[str]:
    """Buffers the statements of the kernel outside `loop` use (allocations excluded)."""
    inside = {id(n) for n in walk(loop)}
    out = set()
    for n in walk(st.kernel_body):
        if id(n) in inside:
            continue
        if isinstance(n, Load):
            out.add(n.buffer.name)
        elif isinstance(n, Stmt) and not isinstance(n, (Seq, For, If, Alloc)):
            out |= n.effects().names()
    return out


def lower_pipelined(st, loop: For) -> bool:
    stages = int(loop.annotation("num_stages", 1) or 1)
    stmts = list(loop.body.stmts if isinstance(loop.body, Seq) else (loop.body,))
    prod_idx = _producers(st, loop, stmts)
    if not prod_idx:
        return False
    em = st.em
    producers = [stmts[i] for i in prod_idx]
    rest = [s for i, s in enumerate(stmts) if i not in prod_idx]
    for p in producers:
        d = em.buffers[p.dst.buffer.name]
        # the arena plan (memory_reuse with TCSIM_RULES, rings=True) reserved `stages`
        # copies for this stage buffer at its offset: the ring fits there
        em.declare(d.name, d.level, d.dtype, d.shape, stages, offset=d.offset)
        em.chains[d.name] = [em.reg() for _ in range(stages)]
    inline = _let_inliner(stmts, prod_idx)
    count = Reg(em.reg())
    st.scalar.into(count, loop.extent)
    j, slot, ok = Reg(em.reg()), Reg(em.reg()), Reg(em.reg())
    jvar = Var(f"__pipe_{loop.var.name}", loop.var.dtype)
    for it in range(stages - 1):                       # prologue: iterations 0 .. s-2
        em.emit("MOV", j, Imm(it))
        _issue(st, producers, inline, loop, jvar, j, slot, ok, count, stages)
    k, kslot = Reg(em.reg()), Reg(em.reg())
    em.emit("MOV", k, Imm(0))
    em.emit("LOOP", count)
    em.emit("ADDI", j, k, Imm(stages - 1))
    _issue(st, producers, inline, loop, jvar, j, slot, ok, count, stages)
    em.emit("MOD", kslot, k, Imm(stages))
    for p in producers:
        em.stage_reg[p.dst.buffer.name] = kslot
    _bind_var(st, loop.var, loop.min, k)
    for s in rest:
        st.stmt(s)
    em.emit("ADDI", k, k, Imm(1))
    em.emit("ENDLOOP")
    return True


def _bind_var(st, var: Var, minimum, reg: Reg) -> None:
    if isinstance(minimum, Const) and minimum.value == 0:
        st.env[var] = reg
    else:
        r = Reg(st.em.reg())
        st.em.emit("ADD", r, reg, st.scalar.operand(minimum))
        st.env[var] = r


def _let_inliner(stmts, prod_idx):
    """Substitution of the body's lets (in order) for the producers' expressions."""
    mapping = {}
    for i, s in enumerate(stmts):
        if i >= max(prod_idx):
            break
        if isinstance(s, Let):
            mapping[s.var] = substitute(s.value, mapping)
    return mapping


def _issue(st, producers, inline, loop, jvar, j, slot, ok, count, stages) -> None:
    """Issue the producers of iteration j (when j < count), shifting the chains."""
    em = st.em
    em.emit("MOD", slot, j, Imm(stages))
    em.emit("LT", ok, j, count)
    _bind_var(st, jvar, loop.min, j)
    for p in producers:
        name = p.dst.buffer.name
        chain = em.chains[name]
        for a in range(len(chain) - 1, 0, -1):
            em.emit("MOV", Reg(chain[a]), Reg(chain[a - 1]))
        em.stage_reg[name] = slot
        em.emit("IF", ok)
        st.copy(substitute(substitute(p, inline), {loop.var: jvar}))
        em.emit("MOV", Reg(chain[0]), Reg(em.counter["DMA_IN"]))
        em.emit("ENDIF")
