"""DeepEP's low-latency mode on `tilelang.ep.Buffer`: dispatch into fixed per-expert
slots and a weighted combine, both sized by `num_max_dispatch_tokens_per_rank` (M) so no
count has to be known before the data moves.

Heap layout (the same byte offsets on every rank, from the Buffer's start, for L = local
experts, R ranks, E experts, S = hidden // 128 scale groups):
  recv_x   [L, R*M, hidden]   what experts receive (fp8 or bf16), rows of source rank j
                              at layout_range's begin for j, packed in rank order
  scales   [L*R*M, S] fp32    received scales, row-major as they travel
  src      [L*R*M] int32      each received row's token index on its source rank
  send     [L, R*M, hidden]   bf16: get_next_low_latency_combine_buffer (zero_copy)
  back     [E, M, hidden]     bf16: combine rows, at [expert, token] on the token's owner

dispatch: every rank tells every peer how many of its tokens go to each expert (the
`notify` kernel, which ends in a barrier), so each sender knows where its rows start in
the receivers' recv_x; the `dispatch_x` kernel then writes each (token, expert) row
straight into the expert's rank, treating the E experts as its destination columns.
combine: the same kernel writes each expert output row back to [expert, token] of the
token's owner, whose `combine_weighted` kernel adds the top-k rows up with their weights
in fp32. Rows for ranks on other hosts go by MPI (transport.post), waited for by the
receive.

The receive half (the closing barrier and the unpacking of counts, layout and scales) is
the hook with `return_recv_hook=True`: everything returned is allocated first and filled
in place when `hook()` runs, as DeepEP's tensors are filled when its hook returns. A
hook must be called before the next collective of the Buffer.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from ..ops.ep import cast_kernels, combine_kernels, dispatch_kernels
from . import transport
from .arrays import check, from_numpy, to_numpy
from .errors import BufferTooSmallError, RoutingError
from .events import EventOverlap
from .utils import GROUP

_ALIGN = 256
_BF16 = np.dtype(ml_dtypes.bfloat16)
_HEAD = ("invalid ids", "num_max_dispatch_tokens_per_rank", "hidden", "num_experts",
         "use_fp8", "round_scale", "use_ue8m0")


def _up(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


def _layout(m: int, hidden: int, num_ranks: int, num_experts: int) -> dict:
    """Byte offsets (from the Buffer's start) of the low-latency regions, and the end."""
    local = num_experts // num_ranks
    rows = local * num_ranks * m
    sizes = [("recv_x", rows * hidden * 2), ("scales", rows * (hidden // GROUP) * 4),
             ("src", rows * 4), ("send", rows * hidden * 2),
             ("back", num_experts * m * hidden * 2)]
    at, out = 0, {}
    for name, n in sizes:
        out[name] = at
        at = _up(at + n)
    out["_end"] = at
    return out


def _regions(buf, m: int, hidden: int, num_experts: int) -> dict:
    """Absolute heap offsets of the regions; the same on every rank."""
    offsets = {k: buf._start + v for k, v in
               _layout(m, hidden, buf.group_size, num_experts).items()}
    if offsets["_end"] > buf.heap.nbytes:
        raise BufferTooSmallError(
            f"rank {buf.rank}: low-latency mode with num_max_dispatch_tokens_per_rank={m}, "
            f"hidden={hidden}, num_experts={num_experts} needs {offsets['_end']} bytes of "
            f"symmetric heap, the Buffer has {buf.heap.nbytes}: create it with "
            f"num_rdma_bytes=Buffer.get_low_latency_rdma_size_hint({m}, {hidden}, "
            f"{buf.group_size}, {num_experts})", buf.rank)
    buf.heap.commit(offsets["_end"])
    return offsets


def size_hint(m: int, hidden: int, num_ranks: int, num_experts: int) -> int:
    """Bytes of heap the low-latency regions of these sizes take."""
    return _layout(m, hidden, num_ranks, num_experts)["_end"] + _ALIGN


# -- argument checks ----------------------------------------------------------------------

def _int(value, name: str, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return int(value)


def _check_sizes(buf, m, num_experts) -> tuple[int, int]:
    m = _int(m, "num_max_dispatch_tokens_per_rank")
    num_experts = _int(num_experts, "num_experts")
    if num_experts % buf.group_size:
        raise ValueError(f"num_experts={num_experts} must be a multiple of the "
                         f"{buf.group_size} ranks (low-latency mode puts num_experts / "
                         f"num_ranks consecutive experts on each rank)")
    if num_experts + len(_HEAD) > buf._width_max:
        raise ValueError(f"num_experts must be at most {buf._width_max - len(_HEAD)}, got "
                         f"{num_experts}")
    return m, num_experts


def _check_topk(topk_idx, num_tokens: int) -> np.ndarray:
    return check(to_numpy(topk_idx, "topk_idx")[0], "topk_idx", 2, ("int64",), num_tokens)


def check_no_hook(buf) -> None:
    hook = getattr(buf, "_ll_hook", None)
    if hook is not None and not hook.done:
        raise RuntimeError(f"rank {buf.rank}: the hook of the previous low-latency "
                           f"{hook.what} was not called; call it (it receives the data) "
                           f"before the next collective")


class _Hook:
    """The receive half of a collective: callable once (later calls do nothing)."""

    def __init__(self, what: str, receive):
        self.what, self._receive, self.done = what, receive, False

    def __call__(self) -> None:
        if not self.done:
            self.done = True
            self._receive()


def _finish(buf, what: str, receive, return_recv_hook: bool):
    """(event, hook): run the receive now, or hand it out as the hook."""
    hook = _Hook(what, receive)
    if return_recv_hook:
        buf._ll_hook = hook
        return EventOverlap(), hook
    hook()
    return EventOverlap(), None


# -- fp8 ----------------------------------------------------------------------------------

def cast_fp8(x: np.ndarray, round_scale: bool) -> tuple[np.ndarray, np.ndarray]:
    """(x as e4m3, fp32 scale per row and 128 channels: amax / 448, at least 1e-4 / 448;
    with `round_scale` the power of two at or above), by fp8_cast.tl."""
    t, hidden = x.shape
    q = np.empty((t, hidden), ml_dtypes.float8_e4m3fn)
    scales = np.empty((t, hidden // GROUP), np.float32)
    if t:
        cast_kernels()["per_token_cast"](x, q, scales, int(bool(round_scale)))
    return q, scales


def pack_ue8m0(scales: np.ndarray) -> np.ndarray:
    """Power-of-two fp32 scales [..., S] as their exponent bytes (UE8M0), four to an
    int32 [..., S // 4], the first in the low byte."""
    exps = (scales.view(np.uint32) >> 23).astype(np.uint8)
    return np.ascontiguousarray(exps).view(np.int32)


# -- dispatch -----------------------------------------------------------------------------

def dispatch(buf, x, topk_idx, num_max_dispatch_tokens_per_rank, num_experts,
             cumulative_local_expert_recv_stats=None, dispatch_wait_recv_cost_stats=None,
             use_fp8=True, round_scale=False, use_ue8m0=False, async_finish=False,
             return_recv_hook=False):
    check_no_hook(buf)
    m, num_experts = _check_sizes(buf, num_max_dispatch_tokens_per_rank, num_experts)
    a, as_torch = to_numpy(x, "x")
    a = check(a, "x", 2, ("bfloat16",))
    num_tokens, hidden = a.shape
    if hidden % GROUP:
        raise ValueError(f"x: hidden must be a multiple of {GROUP}, got {hidden}")
    if num_tokens > m:
        raise ValueError(f"x has {num_tokens} tokens, more than "
                         f"num_max_dispatch_tokens_per_rank={m}")
    if use_ue8m0 and not (use_fp8 and round_scale):
        raise ValueError("use_ue8m0=True needs use_fp8=True and round_scale=True")
    if use_ue8m0 and hidden % (4 * GROUP):
        raise ValueError(f"use_ue8m0: hidden must be a multiple of {4 * GROUP}, got {hidden}")
    if round_scale and not use_fp8:
        raise ValueError("round_scale=True needs use_fp8=True")
    topk = _check_topk(topk_idx, num_tokens)
    r, me = buf.group_size, buf.rank
    local = num_experts // r
    stats = _check_stats(cumulative_local_expert_recv_stats, local)
    if dispatch_wait_recv_cost_stats is not None:
        check(to_numpy(dispatch_wait_recv_cost_stats, "dispatch_wait_recv_cost_stats")[0],
              "dispatch_wait_recv_cost_stats", 2, ("int64",), r, r)

    # which (token, expert) pairs travel, and each token's place among this rank's
    # tokens for that expert
    bad = (topk < -1) | (topk >= num_experts)
    hit = np.zeros((num_tokens, num_experts), np.bool_)
    t_idx, k_idx = np.nonzero(~bad & (topk >= 0))
    hit[t_idx, topk[t_idx, k_idx]] = True
    row = np.array([int(bad.sum()), m, hidden, num_experts, bool(use_fp8),
                    bool(round_scale), bool(use_ue8m0), *hit.sum(axis=0)], np.int32)
    meta = buf._notify(row)                                 # ends in a barrier
    try:
        _check_agreement(buf, meta, row)
        regions = _regions(buf, m, hidden, num_experts)
    except (RoutingError, BufferTooSmallError):
        # every rank raises; none may put its next counts into a peer that has not
        # read these yet
        dispatch_kernels()["barrier"](buf._barrier)
        raise
    counts = meta[:, len(_HEAD):].astype(np.int64)          # [source rank, expert]

    rows = local * r * m
    xs = cast_fp8(a, round_scale) if use_fp8 else (a, None)
    recv_x = buf.heap.view(regions["recv_x"], (rows, hidden), xs[0].dtype)
    recv_scales = buf.heap.view(regions["scales"], (rows, hidden // GROUP), np.float32)
    recv_src = buf.heap.view(regions["src"], (rows, 1), np.int32)
    payloads = [(xs[0], recv_x)] + ([(xs[1], recv_scales)] if use_fp8 else []) + \
        [(np.arange(num_tokens, dtype=np.int32).reshape(num_tokens, 1), recv_src)]
    wait = _dispatch_rows(buf, payloads, hit, counts, local, m)

    # what is returned exists now and is filled by the receive
    mine = counts[:, me * local:(me + 1) * local].T          # [local expert, source rank]
    recv_count = np.zeros(local, np.int32)
    src_info = np.zeros((local, r * m), np.int32)
    layout_range = np.zeros((local, r), np.int64)
    out_x = recv_x.reshape(local, r * m, hidden)
    out_scales = None
    if use_fp8:
        groups = hidden // GROUP // (4 if use_ue8m0 else 1)
        # column-major in the last two dimensions, as DeepEP's (TMA-friendly) scales
        out_scales = np.zeros((local, groups, r * m),
                              np.int32 if use_ue8m0 else np.float32).transpose(0, 2, 1)

    def receive():
        buf._ll_hook = None
        if wait is not None:
            wait()                                           # rows from other hosts
        dispatch_kernels()["barrier"](buf._barrier)          # every row has arrived
        recv_count[:] = mine.sum(axis=1)
        begin = np.cumsum(mine, axis=1) - mine
        layout_range[:] = (begin << 32) | mine
        src_info[:] = recv_src.reshape(local, r * m)
        if out_scales is not None:
            s = recv_scales.reshape(local, r * m, -1)
            out_scales[:] = pack_ue8m0(s) if use_ue8m0 else s
        if stats is not None:
            np.add(stats, recv_count, out=stats)

    event, hook = _finish(buf, "dispatch", receive, return_recv_hook)
    handle = (from_numpy(src_info, as_torch), from_numpy(layout_range, as_torch), m, hidden,
              num_experts)
    packed = out_x if out_scales is None else (out_x, out_scales)
    packed = tuple(from_numpy(p, as_torch) for p in packed) if use_fp8 else \
        from_numpy(packed, as_torch)
    return packed, from_numpy(recv_count, as_torch), handle, event, hook


def _bytes(a: np.ndarray) -> np.ndarray:
    """Rows as bytes: the kernels move rows whatever their dtype."""
    return a.view(np.uint8)


def _remote(buf, ranks: np.ndarray) -> np.ndarray:
    return ~buf._on_host.astype(bool)[ranks]


def _dispatch_rows(buf, payloads: list, hit: np.ndarray, counts: np.ndarray, local: int,
                   m: int):
    """Each (token, expert) row of every payload into the expert's rank, at that
    expert's rows for this rank: by the dispatch_x kernel on this host (the experts as
    its destination columns), by MPI to other hosts (posted here; the returned wait
    finishes it, None when nothing crosses hosts)."""
    r, me = buf.group_size, buf.rank
    experts = np.arange(hit.shape[1])
    dest_pe = (experts // local).astype(np.int32)
    dest_base = ((experts % local) * r * m + counts[:me].sum(axis=0)).astype(np.int32)
    slots = np.where(hit, np.cumsum(hit, axis=0) - 1, -1).astype(np.int32)
    remote = _remote(buf, dest_pe)
    slots[:, remote] = -1
    for rows, recv in payloads:
        dispatch_kernels()["dispatch_x"](_bytes(rows), slots, dest_pe, dest_base,
                                         _bytes(recv))
    if buf.group.num_hosts == 1:
        return None
    sends, recvs = [], []
    for e in np.flatnonzero(remote):                 # rows of this rank's tokens, in order
        tokens = np.flatnonzero(hit[:, e])
        for tag, (rows, _) in enumerate(payloads):
            sends.append((int(dest_pe[e]), 4 * e + tag, np.ascontiguousarray(rows[tokens])))
    for j in np.flatnonzero(_remote(buf, np.arange(r))):
        for i in range(local):
            e = me * local + i
            begin, n = i * r * m + int(counts[:j, e].sum()), int(counts[j, e])
            for tag, (_, recv) in enumerate(payloads):
                recvs.append((int(j), 4 * e + tag, recv[begin:begin + n]))
    return transport.post(buf.group.comm, sends, recvs)


def _check_stats(stats, local: int):
    if stats is None:
        return None
    a = to_numpy(stats, "cumulative_local_expert_recv_stats")[0]
    check(a, "cumulative_local_expert_recv_stats", 1, ("int32",), local)
    if not a.flags.c_contiguous:
        raise ValueError("cumulative_local_expert_recv_stats must be contiguous (it is "
                         "added to in place)")
    return a


def _check_agreement(buf, meta: np.ndarray, row: np.ndarray) -> None:
    """Every rank raises the same error before any data moves when the ranks disagree
    on the sizes or one of them routes to an expert that does not exist."""
    for i, name in enumerate(_HEAD[1:], start=1):
        values = meta[:, i]
        if (values != row[i]).any():
            raise RoutingError(f"rank {buf.rank}: low-latency dispatch stopped before any "
                               f"data moved: the ranks pass different {name} "
                               f"({values.tolist()} by rank)", buf.rank)
    for s in range(buf.group_size):
        if meta[s, 0]:
            raise RoutingError(f"rank {buf.rank}: low-latency dispatch stopped before any "
                               f"data moved: topk_idx of rank {s} holds {meta[s, 0]} expert "
                               f"id(s) outside -1..{row[3] - 1}", buf.rank)


# -- combine ------------------------------------------------------------------------------

def _check_handle(buf, handle):
    if not (isinstance(handle, tuple) and len(handle) == 5):
        raise TypeError("handle: expected the 5-tuple a low_latency_dispatch returned, got "
                        f"{type(handle).__name__}")
    src_info, layout_range, m, hidden, num_experts = handle
    m, num_experts = _check_sizes(buf, m, num_experts)
    local = num_experts // buf.group_size
    src_info = check(to_numpy(src_info, "handle[0]")[0], "handle[0] (src_info)", 2,
                     ("int32",), local, buf.group_size * m)
    layout_range = check(to_numpy(layout_range, "handle[1]")[0], "handle[1] (layout_range)",
                         2, ("int64",), local, buf.group_size)
    return src_info, layout_range, m, int(hidden), num_experts


def combine(buf, x, topk_idx, topk_weights, handle, use_logfmt=False, zero_copy=False,
            async_finish=False, return_recv_hook=False, out=None,
            combine_wait_recv_cost_stats=None):
    check_no_hook(buf)
    src_info, layout_range, m, hidden, num_experts = _check_handle(buf, handle)
    r, me = buf.group_size, buf.rank
    local = num_experts // r
    a, as_torch = to_numpy(x, "x")
    check(a, "x", 3, ("bfloat16",), local)
    if a.shape[1:] != (r * m, hidden):
        raise ValueError(f"x must be [num_local_experts, num_ranks * "
                         f"num_max_dispatch_tokens_per_rank, hidden] = {(local, r * m, hidden)}"
                         f", got {a.shape}")
    topk = check(to_numpy(topk_idx, "topk_idx")[0], "topk_idx", 2, ("int64",))
    num_tokens, k = topk.shape
    if num_tokens > m:
        raise ValueError(f"topk_idx has {num_tokens} tokens, more than the handle's "
                         f"num_max_dispatch_tokens_per_rank={m}")
    weights = check(to_numpy(topk_weights, "topk_weights")[0], "topk_weights", 2,
                    ("float32",), num_tokens, k)
    if ((topk < -1) | (topk >= num_experts)).any():
        raise ValueError(f"topk_idx holds expert ids outside -1..{num_experts - 1}")
    if out is None:
        out_x = np.empty((num_tokens, hidden), _BF16)
    else:
        out_x = check(to_numpy(out, "out")[0], "out", 2, ("bfloat16",), num_tokens, hidden)
        if not to_numpy(out, "out")[0].flags.c_contiguous:
            raise ValueError("out must be contiguous (combine writes into it)")
    if combine_wait_recv_cost_stats is not None:
        check(to_numpy(combine_wait_recv_cost_stats, "combine_wait_recv_cost_stats")[0],
              "combine_wait_recv_cost_stats", 2, ("int64",), r, r)

    regions = _regions(buf, m, hidden, num_experts)
    source = next_combine_buffer(buf, handle) if zero_copy else np.ascontiguousarray(a)
    back = buf.heap.view(regions["back"], (num_experts, m, hidden), out_x.dtype)
    dispatch_kernels()["barrier"](buf._barrier)   # the owners are done with the last combine
    wait = _combine_rows(buf, source, src_info, layout_range, topk, back)

    def receive():
        buf._ll_hook = None
        if wait is not None:
            wait()                                           # rows from other hosts
        dispatch_kernels()["barrier"](buf._barrier)          # every row has arrived
        combine_kernels("bfloat16")["combine_weighted"](
            topk, weights, back.reshape(num_experts * m, hidden), out_x, m)

    event, hook = _finish(buf, "combine", receive, return_recv_hook)
    result = out if out is not None else from_numpy(out_x, as_torch)
    return result, event, hook


def _combine_rows(buf, source, src_info, layout_range, topk, back):
    """Each expert output row back to its token's rank, at [expert, token] of `back`:
    by the dispatch_x kernel on this host (the ranks as its destination columns), by MPI
    from other hosts into staging rows that the returned wait scatters into `back`."""
    r, me = buf.group_size, buf.rank
    local, rows_per_expert, hidden = source.shape
    m = back.shape[1]
    begin, count = layout_range >> 32, layout_range & 0xFFFFFFFF
    remote = _remote(buf, np.arange(r))
    slots = np.full((local, rows_per_expert, r), -1, np.int32)
    for i in range(local):
        for j in np.flatnonzero(~remote):
            b, c = int(begin[i, j]), int(count[i, j])
            slots[i, b:b + c, j] = (me * local + i) * m + src_info[i, b:b + c]
    rows = local * rows_per_expert
    dispatch_kernels()["dispatch_x"](
        _bytes(source.reshape(rows, hidden)), slots.reshape(rows, r),
        np.arange(r, dtype=np.int32), np.zeros(r, np.int32),
        _bytes(back.reshape(-1, hidden)))
    if buf.group.num_hosts == 1:
        return None
    tag0 = 1 << 14
    sends, recvs, scatter = [], [], []
    for j in np.flatnonzero(remote):
        for i in range(local):
            b, c = int(begin[i, j]), int(count[i, j])
            sends.append((int(j), tag0 + me * local + i, source[i, b:b + c]))
    for e in range(back.shape[0]):
        if remote[e // local]:
            tokens = np.flatnonzero((topk == e).any(axis=1))
            staging = np.empty((tokens.size, hidden), back.dtype)
            recvs.append((e // local, tag0 + e, staging))
            scatter.append((e, tokens, staging))
    wait = transport.post(buf.group.comm, sends, recvs)

    def finish() -> None:
        wait()
        for e, tokens, staging in scatter:
            back[e, tokens] = staging
    return finish


def next_combine_buffer(buf, handle) -> np.ndarray:
    """The heap rows [L, R*M, hidden] bf16 that combine(zero_copy=True) sends from."""
    _, _, m, hidden, num_experts = _check_handle(buf, handle)
    regions = _regions(buf, m, hidden, num_experts)
    return buf.heap.view(regions["send"], (num_experts // buf.group_size,
                                           buf.group_size * m, hidden), _BF16)


def clean(buf, m, hidden, num_experts) -> None:
    """Zero this rank's low-latency regions for these sizes (a collective)."""
    check_no_hook(buf)
    m, num_experts = _check_sizes(buf, m, num_experts)
    hidden = _int(hidden, "hidden")
    regions = _regions(buf, m, hidden, num_experts)
    start = regions["recv_x"]
    buf.heap.view(start, (regions["_end"] - start,), np.uint8)[:] = 0
    dispatch_kernels()["barrier"](buf._barrier)


__all__ = ["check_no_hook", "dispatch", "combine", "next_combine_buffer", "clean",
           "size_hint", "cast_fp8", "pack_ue8m0"]
