"""Explaining a deadlock: who waits on what, and the circular wait when there is one.

Called when the event queue is empty but blocks remain. Each blocked unit (a core's
scalar unit or an engine) waits on something; it depends on the units that could still
provide it: the engine whose queued instruction would signal the semaphore, the scalar
unit that has yet to dispatch such an instruction, the engine whose full queue the scalar
unit waits on. A cycle in that graph is the circular wait reported.
"""
from __future__ import annotations

from .errors import DeadlockError


def _unit(core, eng=None) -> str:
    return f"{core.label} {'scalar' if eng is None else eng.name}"


def _signallers(core, sem) -> list[str]:
    """Units of `core`'s block that could still arrive at `sem`."""
    out = []
    for eng in core.engines:
        if any(op.signal is sem for op in core.queues[eng.index]):
            out.append(_unit(core, eng))
    for d in core.code[core.pc:]:
        sig = d.signal if d.engine >= 0 else (d.args[0] if d.op == "SEM.ARRIVE" else None)
        if sig is not None and sig[0] == sem.name:
            out.append(_unit(core))
            break
    return out


def _head_wait(core, eng):
    """(sem, phase) the head of the block's queue for `eng` waits on, if any."""
    queue = core.queues[eng.index]
    if not queue:
        return None
    for sem, ph in queue[0].waits:
        if sem.phase <= ph:
            return sem, ph
    return None


def _graph(sim):
    waits, edges = [], {}
    for core in sim.cores:
        if core.done or core.block is None:
            continue
        b = core.blocked
        me = _unit(core)
        if b is not None and b[0] == "sem":
            s, v = b[1], b[2]
            waits.append(f"{me} waits on {s.name}@{v} (SEM.WAIT; {s.phase} phases done, "
                         f"{s.arrivals}/{s.count} arrivals)")
            edges[me] = _signallers(core, s)
        elif b is not None and b[0] == "queue":
            waits.append(f"{me} waits for room in the {b[1].name} queue")
            edges[me] = [_unit(core, b[1])]
        elif b is not None:
            busy = [_unit(core, e) for e in core.engines if core.queues[e.index]]
            waits.append(f"{me} waits at {b[0].upper()} for {', '.join(busy)}")
            edges[me] = busy
        for eng in core.engines:
            hw = _head_wait(core, eng)
            if hw is not None:
                s, v = hw
                head = core.queues[eng.index][0].di
                waits.append(f"{_unit(core, eng)} waits on {s.name}@{v} before {head.op} "
                             f"(instruction {head.index}) ({s.phase} phases done, "
                             f"{s.arrivals}/{s.count} arrivals)")
                edges[_unit(core, eng)] = _signallers(core, s)
    for group in sim.mcast.values():
        head = group[0]
        waits.append(f"{head.core.label} DMA_IN waits in a multicast load (instruction "
                     f"{head.di.index}) for its cluster: {len(group)} of "
                     f"{head.core.gang.active_size} blocks issued it (every block of a "
                     f"cluster must issue its multicast loads in the same order)")
    return waits, edges


def _cycle(edges) -> list[str] | None:
    state: dict[str, int] = {}
    path: list[str] = []

    def dfs(u):
        state[u] = 1
        path.append(u)
        for v in edges.get(u, ()):
            if state.get(v) == 1:
                return path[path.index(v):] + [v]
            if v not in state and v in edges:
                found = dfs(v)
                if found:
                    return found
        path.pop()
        state[u] = 2
        return None

    for u in edges:
        if u not in state:
            found = dfs(u)
            if found:
                return found
    return None


def explain(sim) -> DeadlockError:
    waits, edges = _graph(sim)
    cycle = _cycle(edges)
    if cycle:
        msg = "deadlock: circular wait " + " -> ".join(cycle)
    else:
        msg = "deadlock: every unit waits and nothing can signal it"
    if waits:
        msg += "\n  " + "\n  ".join(waits)
    return DeadlockError(msg, waits, cycle)
