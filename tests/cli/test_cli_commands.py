"""Each `tilec` subcommand through click's CliRunner, with its exit code (0 ok, 1 user
error, 2 usage, 3 internal)."""
from __future__ import annotations

import json
import os

import pytest

import cli_kernels as kernels
from cli_support import ROOT


def assert_no_traceback(result):
    assert "Traceback" not in result.output, result.output


# ----------------------------------------------------------------------------- explain / passes

def test_explain_known_code(cli):
    result = cli("explain", "TL0705")
    assert result.exit_code == 0
    assert result.stdout.startswith("TL0705: unknown target")


def test_explain_accepts_code_without_prefix(cli):
    assert cli("explain", "0701").exit_code == 0


def test_explain_unknown_code_is_user_error(cli):
    result = cli("explain", "TL9999")
    assert result.exit_code == 1
    assert "error[TL0708]" in result.stderr


def test_passes_lists_pipeline_in_order(cli):
    from tilelang import targets
    result = cli("passes")
    assert result.exit_code == 0, result.output
    names = [line.split()[0] for line in result.stdout.splitlines()]
    assert names == [p.name for p in targets.get("cpu").pipeline()]


def test_usage_errors_exit_2(cli, kernel_file):
    path = kernel_file("vadd")
    assert cli("compile", path, "-O7").exit_code == 2
    assert cli("compile", path, "-D", "NOEQUALS").exit_code == 2
    assert cli("compile", path, "--emit", "exe").exit_code == 2
    assert cli("frobnicate").exit_code == 2


# ----------------------------------------------------------------------------- user errors

def test_missing_file_is_user_error(cli, tmp_path):
    result = cli("compile", tmp_path / "nope.tl")
    assert result.exit_code == 1
    assert "error[TL0701]" in result.stderr and "nope.tl" in result.stderr
    assert_no_traceback(result)


def test_tcsim_unknown_config(cli, kernel_file):
    result = cli("compile", kernel_file("vadd"), "--target", "tcsim:h100")
    assert result.exit_code == 1
    assert "error[TL0805]" in result.stderr and "h100_like" in result.stderr
    assert_no_traceback(result)


def test_unknown_target(cli, kernel_file):
    result = cli("compile", kernel_file("vadd"), "--target", "gpu")
    assert result.exit_code == 1 and "error[TL0705]" in result.stderr


def test_gpu_target_is_refused_on_the_command_line(cli, kernel_file):
    """A Python program's `target="cuda"` runs on the default target; `tilec --target cuda`
    must not write a CPU artifact the user did not ask for."""
    result = cli("compile", kernel_file("vadd"), "--target", "cuda")
    assert result.exit_code == 1 and "error[TL0705]" in result.stderr
    assert "no `cuda` backend" in result.stderr
    assert_no_traceback(result)


def test_unknown_pass_lists_valid_names(cli, kernel_file):
    from tilelang import targets
    result = cli("ir", kernel_file("vadd"), "--after", "no_such_pass")
    assert result.exit_code == 1
    assert "error[TL0702]" in result.stderr
    for p in targets.get("cpu").pipeline():
        assert p.name in result.stderr
    result = cli("compile", kernel_file("vadd"), "--emit", "ir", "--dump-after", "nope")
    assert result.exit_code == 1 and "error[TL0702]" in result.stderr


def test_unknown_kernel_lists_kernels(cli, kernel_file):
    path = kernel_file("two", kernels.TWO_KERNELS)
    result = cli("ir", path, "-k", "vmul")
    assert result.exit_code == 1
    assert "error[TL0703]" in result.stderr and "vadd, vsub" in result.stderr


def test_syntax_error_is_rendered_diagnostic(cli, kernel_file):
    path = kernel_file("bad", kernels.VECTOR_ADD.replace("T.copy(A_f, C[bx * BLOCK])",
                                                         "T.copy(A_f, C[bx * BLOCK]"))
    result = cli("compile", path, "--emit", "ir")
    assert result.exit_code == 1
    assert_no_traceback(result)
    assert f"--> {path}:" in result.stderr and "^" in result.stderr


def test_json_error_format(cli, tmp_path):
    result = cli("compile", tmp_path / "nope.tl", "--error-format", "json")
    assert result.exit_code == 1
    record = json.loads(result.stderr.strip().splitlines()[0])
    assert record["code"] == "TL0701" and record["level"] == "error"


