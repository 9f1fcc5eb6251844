"""The exported entry points, the manifest, workspaces, the C header and errors."""
import ctypes
import json
import os
import subprocess

import numpy as np
import pytest

from .irb import (Alloc, Atomic, Call, Cast, Let, bin, build, c, kernel_func, load, loop,
                 seq, store, tensor, v)
from tilelang.codegen.llvm import c_header, compile_module, find_c_compiler, link_shared
from tilelang.diagnostics import TileLangError
from tilelang.ir.nodes import Copy, Module, Region


def grid_ids():
    """out[bz, by, bx] = linear block id, over a (gx, gy, gz) grid from symbols."""
    X, Y, Z = v("X"), v("Y"), v("Z")
    bx, by, bz = v("bx"), v("by"), v("bz")
    out = tensor("out", [Z, Y, X], "int64")
    lin = bin("+", bin("*", bin("+", bin("*", bz, Y), by), X), bx)
    return kernel_func("ids", [out], [X, Y, Z], [bx, by, bz],
                       store(out, [bz, by, bx], Cast(lin, "int64")), symbols=[X, Y, Z])


def scaled():
    """y[i] = alpha * x[i] + offset (+1 when flag), with scalars of several dtypes,
    a prologue Let and a zeroed global workspace."""
    N, i, b = v("N"), v("i"), v("b")
    alpha, offset, flag, h = v("alpha", "float32"), v("offset", "int32"), v("flag", "bool"), \
        v("h", "float16")
    x, y = tensor("x", [N]), tensor("y", [N])
    ws = tensor("ws", [bin("*", N, 2)], "float32")
    n2 = v("n2")
    val = bin("+", bin("*", alpha, load(x, i)), Cast(offset, "float32"))
    val = bin("+", val, Cast(flag, "float32"))
    val = bin("+", val, Cast(h, "float32"))
    body = seq(Let(i, b), Atomic("add", ws, (i,), val),
               store(y, [i], load(ws, i)))
    return kernel_func("scaled", [x, alpha, offset, flag, h, y], [n2], [b], body,
                       symbols=[N], prologue=[Let(n2, bin("//", bin("*", N, 2), 2)),
                                              Alloc(ws)])


@pytest.fixture(scope="module")
def lib():
    return build(grid_ids(), scaled())


def test_manifest_describes_the_kernels(lib):
    m = lib.manifest
    assert m["format"] == 1 and m["compiler_version"]
    assert set(m["target"]) == {"triple", "cpu", "features"}
    ids = lib.kernel("ids")
    assert ids["params"] == [{"name": "out", "kind": "tensor", "dtype": "int64",
                              "shape": ["Z", "Y", "X"], "access": "write"}]
    assert ids["symbols"] == ["X", "Y", "Z"] and ids["grid"] == ["X", "Y", "Z"]
    sc = lib.kernel("scaled")
    assert [p["kind"] for p in sc["params"]] == ["tensor", "scalar", "scalar", "scalar",
                                                 "scalar", "tensor"]
    assert sc["params"][1] == {"name": "alpha", "kind": "scalar", "dtype": "float32"}
    assert sc["workspaces"] == [{"name": "ws", "dtype": "float32", "shape": ["N * 2"]}]
    assert sc["grid"] == ["n2", "1", "1"]
    assert sc["lets"] == [{"name": "n2", "expr": "N * 2 // 2"}]
    assert [p.get("access") for p in sc["params"]] == ["read", None, None, None, None, "write"]


def test_embedded_manifest_matches(lib):
    fn = lib.lib.tilelang_manifest
    fn.restype = ctypes.c_char_p
    assert json.loads(fn().decode()) == lib.manifest


def test_num_blocks_and_block_ranges(lib):
    gx, gy, gz = 5, 3, 2
    out = np.full((gz, gy, gx), -1, np.int64)
    args = lib.args_array("ids", out, gx, gy, gz)
    assert lib.num_blocks("ids", args) == 30
    lib.blocks("ids", args, 7, 19)               # only blocks 7..18 run
    flat = out.ravel()
    np.testing.assert_array_equal(flat[7:19], np.arange(7, 19))
    assert (flat[:7] == -1).all() and (flat[19:] == -1).all()
    lib.blocks("ids", args, 0, 30)
    np.testing.assert_array_equal(flat, np.arange(30))


def test_c_entry_runs_whole_grid(lib):
    out = np.full((2, 3, 4), -1, np.int64)
    lib.call("ids", out, 4, 3, 2)
    np.testing.assert_array_equal(out.ravel(), np.arange(24))


def test_scalars_and_workspace_through_args(lib):
    n = 37
    x = np.linspace(-3, 3, n).astype(np.float32)
    y = np.zeros(n, np.float32)
    ws = np.zeros(2 * n, np.float32)             # the caller provides the workspace
    h = 0.1                                      # rounded to float16 by the kernel
    args = lib.args_array("scaled", x, 2.5, -4, 1, h, y, n, ws)
    assert lib.num_blocks("scaled", args) == n
    lib.blocks("scaled", args, 0, n)
    want = np.float32(2.5) * x - 4 + 1 + np.float32(np.float16(h))
    np.testing.assert_allclose(y, want, rtol=1e-6)
    np.testing.assert_allclose(ws[:n], want, rtol=1e-6)
    assert not ws[n:].any()


def test_c_entry_allocates_zeroed_workspace(lib):
    n = 50
    x = np.arange(n, dtype=np.float32)
    y = np.zeros(n, np.float32)
    for _ in range(2):                           # fresh zeroed workspace each call
        lib.call("scaled", x, 0.5, 3, False, -1.0, y, n)
        np.testing.assert_allclose(y, 0.5 * x + 3 - 1, rtol=1e-6)


