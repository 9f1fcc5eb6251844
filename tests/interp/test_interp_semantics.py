"""The reference interpreter against docs/semantics.md, one rule at a time, on small
`.tl` kernels (parsed IR; the lowered stages are covered by the example tests)."""
from __future__ import annotations

import numpy as np
import pytest

from tilelang.frontend import parse_module
from tilelang.ir import interp
from tilelang.driver import make_options
from tilelang.driver.stages import lower


def kernel(body: str, params: str = 'A: T.Tensor((N,), "float32")', grid: str = "1",
           extra: str = "") -> str:
    lines = "\n".join("        " + ln for ln in body.strip("\n").splitlines())
    return (f'import tilelang.language as T\nN = T.dynamic("N")\n{extra}\n'
            f"@T.prim_func\ndef k({params}):\n    with T.Kernel({grid}) as bx:\n{lines}\n")


def run(text: str, *args, **kw):
    return interp.run(parse_module(text, "k.tl"), "k", list(args), **kw)


# ----------------------------------------------------------------------------- arithmetic

def test_each_operation_rounds_to_its_dtype():
    h = np.array([1.0, 2.0 ** -11, 0.0], np.float16)
    text = kernel("H[2] = H[0] + H[1] + H[1]", 'H: T.Tensor((3,), "float16")')
    run(text, h)
    assert h[2] == np.float16(1.0)          # each + rounds: 1 + 2^-11 ties to even, twice


