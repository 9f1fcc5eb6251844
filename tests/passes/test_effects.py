"""Tile-op effects (`Stmt.effects()`, next to the node definitions in ir/nodes.py): what
each statement reads and writes, the safe answer of a statement that does not say, and the
users of that one answer: liveness, dce, and the stage rule tcsim's code generator
shares with the arena planner."""
from __future__ import annotations

from dataclasses import dataclass

from tilelang.frontend import parse_module
from tilelang.ir import (Alloc, Copy, Fill, For, Gemm, Kernel, Module, Prefetch, Reduce, Region,
                         Seq, Stmt, Store, TileAtomic, walk)
from tilelang.ir.nodes import Span, _span
from tilelang.ir.pipelining import stage_producers

KERNEL = '''
import tilelang.language as T
M = T.dynamic("M")

@T.prim_func
def k(A: T.Tensor((M, 64), "float32"), B: T.Tensor((64, 64), "float32"),
      C: T.Tensor((M, 64), "float32"), idx: T.Tensor((4,), "int32")):
    with T.Kernel(T.ceildiv(M, 32), threads=128) as bx:
        A_s = T.alloc_shared((32, 64), "float32")
        B_s = T.alloc_shared((64, 64), "float32")
        C_f = T.alloc_fragment((32, 64), "float32")
        R = T.alloc_fragment((32,), "float32")
        T.clear(C_f)
        T.copy(A[bx * 32 + idx[1], 0], A_s)
        T.copy(B[0:32, 0:64], B_s[0:32, 0:64])
        T.gemm(A_s, B_s, C_f)
        T.gemm(A_s, B_s, C_f, clear_accum=True)
        T.reduce_sum(C_f, R, dim=1)
        T.reduce_max(C_f, R, dim=1, clear=False)
        T.atomic_add(C[bx * 32, 0], C_f)
        T.prefetch(A[0:32, 0:64], part=0, parts=2)
        C_f[0, 0] = C_f[0, 1] + A_s[idx[0], 0]
'''


def _statements():
    module = parse_module(KERNEL, "k.tl")
    kernel = next(n for n in walk(module) if isinstance(n, Kernel))
    return [s for s in kernel.body.stmts if not isinstance(s, Alloc)]


def _summary(stmt):
    e = stmt.effects()
    return sorted(e.reads()), sorted(e.writes()), sorted(e.overwrites())


def test_each_statement_says_what_it_reads_and_writes():
    got = [(type(s).__name__, *_summary(s)) for s in _statements()]
    assert got == [
        ("Fill", [], ["C_f"], ["C_f"]),
        ("Copy", ["A", "idx"], ["A_s"], ["A_s"]),           # the index load is a read
        ("Copy", ["B"], ["B_s"], []),                        # half of B_s: not whole
        ("Gemm", ["A_s", "B_s", "C_f"], ["C_f"], []),        # accumulates: reads C
        ("Gemm", ["A_s", "B_s"], ["C_f"], ["C_f"]),          # clear_accum overwrites C
        ("Reduce", ["C_f"], ["R"], ["R"]),
        ("Reduce", ["C_f", "R"], ["R"], []),                 # clear=False combines
        ("TileAtomic", ["C", "C_f"], ["C"], []),
        ("Prefetch", ["A"], [], []),
        ("Store", ["A_s", "C_f", "idx"], ["C_f"], []),
    ]


def test_tile_op_accesses_carry_their_regions():
    copy = _statements()[2]
    (read,) = [a for a in copy.effects().accesses if a.mode == "read"]
    (write,) = [a for a in copy.effects().accesses if a.mode == "write"]
    assert read.region == copy.src and read.whole is False
    assert write.region == copy.dst and write.region.extents == (32, 64)


def test_loops_and_branches_write_nothing_surely():
    fill = _statements()[0]
    assert fill.effects().overwrites() == {"C_f"}
    from tilelang.ir import Const, Var
    loop = For(Var("i"), Const(0, "int32"), Const(2, "int32"), "serial", fill)
    assert loop.effects().writes() == {"C_f"} and loop.effects().overwrites() == set()
    assert Seq((fill,)).effects().overwrites() == {"C_f"}


@dataclass(frozen=True)
class Mystery(Stmt):
    """A statement that does not say what it does (a tile op added without effects)."""
    region: Region
    span: Span = _span()


