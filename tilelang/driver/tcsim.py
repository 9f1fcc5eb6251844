"""The tcsim target in the driver: tile IR -> tcsim artifacts -> simulated kernels.

    parse -> simplify -> memory_reuse (TCSIM_RULES) -> codegen.tcsim.compile_module

Artifacts are not cached on disk: code generation walks the tile IR once per kernel
(milliseconds for the examples, below the parse that a cache hit would still need for
tcsim, which has no source index), and an artifact is rebuilt as cheaply as it is read.
"""
from __future__ import annotations

import time

from ..diagnostics import Diagnostic, TileLangError
from ..diagnostics.codes_driver import WRONG_TARGET
from . import stages


def config_name(options) -> str:
    from ..codegen.tcsim import parse_target
    return parse_target(options.target).name


def artifacts(module, options, timings: list | None = None) -> dict:
    """{kernel name: Artifact} of `module` (the parsed IR) for the options' machine.
    `timings` collects (stage, seconds) for `--stats`."""
    from ..codegen.tcsim import compile_module
    lowered = stages.lower(module, options, timings=timings)
    start = time.perf_counter()
    out = compile_module(lowered, options.target, raster=options.raster)
    if timings is not None:
        timings.append(("codegen", time.perf_counter() - start))
    return out


def tcasm_text(module, options, timings: list | None = None) -> str:
    """`--emit tcasm`: every kernel's program as `.tcasm` text, one after the other."""
    from ..targets.tcsim.asm import disassemble
    return "\n".join(disassemble(a.program) for a in artifacts(module, options, timings).values())


def artifact_bytes(module, options, timings: list | None = None) -> bytes:
    """`--emit tcsim`: the artifact file of the module's one kernel (a file holds one)."""
    func = stages.only_kernel(module)
    return artifacts(module, options, timings)[func.name].to_bytes()


def load_library(module, options, out_idx=None):
    """The module's kernels as callables that run the simulator (`SimLibrary`)."""
    from ..runtime.tcsim import SimKernel, SimLibrary
    if out_idx is not None:
        raise TileLangError(Diagnostic(
            WRONG_TARGET, "`out_idx` is not supported on the tcsim target",
            help="allocate the outputs and pass them: results are written in place"))
    config = config_name(options)
    return SimLibrary({name: SimKernel(a, config)
                       for name, a in artifacts(module, options).items()})


def simulate(func, options, sizes: dict, scalars: dict, mode: str, trace=None):
    """`tilec run --target tcsim:CONFIG`: random inputs (shapes only when
    `mode="timing"`, but for the tensors whose values the program reads) for `func`,
    one simulated launch; returns the Report."""
    from ..ir.nodes import Module
    from ..runtime.tcsim import run
    from ..runtime.tcsim.launch import value_params
    from .bench import make_arguments
    artifact = artifacts(Module((func,)), options)[func.name]
    args = make_arguments(func, sizes, scalars, materialize=mode == "functional",
                          needs_data=value_params(artifact.program))
    return run(artifact, *args, config=config_name(options), mode=mode, trace=trace)
