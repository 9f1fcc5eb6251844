"""A third target in a few lines: one Target subclass plus one registry line, and the
driver, `tilec` and the Python API serve it without a change. (Tests only: not shipped.)"""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from tilelang import targets
from tilelang.targets.base import EmitKind, Target


@dataclass(frozen=True)
class ToyTarget(Target):
    """Lists the tile ops of each kernel after its one pass."""
    name = "toy"
    syntax = "toy"
    kinds = (EmitKind("ops", ".ops", True, "the tile ops of each kernel"),)
    default_kind = "ops"

    def pipeline(self):
        from tilelang.passes.manager import Pass
        from tilelang.passes.simplify import simplify
        return [Pass("simplify", simplify, "fold constants")]

    def codegen(self, lowered, options):
        from tilelang.ir.nodes import Copy, Fill, Gemm, Reduce
        from tilelang.ir.visitor import walk
        tile_ops = (Copy, Fill, Gemm, Reduce)
        return {f.name: [type(n).__name__ for n in walk(f.body) if isinstance(n, tile_ops)]
                for f in lowered.funcs}

    def emit_text(self, compiled, kind, timings=None):
        return "".join(f"{name}: {' '.join(ops)}\n" for name, ops in compiled.items())


@pytest.fixture(autouse=True)
def toy_registered(monkeypatch):
    monkeypatch.setitem(targets.REGISTRY, "toy", f"{__name__}:ToyTarget")   # the one line


def test_the_cli_offers_its_kinds(cli):
    result = cli("compile", "--help")
    assert result.exit_code == 0, result.output
    assert "[ir|llvm|asm|obj|so|tcasm|tcsim|ops]" in result.stdout
    assert "tcsim[:CONFIG]" in result.stdout


def test_the_cli_compiles_for_it(cli, vadd_file):
    result = cli("compile", vadd_file, "--target", "toy")
    assert result.exit_code == 0, result.output
    assert result.stdout == "vadd: Copy Copy Copy\n"


def test_its_pipeline_is_listed_and_dumped(cli, vadd_file):
    assert cli("passes", "--target", "toy").stdout.split() == ["simplify", "fold", "constants"]
    after = cli("ir", vadd_file, "--target", "toy", "--after", "simplify")
    assert after.exit_code == 0 and "B_f[i] * 1" not in after.stdout and "B_f[i]" in after.stdout
    wrong = cli("ir", vadd_file, "--target", "toy", "--after", "tiling")
    assert wrong.exit_code == 1 and "error[TL0702]" in wrong.stderr
    assert "the toy pipeline is: simplify" in wrong.stderr


def test_what_it_lacks_is_a_clear_error(cli, vadd_file):
    result = cli("compile", vadd_file, "--target", "toy", "--emit", "so")
    assert result.exit_code == 1 and "error[TL0713]" in result.stderr
    assert "--target cpu" in result.stderr and "--emit ir, ops" in result.stderr
    ran = cli("run", vadd_file, "--target", "toy", "--shape", "N=8")
    assert ran.exit_code == 1 and "error[TL0713]" in ran.stderr
    assert "not supported on the toy target" in ran.stderr


def test_the_python_api_reaches_it(vadd_file):
    import tilelang
    from tilelang.decorators import KernelFunction
    from tilelang.diagnostics import TileLangError
    kernel = KernelFunction(text=open(vadd_file).read(), filename=vadd_file, target="toy")
    assert kernel.ir(after="simplify").count("T.copy") == 3
    with pytest.raises(TileLangError) as info:
        tilelang.compile(vadd_file, target="toy")       # compiles, then cannot run
    assert info.value.code == "TL0713" and "running kernels" in str(info.value)


def test_unknown_targets_list_every_registered_one(cli, vadd_file):
    result = cli("compile", vadd_file, "--target", "gpu")
    assert result.exit_code == 1 and "error[TL0705]" in result.stderr
    assert "toy" in result.stderr and "tcsim[:CONFIG]" in result.stderr


RANKS = '''import tilelang.language as T

N = T.dynamic("N")


@T.prim_func
def shift(x: T.Tensor((N,), "float32"), y: T.Tensor((N,), "float32")):
    with T.Kernel(1) as bx:
        T.get_block(T.address_of(x[0]), T.address_of(y[0]), N, src_pe=1)
'''


@dataclass(frozen=True)
class RankedToy(ToyTarget):
    name = "ranked"
    syntax = "ranked"
    launches_over_ranks = True


def test_multi_rank_kernels_need_a_target_that_launches_over_ranks(cli, tmp_path,
                                                                   monkeypatch):
    path = tmp_path / "shift.tl"
    path.write_text(RANKS)
    refused = cli("compile", path, "--target", "toy")
    assert refused.exit_code == 1 and "error[TL0902]" in refused.stderr
    assert "the toy target does not model" in refused.stderr
    assert "shift.tl:9:9" in refused.stderr          # the T.get_block
    assert "--target cpu" in refused.stderr           # the registered targets that can
    monkeypatch.setitem(targets.REGISTRY, "ranked", f"{__name__}:RankedToy")
    assert "--target ranked" in cli("compile", path, "--target", "toy").stderr
    taken = cli("compile", path, "--target", "ranked")   # the hook, not the name, decides
    assert taken.exit_code == 0 and taken.stdout == "shift: \n", taken.output
