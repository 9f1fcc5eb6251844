"""Whole kernels written as hand-built lowered IR, checked against numpy."""
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from .irb import (Alloc, Atomic, Call, Cast, If, Let, Select, bin, build, c, kernel_func,
                 load, loop, seq, store, tensor, v)
from .guarded import guarded_empty
from tilelang.codegen.llvm.compile import build_llvm_module
from tilelang.codegen.llvm.manifest import build_manifest
from tilelang.codegen.llvm.target import host_target
from tilelang.ir.nodes import Module

BLOCK = 64


def vector_add(dt="float32", kind="vectorized"):
    N, i, bx = v("N"), v("i"), v("bx")
    A, B, C = tensor("A", [N], dt), tensor("B", [N], dt), tensor("C", [N], dt)
    idx = bin("+", bin("*", bx, BLOCK), i)
    body = loop(i, BLOCK, If(bin("<", idx, N),
                             store(C, [idx], bin("+", load(A, idx), load(B, idx)))), kind=kind)
    grid = Call("ceildiv", (N, c(BLOCK)), "int32")
    return kernel_func("vadd", [A, B, C], [grid], [bx], body, symbols=[N])


@pytest.fixture(scope="module")
def vadd():
    return build(vector_add())


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 3000))
def test_vector_add(vadd, n):
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n + 1, 7, np.float32)      # one extra element: must stay untouched
    vadd.call("vadd", a, b, out, n)
    np.testing.assert_array_equal(out[:n], a + b)
    assert out[n] == 7


def test_vector_add_is_avx2_vector_code():
    compiled = build(vector_add(), cpu="znver3", features="+avx2,+fma,+f16c").compiled
    assert "ymm" in compiled.asm
    host = build(vector_add()).compiled.asm
    assert "ymm" in host or "zmm" in host


def test_loop_hints_reach_llvm():
    body = vector_add(kind="vectorized")
    m = Module((body,))
    text = str(build_llvm_module(m, build_manifest(m, host_target()), host_target().triple))
    # no forced vectorisation: when LLVM cannot honour it, it warns on the user's stderr
    assert "llvm.loop.vectorize.enable" not in text
    N, i, bx = v("N"), v("i"), v("bx")
    A = tensor("A", [N])
    unrolled = kernel_func("u", [A], [1], [bx],
                           loop(i, 4, store(A, [i], c(1.0)), kind="unroll"), symbols=[N])
    m = Module((unrolled,))
    text = str(build_llvm_module(m, build_manifest(m, host_target()), host_target().triple))
    assert "llvm.loop.unroll.full" in text


def stencil_2d(tile=8):
    """B[i, j] = A[i, j+1] (0 past the edge) + A[i-1, j] (0 before it), tiled 2-D grid
    with a guarded store: the out-of-range loads are protected only by Select."""
    M, N, i, j, bx, by = v("M"), v("N"), v("i"), v("j"), v("bx"), v("by")
    A, B = tensor("A", [M, N]), tensor("B", [M, N])
    gi, gj = v("gi"), v("gj")
    right = Select(bin("<", bin("+", gj, 1), N), load(A, gi, bin("+", gj, 1)), c(0.0),
                   "float32")
    up = Select(bin(">=", gi, 1), load(A, bin("-", gi, 1), gj), c(0.0), "float32")
    body = loop(i, tile, loop(j, tile, seq(
        Let(gi, bin("+", bin("*", by, tile), i)),
        Let(gj, bin("+", bin("*", bx, tile), j)),
        If(bin("and", bin("<", gi, M), bin("<", gj, N)),
           store(B, [gi, gj], bin("+", right, up))))))
    grid = [Call("ceildiv", (N, c(tile)), "int32"), Call("ceildiv", (M, c(tile)), "int32")]
    return kernel_func("stencil", [A, B], grid, [bx, by], body, symbols=[M, N])


@pytest.fixture(scope="module")
def stencil():
    return build(stencil_2d())


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40))
def test_select_protects_out_of_bounds_loads(stencil, m, n):
    a = guarded_empty((m, n), np.float32)           # reading past its end faults
    a[...] = np.random.default_rng(m * 100 + n).standard_normal((m, n))
    b = np.zeros((m, n), np.float32)
    stencil.call("stencil", a, b, m, n)
    want = np.zeros((m, n), np.float32)
    want[:, :-1] += a[:, 1:]
    want[1:, :] += a[:-1, :]
    np.testing.assert_allclose(b, want, rtol=1e-6)


