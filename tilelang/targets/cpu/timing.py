"""`tilec run` on the cpu target: one untimed warm-up call, then timed calls of the
loaded kernel, and the figures (time, GB/s, GFLOP/s).

The runtime does the launch, so what is timed is what a Python caller gets.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from ...ir import nodes as ir
from ...ir.evaluate import gemm_flops


@dataclass
class RunReport:
    kernel: str
    sizes: dict
    times: list              # seconds, one per timed call
    bytes_moved: int
    flops: int | None        # None: not countable; 0: no T.gemm

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    def lines(self) -> list[str]:
        t = self.median
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items()) or "no symbolic sizes"
        out = [f"{self.kernel} ({sizes})",
               f"  time     {t * 1e3:.4f} ms  (median of {len(self.times)}, "
               f"min {min(self.times) * 1e3:.4f} ms)",
               f"  memory   {self.bytes_moved / t / 1e9:.3f} GB/s  "
               f"({self.bytes_moved / 1e6:.3f} MB in arguments)"]
        if self.flops:
            out.append(f"  compute  {self.flops / t / 1e9:.3f} GFLOP/s  "
                       f"({self.flops / 1e9:.4f} GFLOP of T.gemm tiles)")
        elif self.flops is None:
            out.append("  compute  (not counted: a loop around T.gemm has a trip count that "
                       "depends on more than the sizes)")
        return out


def run(kernel_obj, func, args: list, sizes: dict, repeat: int,
        num_threads: int | None = None) -> RunReport:
    """One untimed warm-up call, then `repeat` timed calls on `args`."""
    kernel_obj(*args, num_threads=num_threads)
    times = []
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        kernel_obj(*args, num_threads=num_threads)
        times.append(time.perf_counter() - start)
    moved = sum(a.nbytes for a in args if hasattr(a, "nbytes"))
    env = dict(sizes)
    env.update((p.name, a) for p, a in zip(func.params, args) if isinstance(p, ir.Var))
    return RunReport(func.name, {s.name: sizes[s.name] for s in func.symbols}, times, moved,
                     gemm_flops(func, env))
