"""The TileLang-compatibility codes (the x80 block): thread-level code, misplaced
current-style declarations, failed compile-time asserts."""
from .diag_helpers import BODY_LINE, check_at, kernel_source

L = BODY_LINE


def test_tl0380_thread_binding_says_what_to_write_instead():
    src = kernel_source("tx = T.get_thread_binding(0)")
    d = check_at(src, "TL0380", "`T.get_thread_binding` is thread-level code", L,
                 "T.get_thread_binding(0)", help="T.Parallel")
    assert "CUDA threads" in d.notes[0]


def test_tl0380_warp_shuffle():
    src = kernel_source("y = T.shfl_xor(v, 1)")
    check_at(src, "TL0380", "`T.shfl_xor` is thread-level code", L, "T.shfl_xor(v, 1)",
             help="T.reduce_sum")


def test_tl0381_const_outside_a_jit_body():
    src = kernel_source('M = T.const("M")')
    check_at(src, "TL0381", "`T.const` declares sizes of a current-style @tilelang.jit",
             L, 'T.const("M")', help="@tilelang.jit")


def test_tl0382_failed_compile_time_assert_shows_its_message():
    src = kernel_source('assert BLOCK % 128 == 0, "BLOCK must be a multiple of 128"')
    check_at(src, "TL0382", "assertion failed: BLOCK must be a multiple of 128", L,
             "BLOCK % 128 == 0")


def test_tl0218_assert_on_a_run_time_value():
    src = kernel_source("assert x > 0")
    check_at(src, "TL0218", "`assert` needs a condition known at compile time", L, "x > 0")
