"""tilelang.ops.gemm's interface: out=, num_threads=, tile_size=, errors, block choice."""
from __future__ import annotations

import numpy as np
import pytest

from tilelang.ops import fp8_gemm, gemm
from tilelang.ops.blocks import _BK_KEPT, _clamp, _even, choose_blocks, launch_threads
from tilelang.targets.cpu.machine import host


def test_out_and_threads_and_tile_size():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((130, 70)).astype(np.float32)
    b = rng.standard_normal((70, 90)).astype(np.float32)
    out = np.full((130, 90), np.nan, np.float32)
    got = gemm(a, b, out=out, num_threads=2, tile_size=64)
    assert got is out
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)
    half = gemm(a, b, out_dtype="float16")
    assert half.dtype == np.float16


@pytest.mark.parametrize("block", [None, (16, 32, 8)])
def test_an_empty_inner_dimension_gives_zeros(block):
    # no k step runs: C is still cleared and written back (the tiling pass sinks both
    # into the k loop's first and last iterations, and keeps them for a loop of none)
    out = np.full((37, 45), np.nan, np.float32)
    gemm(np.ones((37, 0), np.float32), np.ones((0, 45), np.float32), out=out, block=block)
    assert not out.any()


@pytest.mark.parametrize("call, message", [
    (lambda a, b: gemm(a, b, precision="fp4"), "unknown precision"),
    (lambda a, b: gemm(a, b.T), "inner dimensions differ"),
    (lambda a, b: gemm(a[0], b), "must be a matrix"),
    (lambda a, b: gemm(a, b, out=np.zeros((3, 3), np.float32)), "out must be"),
    (lambda a, b: gemm(a, b, block=(0, 8, 8)), "block sizes must be positive"),
    (lambda a, b: fp8_gemm(a, np.ones((4, 1)), b, np.ones((1, 1))), "float8_e4m3fn"),
])
def test_user_errors_are_value_errors_that_say_what_is_wrong(call, message):
    a = np.ones((4, 5), np.float32)
    b = np.ones((5, 6), np.float32)
    with pytest.raises(ValueError, match=message):
        call(a, b)


@pytest.mark.parametrize("shape", [(1, 1, 1), (256, 256, 256), (1025, 1025, 1025),
                                   (257, 4097, 513), (8192, 8192, 8192), (5000, 3, 70)])
@pytest.mark.parametrize("threads", [1, 2, 8])
def test_block_choice_wastes_little_and_feeds_every_thread(shape, threads):
    m, n, k = shape
    bm, bn, bk = choose_blocks(m, n, k, num_threads=threads)
    mr, nr = host().register_tile(32)
    nr = nr if n >= nr else host().lanes(32)     # a narrow C is cut in vectors
    assert bn % nr == 0 and bk >= 1
    gm, gn, gk = -(-m // bm), -(-n // bn), -(-k // bk)
    # padding past the edge is less than one row / register tile / k step per block (a
    # block's rows need not be a multiple of MR: its last ones are a tail tile)
    assert gm * bm - m < gm and gn * bn - n < gn * nr and gk * bk - k < gk
    assert gm * gn >= min(threads, -(-m // mr) * -(-n // host().lanes(32)))
    # a wide B tile does not cut BLOCK_K (one pass over C a k step) below 2/3 of the
    # L1-sized value it starts from
    l1_bk = _even(k, _clamp(host().l1d // (host().register_tile(32)[1] * 4), 64, 512), 1)
    assert bk >= int(l1_bk * _BK_KEPT) or bn <= nr


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_default_blocks_are_cut_for_the_threads_the_launch_will_use(threads, monkeypatch):
    monkeypatch.setenv("TILELANG_NUM_THREADS", str(threads))
    for shape in [(257, 4097, 513), (1000, 1000, 1000), (2048, 2048, 2048)]:
        assert choose_blocks(*shape) == choose_blocks(*shape, num_threads=threads)


def test_small_gemms_launch_on_fewer_threads(monkeypatch):
    monkeypatch.setenv("TILELANG_NUM_THREADS", "4")
    assert launch_threads(128, 128, 128, None) == 1          # 4 MFLOP: one thread
    assert launch_threads(320, 320, 320, None) == 2          # 66 MFLOP: two
    assert launch_threads(2048, 2048, 2048, None) == 4       # the default
    assert launch_threads(128, 128, 128, 3) == 3             # the caller's choice stands


def test_readme_library_block_runs_as_written():
    import re
    from pathlib import Path
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", readme, flags=re.S)
                 if "tilelang.ops" in b)
    scope: dict = {}
    exec(compile(block, "README.md", "exec"), scope)
    a, b = scope["a"].astype(np.float64), scope["b"].astype(np.float64)
    np.testing.assert_allclose(scope["c"], a @ b, rtol=1e-4, atol=1e-3)
    got, want = scope["c8"].astype(np.float64), a @ b
    assert 1 - 2 * (got * want).sum() / (got * got + want * want).sum() < 1e-3
