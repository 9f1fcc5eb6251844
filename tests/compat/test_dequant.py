"""What dequantizing kernels use: plain Python helpers called on kernel expressions
(inlined, as TileLang's parser evaluates them), `tvm.tir` / `tvm.tirx` functions
(`tirx.const`, `tirx.reinterpret`, `tirx.Select`, `tirx.Cast`), the bit cast
`T.reinterpret`, bit arithmetic on the 16- and 32-bit integer dtypes, helpers that build a
macro at compile time, macro defaults and `T.alloc_buffer` workspaces."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import tvm as tvm
from tilelang.diagnostics import TileLangError
from tvm import DataType, tirx

from .helpers import close, randn

RNG = np.random.default_rng(13)


# --------------------------------------------------------------- fp4 (s1e2m1) -> float16

def fp4_bits_to_f16(nbit: int, val: tirx.PrimExpr, pos: tirx.PrimExpr, dtype: str):
    """One 4-bit float of the byte `val` (nibble `pos`) as float16: its sign, exponent
    (rebiased by 14) and mantissa moved into place, then the bits read as float16."""
    assert nbit == 4 and dtype == T.float16 and val.dtype == T.uint8
    f4 = (val >> (pos.astype(T.uint16) * tirx.const(nbit, T.uint16))) & tirx.const(15, T.uint16)
    sign = f4 >> tirx.const(3, T.uint16)
    exp = ((f4 & tirx.const(6, T.uint16)) >> tirx.const(1, T.uint16)) + tirx.const(14, T.uint16)
    man = f4 & tirx.const(1, T.uint16)
    bits = ((exp | (sign << tirx.const(5, T.uint16))) << tirx.const(10, T.uint16)) | (man << 9)
    return tirx.reinterpret(T.float16, bits.astype(T.uint16))


def fp4_reference(q):
    q = q.astype(np.uint16)
    f4 = np.stack([q & 15, q >> 4], axis=-1).reshape(q.shape[0], -1)
    bits = ((((f4 & 6) >> 1) + 14) | ((f4 >> 3) << 5)) << 10 | ((f4 & 1) << 9)
    return bits.astype(np.uint16).view(np.float16)


@tilelang.jit(out_idx=[1])
def decode_fp4(N, K, block_N=16, block_K=32):
    @T.prim_func
    def main(B: T.Tensor((N, K // 2), T.uint8), C: T.Tensor((N, K), T.float16)):
        with T.Kernel(T.ceildiv(N, block_N), threads=128) as bx:
            B_local = T.alloc_fragment((block_N, block_K // 2), T.uint8)
            C_local = T.alloc_fragment((block_N, block_K), T.float16)
            for k in T.Pipelined(K // block_K, num_stages=1):
                T.copy(B[bx * block_N, k * block_K // 2], B_local)
                for i, j in T.Parallel(block_N, block_K):
                    C_local[i, j] = fp4_bits_to_f16(4, B_local[i, j // 2], j % 2, dtype=T.float16)
                T.copy(C_local, C[bx * block_N, k * block_K])
    return main


def test_fp4_decode_helper_is_inlined_bit_exact(target):
    q = RNG.integers(0, 256, (32, 32)).astype(np.uint8)
    out = decode_fp4(32, 64)(q)
    np.testing.assert_array_equal(out.view(np.uint16), fp4_reference(q).view(np.uint16))


# --------------------------------------------------------------- int4 -> int8 (signed)

def i4_to_i8(val, pos):
    i4 = (val >> (pos.astype(T.uint8) * tirx.const(4, T.uint8))) & tirx.const(15, T.uint8)
    shifted = tirx.reinterpret(T.int8, i4 << tirx.const(4, T.uint8))
    return shifted >> tirx.const(4, T.int8)          # arithmetic: the sign comes back


@tilelang.jit(out_idx=[-1])
def dequant_gemm_i4(M, N, K, block=32):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.int8), B: T.Tensor((N, K // 2), T.uint8),
             C: T.Tensor((M, N), T.int32)):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            A_s = T.alloc_shared((block, K), T.int8)
            B_s = T.alloc_shared((block, K // 2), T.uint8)
            B_deq = T.alloc_fragment((block, K), T.int8)
            acc = T.alloc_fragment((block, block), T.int32)
            T.clear(acc)
            T.copy(A[by * block, 0], A_s)
            T.copy(B[bx * block, 0], B_s)
            for i, j in T.Parallel(block, K):
                B_deq[i, j] = i4_to_i8(B_s[i, j // 2], j % 2)
            T.gemm(A_s, B_deq, acc, transpose_B=True)
            T.copy(acc, C[by * block, bx * block])
    return main


def test_int4_gemm_sign_extends_through_reinterpret(target):
    M, N, K = 32, 64, 64
    a = RNG.integers(-128, 128, (M, K)).astype(np.int8)
    q = RNG.integers(0, 256, (N, K // 2)).astype(np.uint8)
    nib = np.stack([q & 15, q >> 4], axis=-1).reshape(N, K).astype(np.int64)
    b = np.where(nib >= 8, nib - 16, nib)
    np.testing.assert_array_equal(dequant_gemm_i4(M, N, K)(a, q), a.astype(np.int64) @ b.T)


# --------------------------------------------------------------- round trips, wide ints

@tilelang.jit(out_idx=[-1])
def bit_round_trip(N):
    @T.prim_func
    def main(X: T.Tensor((N,), T.float32), Y: T.Tensor((N, 4), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(N):
                u = T.reinterpret(T.uint32, X[i])
                # clear the sign bit: |x|; flip it: -x
                Y[i, 0] = T.reinterpret(T.float32, u & tirx.const(0x7FFFFFFF, T.uint32))
                Y[i, 1] = tirx.reinterpret(T.float32, u ^ tirx.const(0x80000000, T.uint32))
                Y[i, 2] = tirx.Select(X[i] > 0, tirx.Cast(T.float32, u >> 23),
                                      T.float32(0))
                h = T.reinterpret(T.int16, X[i].astype(T.float16))
                Y[i, 3] = tirx.if_then_else(h < 0, T.float32(-1), T.float32(1))
    return main


def test_reinterpret_round_trips_and_tir_functions(target):
    x = randn(24) * 100
    y = bit_round_trip(24)(x)
    close(y[:, 0], np.abs(x), 0, 0)
    close(y[:, 1], -x, 0, 0)
    close(y[:, 2], np.where(x > 0, x.view(np.uint32) >> 23, 0), 0, 0)
    close(y[:, 3], np.where(x.astype(np.float16).view(np.int16) < 0, -1, 1), 0, 0)


# --------------------------------------------------------------- helpers that build macros

def make_scale_macro(factor=2.0, offset=0.0):
    """Run by Python at compile time (its arguments are constants): returns a macro."""
    def scaled(x):
        return x * factor + offset

    @T.macro
    def scale_rows(src, dst, bias=1.0):
        for i, j in T.Parallel(8, 16):
            dst[i, j] = scaled(src[i, j]) + bias
    return scale_rows


@tilelang.jit(out_idx=[-1])
def via_macro_factory(fast=False):
    @T.prim_func
    def main(X: T.Tensor((8, 16), T.float32), Y: T.Tensor((8, 16), T.float32)):
        W = T.alloc_buffer((8, 16), T.float32)          # a workspace in global memory
        with T.Kernel(1, threads=32) as bx:
            xs = T.alloc_shared((8, 16), T.float32)
            ys = T.alloc_fragment((8, 16), T.float32)
            T.copy(X, xs)
            if fast:
                thread_level_only()                     # never built: the branch is not taken
            else:
                make_scale_macro(3.0, offset=0.5)(xs, ys)
            T.copy(ys, W)
        with T.Kernel(1, threads=32) as bx:
            T.copy(W, Y)
    return main


def thread_level_only():
    raise AssertionError("not called")


def test_helper_returning_a_macro_with_defaults_and_workspace(target):
    x = randn(8, 16)
    close(via_macro_factory()(x), x * 3.0 + 0.5 + 1.0, 1e-6, 1e-6)


# --------------------------------------------------------------- errors, Python side

def test_reinterpret_needs_equal_widths():
    @tilelang.jit(out_idx=[-1])
    def bad(N):
        @T.prim_func
        def main(X: T.Tensor((N,), T.float32), Y: T.Tensor((N,), T.uint16)):
            with T.Kernel(1) as bx:
                for i in T.Parallel(N):
                    Y[i] = T.reinterpret(T.uint16, X[i])
        return main
    with pytest.raises(TileLangError) as info:
        bad(8)
    assert "one width" in str(info.value) and "float32 as uint16" in str(info.value)


def test_unknown_tir_function_is_named():
    @tilelang.jit(out_idx=[-1])
    def bad(N):
        @T.prim_func
        def main(X: T.Tensor((N,), T.float32), Y: T.Tensor((N,), T.float32)):
            with T.Kernel(1) as bx:
                for i in T.Parallel(N):
                    Y[i] = tirx.call_extern("f", X[i])
        return main
    with pytest.raises(TileLangError) as info:
        bad(8)
    assert "`tir.call_extern` is not available" in str(info.value)


def test_tvm_names_in_python():
    assert DataType(T.bfloat16).bits == 16 and DataType("uint32").is_uint()
    assert T.uint == "uint32" and DataType(T.uint).bits == 32
    assert tvm.tirx is tvm.tir
    with pytest.raises(RuntimeError, match="kernel code"):
        tirx.const(1, T.uint16)


def store_twice(dst, src, n):
    """A plain helper used as a statement: inlined like a macro."""
    for i in T.Parallel(n):
        dst[i] = src[i] * 2


@tilelang.jit(out_idx=[-1])
def helper_statement(N):
    @T.prim_func
    def main(X: T.Tensor((N,), T.float32), Y: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            xs = T.alloc_fragment((N,), T.float32)
            T.copy(X, xs)
            store_twice(Y, xs, N)
    return main


def test_plain_helper_as_a_statement(target):
    x = randn(16)
    close(helper_statement(16)(x), 2 * x, 0, 0)


# --------------------------------------------------------------- IR: text, interpreter

REINTERPRET_TL = '''import tilelang.language as T

@T.prim_func
def k(A: T.Tensor((8,), "uint16"), B: T.Tensor((8,), "float16"), C: T.Tensor((8,), "int8")):
    with T.Kernel(1) as bx:
        for i in T.Parallel(8):
            B[i] = T.reinterpret("float16", A[i] | T.uint16(0x3C00))
            C[i] = T.reinterpret("int8", T.cast(A[i] & T.uint16(255), "uint8"))
'''


def test_reinterpret_prints_parses_and_interprets():
    from tilelang.frontend import parse_module
    from tilelang.ir import interp
    from tilelang.ir.printer import print_module
    mod = parse_module(REINTERPRET_TL, "k.tl")
    text = print_module(mod)
    assert 'T.reinterpret("float16", ' in text
    assert parse_module(text, "k2.tl") == mod
    a = RNG.integers(0, 2 ** 16, 8).astype(np.uint16)
    b, c = np.zeros(8, np.float16), np.zeros(8, np.int8)
    interp.run(mod, "k", [a, b, c])
    np.testing.assert_array_equal(b.view(np.uint16), a | 0x3C00)
    np.testing.assert_array_equal(c, (a & 255).astype(np.uint8).view(np.int8))


# --------------------------------------------------------------- block index in a macro,
# a helper's rebinding, scales, GPU target names

def exp2_scaled(nib, scale):
    """fp4 nibble -> bfloat16 with `scale` added to its exponent (clamped), the mxfp4
    decode: a Python helper that rebinds `e`, as Python code does."""
    e = ((nib & tirx.const(6, T.uint16)) >> tirx.const(1, T.uint16)) + tirx.const(126, T.uint16)
    e = T.min(e + scale, tirx.const(255, T.uint16))
    bits = (((nib >> 3) << 8 | e) << 7) | ((nib & tirx.const(1, T.uint16)) << 6)
    return tirx.reinterpret(T.bfloat16, bits.astype(T.uint16))


@tilelang.jit(out_idx=[-1], target="cuda")           # a GPU target: the default one here
def scaled_decode(N, K, block_N=16):
    @T.macro
    def decode(Q, Scale, out):
        bx = T.get_block_binding(0)
        for i, j in T.Parallel(block_N, K):
            out[i, j] = exp2_scaled(Q[bx * block_N + i, j].astype(T.uint16),
                                    Scale[bx * block_N + i, j // 32].astype(T.uint16))

    @T.prim_func
    def main(Q: T.Tensor((N, K), T.uint8), Scale: T.Tensor((N, K // 32), T.uint8),
             Y: T.Tensor((N, K), T.bfloat16)):
        with T.Kernel(T.ceildiv(N, block_N), threads=128) as bx:
            y = T.alloc_fragment((block_N, K), T.bfloat16)
            decode(Q, Scale, y)
            T.copy(y, Y[bx * block_N, 0])
    return main


def test_block_binding_scales_and_helper_rebinding(target):
    import ml_dtypes
    q = RNG.integers(0, 16, (32, 64)).astype(np.uint8)
    scale = RNG.integers(0, 200, (32, 2)).astype(np.uint8)
    s = np.repeat(scale, 32, axis=1).astype(np.int64)
    e = np.minimum(((q & 6) >> 1) + 126 + s, 255)
    bits = ((((q >> 3).astype(np.int64) << 8) | e) << 7) | ((q & 1).astype(np.int64) << 6)
    want = bits.astype(np.uint16).view(ml_dtypes.bfloat16)
    out = scaled_decode(32, 64)(q, scale)
    np.testing.assert_array_equal(out.view(np.uint16), want.view(np.uint16))


def test_sub_byte_dtypes_exist_for_python_only():
    assert T.int4 == "int4" and T.float4_e2m1fn == "float4_e2m1fn"

    @tilelang.jit(out_idx=[-1])
    def bad(N):
        @T.prim_func
        def main(X: T.Tensor((N,), T.int4), Y: T.Tensor((N,), T.int8)):
            with T.Kernel(1) as bx:
                T.copy(X, Y)
        return main
    with pytest.raises(TileLangError) as info:
        bad(8)
    assert "sub-byte" in str(info.value)


def test_tvm_target_description():
    from tvm.target import Target
    t = Target("hip -mcpu=gfx950")
    assert t.kind.name == "hip" and t.mcpu == "gfx950" and str(t) == "hip -mcpu=gfx950"


# --------------------------------------------------------------- tilelang.quantize

def twiddled_reference(words):
    """numpy: the twiddled fp4 decoder of tilelang.quantize (docstring of mxfp.py)."""
    import ml_dtypes
    b = words.reshape(-1, 4).astype(np.uint32)
    w = b[:, 0] << 24 | b[:, 1] << 16 | b[:, 2] << 8 | b[:, 3]
    lanes = [w & 0x81C081C0, (w << 3) & 0x81C081C0, (w << 6) & 0x81C081C0,
             ((w << 1) & 0x80008000) | ((w >> 3) & 0x01800180) | ((w >> 7) & 0x00400040)]
    out = np.zeros((len(w), 8), np.float64)
    for j, lane in enumerate(lanes):
        for col, half in ((j, lane >> 16), (j + 4, lane & 0xFFFF)):
            out[:, col] = half.astype(np.uint16).view(ml_dtypes.bfloat16).astype(np.float64)
    return out.reshape(-1) * 2.0 ** 126


def test_mxfp_decoder_c_source_compiles_and_decodes(tmp_path):
    import ctypes
    import shutil
    import subprocess
    import ml_dtypes
    from tilelang.quantize import get_mxfp_intrin_group
    info = get_mxfp_intrin_group(out_dtype=T.bfloat16, source_format=T.uint32,
                                 source_bit=4, storage_dtype=T.uint8, use_twiddling=True)
    assert info["func_name"] == "decode_fp4_to_bf16_twiddling"
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler")
    src, lib = tmp_path / "d.c", tmp_path / "d.so"
    src.write_text(info["c_source"])
    subprocess.run([cc, "-O2", "-shared", "-fPIC", str(src), "-o", str(lib)], check=True)
    fn = getattr(ctypes.CDLL(str(lib)), info["func_name"])
    data = RNG.integers(0, 256, 64).astype(np.uint8)
    out = np.zeros(128, np.uint16)
    fn(data.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p),
       ctypes.c_int(16))
    got = out.view(ml_dtypes.bfloat16).astype(np.float64)
    np.testing.assert_array_equal(got, twiddled_reference(data))
    with pytest.raises(ValueError, match="no fp4_to_f16 decoder"):
        get_mxfp_intrin_group(out_dtype=T.float16, use_twiddling=False)
