"""How the profiler and the autotuner call, time and measure a kernel: the `Runner`.

The profiler and the autotuner never ask which target they are on: they ask the
target for its runner (`Target.profile_runner()`), and the runner for everything that
differs between targets. Each target's runner lives in its package: the cpu target's
(`targets/cpu/profiling.py`) calls the native kernel and times it with the wall clock,
measuring phases with a timers build; tcsim's (`targets/tcsim/profiling.py`) runs the
simulator and reports the *simulated* time of a timing-only launch (deterministic, so
a tuner compares configs without noise). A new target that wants profiling writes a
subclass of `Runner` and returns it from its `profile_runner()`: no table to edit.
"""
from __future__ import annotations


class Runner:
    """What a target's runner answers (the defaults are those of a target that lacks
    the capability)."""
    name = ""                        # for `repr` and messages
    deterministic = False            # equal times on every call: no repeats, no turns
    returns_outputs = True           # a call with `out_idx` allocates and returns outputs
    pipeline_depths: tuple = ()      # num_stages values the default search space tries

    def __init__(self, target):
        self.target = target

    # -- calling and timing ---------------------------------------------------------

    def runtime_kernel(self, kernel_function):
        """The callable the profiler calls (every argument passed, outputs included)."""
        return kernel_function.runtime_kernel

    def call(self, runtime_kernel, args: list, num_threads=None) -> None:
        """One call that computes the outputs (written into `args`)."""
        raise NotImplementedError

    def threads(self, num_threads=None) -> int:
        """The worker threads a launch uses (0: the target has no host threads)."""
        return 0

    def time_ms(self, runtime_kernel, args: list, **bench) -> float | list:
        """`do_bench` of one launch (`bench`: its keywords) in milliseconds."""
        raise NotImplementedError

    # -- the profile ----------------------------------------------------------------

    def measure(self, kernel_function, func, args, counts, *, threads, warmup=25, rep=100,
                timers=True):
        """The profiler's measurement of one launch (`profiler.evidence.Measured`)."""
        raise NotImplementedError

    def roofline_peaks(self, dtype: str, threads: int, working_set: float | None = None):
        """The roofline's ceilings (`profiler.roofline.Peaks`), labelled, for a kernel
        moving `working_set` bytes (None: unknown)."""
        raise NotImplementedError

    def block_steps(self, dtype: str) -> dict:
        """{"block_m": rows, "block_n": columns}: the granule a block shape of a
        `T.gemm` of `dtype` inputs should be a multiple of (a register tile, an MMA
        atom); advice that resizes a block rounds to it."""
        return {}

    # -- the autotuner --------------------------------------------------------------

    def model_time(self, kernel_function, func, env: dict, threads: int) -> float:
        """The autotuner's estimate of a config's time, before measuring it."""
        raise NotImplementedError

    def gemm_blocks(self, m: int | None, n: int | None, k: int | None) -> list:
        """The default search space of a GEMM's (BLOCK_M, BLOCK_N, BLOCK_K) for sizes
        m, n, k (None: not given); empty when the target has none."""
        return []

    def __repr__(self) -> str:
        return f"<{type(self).__name__} for {self.target}>"


def runner_for(options) -> Runner:
    """The runner of the target the options compile for."""
    return options.target.profile_runner()


def upto(values, size: int | None, step: int) -> list:
    """`values` that are not larger than `size` rounded up to `step` (all of them
    without a size; the smallest when none is): a search space clipped to a problem."""
    if size is None:
        return list(values)
    cap = -(-size // step) * step
    kept = [v for v in values if v <= cap]
    return kept or [min(values)]


def threads_label(n: int) -> str:
    return f"{n} thread{'s' * (n != 1)}"
