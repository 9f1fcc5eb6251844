"""`T.copy(..., eviction_policy="evict_first")`: the hint is carried in the IR (the copy,
then its innermost loop), printed and parsed back, kept by the passes; the CPU writes the
destination with non-temporal stores in whole aligned lines (plain stores at the ragged
edges), fences before it publishes, and the values never change."""
from __future__ import annotations

import functools
import os
import platform
import re
import tempfile

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilelang
from tilelang.frontend import parse_module
from tilelang.ir.nodes import Copy, For
from tilelang.ir.printer import print_module
from tilelang.ir.verifier import verify
from tilelang.ir.visitor import walk

X86 = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="reads x86 asm")

ROWS = """import tilelang.language as T

M = T.dynamic("M")
N = T.dynamic("N")


@T.prim_func
def rows(A: T.Tensor((M, N), "{src}"), B: T.Tensor((M, N), "{dst}")):
    with T.Kernel(T.ceildiv(N, 256), M, threads=1) as (bx, by):
        t = T.alloc_fragment((256,), "{src}")
        T.copy(A[by, bx * 256], t)
        T.copy(t, B[by, bx * 256]{hint})
"""

HINT = ', eviction_policy="evict_first"'


def source(src="bfloat16", dst="bfloat16", hint=HINT) -> str:
    return ROWS.format(src=src, dst=dst, hint=hint)


def write(text: str) -> str:
    path = os.path.join(tempfile.mkdtemp(), "k.tl")
    with open(path, "w") as f:
        f.write(text)
    return path


@functools.lru_cache(maxsize=None)
def compiled(text: str):
    return tilelang.compile(write(text))


# ----------------------------------------------------------------------------- the IR

def test_the_hint_is_an_attribute_of_the_copy_and_prints_back():
    mod = parse_module(source(), "k.tl")
    verify(mod)
    copies = [n for n in walk(mod) if isinstance(n, Copy)]
    assert [c.eviction_policy for c in copies] == ["evict_normal", "evict_first"]
    text = print_module(mod)
    assert "T.copy(t, B[by, bx * 256], eviction_policy='evict_first')" in text
    assert parse_module(text, "<printed>") == mod
    # the hint takes part in structural equality: dropping it is a different program
    assert parse_module(source(hint=""), "k.tl") != mod


def test_evict_normal_is_no_hint():
    mod = parse_module(source(hint=', eviction_policy="evict_normal"'), "k.tl")
    assert mod == parse_module(source(hint=""), "k.tl")


def test_every_cpu_pass_keeps_the_hint_on_the_copy_loops():
    # after each pass the IR prints and parses back; the lowered copy's innermost loops
    # (both versions of the versioned nest) still carry the hint at the end
    from tilelang.targets.cpu.machine import host
    from tilelang.targets.cpu.pipeline import cpu_pipeline
    mod = parse_module(source(), "k.tl")
    for p in cpu_pipeline(host()):
        mod = p(mod)
        verify(mod)
        assert parse_module(print_module(mod), "<printed>") == mod, p
    hinted = [n for n in walk(mod) if isinstance(n, For) and n.annotations]
    assert len(hinted) == 2
    assert all(n.annotations == (("eviction_policy", "evict_first"),)
               and n.kind == "vectorized" for n in hinted)
    assert "T.vectorized(256, eviction_policy='evict_first')" in print_module(mod)


# ----------------------------------------------------------------------------- machine code

@X86
def test_streaming_stores_and_the_fence_are_in_the_machine_code():
    asm = compiled(source()).asm()
    assert re.search(r"\bv?movntdq\b|\bv?movntps\b", asm)
    assert "sfence" in asm
    llvm = compiled(source()).llvm()
    assert re.search(r"store <32 x i16> .*align 64.*!nontemporal", llvm)


@X86
def test_without_the_hint_there_is_no_streaming_store():
    asm = compiled(source(hint="")).asm()
    assert not re.search(r"movnt", asm) and "sfence" not in asm


# ----------------------------------------------------------------------------- values

PAIRS = [("bfloat16", "bfloat16"), ("float32", "bfloat16"), ("int8", "int8"),
         ("float32", "float8_e4m3fn"), ("float64", "float64")]


@settings(max_examples=30, deadline=None)
@given(pair=st.sampled_from(PAIRS), m=st.integers(1, 5), n=st.integers(0, 700),
       shift=st.sampled_from([0, 0, 1, 3, 32, 64, 70]))