# ----------------------------------------------------------------------------- ir

def test_ir_round_trip_is_idempotent(cli, kernel_file, tmp_path):
    """`tilec ir` output fed back to `tilec ir` is unchanged, at every stage."""
    from tilelang import targets
    for name in kernels.SOURCES:
        path = kernel_file(name)
        for stage in ["parse"] + [p.name for p in targets.get("cpu").pipeline()]:
            first = cli("ir", path, "--after", stage)
            assert first.exit_code == 0, (name, stage, first.output)
            again_path = tmp_path / f"{name}-{stage}.tl"
            again_path.write_text(first.stdout)
            second = cli("ir", again_path)
            assert second.exit_code == 0, (name, stage, second.output)
            assert second.stdout == first.stdout, (name, stage)


def test_ir_reads_stdin(cli):
    result = cli("ir", "-", input=kernels.VECTOR_ADD)
    assert result.exit_code == 0, result.output
    assert "def vadd(" in result.stdout


def test_ir_applies_defines(cli, kernel_file):
    result = cli("ir", kernel_file("vadd"), "-D", "BLOCK=32", "-D", "dtype=float16")
    assert result.exit_code == 0, result.output
    assert "float16" in result.stdout and "32" in result.stdout


# ----------------------------------------------------------------------------- compile

@pytest.mark.parametrize("kind,marker", [("ir", "def vadd("), ("llvm", "define"),
                                         ("asm", "vadd")])
def test_compile_text_kinds_to_stdout(cli, kernel_file, kind, marker):
    result = cli("compile", kernel_file("vadd"), "--emit", kind)
    assert result.exit_code == 0, result.output
    assert marker in result.stdout


def test_compile_obj_and_so_files(cli, kernel_file, tmp_path):
    path = kernel_file("vadd")
    obj = tmp_path / "out" / "v.o"
    obj.parent.mkdir()
    assert cli("compile", path, "--emit", "obj", "-o", obj, "-O0").exit_code == 0
    assert obj.read_bytes()[:4] == b"\x7fELF"
    so = tmp_path / "out" / "v.so"
    result = cli("compile", path, "--emit", "so", "-o", so)
    assert result.exit_code == 0, result.output
    assert so.read_bytes()[:4] == b"\x7fELF"
    assert "vadd" in (tmp_path / "out" / "v.h").read_text()
    leftovers = [n for n in os.listdir(tmp_path / "out") if n.startswith(".tmp")]
    assert leftovers == []


def test_compile_default_output_is_so_in_cwd(cli, kernel_file, tmp_path, monkeypatch):
    path = kernel_file("vadd")
    monkeypatch.chdir(tmp_path)
    result = cli("compile", path)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "vadd.so").exists() and (tmp_path / "vadd.h").exists()


def test_compile_unwritable_output_is_user_error(cli, kernel_file, tmp_path):
    result = cli("compile", kernel_file("vadd"), "--emit", "obj",
                 "-o", tmp_path / "no" / "such" / "dir" / "v.o")
    assert result.exit_code == 1, result.output
    assert_no_traceback(result)


def test_compile_selects_kernel(cli, kernel_file):
    path = kernel_file("two", kernels.TWO_KERNELS)
    result = cli("compile", path, "-k", "vsub", "--emit", "ir")
    assert result.exit_code == 0, result.output
    assert "def vsub(" in result.stdout and "def vadd(" not in result.stdout


def test_dump_after_into_dir(cli, kernel_file, tmp_path):
    from tilelang import targets
    dump = tmp_path / "dumps"
    result = cli("compile", kernel_file("vadd"), "--emit", "obj", "-o", tmp_path / "v.o",
                 "--dump-after", "all", "--dump-dir", dump)
    assert result.exit_code == 0, result.output
    dumped = " ".join(os.listdir(dump))
    for p in targets.get("cpu").pipeline():
        assert p.name in dumped


# ----------------------------------------------------------------------------- run

def test_run_prints_time_and_bandwidth(cli, kernel_file):
    result = cli("run", kernel_file("vadd"), "--shape", "N=1000", "--repeat", "3")
    assert result.exit_code == 0, result.output
    assert "ms" in result.stdout and "GB/s" in result.stdout
    assert "GFLOP/s" not in result.stdout


