"""What it costs to keep large block-local memory on the heap instead of the stack.

Above `STACK_LIMIT` (256 KiB) a kernel's block-local buffers live in one block taken with
`aligned_alloc` when a `__blocks` call starts (a chunk of blocks of one thread) and freed
when it returns (tilelang/codegen/llvm/localmem.py). Each case compiles the same kernel
twice in this run, once as shipped (heap) and once with the limit raised so the memory
stays on the stack (the baseline), and times the two alternately, turn by turn:

* `tile512k`: a 512 KiB fragment per block, a light body (copy in, scale, copy out),
  many blocks: the worst case, the allocation is a large share of each call;
* `gemm`: the library GEMM's kernel (tilelang/ops/gemm.tl) with the block sizes
  `tilelang.ops.gemm` picks for 1024^3 on this host (its C fragment alone is ~2 MB).

    python benchmarks/local_memory.py [--turns 7]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, report  # noqa: E402

os.environ["TILELANG_DISABLE_CACHE"] = "1"    # the key does not see the patched limit

import numpy as np  # noqa: E402

import tilelang  # noqa: E402
from tilelang.codegen.llvm import localmem  # noqa: E402

TILE512K = """
import tilelang.language as T
M = T.dynamic("M")

@T.prim_func
def tile512k(A: T.Tensor((M, 1024), "float32"), B: T.Tensor((M, 1024), "float32")):
    with T.Kernel(T.ceildiv(M, 128)) as bx:
        t = T.alloc_fragment((128, 1024), "float32")
        T.copy(A[bx * 128, 0], t)
        for i, j in T.Parallel(128, 1024):
            t[i, j] = t[i, j] * 2.0
        T.copy(t, B[bx * 128, 0])
"""


def _compile(source, defines, stack: bool):
    saved = localmem.STACK_LIMIT
    localmem.STACK_LIMIT = 1 << 40 if stack else saved
    try:
        k = tilelang.compile(source, defines=defines)
        k.compile()
        where = k.runtime_kernel.manifest["local_memory"]["on"]
    finally:
        localmem.STACK_LIMIT = saved
    assert where == ("stack" if stack else "heap"), where
    return k


def _turns(call_heap, call_stack, turns: int, inner: int) -> tuple[float, float]:
    """Median seconds per call of each side, alternating the sides turn by turn."""
    heap, stack = [], []
    call_heap(), call_stack()                            # warm-up
    sides = [(call_heap, heap), (call_stack, stack)]
    for _ in range(turns):
        for call, out in sides:
            start = time.perf_counter()
            for _ in range(inner):
                call()
            out.append((time.perf_counter() - start) / inner)
        sides.reverse()                                  # the other side goes first next
    return statistics.median(heap), statistics.median(stack)


def case(name, source, defines, make_args, turns, inner, threads=None):
    heap_k = _compile(source, defines, stack=False)
    stack_k = _compile(source, defines, stack=True)
    args = make_args()
    h, s = _turns(lambda: heap_k(*args, num_threads=threads),
                  lambda: stack_k(*args, num_threads=threads), turns, inner)
    local = heap_k.runtime_kernel.manifest["local_memory"]["bytes"]
    report("local_memory", f"{name} ({local // 1024} KiB block-local), heap", h, "s",
           baseline=s, baseline_name="same kernel, stack")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=7)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4096, 1024)).astype(np.float32)
    case("tile512k, 32 blocks, 1 thread", TILE512K, {},
         lambda: (x, np.empty_like(x)), a.turns, 20, threads=1)
    case("tile512k, 32 blocks, 2 threads", TILE512K, {},
         lambda: (x, np.empty_like(x)), a.turns, 20, threads=2)
    from tilelang.ops.blocks import choose_blocks, launch_threads
    n = 1024
    threads = launch_threads(n, n, n, None)
    bm, bn, bk = choose_blocks(n, n, n, num_threads=threads)
    am, bmat = rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32)
    case(f"gemm 1024^3 (blocks {bm}x{bn}x{bk}, {threads} threads)",
         str(ROOT / "tilelang" / "ops" / "gemm.tl"),
         {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk},
         lambda: (am, bmat, np.empty((n, n), np.float32)), a.turns, 3, threads=threads)


if __name__ == "__main__":
    main()
