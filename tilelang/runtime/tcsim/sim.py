"""The discrete-event simulator and its entry point `run(program, *arrays, mode=...)`.

Events (kind, object, argument) on an agenda — a heap of the distinct times events wait
for, each time with its events in push order, so ties go in push order: a scalar unit
resuming, an engine trying to start its queue's head, an instruction completing, a
bandwidth pool's next transfer finishing. Blocks of the grid go to block slots (one or more per core) in
launch order (raster order) as slots free up, so waves and their tails emerge. When no event is left but a core has
not halted, the program is deadlocked: the simulator reports the waits, never hangs.
"""
from __future__ import annotations

import heapq
import math

import numpy as np

from . import numerics as nx
from .bandwidth import Pool
from .l2 import L2
from ...targets.tcsim.config import DEFAULT_CONFIG, get_config
from .decode import decoded
from .errors import RaceError, SimError
from .execute import apply
from .grid import block_order
from .hazards import Hazards
from .launch import add_views, bind, grid_of
from .machine import DONE, TRY, Core, Engine, Op
from .clusters import Gang, check_cluster, cluster_order
from .dma import DmaPath
from .report import build_report
from .useful import on_mma as useful_mma, on_vec as useful_vec, on_zero as useful_zero


# the most elements of a tensor that a timing run's LDG reads from a list copy
SNAPSHOT_ELEMS = 1 << 16


