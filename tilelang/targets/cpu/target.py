"""The cpu target: native code through LLVM, loaded as a shared library.

Spec: `cpu[:LLVM_CPU][+feat,-feat]`, e.g. `cpu` (the host), `cpu:znver4`,
`cpu:x86-64-v3+avx512f`, `cpu+avx2,+fma` (the host CPU with these features). The feature
list starts at the first `+` (or `,`: `cpu:znver4,-avx512f`); `--cpu` / `--features` are
aliases. A named CPU without features gets none of the host's (they may not exist
there); the register tiles follow the features (`machine.for_llvm_target`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from ..base import EmitKind, Peaks, RunSettings, Target, bad_spec


@dataclass(frozen=True)
class CpuTarget(Target):
    llvm_cpu: str | None = None     # None: the host's
    features: str | None = None     # None: the host's (none for a named CPU)

    name = "cpu"
    syntax = "cpu[:LLVM_CPU][+feat,-feat]"
    kinds = (EmitKind("llvm", ".ll", True, "optimised LLVM IR"),
             EmitKind("asm", ".s", True, "assembly"),
             EmitKind("obj", ".o", False, "an object file"),
             EmitKind("so", ".so", False, "a shared library and its C header (OUT.h)"))
    default_kind = "so"
    cacheable = True
    launches_over_ranks = True      # each rank is a process; kernels reach peers' heaps

    # ------------------------------------------------------------------ spec

    @classmethod
    def parse(cls, rest: str, *, cpu: str | None = None, features: str | None = None):
        spec = cls.name + rest
        llvm_cpu, feats = None, None
        if rest.startswith(":"):
            llvm_cpu, feats = _split_features(rest[1:])
            if not llvm_cpu:
                raise bad_spec(spec, "`cpu:` needs an LLVM CPU name, e.g. `cpu:znver4`")
        elif rest[:1] in ("+", "-", ","):
            feats = rest[1:] if rest[0] == "," else rest
        elif rest:
            raise bad_spec(spec, f"expected {cls.syntax}")
        if cpu is not None:
            if llvm_cpu is not None and llvm_cpu != cpu:
                raise bad_spec(spec, f"--cpu {cpu} contradicts the target's CPU `{llvm_cpu}`")
            llvm_cpu = cpu
        if features is not None:
            if feats is not None and feats != features:
                raise bad_spec(spec, f"--features {features} contradicts the target's "
                                     f"features `{feats}`")
            feats = features
        bad = [f for f in (feats or "").split(",") if f and (f[0] not in "+-" or len(f) < 2)]
        if bad:
            raise bad_spec(spec, f"features are written +name or -name, not `{bad[0]}`")
        return cls(llvm_cpu, feats)

    @property
    def spec(self) -> str:
        out = self.name + (f":{self.llvm_cpu}" if self.llvm_cpu else "")
        if self.features is not None:
            out += self.features if self.features.startswith("+") else "," + self.features
        return out

    # ------------------------------------------------------------------ facts

    def resolved(self) -> dict:
        """{"triple", "cpu", "features"} of the machine the code is for: the host's
        (from the host memo), with what the spec names in their place."""
        from .host import llvm_facts
        host = llvm_facts()
        if self.llvm_cpu is None and self.features is None:
            return host
        features = self.features
        if features is None:
            features = "" if self.llvm_cpu else host["features"]
        return {"triple": host["triple"], "cpu": self.llvm_cpu or host["cpu"],
                "features": features}

    def machine(self):
        """The machine description (`machine.py`) the register tiles are chosen for: for
        the host, with what its measured peaks say pays (`machine.with_measured`)."""
        from . import machine
        named = machine.for_llvm_target(self.llvm_cpu, self.features)
        if named is not None:
            return named
        from .host import read_memo
        return machine.with_measured(machine.host(), read_memo("peaks"))

    # ------------------------------------------------------------------ compiling

    def pipeline(self) -> list:
        from .pipeline import cpu_pipeline
        return cpu_pipeline(self.machine())

    def key_parts(self) -> dict:
        from .host import llvmlite_fingerprint
        from .machine import fingerprint
        return {"target": self.name, **self.resolved(), "machine": fingerprint(self.machine()),
                "llvmlite": llvmlite_fingerprint()}

    def codegen(self, lowered, options):
        from ...codegen.llvm import compile_module
        facts = self.resolved()
        return compile_module(lowered, opt=options.opt, cpu=facts["cpu"],
                              features=facts["features"], triple=facts["triple"],
                              fast_math=options.fast_math)

    def emit_text(self, compiled, kind: str, timings: list | None = None) -> str:
        if kind == "llvm":
            return compiled.llvm_ir
        return _timed(timings, "asm", lambda: compiled.asm)     # a second backend trip

    def emit_binary(self, compiled, kind: str, timings: list | None = None) -> dict:
        if kind == "obj":
            return {"": compiled.object}
        from ...codegen.llvm import c_header
        header = c_header(compiled.manifest).encode()
        return {"": _timed(timings, "link", lambda: _linked(compiled)), ".h": header}

    def artifact(self, compiled) -> bytes:
        return _linked(compiled)

    def load(self, path: str, out_idx=None):
        from ...runtime.artifact import load
        return load(path, out_idx=out_idx)

    # ------------------------------------------------------------------ running

    def run(self, kernel, func, sizes: dict, make_args, settings: RunSettings) -> list[str]:
        from .timing import run
        report = run(kernel, func, make_args(True), sizes, settings.repeat, settings.threads)
        return report.lines()

    def roofline_peaks(self, dtype: str, threads: int | None = None,
                       working_set: float | None = None) -> Peaks | None:
        """The host's measured ceilings (the "peaks" memo, `peaks.py`) on `threads`
        threads (None: every core); the memory ceiling is the read of the cache level
        `working_set` bytes fit (the host's L2 / L3 sizes), DRAM's when it fits none or
        is None. None before anything was measured, and for a cross target (no
        measurement of that machine)."""
        if self.llvm_cpu is not None or self.features is not None:
            return None
        import os
        from .host import read_memo
        from .machine import host
        from .peaks import READS, ceilings
        figures = read_memo("peaks")
        if figures is None or figures.get("format") not in READS:
            return None
        c = ceilings(figures, dtype, threads or os.cpu_count() or 1, working_set,
                     {"l2": host().l2, "l3": host().l3})
        return Peaks(c.flops_per_s, c.bytes_per_s, "measured")

    def profile_runner(self):
        """Native calls timed by the wall clock, phases by a timers build
        (`profiling.py`)."""
        from .profiling import CpuRunner
        return CpuRunner(self)


def _split_features(text: str) -> tuple[str, str | None]:
    """`znver4+avx2,-sse4a` -> ("znver4", "+avx2,-sse4a"); `znver4,-avx2` -> ("znver4",
    "-avx2"); a name alone has no feature list."""
    cut = min((i for i in (text.find("+"), text.find(",")) if i >= 0), default=-1)
    if cut < 0:
        return text, None
    feats = text[cut + 1:] if text[cut] == "," else text[cut:]
    return text[:cut], feats


def _linked(compiled) -> bytes:
    """The shared library of a compiled object, linked by the system C compiler."""
    import os
    import tempfile
    from ...codegen.llvm import link_shared
    with tempfile.TemporaryDirectory(prefix="tilelang-link-") as tmp:
        path = os.path.join(tmp, "kernel.so")
        link_shared(compiled.object, path)
        with open(path, "rb") as f:
            return f.read()


def _timed(timings, name: str, fn):
    import time
    start = time.perf_counter()
    result = fn()
    if timings is not None:
        timings.append((name, time.perf_counter() - start))
    return result
