"""The tiling pass, as before/after `.tl` text, for fixed machine descriptions."""
from __future__ import annotations

from dataclasses import replace
from functools import partial

import pytest

from tilelang.targets.cpu.machine import MACHINES, by_name
from tilelang.ir.printer import print_module
from tilelang.passes.tiling import tiling

from . import passtext

AVX2 = by_name("avx2")


def check(before: str, after: str, machine=AVX2):
    passtext.check(partial(tiling, machine=machine), before, after)


GEMM_8x20 = """
@T.prim_func
def f(A: T.Tensor((8, 4), "float32"), B: T.Tensor((4, 20), "float32"),
      C: T.Tensor((8, 20), "float32")):
    with T.Kernel(1, threads=1) as bx:
        A_s = T.alloc_shared((8, 4), "float32")
        B_s = T.alloc_shared((4, 20), "float32")
        C_f = T.alloc_fragment((8, 20), "float32")
        T.gemm(A_s, B_s, C_f{args})
"""


def test_gemm_becomes_register_tiles_with_row_and_column_tails():
    # AVX2: MR x NR = 6 x 16. C is 8 x 20: one full 6 x 16 tile and its 4-column tail
    # tile, then a 2-row tail panel of a 2 x 16 and a 2 x 4 tile. Rows outermost: the
    # MR x K panel of A stays in L1 while the packed panels of B stream past it.
    after = """
    @T.prim_func
    def f(A: T.Tensor((8, 4), "float32"), B: T.Tensor((4, 20), "float32"),
          C: T.Tensor((8, 20), "float32")):
        with T.Kernel(1, threads=1) as bx:
            A_s = T.alloc_shared((8, 4), "float32")
            B_s = T.alloc_shared((4, 20), "float32")
            C_f = T.alloc_fragment((8, 20), "float32")
            for io in T.serial(1):
                for jo in T.serial(1):
                    for k in T.serial(4):
                        for ii in T.unroll(6):
                            for jj in T.vectorized(16):
                                C_f[io * 6 + ii, jo * 16 + jj] = C_f[io * 6 + ii, jo * 16 + jj] + A_s[io * 6 + ii, k] * B_s[k, jo * 16 + jj]
                for k_0 in T.serial(4):
                    for ii_0 in T.unroll(6):
                        for jj_0 in T.vectorized(4):
                            C_f[io * 6 + ii_0, 16 + jj_0] = C_f[io * 6 + ii_0, 16 + jj_0] + A_s[io * 6 + ii_0, k_0] * B_s[k_0, 16 + jj_0]
            for jo_0 in T.serial(1):
                for k_1 in T.serial(4):
                    for ii_1 in T.unroll(2):
                        for jj_1 in T.vectorized(16):
                            C_f[6 + ii_1, jo_0 * 16 + jj_1] = C_f[6 + ii_1, jo_0 * 16 + jj_1] + A_s[6 + ii_1, k_1] * B_s[k_1, jo_0 * 16 + jj_1]
            for k_2 in T.serial(4):
                for ii_2 in T.unroll(2):
                    for jj_2 in T.vectorized(4):
                        C_f[6 + ii_2, 16 + jj_2] = C_f[6 + ii_2, 16 + jj_2] + A_s[6 + ii_2, k_2] * B_s[k_2, 16 + jj_2]
    """
    check(GEMM_8x20.format(args=""), after)


def test_a_machine_keeping_b_in_l1_walks_column_panels_outermost():
    # the same gemm for a description whose B panel stays in L1: columns outermost,
    # every row tile of a column panel reuses its K x NR panel of B
    after = """
    @T.prim_func
    def f(A: T.Tensor((8, 4), "float32"), B: T.Tensor((4, 20), "float32"),
          C: T.Tensor((8, 20), "float32")):
        with T.Kernel(1, threads=1) as bx:
            A_s = T.alloc_shared((8, 4), "float32")
            B_s = T.alloc_shared((4, 20), "float32")
            C_f = T.alloc_fragment((8, 20), "float32")
            for jo in T.serial(1):
                for io in T.serial(1):
                    for k in T.serial(4):
                        for ii in T.unroll(6):
                            for jj in T.vectorized(16):
                                C_f[io * 6 + ii, jo * 16 + jj] = C_f[io * 6 + ii, jo * 16 + jj] + A_s[io * 6 + ii, k] * B_s[k, jo * 16 + jj]
                for k_0 in T.serial(4):
                    for ii_0 in T.unroll(2):
                        for jj_0 in T.vectorized(16):
                            C_f[6 + ii_0, jo * 16 + jj_0] = C_f[6 + ii_0, jo * 16 + jj_0] + A_s[6 + ii_0, k_0] * B_s[k_0, jo * 16 + jj_0]
            for io_0 in T.serial(1):
                for k_1 in T.serial(4):
                    for ii_1 in T.unroll(6):
                        for jj_1 in T.vectorized(4):
                            C_f[io_0 * 6 + ii_1, 16 + jj_1] = C_f[io_0 * 6 + ii_1, 16 + jj_1] + A_s[io_0 * 6 + ii_1, k_1] * B_s[k_1, 16 + jj_1]
            for k_2 in T.serial(4):
                for ii_2 in T.unroll(2):
                    for jj_2 in T.vectorized(4):
                        C_f[6 + ii_2, 16 + jj_2] = C_f[6 + ii_2, 16 + jj_2] + A_s[6 + ii_2, k_2] * B_s[k_2, 16 + jj_2]
    """
    check(GEMM_8x20.format(args=""), after, replace(AVX2, resident="B"))


