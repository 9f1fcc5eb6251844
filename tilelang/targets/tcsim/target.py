"""The tcsim target: the simulated tensor-core accelerator of docs/tcsim.md.

Spec: `tcsim[:CONFIG]`, CONFIG one of `config.CONFIGS` (`DEFAULT_CONFIG`, h100_like, when
absent; an unknown one is TL0805). Kernels compile to artifacts (`codegen/tcsim`) that the
simulator (`runtime/tcsim`) runs; they are not cached on disk: code generation walks the
tile IR once per kernel (milliseconds for the examples, below the parse that a cache hit
would still need, as tcsim has no source index), and an artifact is rebuilt as cheaply as
it is read.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..base import EmitKind, Peaks, RunSettings, Target, bad_spec
from .config import CONFIGS, DEFAULT_CONFIG


@dataclass(frozen=True)
class TcsimTarget(Target):
    config: str = DEFAULT_CONFIG

    name = "tcsim"
    syntax = f"tcsim[:CONFIG] (CONFIG: {', '.join(CONFIGS)}; default {DEFAULT_CONFIG})"
    kinds = (EmitKind("tcasm", ".tcasm", True, "tcsim assembly"),
             EmitKind("tcsim", ".tcsim", False, "a tcsim artifact"))
    default_kind = "tcsim"

    @classmethod
    def parse(cls, rest: str, *, cpu: str | None = None, features: str | None = None):
        if cpu is not None or features is not None or (rest and not rest.startswith(":")):
            return super().parse(rest, cpu=cpu, features=features)
        name = rest[1:] or DEFAULT_CONFIG
        if name not in CONFIGS:
            from ...diagnostics import Diagnostic, TileLangError
            from ...diagnostics.codes_tcsim import UNKNOWN_CONFIG
            raise TileLangError(Diagnostic(
                UNKNOWN_CONFIG, f"unknown tcsim machine config `{name}`",
                help=f"known configs: {', '.join(CONFIGS)}"))
        return cls(name)

    @property
    def spec(self) -> str:
        return f"{self.name}:{self.config}"

    def machine_config(self):
        return CONFIGS[self.config]

    # ------------------------------------------------------------------ compiling

    def pipeline(self) -> list:
        from .pipeline import tcsim_pipeline
        return tcsim_pipeline()

    def codegen(self, lowered, options) -> dict:
        """{kernel name: Artifact} for this machine."""
        from ...codegen.tcsim import compile_module
        return compile_module(lowered, self.config, raster=options.raster)

    def emit_text(self, compiled: dict, kind: str, timings: list | None = None) -> str:
        """`tcasm`: every kernel's program as `.tcasm` text, one after the other."""
        from .asm import disassemble
        return "\n".join(disassemble(a.program) for a in compiled.values())

    def emit_binary(self, compiled: dict, kind: str, timings: list | None = None) -> dict:
        """`tcsim`: the artifact file of the module's one kernel (a file holds one)."""
        if len(compiled) != 1:
            from ...diagnostics import Diagnostic, TileLangError
            from ...diagnostics.codes_driver import AMBIGUOUS_KERNEL
            raise TileLangError(Diagnostic(
                AMBIGUOUS_KERNEL, f"the source defines {len(compiled)} kernels: "
                                  f"{', '.join(compiled)}",
                help="pick one with `-k KERNEL` (`kernel=` in Python)"))
        return {"": next(iter(compiled.values())).to_bytes()}

    def library(self, compiled: dict, options, out_idx=None):
        """The kernels as callables that run the simulator (`SimLibrary`)."""
        from ...runtime.tcsim import SimKernel, SimLibrary
        return SimLibrary({name: SimKernel(a, self.config, out_idx)
                           for name, a in compiled.items()})

    # ------------------------------------------------------------------ running

    def run(self, kernel, func, sizes: dict, make_args, settings: RunSettings) -> list[str]:
        """One simulated launch (cycles only with `timing_only`) and the report."""
        from ...runtime.tcsim.launch import value_params
        mode = "timing" if settings.timing_only else "functional"
        # a timing-only run still needs the values of the tensors the program reads one
        # by one (loop bounds, scales, indices)
        args = make_args(mode == "functional", value_params(kernel.artifact.program))
        try:
            kernel(*args, mode=mode, trace=settings.trace)
        except OSError as e:                # the trace file (nothing else is written)
            from ...diagnostics import Diagnostic, TileLangError
            from ...diagnostics.codes_driver import CANNOT_WRITE
            raise TileLangError(Diagnostic(
                CANNOT_WRITE, f"cannot write `{settings.trace}`: {e.strerror or e}")) from None
        shown = ", ".join(f"{s.name}={sizes[s.name]}" for s in func.symbols)
        lines = [f"{func.name} ({shown or 'no symbolic sizes'}), {mode} simulation",
                 kernel.last_report.summary()]
        if settings.trace:
            lines.append(f"  trace             {settings.trace}")
        return lines

    def roofline_peaks(self, dtype: str, threads: int | None = None,
                       working_set: float | None = None) -> Peaks | None:
        """The config's dense MMA peak for `dtype` inputs and its HBM bandwidth (the
        whole machine: a block runs on one core, `threads` does not change it; the
        simulator measures its traffic, so `working_set` does not either)."""
        from .config import ConfigError
        cfg = self.machine_config()
        try:
            flops = cfg.peak_flops(dtype)
        except ConfigError:
            return None                     # no MMA for this dtype
        return Peaks(flops, cfg.hbm_bytes_per_s, "config")

    def profile_runner(self):
        """The simulator's time and per-engine report (`profiling.py`)."""
        from .profiling import SimRunner
        return SimRunner(self)
