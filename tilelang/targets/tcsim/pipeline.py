"""The tcsim target's pass pipeline. Its code generator lowers whole tile ops itself
(tilelang/codegen/tcsim), so the pipeline keeps them: it simplifies, then plans the
on-chip arenas (128-byte slots, pipeline stages as rings)."""
from __future__ import annotations

from functools import partial

from ...passes.manager import Pass
from ...passes.memory_reuse import TCSIM_RULES, memory_reuse
from ...passes.simplify import simplify


def tcsim_pipeline() -> list[Pass]:
    return [
        Pass("simplify", simplify,
             "fold constants, apply algebraic identities, drop trivial ifs and loops"),
        Pass("memory_reuse", partial(memory_reuse, rules=TCSIM_RULES),
             "place on-chip tiles with disjoint lifetimes in one arena per level "
             "(128-byte slots, pipeline stages as rings)"),
    ]