def test_transposed_operands_and_clear_accum():
    before = """
    @T.prim_func
    def f(A: T.Tensor((4, 6), "float32"), B: T.Tensor((16, 4), "float16"),
          C: T.Tensor((6, 16), "float32")):
        with T.Kernel(1, threads=1) as bx:
            C_f = T.alloc_fragment((6, 16), "float32")
            T.gemm(A, B, C_f, transpose_A=True, transpose_B=True, clear_accum=True)
    """
    after = """
    @T.prim_func
    def f(A: T.Tensor((4, 6), "float32"), B: T.Tensor((16, 4), "float16"),
          C: T.Tensor((6, 16), "float32")):
        with T.Kernel(1, threads=1) as bx:
            C_f = T.alloc_fragment((6, 16), "float32")
            T.fill(C_f, 0.0)
            for io in T.serial(1):
                for jo in T.serial(1):
                    for k in T.serial(4):
                        for ii in T.unroll(6):
                            for jj in T.vectorized(16):
                                C_f[io * 6 + ii, jo * 16 + jj] = C_f[io * 6 + ii, jo * 16 + jj] + A[k, io * 6 + ii] * T.cast(B[jo * 16 + jj, k], "float32")
    """
    check(before, after)


def test_integer_accumulators_are_left_to_lower_tile_ops():
    src = """
    @T.prim_func
    def f(A: T.Tensor((4, 4), "int32"), B: T.Tensor((4, 4), "int32"),
          C: T.Tensor((4, 4), "int32")):
        with T.Kernel(1, threads=1) as bx:
            C_f = T.alloc_fragment((4, 4), "int32")
            T.gemm(A, B, C_f)
    """
    check(src, src)


@pytest.mark.parametrize("machine", MACHINES, ids=lambda t: t.name)
def test_register_tiles_fit_the_register_file(machine):
    for bits in (32, 64):
        mr, nr = machine.register_tile(bits)
        vectors = nr // machine.lanes(bits)
        assert mr >= 1 and nr % machine.lanes(bits) == 0
        assert mr * vectors + vectors + 1 <= machine.vector_registers


