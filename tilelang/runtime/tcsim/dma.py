"""The DMA engines' data path, a part of the simulator (sim.Simulator): a transfer's
start (the bytes it moves, its L2 hits and misses, a multicast's rendezvous), its phases
through the bandwidth pools (bandwidth.py: the HBM misses first, then the L2 hits), and
its end, `dma_latency` before it completes. The hot path of memory-bound kernels: what
an instruction's starts read of the instruction and its tensor is taken once a run, a
start and a pool's event are closures over the run's state (`dma_start`, `pool_events`),
and so is a timing run's try (`timing_try`); each DMA instruction's start is generated
with its constants written in (`compiled_starts`)."""
from __future__ import annotations

import heapq
import math

from . import numerics as nx
from .bandwidth import flush
from . import l2 as l2mod
from .l2 import sectors
from .machine import DONE
from .useful import on_load as useful_load


class DmaPath:
    """Simulator methods of the DMA data path (they use its agenda, tensors, L2, pools,
    byte counts and `try_start`)."""

    def _dma_info(self, d) -> tuple:
        """What a DMA instruction's starts read of the instruction and its tensor, once a
        run (an instruction's start is the hot path of memory-bound kernels): tensor,
        shape, element size, box, its elements, load?, to shared memory?, multicast?,
        gather?, a non-empty box?, then for the timing path the box's in-bounds check
        (_inside), its rows, its row's bytes and its alignment check (_aligned_to)."""
        shape = tuple(self.tensors[d.glob[0]].shape)
        info = (d.glob[0], shape, d.esize, d.box, d.box_elems,
                d.engine == 0, d.to_smem, d.mcast and self.cluster_size > 1,
                bool(d.attrs.get("gather")), min(d.box) > 0, _inside(shape, d.box),
                math.prod(d.box[:-1]), d.box[-1] * d.esize, _aligned_to(d.box))
        self.dma_info[d.index] = info
        return info

    def _landed(self, job, now: float) -> None:
        """A DMA's data has moved through its pools (a multicast: every block's copy)."""
        if job.__class__ is tuple:
            for op in job:
                self.data_end(op, now)
        else:
            self.data_end(job, now)

    def _join_multicast(self, core, op, now: float):
        """A multicast load waits until every block of its cluster has issued it; the
        last one to arrive starts one transfer for all (a tuple of their ops)."""
        key = (core.gang.launch, op.di.index, op.starts)
        group = self.mcast.get(key)
        if group is None:
            group = [op]
            if core.gang.active_size > 1:
                self.mcast[key] = group
                return None
        else:
            group.append(op)
            if len(group) < core.gang.active_size:
                return None
            del self.mcast[key]
        for member in group:
            eng = member.eng
            eng.stall_sem += now - member.data_start   # waited for its peers
            member.data_start = now
            if eng.transfers == 1:                     # its busy period starts now
                eng.data_since = now
        return tuple(group)

    def data_end(self, op, now: float) -> None:
        eng = op.eng
        eng.data_active = False
        eng.transfers -= 1
        if not eng.transfers:                 # a busy period of the engine ends
            took = now - eng.data_since
            eng.busy += took
            lost = took - eng.data_moved / self.port
            eng.stall_bw += lost if lost > 0.0 else 0.0
        done = now + self.dma_latency
        events = self.at.get(done)          # self.push, written out (a hot path)
        if events is None:
            self.at[done] = [(DONE, op, None)]
            heapq.heappush(self.times, done)
        else:
            events.append((DONE, op, None))
        self.try_start(eng, now)


