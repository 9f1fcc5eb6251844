"""Before/after tests written as `.tl` text: parse the before text, run one pass, and
compare structurally with the parsed after text (the printed IR is shown on failure)."""
from __future__ import annotations

import textwrap

import pytest

from tilelang.frontend import parse_module
from tilelang.ir.printer import print_module
from tilelang.ir.verifier import verify
from tilelang.passes.dce import dce
from tilelang.passes.lower_tile_ops import lower_tile_ops
from tilelang.passes.predicate import predicate
from tilelang.passes.simplify import simplify
from tilelang.passes.vectorize import vectorize

HEADER = "import tilelang.language as T\n\n"


def parse(src: str):
    mod = parse_module(HEADER + textwrap.dedent(src), "<test>")
    verify(mod)
    return mod


def check(pass_fn, before: str, after: str):
    got = pass_fn(parse(before))
    verify(got)
    want = parse(after)
    if got != want:
        pytest.fail("pass output differs from the expected IR\n--- got:\n"
                    f"{print_module(got)}\n--- want:\n{print_module(want)}")
    # The printed form of the result parses back to the same IR.
    assert parse_module(print_module(got), "<printed>") == got


# ----------------------------------------------------------------------------- simplify

def test_simplify_folds_grid_loops_and_branches():
    check(simplify, """
        N = 1000

        @T.prim_func
        def kern(A: T.Tensor((N,), "float32")):
            with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
                for i in T.Parallel(128 * 1):
                    if 2 > 3:
                        A[bx * 128 + i + 0] = 1.0
                    else:
                        A[(bx * 128 + i + 1) - 1] = T.if_then_else(1 < 2, 2.0 * 1.0, 3.0)
                for j in range(1):
                    A[j + 4] = T.float32(T.exp2(3.0))
                for j2 in range(0):
                    A[j2] = 0.0
    """, """
        N = 1000

        @T.prim_func
        def kern(A: T.Tensor((N,), "float32")):
            with T.Kernel(8, threads=128) as bx:
                for i in T.Parallel(128):
                    A[bx * 128 + i] = 2.0
                A[4] = 8.0
    """)


def test_simplify_keeps_dtypes_of_folded_constants():
    check(simplify, """
        @T.prim_func
        def kern(A: T.Tensor((4,), "float16"), B: T.Tensor((4,), "int8")):
            with T.Kernel(1, threads=1) as bx:
                A[0] = T.float16(1.5) * T.float16(2.0)
                B[1] = T.int8(7) // T.int8(2)
    """, """
        @T.prim_func
        def kern(A: T.Tensor((4,), "float16"), B: T.Tensor((4,), "int8")):
            with T.Kernel(1, threads=1) as bx:
                A[0] = T.float16(3.0)
                B[1] = T.int8(3)
    """)


# ----------------------------------------------------------------------------- lower_tile_ops

def test_lower_copy_with_cast_and_unit_dims():
    check(lower_tile_ops, """
        @T.prim_func
        def kern(A: T.Tensor((2, 16, 8), "float16"), B: T.Tensor((16, 8), "float32")):
            with T.Kernel(2, threads=1) as bx:
                S = T.alloc_shared((8, 8), "float32")
                T.copy(A[1, bx * 8, 0], S)
                T.copy(S, B[bx * 8, 0])
    """, """
        @T.prim_func
        def kern(A: T.Tensor((2, 16, 8), "float16"), B: T.Tensor((16, 8), "float32")):
            with T.Kernel(2, threads=1) as bx:
                S = T.alloc_shared((8, 8), "float32")
                for i, j in T.Parallel(8, 8):
                    S[i, j] = T.cast(A[1, bx * 8 + i, j], "float32")
                for i_0, j_0 in T.Parallel(8, 8):
                    B[bx * 8 + i_0, j_0] = S[i_0, j_0]
    """)


