"""Callable tcsim kernels: what `tilelang.compile(..., target="tcsim:CONFIG")` returns.

    k = SimKernel(artifact)              # or a SimLibrary of several, by kernel name
    k(a, b, c)                           # simulated (functional): c is written in place
    print(k.last_report.summary())       # cycles, utilisation, bytes, stalls of that call

A call runs the whole simulator, so the report of every call is kept, not only the
results: evaluating a kernel on the machine is what the target is for.
"""
from __future__ import annotations

from ..kernel_map import KernelMap
from ...targets.tcsim.artifact import Artifact


class SimKernel:
    """One tcsim artifact, run by calling it on numpy arrays (outputs written in place,
    as a CPU kernel without `out_idx`); `.last_report` is the Report of the last call."""

    def __init__(self, artifact: Artifact, config: str | None = None):
        self.artifact = artifact
        self.config = config or artifact.config_name
        self.last_report = None

    @property
    def name(self) -> str:
        return self.artifact.program.name

    def __call__(self, *args, mode: str = "functional", trace=None, **kwargs):
        """Simulate one launch; `mode="timing"` takes `(shape, dtype)` pairs and computes
        nothing; `trace=PATH` writes a Chrome trace. Returns None (see `.last_report`)."""
        from .sim import run
        self.last_report = run(self.artifact, *args, config=self.config, mode=mode,
                               trace=trace, **kwargs)

    def __repr__(self) -> str:
        return f"<tcsim kernel {self.name} on {self.config}>"


class SimLibrary(KernelMap):
    """The kernels of one compile, by name (the shape of the CPU runtime's Library)."""

    def __init__(self, kernels: dict):
        self._kernels = dict(kernels)

    def __repr__(self) -> str:
        return f"<tcsim library: {', '.join(self._kernels)}>"
