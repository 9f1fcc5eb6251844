"""numpy references and tolerances for tests/compat."""
import numpy as np

RNG = np.random.default_rng(2024)


def randn(*shape, dtype=np.float32, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def close(got, want, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64),
                               np.asarray(want, dtype=np.float64), rtol=rtol, atol=atol)


def blocksparse_matmul_ref(a, b, keep, bm, bn, bk):
    """float64 a @ b over (bm, bn, bk) blocks, the K block k of output block (i, j) taken
    only where keep[i, j, k]: the reference of the block-sparse GEMM ports."""
    c = np.zeros((a.shape[0], b.shape[1]), np.float64)
    for i, j, k in zip(*np.nonzero(keep)):
        c[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn] += \
            a[i * bm:(i + 1) * bm, k * bk:(k + 1) * bk].astype(np.float64) @ \
            b[k * bk:(k + 1) * bk, j * bn:(j + 1) * bn].astype(np.float64)
    return c


def similar(got, want, eps=1e-3):
    """DeepGEMM's similarity test for fp8 results: 1 - 2 sum(xy) / sum(x^2 + y^2)."""
    x = np.asarray(got, dtype=np.float64)
    y = np.asarray(want, dtype=np.float64)
    assert 1 - 2 * (x * y).sum() / (x * x + y * y).sum() < eps


def slow_beyond(cases, fast: int, one_arg: bool = False):
    """The parametrization `cases` with all but the first `fast` marked slow (`make test`
    runs those first ones; `make test-slow` the rest of TileLang's matrix). `one_arg`:
    each case is the value of a single argument, even a tuple."""
    import pytest
    out = []
    for k, case in enumerate(cases):
        if k < fast:
            out.append(case)
        else:
            args = case if isinstance(case, tuple) and not one_arg else (case,)
            out.append(pytest.param(*args, marks=pytest.mark.slow))
    return out
