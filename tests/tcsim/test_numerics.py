"""Per-opcode numerics of the simulator against numpy (bf16 / fp8 rounding through
ml_dtypes), and the functional effects of DMA boxes, MMA and the scalar unit."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tilelang.runtime.tcsim import run
from tilelang.targets.tcsim.isa import SCALAR_BINARY, VEC_UNARY

from .progs import program

BF16 = np.dtype(ml_dtypes.bfloat16)
E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
NP_NAME = {"float32": np.float32, "bfloat16": BF16, "float8_e4m3fn": E4M3,
           "int32": np.int32, "int8": np.int8, "float64": np.float64}


def elementwise(op: str, dtype: str, *inputs, out_dtype=None, extra=""):
    """Run VEC.<op> over 1-D tiles loaded from `inputs` and return the stored result."""
    out_dtype = out_dtype or dtype
    n = len(inputs[0])
    params = [f"I{i} tensor {dtype} [{n}]" for i in range(len(inputs))]
    params.append(f"O tensor {out_dtype} [{n}]")
    bufs = [f"X{i} RF {dtype} [{n}]" for i in range(len(inputs))] + [f"Y RF {out_dtype} [{n}]"]
    loads = "".join(f"DMA.LD X{i}, I{i}[0] box={n} signal=s[0]\n" for i in range(len(inputs)))
    srcs = ", ".join(f"X{i}" for i in range(len(inputs)))
    body = (f"SEM.INIT s[0], {len(inputs)}\n{loads}"
            f"VEC.{op} Y, {srcs}{extra} shape={n} wait=s[0]@0 signal=t[0]\n"
            f"DMA.ST O[0], Y box={n} wait=t[0]@0\nHALT")
    p = program(body, params=params, bufs=bufs, sems=["s 1", "t 1"])
    out = np.zeros(n, dtype=NP_NAME[out_dtype])
    run(p, *[np.asarray(x, dtype=NP_NAME[dtype]) for x in inputs], out)
    return out


RNG = np.random.default_rng(7)
POS = RNG.uniform(0.1, 4.0, 64).astype(np.float32)
ANY = RNG.standard_normal(64).astype(np.float32)

UNARY_REF = {"MOV": lambda x: x, "NEG": np.negative, "ABS": np.abs, "EXP": np.exp,
             "EXP2": np.exp2, "LOG": np.log, "LOG2": np.log2, "SQRT": np.sqrt,
             "RSQRT": lambda x: 1 / np.sqrt(x), "TANH": np.tanh,
             "SIGMOID": lambda x: 1 / (1 + np.exp(-x)), "FLOOR": np.floor, "CEIL": np.ceil,
             "ERF": lambda x: np.array([__import__("math").erf(v) for v in x])}


@pytest.mark.parametrize("op", [o for o in VEC_UNARY if o != "NOT"])
def test_vec_unary_float32(op):
    x = POS if op in ("LOG", "LOG2", "SQRT", "RSQRT") else ANY
    got = elementwise(op, "float32", x)
    want = UNARY_REF[op](x.astype(np.float64))
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=2e-6, atol=1e-7)


BIN_REF = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply, "DIV": np.divide,
           "FDIV": lambda a, b: np.floor(a / b), "MOD": lambda a, b: a - b * np.floor(a / b),
           "MIN": np.minimum, "MAX": np.maximum, "LT": np.less, "LE": np.less_equal,
           "GT": np.greater, "GE": np.greater_equal, "EQ": np.equal, "NE": np.not_equal}


@pytest.mark.parametrize("op", [o for o in SCALAR_BINARY if o not in ("AND", "OR")])
def test_vec_binary_float32(op):
    a, b = ANY, np.where(np.arange(64) % 5 == 0, ANY, POS)      # some equal pairs
    out_dtype = "int32" if op in ("LT", "LE", "GT", "GE", "EQ", "NE") else "float32"
    got = elementwise(op, "float32", a, b, out_dtype=out_dtype)
    want = BIN_REF[op](a, b)
    np.testing.assert_allclose(got, want.astype(got.dtype), rtol=1e-6, atol=1e-6)


def test_bf16_add_rounds_to_nearest_even_once():
    a = (RNG.standard_normal(64) * 3).astype(BF16)
    b = (RNG.standard_normal(64) * 1e-2).astype(BF16)
    got = elementwise("ADD", "bfloat16", a, b)
    want = (a.astype(np.float32) + b.astype(np.float32)).astype(BF16)
    assert got.dtype == BF16 and np.array_equal(got.view(np.uint16), want.view(np.uint16))


def test_fp8_cast_on_store_saturates_like_ml_dtypes():
    x = np.array([0.1, 1.3, 17.0, 300.0, 447.9, -3.14159] * 4, dtype=np.float32)
    got = elementwise("MOV", "float32", x, out_dtype="float8_e4m3fn")
    assert np.array_equal(got.view(np.uint8), x.astype(E4M3).view(np.uint8))


def test_int_division_and_modulo_floor():
    a = np.array([7, -7, 7, -7, 0, 5], dtype=np.int32)
    b = np.array([2, 2, -2, -2, 3, 0], dtype=np.int32)
    assert elementwise("FDIV", "int32", a, b).tolist() == [3, -4, -4, 3, 0, 0]
    assert elementwise("MOD", "int32", a, b).tolist() == [1, 1, -1, -1, 0, 0]


def _tile_program(body, bufs, params, sems=("s 1", "t 1")):
    return program(body, params=params, bufs=bufs, sems=list(sems))


@pytest.mark.parametrize("kind", ["SUM", "MAX", "MIN", "ABSSUM", "ABSMAX"])
@pytest.mark.parametrize("dim", [0, 1])
def test_reductions(kind, dim):
    x = RNG.standard_normal((8, 16)).astype(np.float32)
    init = RNG.standard_normal(16 if dim == 0 else 8).astype(np.float32)
    n = len(init)
    p = _tile_program(f"""
        SEM.INIT s[0], 2
        DMA.LD X, I[0, 0] box=8x16 signal=s[0]
        DMA.LD Y, J[0] box={n} signal=s[0]
        VEC.RED.{kind} Y, X dim={dim} acc=1 wait=s[0]@0 signal=t[0]
        DMA.ST O[0], Y box={n} wait=t[0]@0
        HALT""", ["X RF float32 [8, 16]", f"Y RF float32 [{n}]"],
        ["I tensor float32 [8, 16]", f"J tensor float32 [{n}]", f"O tensor float32 [{n}]"])
    out = np.zeros(n, np.float32)
    run(p, x, init, out)
    ax = np.abs(x) if kind.startswith("ABS") else x
    red = {"SUM": np.sum, "ABSSUM": np.sum, "MAX": np.max, "ABSMAX": np.max,
           "MIN": np.min}[kind](ax, axis=dim)
    comb = {"SUM": np.add, "ABSSUM": np.add, "MAX": np.maximum, "ABSMAX": np.maximum,
            "MIN": np.minimum}[kind](init, red)
    np.testing.assert_allclose(out, comb, rtol=1e-6)


def test_broadcast_transpose_iota_and_select():
    x = RNG.standard_normal((4, 8)).astype(np.float32)
    row = RNG.standard_normal(4).astype(np.float32)
    p = _tile_program("""
        SEM.INIT s[0], 2
        DMA.LD X, I[0, 0] box=4x8 signal=s[0]
        DMA.LD R, J[0] box=4 signal=s[0]
        VEC.SUB Y, X, R{0} shape=4x8 wait=s[0]@0
        VEC.IOTA K shape=4x8 dim=1
        VEC.LT M, K, 3 shape=4x8
        VEC.SEL Y, M, Y, -inf shape=4x8
        COPY T{1,0}, Y signal=t[0]
        DMA.ST O[0, 0], T box=8x4 wait=t[0]@0
        HALT""", ["X RF float32 [4, 8]", "R RF float32 [4]", "Y RF float32 [4, 8]",
                  "K RF int32 [4, 8]", "M RF bool [4, 8]", "T SMEM float32 [8, 4]"],
        ["I tensor float32 [4, 8]", "J tensor float32 [4]", "O tensor float32 [8, 4]"])
    out = np.zeros((8, 4), np.float32)
    run(p, x, row, out)
    want = np.where(np.arange(8)[None, :] < 3, x - row[:, None], -np.inf).T
    np.testing.assert_array_equal(out, want.astype(np.float32))


@pytest.mark.parametrize("dtype, acc", [("bfloat16", "float32"), ("float8_e4m3fn", "float32"),
                                        ("int8", "int32"), ("float32", "float32")])
@pytest.mark.parametrize("ta, tb", [(0, 0), (1, 1)])
def test_mma(dtype, acc, ta, tb):
    m, n, k = 16, 24, 32
    sa = (k, m) if ta else (m, k)
    sb = (n, k) if tb else (k, n)
    if dtype == "int8":
        a = RNG.integers(-128, 128, sa).astype(np.int8)
        b = RNG.integers(-128, 128, sb).astype(np.int8)
    else:
        a = RNG.standard_normal(sa).astype(NP_NAME[dtype])
        b = RNG.standard_normal(sb).astype(NP_NAME[dtype])
    p = _tile_program(f"""
        SEM.INIT s[0], 2
        DMA.LD A, GA[0, 0] box={sa[0]}x{sa[1]} signal=s[0]
        DMA.LD B, GB[0, 0] box={sb[0]}x{sb[1]} signal=s[0]
        ACC.ZERO C
        MMA C, A, B ta={ta} tb={tb} wait=s[0]@0
        MMA C, A, B ta={ta} tb={tb} signal=t[0]
        DMA.ST GC[0, 0], C box={m}x{n} wait=t[0]@0
        HALT""", [f"A SMEM {dtype} [{sa[0]}, {sa[1]}]", f"B SMEM {dtype} [{sb[0]}, {sb[1]}]",
                  f"C RF {acc} [{m}, {n}]"],
        [f"GA tensor {dtype} [{sa[0]}, {sa[1]}]", f"GB tensor {dtype} [{sb[0]}, {sb[1]}]",
         f"GC tensor {acc} [{m}, {n}]"])
    out = np.zeros((m, n), NP_NAME[acc])
    r = run(p, a, b, out)
    wide = np.int64 if dtype == "int8" else np.float64
    aa, bb = a.astype(wide), b.astype(wide)
    want = 2 * ((aa.T if ta else aa) @ (bb.T if tb else bb))
    if dtype == "int8":
        assert np.array_equal(out, want)
    else:
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)
    assert r.flops == 2 * (2 * m * n * k)


def test_dma_zero_fill_out_of_bounds_and_reduce_add():
    g = RNG.standard_normal((5, 7)).astype(np.float32)
    p = _tile_program("""
        DMA.LD X, G[3, 4] box=4x4 signal=s[0]
        ACC.READ Y, X scale=2.0 wait=s[0]@0 signal=t[0]
        DMA.ST O[3, 4], Y box=4x4 reduce=add wait=t[0]@0
        HALT""", ["X RF float32 [4, 4]", "Y RF float32 [4, 4]"],
        ["G tensor float32 [5, 7]", "O tensor float32 [5, 7]"])
    out = np.ones((5, 7), np.float32)
    run(p, g, out)
    want = np.ones((5, 7), np.float32)
    want[3:5, 4:7] += 2 * g[3:5, 4:7]
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_scalar_unit_loops_ifs_and_alu():
    # r5 = sum_{i<10} (i odd ? 3*i : i // 2), computed by LOOP / IF / ALU, then stored
    p = _tile_program("""
        MOV r5, 0
        MOV r6, 0
        LOOP 10
            MOD r7, r6, 2
            IF r7
                MULI r8, r6, 3
            ELSE
                FDIV r8, r6, 2
            ENDIF
            ADD r5, r5, r8
            ADDI r6, r6, 1
        ENDLOOP
        LOOP 0
            MOV r5, -1
        ENDLOOP
        CVTF r9, r5
        RSQRT r10, 16.0
        MUL r9, r9, r10
        SEL r11, r7, r9, 0.0
        VEC.MOV Y, r11 shape=1 signal=t[0]
        DMA.ST O[0], Y box=1 wait=t[0]@0
        HALT""", ["Y RF float32 [1]"], ["O tensor float32 [1]"])
    out = np.zeros(1, np.float32)
    run(p, out)
    want = sum(3 * i if i % 2 else i // 2 for i in range(10)) * 0.25
    assert out[0] == pytest.approx(want)


def test_scalar_load_from_global():
    from tilelang.targets.tcsim.config import TINY
    p = program("""
        LDG r5, S[1, 2]
        LDG r6, S[7, 0]
        ADD r5, r5, r6
        VEC.MOV Y, r5 shape=1 signal=t[0]
        DMA.ST O[0], Y box=1 wait=t[0]@0
        HALT""", params=["S tensor float32 [2, 3]", "O tensor float32 [1]"],
        bufs=["Y RF float32 [1]"], sems=["t 1"])
    s = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = np.zeros(1, np.float32)
    r = run(p, s, out)
    assert out[0] == 5.0                              # S[1, 2]; S[7, 0] is outside: 0
    assert r.cycles >= TINY.dma_latency       # the ADD waits for the loads (test_honest_timing)


def test_sub_box_operands():
    """Static sub-boxes of on-chip buffers: DMA into a quarter, VEC on a half, MMA over
    sub-tiles, COPY of a row into a 1-D buffer."""
    from tilelang.targets.tcsim.asm import assemble, disassemble
    g = RNG.standard_normal((16, 16)).astype(np.float32)
    p = _tile_program("""
        SEM.INIT s[0], 2
        SEM.INIT u[0], 2
        DMA.LD X<0:8,0:16>, G[0, 0] box=8x16 signal=s[0]
        DMA.LD X<8:16,0:16>, G[8, 0] box=8x16 signal=s[0]
        VEC.MUL X<0:16,8:16>, X<0:16,8:16>, 2.0 shape=16x8 wait=s[0]@0
        ACC.ZERO C
        COPY A_s, X signal=t[0]
        MMA C<0:4,0:16>, A_s<0:4,0:8>, A_s<8:16,0:16> wait=t[0]@0 signal=u[0]
        COPY R, A_s<3:4,0:16> signal=u[0]
        SEM.WAIT u[0], 0
        DMA.ST O[0, 0], C box=16x16 signal=v[0]
        DMA.ST Q[0], R box=16 signal=v[0]
        HALT""", ["X RF float32 [16, 16]", "A_s SMEM float32 [16, 16]",
                  "C RF float32 [16, 16]", "R RF float32 [16]"],
        ["G tensor float32 [16, 16]", "O tensor float32 [16, 16]", "Q tensor float32 [16]"],
        sems=("s 1", "t 1", "u 1", "v 1"))
    assert assemble(disassemble(p)) == p
    o = np.zeros((16, 16), np.float32)
    q = np.zeros(16, np.float32)
    run(p, g, o, q)
    x = g.copy()
    x[:, 8:] *= 2
    want = np.zeros((16, 16))
    want[0:4, :] = x[0:4, 0:8].astype(np.float64) @ x[8:16, :]
    np.testing.assert_allclose(o, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(q, x[3])


def test_sub_box_out_of_range_is_rejected():
    from tilelang.diagnostics import ArtifactError
    from tilelang.targets.tcsim.artifact import check_fits
    from tilelang.targets.tcsim.config import TINY
    p = _tile_program("ACC.ZERO C<0:4,12:20>\nHALT", ["C RF float32 [16, 16]"], [])
    with pytest.raises(ArtifactError, match="outside its shape"):
        check_fits(p, TINY)
