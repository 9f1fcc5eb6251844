"""Advice from rules over what was measured.

Each rule reads a grid's evidence (the roofline and the facts its target measured:
phase and block times of a timers build on the CPU, per-engine busy and wait shares
and waves on tcsim), and when its trigger holds returns an `Advice` that cites the
evidence ("DMA-wait 41% of cycles on the pipelined loop -> num_stages 3"), says what to
change, and, where the knob is a constant of the source, the defines that make the
change. A rule needs only the facts it names: it applies on any target that measures
them. A rule that resizes blocks proposes only a size its model predicts to be faster:
the blocks' measured times, rescaled (the operand tile a block packs whatever its
other extent, the rest in proportion), scheduled over the threads as the runtime does,
with the block count of the kernel elaborated at that size (`Context.blocks_with`).
The advice list is sorted by `score`, the share of the time the problem costs.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Callable


@dataclass
class Advice:
    rule: str
    problem: str                 # the bottleneck, in a few words
    evidence: str                # the measured figures it rests on
    action: str                  # what to change
    score: float                 # share of the time at stake (0..1), for ordering
    defines: dict = field(default_factory=dict)   # the change, as defines, if settable

    @property
    def line(self) -> str:
        return f"{self.evidence} -> {self.action}"

    def to_dict(self) -> dict:
        return {**asdict(self), "line": self.line}


@dataclass
class Context:
    """What rules may read besides a grid's evidence."""
    knobs: object                # knobs.Knobs
    pipelines: list              # [(loop variable, num_stages)] of the kernel's T.Pipelined
    threads: int
    target: str                  # for wording only ("cpu", "tcsim:h100_like")
    # defines -> each grid's block count with them applied (None: not elaborated)
    blocks_with: Callable[[dict], list | None] | None = None
    steps: dict = field(default_factory=dict)   # role -> the granule of a block size


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%"


def _knob(ctx: Context, role: str, fallback: str) -> str:
    return ctx.knobs.name(role) or fallback


def _scaled(ctx: Context, role: str, factor: float, lo: int = 1) -> dict:
    value = ctx.knobs.value(role)
    if not isinstance(value, int) or isinstance(value, bool):
        return {}
    return ctx.knobs.change(role, max(lo, int(value * factor)))


# ----------------------------------------------------------------------------- rules

def pipeline_wait(ev, ctx: Context):
    """The MMA engine waits on its operands' loads: more stages hide the load latency."""
    wait = ev.facts.get("mma_wait_share")
    if wait is None or wait < 0.10 or not ctx.pipelines:
        return None
    var, stages = min(ctx.pipelines, key=lambda p: p[1])
    if stages >= 4:
        return None
    want = max(3, stages + 1)
    knob = _knob(ctx, "num_stages", "num_stages")
    return Advice("pipeline_wait", "loads not overlapped with compute",
                  f"DMA-wait {_pct(wait)} of cycles on the pipelined loop `{var}` "
                  f"(num_stages={stages}; MMA busy {_pct(ev.facts.get('mma_busy_share', 0))})",
                  f"{knob} {want}", wait, ctx.knobs.change("num_stages", want))


def tail_wave(ev, ctx: Context):
    """The last wave of blocks leaves most block slots idle."""
    waves, fill = ev.facts.get("waves"), ev.facts.get("last_wave_fill")
    if not waves or waves < 2 or fill is None or fill > 0.5:
        return None
    slots = ev.facts["slots"]
    lost = (1 - fill) / waves
    last = round(fill * slots)
    knob = _knob(ctx, "block_m", "BLOCK_M")
    return Advice("tail_wave", "ragged last wave",
                  f"last wave {last}/{slots} full ({ev.counts.blocks} blocks, {waves} waves)",
                  f"smaller {knob} or split-K", lost, _scaled(ctx, "block_m", 0.5, 16))


