"""Callable tcsim kernels: what `tilelang.compile(..., target="tcsim:CONFIG")` returns.

    k = SimKernel(artifact)              # or a SimLibrary of several, by kernel name
    k(a, b, c)                           # simulated (functional): c is written in place
    print(k.last_report.summary())       # cycles, utilisation, bytes, stalls of that call

A call runs the whole simulator, so the report of every call is kept, not only the
results: evaluating a kernel on the machine is what the target is for.
"""
from __future__ import annotations

from ..errors import LaunchTypeError, LaunchValueError
from ..kernel_map import KernelMap
from ...targets.tcsim.artifact import Artifact


_UNSET = object()


class SimKernel:
    """One tcsim artifact, run by calling it on numpy arrays (outputs written in place;
    with `out_idx`, as on the CPU, those parameters are allocated and returned);
    `.last_report` is the Report of the last call."""

    def __init__(self, artifact: Artifact, config: str | None = None, out_idx=None):
        self.artifact = artifact
        self.config = config or artifact.config_name
        self.out_idx = out_idx
        self.last_report = None

    @property
    def name(self) -> str:
        return self.artifact.program.name

    def __call__(self, *args, mode: str = "functional", trace=None, out_idx=_UNSET,
                 **kwargs):
        """Simulate one launch; `mode="timing"` takes `(shape, dtype)` pairs and computes
        nothing; `trace=PATH` writes a Chrome trace. Returns the `out_idx` outputs (None
        without; see `.last_report` for the machine's report)."""
        from .sim import run
        out_idx = self.out_idx if out_idx is _UNSET else out_idx
        try:
            result = run(self.artifact, *args, config=self.config, mode=mode, trace=trace,
                         out_idx=out_idx, **kwargs)
        except (LaunchTypeError, LaunchValueError) as err:
            raise err.with_traceback(None) from None    # it names the argument: no frames
        if out_idx is None:
            self.last_report = result
            return None
        self.last_report, outputs = result
        return outputs

    def __repr__(self) -> str:
        return f"<tcsim kernel {self.name} on {self.config}>"


class SimLibrary(KernelMap):
    """The kernels of one compile, by name (the shape of the CPU runtime's Library)."""

    def __init__(self, kernels: dict):
        self._kernels = dict(kernels)

    def __repr__(self) -> str:
        return f"<tcsim library: {', '.join(self._kernels)}>"
