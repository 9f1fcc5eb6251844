"""The memory figures where a user sees them: `tilec compile --stats`, the
`--no-memory-reuse` flag and TILELANG_DISABLE_MEMORY_REUSE, and
`KernelFunction.memory_report()` in Python; plus the module's global workspaces."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import tilelang
from tilelang.cli import main

from .test_memory_examples import epilogue_operand_bytes

EPILOGUE = Path(__file__).resolve().parents[2] / "examples" / "gemm_epilogue.tl"

TWO_KERNELS = '''import tilelang.language as T

M = T.dynamic("M")


@T.prim_func
def partial(A: T.Tensor((M, 64), "float32"), P: T.Tensor((M, 4), "float32")):
    work = T.alloc_global((M, 4), "float32")
    with T.Kernel(T.ceildiv(M, 16), threads=128) as bx:
        S = T.alloc_shared((16, 64), "float32")
        T.copy(A[bx * 16, 0], S)
        T.copy(S[0:16, 0:4], work[bx * 16, 0])
        T.copy(work[bx * 16:bx * 16 + 16, 0:4], P[bx * 16, 0])


@T.prim_func
def combine(P: T.Tensor((M, 4), "float32"), O: T.Tensor((M,), "float32")):
    tmp = T.alloc_global((M, 8), "float32")
    flag = T.alloc_global((16,), "int32")
    with T.Kernel(T.ceildiv(M, 16), threads=128) as bx:
        F = T.alloc_fragment((16, 4), "float32")
        R = T.alloc_fragment((16,), "float32")
        T.copy(P[bx * 16, 0], F)
        T.reduce_sum(F, R, dim=1)
        T.copy(R, O[bx * 16])
'''


def _tilec(*args, env=None):
    result = CliRunner().invoke(main, [str(a) for a in args], env=env)
    assert result.exit_code == 0, result.output
    return result.stderr


def _expected_line(reuse: bool) -> str:
    """The `shared:` line for gemm_epilogue.tl: its operand tiles and C_s (32 KiB),
    with reuse C_s alone."""
    before = epilogue_operand_bytes() + 32 * 1024
    after = 32 * 1024 if reuse else before
    return f"shared: {before / 1024:.1f} KiB -> {after / 1024:.1f} KiB " \
           f"({(1 - after / before) * 100:.1f}% saved)"


def _shared_line(stderr: str) -> str:
    return next(line for line in stderr.splitlines() if line.strip().startswith("shared:"))


def test_stats_prints_the_table_and_the_saving(tmp_path):
    err = _tilec("compile", EPILOGUE, "--stats", "-o", tmp_path / "e.so")
    table = err[err.index("gemm_epilogue: shared arena"):]
    rows = {line.split()[0]: line.split() for line in table.splitlines()[2:5]}
    assert set(rows) == {"A_s", "B_s", "C_s"}
    name, dtype, shape, nbytes, live, offset = rows["C_s"]
    assert (dtype, shape, nbytes, offset) == ("float16", "128x128", "32768", "0")
    assert re.fullmatch(r"\d+\.\.\d+", live)
    # C_s starts after the operand tiles' last use
    a_end = int(rows["A_s"][4].split("..")[1])
    assert int(live.split("..")[0]) > a_end
    assert _shared_line(err).strip() == _expected_line(True)


@pytest.mark.parametrize("how", ["flag", "env"])
def test_reuse_can_be_turned_off(tmp_path, how):
    args = ["compile", EPILOGUE, "--stats", "-o", tmp_path / "e.so"]
    if how == "flag":
        err = _tilec(*args, "--no-memory-reuse")
    else:
        err = _tilec(*args, env={"TILELANG_DISABLE_MEMORY_REUSE": "1"})
    assert "memory_reuse" not in [line.split()[0] for line in err.splitlines() if line]
    assert _shared_line(err).strip() == _expected_line(False)
    ir = CliRunner().invoke(main, ["ir", str(EPILOGUE), "--after", "dce", "--no-memory-reuse"])
    assert ir.exit_code == 0 and "offset=" not in ir.stdout


def test_ir_after_memory_reuse_shows_the_plan_and_parses_back():
    result = CliRunner().invoke(main, ["ir", str(EPILOGUE), "--after", "memory_reuse"])
    assert result.exit_code == 0
    assert 'C_s = T.alloc_shared((128, 128), "float16", offset=0, align=64)' in result.stdout
    from tilelang.frontend import parse_module
    parse_module(result.stdout, "<printed>")


def test_python_report_of_a_compiled_kernel():
    k = tilelang.compile(str(EPILOGUE))
    report = k.memory_report()
    shared = report.kernel("gemm_epilogue").scope("shared")
    whole = epilogue_operand_bytes() + 32768
    assert (shared.before, shared.after) == (whole, 32768)
    assert abs(shared.saving - (1 - 32768 / whole)) < 1e-9
    assert {r.name: r.offset for r in shared.rows}["C_s"] == 0
    assert _expected_line(True) in str(report)
    off = tilelang.compile(str(EPILOGUE), memory_reuse=False).memory_report()
    assert off.kernel("gemm_epilogue").scope("shared").after == whole


def test_workspaces_are_planned_across_the_kernels_of_a_module(tmp_path):
    path = tmp_path / "two.tl"
    path.write_text(TWO_KERNELS)
    err = _tilec("compile", path, "--stats", "-o", tmp_path / "two.so")
    assert "partial.work: 16 * M bytes at offset 0" in err
    assert "combine.tmp: 32 * M bytes at offset 0" in err
    assert "combine.flag: 64 bytes at offset 32 * M" in err
    # the kernels run one after another: the module needs its larger kernel's region
    assert "workspace: 16 * M + 32 * M + 64 -> max(16 * M, 32 * M + 64) bytes (peak)" in err
    from tilelang.driver import make_options, parse
    from tilelang.driver.stages import memory_report
    report = memory_report(parse(TWO_KERNELS, "two.tl", make_options()), make_options())
    assert report.workspace_peak == "max(16 * M, 32 * M + 64)"


def test_constant_workspaces_give_numbers():
    from tilelang.passes.memory_stats import MemoryReport, KernelFigures
    report = MemoryReport((KernelFigures("a", (), (("w", "4096", "0"),)),
                           KernelFigures("b", (), (("x", "1024", "0"), ("y", "2048", "1024")))))
    assert (report.workspace_before, report.workspace_peak) == ("7168", "4096")


def test_workspaces_of_a_kernel_are_laid_out_widest_element_first():
    src = TWO_KERNELS.replace('tmp = T.alloc_global((M, 8), "float32")',
                              'tmp = T.alloc_global((M, 3), "int8")\n'
                              '    wide = T.alloc_global((M,), "float64")')
    from tilelang.driver import make_options, parse
    from tilelang.driver.stages import memory_report
    report = memory_report(parse(src, "two.tl", make_options()), make_options())
    ws = report.kernel("combine").workspaces
    # float64 first, then int32, then int8: each offset a multiple of its element size
    assert ws == (("wide", "8 * M", "0"), ("flag", "64", "8 * M"),
                  ("tmp", "3 * M", "8 * M + 64"))


def test_the_cache_keeps_builds_with_and_without_reuse_apart():
    """Otherwise the on/off comparisons of tests/memory would compare one artifact."""
    from tilelang.driver import keys, make_options
    on = make_options(memory_reuse=True, target="cpu:znver3")
    off = make_options(memory_reuse=False, target="cpu:znver3")
    assert keys.artifact_key("ir", on) != keys.artifact_key("ir", off)
    assert keys.source_key("src", on) != keys.source_key("src", off)
    assert tilelang.compile(str(EPILOGUE)).llvm() != \
        tilelang.compile(str(EPILOGUE), memory_reuse=False).llvm()


def test_the_manifest_and_header_state_the_block_memory(tmp_path):
    """A loaded library (no compiler needed) and a C caller see the arenas' bytes."""
    so = tmp_path / "e.so"
    _tilec("compile", EPILOGUE, "-o", so)
    lib = tilelang.load(str(so))
    assert lib["gemm_epilogue"].manifest["arenas"] == [
        {"scope": "shared", "bytes": 32768, "align": 64},
        {"scope": "fragment", "bytes": 65536, "align": 64}]
    header = (tmp_path / "e.h").read_text()
    assert "Block-local memory: 98304 bytes of stack per call (shared 32768, " \
           "fragment 65536)" in header