def test_short_circuit_and_protects_load():
    N, i, bx = v("N"), v("i"), v("bx")
    A, B = tensor("A", [N]), tensor("B", [N], "bool")
    nxt = bin("+", i, 1)
    cond = bin("and", bin("<", nxt, N), bin(">", load(A, nxt), c(0.0)))
    f = kernel_func("pos_next", [A, B], [1], [bx], loop(i, N, store(B, [i], cond)), symbols=[N])
    mod = build(f)
    a = guarded_empty((33,), np.float32)
    a[...] = np.linspace(-1, 1, 33)
    out = np.zeros(33, bool)
    mod.call("pos_next", a, out, 33)
    np.testing.assert_array_equal(out, np.append(a[1:] > 0, False))


def row_sum():
    """B[r] = sum(A[r, :]) with a T.alloc_var accumulator, one block per row."""
    M, N, j, r = v("M"), v("N"), v("j"), v("r")
    A, B = tensor("A", [M, N]), tensor("B", [M])
    acc = tensor("acc", [], "float32", scope="var")
    body = seq(Alloc(acc, c(0.0)),
               loop(j, N, store(acc, [], bin("+", load(acc), load(A, r, j)))),
               store(B, [r], load(acc)))
    return kernel_func("row_sum", [A, B], [M], [r], body, symbols=[M, N])


@pytest.fixture(scope="module")
def row_sum_mod():
    return build(row_sum())


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 30), st.integers(0, 200))
def test_reduction(row_sum_mod, m, n):
    a = np.random.default_rng(n).standard_normal((m, n)).astype(np.float32)
    b = np.full(m, np.nan, np.float32)
    row_sum_mod.call("row_sum", a, b, m, n)
    np.testing.assert_allclose(b, a.astype(np.float64).sum(axis=1), rtol=1e-4, atol=1e-4)


def test_float_sum_reduction_is_vectorised():
    """b[i] = b[i] + x may be reassociated, so the row sum becomes vector code."""
    asm = build(row_sum(), cpu="znver3", features="+avx2,+fma").compiled.asm
    assert "vaddps\t%ymm" in asm


def gemm(in_dt="float16", TM=8, TN=8, TK=4):
    """C = A @ B: tiles of A and B staged in shared buffers (zero-filled past the edges
    with Select), accumulated in a fragment, stored with a guard."""
    M, N, K = v("M"), v("N"), v("K")
    bx, by, k0, i, j, kk = v("bx"), v("by"), v("k0"), v("i"), v("j"), v("kk")
    A, B, C = tensor("A", [M, K], in_dt), tensor("B", [K, N], in_dt), tensor("C", [M, N])
    As = tensor("A_s", [TM, TK], in_dt, "shared")
    Bs = tensor("B_s", [TK, TN], in_dt, "shared")
    Cf = tensor("C_f", [TM, TN], "float32", "fragment")
    row, col = bin("+", bin("*", by, TM), i), bin("+", bin("*", bx, TN), j)
    ka, kb = bin("+", bin("*", k0, TK), kk), bin("+", bin("*", k0, TK), i)
    zero = c(0.0, in_dt)
    load_a = loop(i, TM, loop(kk, TK, store(As, [i, kk], Select(
        bin("and", bin("<", row, M), bin("<", ka, K)), load(A, row, ka), zero, in_dt))))
    load_b = loop(i, TK, loop(j, TN, store(Bs, [i, j], Select(
        bin("and", bin("<", kb, K), bin("<", col, N)), load(B, kb, col), zero, in_dt))))
    prod = bin("*", Cast(load(As, i, kk), "float32"), Cast(load(Bs, kk, j), "float32"))
    mma = loop(i, TM, loop(j, TN, loop(kk, TK, store(Cf, [i, j],
                                                     bin("+", load(Cf, i, j), prod)))))
    body = seq(Alloc(As), Alloc(Bs), Alloc(Cf),
               loop(i, TM, loop(j, TN, store(Cf, [i, j], c(0.0)), kind="vectorized")),
               loop(k0, Call("ceildiv", (K, c(TK)), "int32"), seq(load_a, load_b, mma),
                    kind="pipelined", annotations=(("num_stages", 2),)),
               loop(i, TM, loop(j, TN, If(bin("and", bin("<", row, M), bin("<", col, N)),
                                          store(C, [row, col], load(Cf, i, j))))))
    grid = [Call("ceildiv", (N, c(TN)), "int32"), Call("ceildiv", (M, c(TM)), "int32")]
    return kernel_func("gemm", [A, B, C], grid, [bx, by], body, symbols=[M, N, K])


