"""How a compiled kernel is called and timed on each target.

The profiler and the autotuner never ask which target they are on: they ask the
kernel's runner. `CpuRunner` calls the native kernel and times it with the wall clock;
`SimRunner` calls the tcsim simulator and reports the *simulated* time (one timing-only
launch: deterministic, so a tuner on tcsim compares configs without noise).

`runner_for(options)` is the single place that maps a target (its registry name) to its
runner.
"""
from __future__ import annotations

from . import bench


class CpuRunner:
    """Native kernels: arguments in place, wall-clock time."""
    name = "cpu"
    deterministic = False
    returns_outputs = True           # `out_idx` outputs are allocated and returned

    def runtime_kernel(self, kernel_function):
        return kernel_function.runtime_kernel

    def call(self, runtime_kernel, args: list, num_threads=None) -> None:
        runtime_kernel(*args, out_idx=None, num_threads=num_threads)

    def roofline_peaks(self, dtype: str, threads: int):
        """The host's measured ceilings (the host memo; measured briefly if missing)."""
        from . import hostpeaks
        from .roofline import cpu_peaks
        return cpu_peaks(hostpeaks.host_peaks(), dtype, threads)

    def threads(self, num_threads=None) -> int:
        from ..runtime.launch import default_num_threads
        return num_threads or default_num_threads()

    def measure(self, kernel_function, func, args, counts, *, threads, warmup=25, rep=100,
                timers=True):
        """The profiler's measurement: plain and timers builds, in turns."""
        from .evidence import cpu_evidence
        return cpu_evidence(kernel_function, func, args, counts, threads, warmup, rep,
                            use_timers=timers)

    def model_time(self, kernel_function, func, env: dict, threads: int) -> float:
        """The autotuner's estimate before compiling: the CPU cost model."""
        from ..autotuner.model import cpu_time
        from ..targets.cpu.machine import host
        from . import hostpeaks
        figures = hostpeaks.host_peaks()
        widths = figures["fma"]["float32"]
        per_thread = widths[max(widths, key=int)][min(figures["threads"], key=int)]
        copy = figures["bandwidth"]["copy"][min(figures["threads"], key=int)]
        return cpu_time(func, env, host(), per_thread, copy, threads)

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
    returns_outputs = False          # a simulated call writes its outputs in place

    def runtime_kernel(self, kernel_function):
        """The simulated kernel, built without `out_idx` (the profiler passes every
        argument; a tcsim call writes its outputs in place)."""
        from ..driver import build_module
        library = build_module(kernel_function.module(), kernel_function.options)
        return library[kernel_function.name]

    def __init__(self, config: str = "h100_like"):
        self.config = config

    def call(self, runtime_kernel, args: list, num_threads=None) -> None:
        runtime_kernel(*args, mode="functional")

    def threads(self, num_threads=None) -> int:
        return 0                    # the simulated machine has cores, not threads

    def measure(self, kernel_function, func, args, counts, **_ignored):
        """One timing-only simulation and the simulator's per-engine figures."""
        from .evidence import sim_evidence
        return sim_evidence(self.runtime_kernel(kernel_function), func, args, counts)

    def model_time(self, kernel_function, func, env: dict, threads: int) -> float:
        """The autotuner's estimate before measuring: a timing-only simulation."""
        from ..ir import nodes as ir
        from .supply import InputSupply
        shapes = [(InputSupply(func).shape(p, env), p.dtype) if isinstance(p, ir.Buffer)
                  else env.get(p.name, 1) for p in func.params]
        kernel = self.runtime_kernel(kernel_function)
        kernel(*shapes, mode="timing")
        return kernel.last_report.time_s

    def roofline_peaks(self, dtype: str, threads: int = 0):
        """The machine config's dense MMA peak for `dtype` inputs and its HBM peak."""
        from ..targets.tcsim.config import MMA_CLASS, get_config
        from .roofline import Peaks
        cfg = get_config(self.config)
        mma = dtype if dtype in MMA_CLASS and dict(cfg.mma_flops_per_clk).get(
            MMA_CLASS[dtype]) else "bfloat16"
        return Peaks(cfg.peak_flops(mma), cfg.hbm_bytes_per_s,
                     f"{MMA_CLASS[mma]} MMA peak, {cfg.cores} cores",
                     "HBM peak")

    def time_ms(self, runtime_kernel, args: list, *, quantiles=None, **_ignored):
        runtime_kernel(*args, mode="timing")
        ms = runtime_kernel.last_report.time_s * 1e3
        return [ms for _ in quantiles] if quantiles is not None else ms


def runner_for(options):
    """The runner of the target the options compile for (a new target adds its runner
    to `RUNNERS`)."""
    return RUNNERS[options.target.name](options.target)


# target registry name -> its runner class, built from the Target
RUNNERS = {"cpu": lambda target: CpuRunner(),
           "tcsim": lambda target: SimRunner(target.config)}
