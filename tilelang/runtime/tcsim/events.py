"""The simulator's event loops, over its agenda (sim.py: a heap of distinct times, each
time's events in push order).

`run_general` handles each event with the simulator's methods: functional runs
(numerics), the race detector and traces take it. A timing-only run spends its time in
a few handlers called once per event — an instruction completing (its arrival at its
semaphore, the waiters it wakes), a tensor-core or vector engine trying to start its
queue's head, a scalar unit resuming — and `run_timing` runs them inline, with the same
decisions in the same order: every event is handled at the same place, so every count
is the same (tests/tcsim/test_engine_counts.py runs both).
"""
from __future__ import annotations

import gc
import heapq

from .errors import SimError
from . import machine
from .decode import K_HALT
from .machine import DONE, STEP, TRY, Core


def run_general(sim) -> None:
    """Run `sim`'s events to the end, each by the simulator's handler."""
    times, at, pop, push = sim.times, sim.at, heapq.heappop, sim.push
    try_start, complete, pool_event = sim.try_start, sim.complete, sim._pool_event
    limit = sim.max_events or 0
    count = 0
    while times:
        t = pop(times)
        # events pushed for `t` while its events run join the end of its list, and a
        # list's iterator reaches what is appended to it while it runs
        for kind, obj, arg in at[t]:
            if kind == DONE:
                complete(obj, t)
            elif kind == TRY:
                # try_start's first two steps, inline: most tries find it busy
                if obj.data_active:
                    pass
                elif obj.busy_until > t:
                    _push(times, at, obj.busy_until, obj.try_event)
                else:
                    try_start(obj, t)
            elif kind == STEP:
                if obj.blocked is None and not obj.done:
                    obj.step(t)
            elif arg == obj.version:
                pool_event(obj, t)
            if limit:
                count += 1
                if count > limit:
                    raise SimError(f"simulation exceeded {limit} events")
        del at[t]


def run_timing(sim) -> None:
    """Run `sim`'s events to the end (timing mode: no numerics, hazards or trace).

    Python's cycle collector stays off meanwhile: the loop allocates and frees
    millions of events and in-flight instructions, which reference counting frees
    (once handled, none is part of a cycle), and the collector's passes over them cost
    about a tenth of the run; it is switched back on (if it was on) however the run
    ends."""
    if sim.max_events:          # counted: the general loop (the same decisions)
        run_general(sim)
        return
    was_on = gc.isenabled()
    gc.disable()
    try:
        _timing_loop(sim)
    finally:
        if was_on:
            gc.enable()


