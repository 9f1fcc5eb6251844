"""The main job of `make demo`: compile example kernels (GEMM, softmax, flash attention)
and the library's MLA decode, run them on random inputs, check them against numpy and
report error, time and throughput.

    python examples/demo.py [--quick]

Exits with status 1 if any kernel's result is outside its tolerance.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import references as ref  # noqa: E402

import tilelang  # noqa: E402


def timed(fn, repeats: int) -> float:
    """Median wall time of `fn()` over `repeats` calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def compile_example(name: str, **defines):
    t0 = time.perf_counter()
    kernel = tilelang.compile(str(HERE / f"{name}.tl"), defines=defines or None)
    return kernel, time.perf_counter() - t0


def rel_err_vs_abs(got, want, abs_terms):
    """max |got - want| / |terms|: the error of a sum relative to the sum of |terms|."""
    got = np.asarray(got, np.float64)
    return float(np.max(np.abs(got - want) / np.maximum(abs_terms, 1e-30)))


def demo_gemm(rng, m, n, k, repeats):
    kernel, t_compile = compile_example("gemm")
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    run = lambda: kernel(a, b, c)  # noqa: E731
    t = timed(run, repeats)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    err = rel_err_vs_abs(c, a64 @ b64, np.abs(a64) @ np.abs(b64))
    t_np = timed(lambda: a @ b, repeats)
    flops = ref.gemm_flops(m, n, k)
    return dict(kernel=f"gemm fp32 {m}x{n}x{k}", err=err, tol=1e-5, time=t,
                rate=f"{flops / t / 1e9:.2f} GFLOP/s", compile=t_compile, numpy=t_np,
                numpy_what="a @ b (BLAS)")


def demo_softmax(rng, m, n, repeats):
    kernel, t_compile = compile_example("softmax")
    x = (rng.standard_normal((m, n)) * 3).astype(np.float32)
    y = np.zeros_like(x)
    run = lambda: kernel(x, y)  # noqa: E731
    t = timed(run, repeats)
    want = ref.softmax(x)
    err = float(np.max(np.abs(y - want) / np.abs(want)))
    nbytes = 2 * x.nbytes + y.nbytes          # X is read twice, Y written once

    def np_softmax():
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    t_np = timed(np_softmax, repeats)
    return dict(kernel=f"softmax fp32 {m}x{n}", err=err, tol=1e-5, time=t,
                rate=f"{nbytes / t / 1e9:.2f} GB/s", compile=t_compile, numpy=t_np,
                numpy_what="exp(x - max) / sum")


def demo_attention(rng, b, h, s, d, causal, repeats):
    kernel, t_compile = compile_example("flash_attention", CAUSAL=causal)
    q, k, v = (rng.standard_normal((b, h, s, d)).astype(np.float32) for _ in range(3))
    o = np.zeros_like(q)
    run = lambda: kernel(q, k, v, o)  # noqa: E731
    t = timed(run, repeats)
    want = ref.flash_attention(q, k, v, causal=causal)
    err = float(np.max(np.abs(o - want))) / float(np.max(np.abs(v)))
    flops = ref.attention_flops(b, h, s, s, d, causal)
    mask = np.where(np.tril(np.ones((s, s), bool)) | (not causal), 0.0, -np.inf)
    mask = mask.astype(np.float32)

    def np_attention():                       # float32, materialises the s x s scores
        scores = q @ k.transpose(0, 1, 3, 2) * np.float32(d ** -0.5) + mask
        p = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return (p / p.sum(axis=-1, keepdims=True)) @ v
    t_np = timed(np_attention, repeats)
    return dict(kernel=f"flash_attention fp32 b{b} h{h} s{s} d{d}"
                       + (" causal" if causal else ""),
                err=err, tol=1e-5, time=t, rate=f"{flops / t / 1e9:.2f} GFLOP/s",
                compile=t_compile, numpy=t_np, numpy_what="softmax(q k^T) v, fp32")


