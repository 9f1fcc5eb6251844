"""The prefetch pass, as before/after `.tl` text, and what it does to the emitted code."""
from __future__ import annotations

import os
import re
import tempfile
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang
from tilelang.frontend import parse_module
from tilelang.ir.printer import print_module
from tilelang.ir.verifier import verify
from tilelang.passes.prefetch import prefetch

HEADER = "import tilelang.language as T\n\nM = T.dynamic(\"M\")\nK = T.dynamic(\"K\")\n\n"


def parse(src: str):
    mod = parse_module(HEADER + textwrap.dedent(src), "<test>")
    verify(mod)
    return mod


def check(before: str, after: str):
    got = prefetch(parse(before))
    verify(got)
    assert parse_module(print_module(got), "<printed>") == got
    if got != parse(after):
        pytest.fail(f"--- got:\n{print_module(got)}\n--- want:\n{after}")


KERNEL = """
@T.prim_func
def f(A: T.Tensor((M, K), "float32"), C: T.Tensor((M, 64), "float32")):
    with T.Kernel(T.ceildiv(M, 16), threads=1) as bx:
        A_s = T.alloc_shared((16, 64), "float32")
        C_f = T.alloc_fragment((16, 64), "float32")
        T.clear(C_f)
        for k in T.Pipelined(T.ceildiv(K, 64), num_stages={stages}):
            T.copy(A[bx * 16, k * 64], A_s)
            for i in range(4):
                for j in range(2):
{body}
        T.copy(C_f, C[bx * 16, 0])
"""
UPDATE = """\
                    for r in range(4):
                        for c in T.vectorized(32):
                            C_f[i * 4 + r, j * 32 + c] = C_f[i * 4 + r, j * 32 + c] + A_s[i * 4 + r, c]
"""


def kernel(stages: int, body: str = UPDATE) -> str:
    return KERNEL.format(stages=stages, body=body)


def test_next_tile_is_prefetched_in_parts_over_the_compute_nest():
    # 16 rows of 256 bytes = 64 lines: 8 parts of 8 lines, one per (i, j) iteration
    fetch = """\
                    if k + 1 < T.ceildiv(K, 64):
                        T.prefetch(A[bx * 16:bx * 16 + 16, (k + 1) * 64:(k + 1) * 64 + 64], part=i * 2 + j, parts=8)
"""
    check(kernel(2), kernel(2, fetch + UPDATE))


def test_single_stage_loops_are_left_alone():
    check(kernel(1), kernel(1))


def test_prefetches_stay_out_of_a_register_tile():
    # the (i, j) nest gives 8 parts of 8 lines; going into the register tile's k loop
    # would break the micro-kernel form, whatever the line count
    tile = """\
                    for kk in range(64):
                        for r in T.unroll(4):
                            for c in T.vectorized(32):
                                C_f[i * 4 + r, j * 32 + c] = C_f[i * 4 + r, j * 32 + c] + A_s[i * 4 + r, kk] * A_s[r, c]
"""
    fetch = """\
                    if k + 1 < T.ceildiv(K, 64):
                        T.prefetch(A[bx * 16:bx * 16 + 16, (k + 1) * 64:(k + 1) * 64 + 64], part=i * 2 + j, parts=8)
"""
    check(kernel(2, tile), kernel(2, fetch + tile))


def test_copies_that_do_not_move_with_the_loop_are_not_prefetched():
    before = kernel(2).replace("T.copy(A[bx * 16, k * 64], A_s)", "T.copy(A[bx * 16, 0], A_s)")
    check(before, before)


def test_prefetching_kernel_computes_the_same_and_emits_l2_prefetches(tmp_path):
    src = tmp_path / "k.tl"
    src.write_text(HEADER + kernel(2))
    k = tilelang.compile(str(src))
    a = np.random.default_rng(0).standard_normal((37, 200)).astype(np.float32)
    c = np.zeros((37, 64), np.float32)
    k(a, c)
    pad = np.zeros((48, 256), np.float32)
    pad[:37, :200] = a
    half = pad.reshape(48, 4, 64)[:, :, :32].sum(axis=1)[:37]     # C_f[:, j*32 + c] += A_s[:, c]
    np.testing.assert_allclose(c, np.hstack([half, half]), rtol=1e-5, atol=1e-5)
    assert re.search(r"prefetcht1|prfm\s+pldl2", k.asm())   # x86 / AArch64 L2 prefetch


PREFETCH_ANYWHERE = """
N = 24

@T.prim_func
def f(A: T.Tensor((M, N), "{dt}"), B: T.Tensor((M, N), "{dt}")):
    with T.Kernel(T.ceildiv(M, 8), threads=1) as bx:
        for p in range({parts}):
            T.prefetch(A[(bx + {ahead}) * 8:(bx + {ahead}) * 8 + {rows}, {col}:{col} + {cols}], part=p, parts={parts})
        for i, j in T.Parallel(8, N):
            B[bx * 8 + i, j] = A[bx * 8 + i, j]
"""


@settings(max_examples=12, deadline=None)
@given(m=st.integers(1, 40), rows=st.integers(1, 20), cols=st.integers(1, 200),
       col=st.integers(-50, 50), ahead=st.integers(-3, 1000), parts=st.integers(1, 7),
       dt=st.sampled_from(["float32", "float16", "int8", "float64"]))
def test_prefetch_of_any_region_changes_nothing(m, rows, cols, col, ahead, parts, dt):
    # regions partly or wholly outside the tensor, more parts than rows: a prefetch is a
    # hint and must never fault or change a value
    src = HEADER + PREFETCH_ANYWHERE.format(dt=dt, rows=rows, cols=cols, col=col,
                                            ahead=ahead, parts=parts)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.tl")
        with open(path, "w") as f:
            f.write(src)
        k = tilelang.compile(path)
        a = (np.arange(m * 24) % 100).reshape(m, 24).astype(dt)
        b = np.zeros_like(a)
        k(a, b)
    np.testing.assert_array_equal(b, a)
