"""@tilelang.jit's keywords: TileLang's options are options, anything else an error; the
factory's arguments (or defines=) set constants; pass_configs apply what means something
here."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.diagnostics import TileLangError

from .helpers import close, randn


def make_scale(**jit_kwargs):
    @tilelang.jit(out_idx=[-1], **jit_kwargs)
    def scale(N, verbose=1.0, block=32):
        @T.prim_func
        def kernel(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
            with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
                for i in T.Parallel(block):
                    Y[bx * block + i] = X[bx * block + i] * verbose
        return kernel
    return scale


def test_a_jit_option_does_not_replace_a_factory_argument(target):
    # `verbose` is an option of @tilelang.jit: it used to become a constant and
    # override the factory's own argument of that name
    scale = make_scale(verbose=3)
    x = randn(64)
    close(scale(64, verbose=2.0)(x), 2 * x)


def test_unknown_keyword_is_an_error_naming_the_options():
    with pytest.raises(TileLangError) as info:
        make_scale(block=64)
    d = info.value.diagnostics[0]
    assert info.value.code == "TL0780" and "`block`" in d.message
    assert "defines=" in d.help and "out_idx" in d.notes[0]


def test_misspelt_option_gets_a_suggestion():
    with pytest.raises(TileLangError) as info:
        make_scale(pass_config={})
    assert "pass_configs" in info.value.diagnostics[0].help


def test_defines_set_a_constant_the_factory_does_not_take(target):
    @tilelang.jit(out_idx=[-1], defines={"FACTOR": 4.0})
    def scale(N):
        @T.prim_func
        def kernel(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                for i in T.Parallel(N):
                    Y[i] = X[i] * FACTOR
        return kernel
    x = randn(16)
    close(scale(16)(x), 4 * x)


FACTOR = 1.0


def test_defines_may_not_name_a_factory_argument():
    with pytest.raises(TileLangError) as info:
        make_scale(defines={"block": 64})
    assert info.value.code == "TL0780" and "parameter" in info.value.diagnostics[0].message


def test_tilelang_options_are_accepted(target, tmp_path):
    scale = make_scale(target="auto", target_host="c", execution_backend="cython",
                       compile_flags=["-O3"], debug_root_path=str(tmp_path))
    x = randn(64)
    close(scale(64, verbose=1.5)(x), 1.5 * x)
    (written,) = tmp_path.iterdir()
    assert "def kernel(" in written.read_text()      # the kernel's IR, as .tl text


def test_pass_configs_fast_math_is_applied_and_gpu_keys_accepted(target):
    scale = make_scale(pass_configs={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True,
                                     tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True,
                                     "tl.disable_tma_lower": True})
    k = scale(64, verbose=0.5)
    assert k.options.fast_math
    if target == "cpu":
        assert "reassoc" in k.llvm()
    x = randn(64)
    close(k(x), 0.5 * x)


def test_tilelang_compile_takes_the_jit_options(target, tmp_path, capsys):
    """`tilelang.compile(program, out_idx=..., target="cuda", pass_configs=...,
    execution_backend=...)` as TileLang's examples call it on a factory's prim_func."""
    program = make_scale().factory(64, verbose=2.0)
    k = tilelang.compile(program, out_idx=-1, target="cuda", execution_backend="cython",
                         pass_configs={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True},
                         verbose=True, debug_root_path=str(tmp_path))
    assert k.options.fast_math and "tilelang.compile: compiled" in capsys.readouterr().err
    assert "def kernel(" in next(tmp_path.iterdir()).read_text()
    x = randn(64)
    close(k(x), 2.0 * x)
    with pytest.raises(TileLangError) as info:
        tilelang.compile(program, pass_configs={"tl.enable_fast_maths": True})
    assert info.value.code == "TL0781"


def test_pass_configs_can_turn_memory_reuse_off():
    k = make_scale(pass_configs={"tl.disable_shared_memory_reuse": True})(32)
    assert k.options.memory_reuse is False


def test_unknown_pass_config_key_is_an_error():
    with pytest.raises(TileLangError) as info:
        make_scale(pass_configs={"tl.enable_fast_maths": True})
    assert info.value.code == "TL0781" and "tl.enable_fast_math" in \
        info.value.diagnostics[0].help


def test_a_factory_compiles_anew_for_another_default_target(monkeypatch):
    # TILELANG_TARGET names the default target; a factory called again after it
    # changed must not hand back the kernel it compiled for the other target
    scale = make_scale()
    x = randn(64)
    kernels = {}
    for spec in ("cpu", "tcsim:tiny", "cpu"):
        monkeypatch.setenv("TILELANG_TARGET", spec)
        k = scale(64)
        close(k(x), x)
        kernels.setdefault(spec, k)
        assert kernels[spec] is k                       # one compile per target
        assert type(k.options.target).__name__ == ("CpuTarget" if spec == "cpu" else
                                                   "TcsimTarget")
    pinned = make_scale(target="cpu")                   # a named target ignores the variable
    assert type(pinned(64).options.target).__name__ == "CpuTarget"
