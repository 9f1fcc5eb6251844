"""The targets tilelang compiles for, one package each, and `get(spec)`.

    target = targets.get("tcsim:tiny")      # or "cpu", "cpu:znver4", "cpu:x86-64-v3+avx512f"
    target.pipeline(), target.kinds, target.codegen(lowered, options), target.load(...)

A target package holds leaf modules, which import only the standard library and the
shared leaves (`tilelang.dtypes`, `tilelang.diagnostics`) so that passes, codegen, the
kernel library and the runtime may all read them (the CPU machine descriptions; the tcsim
ISA and machine configs), and a `target.py` whose `Target` subclass (`base.py`) answers
everything the driver asks. A new target is a new package plus one line in `REGISTRY`.

This module and the packages' `__init__` stay light (standard library only): importing a
leaf imports them first.
"""
from __future__ import annotations

import importlib
import os

# name -> "module:class" of its Target
REGISTRY = {
    "cpu": "tilelang.targets.cpu.target:CpuTarget",
    "tcsim": "tilelang.targets.tcsim.target:TcsimTarget",
}
DEFAULT = "cpu"
ENV = "TILELANG_TARGET"             # overrides DEFAULT: run unchanged programs on tcsim
# TileLang's GPU targets (`target="cuda"`, `"hip -mcpu=gfx950"`): a program written for a
# GPU compiles for the default target, as with "auto"
GPU_TARGETS = ("cuda", "hip", "rocm", "metal", "vulkan", "webgpu", "opencl", "nvptx")


def names_default(spec) -> bool:
    """Whether `spec` asks for the default target: None, "auto" or a GPU target (also
    as TVM's config dict, `{"kind": "cuda", "arch": "sm_75"}`)."""
    if isinstance(spec, dict):
        return spec.get("kind") in GPU_TARGETS
    return spec is None or spec == "auto" or (
        isinstance(spec, str) and _name_of(spec) in GPU_TARGETS)


def default_spec() -> str:
    """The target of a compile that names none (or TileLang's "auto"): $TILELANG_TARGET,
    else cpu."""
    return os.environ.get(ENV, "").strip() or DEFAULT


def target_class(name: str):
    """The Target subclass registered as `name` (KeyError if none)."""
    module, _, cls = REGISTRY[name].partition(":")
    return getattr(importlib.import_module(module), cls)


def classes() -> list:
    """Every registered Target subclass, in registry order."""
    return [target_class(name) for name in REGISTRY]


def get(spec: str | None = None, *, cpu: str | None = None, features: str | None = None):
    """The Target `spec` names: `NAME[REST]`, where NAME is a registered target and the
    target parses REST (`:CONFIG`, `:LLVM_CPU+feat,-feat`). `cpu` / `features` are the
    `--cpu` / `--features` aliases of the cpu target's spec; None (or TileLang's "auto",
    or one of its GPU targets) is the default target: $TILELANG_TARGET, else cpu.
    A Target passes through. An unknown name or a malformed spec is a user error (TL0705)."""
    from .base import Target, bad_spec
    spec = default_spec() if names_default(spec) else spec
    if isinstance(spec, Target):
        if cpu is None and features is None:
            return spec
        spec = spec.spec
    if not isinstance(spec, str):
        raise bad_spec(repr(spec), "a target is given as a string such as `cpu`")
    name = _name_of(spec)
    if name not in REGISTRY:
        raise bad_spec(spec, None)
    return target_class(name).parse(spec[len(name):], cpu=cpu, features=features)


def _name_of(spec: str) -> str:
    """The leading name of a spec: its letters, digits and underscores."""
    end = 0
    while end < len(spec) and (spec[end].isalnum() or spec[end] == "_"):
        end += 1
    return spec[:end]


def emit_kinds() -> list[str]:
    """Every `--emit` kind some registered target offers, each once."""
    out = []
    for cls in classes():
        out += [k.name for k in cls.all_kinds() if k.name not in out]
    return out


def offering(kind: str) -> list[str]:
    """The spec syntax of each registered target that offers `--emit kind`."""
    return [cls.syntax for cls in classes() if kind in [k.name for k in cls.all_kinds()]]
