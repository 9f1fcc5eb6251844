"""`while` with a run-time condition (TileLang's stream-K GEMM walks its share of the
K iterations with one): the condition is evaluated before each iteration, the body may
run zero times; on the CPU a loop with a conditional branch, on tcsim LOOP / BREAKZ."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang
import tilelang.language as T
from tilelang.diagnostics import TileLangError

from .helpers import close, randn


@tilelang.jit(out_idx=[-1])
def segment_sums(N, chunk=8):
    """Each block sums X[lo:hi) (bounds from Bounds) in chunks that end at multiples of
    `chunk`, as stream-K's tiles end at tile boundaries."""
    @T.prim_func
    def main(X: T.Tensor((N,), T.float32), Bounds: T.Tensor((4, 2), T.int32),
             Y: T.Tensor((4,), T.float32)):
        with T.Kernel(4, threads=32) as b:
            pos = T.alloc_fragment((1,), T.int32, "local")
            acc = T.alloc_var(T.float32)
            tile = T.alloc_fragment((chunk,), T.float32)
            hi = Bounds[b, 1]
            pos[0] = Bounds[b, 0]
            acc = 0.0
            while pos[0] < hi:
                end = T.min(pos[0] + (chunk - pos[0] % chunk), hi)
                T.copy(X[pos[0] - pos[0] % chunk:pos[0] - pos[0] % chunk + chunk], tile)
                for k in T.serial(end - pos[0]):
                    acc = acc + tile[pos[0] % chunk + k]
                pos[0] = end
            Y[b] = acc
    return main


def _bounds(rng, n):
    lo = rng.integers(0, n, 4)
    hi = np.minimum(n, lo + rng.integers(0, 20, 4))
    return np.stack([lo, hi], axis=1).astype(np.int32)


def test_while_with_run_time_condition(target):
    rng = np.random.default_rng(5)
    x = randn(64)
    bounds = _bounds(rng, 64)
    bounds[0] = (10, 10)                    # runs zero times
    want = [x[lo:hi].astype(np.float64).sum() for lo, hi in bounds]
    close(segment_sums(64)(x, bounds), want, 1e-5, 1e-5)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2 ** 31 - 1))
def test_while_bounds_property_cpu(seed):
    rng = np.random.default_rng(seed)
    x = randn(64)
    bounds = _bounds(rng, 64)
    want = [x[lo:hi].astype(np.float64).sum() for lo, hi in bounds]
    close(segment_sums(64)(x, bounds), want, 1e-5, 1e-5)


@tilelang.jit(out_idx=[-1])
def halvings(N):
    @T.prim_func
    def main(X: T.Tensor((N,), T.int32), Y: T.Tensor((N,), T.int32)):
        with T.Kernel(1, threads=32) as b:
            for i in T.serial(N):
                v = T.alloc_var(T.int32)
                steps = T.alloc_var(T.int32)
                v = X[i]
                steps = 0
                while v > 1:
                    v = v // 2
                    steps = steps + 1
                Y[i] = steps
    return main


def test_while_on_scalars_nested_in_a_loop(target):
    x = np.array([0, 1, 2, 3, 1000, 7, 8, 2 ** 30], np.int32)
    want = [int(v).bit_length() - 1 if v > 1 else 0 for v in x]
    np.testing.assert_array_equal(halvings(8)(x), want)


def test_while_on_a_constant_condition():
    @tilelang.jit(out_idx=[-1])
    def forever(N):
        @T.prim_func
        def main(X: T.Tensor((N,), T.float32), Y: T.Tensor((N,), T.float32)):
            with T.Kernel(1) as b:
                while True:
                    T.copy(X, Y)
        return main
    with pytest.raises(TileLangError) as info:
        forever(8)
    assert "`while True:` needs `break`" in str(info.value)


def test_while_prints_parses_and_interprets():
    from tilelang.frontend import parse_module
    from tilelang.ir import interp
    from tilelang.ir.printer import print_module
    text = '''import tilelang.language as T

@T.prim_func
def k(A: T.Tensor((4,), "int32"), B: T.Tensor((4,), "int32")):
    with T.Kernel(1) as bx:
        n = T.alloc_fragment((4,), "int32")
        for i in T.Parallel(4):
            n[i] = A[i]
            while n[i] < 100:
                n[i] = n[i] * 3 + 1
            B[i] = n[i]
'''
    mod = parse_module(text, "k.tl")
    printed = print_module(mod)
    assert "while n[i] < 100:" in printed
    assert parse_module(printed, "k2.tl") == mod
    a = np.array([1, 50, 200, 7], np.int32)
    b = np.zeros(4, np.int32)
    interp.run(mod, "k", [a, b])           # lanes leave the loop at different times

    def ref(n):
        while n < 100:
            n = n * 3 + 1
        return n
    np.testing.assert_array_equal(b, [ref(int(v)) for v in a])


def test_breakz_assembles_and_validates():
    from tilelang.targets.tcsim import asm
    from tilelang.targets.tcsim.isa import make, Imm
    from tilelang.targets.tcsim.validate import validate  # noqa: F401 - module API
    ins = make("BREAKZ", Imm(0))
    assert asm.fmt_instr(ins) == "BREAKZ 0"


def test_while_and_bitcast_survive_tcasm_text_and_binary():
    """BREAKZ and VEC.BITCAST (with its `src=` dtype) through the assembler, the
    disassembler and the binary encoding."""
    from tilelang.codegen.tcsim import compile_module
    from tilelang.driver import make_options
    from tilelang.driver.stages import lower
    from tilelang.frontend import parse_module
    from tilelang.targets.tcsim.asm import assemble, disassemble
    from tilelang.targets.tcsim.encoding import decode, encode
    text = '''import tilelang.language as T

@T.prim_func
def k(A: T.Tensor((16,), "uint16"), B: T.Tensor((16,), "float16"),
      N: T.Tensor((1,), "int32")):
    with T.Kernel(1) as bx:
        a = T.alloc_fragment((16,), "uint16")
        h = T.alloc_fragment((16,), "float16")
        n = T.alloc_var("int32")
        n = N[0]
        T.copy(A, a)
        while n > 0:
            for i in T.Parallel(16):
                h[i] = T.reinterpret("float16", a[i] | T.uint16(0x3C00))
            n = n - 1
        T.copy(h, B)
'''
    module = lower(parse_module(text, "k.tl"), make_options(target="tcsim"), until="simplify")
    prog = compile_module(module, "tiny")["k"].program
    ops = [i.op for i in prog.code]
    assert "BREAKZ" in ops and "VEC.BITCAST" in ops
    assert 'src=uint16' in disassemble(prog)
    assert assemble(disassemble(prog)).code == prog.code
    assert decode(encode(prog)).code == prog.code