def test_integers_wrap_in_their_dtype_after_each_operation():
    a = np.array([100, 3, 0], np.int8)
    run(kernel("A[2] = A[0] * A[1] // 7", 'A: T.Tensor((3,), "int8")'), a)
    assert a[2] == np.int8(44 // 7)         # 300 wraps to 44 before the division


def test_integer_division_by_zero_gives_zero_and_floors():
    a = np.array([-7, 0, 2, 0, 0], np.int32)
    run(kernel("A[3] = A[0] // A[1]\nA[4] = A[0] // A[2] + A[0] % A[2]",
               'A: T.Tensor((5,), "int32")'), a)
    assert a[3] == 0 and a[4] == -4 + 1


def test_float_to_int_out_of_range_is_undefined():
    a = np.array([1e10, 0], np.float32)
    with pytest.raises(interp.UndefinedBehavior) as info:
        run(kernel('B[0] = T.cast(A[0], "int32")',
                   'A: T.Tensor((2,), "float32"), B: T.Tensor((1,), "int32")'), a,
            np.zeros(1, np.int32))
    assert info.value.kind == "bad-cast"


def test_min_max_ignore_nan():
    a = np.array([np.nan, 1.0, 0.0], np.float32)
    run(kernel("A[2] = T.max(A[0], A[1])", 'A: T.Tensor((3,), "float32")'), a)
    assert a[2] == 1.0


# ----------------------------------------------------------------------------- memory

def test_global_out_of_bounds_reads_zero_and_writes_nothing():
    a = np.arange(4, dtype=np.float32) + 1
    text = kernel("t = T.alloc_fragment((8,), \"float32\")\nT.copy(A[0], t)\n"
                  "for i in T.Parallel(8):\n    t[i] = t[i] * 2.0\nT.copy(t, A[2])")
    run(text, a)
    np.testing.assert_array_equal(a, [1, 2, 2, 4])


def test_reading_unwritten_local_memory_is_poison_that_must_not_reach_an_output():
    text = kernel('t = T.alloc_fragment((4,), "float32")\nt[0] = 1.0\nT.copy(t, A)')
    with pytest.raises(interp.UndefinedBehavior) as info:
        run(text, np.zeros(4, np.float32))
    assert info.value.kind == "uninitialized"
    ok = kernel('t = T.alloc_fragment((4,), "float32")\nt[0] = 1.0\nA[0] = t[0]')
    run(ok, np.zeros(4, np.float32))       # unwritten elements that are never used


def test_a_condition_on_unwritten_memory_is_undefined():
    text = kernel('t = T.alloc_fragment((4,), "float32")\nif t[1] > 0.0:\n    A[0] = 1.0')
    with pytest.raises(interp.UndefinedBehavior):
        run(text, np.zeros(4, np.float32))


def test_two_blocks_writing_one_element_is_a_race():
    text = kernel("A[0] = T.cast(bx, \"float32\")", grid="2")
    with pytest.raises(interp.UndefinedBehavior) as info:
        run(text, np.zeros(4, np.float32))
    assert info.value.kind == "block-race"
    atomics = kernel("T.atomic_add(A[0], 1.0)", grid="3")
    a = np.zeros(4, np.float32)
    run(atomics, a)
    assert a[0] == 3


def test_tile_atomics_from_many_blocks_add_up():
    """A tile T.atomic_add: the source region converted to the destination's dtype, the
    two regions walked in step (rows 1-2 of a 2-d fragment onto A[2:4])."""
    text = kernel('t = T.alloc_fragment((4, 2), "float16")\nT.fill(t, 0.5)\n'
                  "T.fill(t[1:3, 0:1], T.cast(bx, \"float16\") + 1.25)\n"
                  "T.atomic_add(A[2:4], t[1:3, 0])", grid="3")
    a = np.zeros(5, np.float32)
    run(text, a)
    np.testing.assert_array_equal(a, [0, 0, 1.25 + 2.25 + 3.25, 1.25 + 2.25 + 3.25, 0])


def test_parallel_iterations_touching_one_element_conflict():
    """A scatter through an index table: the frontend cannot tell, the interpreter can."""
    text = kernel('t = T.alloc_fragment((4,), "float32")\nT.clear(t)\n'
                  "for i in T.Parallel(4):\n    t[I[i]] = A[i] + 1.0\nT.copy(t, A)",
                  'A: T.Tensor((4,), "float32"), I: T.Tensor((4,), "int32")')
    a = np.arange(4, dtype=np.float32)
    run(text, a, np.array([2, 0, 3, 1], np.int32))          # a permutation: fine
    np.testing.assert_array_equal(a, [2, 4, 1, 3])
    with pytest.raises(interp.UndefinedBehavior) as info:
        run(text, np.zeros(4, np.float32), np.array([2, 0, 2, 1], np.int32))
    assert info.value.kind == "parallel-conflict"


def test_an_arena_placement_that_overlaps_live_buffers_shows_up():
    """A correct plan runs; a buffer forced onto the bytes of one still in use reads
    poison (a wrong memory_reuse would be caught by the differential tests)."""
    from dataclasses import replace
    from tilelang.ir import Alloc, rewrite
    text = kernel('a = T.alloc_fragment((4,), "float32")\nb = T.alloc_fragment((4,), "float32")\n'
                  "T.copy(A, a)\nT.copy(A, b)\nfor i in T.Parallel(4):\n"
                  "    a[i] = a[i] + b[i]\nT.copy(a, A)", 'A: T.Tensor((4,), "float32")')
    planned = lower(parse_module(text, "k.tl"), make_options(), until="memory_reuse")
    x = np.arange(4, dtype=np.float32)
    interp.run(planned, "k", [x])
    np.testing.assert_array_equal(x, 2 * np.arange(4))
    clash = rewrite(planned, lambda n: replace(n, offset=0)
                    if isinstance(n, Alloc) and n.offset is not None else None)
    with pytest.raises(interp.UndefinedBehavior):
        interp.run(clash, "k", [np.arange(4, dtype=np.float32) + 1])


# ----------------------------------------------------------------------------- tile ops, grids

def test_gemm_accumulates_in_order_in_the_accumulator_dtype():
    text = ('import tilelang.language as T\n\n@T.prim_func\n'
            'def k(A: T.Tensor((4, 8), "float16"), B: T.Tensor((8, 4), "float16"),\n'
            '      C: T.Tensor((4, 4), "float32")):\n    with T.Kernel(1) as bx:\n'
            '        a = T.alloc_shared((4, 8), "float16")\n'
            '        b = T.alloc_shared((8, 4), "float16")\n'
            '        c = T.alloc_fragment((4, 4), "float32")\n'
            '        T.copy(A, a)\n        T.copy(B, b)\n        T.clear(c)\n'
            '        T.gemm(a, b, c)\n        T.copy(c, C)\n')
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 8)).astype(np.float16), rng.standard_normal((8, 4)).astype(np.float16)
    c = np.zeros((4, 4), np.float32)
    result = interp.run(parse_module(text, "k.tl"), "k", [a, b, c], magnitudes=True)
    want = np.zeros((4, 4), np.float32)
    for kk in range(8):
        want = want + a[:, kk:kk + 1].astype(np.float32) * b[kk:kk + 1, :].astype(np.float32)
    np.testing.assert_array_equal(c, want)
    np.testing.assert_allclose(result.magnitudes["C"],
                               np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))


