"""Helpers for the example tests: build an example once per (file, defines), draw inputs.

The numpy references live in examples/references.py (shared with the demo and the
benchmarks); this directory only holds the tests.
"""
from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

import references as ref  # noqa: E402  (examples/references.py)


@functools.lru_cache(maxsize=None)
def _build(name: str, defines: tuple):
    from tilelang.driver import compile_file
    return compile_file(EXAMPLES / f"{name}.tl", defines=dict(defines) or None)


def build(name: str, **defines):
    """The runtime library (all kernels) of examples/<name>.tl with `defines` overriding its
    module-level constants; compiled once per session for each distinct set of defines."""
    return _build(name, tuple(sorted(defines.items())))


def kernel(name: str, kernel_name: str | None = None, **defines):
    lib = build(name, **defines)
    return lib[kernel_name or name]


def np_dtype(dtype: str):
    from tilelang.dtypes import numpy_dtype
    return numpy_dtype(dtype)


def random(rng: np.random.Generator, shape, dtype: str, scale: float = 1.0):
    """Standard-normal values (times `scale`) rounded to `dtype`."""
    return (rng.standard_normal(shape) * scale).astype(np_dtype(dtype))


def as_f64(a):
    return np.asarray(a, dtype=np.float64)


def assert_close(got, want, rtol, atol=0.0, what=""):
    np.testing.assert_allclose(as_f64(got), as_f64(want), rtol=rtol, atol=atol, err_msg=what)


def assert_sum_close(got, want, abs_sum, tol, what=""):
    """For sums and dot products: |got - want| <= tol * sum|terms| elementwise.

    The rounding error of a floating-point sum of n terms is bounded by (n - 1) * u *
    sum|terms| (u the unit roundoff), whatever the order of summation; measuring against
    sum|terms| keeps the check meaningful where terms cancel and the result is near zero,
    where a plain relative tolerance would be meaningless.
    """
    got, want, abs_sum = as_f64(got), as_f64(want), as_f64(abs_sum)
    err = np.abs(got - want)
    bound = tol * abs_sum + 1e-30
    bad = err > bound
    if bad.any():
        idx = np.unravel_index(int(np.argmax(err / bound)), err.shape)
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {err.size} elements outside tolerance; worst at "
            f"{idx}: got {got[idx]!r}, want {want[idx]!r}, |err| {err[idx]:.3g} > "
            f"{tol} * sum|terms| = {bound[idx]:.3g}")
