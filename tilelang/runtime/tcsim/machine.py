"""Cores, engines and semaphores of the simulated machine: the scalar unit's in-order
interpreter, dispatch into per-engine queues, engine start / completion, arrivals.

Timing rules (docs/tcsim.md has them with examples):
* the scalar unit spends `scalar_cycles` per instruction; an engine instruction it
  dispatches at t is ready for its engine at t + scalar_cycles; a full queue stalls it;
* `LDG` (a scalar load) does not stall the scalar unit: its register is ready
  `l2_latency` (an L2 hit) or `dma_latency` cycles later, and the first instruction
  that names it waits until then (a scoreboard), so independent loads overlap as a
  GPU's in-flight loads do;
* MMA / VEC occupy their engine for their cost (atoms x atom cycles, elements / width),
  and complete `latency` cycles after that (the engine is pipelined);
* a DMA's data phase runs at its bandwidth pool's shared rate (bandwidth.py) and occupies
  its engine's port; it completes `dma_latency` cycles after its last byte;
* an instruction starts only when every `wait=SEM@PHASE` holds (phase PHASE of SEM has
  completed); at completion it arrives at its `signal=` semaphore (with its bytes).
"""
from __future__ import annotations

import heapq
from collections import deque

from .decode import (K_ATOM, K_BIN, K_LDS, K_ELSE, K_ENDIF, K_ENDLOOP, K_FENCE, K_HALT, K_IF,
                     K_LDG, K_LOOP, K_SEL, K_SEM, K_UN, K_BREAKZ, ENGINE_NAMES)

STEP, TRY, DONE, POOL = 0, 1, 2, 3
# a unit's `blocked` at a FENCE (or ATOM) and at a HALT while its block's work drains
# (one object each: the event loop tells them apart by identity)
FENCED, HALTED = ("fence",), ("halt",)

# a scalar unit stopped by a full queue that nothing can pop by the unit's time blocks at
# once (Core._stop_at_full, full_past); False: it always comes back to look (the same
# figures, more events: tests/tcsim/test_engine_counts.py)
EARLY_BLOCK = True


def full_past(eng, t: float, share: float) -> bool:
    """Whether `eng` certainly pops none of its queues up to time `t` (and at it): an
    engine pops a queue only when it starts that queue's head. An MMA / VEC engine of
    one block slot starts only once free, and it is busy past t. A DMA engine of one
    transfer at a time starts only once that transfer's data has moved, and a transfer
    moves at most its port `share` per cycle from its start (`data_since`, its bytes
    `data_moved`; its pools' phases move at least those bytes): it cannot have moved
    before t, with a cycle of margin for how the pools' float sums round."""
    if eng.solo_fixed:
        return eng.busy_until > t
    return eng.data_active and eng.max_transfers == 1 and \
        eng.data_since + eng.data_moved / share > t + 1.0


class Sem:
    __slots__ = ("name", "count", "expect", "arrivals", "bytes", "phase", "waiters")

    def __init__(self, name: str):
        self.name = name
        self.count = 1
        self.expect = 0
        self.arrivals = 0
        self.bytes = 0
        self.phase = 0          # phases completed so far
        self.waiters: list = []


class Op:
    """An engine instruction in flight, its register operands resolved at dispatch."""
    __slots__ = ("di", "ready", "stages", "starts", "stops", "waits", "signal", "vals", "eng",
                 "core", "nbytes", "moved", "start", "data_start", "recs", "fence")


class Engine:
    """One engine of a physical core, shared by the blocks resident on it: each block
    has its own in-order queue, and the engine starts the first ready queue head it finds
    (round robin), as a core's schedulers pick among ready warps."""
    __slots__ = ("index", "name", "phys", "slots", "busy_until", "data_active", "busy",
                 "stall_sem", "stall_bw", "waiting", "wait_since", "seen", "rr", "queued",
                 "transfers", "max_transfers", "data_since", "data_moved", "solo_fixed",
                 "try_event")

    def __init__(self, index: int, phys: int, max_transfers: int = 1):
        self.index = index
        self.name = ENGINE_NAMES[index]
        self.phys = phys
        self.slots: list = []
        self.busy_until = 0.0
        self.data_active = False
        self.busy = 0.0
        self.stall_sem = 0.0
        self.stall_bw = 0.0
        self.waiting = False
        self.wait_since = 0.0
        self.seen: dict = {}
        self.rr = 0
        self.queued = 0             # bit k: slot k's queue for this engine is not empty
        # a DMA engine moves up to `max_transfers` data phases at once (`data_active`:
        # all of them taken); `data_since` / `data_moved`: the current busy period
        self.transfers = 0
        self.max_transfers = max_transfers
        self.data_since = 0.0
        self.data_moved = 0
        self.solo_fixed = False     # an MMA / VEC engine of one block slot (events.py)
        self.try_event = (TRY, self, None)      # its agenda entry (Simulator.push's)