@pytest.fixture(scope="module", params=["float16", "float32", "bfloat16"])
def gemm_mod(request):
    return request.param, build(gemm(request.param))


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 37), st.integers(1, 37), st.integers(1, 37))
def test_gemm(gemm_mod, m, n, k):
    from tilelang import dtypes
    dt, mod = gemm_mod
    rng = np.random.default_rng(m * 10000 + n * 100 + k)
    a = rng.standard_normal((m, k)).astype(dtypes.numpy_dtype(dt))
    b = rng.standard_normal((k, n)).astype(dtypes.numpy_dtype(dt))
    out = np.zeros((m, n), np.float32)
    mod.call("gemm", a, b, out, m, n, k)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


def atomics(dt, op):
    """Every block b combines its row X[b, :] into S[:] with an atomic op."""
    NB, L, b, i = v("NB"), v("L"), v("b"), v("i")
    X, S = tensor("X", [NB, L], dt), tensor("S", [L], dt)
    body = loop(i, L, Atomic(op, S, (i,), load(X, b, i)))
    return kernel_func(f"atomic_{op}_{dt}", [X, S], [NB], [b], body, symbols=[NB, L])


ATOMIC_CASES = [(dt, op) for dt in ("float32", "float64", "int32", "int64", "int8", "uint8",
                                    "float16", "bfloat16", "float8_e4m3fn", "float8_e4m3", "float8_e5m2")
                for op in ("add", "max", "min")]


@pytest.fixture(scope="module")
def atomic_mod():
    return build(*[atomics(dt, op) for dt, op in ATOMIC_CASES])


@pytest.mark.parametrize("dt,op", ATOMIC_CASES)
def test_atomics_from_many_blocks_and_threads(atomic_mod, dt, op):
    from tilelang import dtypes
    nb, length = 64, 8
    rng = np.random.default_rng(7)
    small = dt in ("int8", "uint8") or dt.startswith("float8")
    vals = rng.integers(0 if dt == "uint8" else -2, 3, (nb, length))
    if op != "add" and not small:
        vals = rng.integers(-1000, 1000, (nb, length))
    if dt.startswith("float8"):
        # every partial sum must be exact in 2-3 mantissa bits, whatever the order
        vals = np.where(np.arange(nb)[:, None] < 8, rng.integers(0, 2, (nb, length)), 0)
    x = vals.astype(dtypes.numpy_dtype(dt))
    s = np.zeros(length, dtypes.numpy_dtype(dt))
    name = f"atomic_{op}_{dt}"
    args = atomic_mod.args_array(name, x, s, nb, length)
    assert atomic_mod.num_blocks(name, args) == nb
    ranges = [(k * 8, (k + 1) * 8) for k in range(nb // 8)]
    threads = [threading.Thread(target=atomic_mod.blocks, args=(name, args, lo, hi))
               for lo, hi in ranges]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    xs = x.astype(np.float64)        # the values as stored (bf16 rounds 985 to 984)
    ref = {"add": xs.sum(axis=0), "max": np.maximum(xs.max(axis=0), 0),
           "min": np.minimum(xs.min(axis=0), 0)}[op]     # S starts at zero
    want = ref.astype(np.int64).astype(s.dtype)     # integer sums wrap like numpy's
    np.testing.assert_array_equal(s.astype(np.float64), want.astype(np.float64))


def test_blocks_called_while_another_call_converts_its_arguments(atomic_mod):
    """The threads above share one kernel; a thread switch can land in the middle of
    another thread's ctypes argument conversion (the collector running a finaliser
    there), and a `blocks()` that then reassigned the shared function's `argtypes` freed
    the converters the interrupted call was reading: that call raised or ran garbage,
    and a whole block range was lost. The interleaving, made without threads: the args'
    `_as_parameter_` makes the other call during the conversion."""
    name, nb, length = "atomic_add_float16", 64, 8
    x, s = np.ones((nb, length), np.float16), np.zeros(length, np.float16)
    args = atomic_mod.args_array(name, x, s, nb, length)

    class Interleaved:
        @property
        def _as_parameter_(self):
            atomic_mod.blocks(name, args, 0, 0)        # another thread's (empty) launch
            [(None, None, None) for _ in range(50)]     # its allocations reuse freed memory
            return args

    for k in range(nb // 8):
        atomic_mod.blocks(name, Interleaved(), k * 8, k * 8 + 8)
    np.testing.assert_array_equal(s, np.full(length, nb, np.float16))