def demo_mla(rng, b, h_q, max_len, repeats):
    """FlashMLA-style decode over a paged bf16 latent cache with ragged lengths."""
    import ml_dtypes
    from tilelang.ops.mla import flash_mla_with_kvcache, get_mla_metadata
    from tilelang.ops.mla.reference import mla_decode_reference

    seqlens = rng.integers(1, max_len + 1, b).astype(np.int32)
    pages = -(-seqlens // 64)
    table = np.zeros((b, int(pages.max())), np.int32)
    order = rng.permutation(int(pages.sum())).astype(np.int32)   # pages scattered
    start = 0
    for i, n in enumerate(pages):
        table[i, :n] = order[start:start + n]
        start += n
    bf16 = ml_dtypes.bfloat16
    q = rng.standard_normal((b, 1, h_q, 576)).astype(bf16)
    cache = rng.standard_normal((int(pages.sum()), 64, 1, 576)).astype(bf16)
    meta, splits = get_mla_metadata(seqlens, h_q, 1)
    t0 = time.perf_counter()
    out, lse = flash_mla_with_kvcache(q, cache, table, seqlens, 512, meta, splits)
    t_compile = time.perf_counter() - t0
    run = lambda: flash_mla_with_kvcache(q, cache, table, seqlens, 512, meta, splits)  # noqa
    t = timed(run, repeats)
    out, lse = run()
    want, _ = mla_decode_reference(q, cache, table, seqlens, 512)
    err = float(np.max(np.abs(out.astype(np.float64) - want)))
    t_np = timed(lambda: mla_decode_reference(q, cache, table, seqlens, 512), 1)
    flops = 2 * h_q * int(seqlens.sum()) * (576 + 512)
    return dict(kernel=f"mla_decode bf16 b{b} h{h_q} len<={max_len} paged",
                err=err, tol=2e-2, time=t, rate=f"{flops / t / 1e9:.2f} GFLOP/s",
                compile=t_compile, numpy=t_np, numpy_what="float64 reference, per request")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small shapes, one repeat")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    reps = 1 if args.quick else 5
    s = 1 if args.quick else 4      # shape multiplier

    threads = os.environ.get("TILELANG_NUM_THREADS", str(os.cpu_count()))
    print(f"tilelang {tilelang.__version__} demo: cpu target, {threads} threads "
          f"(TILELANG_NUM_THREADS), shapes deliberately not multiples of the block sizes")
    rows = [
        demo_gemm(rng, 127 * s + 3, 129 * s - 2, 131 * s + 1, reps),
        demo_softmax(rng, 255 * s + 1, 1000 * s - 3, reps),
        demo_attention(rng, 1, 4, 127 * s + 5, 64, True, reps),
        demo_mla(rng, 2 * s, 16, 300 * s, reps),
    ]
    header = f"{'kernel':44} {'max err':>9} {'tol':>6}  {'result':6} {'time':>9} " \
             f"{'throughput':>15} {'vs numpy':>9} {'build':>7}"
    print(header)
    print("-" * len(header))
    ok = True
    for r in rows:
        passed = bool(np.isfinite(r["err"]) and r["err"] <= r["tol"])
        ok &= passed
        print(f"{r['kernel']:44} {r['err']:9.2e} {r['tol']:6.0e}  "
              f"{'PASS' if passed else 'FAIL':6} {r['time'] * 1e3:7.2f}ms {r['rate']:>15} "
              f"{r['numpy'] / r['time']:8.2f}x {r['compile']:6.2f}s")
    print("-" * len(header))
    print("max err: gemm relative to |A| @ |B|, softmax relative per element, attention "
          "relative to max|V|, mla absolute (bf16 output)")
    print("vs numpy: numpy's time / the kernel's time for the same work ("
          + "; ".join(f"{r['kernel'].split()[0]}: {r['numpy_what']}" for r in rows) + ")")
    print("build: compile, or load from the cache (TILELANG_CACHE_DIR) when it has the "
          "kernel")
    print("all kernels match numpy" if ok else "SOME KERNELS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
