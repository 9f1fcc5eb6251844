"""`tilec compile` / `tilec run` / `tilec passes` with `--target tcsim[:CONFIG]`."""
from __future__ import annotations

import json
import os

import pytest

import cli_kernels as kernels
from cli_support import ROOT

GEMM = ["--shape", "M=40,N=24,K=16"]


def assert_no_traceback(result):
    assert "Traceback" not in result.output, result.output


# ----------------------------------------------------------------------------- compile

def test_emit_tcasm_prints_the_program(cli, kernel_file):
    from tilelang.targets.tcsim.asm import assemble, disassemble
    result = cli("compile", kernel_file("mm"), "--target", "tcsim:tiny", "--emit", "tcasm")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert text.startswith(".kernel mm\n") and " MMA C_f, " in text and "DMA.LD" in text
    assert disassemble(assemble(text)) == text        # what tilec prints is canonical


def test_emit_tcasm_to_file_all_kernels(cli, kernel_file, tmp_path):
    out = tmp_path / "two.tcasm"
    src = kernel_file("two", kernels.TWO_KERNELS)
    result = cli("compile", src, "--target", "tcsim", "--emit", "tcasm", "-o", out)
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert ".kernel vadd" in text and ".kernel vsub" in text


def test_default_output_is_a_loadable_artifact(cli, kernel_file, tmp_path, monkeypatch):
    from tilelang.targets.tcsim.artifact import load
    monkeypatch.chdir(tmp_path)
    result = cli("compile", kernel_file("mm"), "--target", "tcsim:tiny")
    assert result.exit_code == 0, result.output
    artifact = load(tmp_path / "mm.tcsim")
    assert artifact.config_name == "tiny" and artifact.program.name == "mm"


def test_artifact_of_a_two_kernel_file_needs_k(cli, kernel_file, tmp_path):
    src = kernel_file("two", kernels.TWO_KERNELS)
    out = tmp_path / "k.tcsim"
    result = cli("compile", src, "--target", "tcsim:tiny", "--emit", "tcsim", "-o", out)
    assert result.exit_code == 1 and "error[TL0709]" in result.stderr
    assert not out.exists()
    result = cli("compile", src, "-k", "vsub", "--target", "tcsim:tiny", "--emit", "tcsim",
                 "-o", out)
    assert result.exit_code == 0 and out.exists()


def test_raster_reaches_the_program(cli, kernel_file):
    result = cli("compile", kernel_file("mm"), "--target", "tcsim:tiny", "--emit", "tcasm",
                 "--raster", "4")
    assert result.exit_code == 0 and ".raster 4\n" in result.stdout


def test_memory_reuse_places_buffers_unless_disabled(cli, monkeypatch):
    path = ROOT / "examples" / "gemm_epilogue.tl"
    placed = cli("compile", path, "--target", "tcsim:tiny", "--emit", "tcasm")
    assert placed.exit_code == 0 and " offset=" in placed.stdout
    plain = cli("compile", path, "--target", "tcsim:tiny", "--emit", "tcasm",
                "--no-memory-reuse")
    assert plain.exit_code == 0 and " offset=" not in plain.stdout
    monkeypatch.setenv("TILELANG_DISABLE_MEMORY_REUSE", "1")
    env_off = cli("compile", path, "--target", "tcsim:tiny", "--emit", "tcasm")
    assert env_off.stdout == plain.stdout


def test_stats_prints_timings_and_memory_plan(cli, kernel_file, tmp_path):
    result = cli("compile", kernel_file("mm"), "--target", "tcsim:tiny", "--stats",
                 "-o", tmp_path / "mm.tcsim")
    assert result.exit_code == 0, result.output
    for stage in ("parse", "simplify", "memory_reuse", "codegen", "total"):
        assert stage in result.stderr
    assert "arena" in result.stderr and "A_s" in result.stderr


def test_ir_after_tcsim_pipeline(cli, kernel_file):
    result = cli("ir", kernel_file("mm"), "--target", "tcsim:tiny", "--after", "memory_reuse")
    assert result.exit_code == 0 and "T.gemm" in result.stdout    # tile ops stay whole


@pytest.mark.parametrize("target,kind", [("tcsim:tiny", "llvm"), ("tcsim:tiny", "so"),
                                         ("cpu", "tcasm"), ("cpu", "tcsim")])
def test_emit_kind_of_the_other_target(cli, kernel_file, target, kind):
    result = cli("compile", kernel_file("vadd"), "--target", target, "--emit", kind)
    assert result.exit_code == 1 and "error[TL0713]" in result.stderr
    assert_no_traceback(result)


def test_program_too_big_for_the_machine(cli):
    result = cli("compile", ROOT / "examples" / "gemm_bias_relu.tl", "--target",
                 "tcsim:ascend_like", "--emit", "tcasm")
    assert result.exit_code == 1 and "error[TL0801]" in result.stderr
    assert_no_traceback(result)


