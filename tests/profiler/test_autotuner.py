"""The autotuner with TileLang's API: @autotune on @jit, AutoTuner.from_kernel, configs as
a list or a callable, pruning, skipped configs, the disk cache, TILELANG_AUTOTUNE=0."""
import logging
import os
import time

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.autotuner import AutoTuner, autotune, default_configs

from .kernels import GATHER

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEMM = os.path.join(ROOT, "examples", "gemm.tl")


def ref(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)


def ref_t(a, b):
    return a.astype(np.float64) @ b.T.astype(np.float64)


def make_matmul_factory():
    """TileLang's builder form: every tuned parameter defaults to None."""
    def kernel(block_M=None, block_N=None, block_K=None, num_stages=None):
        M = N = K = 96

        @T.prim_func
        def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((N, K), "float32"),
                 C: T.Tensor((M, N), "float32")):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) \
                    as (bx, by):
                A_s = T.alloc_shared((block_M, block_K), "float32")
                B_s = T.alloc_shared((block_N, block_K), "float32")
                C_l = T.alloc_fragment((block_M, block_N), "float32")
                T.clear(C_l)
                for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                    T.copy(A[by * block_M, k * block_K], A_s)
                    T.copy(B[bx * block_N, k * block_K], B_s)
                    T.gemm(A_s, B_s, C_l, transpose_B=True)
                T.copy(C_l, C[by * block_M, bx * block_N])
        return main
    return kernel


CONFIGS = [{"block_M": m, "block_N": n, "block_K": 32, "num_stages": 2}
           for m in (32, 48, 96) for n in (32, 96)]


def test_from_kernel_builder_chain():
    result = (AutoTuner.from_kernel(kernel=make_matmul_factory(), configs=CONFIGS)
              .set_compile_args(out_idx=[-1], target="auto")
              .set_profile_args(supply_type=tilelang.TensorSupplyType.Auto, ref_prog=ref_t,
                                skip_check=False, rtol=1e-4, atol=1e-4)
              .run(warmup=1, rep=5))
    assert result.config in CONFIGS and result.latency > 0
    assert result.ref_latency > 0 and not result.from_cache
    assert result.measured == 3 and result.total == 6     # a small space: 3 measured
    a = np.random.rand(96, 96).astype(np.float32)
    b = np.random.rand(96, 96).astype(np.float32)
    np.testing.assert_allclose(result.kernel(a, b), ref_t(a, b), rtol=1e-4, atol=1e-4)
    assert "T.gemm" in result.libcode and result.func.name == "main"
    assert result.kernel.config == result.config


def test_autotune_on_jit_with_callable_configs():
    seen = []

    def configs(M, N, K):
        seen.append((M, N, K))
        return [{"block_M": m, "block_N": 64} for m in (16, 32, 64)]

    @autotune(configs=configs, warmup=1, rep=5, ref_prog=ref, rtol=1e-4, atol=1e-4)
    @tilelang.jit(out_idx=[-1])
    def matmul(M, N, K, block_M=None, block_N=None, block_K=32):
        @T.prim_func
        def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"),
                 C: T.Tensor((M, N), "float32")):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M)) as (bx, by):
                A_s = T.alloc_shared((block_M, block_K), "float32")
                B_s = T.alloc_shared((block_K, block_N), "float32")
                C_l = T.alloc_fragment((block_M, block_N), "float32")
                T.clear(C_l)
                for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                    T.copy(A[by * block_M, k * block_K], A_s)
                    T.copy(B[k * block_K, bx * block_N], B_s)
                    T.gemm(A_s, B_s, C_l)
                T.copy(C_l, C[by * block_M, bx * block_N])
        return main

    kernel = matmul(64, 64, 64)
    assert set(seen) == {(64, 64, 64)}                      # called with the arguments
    assert kernel.config["block_N"] == 64 and kernel.latency > 0
    assert matmul(64, 64, 64) is kernel                      # tuned once per call
    a = np.random.rand(64, 64).astype(np.float32)
    np.testing.assert_allclose(kernel(a, a), ref(a, a), rtol=1e-4, atol=1e-4)
    direct = matmul(64, 64, 64, block_M=16, block_N=16)      # every tuned name given
    assert not hasattr(direct, "latency")
    np.testing.assert_allclose(direct(a, a), ref(a, a), rtol=1e-4, atol=1e-4)


