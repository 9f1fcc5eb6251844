"""The pruning model: an estimate of a config's time from its IR, before compiling it.

On the CPU each block's time is modelled from what its block shape makes it do:
* `T.gemm` work at the host's per-thread FMA peak, counted in whole register tiles
  (a ragged MR x NR tile costs a full one), slowed when the A tile outgrows L2 or a
  B panel outgrows L1 (the micro-kernel then streams them from further away);
* the bytes its copies move into block-local tiles (the packing traffic: every block
  copies its A and B tiles at each k step) and the C tile's round trip at each k step,
  at the host's per-thread copy bandwidth;
* elementwise work at one vector of FMAs a cycle.
The grid's time is the busiest thread's: ceil(blocks / threads) blocks one after the
other. The estimate only has to rank configs (the tuner measures the best of them),
so one set of host figures serves every kernel. On tcsim the model is a timing-only
simulation (the runner's `model_time`), exact and cheap.
"""
from __future__ import annotations

import math

from .. import dtypes
from ..ir.evaluate import NotConstant, evaluate
from ..ir import nodes as ir
from ..ir.visitor import walk

_LAUNCH_S = 10e-6


def cpu_time(func: ir.PrimFunc, env: dict, machine, flops_per_thread: float,
             copy_bytes_per_s: float, threads: int) -> float:
    """Estimated seconds of one launch of `func` (see the module docstring)."""
    total = _LAUNCH_S
    env = dict(env)
    for k in (n for n in walk(func.body) if isinstance(n, ir.Kernel)):
        blocks = 1
        for g in k.grid:
            blocks *= max(1, int(_eval(g, env, 1)))
        work = _Work(machine)
        work.visit(k.body, env, 1.0)
        per_block = (work.gemm_flops * work.cache_penalty() / flops_per_thread
                     + work.bytes / copy_bytes_per_s
                     + work.elementwise / (flops_per_thread / 2))
        total += math.ceil(blocks / max(1, threads)) * per_block
    return total


def _eval(expr, env, default):
    try:
        return evaluate(expr, env)
    except (NotConstant, ZeroDivisionError, TypeError):
        return default


class _Work:
    """What one block does, summed over the loops around each statement."""

    def __init__(self, machine):
        self.machine = machine
        self.gemm_flops = 0.0
        self.bytes = 0.0
        self.elementwise = 0.0
        self.a_tile = self.b_panel = 0

    def visit(self, s, env, trips: float) -> None:
        if isinstance(s, ir.Gemm):
            self._gemm(s, trips)
        elif isinstance(s, ir.Copy):
            n = _elements(s.dst.extents)
            self.bytes += trips * n * (dtypes.nbytes(s.src.buffer.dtype)
                                       + dtypes.nbytes(s.dst.buffer.dtype))
        elif isinstance(s, (ir.Store, ir.Atomic)):
            self.elementwise += trips
        elif isinstance(s, ir.Seq):
            env = dict(env)
            for x in s.stmts:
                if isinstance(x, ir.Let):
                    try:
                        env[x.var.name] = evaluate(x.value, env)
                    except (NotConstant, ZeroDivisionError, TypeError):
                        env.pop(x.var.name, None)
                self.visit(x, env, trips)
        elif isinstance(s, ir.For):
            self.visit(s.body, env, trips * max(0, _eval(s.extent, env, 1)))
        elif isinstance(s, ir.If):
            self.visit(s.then_body, env, trips)
            if s.else_body is not None:
                self.visit(s.else_body, env, trips)

    def _gemm(self, g: ir.Gemm, trips: float) -> None:
        m, n = g.c.extents[-2], g.c.extents[-1]
        k = g.a.extents[-2] if g.transpose_a else g.a.extents[-1]
        bits = dtypes.bits(g.a.buffer.dtype) if dtypes.is_float(g.a.buffer.dtype) else 32
        mr, nr = self.machine.register_tile(max(32, bits))
        padded_m = math.ceil(m / mr) * mr
        padded_n = math.ceil(n / nr) * nr
        self.gemm_flops += trips * 2.0 * padded_m * padded_n * k
        # the micro-kernels add into C once per k step: C's tile goes through the caches
        self.bytes += trips * 2 * m * n * dtypes.nbytes(g.c.buffer.dtype)
        self.a_tile = max(self.a_tile, m * k * 4)
        self.b_panel = max(self.b_panel, k * nr * 4)

    def cache_penalty(self) -> float:
        p = 1.0
        if self.a_tile > self.machine.l2:
            p *= 1.3
        if self.b_panel > self.machine.l1d:
            p *= 1.2
        return p


def _elements(extents) -> int:
    n = 1
    for e in extents:
        n *= int(e)
    return n
