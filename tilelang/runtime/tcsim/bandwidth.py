"""Shared bandwidth: processor-sharing pools (HBM, L2); the L2 cache itself is l2.py.

A pool of bandwidth R bytes/cycle is shared equally by its n active transfers, each also
capped at its core's port rate: every transfer moves at min(cap, R / n). Because all
active transfers of a pool move at the same rate, one "virtual work" clock V (bytes each
active transfer has moved since the pool began) orders their completions: a transfer of
b bytes that starts at V0 finishes when V reaches V0 + b. Each arrival or departure is
O(log n) — the simulator stays fast with hundreds of transfers in flight.
"""
from __future__ import annotations

import heapq

from .machine import POOL

_heappush, _heappop = heapq.heappush, heapq.heappop


class Pool:
    """A processor-sharing pool that posts its next completion on the simulator's agenda
    (`times`, `at`: sim.py) as a (POOL, pool, version) event whenever its set of
    transfers changes; an event whose version is no longer the pool's is stale.

    `posted`: the time of the event posted for the current version since the pool's
    last event was handled (None: none). Posting the same (version, time) again would
    put a second copy behind the first in that time's events: the first one's handling
    pops a transfer and bumps the version, so the copy could only be stale — it is not
    posted.

    `deferred`: while a pool event is handled (its completions start further transfers,
    often one per engine whose data landed), a list the pools' posts go to instead of the
    agenda, each with the place in its time's events it would have taken; a pool's later
    post drops its earlier one (which could only be stale), and `flush` puts the rest in
    their places — the agenda as if every post had been made, less stale events."""
    __slots__ = ("name", "rate_total", "cap", "v", "t", "heap", "n", "version", "seq",
                 "times", "at", "posted", "deferred")

    def __init__(self, name: str, bytes_per_clk: float, cap: float, times: list, at: dict):
        self.name = name
        self.rate_total = bytes_per_clk
        self.cap = cap
        self.v = 0.0
        self.t = 0.0
        self.heap: list = []
        self.n = 0
        self.version = 0
        self.seq = 0
        self.times = times
        self.at = at
        self.posted = None
        self.deferred = None

    def add(self, now: float, nbytes: float, job, rest) -> None:
        """Start moving `nbytes` for `job` (`rest`: its next phase, (pool, bytes), or
        None) and post the pool's next completion."""
        v, n, cap = self.v, self.n, self.cap      # (read once: the hot path of DMAs)
        if now > self.t:                  # the progress to now, at min(cap, R / n) each
            if n:
                share = self.rate_total / n
                v = self.v = v + (share if share < cap else cap) * (now - self.t)
            self.t = now
        seq = self.seq = self.seq + 1
        heap = self.heap
        _heappush(heap, (v + nbytes, seq, job, rest))
        n = self.n = n + 1
        version = self.version = self.version + 1
        left = heap[0][0] - v                         # self.post(), written out
        share = self.rate_total / n
        t = self.t + (left if left > 0.0 else 0.0) / (share if share < cap else cap)
        self.posted = t
        events = self.at.get(t)
        deferred = self.deferred
        if deferred is not None:
            # kept for `flush` with the number of events its time has now; this
            # pool's earlier post (one a pool, of the two pools) could only be stale
            if deferred:
                if deferred[-1][0] is self:
                    deferred.pop()
                elif deferred[0][0] is self:
                    del deferred[0]
            deferred.append((self, t, 0 if events is None else len(events), version))
        elif events is None:
            self.at[t] = [(POOL, self, version)]
            _heappush(self.times, t)
        else:
            events.append((POOL, self, version))

    def post(self) -> None:
        """Post the next completion (if any) as an event of this version."""
        if self.heap:
            left = self.heap[0][0] - self.v          # its finish, at the current rate
            share = self.rate_total / self.n
            t = self.t + (left if left > 0.0 else 0.0) / \
                (share if share < self.cap else self.cap)
            if t == self.posted:
                return                                # a copy of a pending event
            self.posted = t
            events = self.at.get(t)                   # Simulator.push, written out
            if events is None:
                self.at[t] = [(POOL, self, self.version)]
                heapq.heappush(self.times, t)
            else:
                events.append((POOL, self, self.version))

    def pop_done(self, now: float) -> list:
        """The (finish, seq, job, rest) entries of the transfers done by `now` (the
        pool's event is being handled)."""
        self.posted = None
        if now > self.t:                  # the progress to now, at min(cap, R / n) each
            if self.n:
                share = self.rate_total / self.n
                self.v += (share if share < self.cap else self.cap) * (now - self.t)
            self.t = now
        done = []
        v = self.v
        limit = v + 1e-9 * (v if v > 1.0 else 1.0)
        heap = self.heap
        while heap and heap[0][0] <= limit:
            done.append(_heappop(heap))
        if done:
            self.n -= len(done)
            self.version += 1
        return done


def flush(deferred: list, at: dict, times: list) -> None:
    """Put the deferred posts (Pool.deferred, in the order they were made) on the agenda
    where they would have gone: behind the events their time had then, and behind the
    deferred posts before them for the same time (their times' lists only grow while an
    event is handled, and never lose the events they had)."""
    if len(deferred) == 1:                    # the usual case, written out
        pool, t, n, version = deferred.pop()
        events = at.get(t)
        if events is None:
            at[t] = [(POOL, pool, version)]
            heapq.heappush(times, t)
        else:
            events.insert(n, (POOL, pool, version))
        return
    placed: dict = {}
    for pool, t, n, version in deferred:
        events = at.get(t)
        if events is None:
            at[t] = [(POOL, pool, version)]
            heapq.heappush(times, t)
        else:
            k = placed.get(t, 0)
            events.insert(n + k, (POOL, pool, version))
        placed[t] = placed.get(t, 0) + 1
    deferred.clear()