def dma_start(sim):
    """`start(core, eng, op, now)`: a DMA's start (the bytes it moves, its L2 hits and
    misses, a multicast's rendezvous, its first pool phase) as a closure over the run's
    state, which every run installs as `Simulator._start_dma` (a memory-bound kernel's
    hot path: few calls and attribute reads)."""
    hbm, l2pool = sim.hbm, sim.l2pool
    l2 = sim.l2
    l2_access, tiled, new_tile = l2.access, l2.tiled, l2._miss_tile
    counts = sim.bytes
    dma_info, info_of = sim.dma_info, sim._dma_info
    sector = sim.sector
    join, landed = sim._join_multicast, sim._landed
    inbounds, clip, stopped = nx.inbounds_elems, nx.clip_shape, nx.stopped_box

    def start(core, eng, op, now: float) -> None:
        """Start `op`'s transfer on DMA engine `eng` at `now` (a tiled tensor's L2 stamps
        met inline: L2.access's decisions for its usual boxes)."""
        d = op.di
        (name, shape, esize, box, elems, load, to_smem, mcast, gather, box_ok, inside, rows,
         span, aligned) = dma_info[d.index] or info_of(d)
        starts = op.starts
        stops = op.stops
        if stops is None:
            whole = inside(starts)
            inb = elems if whole else inbounds(starts, box, shape)
        else:
            whole = False
            inb = inbounds(starts, box, clip(shape, stops))
            box = stopped(starts, box, stops)
            box_ok = min(box) > 0
        nbytes = inb * esize
        op.nbytes = elems * esize
        if load:
            if inb != elems:
                useful_load(core.valid, d.tiles[0], op.stages[0], starts, d.box,
                            shape if stops is None else clip(shape, stops))
            elif core.valid:
                core.valid.pop((d.tiles[0].buf, op.stages[0]), None)
        if to_smem:
            counts["smem"] += nbytes
        if not eng.transfers:
            eng.data_since = now
            eng.data_moved = 0
        eng.transfers += 1
        eng.data_moved += nbytes
        eng.data_active = eng.transfers >= eng.max_transfers
        op.data_start = now
        op.moved = nbytes
        job = op
        if mcast:
            job = join(core, op, now)
            if job is None:
                return
        if load:
            seen = tiling = None
            if box_ok:
                tiling = tiled.get(name)
                if tiling is not None and box == tiling.box and esize == tiling.itemsize:
                    seen = tiling.stamps.get(starts)
                else:
                    tiling = None
            # L2.access of a tiled tensor's box (the usual loads), written out: a box
            # seen within the capacity all hits; an unseen one inside the tensor at
            # starts aligned to the box all misses (L2._new_tile)
            if seen is not None and l2.clock - seen[0] < l2.capacity:
                hit = seen[1]
                tiling.stamps[starts] = (l2.clock, hit)
                l2.hits += hit
                miss = 0
            elif tiling is not None and seen is None and whole and aligned(starts):
                lo = starts[-1] * esize
                hit, miss = new_tile(tiling, starts,
                                     rows * (-(-(lo + span) // sector) - lo // sector))
            else:
                hit, miss = l2_access(name, shape, esize, starts, box) if box_ok else (0, 0)
            fetched = miss * sector
            counts["l2_read"] += nbytes
            counts["hbm_read"] += fetched
            if gather:
                counts["gather"] += nbytes
            if not hit:
                if fetched:
                    hbm.add(now, fetched, job, None)
                else:
                    landed(job, now)
            elif not miss:
                l2pool.add(now, nbytes, job, None)
            else:
                hbm.add(now, fetched, job, (l2pool, nbytes * hit / (hit + miss)))
        else:
            if whole:                   # l2.sectors of a box inside the tensor
                lo = starts[-1] * esize
                written = rows * (-(-(lo + span) // sector) - lo // sector) * sector
            else:
                written = sectors(shape, esize, starts, box, sector) * sector
            counts["hbm_write"] += written
            if written:
                hbm.add(now, written, job, None)
            else:
                landed(job, now)

    starts = sim.dma_starts = compiled_starts(sim, start)

    def dispatch(core, eng, op, now: float) -> None:
        starts[op.di.index](core, eng, op, now)
    return dispatch


def compiled_starts(sim, general) -> list:
    """Each DMA instruction's start, by instruction index: `general` (dma_start's)
    with what the instruction fixes written in as constants (its tensor, box, element
    size, direction, in-bounds and alignment checks), generated once a run. A start
    whose box is stopped short at run time, and a gather or empty-box instruction,
    take `general` itself."""
    out = [None] * len(sim.code)
    env = {"general": general, "tiled": sim.l2.tiled, "l2": sim.l2, "counts": sim.bytes,
           "hbm": sim.hbm, "l2pool": sim.l2pool, "landed": sim._landed, "join": sim._join_multicast,
           "l2_access": sim.l2.access, "REBASE": l2mod.REBASE,
           "inbounds": nx.inbounds_elems, "useful_load": useful_load, "sectors": sectors}
    for d in sim.code:
        if 0 <= d.engine < 2:
            out[d.index] = _compiled_start(sim, d, env) or general
    return out


def _compiled_start(sim, d, env):
    (name, shape, esize, box, elems, load, to_smem, mcast, gather, box_ok, _, rows, span,
     _) = sim.dma_info[d.index] or sim._dma_info(d)
    if gather or not box_ok:
        return None
    sector = sim.sector
    consts = dict(env, NAME=name, SHAPE=shape, BOX=box, TILE=d.tiles[0],
                  BUF=d.tiles[0].buf)
    inside, aligned = _inside_test(shape, box), _aligned_test(box)
    lines = ["def start(core, eng, op, now):",
             "    s = op.starts",
             "    if op.stops is not None:",
             "        return general(core, eng, op, now)",
             f"    op.nbytes = {elems * esize}",
             f"    if {inside}:",
             "        whole = True",
             f"        nbytes = {elems * esize}"]
    if load:
        lines += ["        if core.valid:",
                  "            core.valid.pop((BUF, op.stages[0]), None)"]
    lines += ["    else:",
              "        whole = False",
              "        inb = inbounds(s, BOX, SHAPE)",
              f"        nbytes = inb * {esize}"]
    if load:
        lines += [f"        if inb != {elems}:",
                  "            useful_load(core.valid, TILE, op.stages[0], s, BOX, SHAPE)",
                  "        elif core.valid:",
                  "            core.valid.pop((BUF, op.stages[0]), None)"]
    if to_smem:
        lines.append('    counts["smem"] += nbytes')
    lines += ["    n = eng.transfers",
              "    if n:",
              "        eng.data_moved += nbytes",
              "    else:",
              "        eng.data_since = now",
              "        eng.data_moved = nbytes",
              "    eng.transfers = n = n + 1",
              "    eng.data_active = n >= eng.max_transfers",
              "    op.data_start = now",
              "    op.moved = nbytes"]
    job = "op"
    if mcast:                       # one transfer for the cluster, by its last block
        job = "job"
        lines += ["    job = join(core, op, now)",
                  "    if job is None:",
                  "        return"]
    # the sectors of a box inside the tensor (l2.sectors), from its first element's byte
    box_sectors = (f"(-(-(s[-1] * {esize} + {span}) // {sector}) - s[-1] * {esize} // {sector})"
                   + (f" * {rows}" if rows != 1 else ""))
    if load:
        lines += ["    tiling = tiled.get(NAME)",
                  # (BOX itself where this instruction's access made the tiling)
                  "    if tiling is not None and (tiling.box is BOX or tiling.box == BOX) and "
                  f"tiling.itemsize == {esize}:",
                  "        seen = tiling.stamps.get(s)",
                  "        if seen is not None and l2.clock - seen[0] < l2.capacity:",
                  "            hit = seen[1]",
                  "            tiling.stamps[s] = (l2.clock, hit)",
                  "            l2.hits += hit",
                  "            miss = 0",
                  f"        elif seen is None and whole and {aligned}:",
                  # L2._miss_tile, written out
                  f"            miss = {box_sectors}",
                  "            clock = l2.clock = l2.clock + miss",
                  "            tiling.stamps[s] = (clock, miss)",
                  "            l2.misses += miss",
                  "            if clock > REBASE:",
                  "                l2._rebase()",
                  "            hit = 0",
                  "        else:",
                  f"            hit, miss = l2_access(NAME, SHAPE, {esize}, s, BOX)",
                  "    else:",
                  f"        hit, miss = l2_access(NAME, SHAPE, {esize}, s, BOX)",
                  f"    fetched = miss * {sector}",
                  '    counts["l2_read"] += nbytes',
                  '    counts["hbm_read"] += fetched',
                  "    if not hit:",
                  "        if fetched:",
                  f"            hbm.add(now, fetched, {job}, None)",
                  "        else:",
                  f"            landed({job}, now)",
                  "    elif not miss:",
                  f"        l2pool.add(now, nbytes, {job}, None)",
                  "    else:",
                  f"        hbm.add(now, fetched, {job}, (l2pool, nbytes * hit / (hit + miss)))"]
    else:
        lines += ["    if whole:",
                  f"        written = {box_sectors} * {sector}",
                  "    else:",
                  f"        written = sectors(SHAPE, {esize}, s, BOX, {sector}) * {sector}",
                  '    counts["hbm_write"] += written',
                  "    if written:",
                  f"        hbm.add(now, written, {job}, None)",
                  "    else:",
                  f"        landed({job}, now)"]
    exec("\n".join(lines), consts)        # source from decoded constants only
    return consts["start"]


def timing_try(sim):
    """`Simulator.try_start` of a timing run (no numerics, hazards or trace) as a closure
    over the run's state — the same decisions in the same order, with fewer calls and
    attribute reads. With one block slot a core's MMA / VEC engines start in
    events.try_fixed, so the one-slot try here sees DMA engines, whose `busy_until` stays
    0 (only fixed-cost starts set it)."""
    at, times = sim.at, sim.times
    heappush = heapq.heappush
    starts = sim.dma_starts

    def push_try(eng, t: float) -> None:
        events = at.get(t)                  # Simulator.push, written out
        if events is None:
            at[t] = [eng.try_event]
            heappush(times, t)
        else:
            events.append(eng.try_event)

    def try_one(eng, now: float) -> None:
        """Simulator._try_one of a DMA engine (an MMA / VEC one: the method's)."""
        if eng.solo_fixed:          # not from run_timing (events.try_fixed takes them)
            return general_one(eng, now)
        core = eng.slots[0]
        queue = core.queues[eng.index]
        while not eng.data_active and queue:
            op = queue[0]
            if op.ready > now:
                push_try(eng, op.ready)
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
            queue.popleft()         # (one slot: no `queued` bits are read)
            b = core.blocked
            if b is not None and b[0] == "queue" and b[1] is eng:
                core.wake(now)
            op.start = now
            core.inflight += 1
            starts[op.di.index](core, eng, op, now)

    fixed_start, general_one = sim._start, sim._try_one

    def try_multi(eng, now: float) -> None:
        """Simulator.try_start of an engine shared by several block slots, its _pick
        (the first ready queue head whose waits hold, round robin over the slots with
        something queued) and a DMA's start written out."""
        slots = eng.slots
        index = eng.index
        fixed = index >= 2              # (only fixed-cost starts set busy_until)
        last = len(slots) - 1
        while True:
            if eng.data_active:
                return
            if fixed and eng.busy_until > now:
                push_try(eng, eng.busy_until)
                return
            queued = eng.queued
            base = rr = eng.rr
            order = queued >> rr
            wrapped = queued & ((1 << rr) - 1)
            soonest = None
            blocked = False
            op = None
            while order or wrapped:
                if not order:
                    order, wrapped, base = wrapped, 0, 0
                low = order & -order
                k = base + low.bit_length() - 1
                order ^= low
                core = slots[k]
                head = core.queues[index][0]
                if head.ready > now:
                    if soonest is None or head.ready < soonest:
                        soonest = head.ready
                    continue
                for sem, ph in head.waits:
                    if sem.phase <= ph:
                        if eng not in sem.waiters:
                            sem.waiters.append(eng)
                        blocked = True
                        break
                else:
                    eng.rr = k + 1 if k < last else 0
                    op = head
                    break
            if op is None:
                if soonest is not None:
                    push_try(eng, soonest)
                if blocked and not eng.waiting:
                    eng.waiting = True
                    eng.wait_since = now
                return
            if eng.waiting:
                eng.stall_sem += now - eng.wait_since
                eng.waiting = False
            queue = core.queues[index]
            queue.popleft()
            if not queue:
                eng.queued &= ~core.bit
            b = core.blocked
            if b is not None and b[0] == "queue" and b[1] is eng:
                core.wake(now)
            if fixed:
                fixed_start(core, eng, op, now)
            else:
                op.start = now
                core.inflight += 1
                starts[op.di.index](core, eng, op, now)

    return try_one if sim.resident == 1 else try_multi


def pool_events(sim):
    """`pool_event(pool, now)`: a pool's event as a closure over the run's state, its
    landed DMAs' engines tried again by `sim.try_start` as it stands (a timing run's
    `timing_try`, or the simulator's own)."""
    at, times = sim.at, sim.times
    heappush = heapq.heappush
    hbm, l2pool, try_start = sim.hbm, sim.l2pool, sim.try_start
    deferred, latency, port = sim.deferred, sim.dma_latency, sim.port

    def pool_event(pool, now: float) -> None:
        """A pool's transfers that are done go on to their next phase or land (each
        landing op's DmaPath.data_end written out). Where several land (several engines
        may start a transfer each), the pools' posts meanwhile are deferred
        (Pool.deferred) and placed at the end."""
        done = pool.pop_done(now)
        defer = len(done) > 1 or (done and done[0][2].__class__ is tuple)
        if defer:
            hbm.deferred = l2pool.deferred = deferred
        t = now + latency
        landing = None          # the events at t, once a landing op's DONE is posted
        for _, _, job, rest in done:
            if rest is not None:
                rest[0].add(now, rest[1], job, None)
                continue
            for op in job if job.__class__ is tuple else (job,):
                eng = op.eng                    # DmaPath.data_end
                eng.data_active = False
                eng.transfers -= 1
                if not eng.transfers:
                    took = now - eng.data_since
                    eng.busy += took
                    lost = took - eng.data_moved / port
                    eng.stall_bw += lost if lost > 0.0 else 0.0
                if landing is None:
                    landing = at.get(t)
                    if landing is None:
                        landing = at[t] = []
                        heappush(times, t)
                landing.append((DONE, op, None))
                try_start(eng, now)
        if defer:
            hbm.deferred = l2pool.deferred = None
            if deferred:
                flush(deferred, at, times)
        pool.post()

    return pool_event


def _inside(shape, box):
    """A function of a box's starts: whether all of `box` lies inside a tensor of
    `shape` (never, for an empty box) — its bounds written out as constants, as the
    check runs once a DMA start."""
    if min(box) <= 0:
        return lambda starts: False
    return eval(f"lambda s: {_inside_test(shape, box)}")


def _aligned_to(box):
    """A function of a box's starts: whether each is a multiple of the box's extent
    along its dim (l2._aligned, the extents written out as constants)."""
    if min(box) <= 0:
        return lambda starts: False
    return eval(f"lambda s: {_aligned_test(box)}")


def _inside_test(shape, box) -> str:
    """The source of `_inside`'s test of the starts `s` (a non-empty box)."""
    return " and ".join(f"0 <= s[{i}] <= {n - e}" for i, (n, e) in enumerate(zip(shape, box)))


def _aligned_test(box) -> str:
    """The source of `_aligned_to`'s test of the starts `s` (a non-empty box)."""
    return " and ".join(f"s[{i}] % {e} == 0" for i, e in enumerate(box))