def test_run_reports_gflops_for_gemm(cli, kernel_file):
    result = cli("run", kernel_file("mm"), "--shape", "M=32,N=32,K=16", "--repeat", "2")
    assert result.exit_code == 0, result.output
    assert "GFLOP/s" in result.stdout


def test_gemm_flops_count_tiles_times_trip_counts():
    from tilelang.driver import make_options, parse
    from tilelang.ir.evaluate import gemm_flops
    func = parse(kernels.SMALL_GEMM, "mm.tl", make_options()).funcs[0]
    # 2 x 2 blocks, 2 K steps, 2*16*16*8 flops per tile product
    assert gemm_flops(func, {"M": 32, "N": 32, "K": 16}) == 4 * 2 * 2 * 16 * 16 * 8
    # ragged: 3 row blocks, 3 K steps; whole tiles are counted
    assert gemm_flops(func, {"M": 33, "N": 32, "K": 17}) == 6 * 3 * 2 * 16 * 16 * 8


def test_run_scalar_argument(cli, kernel_file):
    result = cli("run", kernel_file("scale_rows"), "--shape", "M=20", "--arg", "alpha=0.5",
                 "--repeat", "1")
    assert result.exit_code == 0, result.output


def test_run_missing_size_is_user_error(cli, kernel_file):
    result = cli("run", kernel_file("mm"), "--shape", "M=32")
    assert result.exit_code == 1
    assert "error[TL0707]" in result.stderr and "K, N" in result.stderr


def test_run_needs_kernel_choice(cli, kernel_file):
    path = kernel_file("two", kernels.TWO_KERNELS)
    result = cli("run", path, "--shape", "N=10")
    assert result.exit_code == 1 and "error[TL0709]" in result.stderr
    assert cli("run", path, "-k", "vsub", "--shape", "N=10", "--repeat", "1").exit_code == 0


def test_run_bad_shape_syntax(cli, kernel_file):
    result = cli("run", kernel_file("vadd"), "--shape", "N=ten")
    assert result.exit_code == 1 and "error[TL0711]" in result.stderr


# ----------------------------------------------------------------------------- cache

def test_cache_info_and_clear(cli, kernel_file, private_cache):
    assert cli("run", kernel_file("vadd"), "--shape", "N=10", "--repeat", "1").exit_code == 0
    info = cli("cache", "info")
    assert info.exit_code == 0
    assert private_cache in info.stdout
    count = int(next(l for l in info.stdout.splitlines() if l.startswith("artifacts:"))
                .split(":")[1])
    assert count >= 1
    cleared = cli("cache", "clear")
    assert cleared.exit_code == 0 and f"removed {count}" in cleared.stdout
    after = cli("cache", "info")
    assert "artifacts: 0" in after.stdout and "indexed sources: 0" in after.stdout


# ----------------------------------------------------------------------------- internal errors

def test_unexpected_exception_is_internal_error(cli, kernel_file, monkeypatch):
    from tilelang.driver import stages

    def explode(*args, **kwargs):
        raise RuntimeError("simulated compiler bug")
    monkeypatch.setattr(stages, "lower", explode)
    result = cli("compile", kernel_file("vadd"), "--emit", "ir")
    assert result.exit_code == 3
    assert "internal compiler error" in result.stderr and "bug in tilec" in result.stderr
    assert "Traceback" not in result.stderr
    report = result.stderr.split("written to ")[1].strip()
    assert "simulated compiler bug" in open(report).read()
    os.unlink(report)


def test_internal_error_names_reproducer(cli, kernel_file, monkeypatch):
    from tilelang.diagnostics import InternalError
    from tilelang.driver import stages

    def fail(*args, **kwargs):
        raise InternalError("pass `dce` crashed", reproducer="/tmp/x/06_dce.repro.tl")
    monkeypatch.setattr(stages, "lower", fail)
    result = cli("compile", kernel_file("vadd"), "--emit", "ir")
    assert result.exit_code == 3
    assert "/tmp/x/06_dce.repro.tl" in result.stderr


def test_run_bad_scalar_value_is_user_error(cli, kernel_file):
    """A float for an integer parameter is refused by the runtime's binder: exit 1."""
    path = kernel_file("scaled", kernels.SCALE_ROWS.replace("alpha: T.float32", "alpha: T.int32")
                       .replace("X_s[i, j] * alpha", "X_s[i, j] * T.cast(alpha, \"float32\")"))
    result = cli("run", path, "--shape", "M=8", "--arg", "alpha=1.5", "--repeat", "1")
    assert result.exit_code == 1, result.output
    assert "error[TL06" in result.stderr


