"""A kernel of several grids: one `@T.prim_func` whose `with T.Kernel` blocks (here from
two `@T.macro`s) run in order, the second reading what the first wrote into a
`T.alloc_global` workspace — parsed, printed, run on both targets, described by the
manifest and the C header, and called from C."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tilelang
from tilelang.frontend import parse_module
from tilelang.ir.printer import print_module

SPLIT_SUM = '''import tilelang.language as T

M = T.dynamic("M")
N = T.dynamic("N")
BLOCK = 16
SPLITS = 3


@T.macro
def partial_sums(X, part):
    with T.Kernel(SPLITS, M, threads=128) as (bx, by):
        x_s = T.alloc_fragment((BLOCK,), "float32")
        acc = T.alloc_fragment((1,), "float32")
        T.clear(acc)
        for t in range(T.ceildiv(N, BLOCK * SPLITS)):
            c0 = (t * SPLITS + bx) * BLOCK
            T.copy(X[by, c0:c0 + BLOCK], x_s)
            T.reduce_sum(x_s, acc, dim=0, clear=False)
        T.copy(acc, part[by, bx:bx + 1])


@T.macro
def combine(part, Y):
    with T.Kernel(M, threads=32) as bx:
        p_s = T.alloc_fragment((SPLITS,), "float32")
        y = T.alloc_fragment((1,), "float32")
        T.copy(part[bx, 0:SPLITS], p_s)
        T.reduce_sum(p_s, y, dim=0)
        T.copy(y, Y[bx:bx + 1])


@T.prim_func
def row_sums(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M,), "float32")):
    part = T.alloc_global((M, SPLITS), "float32")
    partial_sums(X, part)
    combine(part, Y)
'''


def _inputs(m=37, n=101, seed=0):
    x = np.random.default_rng(seed).standard_normal((m, n)).astype(np.float32)
    return x, np.full(m, np.nan, np.float32)


def test_two_grids_parse_and_print_round_trip():
    module = parse_module(SPLIT_SUM, "split.tl")
    (f,) = module.funcs
    assert [k.grid for k in f.grids()][1][0].name == "M"
    assert len(f.grids()) == 2 and [type(s).__name__ for s in f.prologue()] == ["Alloc"]
    text = print_module(module)
    assert text.count("with T.Kernel(") == 2
    assert parse_module(text, "printed.tl") == module


@pytest.mark.parametrize("threads", [1, 2])
def test_cpu_runs_the_grids_in_order(threads):
    k = tilelang.compile(SPLIT_SUM)
    x, y = _inputs()
    k(x, y, num_threads=threads)
    np.testing.assert_allclose(y, x.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)


def test_manifest_lists_each_grid_with_its_entries():
    k = tilelang.compile(SPLIT_SUM)
    entry = k.runtime_kernel.manifest
    grids = entry["grids"]
    assert [g["blocks"] for g in grids] == ["row_sums__blocks", "row_sums__grid1__blocks"]
    assert [g["num_blocks"] for g in grids] == ["row_sums__num_blocks",
                                                "row_sums__grid1__num_blocks"]
    assert grids[0]["grid"] == ["3", "M", "1"] and grids[1]["grid"] == ["M", "1", "1"]
    assert [g["threads"] for g in grids] == [128, 32]
    assert entry["grid"] == grids[0]["grid"]        # one-grid readers see the first


def test_a_manifest_without_grids_is_one_grid():
    from tilelang.runtime.manifest import parse
    entry = {"name": "k", "params": [], "grid": ["4", "1", "1"], "threads": 64}
    (spec,) = parse({"format": 1, "kernels": [entry]}, "<test>")["specs"]
    assert [(g.blocks, g.num_blocks) for g in spec.grids] == [("k__blocks", "k__num_blocks")]


C_MAIN = r"""
#include <math.h>
#include <stdio.h>
#include "row_sums.h"

int main(void) {
    enum { M = 9, N = 70 };
    float x[M * N], y[M];
    for (int i = 0; i < M * N; i++) x[i] = (float)(i % 7) - 3.0f;
    row_sums(x, y, M, N);
    for (int r = 0; r < M; r++) {
        double want = 0;
        for (int c = 0; c < N; c++) want += x[r * N + c];
        if (fabs(y[r] - want) > 1e-3) { printf("row %d: %f != %f\n", r, y[r], want); return 1; }
    }
    printf("c ok\n");
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_c_entry_runs_every_grid(tmp_path):
    src = tmp_path / "row_sums.tl"
    src.write_text(SPLIT_SUM)
    so = tmp_path / "row_sums.so"
    tilec = Path(sys.executable).with_name("tilec")
    proc = subprocess.run([str(tilec), "compile", str(src), "-o", str(so)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    header = so.with_suffix(".h").read_text()
    assert "2 grids run in order" in header
    assert "row_sums__grid1__blocks(const int64_t *args" in header
    (tmp_path / "main.c").write_text(C_MAIN)
    exe = tmp_path / "main"
    build = subprocess.run(["cc", "-std=c11", "-o", str(exe), str(tmp_path / "main.c"),
                            "-I", str(tmp_path), str(so), "-lm", f"-Wl,-rpath,{tmp_path}"],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == "c ok", run.stdout + run.stderr


def test_tcsim_runs_the_grids_in_order_and_reports_both():
    k = tilelang.compile(SPLIT_SUM, target="tcsim:tiny")
    x, y = _inputs(m=5, n=40)
    k(x, y)
    np.testing.assert_allclose(y, x.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)
    report = k.last_report
    assert report.blocks == 3 * 5 + 5               # both grids' blocks
    assert report.cycles > 0 and report.waves >= 2


def test_tcsim_artifact_of_two_grids_round_trips():
    from tilelang.driver import compile_source
    from tilelang.targets.tcsim.artifact import from_bytes
    lib = compile_source(SPLIT_SUM, "split.tl", target="tcsim:tiny")
    art = lib["row_sums"].artifact
    assert [p.name for p in art.programs] == ["row_sums", "row_sums__grid1"]
    back = from_bytes(art.to_bytes())
    assert back.programs == art.programs and back.header()["grids"][1]["grid"] == ["M", "1", "1"]