def test_failing_config_is_skipped_with_its_diagnostic(caplog):
    bad = {"block_M": 32, "block_N": 32, "block_K": 32, "num_stages": "three"}
    configs = [bad] + CONFIGS[:2]
    with caplog.at_level(logging.WARNING, logger="tilelang.autotuner"):
        result = (AutoTuner.from_kernel(kernel=make_matmul_factory(), configs=configs)
                  .set_compile_args(out_idx=[-1])
                  .set_profile_args(ref_prog=ref_t, rtol=1e-4, atol=1e-4).run(warmup=1, rep=3))
    assert result.config in CONFIGS[:2]
    assert [c for c, _ in result.skipped] == [bad]
    assert "error[TL" in result.skipped[0][1]                 # the rendered diagnostic
    assert any("skipped" in r.message and "error[TL" in r.message for r in caplog.records)


def test_wrong_results_are_skipped():
    result = (AutoTuner.from_kernel(kernel=make_matmul_factory(), configs=CONFIGS[:3])
              .set_compile_args(out_idx=[-1])
              .set_profile_args(ref_prog=lambda a, b: ref_t(a, b) + 1.0, rtol=1e-4, atol=1e-4))
    with pytest.raises(RuntimeError, match="no configuration compiled and passed"):
        result.run(warmup=1, rep=3)


def test_unknown_config_key_is_tilelangs_error():
    tuner = AutoTuner.from_kernel(kernel=make_matmul_factory(),
                                  configs=[{"block_M": 32, "blockN": 32}])
    with pytest.raises(ValueError, match="Unused keys in config"):
        tuner.run()


def test_disk_cache_makes_the_second_run_instant():
    configs = default_configs(GEMM, M=128, N=128, K=128)
    assert len(configs) >= 10

    def tuner():
        return (AutoTuner.from_kernel(kernel=GEMM, configs=configs)
                .set_compile_args(out_idx=[-1])
                .set_profile_args(sizes={"M": 128, "N": 128, "K": 128}, ref_prog=ref,
                                  rtol=1e-4, atol=1e-4))
    first = tuner().run(warmup=1, rep=3)
    assert first.measured <= 0.3 * len(configs) + 1e-9 or first.measured == 3
    start = time.perf_counter()
    second = tuner().run(warmup=1, rep=3)
    assert time.perf_counter() - start < 1.0
    assert second.from_cache and second.config == first.config
    a = np.random.rand(128, 128).astype(np.float32)
    np.testing.assert_allclose(second.kernel(a, a), ref(a, a), rtol=1e-4, atol=1e-4)


def test_autotune_off_takes_the_first_config(monkeypatch):
    monkeypatch.setenv("TILELANG_AUTOTUNE", "0")
    result = (AutoTuner.from_kernel(kernel=make_matmul_factory(), configs=CONFIGS)
              .set_compile_args(out_idx=[-1]).run())
    assert result.config == CONFIGS[0] and result.measured == 0 and result.latency is None


def test_tcsim_tuning_is_deterministic_and_follows_the_simulator():
    configs = [{"NUM_STAGES": s, "BLOCK_K": 64} for s in (1, 2, 3, 4)]
    result = (AutoTuner.from_kernel(kernel=GEMM, configs=configs)
              .set_compile_args(out_idx=[-1], target="tcsim:tiny")
              .set_profile_args(sizes={"M": 256, "N": 256, "K": 512},
                                ref_prog=ref, rtol=1e-2, atol=1e-2).run())
    assert result.config["NUM_STAGES"] >= 2           # one stage never overlaps loads
    times = result.timings
    assert result.latency == min(times.values())


def test_model_ranks_what_it_should():
    """The pruning model puts whole-register-tile blocks that fit the caches ahead of
    tiny blocks that re-pack B for every few rows."""
    from tilelang import targets
    from tilelang.autotuner.sources import TextSource
    src = TextSource(open(GEMM).read(), GEMM)
    sizes = {"M": 512, "N": 512, "K": 512}

    def estimate(c):
        k = src.kernel(c)
        return targets.get("cpu").profile_runner().model_time(k, k._func(), sizes, 2)
    big = estimate({"BLOCK_M": 112, "BLOCK_N": 256, "BLOCK_K": 256})
    tiny = estimate({"BLOCK_M": 8, "BLOCK_N": 32, "BLOCK_K": 16})
    assert big < tiny