def test_lower_copy_puts_its_cache_hint_on_the_innermost_loop():
    check(lower_tile_ops, """
        @T.prim_func
        def kern(A: T.Tensor((16, 8), "float32"), B: T.Tensor((16, 8), "bfloat16")):
            with T.Kernel(2, threads=1) as bx:
                S = T.alloc_shared((8, 8), "float32")
                T.copy(A[bx * 8, 0], S, eviction_policy="evict_last")
                T.copy(S, B[bx * 8, 0], eviction_policy="evict_first")
    """, """
        @T.prim_func
        def kern(A: T.Tensor((16, 8), "float32"), B: T.Tensor((16, 8), "bfloat16")):
            with T.Kernel(2, threads=1) as bx:
                S = T.alloc_shared((8, 8), "float32")
                for i in T.Parallel(8):
                    for j in T.parallel(8, eviction_policy="evict_last"):
                        S[i, j] = A[bx * 8 + i, j]
                for i_0 in T.Parallel(8):
                    for j_0 in T.parallel(8, eviction_policy="evict_first"):
                        B[bx * 8 + i_0, j_0] = T.cast(S[i_0, j_0], "bfloat16")
    """)


def test_vectorize_keeps_the_cache_hint_of_a_copy_loop():
    check(vectorize, """
        @T.prim_func
        def kern(B: T.Tensor((16, 8), "float32"), n: T.int32):
            with T.Kernel(2, threads=1) as bx:
                for i in T.Parallel(8):
                    for j in T.parallel(8, eviction_policy="evict_first"):
                        B[bx * 8 + i, j] = 1.0
                for j in T.parallel(n, eviction_policy="evict_first"):
                    B[bx, j] = 2.0
    """, """
        @T.prim_func
        def kern(B: T.Tensor((16, 8), "float32"), n: T.int32):
            with T.Kernel(2, threads=1) as bx:
                for i in T.serial(8):
                    for j in T.vectorized(8, eviction_policy="evict_first"):
                        B[bx * 8 + i, j] = 1.0
                for j in T.serial(n, eviction_policy="evict_first"):
                    B[bx, j] = 2.0
    """)


def test_lower_fill_and_clear():
    check(lower_tile_ops, """
        @T.prim_func
        def kern(A: T.Tensor((4, 4), "float32")):
            with T.Kernel(1, threads=1) as bx:
                F = T.alloc_fragment((4,), "int32")
                T.clear(F)
                T.fill(A[1:3, 0:4], 2.5)
    """, """
        @T.prim_func
        def kern(A: T.Tensor((4, 4), "float32")):
            with T.Kernel(1, threads=1) as bx:
                F = T.alloc_fragment((4,), "int32")
                for i in T.Parallel(4):
                    F[i] = 0
                for i_0, j in T.Parallel(2, 4):
                    A[1 + i_0, j] = 2.5
    """)


def test_lower_gemm_transposed_b_with_clear():
    check(lower_tile_ops, """
        @T.prim_func
        def kern(A: T.Tensor((4, 8), "float16"), B: T.Tensor((6, 8), "float16")):
            with T.Kernel(1, threads=1) as bx:
                C = T.alloc_fragment((4, 6), "float32")
                T.gemm(A, B, C, transpose_B=True, clear_accum=True)
    """, """
        @T.prim_func
        def kern(A: T.Tensor((4, 8), "float16"), B: T.Tensor((6, 8), "float16")):
            with T.Kernel(1, threads=1) as bx:
                C = T.alloc_fragment((4, 6), "float32")
                for i_0, j_0 in T.Parallel(4, 6):
                    C[i_0, j_0] = 0.0
                for i in T.Parallel(4):
                    for k in range(8):
                        for j in T.Parallel(6):
                            C[i, j] = C[i, j] + T.cast(A[i, k], "float32") * T.cast(B[j, k], "float32")
    """)