def underfilled(ev, ctx: Context):
    """Fewer blocks than the machine has cores: part of it never works."""
    active = ev.facts.get("active_core_share")
    if active is None or active > 0.6 or ev.facts.get("waves", 1) != 1:
        return None
    cores = ev.facts["cores"]
    knob = _knob(ctx, "block_m", "BLOCK_M")
    return Advice("underfilled", "too few blocks for the machine",
                  f"{ev.counts.blocks} blocks for {cores} cores: {_pct(1 - active)} of the "
                  f"cores idle", f"smaller {knob} or split-K", 1 - active,
                  _scaled(ctx, "block_m", 0.5, 16))


def packing(ev, ctx: Context):
    """Copies of a gemm operand into its block tile take a large share: every block
    re-packs its B tile for its BLOCK_M rows (its A tile for its BLOCK_N columns), so
    taller (wider) blocks pack it fewer times."""
    shares = ev.facts.get("phase_shares")
    if not shares:
        return None
    best = None
    for operand, role, fallback in (("B", "block_m", "BLOCK_M"), ("A", "block_n", "BLOCK_N")):
        share = shares.get(f"pack {operand}", 0.0)
        if share >= 0.10 and (best is None or share > best[0]):
            best = (share, operand, role, fallback)
    if best is None:
        return None
    share, operand, role, fallback = best
    knob = _knob(ctx, role, fallback)
    value = ctx.knobs.value(role)
    now = f" (now {value})" if value is not None else ""
    evidence = f"{operand} packing {_pct(share)} of time{now}"
    # at most 4x: a block that grows further outgrows the caches the model cannot see
    resize = _best_resize(ev, ctx, [(role, f) for f in (2, 4)])
    if resize is None:
        if ctx.knobs.change(role, 1):           # settable, yet no size predicted faster
            return None
        return Advice("packing", f"{operand} packing not amortised", evidence,
                      f"larger {knob}", share / 2)
    gain, defines, blocks = resize
    return Advice("packing", f"{operand} packing not amortised", evidence,
                  f"larger {knob}: {_predicted(gain, blocks)}", gain, defines)


def balance(ev, ctx: Context):
    """The threads run out of blocks while others still work (few blocks, or a count
    that does not divide among the threads): more, smaller blocks even them out. From
    the blocks' own times scheduled as the runtime does, so load from other processes
    does not fake it."""
    idle = ev.facts.get("imbalance_share")
    makespan = ev.facts.get("makespan_s")
    if idle is None or makespan is None or idle < 0.10:
        return None
    evidence = _imbalance(ev, ctx.threads, idle)
    candidates = [(role, f) for role in ("block_m", "block_n")
                  for f in (3 / 4, 2 / 3, 1 / 2, 1 / 3, 1 / 4)]
    resize = _best_resize(ev, ctx, candidates)
    if resize is None:
        return None                     # no block size helps: only the bound says it
    gain, defines, blocks = resize
    names = " / ".join(f"{k}={v}" for k, v in defines.items())
    return Advice("balance", "blocks do not balance over the threads", evidence,
                  f"more, smaller blocks ({names}): {_predicted(gain, blocks)}", gain,
                  defines)


