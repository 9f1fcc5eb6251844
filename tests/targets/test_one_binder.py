"""One argument binder for every target: the same mistake raises the same error type,
TL06xx code and argument name on cpu and on tcsim."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang

from target_kernels import VADD

N = 200


def _arrays():
    return [np.ones(N, np.float32), np.ones(N, np.float32), np.zeros(N, np.float32)]


def _readonly_output():
    a, b, c = _arrays()
    c.setflags(write=False)
    return a, b, c


MISTAKES = {
    "too few": lambda: _arrays()[:2],
    "dtype": lambda: [np.ones(N, np.float64)] + _arrays()[1:],
    "rank": lambda: [np.ones((N, 1), np.float32)] + _arrays()[1:],
    "symbol": lambda: [np.ones(N, np.float32), np.ones(N - 1, np.float32),
                       np.zeros(N, np.float32)],
    "not contiguous": lambda: [np.ones(2 * N, np.float32)[::2]] + _arrays()[1:],
    "read-only output": _readonly_output,
    "not a tensor": lambda: [list(range(N))] + _arrays()[1:],
    "output aliases an input": lambda: (lambda a, b: [a, b, a])(*_arrays()[:2]),
}


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    path = tmp_path_factory.mktemp("binder") / "vadd.tl"
    path.write_text(VADD)
    return {t: tilelang.compile(str(path), target=t) for t in ("cpu", "tcsim:tiny")}


def _failure(kernel, args):
    try:
        kernel(*args)
    except (TypeError, ValueError) as e:
        return type(e).__bases__[0].__name__, getattr(e, "code", None), \
            getattr(e, "argument", None)
    return None


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_the_same_mistake_is_the_same_error_on_every_target(kernels, mistake):
    cpu, tcsim = (_failure(kernels[t], MISTAKES[mistake]()) for t in ("cpu", "tcsim:tiny"))
    assert cpu is not None and cpu[1].startswith("TL06"), cpu
    assert tcsim == cpu


def test_both_run_the_good_call(kernels):
    for kernel in kernels.values():
        a, b, c = _arrays()
        kernel(a, b, c)
        np.testing.assert_array_equal(c, a + b)
