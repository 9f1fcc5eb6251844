"""Tables of the shared leaves that several layers read (frontend, passes, interpreter,
code generators): checked against numpy."""
import ml_dtypes
import numpy as np
import pytest

from tilelang import dtypes

COMBINE = {"sum": lambda a, x: a + x, "+": lambda a, x: a + x, "add": lambda a, x: a + x,
           "abssum": lambda a, x: a + abs(x), "absmax": lambda a, x: max(a, abs(x)),
           "max": max, "min": min}


def _values(dtype):
    """The ends of the range and some values inside."""
    if dtypes.is_float(dtype):
        finfo = float(ml_dtypes.finfo(dtypes.numpy_dtype(dtype)).max)
        return [-finfo, -1.5, -0.0, 0.0, 0.25, finfo, -np.inf, np.inf]
    lo, hi = dtypes.int_range(dtype)
    return sorted(v for v in {lo, lo + 1, 0, 1, hi - 1, hi} if lo <= v <= hi)


@pytest.mark.parametrize("dtype", [d for d in dtypes.DTYPES if dtypes.is_int(d)])
def test_int_range_is_numpys(dtype):
    info = np.iinfo(dtypes.numpy_dtype(dtype))
    assert dtypes.int_range(dtype) == (int(info.min), int(info.max))


@pytest.mark.parametrize("dtype", dtypes.DTYPES)
@pytest.mark.parametrize("op", list(COMBINE))
def test_reduction_identity_leaves_every_value_unchanged(op, dtype):
    ident = dtypes.reduction_identity(op, dtype)
    assert isinstance(ident, float) == dtypes.is_float(dtype)
    for x in _values(dtype):
        if op in ("abssum", "absmax") and x < 0:
            continue                       # combined as |x|
        got = COMBINE[op](ident, x)
        assert got == x, (x, got)


def test_bool_reductions_are_or_and_and():
    assert dtypes.reduction_identity("max", "bool") == 0       # any: False | x
    assert dtypes.reduction_identity("min", "bool") == 1       # all: True & x
