"""MLA decode (tilelang.ops.mla, FlashMLA-style) against its baselines, in one run.

  cpu-compute   h_q = 128, s_q = 1, batch 4, 8K context, bf16 cache: useful GFLOP/s vs
                tilelang.ops.gemm fp32 at n = 2048 (target >= 0.7x) and time vs numpy
                doing the same absorbed computation with fp32 matmuls (target <= 1.0x)
  cpu-memory    h_q * s_q = 1, KV bytes >= 4x the last-level cache: GB/s of KV read vs
                a numpy reduction over an array of the same bytes on the same threads
                (the host's streaming read; target >= 0.8x)
  latency       one decode step at 20K context, batch 1 and 4, DeepSeek-V2 attention
                dims (128 heads, qk 128 + 64 rope, v 128, latent 512 + 64), vs the
                legacy path: an fp32 per-head K/V cache (Hugging Face's DeepSeek-V2
                layout), attention by batched np.matmul with the scores materialised
                (target <= 0.3x)
  memory        peak bytes (tracemalloc) of one step's numpy arrays, DeepSeek-V2 dims,
                one layer, batch 2, bf16 for both, 4K / 16K / 32K context, 4 GiB budget:
                a path over budget prints OOM with the bytes it needs, without
                allocating (target: ours >= 30x smaller, 32K fits where legacy does not)
  tcsim         tcsim:h100_like, timing only: memory-bound (batch 128, h_q 16, mean
                length 4096, varlen) and compute-bound (batch 128, h_q 128, s_q 2) vs
                FlashMLA's published H800 figures, 3000 GB/s and 660 TFLOPS

The CPU sides alternate turn by turn (the machine is shared); each figure is the best
turn. Both sides use the same threads: TILELANG_NUM_THREADS and OPENBLAS_NUM_THREADS
are set to --threads before numpy loads.

    python benchmarks/mla.py [--threads N] [--only cpu-compute,latency,...] [--turns 5]
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path


def _threads_from_argv() -> int:
    for i, a in enumerate(sys.argv):
        if a == "--threads" and i + 1 < len(sys.argv):
            return int(sys.argv[i + 1])
        if a.startswith("--threads="):
            return int(a.split("=", 1)[1])
    return len(os.sched_getaffinity(0))


THREADS = _threads_from_argv()
for _var in ("TILELANG_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ[_var] = str(THREADS)

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import report  # noqa: E402

from tilelang.ops.mla import flash_mla_with_kvcache, get_mla_metadata  # noqa: E402

BF16 = ml_dtypes.bfloat16
GIB = 1 << 30
FLASHMLA_GBPS, FLASHMLA_TFLOPS = 3000.0, 660.0


def turns(sides: dict, n: int) -> dict:
    """Best time of each side, the sides alternating turn by turn (after a warm-up)."""
    for fn in sides.values():
        fn()
    best = {k: float("inf") for k in sides}
    for _ in range(n):
        for k, fn in sides.items():
            t0 = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best


def paged_cache(b: int, ctx: int, rng, h_kv: int = 1, random_values: bool = True):
    """A bf16 latent cache of b requests of ctx tokens in permuted 64-token blocks."""
    nblk = b * (-(-ctx // 64))
    table = rng.permutation(nblk).astype(np.int32).reshape(b, -1)
    kv = np.empty((nblk, 64, h_kv, 576), BF16)
    if random_values:
        kv[...] = (rng.standard_normal(kv.shape, np.float32) / 10).astype(BF16)
    else:
        kv.view(np.uint16)[...] = 0x3C00            # 2^-7: no page left untouched
    return kv, table, np.full(b, ctx, np.int32)


def mla_call(q, kv, table, lens):
    meta, _ = get_mla_metadata()
    flash_mla_with_kvcache(q, kv, table, lens, 512, meta, None)     # plans once
    return lambda: flash_mla_with_kvcache(q, kv, table, lens, 512, meta, None)


# ----------------------------------------------------------------------------- CPU

def cpu_compute(n_turns: int) -> None:
    from tilelang.ops import gemm
    print(f"== CPU compute-bound: h_q 128, s_q 1, batch 4, 8K context, bf16 "
          f"({THREADS} threads)")
    rng = np.random.default_rng(0)
    b, h, ctx = 4, 128, 8192
    kv, table, lens = paged_cache(b, ctx, rng)
    q = (rng.standard_normal((b, 1, h, 576), np.float32) / 10).astype(BF16)
    flops = b * h * ctx * 2 * (576 + 512)
    # numpy's side: the same absorbed attention, fp32 matmuls on each request's cache
    # already gathered and converted (generous to numpy: no paging, no conversion)
    ks = [kv[table[i]].reshape(ctx, 576).astype(np.float32) for i in range(b)]
    qs = [q[i, 0].astype(np.float32) for i in range(b)]
    scale = 576 ** -0.5

    def numpy_step():
        for qi, ki in zip(qs, ks):
            s = (qi @ ki.T) * scale
            p = np.exp(s - s.max(1, keepdims=True))
            (p / p.sum(1, keepdims=True)) @ ki[:, :512]

    a = rng.standard_normal((2048, 2048), np.float32)
    bm = rng.standard_normal((2048, 2048), np.float32)
    best = turns({"mla": mla_call(q, kv, table, lens), "gemm": lambda: gemm(a, bm),
                  "numpy": numpy_step}, n_turns)
    ours = flops / best["mla"] / 1e9
    report("mla", "cpu compute-bound GFLOP/s (useful)", ours, "GFLOP/s",
           baseline=2 * 2048 ** 3 / best["gemm"] / 1e9, baseline_name="ops.gemm fp32 n=2048",
           target=0.7 * 2 * 2048 ** 3 / best["gemm"] / 1e9, higher_is_better=True,
           extra={"threads": THREADS})
    report("mla", "cpu compute-bound time", best["mla"], "s", baseline=best["numpy"],
           baseline_name="numpy absorbed fp32 matmuls", target=best["numpy"],
           extra={"threads": THREADS})


def last_level_cache() -> int:
    from tilelang.targets.cpu.machine import host
    return host().l3


def streaming_read(arr: np.ndarray, threads: int):
    """A numpy reduction over `arr`'s bytes, split over `threads` threads (numpy
    releases the GIL in the reduction): the host's streaming-read bandwidth."""
    flat = arr.reshape(-1).view(np.float32)
    chunks = np.array_split(flat, threads)

    def step():
        workers = [threading.Thread(target=np.add.reduce, args=(c,)) for c in chunks]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    return step