def test_lower_reduce_max_clear_and_absmax_accumulate():
    check(lower_tile_ops, """
        @T.prim_func
        def kern(A: T.Tensor((4, 8), "float32")):
            with T.Kernel(1, threads=1) as bx:
                S = T.alloc_fragment((4, 8), "float32")
                m = T.alloc_fragment((4,), "float32")
                c = T.alloc_fragment((8,), "float32")
                T.copy(A, S)
                T.reduce_max(S, m, dim=1)
                T.reduce_absmax(S, c, dim=0, clear=False)
    """, """
        @T.prim_func
        def kern(A: T.Tensor((4, 8), "float32")):
            with T.Kernel(1, threads=1) as bx:
                S = T.alloc_fragment((4, 8), "float32")
                m = T.alloc_fragment((4,), "float32")
                c = T.alloc_fragment((8,), "float32")
                for i, j in T.Parallel(4, 8):
                    S[i, j] = A[i, j]
                for i_0 in T.Parallel(4):
                    m[i_0] = -T.infinity("float32")
                for i_1 in T.Parallel(4):
                    for j_0 in range(8):
                        m[i_1] = T.max(m[i_1], S[i_1, j_0])
                for i_2 in range(4):
                    for j_1 in T.Parallel(8):
                        c[j_1] = T.max(c[j_1], T.abs(S[i_2, j_1]))
    """)


def test_lower_bool_reduce_starts_from_all_and_any():
    """A bool min is T.min (and) from True: all; a bool sum is T.max (or) from False: any,
    saturating where an add of one-bit integers would give the parity. The language spells
    these `and` / `or`, so the after text is compared as printed, not parsed back."""
    got = lower_tile_ops(parse("""
        @T.prim_func
        def kern(A: T.Tensor((4, 8), "bool")):
            with T.Kernel(1, threads=1) as bx:
                S = T.alloc_fragment((4, 8), "bool")
                lo = T.alloc_fragment((4,), "bool")
                s = T.alloc_fragment((8,), "bool")
                T.reduce_min(S, lo, dim=1)
                T.reduce_sum(S, s, dim=0)
    """))
    verify(got)
    body = print_module(got).split("with T.Kernel(1, threads=1) as bx:\n", 1)[1]
    assert textwrap.dedent(body) == textwrap.dedent("""\
        S = T.alloc_fragment((4, 8), "bool")
        lo = T.alloc_fragment((4,), "bool")
        s = T.alloc_fragment((8,), "bool")
        for i in T.Parallel(4):
            lo[i] = True
        for i_0 in T.Parallel(4):
            for j in range(8):
                lo[i_0] = T.min(lo[i_0], S[i_0, j])
        for i_1 in T.Parallel(8):
            s[i_1] = False
        for i_2 in range(4):
            for j_0 in T.Parallel(8):
                s[j_0] = T.max(s[j_0], S[i_2, j_0])
    """), print_module(got)


def test_lower_tile_atomic_add():
    check(lower_tile_ops, """
        @T.prim_func
        def kern(C: T.Tensor((8, 8), "float32")):
            with T.Kernel(2, threads=1) as bx:
                F = T.alloc_fragment((4, 8), "float32")
                T.atomic_add(C[bx * 4, 0], F)
    """, """
        @T.prim_func
        def kern(C: T.Tensor((8, 8), "float32")):
            with T.Kernel(2, threads=1) as bx:
                F = T.alloc_fragment((4, 8), "float32")
                for i, j in T.Parallel(4, 8):
                    T.atomic_add(C[bx * 4 + i, j], F[i, j])
    """)


# ----------------------------------------------------------------------------- predicate

