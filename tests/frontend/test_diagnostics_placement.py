"""TL0318: the arena placement (`offset=` / `align=`) that memory_reuse prints."""
from .diag_helpers import BODY_LINE, check_at, kernel_source

L = BODY_LINE


def test_tl0318_offset_needs_align():
    src = kernel_source('P = T.alloc_shared((8,), "float32", offset=64)')
    check_at(src, "TL0318", "`offset=` and `align=` go together", L, "64")


def test_tl0318_align_power_of_two():
    src = kernel_source('P = T.alloc_shared((8,), "float32", offset=0, align=48)')
    check_at(src, "TL0318", "`align=` must be a power of two", L, "48")


def test_tl0318_offset_multiple_of_align():
    src = kernel_source('P = T.alloc_fragment((8,), "float32", offset=32, align=64)')
    check_at(src, "TL0318", "non-negative multiple of align=64", L, "32", occurrence=1)
