"""Issue 16, case 1: block-local buffers too large for a thread's stack.

A (2048, 2048) float32 fragment is 16 MiB; on the stack it overflowed the 8 MiB of the
thread running the blocks (exit 139). Above 256 KiB a kernel's block-local memory now
lives in one heap block per `__blocks` call; above 1 GiB it is refused (TL0590).
"""
from __future__ import annotations

import textwrap

import tilelang

from reliability_support import ROOT, run_python, run_tilec

BIG = textwrap.dedent("""\
    import tilelang.language as T
    N = T.dynamic("N")
    TILE = 2048

    @T.prim_func
    def big(A: T.Tensor((N, N), "float32"), B: T.Tensor((N, N), "float32")):
        with T.Kernel(T.ceildiv(N, TILE), T.ceildiv(N, TILE)) as (bx, by):
            t = T.alloc_fragment((TILE, TILE), "float32")
            T.copy(A[by * TILE, bx * TILE], t)
            for i, j in T.Parallel(TILE, TILE):
                t[i, j] = t[i, j] * 2.0 + 1.0
            T.copy(t, B[by * TILE, bx * TILE])
    """)


def test_a_16_mib_fragment_runs_on_worker_threads_and_inline(tmp_path):
    src = tmp_path / "big.tl"
    src.write_text(BIG)
    code = textwrap.dedent(f"""\
        import numpy as np, tilelang
        k = tilelang.compile({str(src)!r})
        assert k.runtime_kernel.manifest["local_memory"] == {{"bytes": 2048 * 2048 * 4, "on": "heap"}}
        for n, threads in ((2100, 2), (2100, 1), (700, 1)):
            a = np.random.default_rng(n).standard_normal((n, n)).astype(np.float32)
            b = np.zeros_like(a)
            k(a, b, num_threads=threads)
            np.testing.assert_array_equal(b, a * 2 + 1)
        print("ok")
        """)
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_the_issue_command_runs():
    proc = run_tilec("run", ROOT / "examples" / "gemm.tl", "-D", "BLOCK_M=2048", "-D",
                     "BLOCK_N=2048", "--shape", "M=2048,N=2048,K=64", "--repeat", "1")
    assert proc.returncode == 0, proc.stderr
    assert "GFLOP/s" in proc.stdout


def test_small_kernels_keep_their_memory_on_the_stack():
    k = tilelang.compile(str(ROOT / "examples" / "gemm.tl"))
    local = k.runtime_kernel.manifest["local_memory"]
    assert local["on"] == "stack" and 0 < local["bytes"] <= 256 * 1024


def test_the_header_says_where_the_memory_is(tmp_path):
    src = tmp_path / "big.tl"
    src.write_text(BIG)
    proc = run_tilec("compile", src, "-o", tmp_path / "big.so")
    assert proc.returncode == 0, proc.stderr
    header = (tmp_path / "big.h").read_text()
    assert "Block-local memory: 16777216 bytes per call" in header
    assert "from the heap" in header


def test_more_than_a_gibibyte_per_block_is_a_user_error(tmp_path):
    src = tmp_path / "huge.tl"
    src.write_text(BIG.replace("TILE = 2048", "TILE = 65536"))
    proc = run_tilec("compile", src, "-o", tmp_path / "huge.so")
    assert proc.returncode == 1, proc.stderr
    assert "error[TL0590]" in proc.stderr and "17179869184 bytes" in proc.stderr
    assert "Traceback" not in proc.stderr