def test_a_statement_that_does_not_say_reads_and_writes_all_it_mentions():
    copy = _statements()[1]
    e = Mystery(copy.src).effects()
    assert e.reads() == e.writes() == {"A", "idx"} and e.overwrites() == set()


def _pipelined(body):
    from tilelang.ir import Const, Var
    return For(Var("k"), Const(0, "int32"), Const(4, "int32"), "pipelined", Seq(tuple(body)),
               annotations=(("num_stages", 2),))


def test_the_stage_rule():
    fill, load_a, load_b, gemm = _statements()[:4]
    local = {"A_s", "B_s", "C_f", "R"}.__contains__
    assert stage_producers(_pipelined([load_a, gemm]).body, local, set()) == {"A_s": 0}
    # used after the loop, or written again in it: not a stage buffer
    assert stage_producers(_pipelined([load_a, gemm]).body, local, {"A_s"}) == {}
    assert stage_producers(_pipelined([load_a, gemm, load_a]).body, local, set()) == {}
    # mentioned before its load in the body
    assert stage_producers(_pipelined([gemm, load_a]).body, local, set()) == {}
    # a statement that may write the source (it does not say) keeps the loads in order
    assert stage_producers(_pipelined([load_a, gemm, Mystery(load_a.src)]).body, local,
                           set()) == {}


def test_liveness_is_safe_around_a_statement_that_does_not_say():
    from tilelang.passes.liveness import block_liveness
    fill, load_a, load_b, gemm = _statements()[:4]
    allocs = [n for n in walk(parse_module(KERNEL, "k.tl")) if isinstance(n, Alloc)]
    from tilelang.ir import Const, Var
    i = Var("i")
    # A_s is read by the mystery op in the next iteration before this one loads it
    body = Seq((Mystery(Region(load_a.dst.buffer, (Const(0, "int32"),) * 2, (1, 1))),
                load_a))
    kernel = Kernel((Const(1, "int32"),), (Var("bx"),), 128,
                    Seq(tuple(allocs) + (For(i, Const(0, "int32"), Const(4, "int32"),
                                             "serial", body), fill)))
    live = {lv.name: (lv.start, lv.end) for lv in block_liveness(kernel)}
    header = len(allocs)                # points: the allocations, the loop, its two statements
    assert live["A_s"] == (header, header + 2)          # the whole loop, not just [+1, +2]


def test_dce_keeps_a_buffer_only_a_statement_that_does_not_say_touches():
    from tilelang.passes.dce import dce
    module = parse_module(KERNEL, "k.tl")
    func = module.funcs[0]
    kernel = next(n for n in walk(func) if isinstance(n, Kernel))
    r_alloc = next(s for s in kernel.body.stmts if isinstance(s, Alloc) and s.buffer.name == "R")
    from dataclasses import replace
    from tilelang.ir import Const
    mystery = Mystery(Region(r_alloc.buffer, (Const(0, "int32"),), (32,)))
    new_kernel = replace(kernel, body=Seq((r_alloc, mystery)))
    out = dce(Module((replace(func, body=Seq((new_kernel,))),)))
    assert any(isinstance(n, Alloc) and n.buffer.name == "R" for n in walk(out))


def test_planner_and_tcsim_codegen_agree_on_stage_buffers():
    """The stage buffers memory_reuse gives ring copies are exactly those the tcsim code
    generator pipelines (gemm.tl, 3 stages)."""
    from pathlib import Path
    from tilelang.driver import make_options
    from tilelang.driver.stages import compile_module, lower
    from tilelang.passes.liveness import block_liveness, kernel_of
    path = Path(__file__).resolve().parents[2] / "examples" / "gemm.tl"
    options = make_options(target="tcsim:h100_like", defines={"NUM_STAGES": 3})
    module = parse_module(path.read_text(), str(path), defines={"NUM_STAGES": 3})
    tile_ir = lower(module, options, until="simplify")
    planned = {lv.name for lv in block_liveness(kernel_of(tile_ir.funcs[0].body), rings=True)
               if lv.stages > 1}
    program = compile_module(module, options)["gemm"].program
    ringed = {b.name for b in program.buffers if b.stages > 1}
    assert planned == ringed == {"A_s", "B_s"}
