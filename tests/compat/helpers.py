"""numpy references and tolerances for tests/compat."""
import numpy as np

RNG = np.random.default_rng(2024)


def randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def close(got, want, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64),
                               np.asarray(want, dtype=np.float64), rtol=rtol, atol=atol)


def similar(got, want, eps=1e-3):
    """DeepGEMM's similarity test for fp8 results: 1 - 2 sum(xy) / sum(x^2 + y^2)."""
    x = np.asarray(got, dtype=np.float64)
    y = np.asarray(want, dtype=np.float64)
    assert 1 - 2 * (x * y).sum() / (x * x + y * y).sum() < eps
