"""What the compiler asks of a target: the `Target` base class and its small records.

The driver holds one Target per compile (`Options.target`, from `targets.get(spec)`) and
asks it, never its name: which passes lower the IR (`pipeline`), which `--emit` kinds it
writes and which by default (`kinds`, `default_kind`), what of it enters the cache key
(`key_parts`), how lowered IR becomes code (`codegen`) and code becomes files
(`emit_text`, `emit_binary`, `artifact`) or callables (`load`, `library`), how `tilec run`
runs a kernel (`run`), and, for the profiler and the input makers, its roofline peaks
(`roofline_peaks`), the inputs of index tensors (`make_index_input`), how the profiler
and the autotuner call, time and measure its kernels (`profile_runner`) and whether a
launch spans several ranks (`launches_over_ranks`). The defaults below are what a target that
lacks the capability answers.

Target objects are frozen dataclasses: equal specs give equal, hashable targets.
Importing this module stays light; each method imports the layer it needs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class EmitKind:
    """An `--emit` kind: the suffix of its default output file, and whether it is text
    (printed on stdout when no `-o` is given)."""
    name: str
    suffix: str
    text: bool
    help: str = ""


IR_KIND = EmitKind("ir", ".tl", True, "the IR after the target's pipeline, as .tl text")


@dataclass(frozen=True)
class Peaks:
    """Roofline ceilings for one dtype and thread count: arithmetic (FLOP/s) and main
    memory bandwidth (bytes/s), and where the figures come from."""
    flops_per_s: float
    bytes_per_s: float
    source: str                     # "config" (a machine description), "measured"


@dataclass(frozen=True)
class RunSettings:
    """The knobs of `tilec run`; each target reads those that mean something to it."""
    repeat: int = 10                # timed calls after one warm-up (cpu)
    threads: int | None = None      # worker threads (cpu)
    timing_only: bool = False       # simulate cycles only (tcsim)
    trace: str | None = None        # Chrome trace file (tcsim)


def bad_spec(spec: str, why: str | None):
    """The TL0705 error of a target spec that names no target or that its target
    cannot parse."""
    from ..diagnostics import Diagnostic, TileLangError
    from ..diagnostics.codes_driver import UNKNOWN_TARGET
    from . import REGISTRY, target_class
    known = "; ".join(target_class(n).syntax for n in REGISTRY)
    return TileLangError(Diagnostic(UNKNOWN_TARGET, f"unknown target `{spec}`",
                                    notes=[why] if why else [], help=f"targets: {known}"))


def unavailable(target: "Target", what: str, help: str | None = None):
    """The TL0713 error of asking a target for something it does not do."""
    from ..diagnostics import Diagnostic, TileLangError
    from ..diagnostics.codes_driver import WRONG_TARGET
    return TileLangError(Diagnostic(WRONG_TARGET, f"{what} is not supported on the "
                                                  f"{target.name} target", help=help))


@dataclass(frozen=True)
class Target:
    name: ClassVar[str] = ""
    syntax: ClassVar[str] = ""          # how a spec is spelled, for help and errors
    kinds: ClassVar[tuple[EmitKind, ...]] = ()      # what it emits besides `ir`
    default_kind: ClassVar[str] = "ir"
    cacheable: ClassVar[bool] = False   # `artifact` / `load` through the disk cache
    launches_over_ranks: ClassVar[bool] = False     # one launch runs on several ranks

    # ------------------------------------------------------------------ spec

    @classmethod
    def parse(cls, rest: str, *, cpu: str | None = None, features: str | None = None):
        """The target of the spec `cls.name + rest`; `cpu` / `features` are the cpu
        target's aliases, a user error anywhere else."""
        if cpu is not None or features is not None:
            raise bad_spec(cls.name + rest, f"--cpu / --features do not apply to the "
                                            f"{cls.name} target")
        if rest:
            raise bad_spec(cls.name + rest, f"the {cls.name} target takes no options")
        return cls()

    @property
    def spec(self) -> str:
        """The canonical spelling: `targets.get(t.spec) == t`."""
        return self.name

    def __str__(self) -> str:
        return self.spec

    @classmethod
    def all_kinds(cls) -> tuple[EmitKind, ...]:
        return (IR_KIND,) + cls.kinds

    @classmethod
    def kind(cls, name: str) -> EmitKind | None:
        return next((k for k in cls.all_kinds() if k.name == name), None)

    # ------------------------------------------------------------------ compiling

    def pipeline(self) -> list:
        """The passes (`passes.manager.Pass`) that lower parsed IR for `codegen`."""
        return []

    def key_parts(self) -> dict:
        """What of the target decides an artifact, for the cache key: deterministic,
        quantised values only (a cache size measured on the host does not belong)."""
        return {"target": self.spec}

    def codegen(self, lowered, options):
        """Lowered IR to this target's compiled form (what the emitters take)."""
        raise unavailable(self, "code generation")

    def emit_text(self, compiled, kind: str, timings: list | None = None) -> str:
        """The text of a text kind other than `ir`."""
        raise unavailable(self, f"`--emit {kind}`")

    def emit_binary(self, compiled, kind: str, timings: list | None = None) -> dict:
        """The files of a binary kind, keyed by how their path differs from `-o OUT`:
        "" for OUT itself, a suffix (".h") for OUT with that suffix instead of its own."""
        raise unavailable(self, f"`--emit {kind}`")

    def artifact(self, compiled) -> bytes:
        """A cacheable target: the loadable artifact (what the disk cache keeps)."""
        raise unavailable(self, "saving an artifact")

    def load(self, path: str, out_idx=None):
        """A cacheable target: the kernels of a saved artifact (a runtime `KernelMap`)."""
        raise unavailable(self, "loading an artifact")

    def library(self, compiled, options, out_idx=None):
        """A target that is not cached: its compiled kernels as callables."""
        raise unavailable(self, "running kernels")

    # ------------------------------------------------------------------ running

    def run(self, kernel, func, sizes: dict, make_args, settings: RunSettings) -> list[str]:
        """`tilec run`: run `kernel` (compiled from IR `func`, with the symbolic `sizes`)
        on the arguments `make_args(materialize, needs_data=())` gives
        (`materialize=False`: (shape, dtype) pairs, but arrays for the tensors named in
        `needs_data`); the lines to print."""
        raise unavailable(self, "`tilec run`")

    def roofline_peaks(self, dtype: str, threads: int | None = None,
                       working_set: float | None = None) -> Peaks | None:
        """The roofline ceilings for `dtype` on `threads` threads (None: every core) of a
        kernel moving `working_set` bytes (a target with caches may raise the memory
        ceiling to the level they fit), or None when the target cannot tell (nothing
        measured yet)."""
        return None

    def profile_runner(self):
        """The runner through which the profiler and the autotuner call, time and
        measure this target's kernels (a `profiler.runners.Runner`)."""
        raise unavailable(self, "profiling", help="profile the kernel on a target that "
                                                  "offers it, e.g. --target cpu")

    def make_index_input(self, rng, shape: tuple, dtype: str, param=None):
        """The array `tilec run` passes for an integer tensor nobody described with
        `--index` (often indices or lengths): small non-negative values, never all
        zeros (driver/index_inputs.py makes the described ones)."""
        from ..driver.index_inputs import default_input
        from ..dtypes import numpy_dtype
        return default_input(shape, numpy_dtype(dtype), rng)