def test_streamed_copies_equal_numpy_at_any_alignment_and_size(pair, m, n, shift):
    # B starts `shift` elements past a line boundary in a larger array, so its rows start
    # at every alignment (streamed from a boundary, plain elsewhere); n covers a row
    # shorter than a line, ragged tiles and whole tiles
    src, dst = pair
    k = compiled(source(src, dst))
    rng = np.random.default_rng(m * 1000 + n)
    a = (rng.standard_normal((m, n)) * 40).astype(np.dtype(getattr(ml_dtypes, src, src)))
    dt = np.dtype(getattr(ml_dtypes, dst, dst))
    raw = np.full(m * n + shift + 128, 7, dt)
    start = (-raw.ctypes.data % 64) // dt.itemsize + shift
    big = raw[:start + m * n + 32]
    b = big[start:start + m * n].reshape(m, n)
    k(a, b)
    np.testing.assert_array_equal(b.astype(np.float64), a.astype(dt).astype(np.float64))
    # nothing around B is touched
    assert (big[:start] == 7).all() and (big[start + m * n:] == 7).all()


def test_the_tcsim_target_ignores_the_hint():
    lib = tilelang.compile(write(source("float32", "float32")), target="tcsim")
    a = np.arange(3 * 300, dtype=np.float32).reshape(3, 300)
    b = np.zeros_like(a)
    lib(a, b)
    np.testing.assert_array_equal(b, a)


RANKED = """import tilelang.language as T

N = T.dynamic("N")


@T.prim_func
def publish(x: T.Tensor((N, 256), "float32"), y: T.Tensor((N, 256), "float32"),
            sig: T.Tensor((8,), "int32")):
    with T.Kernel(N) as bx:
        T.copy(x[bx, 0:256], y[bx, 0:256], eviction_policy="evict_first")
        T.signal_op(sig[0], 1, "add", 1)
"""


@X86
def test_a_kernel_that_streams_fences_before_it_signals():
    llvm = compiled(RANKED).llvm()
    impl = llvm[llvm.index("define void @publish__blocks"):]      # the block loop inlined
    impl = impl[:impl.index("\n}\n")]
    assert "!nontemporal" in impl
    # the signal's block: the fence right before the atomic add; and one more fence,
    # after the blocks
    blocks = re.split(r"\n(?=[\w.]+:)", impl)
    (signal,) = [blk for blk in blocks if "atomicrmw add" in blk]
    lines = signal.splitlines()
    at = next(i for i, line in enumerate(lines) if "atomicrmw add" in line)
    assert any("@llvm.x86.sse.sfence" in line for line in lines[:at]), signal
    assert impl.count("call void @llvm.x86.sse.sfence") >= 2, impl


PARALLEL = """import tilelang.language as T

M = T.dynamic("M")


@T.prim_func
def scale(A: T.Tensor((M, 4, 256), "float32"), B: T.Tensor((M, 4, 256), "bfloat16")):
    with T.Kernel(M) as bx:
        for i, j in T.Parallel(4, 256, annotations={"eviction_policy": "evict_first",
                                                    "parallel_prefer_async": True}):
            B[bx, i, j] = T.cast(A[bx, i, j] * 2.0, "bfloat16")
"""


def test_a_parallel_loop_takes_the_hint_through_tilelangs_annotations():
    mod = parse_module(PARALLEL, "k.tl")
    loops = [n for n in walk(mod) if isinstance(n, For)]
    # the nest's innermost loop, the one whose stores it is about; other keys: no effect
    assert [n.annotations for n in loops] == [(), (("eviction_policy", "evict_first"),)]
    assert parse_module(print_module(mod), "<printed>") == mod
    k = compiled(PARALLEL)
    a = np.arange(3 * 4 * 256, dtype=np.float32).reshape(3, 4, 256)
    b = aligned(a.shape, ml_dtypes.bfloat16)
    k(a, b)
    np.testing.assert_array_equal(b.astype(np.float32), (a * 2).astype(ml_dtypes.bfloat16)
                                  .astype(np.float32))
    if platform.machine() in ("x86_64", "AMD64"):
        assert "movntdq" in k.asm()


def test_a_bad_hint_in_parallel_annotations_is_tl0320():
    from tilelang.diagnostics import TileLangError
    with pytest.raises(TileLangError) as info:
        parse_module(PARALLEL.replace('"evict_first"', '"evict_soon"'), "k.tl")
    assert info.value.diagnostics[0].code == "TL0320"


def aligned(shape, dtype):
    dt = np.dtype(dtype)
    count = int(np.prod(shape))
    raw = np.zeros(count * dt.itemsize + 64, np.uint8)
    skip = -raw.ctypes.data % 64
    return raw[skip:skip + count * dt.itemsize].view(dt).reshape(shape)
