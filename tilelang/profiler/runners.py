"""How a compiled kernel is called and timed on each target.

The profiler and the autotuner never ask which target they are on: they ask the
kernel's runner. `CpuRunner` calls the native kernel and times it with the wall clock;
`SimRunner` calls the tcsim simulator and reports the *simulated* time (one timing-only
launch: deterministic, so a tuner on tcsim compares configs without noise).

`runner_for(options)` is the single place that maps a target to its runner (the target
object's hook, once targets are objects).
"""
from __future__ import annotations

from . import bench


class CpuRunner:
    """Native kernels: arguments in place, wall-clock time."""
    name = "cpu"
    deterministic = False

    def runtime_kernel(self, kernel_function):
        return kernel_function.runtime_kernel

    def call(self, runtime_kernel, args: list, num_threads=None) -> None:
        runtime_kernel(*args, out_idx=None, num_threads=num_threads)

    def time_ms(self, runtime_kernel, args: list, *, warmup=25, rep=100, n_warmup=0,
                n_repeat=0, quantiles=None, return_mode="mean", early_stop=None,
                num_threads=None):
        def once():
            runtime_kernel(*args, out_idx=None, num_threads=num_threads)
        return bench.do_bench(once, warmup, rep, n_warmup, n_repeat, quantiles=quantiles,
                              return_mode=return_mode, early_stop_baseline=early_stop)


class SimRunner:
    """tcsim kernels: a functional simulation computes the outputs; time is the
    simulator's (a timing-only launch), the same on every call."""
    name = "tcsim"
    deterministic = True

    def runtime_kernel(self, kernel_function):
        """The simulated kernel, built without `out_idx` (the profiler passes every
        argument; a tcsim call writes its outputs in place)."""
        from ..driver import build_module
        library = build_module(kernel_function.module(), kernel_function.options)
        return library[kernel_function.name]

    def call(self, runtime_kernel, args: list, num_threads=None) -> None:
        runtime_kernel(*args, mode="functional")

    def time_ms(self, runtime_kernel, args: list, *, quantiles=None, **_ignored):
        runtime_kernel(*args, mode="timing")
        ms = runtime_kernel.last_report.time_s * 1e3
        return [ms for _ in quantiles] if quantiles is not None else ms


def runner_for(options):
    """The runner of the target the options compile for."""
    from ..driver.options import is_tcsim
    return SimRunner() if is_tcsim(options.target) else CpuRunner()