def cpu_memory(n_turns: int) -> None:
    llc = last_level_cache()
    want = 4 * llc
    b, ctx = 64, max(4096, -(-want // (64 * 576 * 2)) // 64 * 64)
    print(f"== CPU memory-bound: h_q * s_q 1, batch {b} x {ctx} tokens = "
          f"{b * ctx * 1152 / 1e9:.2f} GB of KV (last-level cache {llc / 1e6:.0f} MB, "
          f"{THREADS} threads)")
    rng = np.random.default_rng(1)
    kv, table, lens = paged_cache(b, ctx, rng, random_values=False)
    q = (rng.standard_normal((b, 1, 1, 576), np.float32) / 10).astype(BF16)
    best = turns({"mla": mla_call(q, kv, table, lens),
                  "stream": streaming_read(kv, THREADS)}, n_turns)
    nbytes = kv.nbytes
    stream = nbytes / best["stream"] / 1e9
    report("mla", "cpu memory-bound KV read GB/s", nbytes / best["mla"] / 1e9, "GB/s",
           baseline=stream, baseline_name=f"numpy streaming reduction, {THREADS} threads",
           target=0.8 * stream, higher_is_better=True,
           extra={"threads": THREADS, "kv_bytes": nbytes, "llc": llc})


# ----------------------------------------------------------------------------- DeepSeek-V2

HEADS, NOPE, ROPE, VDIM, LATENT = 128, 128, 64, 128, 512


class DeepSeekV2Step:
    """One attention step of one DeepSeek-V2 layer, both ways. Legacy: per-head K
    (b, 128, L, 192) and V (b, 128, L, 128) caches, scores = q K^T materialised, out =
    softmax(scores) V. Ours: q_nope absorbed into the latent space (W_UK), MLA decode over
    the 576-wide paged latent cache, the latent output mapped back by W_UV."""

    def __init__(self, rng):
        self.w_uk = (rng.standard_normal((HEADS, NOPE, LATENT), np.float32) / 20)
        self.w_uv = (rng.standard_normal((HEADS, LATENT, VDIM), np.float32) / 20)
        self.scale = (NOPE + ROPE) ** -0.5

    def ours(self, q_nope, q_pe, kv, table, lens):
        b = q_nope.shape[0]
        meta, _ = get_mla_metadata()

        def step():
            q_lat = np.einsum("bhn,hnl->bhl", q_nope, self.w_uk)         # absorb W_UK
            q = np.concatenate([q_lat, q_pe], -1).reshape(b, 1, HEADS, 576).astype(BF16)
            o, _ = flash_mla_with_kvcache(q, kv, table, lens, 512, meta, None,
                                          softmax_scale=self.scale)
            return np.einsum("bhl,hlv->bhv", o[:, 0].astype(np.float32), self.w_uv)
        return step

    def legacy(self, q, k, v, dtype=np.float32):
        """q (b, 128, 1, 192); k, v per-head caches. For bf16 caches each head is upcast
        on its own (numpy has no bf16 matmul), so the temporaries stay one head wide."""
        def step():
            if k.dtype == np.float32:
                s = np.matmul(q, k.transpose(0, 1, 3, 2)) * self.scale
                p = np.exp(s - s.max(-1, keepdims=True))
                return np.matmul(p / p.sum(-1, keepdims=True), v)
            out = np.empty(q.shape[:3] + (VDIM,), np.float32)
            s = np.empty(q.shape[:3] + (k.shape[2],), np.float32)
            for i in range(k.shape[0]):
                for h in range(HEADS):
                    s[i, h] = (q[i, h] @ k[i, h].astype(np.float32).T) * self.scale
            p = np.exp(s - s.max(-1, keepdims=True))
            p /= p.sum(-1, keepdims=True)
            for i in range(k.shape[0]):
                for h in range(HEADS):
                    out[i, h] = p[i, h] @ v[i, h].astype(np.float32)
            return out
        return step


def available_memory() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def latency(n_turns: int) -> None:
    ctx = 20 * 1024
    print(f"== latency: one decode step, DeepSeek-V2 dims, {ctx} context ({THREADS} threads)")
    rng = np.random.default_rng(2)
    model = DeepSeekV2Step(rng)
    # the legacy fp32 per-head cache of one request is 128 * L * (192 + 128) * 4 bytes
    per_req = HEADS * ctx * (NOPE + ROPE + VDIM) * 4
    k = (rng.standard_normal((1, HEADS, ctx, NOPE + ROPE), np.float32) / 10)
    v = (rng.standard_normal((1, HEADS, ctx, VDIM), np.float32) / 10)
    for b in (1, 4):
        kv, table, lens = paged_cache(b, ctx, rng)
        q_nope = rng.standard_normal((b, HEADS, NOPE), np.float32) / 10
        q_pe = rng.standard_normal((b, HEADS, ROPE), np.float32) / 10
        q_full = rng.standard_normal((1, HEADS, 1, NOPE + ROPE), np.float32) / 10
        one = model.legacy(q_full, k, v)
        # batch 4's caches (4 x 3.4 GB) would crowd the shared machine: its legacy step
        # is four steps over one request's cache (the same bytes read, none reused:
        # each is 10x the last-level cache)

        def legacy(n=b):
            for _ in range(n):
                one()
        best = turns({"ours": model.ours(q_nope, q_pe, kv, table, lens),
                      "legacy": legacy}, n_turns)
        report("mla", f"latency 20K context batch {b}", best["ours"], "s",
               baseline=best["legacy"], baseline_name="legacy fp32 per-head cache, np.matmul",
               target=0.3 * best["legacy"],
               extra={"threads": THREADS, "legacy_cache_bytes": per_req * b,
                      "brief": "320 -> 185 ms (0.58x)"})
    del k, v


def memory_table() -> None:
    import tracemalloc
    budget = 4 * GIB
    print("== memory: peak bytes of one step's numpy arrays (tracemalloc), DeepSeek-V2 "
          "dims, one layer, batch 2, bf16, 4 GiB budget")
    rng = np.random.default_rng(3)
    model = DeepSeekV2Step(rng)
    b = 2
    print(f"  {'context':>8}  {'legacy':>12}  {'ours':>12}  ratio")
    for ctx in (4096, 16384, 32768):
        need = {  # what each path's arrays take, known before allocating any
            "legacy": b * HEADS * ctx * (NOPE + ROPE + VDIM) * 2 + b * HEADS * ctx * 4 * 2,
            "ours": b * ctx * 576 * 2}
        peaks = {}
        for side in ("legacy", "ours"):
            if need[side] > budget:
                peaks[side] = None
                continue
            tracemalloc.start()
            tracemalloc.reset_peak()
            if side == "legacy":
                k = np.zeros((b, HEADS, ctx, NOPE + ROPE), BF16)
                v = np.zeros((b, HEADS, ctx, VDIM), BF16)
                q = rng.standard_normal((b, HEADS, 1, NOPE + ROPE), np.float32)
                model.legacy(q, k, v)()
                del k, v
            else:
                kv, table, lens = paged_cache(b, ctx, rng, random_values=False)
                model.ours(rng.standard_normal((b, HEADS, NOPE), np.float32),
                           rng.standard_normal((b, HEADS, ROPE), np.float32),
                           kv, table, lens)()
                del kv
            peaks[side] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        text = {s: (f"{peaks[s] / 1e9:.3f} GB" if peaks[s] is not None else
                    f"OOM ({need[s] / 1e9:.2f} GB)") for s in peaks}
        legacy_bytes = peaks["legacy"] if peaks["legacy"] is not None else need["legacy"]
        ratio = legacy_bytes / peaks["ours"]
        print(f"  {ctx:>8}  {text['legacy']:>12}  {text['ours']:>12}  {ratio:.0f}x")
        report("mla", f"peak step memory {ctx // 1024}K context", peaks["ours"], "B",
               baseline=legacy_bytes, baseline_name="legacy per-head bf16 cache"
               + (" (OOM: bytes it needs)" if peaks["legacy"] is None else ""),
               target=legacy_bytes / 30,
               extra={"legacy_oom": peaks["legacy"] is None, "budget": budget,
                      "brief": {4096: "1.2 -> 0.8 GB", 16384: "4.8 -> 2.1 GB",
                                32768: "OOM -> 4.3 GB"}[ctx]})


# ----------------------------------------------------------------------------- tcsim

def tcsim_case(name: str, b: int, s_q: int, h_q: int, mean: int, varlen: bool,
               kernel: str | None = None) -> float:
    """Simulates one case (the kernel the library runs on tcsim, or `kernel` of
    mla_decode.tl); prints and returns its GB/s (memory-bound) or TFLOPS."""
    import tilelang
    from tilelang.ops.mla import interface, kernels
    from tilelang.ops.mla.scheduler import schedule
    from tilelang.targets.tcsim.config import get_config
    cfg = get_config("h100_like")
    rng = np.random.default_rng(4)
    lens = np.full(b, mean, np.int32)
    if varlen:
        lens = np.maximum(rng.normal(mean, mean / 2, b), s_q).astype(np.int32)
    rows = s_q * h_q
    block_h = 64                            # FlashMLA's 64 query rows per block
    parts = interface.num_parts(b, s_q, h_q, 1, block_h, cfg.cores)
    meta, splits = schedule(lens, parts)
    blocks = -(-lens // 64)
    table = np.zeros((b, int(blocks.max())), np.int32)
    perm = rng.permutation(int(blocks.sum())).astype(np.int32)
    start = 0
    for i, n in enumerate(blocks):
        table[i, :n] = perm[start:start + n]
        start += n
    if kernel is None:
        k = kernels.decode_kernel("bfloat16", rows, False, s_q > 1, target="tcsim:h100_like",
                                  rows_per_block=block_h)
    else:
        k = tilelang.compile(kernels.SOURCE, kernel=kernel, target="tcsim:h100_like",
                             defines=dict(TILE_DTYPE="bfloat16", BLOCK_H=block_h,
                                          CAUSAL=s_q > 1))
    nrows = int(blocks.sum()) * 64
    t0 = time.perf_counter()
    k(((b, 1, rows, 576), "bfloat16"), ((nrows, 1, 576), "bfloat16"), table, lens, meta,
      splits, ((b, 1, rows, 512), "bfloat16"), ((b, 1, rows), "float32"),
      576 ** -0.5 * interface.LOG2E, s_q, h_q, 64, mode="timing")
    wall = time.perf_counter() - t0
    r = k.last_report
    mean_len = float(lens.mean())
    flops = b * h_q * s_q * (2 * 576 * mean_len + 2 * mean_len * 512)
    nbytes = b * (s_q * h_q * 576 * 2 + mean_len * 576 * 2 + s_q * h_q * 512 * 2)
    busy = "  ".join(f"{e} {v * 100:.0f}%" for e, v in r.engine_busy.items())
    print(f"  {name} ({k.name}): {r.time_s * 1e6:.1f} us simulated at {r.clock_ghz:.2f} GHz "
          f"({wall:.0f} s to simulate), {parts} parts, MMA utilisation "
          f"{r.mma_utilization * 100:.1f} %, engines busy {busy}, HBM "
          f"{r.bytes.get('hbm', 0) / 1e9:.2f} GB, gathered {r.bytes.get('gather', 0) / 1e9:.2f} GB")
    if name == "memory-bound":
        value, unit, ref, what = nbytes / r.time_s / 1e9, "GB/s", FLASHMLA_GBPS, "GB/s"
    else:
        value, unit, ref, what = flops / r.time_s / 1e12, "TFLOPS", FLASHMLA_TFLOPS, "TFLOPS"
    label = f"tcsim:h100_like {name} {what}" + (f" ({kernel}'s schedule)" if kernel else "")
    if kernel is not None:      # a simpler schedule, for comparison: no band
        report("mla", label, value, unit, baseline=ref,
               baseline_name="FlashMLA H800 (published)", extra={"report": r.to_dict()})
        return value
    rec = report("mla", label, value, unit, baseline=ref,
                 baseline_name="FlashMLA H800 (published)", target=0.85 * ref,
                 higher_is_better=True, extra={"within": [0.85, 1.10], "report": r.to_dict()})
    within = 0.85 <= rec["ratio"] <= 1.10
    print(f"    band 0.85-1.10x of FlashMLA: {'within' if within else 'OUTSIDE'}")
    return value


def tcsim(_turns: int) -> None:
    print("== tcsim:h100_like (timing only; deterministic, so one run each)")
    tcsim_case("memory-bound", 128, 1, 16, 4096, True)
    ours = tcsim_case("compute-bound", 128, 2, 128, 4096, False)
    # the same case with FlashAttention-2's schedule (a block's softmax between its
    # two products): what the overlap is worth
    fa2 = tcsim_case("compute-bound", 128, 2, 128, 4096, False, kernel="mla_decode")
    print(f"    overlapped schedule / FlashAttention-2's: {ours / fa2:.2f}x")


SECTIONS = {"cpu-compute": cpu_compute, "cpu-memory": cpu_memory, "latency": latency,
            "memory": lambda n: memory_table(), "tcsim": tcsim}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=THREADS)
    ap.add_argument("--only", default=",".join(SECTIONS))
    ap.add_argument("--turns", type=int, default=5)
    args = ap.parse_args()
    for name in args.only.split(","):
        SECTIONS[name.strip()](args.turns)


if __name__ == "__main__":
    main()
