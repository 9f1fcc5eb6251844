"""Guarded element accumulations on tcsim: `T.reducer_update(acc[i], X[i, j])` under an
`if` inside T.Parallel lowers to one VEC.SEL (the added value where the guard holds, the
reduction's identity where it does not) and one VEC.RED; the identity must leave every
row unchanged (dtypes.reduction_identity: for a bool min that is True, not 0). Each run
against numpy over the columns the guard keeps, the others holding the values that would
change the result most."""
from __future__ import annotations

import numpy as np
import pytest

from tilelang.codegen.tcsim import compile_module
from tilelang.driver import make_options
from tilelang.driver.stages import lower
from tilelang.frontend import parse_module
from tilelang.runtime.tcsim import run

R, C = 4, 8         # a block's rows; the tile's columns, of which the guard keeps K

KERNEL = '''
import tilelang.language as T
N = T.dynamic("N")

@T.prim_func
def k(M: T.Tensor((N, {C}), "{DT}"), K: T.int32, O: T.Tensor((N,), "{DT}")):
    with T.Kernel(T.ceildiv(N, {R}), threads=128) as bx:
        X = T.alloc_fragment(({R}, {C}), "{DT}")
        acc = T.alloc_reducer(({R},), "{DT}", op="{OP}")
        T.copy(M[bx * {R}, 0], X)
        T.reducer_init(acc)
        for i, j in T.Parallel({R}, {C}):
            if j < K:
                T.reducer_update(acc[i], X[i, j])
        T.copy(acc, O[bx * {R}])
'''

REDUCE = {"min": np.minimum, "max": np.maximum, "sum": np.add}


def _kernel(op: str, dtype: str):
    src = KERNEL.format(R=R, C=C, DT=dtype, OP=op)
    module = lower(parse_module(src, "guarded.tl"), make_options(target="tcsim"),
                   until="simplify")
    return compile_module(module, "tiny")["k"]


def _inputs(op: str, dtype: str, n: int, kept: int):
    """Rows of values; the columns past `kept` are those the guard must hide: the lowest
    value for a min, the highest for a max, large for a sum."""
    rng = np.random.default_rng(7)
    if dtype == "bool":
        m = rng.random((n, C)) < 0.8
        m[::3, :] = True                    # rows whose kept columns are all True
        m[:, kept:] = op != "min"
        return m
    m = rng.integers(-50, 50, (n, C)).astype(dtype)
    m[:, kept:] = {"min": -1000, "max": 1000, "sum": 1000}[op]
    return m


def _start(op: str, dtype: str):
    """What T.reducer_init fills: the value no update changes."""
    if op == "sum":
        return 0
    if dtype == "bool":
        return op == "min"
    if dtype.startswith("int"):
        info = np.iinfo(dtype)
        return info.max if op == "min" else info.min
    return np.inf if op == "min" else -np.inf


@pytest.mark.parametrize(("op", "dtype"), [("min", "bool"), ("max", "bool"),
                                           ("min", "int32"), ("max", "float32"),
                                           ("sum", "float32")])
def test_a_guarded_accumulation_starts_from_the_identity(op, dtype):
    art = _kernel(op, dtype)
    n = 3 * R - 1                               # a ragged last block
    for kept in (0, 5, C):
        m = _inputs(op, dtype, n, kept)
        out = np.zeros(n, m.dtype)
        run(art, m, kept, out)
        want = REDUCE[op].reduce(m[:, :kept], axis=1, initial=_start(op, dtype))
        np.testing.assert_array_equal(out, want.astype(m.dtype),
                                      err_msg=f"{op} {dtype} K={kept}")


def test_the_bool_min_selects_true_where_the_guard_is_false():
    """The identity the guard selects is the VEC.SEL's last operand (1: True)."""
    from tilelang.targets.tcsim.asm import disassemble
    sel = [ln for ln in disassemble(_kernel("min", "bool").program).splitlines()
           if "VEC.SEL" in ln]
    assert len(sel) == 1
    assert sel[0].split(" shape=")[0].split(", ")[-1] == "1"
