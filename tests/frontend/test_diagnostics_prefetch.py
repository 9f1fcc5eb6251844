"""TL0319: T.prefetch takes a region of a global tensor, with extents, and a split."""
from .diag_helpers import BODY_LINE, check_at, kernel_source

L = BODY_LINE


def test_tl0319_block_local_buffer():
    src = kernel_source("T.prefetch(S[0:8, 0:64])")
    check_at(src, "TL0319", "T.prefetch of `S`, a shared buffer", L, "S[0:8, 0:64]",
             help="kernel argument")


def test_tl0319_start_corner_has_no_extents():
    src = kernel_source("T.prefetch(A[bx * 64, 0])")
    check_at(src, "TL0319", "cannot infer the size of `A`", L, "A[bx * 64, 0]")


def test_tl0319_parts_positive():
    src = kernel_source("T.prefetch(A[0:8, 0:64], part=0, parts=0)")
    check_at(src, "TL0319", "parts >= 1, got 0", L, "0", occurrence=3)


def test_tl0319_parts_constant():
    src = kernel_source("T.prefetch(A[0:8, 0:64], part=0, parts=x)")
    check_at(src, "TL0218", "parts must be an integer constant", L, "x", occurrence=0)


def test_prefetch_part_must_be_integer():
    src = kernel_source("T.prefetch(A[0:8, 0:64], part=v, parts=2)")
    check_at(src, "TL0206", "expected part", L, "v")