def test_reduce_kinds_and_clear():
    text = ('import tilelang.language as T\n\n@T.prim_func\n'
            'def k(X: T.Tensor((3, 5), "float32"), Y: T.Tensor((5, 3), "float32")):\n'
            '    with T.Kernel(1) as bx:\n'
            '        x = T.alloc_fragment((3, 5), "float32")\n'
            '        r = T.alloc_fragment((3,), "float32")\n'
            '        T.copy(X, x)\n'
            '        T.reduce_absmax(x, r, dim=1)\n        T.copy(r, Y[0, 0:3])\n'
            '        T.reduce_sum(x, r, dim=1, clear=False)\n        T.copy(r, Y[1, 0:3])\n'
            '        T.reduce_min(x, r, dim=1)\n        T.copy(r, Y[2, 0:3])\n')
    x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    y = np.zeros((5, 3), np.float32)
    interp.run(parse_module(text, "k.tl"), "k", [x, y])
    np.testing.assert_array_equal(y[0], np.abs(x).max(1))
    want = np.abs(x).max(1)
    for j in range(5):
        want = want + x[:, j]                  # float32, in order
    np.testing.assert_array_equal(y[1], want)
    np.testing.assert_array_equal(y[2], x.min(1))


def test_a_negative_grid_size_at_launch_runs_no_block():
    a = np.zeros(4, np.float32)
    run(kernel("A[0] = 1.0", grid="N - 10"), a)
    assert a[0] == 0


@pytest.mark.parametrize("order", [None, "reverse", "shuffle"])
def test_block_order_does_not_matter_for_a_valid_kernel(order):
    text = kernel("A[bx] = T.cast(bx, \"float32\") * 2.0", grid="N")
    a = np.zeros(6, np.float32)
    gen = np.random.default_rng(0) if order == "shuffle" else order
    run(text, a, block_order=gen)
    np.testing.assert_array_equal(a, np.arange(6) * 2)


def test_reads_of_an_empty_tensor_give_zero():
    """Found by the fuzzer (a gather from a tensor with 0 rows crashed the interpreter)."""
    text = kernel("for i in T.Parallel(4):\n    A[i] = E[I[i], 0] + 1.0",
                  'A: T.Tensor((4,), "float32"), E: T.Tensor((N, 2), "float32"), '
                  'I: T.Tensor((4,), "int32")')
    a = np.zeros(4, np.float32)
    run(text, a, np.zeros((0, 2), np.float32), np.arange(4, dtype=np.int32))
    np.testing.assert_array_equal(a, [1, 1, 1, 1])


def test_several_grids_run_one_after_another():
    """A kernel body may hold several grids (split, then combine): each finishes before
    the next starts, and blocks of the second may read what any block of the first wrote."""
    from dataclasses import replace
    from tilelang.ir import Kernel, Seq, walk
    first = parse_module(kernel("A[bx] = T.cast(bx, \"float32\") + 1.0", grid="N"), "a.tl")
    second = parse_module(kernel("B[bx] = A[0] + A[N - 1] + A[bx]", grid="N",
                                 params='A: T.Tensor((N,), "float32"), '
                                        'B: T.Tensor((N,), "float32")'), "b.tl")
    grids = [next(n for n in walk(m) if isinstance(n, Kernel)) for m in (first, second)]
    func = replace(second.funcs[0], body=Seq((grids[0], grids[1])))
    a, b = np.zeros(5, np.float32), np.zeros(5, np.float32)
    interp.run(func, None, [a, b])
    np.testing.assert_array_equal(a, np.arange(5) + 1)
    np.testing.assert_array_equal(b, 1 + 5 + a)
