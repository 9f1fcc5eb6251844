"""TileLang's test helpers, so that its tests run here with `import tilelang.testing`:

- `main()` runs the calling file's tests with pytest (a test file's `__main__`);
- `set_random_seed(seed)` seeds Python's and numpy's generators (torch's too when the
  test imported it);
- `requires_cuda`, `requires_cuda_compute_version[_ge|_gt|_eq|_lt|_le](major, minor)`,
  `requires_cuda_or_cdna`, `requires_llvm`: in TileLang they skip a test without that
  GPU; here the test runs, its kernels on this compiler's default target (the CPU, or
  `TILELANG_TARGET=tcsim:...`), which stands in for it;
- `requires_rocm`, `requires_cdna`, `requires_gfx950`, `requires_metal`: skip (code for
  those GPUs uses their own intrinsics);
- `requires_package(*names)`: skips unless every package imports.

pytest is imported only when a helper needs it.
"""
from __future__ import annotations

import importlib.util
import inspect
import random
import sys


def main():
    """Run the tests of the file that calls this with pytest; exit with its status."""
    import pytest
    test_file = inspect.getsourcefile(sys._getframe(1))
    sys.exit(pytest.main([test_file] + sys.argv[1:]))


def set_random_seed(seed: int = 42) -> None:
    import numpy as np
    random.seed(seed)
    np.random.seed(seed)
    if "torch" in sys.modules:                 # a test that uses torch imported it
        sys.modules["torch"].manual_seed(seed)


def _runs(func=None):
    """A `requires_*` whose hardware this compiler's target stands in for."""
    return func


def _skips(reason: str):
    def mark(func):
        import pytest
        return pytest.mark.skip(reason=reason)(func)
    return mark


requires_cuda = requires_cuda_or_cdna = requires_llvm = _runs
_OTHER_GPU = "a GPU of another vendor: tilelang here targets the CPU and tcsim"
requires_rocm = requires_cdna = requires_gfx950 = requires_metal = _skips(_OTHER_GPU)


def requires_cuda_compute_version(major_version: int, minor_version: int = 0,
                                  mode: str = "ge"):
    if mode not in ("ge", "gt", "eq", "lt", "le"):
        raise ValueError(f"mode must be one of ge, gt, eq, lt, le, got {mode!r}")
    return _runs


def _version_check(mode: str):
    def check(major_version: int, minor_version: int = 0):
        return requires_cuda_compute_version(major_version, minor_version, mode)
    check.__name__ = f"requires_cuda_compute_version_{mode}"
    return check


requires_cuda_compute_version_ge = _version_check("ge")
requires_cuda_compute_version_gt = _version_check("gt")
requires_cuda_compute_version_eq = _version_check("eq")
requires_cuda_compute_version_lt = _version_check("lt")
requires_cuda_compute_version_le = _version_check("le")


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):          # a dotted name whose parent is missing
        return False


def requires_package(*names: str):
    missing = [n for n in names if not _importable(n)]

    def mark(func):
        if not missing:
            return func
        import pytest
        return pytest.mark.skip(reason=f"needs {', '.join(missing)}")(func)
    return mark


__all__ = ["main", "set_random_seed", "requires_cuda", "requires_cuda_or_cdna",
           "requires_llvm", "requires_rocm", "requires_cdna", "requires_gfx950",
           "requires_metal", "requires_package", "requires_cuda_compute_version"] + \
    [f"requires_cuda_compute_version_{m}" for m in ("ge", "gt", "eq", "lt", "le")]
