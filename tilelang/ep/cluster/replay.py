"""Replaying messages over the link pools: a discrete-event simulation.

A message crosses one or two pools (out of the sender's port, into the receiver's; or one
local copy). Each pool serves the messages that reach it in the order they arrive (equal
arrival times in token order), one after another at its full bandwidth — the same
completion time for the last of them as sharing the bandwidth among them would give —, and
a message goes on to its next pool, store-and-forward, once it has been sent and has
crossed the link's latency. A message whose sending waits for others (a forwarded chunk,
a reduced chunk) is ready when the last of them has arrived.
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
