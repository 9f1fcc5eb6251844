"""The tcsim code emitter: registers, buffers, and the synchronisation every engine
instruction needs.

Ordering protocol (one semaphore per engine, `done[E]`): every engine instruction
signals its engine's semaphore, and the scalar register `c_E` counts them (the phase of
the latest one: engines complete in order, so waiting `done[E]@p` waits for all of E's
instructions up to p). After dispatching an instruction that writes buffer B, the phase
goes to register `w(B, E)`; after one that reads B, to `r(B, E)`. An instruction on
engine E then waits, for every other engine E' that ever touches B (a static table from
a first pass over the kernel):
  * reading B: `done[E']@w(B, E')` (read after write),
  * writing B: `done[E']@w(B, E')` and `done[E']@r(B, E')` (write after write / read).
Registers start at -1 (phase -1 is complete from the start), so accesses that have not
happened yet in this block order nothing. Global tensors are tracked the same way
(DMA_IN reads them, DMA_OUT writes them). Ring buffers of pipelined loops replace the
read-after-write register by a chain (pipeline.py), which is what lets loads run ahead.
"""
from __future__ import annotations

from ...targets.tcsim.isa import (BufferDecl, Imm, Instr, Reg, SemRef, Tile, Wait, make)

ENGINES = ("DMA_IN", "DMA_OUT", "MMA", "VEC")


class Emitter:
    def __init__(self, access_table: dict | None = None, groups: dict | None = None):
        self.code: list[Instr] = []
        self.nregs = 0
        self.buffers: dict[str, BufferDecl] = {}
        # buffers that share bytes (an arena plan) synchronise as one: name -> key
        self.groups = groups or {}
        self.table = {}                          # key -> {(engine, "w"|"r")}
        for name, entries in (access_table or {}).items():
            self.table.setdefault(self.key(name), set()).update(entries)
        self.seen: dict = {}                     # the table this pass builds
        self.track: dict = {}                    # (name, engine, kind) -> register
        self.counter = {e: self.reg() for e in ENGINES}
        self.chains: dict[str, list[int]] = {}   # ring buffer -> RAW phase registers
        self.stage_reg: dict[str, Reg] = {}      # ring buffer -> its current stage register

    # ------------------------------------------------------------------ registers
    def reg(self) -> int:
        self.nregs += 1
        return self.nregs - 1

    def emit(self, op: str, *args, **attrs) -> Instr:
        ins = make(op, *args, **attrs)
        self.code.append(ins)
        return ins

    def tracking(self, name: str, engine: str, kind: str) -> int:
        key = (name, engine, kind)
        if key not in self.track:
            self.track[key] = self.reg()
        return self.track[key]

    def prologue(self) -> list[Instr]:
        """Registers that start at -1: engine counters, tracking and chain registers."""
        regs = list(self.counter.values()) + list(self.track.values())
        for chain in self.chains.values():
            regs += chain
        return [make("MOV", Reg(r), Imm(-1)) for r in regs]

    # ------------------------------------------------------------------ buffers
    def key(self, name: str) -> str:
        return self.groups.get(name, name)

    def declare(self, name: str, level: str, dtype: str, shape, stages: int = 1,
                offset: int | None = None, transient: bool = False) -> None:
        self.buffers[name] = BufferDecl(name, level, dtype, tuple(shape), stages, offset,
                                        transient)

    def tile(self, name: str, dims=None) -> Tile:
        return Tile(name, self.stage_reg.get(name), dims)

    # ------------------------------------------------------------------ engine ops
    def engine_op(self, engine: str, op: str, args: tuple, reads=(), writes=(), **attrs):
        """Emit `op` with the waits its accesses need and the signal the protocol uses.
        `reads` / `writes` name buffers and global tensors."""
        waits = []
        for name in reads:
            waits += self._waits(name, engine, ("w",))
        for name in writes:
            waits += self._waits(name, engine, ("w", "r"))
        c = self.counter[engine]
        self.emit("ADDI", Reg(c), Reg(c), Imm(1))
        attrs["signal"] = SemRef("done", Imm(ENGINES.index(engine)))
        if waits:
            attrs["wait"] = tuple(dict.fromkeys(waits))
        self.emit(op, *args, **attrs)
        for name in writes:
            self._note(name, engine, "w")
            # ring buffers' own readers use the chain; buffers sharing their bytes use this
            self.emit("MOV", Reg(self.tracking(self.key(name), engine, "w")), Reg(c))
        for name in reads:
            self._note(name, engine, "r")
            self.emit("MOV", Reg(self.tracking(self.key(name), engine, "r")), Reg(c))

    def _note(self, name, engine, kind):
        self.seen.setdefault(name, set()).add((engine, kind))

    def _waits(self, name: str, engine: str, kinds) -> list[Wait]:
        out = []
        key = self.key(name)
        for other, kind in sorted(self.table.get(key, ())):
            if other == engine or kind not in kinds:
                continue
            if kind == "w" and name in self.chains and other == "DMA_IN":
                reg = self.chains[name][-1]          # the write of this iteration
            else:
                reg = self.tracking(key, other, kind)
            out.append(Wait(SemRef("done", Imm(ENGINES.index(other))), Reg(reg)))
        return out

