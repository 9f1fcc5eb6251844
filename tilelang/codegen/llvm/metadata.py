"""Loop metadata (`!llvm.loop`): vectorise / unroll hints.

LLVM wants a distinct, self-referencing node (`!5 = distinct !{!5, !6}`); llvmlite's
`add_metadata` only makes uniqued nodes, so `DistinctNode` prints itself that way (alias
domains and scopes, `arena.py`, take the same form).
"""
from __future__ import annotations

from llvmlite import ir
from llvmlite.ir.values import MDValue


class DistinctNode(MDValue):
    """A distinct, self-referencing metadata node (`!5 = distinct !{!5, ...}`)."""

    def descr(self, buf):
        ops = ", ".join([self.get_reference()] + [op.get_reference() for op in self.operands])
        buf += (f"distinct !{{ {ops} }}", "\n")

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)


def loop_metadata(module: ir.Module, kind: str, extent_is_const: bool,
                  unroll_count: int | None = None) -> MDValue | None:
    """The `!llvm.loop` node for a loop of `kind`, or None when it needs no hints."""
    hints = []
    # "vectorized" loops get no forced hint: LLVM's cost model vectorises innermost loops
    # at O2+ anyway, and a forced `vectorize.enable` that cannot be honoured (guarded
    # control flow) prints "loop not vectorized" warnings to the user's stderr.
    if kind == "vectorized":
        # left rolled for the loop vectoriser: fully unrolled first (a short constant
        # trip count), a guarded body is scalarised and SLP cannot win it back
        hints.append(module.add_metadata(["llvm.loop.unroll.disable"]))
    if kind == "unroll":
        if unroll_count:
            hints.append(module.add_metadata(["llvm.loop.unroll.count",
                                              ir.Constant(ir.IntType(32), unroll_count)]))
        elif extent_is_const:
            hints.append(module.add_metadata(["llvm.loop.unroll.full"]))
        else:
            hints.append(module.add_metadata(["llvm.loop.unroll.enable"]))
    if not hints:
        return None
    return DistinctNode(module, hints, name=str(len(module.metadata)))