def _timing_loop(sim) -> None:
    times, at = sim.times, sim.at
    pop, heappush = heapq.heappop, heapq.heappush
    try_start, pool_event = sim.try_start, sim._pool_event
    resume = _resumer(sim)
    start_fixed = _fixed_starter(sim, resume)
    code, depth = sim.code, sim.cfg.queue_depth
    try_k, done_k, step_k = TRY, DONE, STEP        # locals: read once per event
    halt_k, halted, fenced = K_HALT, machine.HALTED, machine.FENCED
    block_done = sim.block_done
    core_cls = Core
    while times:
        t = pop(times)
        # events pushed for `t` while its events run join the end of its list, and a
        # list's iterator reaches what is appended to it while it runs
        events = at[t]
        for kind, obj, arg in events:
            if kind == try_k:            # the commonest kind first
                if obj.solo_fixed:
                    # an MMA / VEC engine of one block slot (never data_active):
                    # _startable written out — a third of the tries find the head
                    # waiting, and only a head that can start costs a call
                    bu = obj.busy_until
                    if bu > t:
                        later = bu
                    else:
                        queue = obj.slots[0].queues[obj.index]
                        if not queue:
                            continue
                        op = queue[0]
                        later = op.ready
                    if later > t:
                        pushed = at.get(later)          # _push, written out
                        if pushed is None:
                            at[later] = [obj.try_event]
                            heappush(times, later)
                        else:
                            pushed.append(obj.try_event)
                        continue
                    for sem, ph in op.waits:
                        if sem.phase <= ph:
                            if obj not in sem.waiters:
                                sem.waiters.append(obj)
                            if not obj.waiting:
                                obj.waiting = True
                                obj.wait_since = t
                            break
                    else:
                        start_fixed(obj, queue, op, t, events)
                elif obj.data_active:
                    pass
                elif obj.busy_until > t:
                    _push(times, at, obj.busy_until, obj.try_event)
                else:
                    try_start(obj, t)
            elif kind == done_k:
                core = obj.core
                inflight = core.inflight - 1
                core.inflight = inflight
                sem = obj.signal
                if sem is not None:
                    arrivals = sem.arrivals + 1
                    nbytes = sem.bytes + obj.nbytes
                    if arrivals < sem.count or nbytes < sem.expect:
                        sem.arrivals = arrivals
                        sem.bytes = nbytes
                    else:
                        sem.phase += 1
                        sem.arrivals = sem.bytes = sem.expect = 0
                        waiters = sem.waiters
                        if waiters:
                            sem.waiters = []
                            for w in waiters:
                                if type(w) is core_cls:
                                    w.wake(t)
                                else:
                                    events.append(w.try_event)    # at t
                if inflight == 0:         # (a wake above only posts an event)
                    b = core.blocked
                    if b is halted or b is fenced:
                        q0, q1, q2, q3 = core.queues
                        if not (q0 or q1 or q2 or q3):
                            # Core.wake, written out: its step joins this time's events
                            core.stall["drain"] += t - core.blocked_since
                            core.blocked = None
                            events.append(core.step_event)
            elif kind == step_k:
                if obj.blocked is None and not obj.done:
                    d = code[obj.pc]
                    if obj.t > t or obj.loading:
                        obj.step(t)
                    elif d.engine < 0:
                        if d.block is not None:
                            resume(obj, d, t)
                        elif d.kind != halt_k:
                            obj.step(t)
                        # Core.step at a HALT, written out (a block's last visit,
                        # and the one before it while its work drains)
                        elif obj.inflight or obj.queues[0] or obj.queues[1] or \
                                obj.queues[2] or obj.queues[3]:
                            obj.blocked = halted
                            obj.t = obj.blocked_since = t
                        else:
                            sim.instructions += 1
                            block_done(obj, t)
                    elif len(obj.queues[d.engine]) >= depth:
                        # Core.step's decision where the unit stands at an engine
                        # instruction whose queue is still full (a unit that stopped
                        # there comes back to find it so): it blocks, nothing else
                        obj.blocked = ("queue", obj.engines[d.engine])
                        obj.t = obj.blocked_since = t
                    else:
                        resume(obj, d, t)
            elif arg == obj.version:
                pool_event(obj, t)
        del at[t]


def _resumer(sim):
    """`Core.step` of a unit at `now` standing at instruction `d` (its pc; an engine
    instruction's queue has room), with no scalar load in flight and its time not past
    `now`: the compiled region from there (runs.py) runs without the interpreter's
    set-up, and where it stops at a full queue, `Core._stop_at_full`'s decision is
    taken here. A region run to a HALT ahead of the clock takes Core.step's early
    block there; a region run to another end, or an instruction without one, goes on
    in `Core.step`."""
    times, at, code = sim.times, sim.at, sim.code
    early = machine.EARLY_BLOCK
    full_past, share = machine.full_past, sim.transfer_share
    halts = [d.kind == K_HALT for d in code] + [False]

    def resume(core, d, now) -> None:
        block = d.block
        if block is None:
            core.step(now)
            return
        fn, end = block
        pc, t, n = fn(core, core.regs, now)
        sim.instructions += n
        core.pc, core.t = pc, t
        if pc == end:
            if halts[end] and t > now and early and core._busy_past(t, now):
                core.blocked = machine.HALTED
                core.blocked_since = t
            else:
                core.step(now)
            return
        eng = core.engines[code[pc].engine]
        if t > now and not (early and not core.loading and full_past(eng, t, share)):
            _push(times, at, t, core.step_event)
        else:
            core.blocked = ("queue", eng)
            core.blocked_since = t
    return resume


