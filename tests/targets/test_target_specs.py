"""`targets.get(spec)`: spec parsing, aliases, defaults, and what each target answers."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

from tilelang import targets
from tilelang.diagnostics import TileLangError
from tilelang.targets.cpu.target import CpuTarget
from tilelang.targets.tcsim.config import CONFIGS, DEFAULT_CONFIG
from tilelang.targets.tcsim.target import TcsimTarget


@pytest.mark.parametrize("spec, cpu, features", [
    ("cpu", None, None),
    ("auto", None, None),
    ("cpu:znver4", "znver4", None),
    ("cpu:x86-64-v3+avx512f", "x86-64-v3", "+avx512f"),
    ("cpu:x86-64-v3+avx2,-avx512f", "x86-64-v3", "+avx2,-avx512f"),
    ("cpu:znver4,-avx512f", "znver4", "-avx512f"),
    ("cpu+avx2,+fma", None, "+avx2,+fma"),
    ("cpu-avx512f", None, "-avx512f"),
])
def test_cpu_specs(spec, cpu, features):
    target = targets.get(spec)
    assert target == CpuTarget(cpu, features)
    assert targets.get(target.spec) == target           # the canonical spelling round-trips


def test_cpu_and_features_are_aliases_of_the_spec():
    assert targets.get("cpu", cpu="znver4", features="+avx2") == targets.get("cpu:znver4+avx2")
    assert targets.get("cpu:znver4", cpu="znver4") == targets.get("cpu:znver4")
    with pytest.raises(TileLangError) as info:
        targets.get("cpu:znver4", cpu="skylake")
    assert info.value.code == "TL0705" and "contradicts" in str(info.value)
    with pytest.raises(TileLangError) as info:
        targets.get("tcsim", cpu="znver4")
    assert info.value.code == "TL0705" and "do not apply to the tcsim target" in str(info.value)


@pytest.mark.parametrize("spec, words", [
    ("gpu", "targets: cpu[:LLVM_CPU][+feat,-feat]; tcsim[:CONFIG]"),
    ("cpux", "unknown target `cpux`"),
    ("cpu:", "needs an LLVM CPU name"),
    ("cpu:znver4+", "+name or -name"),
    ("cpu:znver4+avx2,fma", "+name or -name, not `fma`"),
    ("tcsim+avx2", "takes no options"),
    ("", "unknown target ``"),
])
def test_bad_specs_are_tl0705(spec, words):
    with pytest.raises(TileLangError) as info:
        targets.get(spec)
    assert info.value.code == "TL0705" and words in str(info.value)


def test_tcsim_specs_and_one_default_config():
    assert DEFAULT_CONFIG == "h100_like"
    assert targets.get("tcsim") == TcsimTarget("h100_like") == targets.get("tcsim:h100_like")
    assert targets.get("tcsim").spec == "tcsim:h100_like"
    for name in CONFIGS:
        assert targets.get(f"tcsim:{name}").machine_config() is CONFIGS[name]
    with pytest.raises(TileLangError) as info:
        targets.get("tcsim:h300")
    assert info.value.code == "TL0805" and "tiny" in str(info.value)
    # the code generator, the simulator and its tool default to the same machine
    from tilelang.codegen.tcsim import compile_module
    from tilelang.runtime.tcsim import sim
    from tilelang.runtime.tcsim.__main__ import main
    assert inspect.signature(compile_module).parameters["config"].default == DEFAULT_CONFIG
    assert "DEFAULT_CONFIG if config is None" in inspect.getsource(sim.run)
    assert "default=DEFAULT_CONFIG" in inspect.getsource(main)


def test_targets_are_values():
    from tilelang.driver import make_options
    a, b = make_options(target="tcsim:tiny"), make_options(target="tcsim:tiny")
    assert a == b and hash(a) == hash(b) and str(a.target) == "tcsim:tiny"
    assert make_options().target == targets.get(targets.DEFAULT)


def test_emit_kinds_and_defaults():
    assert [k.name for k in targets.get("cpu").all_kinds()] == ["ir", "llvm", "asm", "obj", "so"]
    assert [k.name for k in targets.get("tcsim").all_kinds()] == ["ir", "tcasm", "tcsim"]
    assert targets.get("cpu").default_kind == "so" and targets.get("tcsim").default_kind == "tcsim"
    assert targets.emit_kinds() == ["ir", "llvm", "asm", "obj", "so", "tcasm", "tcsim"]
    assert targets.offering("so") == [CpuTarget.syntax]


def test_cross_cpu_key_parts_name_the_machine_the_tiles_follow():
    parts = targets.get("cpu:x86-64-v3+avx2,+fma").key_parts()
    assert parts["cpu"] == "x86-64-v3" and parts["features"] == "+avx2,+fma"
    assert parts["machine"] == "avx2:A"          # the description's name and what it chose
    assert targets.get("cpu:znver4").key_parts()["machine"] == "sse2:A"  # no features named
    assert targets.get("cpu:znver4").key_parts()["features"] == ""
    assert set(targets.get("cpu").key_parts()) == {"target", "triple", "cpu", "features",
                                                   "machine", "llvmlite"}


def test_roofline_peaks():
    h100 = CONFIGS["h100_like"]
    peaks = targets.get("tcsim").roofline_peaks("bfloat16")
    assert peaks.flops_per_s == h100.peak_flops("bfloat16")
    assert peaks.bytes_per_s == h100.hbm_bytes_per_s and peaks.source == "config"
    assert targets.get("cpu:znver4").roofline_peaks("float32") is None     # not measured


def test_cpu_peaks_come_from_the_host_memo():
    """The figures benchmarks/peak.py and the profiler measure, in the peaks memo."""
    import json
    from tilelang.targets.cpu import host
    assert targets.get("cpu").roofline_peaks("float32") is None      # nothing measured yet
    figures = {"format": 1, "fma": {"float32": {"256": {"1": 5e10, "2": 1e11},
                                               "512": {"1": 8e10, "2": 1.6e11}},
                                   "float64": {"512": {"1": 4e10, "2": 8e10}}},
               "bandwidth": {"read": {"1": 2e10, "2": 3e10}, "copy": {"1": 1e10, "2": 2e10}}}
    import os
    os.makedirs(os.path.dirname(host.memo_path("peaks")), exist_ok=True)
    with open(host.memo_path("peaks"), "w") as f:
        json.dump(figures, f)
    one = targets.get("cpu").roofline_peaks("bfloat16", threads=1)   # computed in fp32
    assert (one.flops_per_s, one.bytes_per_s, one.source) == (8e10, 2e10, "measured")
    assert targets.get("cpu").roofline_peaks("float64", threads=4).flops_per_s == 8e10
    assert targets.get("cpu:znver4").roofline_peaks("float32") is None   # a cross target


def test_rank_spanning_targets_and_default_index_inputs():
    # cpu launches run in every rank's process (kernels reach peers' heaps); tcsim
    # models one device
    assert targets.get("cpu").launches_over_ranks is True
    assert targets.get("tcsim").launches_over_ranks is False
    for spec in ("cpu", "tcsim"):
        target = targets.get(spec)
        got = target.make_index_input(np.random.default_rng(0), (3, 4), "int32")
        # small non-negative values, never all zeros (realistic ones: tilec run --index)
        assert got.dtype == np.int32 and got.shape == (3, 4) and got.any()
        assert got.min() >= 0 and got.max() <= 7


GATHER = '''\
import tilelang.language as T

N = T.dynamic("N")


@T.prim_func
def gather(X: T.Tensor((N,), "float32"), idx: T.Tensor((N,), "int32"),
           Y: T.Tensor((N,), "float32")):
    with T.Kernel(1, threads=1) as bx:
        for i in T.serial(N):
            Y[i] = X[idx[i]]
'''


def test_tilec_run_asks_the_target_for_index_inputs(monkeypatch):
    from tilelang.driver import make_options, parse, run_kernel
    from tilelang.targets.base import RunSettings
    seen = []

    def index_input(self, rng, shape, dtype, param=None):
        seen.append((shape, dtype, param.name))
        return np.arange(shape[0], dtype=np.int32)[::-1].copy()
    monkeypatch.setattr(CpuTarget, "make_index_input", index_input)
    options = make_options()
    func = parse(GATHER, "gather.tl", options).funcs[0]
    lines = run_kernel(func, options, {"N": 5}, {}, RunSettings(repeat=1))
    assert seen == [((5,), "int32", "idx")] and lines[0] == "gather (N=5)"