def memory_bound(ev, ctx: Context):
    """Few FLOPs per byte: the memory ceiling is the limit. Near it, no block or
    pipeline knob moves fewer bytes: only fusion or a narrower dtype does. Far below
    it, with the compute engine waiting on loads, longer blocks keep more bytes in
    flight."""
    r = ev.roofline
    if r.kind != "memory" or r.intensity > r.peaks.ridge / 4:
        return None
    reached = r.achieved_bytes_per_s / r.peaks.bytes_per_s
    evidence = (f"intensity {r.intensity:.2g} FLOP/B, ridge {r.peaks.ridge:.3g} FLOP/B; "
                f"{_pct(reached)} of {r.peaks.memory_label}")
    waiting = ev.facts.get("latency_share") or 0.0
    block = ctx.knobs.value("block")
    if reached < 0.5 and waiting >= 0.3 and isinstance(block, int) and ctx.knobs.change(
            "block", block):
        knob = _knob(ctx, "block", "BLOCK")
        return Advice("memory_bound", "memory-bound, loads not in flight",
                      f"{evidence}; the compute engine waits on loads {_pct(waiting)} of "
                      f"the time", f"longer blocks: larger {knob}", 0.5 + 0.5 * waiting,
                      _scaled(ctx, "block", 4))
    dtype = ctx.knobs.value("dtype")
    narrower = {"float32": "bfloat16", "float64": "float32"}.get(dtype)
    near = "at" if reached >= 0.9 else ("near" if reached >= 0.6 else "below")
    why = (f"{near} the memory ceiling, no block or pipeline knob moves fewer bytes"
           if reached >= 0.6 else "no engine or phase stalls that a knob removes")
    action = (f"fewer bytes: fuse with its producer or consumer, or store "
              f"{_knob(ctx, 'dtype', 'dtype')}={narrower}" if narrower else
              "fewer bytes: fuse with its producer or consumer")
    return Advice("memory_bound", "memory-bound", f"{evidence} ({why})", action,
                  0.5 + 0.5 * min(1.0, reached),
                  ctx.knobs.change("dtype", narrower) if narrower else {})


# ----------------------------------------------------------------------------- resizing

MIN_GAIN = 0.05                  # advice predicted (or measured) to save less is not given


def _best_resize(ev, ctx: Context, candidates):
    """(predicted gain, defines, block count) of the best (role, factor) resize of the
    block, or None when none is predicted to save `MIN_GAIN` of the time. Sizes are
    the factor's own (a multiple of 8) and rounded both ways to the role's granule; of
    resizes within 1% of the best, the roundest size wins, then the smallest change.
    Both sides are the same model — rounds of the mean block over the threads — so a
    gain is what the resize changes (blocks of uneven length stay uneven as far as it
    can tell)."""
    busy, now = ev.facts.get("blocks_busy_s"), ev.counts.blocks
    if not busy or not now or ctx.blocks_with is None:
        return None
    threads = max(1, ctx.threads)
    before = math.ceil(now / threads) * busy / now
    found = []
    for role, factor in candidates:
        value = ctx.knobs.value(role)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            continue
        step = ctx.steps.get(role, 8)
        for size in _sizes(value * factor, step):
            defines = ctx.knobs.change(role, size)
            blocks = ctx.blocks_with(defines) if defines and size != value else None
            if not blocks or ev.index >= len(blocks):
                continue
            per_block = _block_time(ev, role, size / value, blocks[ev.index])
            if per_block is None:
                continue
            after = math.ceil(blocks[ev.index] / threads) * per_block
            found.append((1 - after / before, _roundness(size), abs(math.log(size / value)),
                          defines, blocks[ev.index]))
    if not found:
        return None
    top = max(f[0] for f in found)
    if top < MIN_GAIN:
        return None
    gain, _, _, defines, blocks = min((f for f in found if f[0] >= top - 0.01),
                                      key=lambda f: (-f[1], f[2]))
    return gain, defines, blocks


