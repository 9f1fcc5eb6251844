"""`memory_reuse`: place the block-local buffers of each kernel in one arena per scope.

Buffers whose live intervals (`liveness.py`) do not overlap may share bytes. Each scope
(`shared`, `fragment`, `local`) of a block gets one arena; every buffer is placed at an
offset in it by interval packing: buffers in order of first use (larger first on ties),
each into the smallest free gap left between the already placed buffers it is live
together with, or on top of them when no gap fits, at a multiple of its alignment.

The plan is data in the IR: each planned `Alloc` carries `offset` and `align`, printed as
`T.alloc_shared((128, 32), "float16", offset=8192, align=64)`, and codegen allocates one
arena per scope and addresses each buffer at its offset. The same planner serves targets
that keep pipeline stages apart (`Rules.rings`): a stage buffer then takes `num_stages`
consecutive copies.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..ir.nodes import Alloc, Module
from ..ir.visitor import rewrite
from ..targets.cpu.machine import MACHINES as CPU_MACHINES
from .liveness import PLANNED_SCOPES, Live, block_liveness


@dataclass(frozen=True)
class Rules:
    """What a target asks of the plan: the alignment of every buffer (bytes, a power of
    two) and whether pipeline stages are separate copies."""
    align: int
    rings: bool = False


# CPU: the widest vector of any CPU target (AVX-512: 64 bytes, also a cache line), so a
# plan holds on every CPU a kernel may be compiled for (`--cpu`), not just the host. The
# CPU runs a pipelined loop's loads in program order, so a stage buffer is one copy.
CPU_RULES = Rules(align=max(64, max(t.vector_bits for t in CPU_MACHINES) // 8), rings=False)
# tcsim: 128-byte aligned tiles (an assumption, the granule of a DMA/swizzle row); its
# codegen turns T.Pipelined into an s-stage ring of on-chip buffers.
TCSIM_RULES = Rules(align=128, rings=True)


@dataclass(frozen=True)
class Slot:
    """A buffer's place: `offset` in its arena, `size` bytes (all stages), `stride`
    bytes between consecutive stages."""
    live: Live
    offset: int
    size: int
    stride: int


@dataclass(frozen=True)
class Arena:
    """The buffers of one memory and their slots. `scope` names the memory: a buffer
    scope, or a target's own name for it (`plan_kernel(memory=...)`)."""
    scope: str
    slots: tuple[Slot, ...]
    align: int

    @property
    def before(self) -> int:
        """Bytes without reuse: every buffer side by side (each at its alignment)."""
        return sum(_round_up(s.size, self.align) for s in self.slots)

    @property
    def after(self) -> int:
        return max((s.offset + s.size for s in self.slots), default=0)


def memory_reuse(module: Module, rules: Rules = CPU_RULES) -> Module:
    """The pass: every plannable Alloc gets the offset and alignment of its plan."""
    funcs = []
    for func in module.funcs:
        grids = func.grids()
        if not grids:
            funcs.append(func)
            continue
        # each grid runs alone (the next starts when it has finished): one plan each
        places = {s.live.name: (s.offset, rules.align) for kernel in grids
                  for arena in plan_kernel(kernel, rules) for s in arena.slots}
        funcs.append(rewrite(func, lambda n: _place(n, places)))
    return replace(module, funcs=tuple(funcs))


def _place(node, places: dict):
    if isinstance(node, Alloc) and node.buffer.name in places \
            and node.buffer.scope in PLANNED_SCOPES:
        offset, align = places[node.buffer.name]
        return replace(node, offset=offset, align=align)
    return None


def plan_kernel(kernel, rules: Rules = CPU_RULES, memory=None) -> list[Arena]:
    """One arena per memory that has buffers. `memory(buffer) -> name` says which memory
    a buffer lives in (default: its scope, in PLANNED_SCOPES order); a target with other
    memories (tcsim's per-level buffers) passes its own, and gets one arena for each."""
    lives = block_liveness(kernel, rings=rules.rings)
    memory = memory or (lambda buf: buf.scope)
    names = list(dict.fromkeys(memory(lv.buffer) for lv in lives))
    if all(n in PLANNED_SCOPES for n in names):
        names = [s for s in PLANNED_SCOPES if s in names]
    arenas = []
    for name in names:
        group = [lv for lv in lives if memory(lv.buffer) == name]
        arenas.append(Arena(name, tuple(pack(group, rules.align)), rules.align))
    return arenas


def pack(lives: list[Live], align: int) -> list[Slot]:
    """Offsets for `lives` such that buffers live at the same point never overlap and
    every offset is a multiple of `align`. Returned in the order of `lives`."""
    placed: dict[str, Slot] = {}
    for lv in sorted(lives, key=lambda v: (v.start, -v.nbytes * v.stages, v.name)):
        stride = _round_up(lv.nbytes, align) if lv.stages > 1 else lv.nbytes
        size = stride * (lv.stages - 1) + lv.nbytes
        busy = sorted((s.offset, s.offset + s.size) for s in placed.values()
                      if s.live.overlaps(lv))
        placed[lv.name] = Slot(lv, _best_fit(busy, size, align), size, stride)
    return [placed[lv.name] for lv in lives]


def _best_fit(busy: list[tuple[int, int]], size: int, align: int) -> int:
    """The aligned start of the smallest gap between the `busy` byte ranges (sorted by
    start) that holds `size` bytes; above them all when none does."""
    best, best_room, top = None, None, 0
    for lo, hi in busy:
        start = _round_up(top, align)
        if start + size <= lo and (best_room is None or lo - top < best_room):
            best, best_room = start, lo - top
        top = max(top, hi)
    return best if best is not None else _round_up(top, align)


def _round_up(n: int, align: int) -> int:
    return -(-n // align) * align
