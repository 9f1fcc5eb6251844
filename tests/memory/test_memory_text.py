"""Before/after tests of `memory_reuse` written as `.tl` text: parse the before text, run
the pass, compare with the after text, whose `offset=` / `align=` are the plan."""
from __future__ import annotations

import textwrap

import pytest

from tilelang.frontend import parse_module
from tilelang.ir.printer import print_module
from tilelang.ir.verifier import verify
from tilelang.passes.memory_reuse import memory_reuse

HEADER = '''import tilelang.language as T

N = T.dynamic("N")


@T.prim_func
def k(X: T.Tensor((N, 64), "float32"), Y: T.Tensor((N, 64), "float32")):
    with T.Kernel(T.ceildiv(N, 64), threads=128) as bx:
'''


def parse(body: str):
    text = HEADER + textwrap.indent(textwrap.dedent(body), " " * 8)
    mod = parse_module(text, "<test>")
    verify(mod)
    return mod


def check(before: str, after: str):
    got = memory_reuse(parse(before))
    verify(got)
    want = parse(after)
    if got != want:
        pytest.fail(f"--- got:\n{print_module(got)}\n--- want:\n{print_module(want)}")
    assert parse_module(print_module(got), "<printed>") == got


def test_straight_line_reuse():
    # A_s is dead once it is copied out; B_s takes its bytes
    check('''
        A_s = T.alloc_shared((64, 64), "float32")
        B_s = T.alloc_shared((64, 64), "float32")
        T.copy(X[bx * 64, 0], A_s)
        T.copy(A_s, Y[bx * 64, 0])
        T.copy(X[bx * 64, 0], B_s)
        T.copy(B_s, Y[bx * 64, 0])
    ''', '''
        A_s = T.alloc_shared((64, 64), "float32", offset=0, align=64)
        B_s = T.alloc_shared((64, 64), "float32", offset=0, align=64)
        T.copy(X[bx * 64, 0], A_s)
        T.copy(A_s, Y[bx * 64, 0])
        T.copy(X[bx * 64, 0], B_s)
        T.copy(B_s, Y[bx * 64, 0])
    ''')


def test_overlapping_lifetimes_do_not_share():
    check('''
        A_s = T.alloc_shared((64, 64), "float32")
        B_s = T.alloc_shared((64, 64), "float32")
        T.copy(X[bx * 64, 0], A_s)
        T.copy(A_s, B_s)
        T.copy(B_s, Y[bx * 64, 0])
    ''', '''
        A_s = T.alloc_shared((64, 64), "float32", offset=0, align=64)
        B_s = T.alloc_shared((64, 64), "float32", offset=16384, align=64)
        T.copy(X[bx * 64, 0], A_s)
        T.copy(A_s, B_s)
        T.copy(B_s, Y[bx * 64, 0])
    ''')


def test_reuse_after_a_loop():
    # T_s is used only inside the loop (fully rewritten by every iteration before it is
    # read); O_s, used after the loop, reuses it. The accumulator lives across the loop.
    check('''
        T_s = T.alloc_shared((64, 64), "float32")
        O_s = T.alloc_shared((64, 64), "float32")
        acc = T.alloc_fragment((64, 64), "float32")
        T.clear(acc)
        for t in range(4):
            T.copy(X[bx * 64, 0], T_s)
            for i, j in T.Parallel(64, 64):
                acc[i, j] = acc[i, j] + T_s[i, j]
        T.copy(acc, O_s)
        T.copy(O_s, Y[bx * 64, 0])
    ''', '''
        T_s = T.alloc_shared((64, 64), "float32", offset=0, align=64)
        O_s = T.alloc_shared((64, 64), "float32", offset=0, align=64)
        acc = T.alloc_fragment((64, 64), "float32", offset=0, align=64)
        T.clear(acc)
        for t in range(4):
            T.copy(X[bx * 64, 0], T_s)
            for i, j in T.Parallel(64, 64):
                acc[i, j] = acc[i, j] + T_s[i, j]
        T.copy(acc, O_s)
        T.copy(O_s, Y[bx * 64, 0])
    ''')


LOOP_BODY = '''
        for t in {loop}:
            T.copy(X[t * 64, 0], A_s)
            T.copy(A_s, F)
            T.copy(F, D_s)
            T.copy(D_s, Y[t * 64, 0])
'''


def _allocs(a_off, d_off):
    return f'''
        A_s = T.alloc_shared((64, 64), "float32", offset={a_off}, align=64)
        D_s = T.alloc_shared((64, 64), "float32", offset={d_off}, align=64)
        F = T.alloc_fragment((64, 64), "float32", offset=0, align=64)
'''


def test_serial_loop_reuses_a_dead_load_buffer():
    # in a plain loop A_s is dead once F holds its copy, so D_s may take its bytes
    before = _allocs(0, 0).replace(", offset=0, align=64", "") + \
        LOOP_BODY.format(loop="range(4)")
    check(before, _allocs(0, 0) + LOOP_BODY.format(loop="range(4)"))


