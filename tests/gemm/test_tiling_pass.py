"""The tiling pass, as before/after `.tl` text, for fixed machine descriptions."""
from __future__ import annotations

from functools import partial

import pytest

from tilelang.targets.cpu.machine import MACHINES, by_name
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
    # AVX2: MR x NR = 6 x 16. C is 8 x 20: one full 6 x 16 tile, a 2-row tail, a
    # 4-column tail panel with its own 2-row tail.
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
    check(GEMM_8x20.format(args=""), after)


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
            for jo in T.serial(1):
                for io in T.serial(1):
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
