"""CPU code generation: lowered IR -> LLVM IR -> optimised native object code.

    compile_module(module, *, opt=3, cpu=None, features=None, triple=None) -> CompiledObject
    link_shared(object_bytes, path)      a .so via the system C compiler (-lm)
    c_header(manifest) -> str            the C header for C callers

The exported symbols and the manifest follow docs/interfaces.md ("CPU codegen").
"""
from __future__ import annotations

from .header import c_header
from .link import link_shared, find_c_compiler
from .compile import CompiledObject, compile_module
from .target import TargetSpec, host_target, resolve as resolve_target

__all__ = ["compile_module", "CompiledObject", "link_shared", "c_header", "find_c_compiler",
           "TargetSpec", "host_target", "resolve_target"]
