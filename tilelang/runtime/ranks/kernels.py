"""Launching a multi-rank kernel: find the rank table its symmetric arguments call for,
hand it over as the last args slot, and after the launch turn the table's ERR_* words
into an exception that names the rank, the statement and the values."""
from __future__ import annotations

import numpy as np

from ...diagnostics import codes_ranks as codes
from ..errors import LaunchValueError
from . import table as T
from .errors import PeerAccessError, RankAbortedError, RankError, RankTimeoutError
from .heap import find_heap
from .wait import TIMEOUT_ENV

_group_tables: dict = {}


class RankLaunch:
    def __init__(self, spec):
        self.spec = spec
        self.symmetric = set(spec.ranks.symmetric)
        self.sites = spec.ranks.sites
        self._heaps: dict = {}

    def prepare(self, plan, slots, arrays) -> np.ndarray:
        """The rank table for this launch (a private copy: the kernel writes its ERR_*
        words), stored in the last slot."""
        heap = None
        for p, a in zip(plan.tensor_params, arrays):
            if p.name not in self.symmetric:
                continue
            h = find_heap(a.ctypes.data, a.nbytes)
            if h is None:
                raise LaunchValueError(
                    f"{self.spec.name}: argument {p.name!r} is reached on peer ranks, so it "
                    f"must be allocated in a symmetric heap (heap.alloc(...) on every rank)",
                    codes.NOT_SYMMETRIC, p.name)
            if heap is not None and h is not heap:
                raise LaunchValueError(
                    f"{self.spec.name}: argument {p.name!r} lies in another symmetric heap "
                    f"than the kernel's other peer-reached tensors; one launch uses one "
                    f"heap", codes.NOT_SYMMETRIC, p.name)
            heap = h
        if any(n not in {p.name for p in plan.tensor_params} for n in self.symmetric):
            raise LaunchValueError(f"{self.spec.name}: a tensor reached on peers cannot be "
                                   f"an out_idx output", codes.NOT_SYMMETRIC)
        self._heap = heap
        table = (heap.table if heap is not None else _group_table(self.spec.name)).copy()
        slots[self.spec.num_slots - 1] = table.ctypes.data
        return table

    def check(self, table: np.ndarray, plan, arrays) -> None:
        code = int(table[T.ERR_CODE])
        if code == T.ERR_NONE:
            return
        rank = int(table[T.RANK])
        site_no = int(table[T.ERR_SITE])
        site = self.sites[site_no] if 0 <= site_no < len(self.sites) else {}
        op, buf = site.get("op", "a multi-rank statement"), site.get("buffer", "?")
        where = f" at {site['where']}" if site.get("where") else ""
        pe, observed = int(table[T.ERR_PE]), int(table[T.ERR_OBSERVED])
        expected, index = int(table[T.ERR_EXPECTED]), int(table[T.ERR_INDEX])
        shapes = {p.name: a.shape for p, a in zip(plan.tensor_params, arrays)}
        head = f"rank {rank}: {op} on `{buf}`{where} in kernel {self.spec.name}"
        if code == T.ERR_TIMEOUT:
            element = _element(buf, index, shapes) if op != "T.barrier_blocks" else \
                f"{buf}[{index}] (rank {index}'s arrival)"
            cmp = {"eq": "==", "ne": "!=", "ge": ">=", "le": "<=", "gt": ">", "lt": "<"}.get(
                op.rsplit("_", 1)[-1], ">=")
            raise RankTimeoutError(
                f"{head}: timed out after {table[T.TIMEOUT_NS] / 1e9:g} s waiting for signal "
                f"{element} on rank {pe} to be {cmp} {expected}; it holds {observed} (set "
                f"{TIMEOUT_ENV} to change the limit)", rank, codes.WAIT_TIMEOUT)
        if code == T.ERR_ABORTED:
            reason = None
            if self._heap is not None:
                reason = self._heap.group.abort_reason()
            raise RankAbortedError(f"{head}: stopped waiting for rank {pe}: "
                                   f"{reason or 'the run was aborted'}", rank,
                                   codes.RUN_ABORTED)
        if code == T.ERR_BAD_PEER:
            n = int(table[T.NUM_RANKS])
            why = (f"ranks are 0 .. {n - 1}" if not 0 <= pe < n else
                   f"rank {pe} is on another host (its memory is not mapped here)")
            raise PeerAccessError(f"{head}: peer rank {pe} cannot be reached: {why}", rank,
                                  codes.BAD_PEER)
        if code == T.ERR_BOUNDS:
            raise PeerAccessError(f"{head}: reaches element {index - 1} but `{buf}` has "
                                  f"{expected} elements", rank, codes.PEER_OUT_OF_BOUNDS)
        raise RankError(f"{head}: failed with code {code}", rank)


def _element(buf: str, flat: int, shapes: dict) -> str:
    shape = shapes.get(buf)
    if not shape or not 0 <= flat < int(np.prod(shape)):
        return f"{buf}[flat {flat}]"
    return f"{buf}[{', '.join(str(i) for i in np.unravel_index(flat, shape))}]"


def _group_table(kernel: str) -> np.ndarray:
    """The table of a kernel that reaches no peer (it only asks for its rank)."""
    from .group import current
    group = current()
    if group is None:
        raise LaunchValueError(f"{kernel} uses T.get_rank / T.get_num_ranks, so it needs the "
                               f"ranks of the run: call tilelang.ep.init() first",
                               codes.NO_RANK_TABLE)
    t = _group_tables.get(id(group))
    if t is None:
        t = np.zeros(T.num_words(group.size()), np.int64)
        t[T.RANK], t[T.NUM_RANKS] = group.rank(), group.size()
        t[T.TIMEOUT_NS] = 1
        _group_tables[id(group)] = t
    return t