def test_stats_prints_every_pass(cli, kernel_file, tmp_path):
    from tilelang import targets
    result = cli("compile", kernel_file("vadd"), "--emit", "obj", "-o", tmp_path / "v.o",
                 "--stats")
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    timing = lines[:[line.split()[0] for line in lines].index("total") + 1]
    stages = [line.split()[0] for line in timing]
    assert stages == ["parse", *[p.name for p in targets.get("cpu").pipeline()], "codegen", "total"]
    # then the memory plan (tests/memory/test_memory_cli.py checks its figures)
    assert "arena" in "\n".join(lines[len(timing):])


def test_cpu_option_cross_targets(cli, kernel_file, tmp_path):
    import tilelang
    so = tmp_path / "v_haswell.so"
    result = cli("compile", kernel_file("vadd"), "--cpu", "haswell", "-o", so)
    assert result.exit_code == 0, result.output
    assert tilelang.load(str(so)).manifest["target"]["cpu"] == "haswell"
    bad = cli("compile", kernel_file("vadd"), "--cpu", "no-such-cpu", "--emit", "obj",
              "-o", tmp_path / "x.o")
    assert bad.exit_code == 1 and "error[TL05" in bad.stderr


def test_failed_compile_leaves_no_artifact(cli, kernel_file, tmp_path):
    """An error leaves an existing output as it was and no temporary files beside it."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    so = out_dir / "v.so"
    so.write_bytes(b"previous build")
    bad = kernel_file("bad", kernels.VECTOR_ADD.replace("A_f[i] + B_f[i]", "A_f[i] + Q[i]"))
    result = cli("compile", bad, "-o", so)
    assert result.exit_code == 1
    assert so.read_bytes() == b"previous build"
    assert sorted(os.listdir(out_dir)) == ["v.so"]


EXAMPLES = sorted((ROOT / "examples").glob("*.tl"))


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_ir_of_examples_parses_back_unchanged(cli, example, tmp_path):
    """The issue's check on the shipped examples: `tilec ir k.tl --after P` fed back to
    `tilec ir` is unchanged (here after the last pass; the fixtures above try every pass)."""
    from tilelang import targets
    last = targets.get("cpu").pipeline()[-1].name
    first = cli("ir", example, "--after", last)
    assert first.exit_code == 0, first.output
    again = tmp_path / example.name
    again.write_text(first.stdout)
    second = cli("ir", again)
    assert second.exit_code == 0, second.output
    assert second.stdout == first.stdout


def test_run_with_one_thread(cli, kernel_file):
    result = cli("run", kernel_file("vadd"), "--shape", "N=5000", "--threads", "1",
                 "--repeat", "2")
    assert result.exit_code == 0, result.output
    assert cli("run", kernel_file("vadd"), "--shape", "N=10", "--threads", "0").exit_code == 2


def test_explain_list(cli):
    result = cli("explain", "--list")
    assert result.exit_code == 0
    codes = [line.split()[0] for line in result.stdout.splitlines()]
    assert "TL0701" in codes and codes == sorted(codes) and len(codes) >= 25
    assert cli("explain").exit_code == 2


def test_compile_from_stdin_default_output(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli("compile", "-", "--emit", "obj", input=kernels.VECTOR_ADD)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out.o").exists()


def test_gemm_flops_follow_let_bound_trip_counts():
    from tilelang.driver import make_options, parse
    from tilelang.ir.evaluate import gemm_flops
    let_bound = kernels.SMALL_GEMM.replace(
        "        for k in T.Pipelined(T.ceildiv(K, BK), num_stages=2):",
        "        steps = T.ceildiv(K, BK)\n        for k in T.Pipelined(steps, num_stages=2):")
    func = parse(let_bound, "mm.tl", make_options()).funcs[0]
    assert gemm_flops(func, {"M": 32, "N": 32, "K": 16}) == 4 * 2 * 2 * 16 * 16 * 8
    by_block = kernels.SMALL_GEMM.replace("T.Pipelined(T.ceildiv(K, BK)",
                                          "T.Pipelined(T.ceildiv(K, BK) - by")
    func = parse(by_block, "mm.tl", make_options()).funcs[0]
    assert gemm_flops(func, {"M": 32, "N": 32, "K": 16}) is None
