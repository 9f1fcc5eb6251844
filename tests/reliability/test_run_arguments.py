"""Issue 16, case 3: `tilec run` mistakes are user errors (exit 1, TL0711), said before
anything is allocated (was: exit 3 for `--shape M=-5`, an OOM kill for
`M=3000000000,N=1`, an unknown size silently ignored)."""
from __future__ import annotations

import textwrap

import pytest

from reliability_support import ROOT

GEMM = ROOT / "examples" / "gemm.tl"
VADD = ROOT / "examples" / "vector_add.tl"

SCALARS = textwrap.dedent("""\
    import tilelang.language as T
    N = T.dynamic("N")

    @T.prim_func
    def k(A: T.Tensor((N,), "float32"), n: T.int32, x: T.float32):
        with T.Kernel(1) as bx:
            A[0] = x + T.cast(n, "float32")
    """)


@pytest.mark.parametrize("shape, message", [
    ("M=-5,N=4,K=4", "bad size `M=-5`"),
    ("M=3000000000,N=1,K=1", "bad size `M=3000000000`"),
    ("M=8.5,N=4,K=4", "bad size `M=8.5`"),
    ("M=4,N=4,K=4,Q=3", "has no symbolic size Q"),
    ("M=4,N=4", "needs sizes for K"),
    ("M=2000000000,N=2000,K=100", "need 30547.4 GiB"),
])
def test_bad_sizes_are_user_errors(cli_in_process, shape, message):
    result = cli_in_process("run", GEMM, "--shape", shape, "--repeat", "1")
    assert result.exit_code == 1, result.output
    assert "error[TL07" in result.stderr and message in result.stderr
    assert "internal compiler error" not in result.stderr


@pytest.mark.parametrize("arg, message", [
    ("A=3", "`A` is a tensor"),
    ("zz=1", "has no parameter zz"),
    ("x=1e400", "beyond the range of float64"),
    ("n=1.5", "expects an integer"),
])
def test_bad_scalar_arguments_are_user_errors(cli_in_process, tmp_path, arg, message):
    src = tmp_path / "k.tl"
    src.write_text(SCALARS)
    result = cli_in_process("run", src, "--shape", "N=4", "--arg", arg, "--repeat", "1")
    assert result.exit_code == 1, result.output
    assert message in result.stderr


def test_zero_sizes_run(cli_in_process):
    result = cli_in_process("run", VADD, "--shape", "N=0", "--repeat", "1")
    assert result.exit_code == 0, result.output


def test_the_tcsim_target_checks_sizes_too(cli_in_process):
    result = cli_in_process("run", GEMM, "--target", "tcsim:tiny", "--shape", "M=-1,N=4,K=4")
    assert result.exit_code == 1 and "bad size `M=-1`" in result.stderr
