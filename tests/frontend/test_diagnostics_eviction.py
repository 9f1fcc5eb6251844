"""TL0320: T.copy's eviction_policy is one of TileLang's three cache hints, a string."""
from .diag_helpers import BODY_LINE, check_at, kernel_source

L = BODY_LINE
CHOICES = '"evict_normal", "evict_first", "evict_last"'


def test_tl0320_unknown_hint():
    src = kernel_source('T.copy(F, A[bx * 64, 0], eviction_policy="evict_sometimes")')
    d = check_at(src, "TL0320", f"eviction_policy of T.copy must be one of {CHOICES}", L,
                 '"evict_sometimes"')
    assert d.primary.message == "unknown cache hint"


def test_tl0320_not_a_string():
    src = kernel_source("T.copy(F, A[bx * 64, 0], eviction_policy=x)")
    d = check_at(src, "TL0320", "must be one of", L, "x", occurrence=1)
    assert "not a string constant" in d.primary.message


def test_tl0320_on_a_lowered_loop():
    src = kernel_source('for i in T.vectorized(64, eviction_policy="first"):',
                        "    R[i] = 0.0")
    check_at(src, "TL0320", "eviction_policy of T.vectorized must be one of", L, '"first"')


def test_copy_hints_are_keyword_only_as_in_tilelang():
    """T.copy(src, dst, *, ...): a third positional is an arity error, not a bad hint."""
    src = kernel_source('T.copy(F, A[bx * 64, 0], "evict_first")')
    d = check_at(src, "TL0308", "T.copy takes 2 positional arguments but 3 were given", L,
                 '"evict_first"')
    assert "T.copy(src, dst, *, eviction_policy=None)" in d.help
