"""The layout pass, as before/after `.tl` text (after tiling, for the AVX2 description:
register tiles of 6 x 16)."""
from __future__ import annotations

import textwrap
from dataclasses import replace

import numpy as np
import pytest

import tilelang
from tilelang.ir.printer import print_module
from tilelang.targets.cpu.machine import by_name
from tilelang.passes.layout import layout
from tilelang.passes.tiling import tiling

from .passtext import HEADER, parse, run as run_passes

AVX2 = by_name("avx2")


def run(src: str):
    return run_passes(lambda m: layout(tiling(m, AVX2), AVX2), src)


def check(before: str, after: str):
    got = run(before)
    want = layout(parse(after), AVX2)        # the expected text is already laid out
    assert want == parse(after)
    if got != parse(after):
        pytest.fail(f"--- got:\n{print_module(got)}\n--- want:\n{after}")


def test_b_operand_is_packed_in_nr_wide_panels_by_its_copy():
    before = """
    @T.prim_func
    def f(A: T.Tensor((6, 4), "float32"), B: T.Tensor((4, 20), "float16"),
          C: T.Tensor((6, 20), "float32")):
        with T.Kernel(1, threads=1) as bx:
            B_s = T.alloc_shared((4, 20), "float32")
            C_f = T.alloc_fragment((6, 20), "float32")
            T.copy(B, B_s)
            T.gemm(A, B_s, C_f)
    """
    after = """
    @T.prim_func
    def f(A: T.Tensor((6, 4), "float32"), B: T.Tensor((4, 20), "float16"),
          C: T.Tensor((6, 20), "float32")):
        with T.Kernel(1, threads=1) as bx:
            B_s = T.alloc_shared((2, 4, 16), "float32")
            C_f = T.alloc_fragment((6, 20), "float32")
            for kp, q, v in T.Parallel(4, 1, 16):
                B_s[q, kp, v] = T.cast(B[kp, q * 16 + v], "float32")
            for kp_0, v_0 in T.Parallel(4, 4):
                B_s[1, kp_0, v_0] = T.cast(B[kp_0, 16 + v_0], "float32")
            for io in T.serial(1):
                for jo in T.serial(1):
                    for k in T.serial(4):
                        for ii in T.unroll(6):
                            for jj in T.vectorized(16):
                                C_f[io * 6 + ii, jo * 16 + jj] = C_f[io * 6 + ii, jo * 16 + jj] + A[io * 6 + ii, k] * B_s[jo, k, jj]
                for k_0 in T.serial(4):
                    for ii_0 in T.unroll(6):
                        for jj_0 in T.vectorized(4):
                            C_f[io * 6 + ii_0, 16 + jj_0] = C_f[io * 6 + ii_0, 16 + jj_0] + A[io * 6 + ii_0, k_0] * B_s[1, k_0, jj_0]
    """
    check(before, after)


def test_transposed_b_is_transposed_by_its_copy():
    before = """
    @T.prim_func
    def f(A: T.Tensor((6, 4), "float32"), B: T.Tensor((16, 4), "float32"),
          C: T.Tensor((6, 16), "float32")):
        with T.Kernel(1, threads=1) as bx:
            B_s = T.alloc_shared((16, 4), "float32")
            C_f = T.alloc_fragment((6, 16), "float32")
            T.copy(B, B_s)
            T.gemm(A, B_s, C_f, transpose_B=True)
    """
    text = print_module(run(before))
    assert 'B_s = T.alloc_shared((1, 4, 16), "float32")' in text
    # the lanes are innermost in the micro-kernel read, K innermost in the copy (the
    # source is contiguous along K)
    assert "B_s[q, kp, v] = B[q * 16 + v, kp]" in text
    assert "B_s[jo, k, jj]" in text


