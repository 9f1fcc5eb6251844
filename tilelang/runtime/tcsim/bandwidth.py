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


class Pool:
    __slots__ = ("name", "rate_total", "cap", "v", "t", "heap", "n", "version", "seq",
                 "bytes")

    def __init__(self, name: str, bytes_per_clk: float, cap: float):
        self.name = name
        self.rate_total = bytes_per_clk
        self.cap = cap
        self.v = 0.0
        self.t = 0.0
        self.heap: list = []
        self.n = 0
        self.version = 0
        self.seq = 0
        self.bytes = 0.0

    def rate(self) -> float:
        """Bytes per cycle of each active transfer."""
        if not self.n:
            return 0.0
        share = self.rate_total / self.n
        return share if share < self.cap else self.cap

    def advance(self, now: float) -> None:
        if now > self.t:
            if self.n:
                self.v += self.rate() * (now - self.t)
            self.t = now

    def add(self, now: float, nbytes: float, job) -> None:
        if now > self.t:                  # self.advance(now), written out (a hot path)
            if self.n:
                self.v += self.rate() * (now - self.t)
            self.t = now
        self.seq += 1
        heapq.heappush(self.heap, (self.v + nbytes, self.seq, job))
        self.n += 1
        self.bytes += nbytes
        self.version += 1

    def next_finish(self) -> float | None:
        """Absolute time of the next completion, at the current rate."""
        if not self.heap:
            return None
        left = self.heap[0][0] - self.v
        share = self.rate_total / self.n              # self.rate(), written out
        return self.t + (left if left > 0.0 else 0.0) / (share if share < self.cap else self.cap)

    def pop_done(self, now: float) -> list:
        self.advance(now)
        done = []
        eps = 1e-9 * max(1.0, self.v)
        while self.heap and self.heap[0][0] <= self.v + eps:
            done.append(heapq.heappop(self.heap)[2])
        if done:
            self.n -= len(done)
            self.version += 1
        return done
