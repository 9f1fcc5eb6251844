"""The pass manager: pipeline order, dumps, timings, verify-each and reproducers."""
from __future__ import annotations

import os
from dataclasses import replace

import pytest

from tilelang.diagnostics import Diagnostic, InternalError, TileLangError
from tilelang.ir import Const, Var, Store, Module, Fill
from tilelang import targets
from tilelang.driver import make_options, pipeline_of
from tilelang.driver.stages import lower
from tilelang.passes import Pass, PassManager

from .irb import c, tensor, whole, kernel_func, module

CPU_ORDER = ["simplify", "tiling", "layout", "lower_tile_ops", "predicate", "versioning",
             "memory_reuse",
             "vectorize", "simplify_lowered", "dce"]


def small_module() -> Module:
    B = tensor("B", (8,))
    func, _ = kernel_func("k", (B,), (c(1),), [Fill(whole(B), Const(2.0, "float32"))])
    return module(func)


def test_cpu_pipeline_order_and_descriptions():
    assert [p.name for p in targets.get("cpu").pipeline()] == CPU_ORDER
    listed = pipeline_of("cpu")
    assert [n for n, _ in listed] == CPU_ORDER
    assert all(d and "\n" not in d for _, d in listed)


def test_unknown_targets_are_user_errors():
    with pytest.raises(TileLangError) as info:
        targets.get("gpu")
    assert info.value.code == "TL0705"


def test_tcsim_pipeline_keeps_tile_ops_for_its_codegen():
    for target in ("tcsim", "tcsim:h100_like", "tcsim:tiny"):
        assert [p.name for p in targets.get(target).pipeline()] == ["simplify", "memory_reuse"]


def test_timings_cover_every_pass():
    pm = PassManager(targets.get("cpu").pipeline(), verify_each=True)
    pm.run(small_module())
    assert [n for n, _ in pm.timings] == CPU_ORDER
    assert all(t >= 0 for _, t in pm.timings)
    assert "lower_tile_ops" in pm.report()


def test_dump_after_named_pass_and_all(tmp_path):
    cpu = targets.get("cpu").pipeline()
    PassManager(cpu, dump_after={"predicate"}, dump_dir=str(tmp_path)).run(small_module())
    assert sorted(os.listdir(tmp_path)) == [_dump_name("predicate")]
    all_dir = tmp_path / "all"
    PassManager(cpu, dump_after="all", dump_dir=str(all_dir)).run(small_module())
    assert sorted(os.listdir(all_dir)) == [f"{i + 1:02d}_{n}.tl" for i, n in enumerate(CPU_ORDER)]
    assert (all_dir / _dump_name("lower_tile_ops")).read_text().strip()


def _dump_name(pass_name: str) -> str:
    return f"{CPU_ORDER.index(pass_name) + 1:02d}_{pass_name}.tl"


def test_dump_without_dir_goes_to_stderr(capsys):
    PassManager(targets.get("cpu").pipeline(), dump_after=("dce",)).run(small_module())
    err = capsys.readouterr().err
    assert "# IR after pass dce" in err


def test_crashing_pass_writes_reproducer_and_raises_internal_error(tmp_path):
    def broken(mod):
        raise KeyError("boom")
    passes = [targets.get("cpu").pipeline()[0], Pass("broken", broken, "always fails")]
    with pytest.raises(InternalError) as info:
        PassManager(passes, dump_dir=str(tmp_path)).run(small_module())
    path = info.value.reproducer
    assert path and os.path.exists(path) and path.startswith(str(tmp_path))
    assert "broken" in str(info.value) and path in str(info.value)
    text = open(path).read()
    assert "IR before pass `broken`" in text and "KeyError" in text
    # The reproducer is .tl text: it parses back to the IR the failing pass was given.
    from tilelang.frontend import parse_module
    assert parse_module(text, path) == targets.get("cpu").pipeline()[0](small_module())


def test_internal_error_inside_a_pass_is_not_reworded_twice(tmp_path):
    def confused(mod):
        raise InternalError("lowering met a region it cannot pair")
    with pytest.raises(InternalError) as info:
        PassManager([Pass("confused", confused, "")], dump_dir=str(tmp_path)).run(
            small_module())
    text = str(info.value)
    assert text.count("internal compiler error") == 1
    assert "pass `confused` failed: lowering met a region" in text
    assert os.path.exists(info.value.reproducer)


def test_reproducer_goes_to_a_temp_dir_without_dump_dir():
    passes = [Pass("broken", lambda m: 1 // 0, "always fails")]
    with pytest.raises(InternalError) as info:
        PassManager(passes).run(small_module())
    assert os.path.exists(info.value.reproducer)


def test_user_error_from_a_pass_passes_through():
    def picky(mod):
        raise TileLangError(Diagnostic("TL0401", "user mistake"))
    with pytest.raises(TileLangError) as info:
        PassManager([Pass("picky", picky, "")]).run(small_module())
    assert info.value.code == "TL0401"


def test_verify_each_catches_a_pass_that_breaks_the_ir(tmp_path):
    def unbind(mod):
        func = mod.funcs[0]
        kern = func.body.stmts[0]
        bad_store = Store(tensor("B", (8,)), (Var("nowhere"),), Const(0.0, "float32"))
        return replace(mod, funcs=(replace(func, body=replace(
            func.body, stmts=(replace(kern, body=bad_store),))),))
    pm = PassManager([Pass("unbind", unbind, "")], verify_each=True, dump_dir=str(tmp_path))
    with pytest.raises(InternalError) as info:
        pm.run(small_module())
    assert "after `unbind` is ill-formed" in str(info.value)
    assert "'nowhere'" in str(info.value)
    assert os.path.exists(info.value.reproducer)
    # Without verify-each the broken IR goes through unnoticed.
    PassManager([Pass("unbind", unbind, "")]).run(small_module())


def test_ill_formed_input_is_written_as_the_reproducer(tmp_path):
    bad = PassManager([Pass("unbind", lambda m: m, "")], verify_each=True,
                      dump_dir=str(tmp_path))
    func = small_module().funcs[0]
    kern = func.body.stmts[0]
    broken = Module((replace(func, body=replace(func.body, stmts=(replace(
        kern, body=Store(tensor("B", (8,)), (Var("nowhere"),), Const(0.0, "float32"))),))),))
    with pytest.raises(InternalError) as info:
        bad.run(broken)
    assert "input to the pass pipeline is ill-formed" in str(info.value)
    assert info.value.reproducer == str(tmp_path / "00_input.repro.tl")
    assert "nowhere" in open(info.value.reproducer).read()


def test_pass_returning_a_non_module_is_an_internal_error():
    with pytest.raises(InternalError, match="returned NoneType"):
        PassManager([Pass("nothing", lambda m: None, "")]).run(small_module())


def test_lowering_stops_after_the_named_pass():
    lowered = lower(small_module(), make_options(verify_each=True), until="lower_tile_ops")
    assert not any(isinstance(n, Fill) for n in _walk(lowered))
    same = lower(small_module(), make_options(), until="simplify")
    assert any(isinstance(n, Fill) for n in _walk(same))
    with pytest.raises(TileLangError) as info:
        lower(small_module(), make_options(), until="nonsense")
    assert info.value.code == "TL0702" and "nonsense" in str(info.value)


def _walk(node):
    from tilelang.ir import walk
    return list(walk(node))