class Simulator(DmaPath):
    def __init__(self, program, cfg, tensors, env, functional=True, trace=False,
                 check_races=None, max_events=None, clock_ghz=None, l2=None):
        self.program, self.cfg = program, cfg
        # the clock the cores run at: bandwidths in bytes per second become bytes per
        # cycle of this clock (a throttled core sees memory relatively faster)
        self.clock_ghz = clock_ghz or cfg.clock_ghz
        self.tensors = tensors
        self.functional = functional
        self.code = decoded(program, cfg)
        self.dma_info: list = [None] * len(self.code)     # _dma_info, by instruction index
        self.preload = _preload(program, env)
        # a block's registers start as a copy of these (block coordinates written over)
        self.blank_regs = [0] * program.num_regs
        for r, v in self.preload:
            self.blank_regs[r] = v
        self.block_regs = program.block_regs
        # consecutive block registers, one for each grid dimension: a launch writes
        # a block's coordinates as one slice (Core.start_block)
        regs = tuple(program.block_regs)
        self.block_span = slice(regs[0], regs[0] + len(regs)) \
            if regs and regs == tuple(range(regs[0], regs[0] + len(regs))) and \
            len(regs) == len(env["__grid__"]) else None
        self.preload_overlaps = bool({r for r, _ in self.preload} & set(program.block_regs))
        self.grid = tuple(env["__grid__"])
        self.order = block_order(self.grid, program.raster)
        self.cluster_size = math.prod(program.cluster)
        check_cluster(self.grid, program.cluster, cfg)
        # what each launch starts: a cluster's blocks, or (without clusters) one
        # block's coordinates, straight from the block order
        self.launches = cluster_order(self.order, program.cluster) \
            if self.cluster_size > 1 else self.order
        self.launch_cycles = cfg.block_launch_cycles
        self.mcast: dict = {}                   # multicast loads waiting for their cluster
        # the agenda: the distinct times events wait for (a heap), and each time's
        # events (kind, object, argument) in push order — the order ties are handled in
        self.times: list = []
        self.at: dict = {}
        # a core's port (one direction) is shared by its DMA engine's transfers in
        # flight: each of the `dma_transfers` moves at most its share of it
        self.port = cfg.port_bytes_per_clk
        cap = self.transfer_share = self.port / cfg.dma_transfers
        self.dma_latency = cfg.dma_latency
        # the least time from an instruction's start to its completion, per engine
        # (a DMA's data phase may take no time; an MMA / VEC its cost, at least 0)
        self.min_latency = (cfg.dma_latency, cfg.dma_latency, cfg.mma_latency,
                            cfg.vec_latency)
        self.hbm_per_clk = cfg.hbm_bytes_per_s / (self.clock_ghz * 1e9)
        self.hbm = Pool("HBM", self.hbm_per_clk * cfg.hbm_efficiency, cap, self.times, self.at)
        self.l2pool = Pool("L2", cfg.l2_bytes_per_s / (self.clock_ghz * 1e9), cap, self.times,
                           self.at)
        self.deferred: list = []                # pool posts during a pool event (dma.py)
        # a later grid of a kernel starts with what the earlier ones left in L2
        self.l2 = L2(cfg.l2_bytes, cfg.l2_sector_bytes) if l2 is None else l2.fresh_counts()
        self.sector = self.l2.sector
        self.hazards = Hazards() if (functional if check_races is None else check_races) \
            else None
        self.trace = [] if trace else None
        self.instructions = 0
        self.readers: dict = {}                 # id(LDG operand) -> its load_scalar
        self.flops: dict[str, float] = {}       # issued: whole tiles, padding included
        self.useful: dict[str, float] = {}      # over the valid extents (useful.py)
        self.bytes = {"hbm_read": 0.0, "hbm_write": 0.0, "l2_read": 0.0, "smem": 0.0,
                      "gather": 0.0}
        self.next_launch = 0
        self.blocks_done = 0
        self.end = 0.0
        self.max_events = max_events
        self.resident = resident_blocks(program, cfg)
        gangs = max(1, min(cfg.cores // self.cluster_size, len(self.launches)))
        self.cores, self.phys, self.gangs = self._build_cores(gangs * self.cluster_size)
        if self.resident == 1:
            self.try_start = self._try_one
        # "shared" bytes: traffic of the on-chip memories other than the register file
        self.smem_levels = set(cfg.mma_ab_levels) | set(cfg.dma_levels)
        self.smem_levels.discard("RF")

    def _build_cores(self, ncores: int):
        """(block slots, in first-wave order: slot 0 of every core first; the four
        engines of each physical core, shared by its slots; the gangs: a cluster's
        worth of slots, one on each of `cluster_size` neighbouring cores, that take a
        cluster's blocks together)."""
        slots = [[] for _ in range(self.resident)]
        phys = []
        for c in range(ncores):
            engines = [Engine(i, c, self.cfg.dma_transfers if i < 2 else 1)
                       for i in range(4)]
            own = [Core(self, c, k, engines, self.resident > 1) for k in range(self.resident)]
            for e in engines:
                e.slots = own
                e.solo_fixed = e.index >= 2 and len(own) == 1
            phys.append(engines)
            for k, core in enumerate(own):
                slots[k].append(core)
        cores = [core for group in slots for core in group]
        n = self.cluster_size
        gangs = [Gang(cores[i:i + n]) for i in range(0, len(cores), n)]
        return cores, phys, gangs

    # ------------------------------------------------------------------ events
    def push(self, t: float, kind: int, obj, arg=None) -> None:
        events = self.at.get(t)
        if events is None:
            self.at[t] = [(kind, obj, arg)]
            heapq.heappush(self.times, t)
        else:                   # a time already waited for (or being handled now)
            events.append((kind, obj, arg))

    def run(self):
        for gang in self.gangs:
            self._next(gang, 0.0)
        from . import events
        from .dma import dma_start, pool_events, timing_try
        timing = not self.functional and self.hazards is None and self.trace is None
        self._start_dma = dma_start(self)
        if timing:
            self.try_start = timing_try(self)
        self._pool_event = pool_events(self)      # tries engines by the try just set
        if timing:
            events.run_timing(self)
        else:
            events.run_general(self)
        if self.blocks_done < len(self.order):
            from .deadlock import explain
            raise explain(self)
        if self.hazards is not None and self.hazards.races:
            races = self.hazards.races
            raise RaceError(f"{len(races)} data race(s); first: {races[0]}", races)
        return build_report(self)

    # ------------------------------------------------------------------ blocks
    def _next(self, gang, t: float) -> None:
        """The next cluster's blocks (one block without clusters) to a free gang."""
        i = self.next_launch
        if i >= len(self.launches):
            for core in gang.cores:
                core.done = True
            return
        self.next_launch = i + 1
        gang.launch = i
        if self.cluster_size == 1:
            gang.active = 1
            core = gang.cores[0]
            core.gang = gang
            core.start_block(self.launches[i], t)
            return
        members = self.launches[i]
        gang.active = len(members)
        for core, coords in zip(gang.cores, members):
            core.gang = gang
            core.start_block(coords, t)

    def block_done(self, core, t: float) -> None:
        self.blocks_done += 1
        if t > self.end:
            self.end = t
        if self.trace is not None:
            self.trace.append((core.id, f"BLOCK {core.slot}" if core.slot else "BLOCK",
                               str(core.block), core.block_start, t))
        gang = core.gang
        gang.active -= 1
        if gang.active:                       # a cluster's cores free up together
            return
        i = self.next_launch
        if i < len(self.launches):
            if self.cluster_size == 1:        # _next of one block, written out
                self.next_launch = i + 1
                gang.launch = i
                gang.active = 1
                core.start_block(self.launches[i], t + self.launch_cycles)
            else:
                self._next(gang, t + self.launch_cycles)
        else:
            self._next(gang, t)

    def load_scalar(self, glob, regs) -> tuple:
        """LDG: (one element of a global tensor (0 outside it), cycles until it lands).
        Launch binding made sure the tensor has data in timing mode too
        (launch.value_params). The element's sector goes through the L2: a hit lands
        after `l2_latency`, a miss after `dma_latency` (and the sector stays)."""
        read = self.readers.get(id(glob))
        if read is None:
            read = self.readers[id(glob)] = self._reader(glob)
        return read(regs)

    def _reader(self, glob):
        """`load_scalar` of one LDG operand (kept by the decoded code, so its id is
        fixed while this simulator runs): without an L2 latency, a function with the
        register reads, bounds and element read written out; else the generic path."""
        name, starts = glob
        g = self.tensors[name]
        dt = g.dtype
        if self.cfg.l2_latency or not dt.isbuiltin or dt.kind not in "fiu" or \
                len(starts) != g.ndim or \
                any(not is_reg and type(v) is not int for is_reg, v in starts):
            return lambda regs: self._load_scalar(glob, regs)
        # ndarray.item: the element as the Python float / int the generic path makes;
        # a timing run writes no tensor, so a small one is read from a nested list of
        # those (ndarray.tolist) instead
        consts = {"item": g.item, "LAT": self.dma_latency}
        names = [f"r[{v}]" if is_reg else repr(v) for is_reg, v in starts]
        inside = " and ".join(f"0 <= i{k} < {n}" for k, n in enumerate(g.shape)) or "True"
        idx = ", ".join(f"i{k}" for k in range(len(names)))
        value = f"item({idx})"
        if not self.functional and 0 < g.ndim and g.size <= SNAPSHOT_ELEMS:
            consts["data"] = g.tolist()
            value = "data" + "".join(f"[i{k}]" for k in range(len(names)))
        lines = ["def read(r):"] + [f"    i{k} = {x}" for k, x in enumerate(names)]
        lines += [f"    if {inside}:", f"        return {value}, LAT",
                  "    return 0, LAT"]
        exec("\n".join(lines), consts)          # source from decoded operands only
        return consts["read"]

    def _load_scalar(self, glob, regs) -> tuple:
        name, starts = glob
        g = self.tensors[name]
        idx = tuple([regs[s[1]] if s[0] else s[1] for s in starts])
        for i, n in zip(idx, g.shape):
            if not 0 <= i < n:
                return 0, self.dma_latency
        latency = self.dma_latency
        if self.cfg.l2_latency:
            hit, _ = self.l2.access(name, g.shape, g.dtype.itemsize, idx, (1,) * len(idx))
            if hit:
                latency = self.cfg.l2_latency
        v = g[idx]
        return (float(v) if g.dtype.kind not in "iub" else int(v)), latency

    def atomic_scalar(self, glob, regs, value):
        """ATOM.ADD: the element's old value; the element gains `value` (nothing happens
        outside the tensor, which reads as 0)."""
        old, _ = self._load_scalar(glob, regs)    # (value, latency)
        name, starts = glob
        g = self.tensors[name]
        idx = tuple(regs[s[1]] if s[0] else s[1] for s in starts)
        if all(0 <= i < n for i, n in zip(idx, g.shape)) and self.functional:
            g[idx] = nx.store_cast(np.asarray(old + value), nx.str_dtype(g.dtype))
        return old

    def new_buffers(self) -> dict:
        out = {}
        for b in self.program.buffers:
            out[b.name] = np.zeros((b.stages,) + tuple(b.shape), dtype=nx.npdt(b.dtype))
        return out

    # ------------------------------------------------------------------ engines
    def dispatch(self, core, eng, d, ready: float) -> None:
        if d.make_op is not None and not self.functional:
            op = d.make_op(core, core.regs, ready, eng)
            queue = core.queues[d.engine]
            if queue:
                queue.append(op)
                return
            queue.append(op)
            eng.queued |= 1 << core.slot
            if not eng.data_active:
                bu = eng.busy_until
                self.push(ready if ready >= bu else bu, TRY, eng)
            return
        regs = core.regs
        op = Op()
        op.di, op.ready, op.eng = d, ready, eng
        if d.static_stages is not None:
            op.stages = d.static_stages
        else:
            op.stages = self._stages(core, d)
        if d.glob is not None:
            op.starts = tuple(regs[s[1]] if s[0] else s[1] for s in d.glob[1])
            op.stops = None if d.stop is None else tuple(
                None if s is None else int(regs[s[1]] if s[0] else s[1]) for s in d.stop)
        if d.wait_sems:
            flat = core.flat
            op.waits = tuple([(flat[f] if f >= 0 else core.sem((n, i)),
                               regs[p[1]] if p[0] else p[1]) for f, n, i, p in d.wait_sems])
        else:
            op.waits = ()
        sig = d.signal_sem
        op.signal = None if sig is None else \
            (core.flat[sig[0]] if sig[0] >= 0 else core.sem(sig[1:]))
        if self.functional and d.engine == 3:
            vals = [(regs[a[1]] if a[0] else a[1]) if isinstance(a, tuple) else None
                    for a in d.args]
            sc = d.attrs.get("scale")
            if sc is not None:
                vals.append(regs[sc.index] if hasattr(sc, "index") else sc.value)
            op.vals = vals
        op.nbytes = 0
        op.recs = ()
        op.core = core
        op.fence = core.last_fence
        queue = core.queues[d.engine]
        was_empty = not queue
        queue.append(op)
        if was_empty:
            eng.queued |= 1 << core.slot
        if was_empty and not eng.data_active:
            self.push(max(ready, eng.busy_until), TRY, eng)

    def _stages(self, core, d) -> tuple:
        """The ring stages an instruction's tiles use, from its registers (checked)."""
        regs = core.regs
        stages = tuple((regs[t.stage[1]] if t.stage[0] else t.stage[1])
                       if t.stage is not None else 0 for t in d.tiles)
        for t, s in zip(d.tiles, stages):
            if not 0 <= s < t.decl.stages:
                raise SimError(f"{core.label}: {d.op} (instruction {d.index}) uses stage "
                               f"{s} of {t.buf}, which has {t.decl.stages}")
        return stages

    def try_start(self, eng, now: float) -> None:
        """Start queue heads while the engine is free: the first (round robin over the
        resident blocks) that is ready and whose waits hold."""
        while True:
            if eng.data_active:
                return
            if eng.busy_until > now:
                self.push(eng.busy_until, TRY, eng)
                return
            core, op = self._pick(eng, now)
            if op is None:
                return
            if eng.waiting:
                eng.stall_sem += now - eng.wait_since
                eng.waiting = False
            queue = core.queues[eng.index]
            queue.popleft()
            if not queue:
                eng.queued &= ~(1 << core.slot)
            b = core.blocked
            if b is not None and b[0] == "queue" and b[1] is eng:
                core.wake(now)
            if eng.index < 2 and self.hazards is None:     # self._start of a DMA
                op.start = now
                core.inflight += 1
                self._start_dma(core, eng, op, now)
            else:
                self._start(core, eng, op, now)

    def _try_one(self, eng, now: float) -> None:
        """`try_start` where a core holds one block slot (the usual case): its queue's
        head, or nothing — `_pick`'s decisions for that one slot, without the calls."""
        core = eng.slots[0]
        queue = core.queues[eng.index]
        while True:
            if eng.data_active:
                return
            if eng.busy_until > now:
                self.push(eng.busy_until, TRY, eng)
                return
            if not queue:
                return
            op = queue[0]
            if op.ready > now:
                self.push(op.ready, TRY, eng)
                return
            for sem, ph in op.waits:
                if sem.phase <= ph:
                    if eng not in sem.waiters:
                        sem.waiters.append(eng)
                    if not eng.waiting:
                        eng.waiting = True
                        eng.wait_since = now
                    return
            if eng.waiting:
                eng.stall_sem += now - eng.wait_since
                eng.waiting = False
            queue.popleft()
            if not queue:
                eng.queued &= ~(1 << core.slot)
            b = core.blocked
            if b is not None and b[0] == "queue" and b[1] is eng:
                core.wake(now)
            if eng.index < 2 and self.hazards is None:     # self._start of a DMA
                op.start = now
                core.inflight += 1
                self._start_dma(core, eng, op, now)
            else:
                self._start(core, eng, op, now)

    def _pick(self, eng, now: float):
        slots = eng.slots
        n = len(slots)      # two or more: with one, try_start is _try_one
        # the slots whose queue for this engine holds something, from `rr` on, in
        # round-robin order (`eng.queued`: one bit per slot)
        queued = eng.queued
        rr = eng.rr
        order = queued >> rr
        wrapped = queued & ((1 << rr) - 1)
        soonest = None
        blocked = False
        base = rr
        while order or wrapped:
            if not order:
                order, wrapped, base = wrapped, 0, 0
            low = order & -order
            k = base + low.bit_length() - 1
            order ^= low
            core = slots[k]
            op = core.queues[eng.index][0]
            if op.ready > now:
                soonest = op.ready if soonest is None or op.ready < soonest else soonest
                continue
            for sem, ph in op.waits:
                if sem.phase <= ph:
                    if eng not in sem.waiters:
                        sem.waiters.append(eng)
                    blocked = True
                    break
            else:
                eng.rr = (k + 1) % n
                return core, op
        if soonest is not None:
            self.push(soonest, TRY, eng)
        if blocked and not eng.waiting:
            eng.waiting = True
            eng.wait_since = now
        return None, None

    def _start(self, core, eng, op, now: float) -> None:
        d = op.di
        op.start = now
        core.inflight += 1
        if self.hazards is not None:
            self.hazards.on_start(core, eng, op, now)
        if d.engine >= 2:                               # MMA, VEC: fixed cost
            dur = d.cycles
            eng.busy_until = now + dur
            eng.busy += dur
            self.push(now + dur + d.latency, DONE, op)
            valid = core.valid
            if d.flops:
                dt = d.mma_dtype
                self.flops[dt] = self.flops.get(dt, 0.0) + d.flops
                useful = useful_mma(valid, d, op.stages, d.ta, d.tb) if valid else d.flops
                self.useful[dt] = self.useful.get(dt, 0.0) + useful
                if d.smem_bytes:
                    self.bytes["smem"] += d.smem_bytes
            elif d.engine == 2:
                useful_zero(valid, d.tiles[0], op.stages[0])
            elif valid:
                useful_vec(valid, d, op.stages)
            return
        self._start_dma(core, eng, op, now)

    def complete(self, op, now: float) -> None:
        eng = op.eng
        core = op.core
        d = op.di
        if self.functional:
            try:
                apply(self, core, op)
            except (ValueError, IndexError, TypeError, KeyError) as e:
                raise SimError(f"{core.label}: {d.op} (instruction {d.index}) cannot "
                               f"execute: {e}") from None
        core.inflight -= 1
        sem = op.signal
        if self.hazards is not None:
            self.hazards.on_done(op, sem, sem.phase if sem is not None else -1, now)
        if self.trace is not None:
            self.trace.append((core.id, eng.name, d.op, op.start, now))
        if sem is not None:
            self.arrive(sem, op.nbytes, now)
        if core.blocked is not None and core.blocked[0] in ("fence", "halt") and core.idle():
            core.wake(now)

    def arrive(self, sem, nbytes: int, now: float) -> None:
        sem.arrivals += 1
        sem.bytes += nbytes
        if sem.arrivals >= sem.count and sem.bytes >= sem.expect:
            sem.phase += 1
            sem.arrivals = sem.bytes = sem.expect = 0
            waiters, sem.waiters = sem.waiters, []
            for w in waiters:
                if isinstance(w, Core):
                    w.wake(now)
                else:
                    self.push(now, TRY, w)


def resident_blocks(program, cfg) -> int:
    """Blocks that fit on a core at once: the config's limit, and what the program's
    on-chip memory use leaves room for."""
    n = cfg.max_blocks_per_core
    use = program.resources()
    if program.threads and cfg.thread_bytes:
        lv = cfg.thread_level
        use[lv] = use.get(lv, 0) + program.threads * cfg.thread_bytes
    for level, need in use.items():
        if level not in ("semaphores", "registers") and need > 0:
            n = min(n, cfg.level_bytes(level) // need)
    return max(1, n)


# how far the clock a run's tensor-core duty implies may be from the one it was
# simulated at before it runs again at that clock (the report keeps the simulated clock,
# so its times and bandwidths are self-consistent; the tolerance bounds its error)
CLOCK_TOLERANCE = 0.05


def _first_clock(program, cfg) -> float:
    """The clock to simulate at first: the sustained one when the program multiplies
    (its tensor cores are likely the busy part), the nominal one otherwise."""
    if cfg.sustained_clock_ghz and any(ins.op == "MMA" for ins in program.code):
        return cfg.sustained_clock
    return cfg.clock_ghz


def _preload(program, env) -> list[tuple[int, object]]:
    out = [(r, env[name]) for name, r in program.symbols]
    out += [(p.reg, env[p.name]) for p in program.params if p.kind == "scalar"]
    return out


def run(program, *args, config=None, mode="functional", trace=None, check_races=None,
        max_events=None, out_idx=None, **kwargs):
    """Run `program` (a Program or Artifact) on machine `config` (a name or a
    MachineConfig; default: the artifact's own config, `DEFAULT_CONFIG` for a bare
    Program).

    mode="functional": arrays are numpy arrays, outputs written in place, numerics and
    timing both simulated; mode="timing": arrays may be numpy arrays or (shape, dtype)
    pairs — nothing is computed, only cycles. `trace` = a path writes a Chrome trace.
    Returns a Report; with `out_idx` (parameters the call allocates, as on the CPU) a pair
    (Report, the outputs: one array or a tuple)."""
    from ...targets.tcsim.artifact import Artifact, check_fits
    programs = (program,)
    if isinstance(program, Artifact):
        config = program.config_name if config is None else config
        programs = program.programs
    cfg = get_config(DEFAULT_CONFIG if config is None else config)
    for p in programs:
        check_fits(p, cfg)
    functional = mode == "functional"
    if mode not in ("functional", "timing"):
        raise ValueError(f"mode must be 'functional' or 'timing', not {mode!r}")
    tensors, env, outputs = bind(programs[0], args, kwargs, functional, out_idx)
    reports, sims, l2 = [], [], None
    for p in programs:       # the grids of one kernel, in order, each to completion
        env["__grid__"] = grid_of(p, env)
        tensors = add_views(p, tensors, env)
        sim, report = _run_grid(p, cfg, tensors, env, functional, trace is not None,
                                check_races, max_events, l2)
        reports.append(report)
        sims.append(sim)
        l2 = sim.l2          # what one grid wrote is in L2 for the next
    if trace is not None:
        from .trace import write_trace
        write_trace(sims, trace)
    if len(reports) == 1:
        report = reports[0]
    else:
        from .report import sequence
        report = sequence(reports, cfg)
    return report if out_idx is None else (report, outputs)


def _run_grid(program, cfg, tensors, env, functional, trace, check_races, max_events, l2):
    """(simulator, report) of one grid, at the clock its load sets."""
    clock = _first_clock(program, cfg)
    while True:
        sim = Simulator(program, cfg, tensors, env, functional, trace, check_races,
                        max_events, clock, l2=l2)
        report = sim.run()
        # the clock model: a run whose tensor-core load sets a clock far from the one
        # it ran at runs again at that clock (timing mode only: functional outputs are
        # written in place, and an accumulating kernel must not run twice)
        if functional or abs(report.duty_clock_ghz - clock) <= CLOCK_TOLERANCE * clock:
            return sim, report
        clock = report.duty_clock_ghz