def test_a_buffer_read_elsewhere_keeps_its_layout():
    src = """
    @T.prim_func
    def f(A: T.Tensor((6, 4), "float32"), B: T.Tensor((4, 16), "float32"),
          C: T.Tensor((6, 16), "float32")):
        with T.Kernel(1, threads=1) as bx:
            B_s = T.alloc_shared((4, 16), "float32")
            C_f = T.alloc_fragment((6, 16), "float32")
            T.copy(B, B_s)
            T.gemm(A, B_s, C_f)
            for i, j in T.Parallel(6, 16):
                C_f[i, j] = C_f[i, j] + B_s[0, j]
    """
    assert 'B_s = T.alloc_shared((4, 16), "float32")' in print_module(run(src))


def test_transposed_gemm_runs_on_the_micro_kernel_and_matches_numpy():
    src = HEADER + textwrap.dedent("""
    M = T.dynamic("M")
    N = T.dynamic("N")
    K = T.dynamic("K")

    @T.prim_func
    def abt(A: T.Tensor((M, K), "float32"), B: T.Tensor((N, K), "float32"),
            C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, 40), T.ceildiv(M, 30), threads=1) as (bx, by):
            A_s = T.alloc_shared((30, 24), "float32")
            B_s = T.alloc_shared((40, 24), "float32")
            C_f = T.alloc_fragment((30, 40), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, 24), num_stages=2):
                T.copy(A[by * 30, k * 24], A_s)
                T.copy(B[bx * 40, k * 24], B_s)
                T.gemm(A_s, B_s, C_f, transpose_B=True)
            T.copy(C_f, C[by * 30, bx * 40])
    """)
    kern = tilelang.compile(src)
    assert "vfmadd" in kern.asm() or "fmla" in kern.asm()
    rng = np.random.default_rng(5)
    a = rng.standard_normal((77, 53)).astype(np.float32)
    b = rng.standard_normal((91, 53)).astype(np.float32)
    c = np.zeros((77, 91), np.float32)
    kern(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.T, rtol=1e-4, atol=1e-4)


BF16_GEMM = """
@T.prim_func
def f(A: T.Tensor((6, 5), "bfloat16"), B: T.Tensor((5, 16), "bfloat16"),
      C: T.Tensor((6, 16), "float32")):
    with T.Kernel(1, threads=1) as bx:
        A_s = T.alloc_shared((6, 5), "bfloat16")
        B_s = T.alloc_shared((5, 16), "bfloat16")
        C_f = T.alloc_fragment((6, 16), "float32")
        T.copy(A, A_s)
        T.copy(B, B_s)
        T.gemm(A_s, B_s, C_f)
"""


def test_narrow_operands_are_widened_once_by_their_copies():
    # no native dot: A_s and B_s's panels become float32, the copies convert, the tile
    # reads no cast
    after = """
    @T.prim_func
    def f(A: T.Tensor((6, 5), "bfloat16"), B: T.Tensor((5, 16), "bfloat16"),
          C: T.Tensor((6, 16), "float32")):
        with T.Kernel(1, threads=1) as bx:
            A_s = T.alloc_shared((6, 5), "float32")
            B_s = T.alloc_shared((1, 5, 16), "float32")
            C_f = T.alloc_fragment((6, 16), "float32")
            T.copy(A, A_s)
            for kp, q, v in T.Parallel(5, 1, 16):
                B_s[q, kp, v] = T.cast(B[kp, q * 16 + v], "float32")
            for io in T.serial(1):
                for jo in T.serial(1):
                    for k in T.serial(5):
                        for ii in T.unroll(6):
                            for jj in T.vectorized(16):
                                C_f[io * 6 + ii, jo * 16 + jj] = C_f[io * 6 + ii, jo * 16 + jj] + A_s[io * 6 + ii, k] * B_s[jo, k, jj]
    """
    check(BF16_GEMM, after)