def test_predicate_guards_ragged_tile_and_hoists_row_guard():
    check(predicate, """
        M = T.dynamic("M")

        @T.prim_func
        def kern(A: T.Tensor((M, 10), "float32"), B: T.Tensor((M, 10), "float32")):
            with T.Kernel(T.ceildiv(M, 4), 3, threads=1) as (bx, by):
                S = T.alloc_shared((4, 4), "float32")
                for i, j in T.Parallel(4, 4):
                    S[i, j] = A[bx * 4 + i, by * 4 + j]
                for i2, j2 in T.Parallel(4, 4):
                    B[bx * 4 + i2, by * 4 + j2] = S[i2, j2] + A[bx * 4 + i2, by * 4 + j2]
                for r in range(M):
                    B[r, 0] = A[r, 9]
    """, """
        M = T.dynamic("M")

        @T.prim_func
        def kern(A: T.Tensor((M, 10), "float32"), B: T.Tensor((M, 10), "float32")):
            with T.Kernel(T.ceildiv(M, 4), 3, threads=1) as (bx, by):
                S = T.alloc_shared((4, 4), "float32")
                for i, j in T.Parallel(4, 4):
                    S[i, j] = T.if_then_else(bx * 4 + i < M and by * 4 + j < 10, A[bx * 4 + i, by * 4 + j], 0.0)
                for i2 in T.Parallel(4):
                    if bx * 4 + i2 < M:
                        for j2 in T.Parallel(4):
                            if by * 4 + j2 < 10:
                                B[bx * 4 + i2, by * 4 + j2] = S[i2, j2] + A[bx * 4 + i2, by * 4 + j2]
                for r in range(M):
                    B[r, 0] = A[r, 9]
    """)


# ----------------------------------------------------------------------------- vectorize

def test_vectorize_innermost_parallel_and_pipelined():
    check(vectorize, """
        N = T.dynamic("N")

        @T.prim_func
        def kern(A: T.Tensor((N, 8), "float32")):
            with T.Kernel(1, threads=1) as bx:
                for k in T.Pipelined(4, num_stages=2):
                    for i, j in T.Parallel(4, 8):
                        A[i, j] = 0.0
                for i2 in T.Parallel(N):
                    A[i2, 0] = 1.0
    """, """
        N = T.dynamic("N")

        @T.prim_func
        def kern(A: T.Tensor((N, 8), "float32")):
            with T.Kernel(1, threads=1) as bx:
                for k in range(4):
                    for i in range(4):
                        for j in T.vectorized(8):
                            A[i, j] = 0.0
                for i2 in range(N):
                    A[i2, 0] = 1.0
    """)


# ----------------------------------------------------------------------------- dce

def test_dce_drops_unused_lets_and_write_only_buffers():
    check(dce, """
        @T.prim_func
        def kern(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1) as bx:
                t = bx * 2
                u = t + 1
                W = T.alloc_fragment((4,), "float32")
                for i in T.Parallel(4):
                    W[i] = A[i]
                for i2 in T.Parallel(4):
                    A[i2] = 1.0
    """, """
        @T.prim_func
        def kern(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1) as bx:
                for i2 in T.Parallel(4):
                    A[i2] = 1.0
    """)


def test_predicate_atomics_indirect_indices_and_symbolic_proofs():
    check(predicate, """
        N = T.dynamic("N")

        @T.prim_func
        def kern(idx: T.Tensor((N,), "int32"), X: T.Tensor((16,), "float32"),
                 C: T.Tensor((N,), "float32")):
            with T.Kernel(N, threads=1) as bx:
                for i in range(N):
                    T.atomic_add(C[i], X[idx[bx]])
                for j in T.Parallel(4):
                    T.atomic_max(C[bx + j], 1.0)
    """, """
        N = T.dynamic("N")

        @T.prim_func
        def kern(idx: T.Tensor((N,), "int32"), X: T.Tensor((16,), "float32"),
                 C: T.Tensor((N,), "float32")):
            with T.Kernel(N, threads=1) as bx:
                for i in range(N):
                    T.atomic_add(C[i], T.if_then_else(idx[bx] >= 0 and idx[bx] < 16, X[idx[bx]], 0.0))
                for j in T.Parallel(4):
                    if bx + j < N:
                        T.atomic_max(C[bx + j], 1.0)
    """)


def test_simplify_lowered_removes_unit_loops_of_a_lowered_row_copy():
    # after `vectorize`: the outer loop of the copy is serial, the inner one a SIMD loop
    check(simplify, """
        @T.prim_func
        def kern(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8,), "float32")):
            with T.Kernel(8, threads=1) as bx:
                for i in range(1):
                    for j in T.vectorized(8):
                        B[0 + j] = A[bx + i, 0 + j] * 1.0
    """, """
        @T.prim_func
        def kern(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8,), "float32")):
            with T.Kernel(8, threads=1) as bx:
                for j in T.vectorized(8):
                    B[j] = A[bx, j]
    """)


