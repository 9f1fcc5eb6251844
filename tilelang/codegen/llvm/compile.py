"""The driver of the LLVM backend: build the LLVM module, optimise, emit."""
from __future__ import annotations

from llvmlite import ir

from ...ir.nodes import Module
from .abi import emit_kernel, emit_manifest_getter
from .manifest import build_manifest, to_json
from .target import optimize, parse, resolve, target_machine


class CompiledObject:
    """The result of compiling a module: optimised LLVM IR text, object bytes, the
    manifest (dict) and, computed on first use, the assembly text."""

    def __init__(self, llvm_ir: str, object: bytes, manifest: dict, llmod, tm):
        self.llvm_ir = llvm_ir
        self.object = object
        self.manifest = manifest
        self._llmod, self._tm, self._asm = llmod, tm, None

    @property
    def asm(self) -> str:
        # a second trip through the backend: done only when someone asks for it
        if self._asm is None:
            self._asm = self._tm.emit_assembly(self._llmod)
        return self._asm


def build_llvm_module(module: Module, manifest: dict, triple: str) -> ir.Module:
    """The unoptimised LLVM module (llvmlite.ir) of every kernel plus the manifest."""
    mod = ir.Module(name="tilelang")
    mod.triple = triple
    for func in module.funcs:
        emit_kernel(mod, func)
    emit_manifest_getter(mod, to_json(manifest))
    return mod


def compile_module(module: Module, *, opt: int = 3, cpu: str | None = None,
                   features: str | None = None, triple: str | None = None,
                   fast_math: bool = False) -> CompiledObject:
    """`fast_math`: float arithmetic may be reassociated and use reciprocals (TileLang's
    TL_ENABLE_FAST_MATH pass config)."""
    from .expr import FAST_MATH
    spec = resolve(cpu, features, triple)
    tm = target_machine(spec, opt)
    manifest = build_manifest(module, spec)
    token = FAST_MATH.set(bool(fast_math))
    try:
        irmod = build_llvm_module(module, manifest, spec.triple)
    finally:
        FAST_MATH.reset(token)
    llmod = parse(str(irmod), spec, tm)
    optimize(llmod, tm, opt)
    return CompiledObject(str(llmod), tm.emit_object(llmod), manifest, llmod, tm)
