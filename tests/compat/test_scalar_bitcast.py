"""`T.reinterpret` of a run-time scalar outside `T.Parallel`: on tcsim the scalar unit's
BITCAST (the registers carry no dtype, so the instruction names both); every equal-width
pair gives the bits numpy's `.view` gives, on both targets."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.dtypes import numpy_dtype

N = 8

PAIRS = [("float32", "int32"), ("int32", "float32"), ("float32", "uint32"),
         ("uint32", "float32"), ("float16", "int16"), ("uint16", "float16"),
         ("bfloat16", "uint16"), ("int16", "bfloat16"), ("float64", "int64"),
         ("int64", "float64"), ("int8", "uint8")]


@tilelang.jit(out_idx=[-1])
def bitcast_scalar(n, src, dst):
    @T.prim_func
    def main(X: T.Tensor((n,), src), Y: T.Tensor((n,), dst)):
        with T.Kernel(1, threads=32) as bx:
            y = T.alloc_fragment((n,), dst)
            for k in T.serial(n):
                v = T.alloc_var(dst)
                v = T.reinterpret(dst, X[k])          # one run-time scalar, bit-cast
                for i in T.Parallel(n):
                    if i == k:
                        y[i] = v
            T.copy(y, Y)
    return main


def _is_nan(bits: np.ndarray, dtype: str) -> np.ndarray:
    v = bits.view(numpy_dtype(dtype))
    return np.isnan(v.astype(np.float64)) if v.dtype.kind not in "iub" else \
        np.zeros(v.shape, bool)


def _inputs(src: str, dst: str) -> np.ndarray:
    """Bit patterns of every kind: signs, zeros, infinities, subnormals, integer extremes.
    No NaN on either side: a float register holds a value, and a NaN's payload is not
    part of it (docs/tcsim.md)."""
    dt = numpy_dtype(src)
    rng = np.random.default_rng(13)
    x = rng.integers(0, 256, size=N * dt.itemsize, dtype=np.uint8).view(dt).copy()
    if dt.kind in "iu":
        x[:3] = [0, 1, np.iinfo(dt).min]
    else:
        x[:5] = np.array([0.0, -0.0, np.inf, -np.inf, 1.5]).astype(dt)
        x[5] = np.array([np.finfo(np.float32).tiny / 4 if dt.itemsize >= 4 else 2.0 ** -20],
                        np.float64).astype(dt)[0]
    nan = _is_nan(x, src) | _is_nan(x, dst)
    x[nan] = x[0]
    return x


@pytest.mark.parametrize("src, dst", PAIRS, ids=[f"{s}-{d}" for s, d in PAIRS])
def test_scalar_reinterpret_gives_numpys_view(target, src, dst):
    x = _inputs(src, dst)
    y = np.asarray(bitcast_scalar(N, src, dst)(x))
    want = x.view(numpy_dtype(dst))
    # compare bits, so -0.0, infinities and integer extremes must match exactly
    np.testing.assert_array_equal(y.view(np.uint8), want.view(np.uint8))


def test_scalar_bitcast_survives_tcasm_text_and_binary():
    """BITCAST (with its `src=` and `dst=` dtypes) from codegen through the assembler, the
    disassembler and the binary encoding; the validator refuses unequal widths."""
    from tilelang.codegen.tcsim import compile_module
    from tilelang.driver import make_options
    from tilelang.driver.stages import lower
    from tilelang.frontend import parse_module
    from tilelang.targets.tcsim.asm import assemble, disassemble
    from tilelang.targets.tcsim.config import TINY
    from tilelang.targets.tcsim.encoding import decode, encode
    from tilelang.targets.tcsim.isa import Imm, Reg, make
    from tilelang.targets.tcsim.validate import validate
    text = '''import tilelang.language as T

@T.prim_func
def k(X: T.Tensor((4,), "float16"), Y: T.Tensor((4,), "int16")):
    with T.Kernel(1) as bx:
        y = T.alloc_fragment((4,), "int16")
        for j in T.serial(4):
            v = T.alloc_var("int16")
            v = T.reinterpret("int16", X[j])
            for i in T.Parallel(4):
                if i == j:
                    y[i] = v
        T.copy(y, Y)
'''
    module = lower(parse_module(text, "k.tl"), make_options(target="tcsim"), until="simplify")
    prog = compile_module(module, "tiny")["k"].program
    assert [i.op for i in prog.code].count("BITCAST") == 1
    assert "dst=int16 src=float16" in disassemble(prog)
    assert assemble(disassemble(prog)) == prog
    assert decode(encode(prog)) == prog
    assert validate(prog, TINY) == []
    from dataclasses import replace
    bad = replace(prog, code=(make("BITCAST", Reg(0), Imm(1), src="float32", dst="int16"),)
                  + prog.code)
    assert any("not two dtypes of one width" in m for m in validate(bad, TINY))