def _sizes(size: float, step: int) -> list[int]:
    """Block sizes near `size`: its multiple of 8, and it rounded down and up to a
    multiple of `step` (at least one step)."""
    step = max(1, int(step))
    out = {max(step, int(size // step) * step), max(step, math.ceil(size / step) * step)}
    if size >= 8:
        out.add(int(size // 8) * 8)
    return sorted(out)


def _roundness(size: int) -> int:
    """Trailing zero bits: 192 is rounder than 196."""
    return (size & -size).bit_length() if size > 0 else 0


def _block_time(ev, role: str, factor: float, blocks: int) -> float | None:
    """A block's time when its extent along `role` is `factor` times today's and the
    grid has `blocks` blocks: the operand tile that extent does not touch (B's for the
    rows, A's for the columns) is packed once a block as now; the rest of the block's
    work scales with the extent (a partial register tile costs its rows, not a whole
    tile's: measured) — but no less than an even share of the grid's work, which a
    resize does not change (a constant that shapes a block's tiles without splitting
    the work differently saves nothing)."""
    busy, phases = ev.facts.get("blocks_busy_s"), ev.facts.get("phase_s")
    if not busy or phases is None or not ev.counts.blocks or blocks < 1:
        return None
    fixed = phases.get({"block_m": "pack B", "block_n": "pack A"}.get(role, ""), 0.0)
    work = busy - fixed                              # all blocks' work but the packing
    per_block, fixed = busy / ev.counts.blocks, fixed / ev.counts.blocks
    return fixed + max(factor * (per_block - fixed), work / blocks)


def _predicted(gain: float, blocks: int) -> str:
    return f"{blocks} blocks, predicted {_pct(gain)} less time"


def _imbalance(ev, threads: int, idle: float) -> str:
    """Why threads idle: too few blocks, a last round that leaves some idle, or blocks
    of uneven length."""
    n = ev.counts.blocks
    if n < threads:
        why = f"{threads - n} of the threads get no block"
    elif n % threads:
        why = f"the last round runs {n % threads} of {threads} threads"
    else:
        longest, busy = ev.facts.get("block_max_s"), ev.facts.get("blocks_busy_s")
        ratio = longest / (busy / n) if longest and busy else None
        why = (f"uneven blocks, the longest {ratio:.1f}x the mean" if ratio
               else "uneven blocks")
    return f"{n} blocks on {threads} threads, {why}: {_pct(idle)} of thread time idle"


def launch_bound(ev, ctx: Context):
    """The launch costs more than the blocks' work."""
    share = ev.facts.get("launch_share")
    if share is None or share < 0.5:
        return None
    return Advice("launch_bound", "launch overhead",
                  f"blocks busy {_pct(1 - share)} of the {ev.time_s * 1e6:.1f} us call",
                  "more work per launch (batch calls, fuse kernels)", share)


RULES = (pipeline_wait, tail_wave, underfilled, packing, balance, memory_bound,
         launch_bound)


def advise(evidence, ctx: Context) -> list[Advice]:
    out = []
    for rule in RULES:
        advice = rule(evidence, ctx)
        if advice is not None:
            out.append(advice)
    return sorted(out, key=lambda a: -a.score)


# ----------------------------------------------------------------------------- the bound

BOUNDS = ("compute", "memory", "latency/launch", "imbalance")


def name_bound(ev) -> str:
    """imbalance when idle cores or threads cost the most, latency/launch when waiting
    on loads (or on the launch) does — when that loss is at least a fifth of the time
    and at least a third of what separates the kernel from its roofline (the rest is
    the compute or memory engine's own shortfall, which on a CPU holds a micro-kernel's
    distance from the FMA peak: a loss larger than half of that is the one to name);
    else compute or memory, as the roofline puts it. Waiting counts only far from the
    roofline (at a ceiling, engines wait because of it), and a streaming kernel
    (intensity far below the ridge) is memory-bound unless a loss takes half its
    time."""
    r = ev.roofline
    waiting = max(ev.facts.get("latency_share") or 0.0, ev.facts.get("launch_share") or 0.0)
    losses = {"imbalance": ev.facts.get("imbalance_share") or 0.0,
              "latency/launch": waiting if r.fraction < 0.6 else 0.0}
    kind, loss = max(losses.items(), key=lambda kv: kv[1])
    if r.kind == "memory" and r.intensity <= r.peaks.ridge / 4:
        return "memory" if loss < 0.5 else kind
    gap = max(0.0, 1.0 - r.fraction)
    return kind if loss >= 0.2 and loss >= gap / 3 else r.kind