def test_sunk_row_panels_of_a_narrow_a_are_widened_by_their_copies():
    # tiling sinks A's copy into its row panels (the 2-row tail panel copies part of the
    # 6 x K buffer): the panel still becomes float32, each panel copy converts
    before = """
    @T.prim_func
    def f(A: T.Tensor((8, 2), "float16"), B: T.Tensor((2, 16), "float32"),
          C: T.Tensor((8, 16), "float32")):
        with T.Kernel(1, threads=1) as bx:
            A_s = T.alloc_shared((8, 2), "float16")
            C_f = T.alloc_fragment((8, 16), "float32")
            T.copy(A, A_s)
            T.gemm(A_s, B, C_f)
    """
    after = """
    @T.prim_func
    def f(A: T.Tensor((8, 2), "float16"), B: T.Tensor((2, 16), "float32"),
          C: T.Tensor((8, 16), "float32")):
        with T.Kernel(1, threads=1) as bx:
            A_s = T.alloc_shared((6, 2), "float32")
            C_f = T.alloc_fragment((8, 16), "float32")
            for io in T.serial(1):
                T.copy(A[io * 6, 0], A_s)
                for jo in T.serial(1):
                    for k in T.serial(2):
                        for ii in T.unroll(6):
                            for jj in T.vectorized(16):
                                C_f[io * 6 + ii, jo * 16 + jj] = C_f[io * 6 + ii, jo * 16 + jj] + A_s[ii, k] * B[k, jo * 16 + jj]
            T.copy(A[6:8, 0:2], A_s[0:2, 0:2])
            for jo_0 in T.serial(1):
                for k_0 in T.serial(2):
                    for ii_0 in T.unroll(2):
                        for jj_0 in T.vectorized(16):
                            C_f[6 + ii_0, jo_0 * 16 + jj_0] = C_f[6 + ii_0, jo_0 * 16 + jj_0] + A_s[ii_0, k_0] * B[k_0, jo_0 * 16 + jj_0]
    """
    check(before, after)


def test_dot_tiles_read_k_pair_panels():
    # the native dot: B packed in K pairs (the odd K's last step alone), A kept in bf16
    dot = replace(AVX2, bf16_dot=True)
    got = run_passes(lambda m: layout(tiling(m, dot), dot), BF16_GEMM)
    after = """
    @T.prim_func
    def f(A: T.Tensor((6, 5), "bfloat16"), B: T.Tensor((5, 16), "bfloat16"),
          C: T.Tensor((6, 16), "float32")):
        with T.Kernel(1, threads=1) as bx:
            A_s = T.alloc_shared((6, 5), "bfloat16")
            B_s = T.alloc_shared((1, 3, 16, 2), "bfloat16")
            C_f = T.alloc_fragment((6, 16), "float32")
            T.copy(A, A_s)
            for kp, q, v in T.Parallel(2, 1, 16):
                B_s[q, kp, v, 0] = B[kp * 2, q * 16 + v]
                B_s[q, kp, v, 1] = B[kp * 2 + 1, q * 16 + v]
            for kp_0, q_0, v_0 in T.Parallel(1, 1, 16):
                B_s[q_0, 2, v_0, 0] = B[4, q_0 * 16 + v_0]
            for io in T.serial(1):
                for jo in T.serial(1):
                    for kk in T.serial(2):
                        for ii in T.unroll(6):
                            for jj in T.vectorized(16):
                                C_f[io * 6 + ii, jo * 16 + jj] = C_f[io * 6 + ii, jo * 16 + jj] + T.cast(A_s[io * 6 + ii, kk * 2 + 1], "float32") * T.cast(B_s[jo, kk, jj, 1], "float32") + T.cast(A_s[io * 6 + ii, kk * 2], "float32") * T.cast(B_s[jo, kk, jj, 0], "float32")
                    for k in T.serial(4, 5):
                        for ii_0 in T.unroll(6):
                            for jj_0 in T.vectorized(16):
                                C_f[io * 6 + ii_0, jo * 16 + jj_0] = C_f[io * 6 + ii_0, jo * 16 + jj_0] + T.cast(A_s[io * 6 + ii_0, k], "float32") * T.cast(B_s[jo, k // 2, jj_0, k % 2], "float32")
    """
    if got != parse(after):
        pytest.fail(f"--- got:\n{print_module(got)}\n--- want:\n{after}")