def test_default_spaces():
    cpu = default_configs("gemm", M=1024, N=1024, K=1024)
    assert len(cpu) == 100 and set(cpu[0]) == {"BLOCK_M", "BLOCK_N", "BLOCK_K"}
    small = default_configs("gemm", M=30, N=30, K=30)
    assert all(c["BLOCK_K"] == 64 for c in small)          # clipped to the problem
    sim = default_configs(GEMM, target="tcsim:h100_like", M=1024, N=1024, K=1024)
    assert {c["NUM_STAGES"] for c in sim} == {1, 2, 3, 4}
    vec = default_configs(os.path.join(ROOT, "examples", "vector_add.tl"))
    assert [c["BLOCK"] for c in vec] == [256, 512, 1024, 2048, 4096]
    with pytest.raises(ValueError, match="no default search space"):
        default_configs(GATHER)                              # literal block sizes only


@pytest.mark.slow
def test_readme_tuning_block_runs_as_written(tmp_path):
    """The README's "Tuning a kernel" Python block, run as written from the repository
    root (a fresh cache: it really tunes)."""
    import re
    import subprocess
    import sys
    readme = open(os.path.join(ROOT, "README.md")).read()
    block = next(b for b in re.findall(r"```python\n(.*?)```", readme, flags=re.S)
                 if "@autotune" in b)
    env = dict(os.environ, TILELANG_CACHE_DIR=str(tmp_path))
    script = tmp_path / "tuning.py"             # kernels are parsed from their source file
    script.write_text(block)
    proc = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "measured" in proc.stdout


def test_tilelang_example_spelling():
    """The calls a TileLang autotune example makes, spelled as it spells them: a builder
    whose tuned parameters default to None (thread count, a rasterisation flag used in
    `T.use_swizzle`), the chained setters with `backend=`, `.run(warmup=3, rep=20)`,
    then the profiler on the best kernel."""
    import itertools
    import tilelang as tl

    def ref_program(A, B):
        return (A.astype(np.float32) @ B.T.astype(np.float32)).astype(np.float16)

    def get_configs():
        return [{"block_M": m, "block_N": n, "block_K": 32, "num_stages": s, "thread_num": t,
                 "enable_rasteration": r}
                for m, n, s, t, r in itertools.product((32, 64), (32, 64), (0, 2), (128,),
                                                       (True, False))]

    M = N = K = 64

    def kernel(block_M=None, block_N=None, block_K=None, num_stages=None, thread_num=None,
               enable_rasteration=None):
        dtype = T.float16
        accum_dtype = T.float32

        @T.prim_func
        def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype),
                 C: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M),
                          threads=thread_num) as (bx, by):
                A_shared = T.alloc_shared((block_M, block_K), dtype)
                B_shared = T.alloc_shared((block_N, block_K), dtype)
                C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
                T.use_swizzle(panel_size=10, enable=enable_rasteration)
                T.clear(C_local)
                for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                    T.copy(A[by * block_M, k * block_K], A_shared)
                    T.copy(B[bx * block_N, k * block_K], B_shared)
                    T.gemm(A_shared, B_shared, C_local, transpose_B=True)
                T.copy(C_local, C[by * block_M, bx * block_N])
        return main

    result = (AutoTuner.from_kernel(kernel=kernel, configs=get_configs())
              .set_compile_args(out_idx=[-1], target="auto")
              .set_profile_args(supply_type=tl.TensorSupplyType.Auto, ref_prog=ref_program,
                                skip_check=False, backend="event")
              .run(warmup=3, rep=20))
    profiler = result.kernel.get_profiler(tensor_supply_type=tl.TensorSupplyType.Auto)
    assert profiler.do_bench(backend="event") > 0
    assert profiler.do_bench(ref_program, backend="event") > 0
    profiler.assert_allclose(ref_program, atol=1e-2, rtol=1e-2)
    assert set(result.config) == set(get_configs()[0])
