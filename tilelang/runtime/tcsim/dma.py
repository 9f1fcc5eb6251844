"""The DMA engines' data path, a part of the simulator (sim.Simulator): a transfer's
start (the bytes it moves, its L2 hits and misses, a multicast's rendezvous), its phases
through the bandwidth pools (bandwidth.py: the HBM misses first, then the L2 hits), and
its end, `dma_latency` before it completes. The hot path of memory-bound kernels: what
an instruction's starts read of the instruction and its tensor is taken once a run."""
from __future__ import annotations

import heapq

from . import numerics as nx
from .bandwidth import flush
from .l2 import sectors
from .machine import DONE
from .useful import on_load as useful_load


class DmaPath:
    """Simulator methods of the DMA data path (they use its agenda, tensors, L2, pools,
    byte counts and `try_start`)."""

    def _dma_info(self, d) -> tuple:
        """What a DMA instruction's starts read of the instruction and its tensor, once a
        run (an instruction's start is the hot path of memory-bound kernels)."""
        info = (d.glob[0], tuple(self.tensors[d.glob[0]].shape), d.esize, d.box, d.box_elems,
                d.engine == 0, d.to_smem, d.mcast and self.cluster_size > 1,
                bool(d.attrs.get("gather")), min(d.box) > 0)
        self.dma_info[d.index] = info
        return info

    def _start_dma(self, core, eng, op, now: float) -> None:
        d = op.di
        info = self.dma_info[d.index] or self._dma_info(d)
        name, shape, esize, box, elems, load, to_smem, mcast, gather, box_ok = info
        starts = op.starts
        stops = op.stops
        if stops is None:               # the usual DMA: its whole box, no masked tail
            inb = elems
            for s, e, n in zip(starts, box, shape):
                if s < 0 or e <= 0 or s + e > n:     # partly outside the tensor
                    inb = nx.inbounds_elems(starts, box, shape)
                    break
        else:                           # what the DMA really moves, and the tensor's part
            inb = nx.inbounds_elems(starts, box, nx.clip_shape(shape, stops))
            box = nx.stopped_box(starts, box, stops)
            box_ok = min(box) > 0
        nbytes = inb * esize
        op.nbytes = elems * esize               # a box's arrival counts all of it
        if load:
            if inb != elems:
                useful_load(core.valid, d.tiles[0], op.stages[0], starts, d.box,
                            shape if stops is None else nx.clip_shape(shape, stops))
            elif core.valid:
                core.valid.pop((d.tiles[0].buf, op.stages[0]), None)
        counts = self.bytes
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
            job = self._join_multicast(core, op, now)
            if job is None:
                return                        # the engine waits for the cluster
        sector = self.sector
        if load:
            hit, miss = self.l2.access(name, shape, esize, starts, box) if box_ok else (0, 0)
            fetched = miss * sector
            counts["l2_read"] += nbytes
            counts["hbm_read"] += fetched
            if gather:
                counts["gather"] += nbytes
            # the missed sectors come from HBM, then the rest from L2
            if not hit:
                if fetched:
                    self.hbm.add(now, fetched, job, None)
                else:
                    self._landed(job, now)
            elif not miss:
                self.l2pool.add(now, nbytes, job, None)
            else:
                self.hbm.add(now, fetched, job, (self.l2pool, nbytes * hit / (hit + miss)))
        else:
            written = sectors(shape, esize, starts, box, sector) * sector
            counts["hbm_write"] += written
            if written:
                self.hbm.add(now, written, job, None)
            else:
                self._landed(job, now)

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

    def _pool_event(self, pool, now: float) -> None:
        """A pool's transfers that are done go on to their next phase or land. Where
        several land (several engines may start a transfer each), the pools' posts
        meanwhile are deferred (Pool.deferred) and placed at the end."""
        data_end = self.data_end
        done = pool.pop_done(now)
        defer = len(done) > 1 or (done and done[0][2].__class__ is tuple)
        if defer:
            self.hbm.deferred = self.l2pool.deferred = self.deferred
        for _, _, job, rest in done:
            if rest is not None:
                rest[0].add(now, rest[1], job, None)
            elif job.__class__ is tuple:
                for op in job:
                    data_end(op, now)
            else:
                data_end(job, now)
        if defer:
            self.hbm.deferred = self.l2pool.deferred = None
            if self.deferred:
                flush(self.deferred, self.at, self.times)
        pool.post()

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