def test_simplify_keeps_a_unit_parallel_loop():
    """A T.Parallel nest is an element-wise operation to the code generators (tcsim
    lowers it to whole-tile vector instructions; a bare store is not one): a unit
    parallel loop stays, its index folded."""
    check(simplify, """
        @T.prim_func
        def kern(A: T.Tensor((8, 8), "float32")):
            with T.Kernel(1, threads=1) as bx:
                t = T.alloc_fragment((1, 8), "float32")
                T.copy(A[0, 0], t)
                for i, j in T.Parallel(1, 8):
                    t[i, j] = t[i, j] * 2.0
                T.copy(t, A[0, 0])
    """, """
        @T.prim_func
        def kern(A: T.Tensor((8, 8), "float32")):
            with T.Kernel(1, threads=1) as bx:
                t = T.alloc_fragment((1, 8), "float32")
                T.copy(A[0, 0], t)
                for i, j in T.Parallel(1, 8):
                    t[i, j] = t[i, j] * 2.0
                T.copy(t, A[0, 0])
    """)


def test_dce_removes_empty_loops_and_inverts_else_only_ifs():
    check(dce, """
        @T.prim_func
        def kern(A: T.Tensor((4,), "float32")):
            with T.Kernel(4, threads=1) as bx:
                for i in range(4):
                    pass
                if bx < 2:
                    pass
                else:
                    A[bx] = 1.0
    """, """
        @T.prim_func
        def kern(A: T.Tensor((4,), "float32")):
            with T.Kernel(4, threads=1) as bx:
                if not bx < 2:
                    A[bx] = 1.0
    """)


def test_lowering_avoids_every_name_in_the_function():
    check(lower_tile_ops, """
        @T.prim_func
        def kern(i: T.Tensor((4,), "float32"), j: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1) as i_0:
                T.copy(i, j)
    """, """
        @T.prim_func
        def kern(i: T.Tensor((4,), "float32"), j: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1) as i_0:
                for i_1 in T.Parallel(4):
                    j[i_1] = i[i_1]
    """)


def test_predicate_keeps_guards_that_read_memory_inside_the_loop():
    """`n` changes inside the loop, so neither the user's `if` nor hoisting may stand in
    for the per-iteration guard on C[n]."""
    check(predicate, """
        @T.prim_func
        def kern(C: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1) as bx:
                n = T.alloc_var("int32", init=2)
                for j in range(4):
                    if n < 4:
                        n = n + 1
                        C[n] = 1.0
    """, """
        @T.prim_func
        def kern(C: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1) as bx:
                n = T.alloc_var("int32", init=2)
                for j in range(4):
                    if n < 4:
                        n = n + 1
                        if n >= 0 and n < 4:
                            C[n] = 1.0
    """)


def test_predicate_merges_equal_guards_of_a_loop_body_then_hoists():
    check(predicate, """
        M = T.dynamic("M")

        @T.prim_func
        def kern(X: T.Tensor((M, 8), "float32"), Y: T.Tensor((M, 8), "float32")):
            with T.Kernel(T.ceildiv(M, 4), threads=1) as bx:
                for i, j in T.Parallel(4, 8):
                    X[bx * 4 + i, j] = 1.0
                    Y[bx * 4 + i, j] = 2.0
    """, """
        M = T.dynamic("M")

        @T.prim_func
        def kern(X: T.Tensor((M, 8), "float32"), Y: T.Tensor((M, 8), "float32")):
            with T.Kernel(T.ceildiv(M, 4), threads=1) as bx:
                for i in T.Parallel(4):
                    if bx * 4 + i < M:
                        for j in T.Parallel(8):
                            X[bx * 4 + i, j] = 1.0
                            Y[bx * 4 + i, j] = 2.0
    """)
