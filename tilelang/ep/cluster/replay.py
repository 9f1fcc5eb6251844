"""Replaying messages over the link pools: a discrete-event simulation.

A message crosses one or two pools (out of the sender's port, into the receiver's; or one
local copy). Each pool serves the messages that reach it in the order they arrive (equal
arrival times in token order), one after another at its full bandwidth — the same
completion time for the last of them as sharing the bandwidth among them would give —, and
a message goes on to its next pool, store-and-forward, once it has been sent and has
crossed the link's latency. A message whose sending waits for others (a forwarded chunk,
a reduced chunk) is ready when the last of them has arrived.

Two ways give the same result, bit for bit. `replay_events` is the event simulation
itself (a heap of (time, priority, message, hop)). `replay` goes by generations of the
message graph (the messages ready at the start, then those their arrivals release, ...):
each generation's sends are served pool by pool, every pool in the order of (arrival,
priority, message), the order the events would reach it — which holds when a pool's
events of a later generation all come after those of the earlier ones and nothing
arrives at the instant it was sent (checked as it goes; otherwise it hands over to the
event simulation). The projection's 128-rank replays take a fifth of the time this way.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from .traffic import Messages


@dataclass
class Replay:
    time: float                 # when the last message arrived
    finish: np.ndarray          # arrival time of each message
    pool_bytes: np.ndarray      # bytes through each pool
    pool_busy: np.ndarray       # seconds each pool spent sending


def replay(msgs: Messages, bandwidth) -> Replay:
    """Run the messages from time 0; `bandwidth` per pool id."""
    by_generations = _Generations(msgs, bandwidth).run()
    return by_generations if by_generations is not None else replay_events(msgs, bandwidth)


class _Generations:
    """`replay` by generations of the message graph (module docstring); `run()` is None
    when the pools' order would differ from the event simulation's."""

    def __init__(self, msgs: Messages, bandwidth):
        self.msgs = msgs
        pools = len(bandwidth)
        inv_bw = np.array([0.0 if b == float("inf") else 1.0 / b for b in bandwidth])
        self.dur0 = msgs.nbytes * inv_bw[msgs.hop0]
        self.dur1 = msgs.nbytes * inv_bw[np.maximum(msgs.hop1, 0)]
        self.free, self.busy, self.moved = [0.0] * pools, [0.0] * pools, [0.0] * pools
        self.last = [None] * pools          # (time, priority, message, hop) served last

    def run(self) -> Replay | None:
        msgs, n = self.msgs, len(self.msgs)
        ready, finish = np.zeros(n), np.zeros(n)
        waiting = msgs.num_parents.astype(np.int64)
        todo = np.flatnonzero(waiting == 0)
        while len(todo):
            sent = self._serve(todo, msgs.hop0[todo], ready[todo], self.dur0[todo], 0)
            if sent is None:
                return None
            arrive = sent + msgs.latency[todo]
            if not (arrive > ready[todo]).all():
                return None             # an instant hop: the event order decides
            two = msgs.hop1[todo] >= 0
            done = arrive.copy()
            if two.any():
                m1 = todo[two]
                got = self._serve(m1, msgs.hop1[m1], arrive[two], self.dur1[m1], 1)
                if got is None or not (got > arrive[two]).all():
                    return None
                done[two] = got
            finish[todo] = done
            todo = self._release(todo, done, ready, waiting)
        if (waiting > 0).any():
            return None
        return Replay(float(finish.max(initial=0.0)), finish, np.array(self.moved),
                      np.array(self.busy))

    def _serve(self, ms, pools, times, durs, hop):
        """Serve messages `ms` on `pools`, arriving at `times`: the end of each send, or
        None when a pool saw a later event before."""
        prio = self.msgs.priority[ms]
        order = np.lexsort((ms, prio, times, pools))
        free, busy, moved, last = self.free, self.busy, self.moved, self.last
        nbytes = self.msgs.nbytes[ms[order]].tolist()
        ends = [0.0] * len(order)
        prev = -1
        for i, (p, t, d, b) in enumerate(zip(pools[order].tolist(), times[order].tolist(),
                                             durs[order].tolist(), nbytes)):
            if p != prev:
                if prev >= 0:
                    last[prev] = self._key(ms, prio, times, order, i - 1, hop)
                first = self._key(ms, prio, times, order, i, hop)
                if last[p] is not None and not last[p] < first:
                    return None
                prev = p
            f = free[p]
            start = f if f > t else t
            ends[i] = free[p] = start + d
            busy[p] += d
            moved[p] += b
        if prev >= 0:
            last[prev] = self._key(ms, prio, times, order, len(order) - 1, hop)
        out = np.empty(len(order))
        out[order] = ends
        return out

    @staticmethod
    def _key(ms, prio, times, order, i, hop):
        j = order[i]
        return (float(times[j]), int(prio[j]), int(ms[j]), hop)

    def _release(self, done_ms, done_at, ready, waiting):
        """Children of the messages that arrived: their ready time (the last parent's
        arrival) and the ones now ready."""
        ptr, kids = self.msgs.child_ptr, self.msgs.child_idx
        counts = ptr[done_ms + 1] - ptr[done_ms]
        if not counts.any():
            return np.empty(0, np.int64)
        starts = np.repeat(ptr[done_ms] - np.cumsum(counts) + counts, counts)
        child = kids[starts + np.arange(counts.sum())]
        np.maximum.at(ready, child, np.repeat(done_at, counts))
        np.subtract.at(waiting, child, 1)
        child = np.unique(child)
        return child[waiting[child] == 0]


def replay_events(msgs: Messages, bandwidth) -> Replay:
    """`replay` as the event simulation (module docstring)."""
    n, pools = len(msgs), len(bandwidth)
    nbytes = msgs.nbytes.tolist()
    hop0, hop1 = msgs.hop0.tolist(), msgs.hop1.tolist()
    prio = msgs.priority.tolist()
    lat = msgs.latency.tolist()
    ptr, kids = msgs.child_ptr.tolist(), msgs.child_idx.tolist()
    waiting = msgs.num_parents.tolist()
    inv_bw = [0.0 if b == float("inf") else 1.0 / b for b in bandwidth]
    free = [0.0] * pools
    busy = [0.0] * pools
    moved = [0.0] * pools
    ready = [0.0] * n
    finish = [0.0] * n
    heap = [(0.0, prio[m], m, 0) for m in range(n) if waiting[m] == 0]
    heapq.heapify(heap)
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        t, pr, m, hop = pop(heap)
        pool = hop0[m] if hop == 0 else hop1[m]
        b = nbytes[m]
        start = free[pool] if free[pool] > t else t
        dur = b * inv_bw[pool]
        free[pool] = start + dur
        busy[pool] += dur
        moved[pool] += b
        if hop == 0:
            arrive = start + dur + lat[m]
            if hop1[m] >= 0:
                push(heap, (arrive, pr, m, 1))
                continue
        else:
            arrive = start + dur
        finish[m] = arrive
        for c in kids[ptr[m]:ptr[m + 1]]:
            if arrive > ready[c]:
                ready[c] = arrive
            waiting[c] -= 1
            if waiting[c] == 0:
                push(heap, (ready[c], prio[c], c, 0))
    return Replay(max(finish, default=0.0), np.array(finish), np.array(moved),
                  np.array(busy))