def test_passes_of_tcsim(cli):
    result = cli("passes", "--target", "tcsim:tiny")
    assert result.exit_code == 0
    assert [line.split()[0] for line in result.stdout.splitlines()] == \
        ["simplify", "memory_reuse"]


# ----------------------------------------------------------------------------- run

def test_run_functional_prints_the_report(cli, kernel_file):
    result = cli("run", kernel_file("mm"), "--target", "tcsim:tiny", *GEMM)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("mm (M=40, K=16, N=24), functional simulation\ntcsim:tiny")
    for figure in ("cycles", "TFLOPS", "MMA utilisation", "roofline", "HBM", "L2",
                   "engines busy", "MMA ", "stalls", "sem_wait", "wave"):
        assert figure in out
    util = float(out.split("MMA utilisation")[1].split("%")[0])
    assert 0 < util <= 100


def test_run_timing_only(cli, kernel_file):
    result = cli("run", kernel_file("mm"), "--target", "tcsim:tiny", "--timing-only",
                 "--shape", "M=512,N=512,K=256")
    assert result.exit_code == 0, result.output
    assert "timing simulation" in result.stdout and "MMA utilisation" in result.stdout


def test_run_writes_a_chrome_trace(cli, kernel_file, tmp_path):
    trace = tmp_path / "out.json"
    result = cli("run", kernel_file("mm"), "--target", "tcsim:tiny", *GEMM,
                 "--trace", trace)
    assert result.exit_code == 0, result.output
    events = json.loads(trace.read_text())["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M"}
    assert {"core 0", "DMA_IN", "MMA"} <= names
    spans = [e for e in events if e["ph"] == "X"]
    assert spans and all(e["dur"] >= 0 and "ts" in e for e in spans)
    assert any(e["name"].startswith("MMA") for e in spans)


def test_run_trace_to_unwritable_path(cli, kernel_file, tmp_path):
    result = cli("run", kernel_file("mm"), "--target", "tcsim:tiny", *GEMM,
                 "--trace", tmp_path / "no" / "such" / "dir" / "t.json")
    assert result.exit_code == 1 and "error[TL0712]" in result.stderr
    assert_no_traceback(result)


def test_run_unknown_config(cli, kernel_file):
    result = cli("run", kernel_file("mm"), "--target", "tcsim:b200", *GEMM)
    assert result.exit_code == 1
    assert "error[TL0805]" in result.stderr and "tiny" in result.stderr
    assert_no_traceback(result)


def test_run_missing_size_is_user_error(cli, kernel_file):
    result = cli("run", kernel_file("mm"), "--target", "tcsim:tiny", "--shape", "M=4")
    assert result.exit_code == 1 and "error[TL0707]" in result.stderr


@pytest.mark.parametrize("error", ["RaceError", "DeadlockError", "LaunchValueError",
                                   "ArtifactError"])
def test_simulator_findings_are_user_errors(cli, kernel_file, monkeypatch, error):
    """What the simulator finds in a program exits 1 with its TL08xx code (a bad
    argument with the binder's TL06xx)."""
    from tilelang.diagnostics import ArtifactError
    from tilelang.runtime.errors import LaunchValueError
    from tilelang.runtime.tcsim.errors import DeadlockError, RaceError
    from tilelang.runtime.tcsim.kernel import SimKernel
    message = "MMA C_f read A_s while DMA_IN wrote it"
    exc = {"RaceError": lambda: RaceError(message),
           "DeadlockError": lambda: DeadlockError(message, waits=["core 0 MMA"]),
           "LaunchValueError": lambda: LaunchValueError(message, "TL0605", "A_s"),
           "ArtifactError": lambda: ArtifactError(message, "TL0801")}[error]()

    def fail(*args, **kwargs):
        raise exc
    monkeypatch.setattr(SimKernel, "__call__", fail)
    result = cli("run", kernel_file("mm"), "--target", "tcsim:tiny", *GEMM)
    assert result.exit_code == 1, result.output
    assert f"error[{exc.code}]" in result.stderr and "A_s" in result.stderr
    assert_no_traceback(result)


def test_tilec_binary_runs_tcsim(kernel_file, tmp_path):
    """The installed console script, end to end (not only the click group)."""
    import subprocess
    from cli_support import tilec_binary
    proc = subprocess.run([tilec_binary(), "run", kernel_file("vadd"), "--target",
                           "tcsim:tiny", "--shape", "N=300"], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert "vadd (N=300), functional simulation" in proc.stdout


def test_stats_counts_every_stage_of_a_pipeline_ring(cli, tmp_path):
    """A 3-stage ring is three copies: without reuse 80 KiB (A_s, B_s x3, C_s), with the
    arena plan 48 KiB (C_s reuses the ring's bytes after the loop)."""
    path = ROOT / "examples" / "gemm_epilogue.tl"
    result = cli("compile", path, "--target", "tcsim:h100_like", "--stats",
                 "-o", tmp_path / "e.tcsim")
    assert result.exit_code == 0, result.output
    assert "shared: 80.0 KiB -> 48.0 KiB" in result.stderr
    assert "x3 stages" in result.stderr
