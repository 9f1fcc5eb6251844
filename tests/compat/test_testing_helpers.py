"""`tilelang.testing` as TileLang's example tests use it: main() in a test file's
`__main__`, set_random_seed, and the requires_* decorators (a CUDA requirement runs the
test on this compiler's target; another vendor's GPU or a missing package skips it)."""
import subprocess
import sys
import textwrap

import numpy as np

import tilelang.testing


def _f():
    pass


def _skipped(func) -> bool:
    return any(m.name == "skip" for m in getattr(func, "pytestmark", []))


def test_cuda_requirements_run_here():
    for deco in (tilelang.testing.requires_cuda, tilelang.testing.requires_cuda_or_cdna,
                 tilelang.testing.requires_cuda_compute_version_eq(9, 0),
                 tilelang.testing.requires_cuda_compute_version_ge(8),
                 tilelang.testing.requires_cuda_compute_version(8, 9, mode="lt"),
                 tilelang.testing.requires_package("numpy")):
        assert deco(_f) is _f


def test_other_gpus_and_missing_packages_skip():
    def g():
        pass
    assert _skipped(tilelang.testing.requires_rocm(g))
    assert _skipped(tilelang.testing.requires_package("numpy", "no_such_package.sub")(_f))


def test_set_random_seed_repeats_numpys_draws():
    tilelang.testing.set_random_seed(7)
    first = np.random.rand(4)
    tilelang.testing.set_random_seed(7)
    assert np.array_equal(first, np.random.rand(4))


def test_main_runs_the_calling_file(tmp_path):
    test_file = tmp_path / "test_ported.py"
    test_file.write_text(textwrap.dedent("""
        import tilelang.testing

        @tilelang.testing.requires_cuda
        def test_runs():
            assert tilelang.cdiv(129, 64) == 3

        @tilelang.testing.requires_gfx950
        def test_skips():
            raise AssertionError("not run")

        if __name__ == "__main__":
            tilelang.testing.main()
    """))
    out = subprocess.run([sys.executable, str(test_file), "-q", "-p", "no:cacheprovider"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "1 passed, 1 skipped" in out.stdout