GEMM_BF16 = """
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


def test_bf16_dot_takes_two_k_steps_in_the_order_the_instruction_adds():
    # with the native dot: K = 5 is two pairs (odd product first), then a one-step tile
    after = """
    @T.prim_func
    def f(A: T.Tensor((6, 5), "bfloat16"), B: T.Tensor((5, 16), "bfloat16"),
          C: T.Tensor((6, 16), "float32")):
        with T.Kernel(1, threads=1) as bx:
            A_s = T.alloc_shared((6, 5), "bfloat16")
            B_s = T.alloc_shared((5, 16), "bfloat16")
            C_f = T.alloc_fragment((6, 16), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            for io in T.serial(1):
                for jo in T.serial(1):
                    for kk in T.serial(2):
                        for ii in T.unroll(6):
                            for jj in T.vectorized(16):
                                C_f[io * 6 + ii, jo * 16 + jj] = C_f[io * 6 + ii, jo * 16 + jj] + T.cast(A_s[io * 6 + ii, kk * 2 + 1], "float32") * T.cast(B_s[kk * 2 + 1, jo * 16 + jj], "float32") + T.cast(A_s[io * 6 + ii, kk * 2], "float32") * T.cast(B_s[kk * 2, jo * 16 + jj], "float32")
                    for k in T.serial(4, 5):
                        for ii_0 in T.unroll(6):
                            for jj_0 in T.vectorized(16):
                                C_f[io * 6 + ii_0, jo * 16 + jj_0] = C_f[io * 6 + ii_0, jo * 16 + jj_0] + T.cast(A_s[io * 6 + ii_0, k], "float32") * T.cast(B_s[k, jo * 16 + jj_0], "float32")
    """
    check(GEMM_BF16, after, replace(AVX2, bf16_dot=True))
    # without it (every machine unless measured otherwise): one k step, widened operands
    assert "kk" not in print_module(tiling(passtext.parse(GEMM_BF16), AVX2))


GEMM_14x20_COPIED = """
@T.prim_func
def f(A: T.Tensor((28, 4), "float32"), B: T.Tensor((4, 20), "float32"),
      C: T.Tensor((14, 20), "float32")):
    with T.Kernel(2, threads=1) as bx:
        A_s = T.alloc_shared((14, 4), "float32")
        B_s = T.alloc_shared((4, 20), "float32")
        C_f = T.alloc_fragment((14, 20), "float32")
        T.copy(A[bx * 14, 0], A_s)
        T.copy(B, B_s)
        T.gemm(A_s, B_s, C_f)
        T.copy(C_f, C)
"""


def test_a_copy_filling_a_only_for_the_gemm_is_sunk_into_the_row_panels():
    # A_s is filled from A just for the gemm: each row panel copies its own 6 rows (the
    # 2-row tail panel 2 rows) into a 6 x K buffer right before its tiles read them
    after = """
    @T.prim_func
    def f(A: T.Tensor((28, 4), "float32"), B: T.Tensor((4, 20), "float32"),
          C: T.Tensor((14, 20), "float32")):
        with T.Kernel(2, threads=1) as bx:
            A_s = T.alloc_shared((6, 4), "float32")
            B_s = T.alloc_shared((4, 20), "float32")
            C_f = T.alloc_fragment((14, 20), "float32")
            T.copy(B, B_s)
            for io in T.serial(2):
                T.copy(A[bx * 14 + io * 6, 0], A_s)
                for jo in T.serial(1):
                    for k in T.serial(4):
                        for ii in T.unroll(6):
                            for jj in T.vectorized(16):
                                C_f[io * 6 + ii, jo * 16 + jj] = C_f[io * 6 + ii, jo * 16 + jj] + A_s[ii, k] * B_s[k, jo * 16 + jj]
                for k_0 in T.serial(4):
                    for ii_0 in T.unroll(6):
                        for jj_0 in T.vectorized(4):
                            C_f[io * 6 + ii_0, 16 + jj_0] = C_f[io * 6 + ii_0, 16 + jj_0] + A_s[ii_0, k_0] * B_s[k_0, 16 + jj_0]
            T.copy(A[bx * 14 + 12:bx * 14 + 14, 0:4], A_s[0:2, 0:4])
            for jo_0 in T.serial(1):
                for k_1 in T.serial(4):
                    for ii_1 in T.unroll(2):
                        for jj_1 in T.vectorized(16):
                            C_f[12 + ii_1, jo_0 * 16 + jj_1] = C_f[12 + ii_1, jo_0 * 16 + jj_1] + A_s[ii_1, k_1] * B_s[k_1, jo_0 * 16 + jj_1]
            for k_2 in T.serial(4):
                for ii_2 in T.unroll(2):
                    for jj_2 in T.vectorized(4):
                        C_f[12 + ii_2, 16 + jj_2] = C_f[12 + ii_2, 16 + jj_2] + A_s[ii_2, k_2] * B_s[k_2, 16 + jj_2]
            T.copy(C_f, C)
    """
    check(GEMM_14x20_COPIED, after)


@pytest.mark.parametrize("change", [
    ("T.gemm(A_s, B_s, C_f)", "T.gemm(A_s, B_s, C_f)\n        A_s[0, 0] = 1.0"),
    ("T.copy(B, B_s)", "T.copy(B, B_s)\n        A[0, 0] = 1.0"),
    ("T.copy(A[bx * 14, 0], A_s)", "T.copy(A[bx * 14:bx * 14 + 14, 0:2], A_s[0:14, 0:2])"),
], ids=["tile-read-elsewhere", "source-written-between", "partial-copy"])
def test_a_copy_that_is_not_only_the_gemms_stays_where_it_is(change):
    src = GEMM_14x20_COPIED.replace(*change)
    got = passtext.run(partial(tiling, machine=AVX2), src)
    text = print_module(got)
    assert 'A_s = T.alloc_shared((14, 4), "float32")' in text
    assert "A_s[io * 6 + ii, k]" in text


def test_a_machine_keeping_b_in_l1_keeps_a_copied_whole():
    got = passtext.run(partial(tiling, machine=replace(AVX2, resident="B")), GEMM_14x20_COPIED)
    assert 'A_s = T.alloc_shared((14, 4), "float32")' in print_module(got)


GEMM_8x16_K_LOOP = """
@T.prim_func
def f(A: T.Tensor((8, 12), "float32"), B: T.Tensor((12, 16), "float32"),
      C: T.Tensor((8, 16), "float32")):
    with T.Kernel(1, threads=1) as bx:
        A_s = T.alloc_shared((8, 4), "float32")
        B_s = T.alloc_shared((4, 16), "float32")
        C_f = T.alloc_fragment((8, 16), "float32")
        T.clear(C_f)
        for k in T.serial(3):
            T.copy(A[0, k * 4], A_s)
            T.copy(B[k * 4, 0], B_s)
            T.gemm(A_s, B_s, C_f)
        T.copy(C_f, C)
"""


def test_c_cleared_before_the_k_loop_and_written_back_after_it_is_sunk_into_the_row_panels():
    # each row panel (6 rows, then the 2-row tail) clears its rows of C_f in the first
    # k iteration and writes them back to C in the last, right after its tiles
    after = """
    @T.prim_func
    def f(A: T.Tensor((8, 12), "float32"), B: T.Tensor((12, 16), "float32"),
          C: T.Tensor((8, 16), "float32")):
        with T.Kernel(1, threads=1) as bx:
            A_s = T.alloc_shared((6, 4), "float32")
            B_s = T.alloc_shared((4, 16), "float32")
            C_f = T.alloc_fragment((8, 16), "float32")
            for k in T.serial(3):
                T.copy(B[k * 4, 0], B_s)
                for io in T.serial(1):
                    T.copy(A[io * 6, k * 4], A_s)
                    if k == 0:
                        T.fill(C_f[io * 6:io * 6 + 6, 0:16], 0.0)
                    for jo in T.serial(1):
                        for k_0 in T.serial(4):
                            for ii in T.unroll(6):
                                for jj in T.vectorized(16):
                                    C_f[io * 6 + ii, jo * 16 + jj] = C_f[io * 6 + ii, jo * 16 + jj] + A_s[ii, k_0] * B_s[k_0, jo * 16 + jj]
                    if k == 2:
                        T.copy(C_f[io * 6:io * 6 + 6, 0:16], C[io * 6:io * 6 + 6, 0:16])
                T.copy(A[6:8, k * 4:k * 4 + 4], A_s[0:2, 0:4])
                if k == 0:
                    T.fill(C_f[6:8, 0:16], 0.0)
                for jo_0 in T.serial(1):
                    for k_1 in T.serial(4):
                        for ii_0 in T.unroll(2):
                            for jj_0 in T.vectorized(16):
                                C_f[6 + ii_0, jo_0 * 16 + jj_0] = C_f[6 + ii_0, jo_0 * 16 + jj_0] + A_s[ii_0, k_1] * B_s[k_1, jo_0 * 16 + jj_0]
                if k == 2:
                    T.copy(C_f[6:8, 0:16], C[6:8, 0:16])
    """
    check(GEMM_8x16_K_LOOP, after)


@pytest.mark.parametrize("change", [
    ("T.gemm(A_s, B_s, C_f)", "T.gemm(A_s, B_s, C_f)\n            C_f[0, 0] = 1.0"),
    ("T.gemm(A_s, B_s, C_f)", "T.gemm(A_s, B_s, C_f)\n            C[0, 0] = 1.0"),
    ("T.clear(C_f)", "T.clear(C_f)\n        A_s[0, 0] = 1.0"),
    ("T.clear(C_f)", "T.fill(C_f[0:8, 0:8], 0.0)"),
    ("T.copy(C_f, C)", "T.copy(C_f[0:8, 0:8], C[0:8, 0:8])"),
], ids=["c-tile-used-elsewhere", "loop-touches-c", "clear-not-next-to-loop", "partial-clear",
        "partial-write-back"])
def test_an_accumulator_not_only_the_gemms_keeps_its_clear_and_write_back(change):
    text = print_module(passtext.run(partial(tiling, machine=AVX2),
                                     GEMM_8x16_K_LOOP.replace(*change)))
    assert "if k == 0" not in text and "if k == 2" not in text


def test_a_machine_keeping_b_in_l1_keeps_c_cleared_and_written_back_whole():
    got = passtext.run(partial(tiling, machine=replace(AVX2, resident="B")), GEMM_8x16_K_LOOP)
    text = print_module(got)
    assert "T.fill(C_f, 0.0)" in text and "if k == 2" not in text


def test_a_k_loop_that_may_run_no_iteration_still_clears_and_writes_back_c():
    src = 'K = T.dynamic("K")\n' + GEMM_8x16_K_LOOP.replace("(8, 12)", "(8, K)").replace(
        "(12, 16)", "(K, 16)").replace("T.serial(3)", "T.serial(T.ceildiv(K, 4))")
    text = print_module(passtext.run(partial(tiling, machine=AVX2), src))
    assert "if k + 1 == T.ceildiv(K, 4):" in text
    assert "if T.ceildiv(K, 4) < 1:\n            T.fill(C_f, 0.0)\n            T.copy(C_f, C)" \
        in text