def test_opt_levels_agree():
    for opt in (0, 1, 2):
        mod = build(grid_ids(), opt=opt)
        out = np.zeros((1, 2, 3), np.int64)
        mod.call("ids", out, 3, 2, 1)
        np.testing.assert_array_equal(out.ravel(), np.arange(6))


@pytest.mark.skipif(find_c_compiler() is None, reason="no C compiler")
def test_c_header_compiles_and_calls_kernel(lib, tmp_path):
    header = c_header(lib.manifest)
    (tmp_path / "k.h").write_text(header)
    assert "void scaled(const float *x, float alpha, int32_t offset, bool flag, float h, " \
           "float *y, int64_t N);" in header
    (tmp_path / "main.c").write_text(r'''
#include <stdio.h>
#include <string.h>
#include "k.h"
int main(void) {
    const float x[4] = {1, 2, 3, 4};
    float y[4] = {0};
    int64_t out[6];
    scaled(x, 2.0f, 1, true, 0.0f, y, 4);
    ids(out, 3, 2, 1);
    printf("%g %g %g %g %lld %lld %d\n", y[0], y[1], y[2], y[3], (long long)out[5],
           (long long)ids__num_blocks((const int64_t[]){0, 3, 2, 1}),
           strstr(tilelang_manifest(), "\"scaled\"") != NULL);
    return 0;
}
''')
    exe = tmp_path / "main"
    subprocess.run([find_c_compiler(), "-std=c11", "-Wall", "-Werror", "-o", str(exe),
                    str(tmp_path / "main.c"), lib.path, f"-Wl,-rpath,{os.path.dirname(lib.path)}"],
                   check=True, capture_output=True, text=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    assert out.split() == ["4", "6", "8", "10", "5", "6", "1"]


def test_header_is_valid_cplusplus_guarded(lib):
    header = c_header(lib.manifest)
    assert header.count("#ifndef TILELANG_") == 1 and 'extern "C"' in header
    assert "int64_t ids__num_blocks(const int64_t *args);" in header
    assert "void ids__blocks(const int64_t *args, int64_t begin, int64_t end);" in header


# ----------------------------------------------------------------------------- errors

def test_tile_op_reaching_codegen_is_TL0501():
    A, B, bx = tensor("A", [8]), tensor("B", [8]), v("bx")
    copy = Copy(Region(A, (c(0),), (8,)), Region(B, (c(0),), (8,)))
    with pytest.raises(TileLangError) as e:
        compile_module(Module((kernel_func("k", [A, B], [1], [bx], copy),)))
    assert e.value.code == "TL0501"


def test_dynamic_local_buffer_is_TL0503():
    N, bx = v("N"), v("bx")
    A = tensor("A", [N])
    local = tensor("tmp", [N], "float32", "local")
    body = seq(Alloc(local), store(local, [0], c(1.0)))
    with pytest.raises(TileLangError) as e:
        compile_module(Module((kernel_func("k", [A], [1], [bx], body, symbols=[N]),)))
    assert e.value.code == "TL0503"


def test_bad_triple_is_TL0504():
    with pytest.raises(TileLangError) as e:
        compile_module(Module((grid_ids(),)), triple="nonsense-unknown-nowhere")
    assert e.value.code == "TL0504"


def test_int_exp_is_TL0502():
    N, i, bx = v("N"), v("i"), v("bx")
    A = tensor("A", [N], "int32")
    body = loop(i, N, store(A, [i], Call("exp", (load(A, i),), "int32")))
    with pytest.raises(TileLangError) as e:
        compile_module(Module((kernel_func("k", [A], [1], [bx], body, symbols=[N]),)))
    assert e.value.code == "TL0502"


def test_cross_compile_object_for_aarch64():
    obj = compile_module(Module((grid_ids(),)), triple="aarch64-unknown-linux-gnu",
                         cpu="generic")
    assert obj.object[:4] == b"\x7fELF" and obj.manifest["target"]["triple"].startswith("aarch64")
    assert "ids__blocks" in obj.asm


@pytest.mark.skipif(find_c_compiler() is None, reason="no C compiler")
def test_link_failure_is_TL0506(tmp_path):
    with pytest.raises(TileLangError) as e:
        link_shared(b"not an object file", str(tmp_path / "bad.so"))
    assert e.value.code == "TL0506"
    assert not list(tmp_path.iterdir())          # no half-written library left behind


def test_runtime_loads_and_runs_the_library(lib):
    """The compiler-free runtime binds arguments from our manifest alone."""
    from tilelang.runtime.artifact import load
    rt = load(lib.path)
    x = np.linspace(0, 1, 20).astype(np.float32)
    y = np.zeros(20, np.float32)
    rt["scaled"](x, 3.0, 2, True, 0.5, y)       # N bound from shapes, workspace allocated
    np.testing.assert_allclose(y, 3 * x + 2 + 1 + 0.5, rtol=1e-6)
    out = np.zeros((2, 3, 4), np.int64)
    rt["ids"](out)
    np.testing.assert_array_equal(out.ravel(), np.arange(24))


@pytest.mark.parametrize("opts", [{"cpu": "znver99"}, {"cpu": "znver3", "features": "+avx2,+nosuch"}])
def test_unknown_cpu_or_feature_is_TL0504(opts):
    with pytest.raises(TileLangError) as e:
        compile_module(Module((grid_ids(),)), **opts)
    assert e.value.code == "TL0504"
    assert ("znver99" if "features" not in opts else "+nosuch") in str(e.value)
