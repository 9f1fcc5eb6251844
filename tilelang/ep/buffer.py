"""`tilelang.ep.Buffer`: DeepEP's Buffer API over tile-language kernels and symmetric
heaps. Code written for DeepEP runs with the import, the tensors and the process group
changed (docs/ep.md). Every call is a collective: all ranks make the same calls, in the
same order.

A dispatch runs: the layout kernel on topk_idx (the routing check), `notify` (each rank
puts its counts into every peer's heap, then a barrier; MPI all-gathers them across
hosts), one plan computed identically on every rank (plan.py), `send_slots`, the
dispatch kernels writing each token straight into its receivers' heaps (MPI carries
rows between hosts), a barrier, and `localize_topk` on the received rows. `recv_x` is a
view of the heap, valid until the next dispatch (`copy=True` for a copy).

DeepEP's low-latency mode (`low_latency_dispatch`, `low_latency_combine`, ...) lives in
low_latency.py; the methods here only hand over to it.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..ops.ep import combine_kernels, dispatch_kernels, layout_kernels
from . import low_latency, transport
from .arrays import aligned_empty, check, from_numpy, to_numpy
from .errors import BufferTooSmallError, RoutingError
from .events import Config, EventOverlap
from .handle import Handle
from .plan import Plan

_X_KINDS = ("bfloat16", "float32")
_HEAD = 4                     # row words before the counts: invalid, first bad, mismatch, E
_MIN_BYTES = 1 << 20


class Buffer:
    num_sms: int = 20
    DEFAULT_MAX_TOKENS = 4096
    MAX_EXPERTS = 4096

    def __init__(self, group=None, num_nvl_bytes: int = 0, num_rdma_bytes: int = 0,
                 low_latency_mode: bool = False, num_qps_per_rank: int = 24,
                 allow_nvlink_for_low_latency_mode: bool = True, allow_mnnvl: bool = False,
                 explicitly_destroy: bool = False, enable_shrink: bool = False, comm=None):
        if group is None:
            if comm is None:
                raise ValueError("Buffer needs a process group (tilelang.ep.init()) or an "
                                 "mpi4py communicator (comm=)")
            from ..runtime.ranks.mpi import mpi_group
            group = mpi_group(comm)
        self.group = group
        self.rank, self.group_size = group.rank(), group.size()
        self.num_nvl_bytes, self.num_rdma_bytes = int(num_nvl_bytes), int(num_rdma_bytes)
        n = self.group_size
        self._width_max = _HEAD + n + self.MAX_EXPERTS
        fixed = 2 * 4096 + n * self._width_max * 4
        size = max(self.num_nvl_bytes, self.num_rdma_bytes, _MIN_BYTES)
        self.heap = group.heap(fixed + size)
        self._barrier = self.heap.alloc((n,), np.int32)
        self._meta = self.heap.alloc((n * self._width_max,), np.int32)
        self._start = self.heap.mark()
        self._dispatch_end = self._start
        self._on_host = np.array([group.is_local(r) for r in range(n)], np.int32)
        self._placements: dict = {}

    # -- DeepEP's static helpers ----------------------------------------------------------

    @staticmethod
    def is_sm90_compiled() -> bool:
        return True          # the fp8 paths exist here

    @staticmethod
    def set_num_sms(new_num_sms: int) -> None:
        if new_num_sms % 2 != 0:
            raise ValueError("the number of SMs must be even")
        Buffer.num_sms = new_num_sms

    @staticmethod
    def capture() -> EventOverlap:
        return EventOverlap()

    @staticmethod
    def get_dispatch_config(num_ranks: int) -> Config:
        return Config(Buffer.num_sms, 6, 256, 6, 128)

    @staticmethod
    def get_combine_config(num_ranks: int) -> Config:
        return Config(Buffer.num_sms, 6, 256, 6, 128)

    @staticmethod
    def get_buffer_size_hint(num_max_tokens: int, hidden: int, num_ranks: int,
                             num_topk: int = 8, x_bytes: int = 2) -> int:
        """`num_nvl_bytes` for dispatch + combine when every rank sends up to
        `num_max_tokens` tokens to every rank (the worst case; across hosts as many
        staging rows again). The heap is backed by memory only as far as it is used."""
        rows = num_max_tokens * num_ranks
        per_row = hidden * x_bytes + num_topk * 12 + (hidden // 128 + 1) * 4
        return 2 * 2 * rows * per_row + (1 << 20)

    @staticmethod
    def get_low_latency_rdma_size_hint(num_max_dispatch_tokens_per_rank: int, hidden: int,
                                       num_ranks: int, num_experts: int) -> int:
        """`num_rdma_bytes` for the low-latency mode at these sizes (low_latency.py)."""
        return low_latency.size_hint(num_max_dispatch_tokens_per_rank, hidden, num_ranks,
                                     num_experts)

    def get_local_buffer_tensor(self, dtype, size=None, offset: int = 0,
                                use_rdma_buffer: bool = False) -> np.ndarray:
        """This rank's part of the heap after the control words, as `dtype`."""
        dt = np.dtype(dtype)
        count = (self.heap.nbytes - self._start - offset) // dt.itemsize
        view = self.heap.view(self._start + offset, (count,), dt)
        return view if size is None else view[:int(np.prod(size))].reshape(size)

    def get_comm_stream(self):
        return None

    def destroy(self) -> None:
        self.group.barrier("Buffer.destroy")
        self.heap.close()

    # -- expert placement -----------------------------------------------------------------

    def set_expert_placement(self, expert_rank) -> None:
        """Experts on ranks: `expert_rank[e]` is the rank holding expert e (a load balancer
        passes its physical placement; the default puts E/R consecutive experts on each
        rank). Every rank sets the same placement."""
        placement = np.ascontiguousarray(expert_rank, np.int32)
        if placement.ndim != 1 or placement.size == 0 or placement.min() < 0 \
                or placement.max() >= self.group_size:
            raise ValueError(f"expert_rank must list a rank in 0..{self.group_size - 1} for "
                             f"every expert, got {placement!r}")
        self._placements[placement.size] = placement

    def _placement(self, num_experts: int) -> tuple[np.ndarray, np.ndarray]:
        """(expert_rank, expert_local): each expert's rank and index among its rank's."""
        placement = self._placements.get(num_experts)
        if placement is None:
            if num_experts % self.group_size:
                raise ValueError(f"num_experts={num_experts} is not a multiple of the "
                                 f"{self.group_size} ranks; call set_expert_placement()")
            placement = np.repeat(np.arange(self.group_size, dtype=np.int32),
                                  num_experts // self.group_size)
            self._placements[num_experts] = placement
        local = np.zeros(num_experts, np.int32)
        for r in range(self.group_size):
            mine = np.flatnonzero(placement == r)
            local[mine] = np.arange(mine.size)
        return placement, local

    # -- layout ---------------------------------------------------------------------------

    def get_dispatch_layout(self, topk_idx, num_experts: int, previous_event=None,
                            async_finish: bool = False, allocate_on_comm_stream: bool = False):
        """(num_tokens_per_rank, num_tokens_per_rdma_rank, num_tokens_per_expert,
        is_token_in_rank, event). Local; expert ids out of range are left out of the
        counts here and fail the next dispatch on every rank."""
        topk, as_torch = to_numpy(topk_idx, "topk_idx")
        per_rank, per_expert, in_rank, _ = self._layout(topk, num_experts)
        rdma = None
        if self.group.num_hosts > 1:
            hosts = np.asarray(self.group.hosts)
            rdma = np.array([in_rank[:, hosts == h].any(axis=1).sum()
                             for h in range(self.group.num_hosts)], np.int32)
        return (from_numpy(per_rank, as_torch), from_numpy(rdma, as_torch),
                from_numpy(per_expert, as_torch), from_numpy(in_rank, as_torch),
                EventOverlap())

    def _layout(self, topk: np.ndarray, num_experts: int):
        topk = check(topk, "topk_idx", 2, ("int64",))
        if isinstance(num_experts, bool) or not isinstance(num_experts, (int, np.integer)):
            raise TypeError(f"num_experts must be an int, got {type(num_experts).__name__} "
                            f"{num_experts!r}")
        if not 0 < num_experts <= self.MAX_EXPERTS:
            raise ValueError(f"num_experts must be in 1..{self.MAX_EXPERTS}, got {num_experts}")
        placement, _ = self._placement(num_experts)
        n = self.group_size
        per_rank = np.zeros(n, np.int32)
        per_expert = np.zeros(num_experts, np.int32)
        in_rank = np.zeros((topk.shape[0], n), np.bool_)
        invalid = np.array([0, np.iinfo(np.int32).max], np.int32)
        layout_kernels()["dispatch_layout"](topk, placement, per_rank, per_expert, in_rank,
                                            invalid)
        return per_rank, per_expert, in_rank, invalid

    # -- dispatch -------------------------------------------------------------------------

    def dispatch(self, x, handle: Handle | None = None, num_tokens_per_rank=None,
                 num_tokens_per_rdma_rank=None, is_token_in_rank=None,
                 num_tokens_per_expert=None, topk_idx=None, topk_weights=None,
                 expert_alignment: int = 1, num_worst_tokens: int = 0, config=None,
                 previous_event=None, async_finish: bool = False,
                 allocate_on_comm_stream: bool = False, copy: bool = False):
        """(recv_x, recv_topk_idx, recv_topk_weights, num_recv_tokens_per_expert_list,
        handle, event); recv_x is `(x_e4m3, scales)` for an fp8 pair. With `handle` the
        routing of that dispatch is reused: (recv_x, None, None, None, None, event)."""
        low_latency.check_no_hook(self)
        xs, as_torch = self._dispatch_input(x)
        if handle is not None:
            for name, value in (("topk_idx", topk_idx), ("topk_weights", topk_weights)):
                if value is not None:
                    raise ValueError(f"{name}: a dispatch through handle= reuses that "
                                     f"dispatch's routing and takes no {name}")
            if not isinstance(handle, Handle):
                raise TypeError(f"handle: expected the handle of a dispatch of this Buffer, "
                                f"got {type(handle).__name__}")
            self._check_shape(xs, handle)
            recv = self._recv_regions(xs, None, handle.plan, num_worst_tokens)
            dispatch_kernels()["barrier"](self._barrier)    # the start barrier
            recv = self._move(xs, None, handle, recv)
            out = self._recv_x(recv, xs, handle.plan.num_recv, num_worst_tokens, copy)
            return from_numpy_tree(out, as_torch), None, None, None, None, EventOverlap()
        if num_tokens_per_rank is None or is_token_in_rank is None \
                or num_tokens_per_expert is None:
            raise ValueError("dispatch needs num_tokens_per_rank, is_token_in_rank and "
                             "num_tokens_per_expert (from get_dispatch_layout), or handle=")
        num_tokens = xs[0].shape[0]
        in_rank = check(to_numpy(is_token_in_rank, "is_token_in_rank")[0],
                        "is_token_in_rank", 2, ("bool",), num_tokens, self.group_size)
        per_rank = check(to_numpy(num_tokens_per_rank, "num_tokens_per_rank")[0],
                         "num_tokens_per_rank", 1, ("int32", "int64"))
        per_expert = check(to_numpy(num_tokens_per_expert, "num_tokens_per_expert")[0],
                           "num_tokens_per_expert", 1, ("int32", "int64"))
        topk = weights = None
        row = np.zeros(_HEAD + self.group_size + per_expert.size, np.int32)
        if topk_idx is not None:
            topk = check(to_numpy(topk_idx, "topk_idx")[0], "topk_idx", 2, ("int64",),
                         num_tokens)
            weights = np.zeros(topk.shape, np.float32) if topk_weights is None else check(
                to_numpy(topk_weights, "topk_weights")[0], "topk_weights", 2, ("float32",),
                num_tokens, topk.shape[1])
            mine_rank, mine_expert, mine_in, invalid = self._layout(topk, per_expert.size)
            row[0], row[1] = invalid
            row[2] = not (np.array_equal(mine_rank, per_rank) and
                          np.array_equal(mine_expert, per_expert) and
                          np.array_equal(mine_in, in_rank))
        elif not np.array_equal(in_rank.sum(axis=0), per_rank):
            row[2] = 1
        row[3] = per_expert.size
        row[_HEAD:_HEAD + self.group_size] = per_rank
        row[_HEAD + self.group_size:] = per_expert
        meta = self._notify(row)                            # also the start barrier
        try:
            # each check sees only what every rank knows (the counts, the shapes): all
            # ranks raise alike
            self._check_status(meta, per_expert.size)
            counts = meta[:, _HEAD:_HEAD + self.group_size].astype(np.int64)
            plan = Plan(counts, self.rank, tuple(self.group.hosts))
            recv = self._recv_regions(xs, (topk, weights), plan, num_worst_tokens)
        except ValueError:              # RoutingError, BufferTooSmallError, num_worst_tokens
            # every rank raises; none may put its next counts into a peer that has not read these yet
            dispatch_kernels()["barrier"](self._barrier)
            raise
        slots = np.empty(in_rank.shape, np.int32)
        layout_kernels()["send_slots"](in_rank, slots)
        handle = Handle(plan, slots, in_rank, per_expert.size, xs[0].shape[1])
        recv = self._move(xs, (topk, weights), handle, recv)
        num_recv = plan.num_recv
        rx = self._recv_x(recv, xs, num_recv, num_worst_tokens, copy)
        placement, local = self._placement(per_expert.size)
        # the counts come from every rank's num_tokens_per_expert, top-k or not (DeepEP's)
        counts_e = [] if num_worst_tokens else \
            self._recv_expert_counts(meta, placement, expert_alignment)
        if topk is None:
            return from_numpy_tree(rx, as_torch), None, None, counts_e, handle, EventOverlap()
        idx, w = recv["topk_idx"], recv["topk_weights"]
        dispatch_kernels()["localize_topk"](idx[:num_recv], w[:num_recv], placement, local,
                                            self.rank)
        rows = num_worst_tokens or num_recv
        if num_worst_tokens:
            idx[num_recv:rows] = -1
            w[num_recv:rows] = 0
        # the top-k tensors are small and callers change them in place (DeepEP's test
        # does, then dispatches again): they are arrays of their own, unlike recv_x
        idx, w = idx[:rows].copy(), w[:rows].copy()
        return (from_numpy_tree(rx, as_torch), from_numpy(idx, as_torch),
                from_numpy(w, as_torch), counts_e, handle, EventOverlap())

    def _dispatch_input(self, x) -> tuple:
        if isinstance(x, tuple):
            if len(x) != 2:
                raise ValueError("an fp8 x is a pair (x_e4m3, scales)")
            q = check(to_numpy(x[0], "x")[0], "x[0]", 2, ("float8_e4m3fn",))
            scales = np.ascontiguousarray(to_numpy(x[1], "x[1]")[0])
            check(scales, "x[1] (scales)", 2, ("float32",), q.shape[0],
                  -(-q.shape[1] // 128))
            return (q, scales), type(x[0]).__module__.startswith("torch")
        a, as_torch = to_numpy(x, "x")
        return (check(a, "x", 2, _X_KINDS),), as_torch

    def _notify(self, row: np.ndarray) -> np.ndarray:
        n = self.group_size
        if row.size > self._width_max:
            raise ValueError(f"at most {self.MAX_EXPERTS} experts")
        meta = self._meta[:n * row.size].reshape(n, row.size)
        dispatch_kernels()["notify"](row, meta, self._on_host, self._barrier)
        out = meta.copy()
        if self.group.num_hosts > 1:
            out[:] = np.stack(self.group.comm.allgather(row))
        return out

    def _check_status(self, meta: np.ndarray, num_experts: int) -> None:
        for s in range(self.group_size):
            if meta[s, 3] != num_experts:
                raise RoutingError(f"rank {self.rank}: dispatch stopped before any data "
                                   f"moved: rank {s} dispatches over {meta[s, 3]} experts, "
                                   f"this rank over {num_experts}", self.rank)
        for s in range(self.group_size):
            if meta[s, 0] > 0:
                raise RoutingError(
                    f"rank {self.rank}: dispatch stopped before any data moved: topk_idx "
                    f"of rank {s} holds {meta[s, 0]} expert id(s) outside -1..{num_experts - 1}"
                    f" (first at token {meta[s, 1]})", self.rank)
        for s in range(self.group_size):
            if meta[s, 2]:
                raise RoutingError(
                    f"rank {self.rank}: dispatch stopped before any data moved: the layout "
                    f"tensors rank {s} passed disagree with its topk_idx (pass "
                    f"get_dispatch_layout's results unchanged)", self.rank)

    def _regions(self, specs: list, start: int, what: str) -> dict:
        """Heap views for [(name, rows, cols, dtype)] from byte `start` (same on every
        rank); a dispatch or combine that does not fit fails on every rank."""
        views, at = {}, start
        layout = []
        for name, rows, cols, dt in specs:
            at = -(-at // 256) * 256
            layout.append((name, at, (rows, cols), dt))
            at += rows * cols * np.dtype(dt).itemsize
        if at > self.heap.nbytes:
            raise BufferTooSmallError(
                f"rank {self.rank}: this {what} needs {at} bytes of symmetric heap, the "
                f"Buffer has {self.heap.nbytes}: create it with num_nvl_bytes >= {at} "
                f"(Buffer.get_buffer_size_hint)", self.rank)
        self.heap.commit(at)
        for name, off, shape, dt in layout:
            views[name] = self.heap.view(off, shape, dt)
        views["_end"] = at
        return views

    @staticmethod
    def _check_shape(xs: tuple, handle: Handle) -> None:
        if xs[0].shape[1] != handle.hidden or xs[0].shape[0] != handle.slots.shape[0]:
            raise ValueError(f"x is {xs[0].shape}; the handle routes "
                             f"{handle.slots.shape[0]} tokens of hidden {handle.hidden}")

    def _recv_regions(self, xs: tuple, topk, plan: Plan, num_worst: int) -> dict:
        """The receive rows of a dispatch, sized from the plan (the same on every rank):
        a Buffer too small, or num_worst_tokens below what some rank receives, fails on
        every rank alike."""
        if num_worst and num_worst < plan.recv_rows:
            most = int(np.argmax(plan.counts.sum(axis=0)))
            raise ValueError(f"rank {self.rank}: num_worst_tokens={num_worst} is below "
                             f"the {plan.recv_rows} tokens rank {most} receives")
        rows = max(plan.recv_rows, num_worst) + plan.staging_rows
        hidden = xs[0].shape[1]
        k = topk[0].shape[1] if topk is not None and topk[0] is not None else 0
        specs = [("x", rows, hidden, xs[0].dtype)]
        if len(xs) == 2:
            specs.append(("scales", rows, xs[1].shape[1], np.float32))
        if k:
            specs += [("topk_idx", rows, k, np.int64), ("topk_weights", rows, k, np.float32)]
        recv = self._regions(specs, self._start, "dispatch")
        # combine rows go past every dispatch's rows so far: the receive tensors of an
        # earlier dispatch (a cached one may lay out fewer) stay intact for combine
        self._dispatch_end = max(self._dispatch_end, recv["_end"])
        return recv

    def _move(self, xs: tuple, topk, handle: Handle, recv: dict) -> dict:
        """The rows into `recv` (after the start barrier), then the end barrier."""
        plan = handle.plan
        k = topk[0].shape[1] if topk is not None and topk[0] is not None else 0
        lib = dispatch_kernels()
        pe, base = plan.dispatch_targets()
        x_bytes, recv_bytes = xs[0].view(np.uint8), recv["x"].view(np.uint8)  # rows as bytes
        if k:
            lib["dispatch_x_topk"](x_bytes, topk[0], topk[1], handle.slots, pe, base,
                                   recv_bytes, recv["topk_idx"], recv["topk_weights"])
        else:
            lib["dispatch_x"](x_bytes, handle.slots, pe, base, recv_bytes)
        if len(xs) == 2:
            lib["dispatch_scales"](xs[1], handle.slots, pe, base, recv["scales"])
        if self.group.num_hosts > 1:
            transport.dispatch_across_hosts(self.group, plan, recv)
        lib["barrier"](self._barrier)
        return recv

    def _recv_x(self, recv: dict, xs: tuple, num_recv: int, num_worst: int, copy: bool):
        rows = num_worst or num_recv
        out = recv["x"][:rows]
        if len(xs) == 2:
            out = (out, recv["scales"][:rows])
            return tuple(a.copy() for a in out) if copy else out
        return out.copy() if copy else out

    def _recv_expert_counts(self, meta, placement, alignment: int) -> list:
        per_expert = meta[:, _HEAD + self.group_size:].astype(np.int64).sum(axis=0)
        mine = per_expert[placement == self.rank]
        if alignment > 1:
            mine = -(-mine // alignment) * alignment
        return [int(c) for c in mine]

    # -- low-latency mode (low_latency.py) ------------------------------------------------

    def low_latency_dispatch(self, x, topk_idx, num_max_dispatch_tokens_per_rank: int,
                             num_experts: int, cumulative_local_expert_recv_stats=None,
                             dispatch_wait_recv_cost_stats=None, use_fp8: bool = True,
                             round_scale: bool = False, use_ue8m0: bool = False,
                             async_finish: bool = False, return_recv_hook: bool = False):
        """(recv_x, recv_count, handle, event, hook), as DeepEP's: recv_x is
        [num_local_experts, num_ranks * num_max_dispatch_tokens_per_rank, hidden]
        (bf16, or (e4m3, scales) with use_fp8), valid until the next low-latency
        dispatch; handle is (src_info, layout_range, M, hidden, num_experts)."""
        return low_latency.dispatch(
            self, x, topk_idx, num_max_dispatch_tokens_per_rank, num_experts,
            cumulative_local_expert_recv_stats, dispatch_wait_recv_cost_stats, use_fp8,
            round_scale, use_ue8m0, async_finish, return_recv_hook)

    def low_latency_combine(self, x, topk_idx, topk_weights, handle,
                            use_logfmt: bool = False, zero_copy: bool = False,
                            async_finish: bool = False, return_recv_hook: bool = False,
                            out=None, combine_wait_recv_cost_stats=None):
        """(combined_x, event, hook): each token's expert outputs added with its top-k
        weights (fp32, rounded once to bf16) on the token's rank."""
        return low_latency.combine(self, x, topk_idx, topk_weights, handle, use_logfmt,
                                   zero_copy, async_finish, return_recv_hook, out,
                                   combine_wait_recv_cost_stats)

    def get_next_low_latency_combine_buffer(self, handle):
        """The heap rows low_latency_combine(zero_copy=True) sends from, as DeepEP's."""
        return from_numpy(low_latency.next_combine_buffer(self, handle),
                          type(handle[0]).__module__.startswith("torch"))

    def clean_low_latency_buffer(self, num_max_dispatch_tokens_per_rank: int, hidden: int,
                                 num_experts: int) -> None:
        low_latency.clean(self, num_max_dispatch_tokens_per_rank, hidden, num_experts)

    # -- combine --------------------------------------------------------------------------

    def combine(self, x, handle: Handle, topk_weights=None, bias=None, config=None,
                previous_event=None, async_finish: bool = False,
                allocate_on_comm_stream: bool = False, out=None):
        """(combined_x, combined_topk_weights, event): each token's rows from the ranks
        it went to, read straight from their heaps and added in fp32 (no weights: the
        experts apply them); the weights passed are summed the same way (None when not
        given). An `x` that is this Buffer's `recv_x` (or `combine_input`) is read in
        place; any other is first copied into the heap. `out`: an array to write
        combined_x into (as DeepEP's low-latency combine allows), else a new one."""
        low_latency.check_no_hook(self)
        if not isinstance(handle, Handle):
            raise TypeError("combine needs the handle of a dispatch of this Buffer")
        plan = handle.plan
        a, as_torch = to_numpy(x, "x")
        a = check(a, "x", 2, _X_KINDS)            # the experts may change the width
        if a.shape[0] < plan.num_recv:
            raise ValueError(f"x has {a.shape[0]} rows; rank {self.rank} received "
                             f"{plan.num_recv} tokens")
        a = a[:plan.num_recv]
        w = None
        if topk_weights is not None:
            w = check(to_numpy(topk_weights, "topk_weights")[0], "topk_weights", 2,
                      ("float32",))[:plan.num_recv]
        k, hidden = (0 if w is None else w.shape[1]), a.shape[1]
        comb_x, comb_w = self._combine_inputs(plan, a, w, k)
        num_tokens = handle.slots.shape[0]
        out_x = aligned_empty((num_tokens, hidden), a.dtype) if out is None else \
            check(to_numpy(out, "out")[0], "out", 2, (dtypes.from_numpy(a.dtype),),
                  num_tokens, hidden)
        out_w = np.empty((num_tokens, k), np.float32)
        pe, base = plan.combine_sources()
        lib = combine_kernels(dtypes.from_numpy(a.dtype))
        bad_bias = bias32 = None
        try:
            bias32 = self._bias_sum(bias, out_x.shape)
        except (TypeError, ValueError) as e:
            bad_bias = e       # raised after the barrier: the peers read this rank's rows
        if bias32 is None:
            lib["combine_reduce"](handle.slots, pe, base, comb_x, comb_w, out_x, out_w)
        else:
            lib["combine_reduce_bias"](handle.slots, pe, base, comb_x, comb_w, bias32,
                                       out_x, out_w)
        dispatch_kernels()["barrier"](self._barrier)         # peers are done reading
        if bad_bias is not None:
            raise bad_bias
        return (from_numpy(out_x, as_torch),
                from_numpy(out_w, as_torch) if topk_weights is not None else None,
                EventOverlap())

    def combine_input(self, handle: Handle, dtype=None) -> np.ndarray:
        """A heap view [received tokens, hidden] to write the expert outputs into, so
        that combine reads them in place (valid until the next dispatch)."""
        import ml_dtypes
        dt = np.dtype(ml_dtypes.bfloat16 if dtype is None else dtype)
        rows = handle.plan.recv_rows + handle.plan.staging_rows
        region = self._regions([("x", rows, handle.hidden, dt)], self._dispatch_end,
                               "combine")
        return region["x"][:handle.plan.num_recv]

    def _combine_inputs(self, plan: Plan, a: np.ndarray, w, k: int):
        """(comb_x, comb_w): the symmetric arrays combine reads on every rank. x stays
        where it is when it is a heap view at the same offset on every rank (agreed by
        an all-gather, which also tells every rank the others' inputs are in place);
        otherwise it is copied into the combine rows, which also hold the rows MPI
        brings from other hosts."""
        rows = plan.recv_rows + plan.staging_rows
        std = self._regions([("x", rows, a.shape[1], a.dtype), ("w", rows, k, np.float32)],
                            self._dispatch_end, "combine")
        if w is not None:
            np.copyto(std["w"][:plan.num_recv], w)
        here = None
        if self.group.num_hosts == 1 and a.flags.c_contiguous and \
                self.heap.contains(a.ctypes.data, rows * a.strides[0]):
            here = self.heap.offset_of(a)
        offsets = self.group.allgather(here)
        if here is not None and all(o == here for o in offsets):
            return self.heap.view(here, (rows, a.shape[1]), a.dtype), std["w"]
        if not (a.ctypes.data == std["x"].ctypes.data):
            np.copyto(std["x"][:plan.num_recv], a)
        if self.group.num_hosts > 1:
            transport.combine_across_hosts(self.group, plan, a, w, std)
        dispatch_kernels()["barrier"](self._barrier)
        return std["x"], std["w"]

    @staticmethod
    def _bias_sum(bias, shape):
        """DeepEP's `bias` (None, a tensor, or a pair, each [tokens, hidden]) as one fp32
        array that combine starts its sum from (None without bias): the result is
        rounded once, as DeepEP's is."""
        parts = bias if isinstance(bias, tuple) else (bias,)
        if len(parts) > 2:
            raise ValueError(f"bias: at most two tensors, got {len(parts)}")
        total = None
        for i, b in enumerate(parts):
            if b is None:
                continue
            name = f"bias[{i}]" if isinstance(bias, tuple) else "bias"
            a = to_numpy(b, name)[0]
            if a.shape != shape:
                raise ValueError(f"{name} must be [tokens, hidden] = {shape}, got "
                                 f"shape {a.shape}")
            if total is None:
                total = np.ascontiguousarray(a, np.float32)
            else:
                total = total + a.astype(np.float32)
        return total


def from_numpy_tree(x, as_torch: bool):
    if isinstance(x, tuple):
        return tuple(from_numpy(a, as_torch) for a in x)
    return from_numpy(x, as_torch)


__all__ = ["Buffer"]
