"""When two runs of one kernel agree (docs/semantics.md, "When two results agree").

The reference interpreter computes in the program's own dtypes with the rounding
points the IR spells out, and tracks for every float element a magnitude S (Σ|terms|
of the sums that made it, products of magnitudes for products; values.py). Another
correct implementation may round at other points (float32 intermediates for float16
arithmetic on the CPU, fused multiply-adds) and sum in another order (the CPU
reassociates accumulations, tcsim's MMA sums pairwise), so:

* integers and bools must match bit for bit;
* a float element must be within K * eps * S + K * tiny of the reference, where eps is
  the unit roundoff of the least precise float dtype the kernel computes in and tiny its
  smallest subnormal; NaN must meet NaN, an infinity the same infinity;
* an element whose magnitude is infinite (it went through floor/ceil of an inexact
  value) is not compared.

K = 16 covers the reorderings above for the reduction lengths the differential tests
use (up to 256 terms: a sum's worst-case error is (n - 1) eps S, its typical one
sqrt(n) eps S).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import dtypes

K = 16


@dataclass
class Mismatch:
    tensor: str
    index: tuple
    want: float
    got: float
    bound: float
    count: int
    total: int

    def __str__(self) -> str:
        return (f"{self.tensor}{list(self.index)}: expected {self.want!r}, got {self.got!r} "
                f"(allowed difference {self.bound:.3g}; {self.count} of {self.total} "
                f"elements differ)")


def program_eps(float_dtypes) -> tuple[float, float]:
    """(eps, tiny) of the least precise of the float dtypes a kernel computes in."""
    from ..ir.interp import eps, tiny
    floats = [d for d in float_dtypes if dtypes.is_float(d)] or ["float64"]
    worst = max(floats, key=eps)
    return eps(worst), tiny(worst)


def compare(name: str, want: np.ndarray, got: np.ndarray, mag: np.ndarray | None,
            eps: float, tiny: float) -> Mismatch | None:
    """The first element of `got` that disagrees with the reference `want`, or None."""
    if want.shape != got.shape:
        return Mismatch(name, (), float("nan"), float("nan"), 0.0, 1, 1)
    if want.dtype.kind != "f" and not _low_float(want.dtype):
        bad = want != got
        if not bad.any():
            return None
        return _first(name, bad, want, got, np.zeros(want.shape))
    w, g = want.astype(np.float64), got.astype(np.float64)
    m = np.abs(w) if mag is None else mag
    bound = K * eps * m + K * tiny
    with np.errstate(invalid="ignore"):
        both_nan = np.isnan(w) & np.isnan(g)
        same = (w == g) | both_nan
        close = np.abs(w - g) <= bound
        skip = np.isinf(m) & np.isfinite(w)
    bad = ~(same | (close & np.isfinite(w) & np.isfinite(g)) | skip)
    if not bad.any():
        return None
    return _first(name, bad, w, g, bound)


def _low_float(dt) -> bool:
    return dtypes.from_numpy(dt) is not None and dtypes.is_float(dtypes.from_numpy(dt))


def _first(name, bad, want, got, bound) -> Mismatch:
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    return Mismatch(name, idx, _item(want[idx]), _item(got[idx]), float(bound[idx]),
                    int(bad.sum()), int(bad.size))


def _item(x):
    x = np.asarray(x)
    return x.item() if x.dtype.kind in "biuf" else float(x.astype(np.float64))
