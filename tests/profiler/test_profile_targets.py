"""The profiler asks the Target, never its name: its runner (`Target.profile_runner`) and
the inputs of integer tensors (`Target.make_index_input`, `index=` / `--index` specs)."""
from dataclasses import dataclass

import numpy as np
import pytest

import tilelang
from tilelang import targets
from tilelang.decorators import KernelFunction
from tilelang.diagnostics import TileLangError
from tilelang.profiler.supply import InputSupply, TensorSupplyType
from tilelang.targets.base import Target
from tilelang.targets.cpu.target import CpuTarget

from .kernels import AXPY, GATHER, GEMM

# lengths[i] is a count, not a subscript: nothing in the IR says what values it takes
LENGTHS = '''
import tilelang.language as T
N = T.dynamic("N")

@T.prim_func
def prefix(lengths: T.Tensor((N,), "int32"), out: T.Tensor((N,), "float32")):
    with T.Kernel(1) as bx:
        for i in T.serial(N):
            out[i] = T.cast(lengths[i], "float32") * 0.5
'''


@dataclass(frozen=True)
class HostCopy(CpuTarget):
    """The host under another registry name: profiled through the runner it inherits."""
    name = "hostcopy"
    syntax = "hostcopy"


@dataclass(frozen=True)
class Listing(Target):
    """Compiles nothing and offers no runner."""
    name = "listing"
    syntax = "listing"


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setitem(targets.REGISTRY, "hostcopy", f"{__name__}:HostCopy")
    monkeypatch.setitem(targets.REGISTRY, "listing", f"{__name__}:Listing")


@pytest.fixture
def cli():
    from click.testing import CliRunner
    from tilelang.cli import main
    runner = CliRunner()
    return lambda *args: runner.invoke(main, [str(a) for a in args])


def test_a_new_target_is_profiled_through_its_own_runner(registered):
    """One registry line: no table of runners names it."""
    kernel = tilelang.compile(AXPY, target="hostcopy")
    assert type(kernel.options.target.profile_runner()).__name__ == "CpuRunner"
    report = kernel.profile(sizes={"N": 4096}, num_threads=1, rep=2, timers=False)
    assert report.target == "hostcopy" and report.grids[0].counts.blocks == 4
    assert kernel.get_profiler(sizes={"N": 64}).do_bench(warmup=0, rep=1) > 0


def test_a_target_without_a_runner_is_a_clear_error(registered, cli, tmp_path):
    kfn = KernelFunction(text=AXPY, filename="axpy.tl", target="listing")
    with pytest.raises(TileLangError) as info:
        kfn.get_profiler(sizes={"N": 8})
    assert info.value.code == "TL0713" and "profiling is not supported on the listing" \
        in str(info.value)
    path = tmp_path / "axpy.tl"
    path.write_text(AXPY)
    result = cli("profile", path, "--target", "listing", "--shape", "N=8")
    assert result.exit_code == 1 and "error[TL0713]" in result.stderr
    assert "Traceback" not in result.output


def test_default_spaces_come_from_the_runner():
    from tilelang.autotuner import default_configs
    cpu = targets.get("cpu").profile_runner()
    mr, nr = targets.get("cpu").machine().register_tile(32)
    blocks = cpu.gemm_blocks(1024, 1024, 1024)
    assert all(m % mr == 0 and n % nr == 0 for m, n, _ in blocks)
    sim = default_configs(GEMM, target="tcsim:tiny", M=128, N=128, K=64)
    assert {c["NUM_STAGES"] for c in sim} == set(targets.get("tcsim").profile_runner()
                                                 .pipeline_depths)


# ----------------------------------------------------------------------------- inputs

def _func(text):
    return KernelFunction(text=text, filename="kernel.tl")._func()


def test_undescribed_integer_tensors_come_from_the_target(monkeypatch):
    seen = []

    def index_input(self, rng, shape, dtype, param=None):
        seen.append((shape, dtype, param.name))
        return np.full(shape, 3, np.int32)
    monkeypatch.setattr(CpuTarget, "make_index_input", index_input)
    func = _func(LENGTHS)
    lengths, = InputSupply(func, target=targets.get("cpu")).make({"N": 5}, skip=(1,))
    assert seen == [((5,), "int32", "lengths")] and (lengths == 3).all()
    # a tensor read inside a subscript still gets indices that fit what it indexes
    gather = _func(GATHER)
    _, idx = InputSupply(gather, target=targets.get("cpu")).make({"N": 40, "R": 9},
                                                                  skip=(2,))
    assert len(seen) == 1 and idx.min() >= 0 and idx.max() < 9
    # an explicit supply type fills integers as TileLang's does
    ints, = InputSupply(func, TensorSupplyType.Integer, target=targets.get("cpu")).make(
        {"N": 200}, skip=(1,))
    assert len(seen) == 1 and ints.min() >= -2 and ints.max() <= 2 and ints.min() < 0


@pytest.mark.parametrize("index", [{"lengths": "uniform:100:200"}, "lengths=uniform:100:200",
                                   ["lengths=uniform:100:200"]])
def test_index_specs_describe_integer_tensors(index):
    func = _func(LENGTHS)
    lengths, = InputSupply(func, index=index).make({"N": 64}, skip=(1,))
    assert lengths.dtype == np.int32 and lengths.min() >= 100 and lengths.max() <= 200


def test_bad_index_specs_are_user_errors():
    func = _func(LENGTHS)
    with pytest.raises(TileLangError, match="unknown index kind `zipf`"):
        InputSupply(func, index={"lengths": "zipf:2"})
    with pytest.raises(TileLangError, match="not an integer tensor parameter"):
        InputSupply(func, index={"out": "perm"}).make({"N": 4})
