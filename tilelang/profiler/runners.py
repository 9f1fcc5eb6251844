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

    def __init__(self, target=None):
        from ..targets import get
        self.target = target if target is not None else get("cpu")

    def roofline_peaks(self, dtype: str, threads: int):
        """The target's ceilings (the host's peaks memo, measured briefly first if this
        host has none), labelled with the vector width and thread count they are from."""
        from ..targets.cpu.peaks import ceilings
        from . import hostpeaks
        from .roofline import Peaks
        figures = hostpeaks.host_peaks()            # makes the memo the target reads
        peaks = self.target.roofline_peaks(dtype, threads)
        c = ceilings(figures, dtype, threads)
        if peaks is None:                           # a cross target: this host's figures
            flops, bw = c.flops_per_s, c.bytes_per_s
        else:
            flops, bw = peaks.flops_per_s, peaks.bytes_per_s
        name = "fp64" if c.compute == "float64" else "fp32"
        return Peaks(flops, bw, f"{name} FMA, {c.width}-bit, {_threads(c.flops_threads)}",
                     f"stream read, {_threads(c.bytes_threads)}")

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

    def __init__(self, target):
        self.target = target

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
        """The target's ceilings (its machine config): the dense MMA peak for `dtype`
        inputs (bf16's when the machine has no MMA for `dtype`) and the HBM peak."""
        from ..targets.tcsim.config import MMA_CLASS
        from .roofline import Peaks
        cfg = self.target.machine_config()
        peaks = self.target.roofline_peaks(dtype, threads)
        if peaks is None:
            dtype = "bfloat16"
            peaks = self.target.roofline_peaks(dtype, threads)
        return Peaks(peaks.flops_per_s, peaks.bytes_per_s,
                     f"{MMA_CLASS.get(dtype, dtype)} MMA peak, {cfg.cores} cores", "HBM peak")

    def time_ms(self, runtime_kernel, args: list, *, quantiles=None, **_ignored):
        runtime_kernel(*args, mode="timing")
        ms = runtime_kernel.last_report.time_s * 1e3
        return [ms for _ in quantiles] if quantiles is not None else ms


def runner_for(options):
    """The runner of the target the options compile for (a new target adds its runner
    to `RUNNERS`)."""
    return RUNNERS[options.target.name](options.target)


# target registry name -> its runner class, built from the Target
RUNNERS = {"cpu": CpuRunner, "tcsim": SimRunner}


def _threads(n: int) -> str:
    return f"{n} thread{'s' * (n != 1)}"
