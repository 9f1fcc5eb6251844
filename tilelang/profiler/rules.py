"""Advice from rules over what was measured.

Each rule reads a grid's evidence (the roofline and the facts its target measured:
phase shares of a timers build on the CPU, per-engine busy and wait shares and waves
on tcsim), and when its trigger holds returns an `Advice` that cites the evidence
("DMA-wait 41% of cycles on the pipelined loop -> num_stages 3"), says what to change,
and, where the knob is a constant of the source, the defines that make the change. A
rule needs only the facts it names: it applies on any target that measures them.
The advice list is sorted by `score`, the share of the time the problem costs.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


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
    re-packs its B tile for its BLOCK_M rows (its A tile for its BLOCK_N columns)."""
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
    return Advice("packing", f"{operand} packing not amortised",
                  f"{operand} packing {_pct(share)} of time{now}", f"larger {knob}", share,
                  _scaled(ctx, role, 4 if share >= 0.3 else 2))


def idle_threads(ev, ctx: Context):
    """Threads run out of blocks while others still work."""
    idle = ev.facts.get("idle_at_end_share")
    if idle is None or idle < 0.15:
        return None
    used = ev.facts.get("threads_used", ctx.threads)
    knob = _knob(ctx, "block_m", "BLOCK_M")
    return Advice("idle_threads", "blocks do not balance over the threads",
                  f"{used} of {ctx.threads} threads, {_pct(idle)} idle at the end "
                  f"({ev.counts.blocks} blocks)", f"more blocks (smaller {knob})", idle,
                  _scaled(ctx, "block_m", 0.5, 8))


def memory_bound(ev, ctx: Context):
    """Few FLOPs per byte: the memory ceiling is the limit; move fewer bytes."""
    r = ev.roofline
    if r.kind != "memory" or r.intensity > r.peaks.ridge / 4:
        return None
    reached = r.achieved_bytes_per_s / r.peaks.bytes_per_s
    evidence = (f"intensity {r.intensity:.2g} FLOP/B, ridge {r.peaks.ridge:.3g} FLOP/B; "
                f"{_pct(reached)} of {r.peaks.memory_label}")
    if reached < 0.5 and ctx.knobs.value("block") is not None:
        # far below the ceiling: too few bytes in flight per block, or too short blocks
        knob = _knob(ctx, "block", "BLOCK")
        return Advice("memory_bound", "memory-bound, below the memory ceiling", evidence,
                      f"longer blocks: larger {knob}", 0.5 + 0.5 * (1 - reached),
                      _scaled(ctx, "block", 4))
    dtype = ctx.knobs.value("dtype")
    narrower = {"float32": "bfloat16", "float64": "float32"}.get(dtype)
    action = (f"fewer bytes: fuse with its producer or consumer, or store "
              f"{_knob(ctx, 'dtype', 'dtype')}={narrower}" if narrower else
              "fewer bytes: fuse with its producer or consumer")
    return Advice("memory_bound", "memory-bound", evidence, action,
                  0.5 + 0.5 * min(1.0, reached),
                  ctx.knobs.change("dtype", narrower) if narrower else {})


def launch_bound(ev, ctx: Context):
    """The launch costs more than the blocks' work."""
    share = ev.facts.get("launch_share")
    if share is None or share < 0.5:
        return None
    return Advice("launch_bound", "launch overhead",
                  f"blocks busy {_pct(1 - share)} of the {ev.time_s * 1e6:.1f} us call",
                  "more work per launch (batch calls, fuse kernels)", share)


RULES = (pipeline_wait, tail_wave, underfilled, packing, idle_threads, memory_bound,
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
    """compute or memory when the roofline says so and most of it is reached, or when
    nothing else explains the gap; imbalance when idle cores or threads cost the most;
    latency/launch when waiting on loads (or on the launch) does."""
    if ev.roofline.fraction >= 0.6:
        return ev.roofline.kind
    losses = {"imbalance": ev.facts.get("imbalance_share", 0.0),
              "latency/launch": max(ev.facts.get("latency_share", 0.0),
                                    ev.facts.get("launch_share", 0.0))}
    kind, loss = max(losses.items(), key=lambda kv: kv[1])
    if ev.roofline.kind == "memory" and ev.roofline.intensity <= ev.roofline.peaks.ridge / 4:
        # a streaming kernel: waits and idle slots are how the memory limit shows
        return "memory" if loss < 0.5 else kind
    return kind if loss >= 0.2 else ev.roofline.kind