def test_pipelined_loop_keeps_stage_buffers_apart():
    # the same body pipelined: A_s is a stage buffer (filled from global memory for a
    # later iteration while this one runs), live for the whole loop — D_s may not reuse it
    body = LOOP_BODY.format(loop="T.Pipelined(4, num_stages=2)")
    before = _allocs(0, 0).replace(", offset=0, align=64", "") + body
    check(before, _allocs(0, 16384) + body)


def test_buffer_read_across_the_back_edge_is_not_reused():
    # P_s is read at the top of an iteration and written at its bottom: the value crosses
    # the back edge, so P_s is live for the whole loop and Q_s (live only in the middle)
    # may not take its bytes, although their program-order ranges look disjoint
    body = '''
        T.copy(X[bx * 64, 0], P_s)
        for t in range(4):
            T.copy(P_s, Y[t * 64, 0])
            T.copy(X[t * 64, 0], Q_s)
            T.copy(Q_s, Y[t * 64, 0])
            T.copy(X[t * 64, 0], P_s)
    '''
    check('''
        P_s = T.alloc_shared((64, 64), "float32")
        Q_s = T.alloc_shared((64, 64), "float32")
    ''' + body, '''
        P_s = T.alloc_shared((64, 64), "float32", offset=0, align=64)
        Q_s = T.alloc_shared((64, 64), "float32", offset=16384, align=64)
    ''' + body)


def test_loop_local_buffer_in_a_loop_body_reuses_within_the_iteration():
    # without the back-edge read, the same shape of program does share
    body = '''
        for t in range(4):
            T.copy(X[t * 64, 0], P_s)
            T.copy(P_s, Y[t * 64, 0])
            T.copy(X[t * 64, 0], Q_s)
            T.copy(Q_s, Y[t * 64, 0])
    '''
    check('''
        P_s = T.alloc_shared((64, 64), "float32")
        Q_s = T.alloc_shared((64, 64), "float32")
    ''' + body, '''
        P_s = T.alloc_shared((64, 64), "float32", offset=0, align=64)
        Q_s = T.alloc_shared((64, 64), "float32", offset=0, align=64)
    ''' + body)


def test_partial_write_in_a_loop_keeps_the_buffer_live():
    # only half of P_s is rewritten per iteration: the other half is read from earlier
    # iterations (or from before the loop), so P_s stays live across the loop
    body = '''
        T.copy(X[bx * 64, 0], P_s)
        for t in range(4):
            T.copy(X[t * 64, 0], P_s[0:32, 0:64])
            T.copy(P_s, Y[t * 64, 0])
            T.copy(X[t * 64, 0], Q_s)
            T.copy(Q_s, Y[t * 64, 0])
    '''
    check('''
        P_s = T.alloc_shared((64, 64), "float32")
        Q_s = T.alloc_shared((64, 64), "float32")
    ''' + body, '''
        P_s = T.alloc_shared((64, 64), "float32", offset=0, align=64)
        Q_s = T.alloc_shared((64, 64), "float32", offset=16384, align=64)
    ''' + body)


# ----------------------------------------------------------------------------- in the pipeline

CASES = {
    "pipelined": ('''
        A_s = T.alloc_shared((64, 64), "float32")
        D_s = T.alloc_shared((64, 64), "float32")
        F = T.alloc_fragment((64, 64), "float32")
    ''' + LOOP_BODY.format(loop="T.Pipelined(4, num_stages=2)"), {"A_s": 0, "D_s": 16384}),
    "serial": ('''
        A_s = T.alloc_shared((64, 64), "float32")
        D_s = T.alloc_shared((64, 64), "float32")
        F = T.alloc_fragment((64, 64), "float32")
    ''' + LOOP_BODY.format(loop="range(4)"), {"A_s": 0, "D_s": 0}),
    "back_edge": ('''
        P_s = T.alloc_shared((64, 64), "float32")
        Q_s = T.alloc_shared((64, 64), "float32")
        T.copy(X[bx * 64, 0], P_s)
        for t in range(4):
            T.copy(P_s, Y[t * 64, 0])
            T.copy(X[t * 64, 0], Q_s)
            T.copy(Q_s, Y[t * 64, 0])
            T.copy(X[t * 64, 0], P_s)
    ''', {"P_s": 0, "Q_s": 16384}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_lowered_loops_get_the_same_plan(case):
    """In the CPU pipeline the pass sees the tile ops lowered to loops of stores; the
    covering-store analysis must reach the same plan as on the tile ops."""
    from tilelang.driver import make_options
    from tilelang.driver.stages import lower
    from tilelang.ir.nodes import Alloc
    from tilelang.ir.visitor import walk
    body, want = CASES[case]
    lowered = lower(parse(body), make_options(), until="memory_reuse")
    got = {n.buffer.name: n.offset for n in walk(lowered)
           if isinstance(n, Alloc) and n.buffer.scope == "shared"}
    assert got == want