class Core:
    """A block slot of a physical core: the scalar unit, registers, semaphores, buffers
    and engine queues of the block resident there. `id` is the physical core; with one
    block per core (the default) a slot is simply the core."""
    __slots__ = ("sim", "id", "slot", "label", "code", "regs", "pc", "t", "loops",
                 "engines", "queues", "inflight", "sems", "bufs", "bufs_state", "block",
                 "blocked", "blocked_since", "seen", "stall", "done", "block_start",
                 "last_fence", "loading", "valid", "gang", "flat", "cycles", "depth", "fast",
                 "bit", "step_event")

    def __init__(self, sim, cid: int, slot: int, engines: list, multi: bool):
        self.sim = sim
        self.id = cid
        self.slot = slot
        self.bit = 1 << slot                    # its bit in an engine's `queued`
        # a timing run's dispatch builds ops with their compiled makers (runs.py)
        self.fast = not sim.functional
        self.step_event = (STEP, self, None)    # its agenda entry (Simulator.push's)
        self.label = f"core {cid}.{slot}" if multi else f"core {cid}"
        self.code = sim.code
        self.cycles = sim.cfg.scalar_cycles     # per scalar instruction
        self.depth = sim.cfg.queue_depth        # of each engine queue
        self.engines = engines
        self.queues = [deque() for _ in range(4)]
        self.inflight = 0
        self.stall = {"queue_full": 0.0, "sem_wait": 0.0, "drain": 0.0}
        self.done = False
        self.blocked = None
        self.block = None
        self.gang = None
        self.flat = None                        # the semaphores (start_block)
        self.loops, self.seen, self.loading, self.valid = [], {}, {}, {}
        self.bufs, self.bufs_state = None, {}

    # ------------------------------------------------------------------ blocks
    def start_block(self, coords, t: float) -> None:
        sim = self.sim
        self.block = coords
        self.block_start = t
        regs = self.regs = sim.blank_regs.copy()      # the preloaded registers
        span = sim.block_span
        if span is not None:
            regs[span] = coords
        else:
            for r, v in zip(sim.block_regs, coords):
                regs[r] = v
        if sim.preload_overlaps:                      # a preload wins over a coordinate
            for r, v in sim.preload:
                regs[r] = v
        self.pc = 0
        self.t = t
        flat = self.flat
        if flat is None or sim.hazards is not None:
            self._fresh_sems()
        else:               # the previous block's, reset in place (see _fresh_sems)
            for s in flat:
                s.count = 1
                s.expect = s.arrivals = s.bytes = s.phase = 0
                if s.waiters:
                    s.waiters = []
        self.last_fence = -1.0                  # when the scalar unit last passed a FENCE
        # the previous block's state, emptied (only this core refers to it)
        if self.loops:
            self.loops = []
        if self.seen:
            self.seen = {}
        if self.loading:
            self.loading = {}                   # register -> when its LDG value lands
        if self.valid:
            self.valid = {}                     # (buffer, stage) -> valid extents (useful.py)
        if self.bufs_state:
            self.bufs_state = {}                # the race detector's (hazards.py)
        if sim.functional:
            self.bufs = sim.new_buffers()
        events = sim.at.get(t)                  # sim.push, written out
        if events is None:
            sim.at[t] = [self.step_event]
            heapq.heappush(sim.times, t)
        else:
            events.append(self.step_event)

    def _fresh_sems(self) -> None:
        """New semaphores for the block, all at their initial state. A later block on
        the core resets the previous block's in place instead (start_block): it halted
        with no instruction queued or in flight, so nothing but this core refers to them
        — except the race detector's records, which keep semaphores by identity (it
        gets new ones)."""
        self.sems = {name: [Sem(name) for _ in range(n)] for name, n in self.sim.program.sems}
        self.flat = [s for arr in self.sems.values() for s in arr]  # decode.sem_offsets

    def sem(self, ref) -> Sem:
        name, idx = ref
        i = 0 if idx is None else (self.regs[idx[1]] if idx[0] else idx[1])
        if i >= 0:
            try:
                return self.sems[name][i]
            except IndexError:
                pass
        from .errors import SimError
        raise SimError(f"{self.label}: semaphore {name}[{i}] out of range")

    def idle(self) -> bool:
        if self.inflight:
            return False
        for q in self.queues:
            if q:
                return False
        return True

    # ------------------------------------------------------------------ scalar unit
    def block_on(self, reason, now: float, pc: int, t: float) -> None:
        self.pc, self.t = pc, t
        self.blocked = reason
        self.blocked_since = now

    def wake(self, now: float) -> None:
        b = self.blocked
        if b is not None:
            kind = b[0]                 # what its blocked time counts as
            key = "queue_full" if kind == "queue" else "sem_wait" if kind == "sem" else "drain"
            self.stall[key] += now - self.blocked_since
            self.blocked = None
            at = self.sim.at            # sim.push, written out (a hot path)
            events = at.get(now)
            if events is None:
                at[now] = [self.step_event]
                heapq.heappush(self.sim.times, now)
            else:
                events.append(self.step_event)

    def step(self, now: float) -> None:
        sim = self.sim
        code, regs = self.code, self.regs
        c, depth = self.cycles, self.depth
        t = self.t if self.t > now else now
        pc = self.pc
        loading = self.loading
        while True:
            d = code[pc]
            if loading:
                t = self._operands_ready(d, t)
            elif d.block is not None:           # a compiled region (runs.py)
                fn, end = d.block
                pc, t, n = fn(self, regs, t)
                sim.instructions += n
                if pc == end:
                    continue
                # stopped before an engine instruction whose queue is full
                self._stop_at_full(self.engines[code[pc].engine], now, pc, t)
                return
            elif d.run is not None:             # a compiled run of scalar ALU ops
                fn, n = d.run
                t = fn(regs, t)
                sim.instructions += n
                pc += n
                continue
            if d.engine >= 0:
                eng = self.engines[d.engine]
                if len(self.queues[d.engine]) >= depth:
                    self._stop_at_full(eng, now, pc, t)
                    return
                sim.dispatch(self, eng, d, t + c)
                sim.instructions += 1
                t += c
                pc += 1
                continue
            k = d.kind
            a = d.args
            if k >= K_SEM:
                # semaphores, FENCE, HALT and ATOM depend on (or change) state other
                # units see: run them only once the global clock has caught up with
                # the scalar unit
                if t > now:
                    self.pc, self.t = pc, t
                    if k == K_HALT and EARLY_BLOCK and self._busy_past(t, now):
                        # the visit at t could only block: it blocks at once, as of t
                        # (events._resumer takes the same decision after a region)
                        self.blocked = HALTED
                        self.blocked_since = t
                        return
                    sim.push(t, STEP, self)
                    return
                if k == K_SEM:
                    if not self._sem_op(d, now, pc, t):
                        return
                else:
                    q0, q1, q2, q3 = self.queues      # not self.idle(), written out
                    busy = self.inflight or q0 or q1 or q2 or q3
                    if k == K_ATOM:
                        if busy:
                            self.block_on(FENCED, now, pc, t)  # earlier writes land first
                            return
                        x = a[2]
                        regs[a[0][1]] = sim.atomic_scalar(a[1], regs,
                                                          regs[x[1]] if x[0] else x[1])
                    elif busy:
                        self.block_on(FENCED if k == K_FENCE else HALTED, now, pc, t)
                        return
                    elif k == K_HALT:
                        sim.instructions += 1
                        sim.block_done(self, t)
                        return
                    elif k == K_FENCE:
                        self.last_fence = now
                pc += 1
            # the kinds the interpreter meets most first (scalar ALU runs are compiled)
            elif k == K_IF:
                x = a[0]
                pc = pc + 1 if (regs[x[1]] if x[0] else x[1]) else d.jump + 1
            elif k == K_ENDIF:
                pc += 1
            elif k == K_BIN:
                x, y = a[1], a[2]
                regs[a[0][1]] = d.fn(regs[x[1]] if x[0] else x[1], regs[y[1]] if y[0] else y[1])
                pc += 1
            elif k == K_LDG:
                regs[a[0][1]], latency = sim.load_scalar(a[1], regs)
                loading[a[0][1]] = t + latency       # in flight, not a stall
                pc += 1
            elif k == K_ENDLOOP:
                top = self.loops[-1]
                top[0] -= 1
                if top[0] > 0:
                    pc = top[1] + 1
                else:
                    self.loops.pop()
                    pc += 1
            elif k == K_LOOP:
                x = a[0]
                n = regs[x[1]] if x[0] else x[1]
                if n > 0:
                    self.loops.append([n, pc])
                    pc += 1
                else:
                    pc = d.jump + 1
            elif k == K_UN:
                x = a[1]
                regs[a[0][1]] = d.fn(regs[x[1]] if x[0] else x[1])
                pc += 1
            elif k == K_SEL:
                cnd, x, y = a[1], a[2], a[3]
                pick = x if (regs[cnd[1]] if cnd[0] else cnd[1]) else y
                regs[a[0][1]] = regs[pick[1]] if pick[0] else pick[1]
                pc += 1
            elif k == K_ELSE:
                pc = d.jump + 1
            elif k == K_BREAKZ:
                x = a[0]
                if regs[x[1]] if x[0] else x[1]:
                    pc += 1
                else:                               # leave the innermost loop
                    self.loops.pop()
                    pc = d.jump + 1
            elif k == K_LDS:
                regs[a[0][1]] = self._read_tile(a[1], a[2])
                pc += 1
            sim.instructions += 1
            t += c

    def _busy_past(self, t: float, now: float) -> bool:
        """Whether the block certainly has work in flight at time `t` (and at it), as of
        `now`: an instruction still queued starts at `now` or later and completes at
        least its engine's latency after its start (`Simulator.min_latency`; float sums
        round monotonically, so the bound holds as computed). Until then nothing can
        wake a unit halted or fenced on that work: blocking it at once, as of `t`,
        leaves the state its visit at `t` would, and nothing reads it in between."""
        bound = self.sim.min_latency
        for e, q in enumerate(self.queues):
            if q and now + bound[e] > t:
                return True
        return False

    def _stop_at_full(self, eng, now: float, pc: int, t: float) -> None:
        """The unit stands at `pc`, an instruction for `eng` whose queue is full, at its
        time `t`: it blocks now (t = now), or comes back at t to look again. Where
        nothing can pop the queue by t (`full_past`), coming back would only block it
        there: it blocks at once, as of t (its state at t, and every state another unit
        reads before then, is what the visit would leave)."""
        if t > now and not (EARLY_BLOCK and not self.loading and
                            full_past(eng, t, self.sim.transfer_share)):
            self.pc, self.t = pc, t
            self.sim.push(t, STEP, self)
        else:
            self.block_on(("queue", eng), t, pc, t)

    def _read_tile(self, t, index):
        """LDS: one element (flat index) of the stage of an on-chip buffer."""
        regs = self.regs
        stage = 0 if t.stage is None else (regs[t.stage[1]] if t.stage[0] else t.stage[1])
        arr = self.bufs[t.buf][stage]
        if t.slices is not None:
            arr = arr[t.slices]
        i = regs[index[1]] if index[0] else index[1]
        v = arr.reshape(-1)[int(i)] if 0 <= i < arr.size else 0
        return float(v) if arr.dtype.kind not in "iub" else int(v)

    def _operands_ready(self, d, t: float) -> float:
        """When instruction `d` may issue: after the scalar loads filling its registers
        have landed (those that have are forgotten)."""
        loading = self.loading
        for r in d.regs:
            ready = loading.get(r)
            if ready is not None:
                if ready > t:
                    t = ready
                del loading[r]
        return t

    def _sem_op(self, d, now, pc, t) -> bool:
        """Run a SEM.* instruction; False when the scalar unit blocks on it."""
        regs = self.regs
        s = self.sem(d.args[0])
        if d.op == "SEM.ARRIVE":
            self.sim.arrive(s, 0, now)
            return True
        x = d.args[1]
        v = regs[x[1]] if x[0] else x[1]
        if d.op == "SEM.INIT":
            s.count, s.arrivals, s.bytes, s.expect, s.phase = v, 0, 0, 0, 0
        elif d.op == "SEM.EXPECT":
            s.expect += v
        elif s.phase <= v:                     # SEM.WAIT not yet satisfied
            s.waiters.append(self)
            self.block_on(("sem", s, v), now, pc, t)
            return False
        else:
            if self.seen.get(s, 0) < v + 1:
                self.seen[s] = v + 1
        return True