def _fixed_starter(sim, resume):
    """`Simulator.try_start` for an MMA or VEC engine with one block slot, free at
    `now` (whose events are the list `events_now`), whose queue's head `op` can start
    (`_startable`), as a closure over the run's state: start it (and the heads after it while the engine stays free). Its two
    events per start go on the agenda as `Simulator.push` puts them, written out."""
    times, at = sim.times, sim.at
    flops, useful, counts = sim.flops, sim.useful, sim.bytes
    from .useful import on_mma as useful_mma, on_vec as useful_vec, on_zero as useful_zero
    heappush = heapq.heappush
    code, depth1 = sim.code, sim.cfg.queue_depth - 1

    def start_fixed(eng, queue, op, now, events_now) -> None:
        core = eng.slots[0]
        while True:
            if eng.waiting:
                eng.stall_sem += now - eng.wait_since
                eng.waiting = False
            # (an engine of one slot keeps no `queued` bits: only _pick reads them)
            queue.popleft()
            d = op.di
            b = core.blocked
            refill = False
            if b is not None and b[0] == "queue" and b[1] is eng:
                # the unit would dispatch its instruction and the scalar ones after it
                # (DI.refill) and block at the next one for this engine, busy till
                # then, whose queue is full again: no event of its own, nothing anyone
                # reads before its own place in this time's events, so it runs at the
                # pop (the margin of a cycle covers how its time's sum rounds)
                span = code[core.pc].refill
                refill = span and d.cycles > span + 1.0 and not core.loading and \
                    len(queue) == depth1
                if not refill:
                    # Core.wake of a unit blocked on this queue: its step goes on at
                    # the end of this time's events (`events_now`, the list
                    # run_timing is handling)
                    core.stall["queue_full"] += now - core.blocked_since
                    core.blocked = None
                    events_now.append(core.step_event)
            # Simulator._start, an MMA / VEC instruction: a fixed cost (`op.start` is
            # for traces, which a timing run has none of)
            core.inflight += 1
            dur = d.cycles
            busy_until = now + dur
            eng.busy_until = busy_until
            eng.busy += dur
            done = busy_until + d.latency
            events = at.get(done)
            if events is None:
                at[done] = [(DONE, op, None)]
                heappush(times, done)
            else:
                events.append((DONE, op, None))
            valid = core.valid
            if d.flops:
                dt = d.mma_dtype
                flops[dt] = flops.get(dt, 0.0) + d.flops
                u = useful_mma(valid, d, op.stages, d.ta, d.tb) if valid else d.flops
                useful[dt] = useful.get(dt, 0.0) + u
                if d.smem_bytes:
                    counts["smem"] += d.smem_bytes
            elif d.engine == 2:
                useful_zero(valid, d.tiles[0], op.stages[0])
            elif valid:
                useful_vec(valid, d, op.stages)
            if busy_until > now:
                events = at.get(busy_until)
                if events is None:
                    at[busy_until] = [eng.try_event]
                    heappush(times, busy_until)
                else:
                    events.append(eng.try_event)
                if refill:
                    _resume_at_pop(core, now, resume)
                return
            # a zero-cost instruction: the engine is free again at once
            op = _startable(times, at, eng, queue, now)
            if op is None:
                return
    return start_fixed


def _resume_at_pop(core, now, resume) -> None:
    """`Core.wake` of a unit blocked on a full queue and the step it would post, run at
    once (a refill at the pop: start_fixed)."""
    core.stall["queue_full"] += now - core.blocked_since
    core.blocked = None
    if core.t > now:
        core.step(now)
    else:
        resume(core, core.code[core.pc], now)


def _push(times, at, t, event) -> None:
    """`Simulator.push` of an (kind, object, argument) event."""
    events = at.get(t)
    if events is None:
        at[t] = [event]
        heapq.heappush(times, t)
    else:
        events.append(event)
