"""The target machine: triple, CPU, features; the optimisation pipeline; emission.

Defaults describe the host (JIT use); `cpu=` / `features=` / `triple=` override them for
ahead-of-time builds. Code is position independent so it can go into a shared library.
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
from dataclasses import dataclass

import llvmlite.binding as llvm

from ...diagnostics import codes_codegen as codes
from .context import user_error


@dataclass(frozen=True)
class TargetSpec:
    triple: str
    cpu: str
    features: str

    def as_dict(self) -> dict:
        return {"triple": self.triple, "cpu": self.cpu, "features": self.features}


def host_target() -> TargetSpec:
    return TargetSpec(llvm.get_process_triple(), llvm.get_host_cpu_name(),
                      llvm.get_host_cpu_features().flatten())


def resolve(cpu=None, features=None, triple=None) -> TargetSpec:
    """The target to compile for. Overriding the triple or CPU without giving features
    drops the host's features (they may not exist on the other machine)."""
    host = host_target()
    if features is None:
        features = host.features if cpu is None and triple is None else ""
    return TargetSpec(triple or host.triple, cpu or host.cpu, features)


_initialized = []


def _init_targets() -> None:
    """Register LLVM's targets once (all of them, so AOT builds can cross-compile)."""
    if not _initialized:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        _initialized.append(True)


def target_machine(spec: TargetSpec, opt: int = 3):
    _init_targets()
    try:
        target = llvm.Target.from_triple(spec.triple)
    except RuntimeError as e:
        raise user_error(codes.BAD_TARGET, f"unknown target triple {spec.triple!r}: {e}")

    def create():
        return target.create_target_machine(cpu=spec.cpu, features=spec.features,
                                            opt=max(0, min(3, opt)), reloc="pic",
                                            codemodel="default")

    if spec == host_target():
        return create()
    # LLVM only warns (on stderr) about an unknown CPU or feature and may then abort
    # the process while emitting code: catch the warning and make it a diagnostic
    tm, warnings = _capturing_stderr(create)
    unknown = re.findall(r"'([^']*)' is not a recognized (processor|feature)", warnings)
    if unknown:
        name, kind = unknown[0]
        raise user_error(codes.BAD_TARGET, f"unknown {'CPU' if kind == 'processor' else kind} "
                                           f"{name!r} for {spec.triple}",
                         help="check the spelling (e.g. cpu=znver3, features=+avx2,+fma)")
    if warnings.strip():
        sys.stderr.write(warnings)
    return tm


def _capturing_stderr(fn):
    """(fn(), what was written to file descriptor 2 meanwhile): LLVM writes there."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            result = fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        return result, tmp.read().decode("utf-8", "replace")


def optimize(module, tm, opt: int = 3) -> None:
    """Run LLVM's standard module pipeline at `opt` (new pass manager) in place."""
    if opt <= 0:
        return
    pto = llvm.create_pipeline_tuning_options(speed_level=min(3, opt))
    pto.loop_vectorization = opt >= 2
    pto.slp_vectorization = opt >= 2
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(module, pb)


def parse(text: str, spec: TargetSpec, tm):
    """Textual LLVM IR -> a verified llvmlite module for `spec`."""
    mod = llvm.parse_assembly(text)
    mod.triple = spec.triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    return mod

