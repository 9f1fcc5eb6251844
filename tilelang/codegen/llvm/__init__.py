"""CPU code generation: lowered IR -> LLVM IR -> optimised native object code.

    compile_module(module, *, opt=3, cpu=None, features=None, triple=None) -> CompiledObject
        .llvm_ir (optimised LLVM IR text), .object (ELF bytes), .asm (text, on first use),
        .manifest (dict)
    link_shared(object_bytes, path)      a .so via the system C compiler (-shared -lm)
    c_header(manifest) -> str            the C header for C callers

The exported symbols and the manifest follow docs/interfaces.md ("CPU codegen").

Modules, one concern each:
    compile.py     the driver: build the LLVM module, parse, optimise, emit
    target.py      triple / CPU / features, target machine (PIC), O-level pipelines
    abi.py         per kernel: name__impl (typed, noalias tensors, the block loop),
                   name__blocks, name__num_blocks, the C entry `name`, tilelang_manifest
    stmt.py        statements: loops (+ loop metadata), if, let, allocas, stores, atomics
    expr.py        expressions: arithmetic (floor div/mod), comparisons, lazy select,
                   int64 address arithmetic, loads
    convert.py     dtype conversions: storage <-> compute, casts between every pair
    intrinsics.py  T.exp, T.sqrt, ... -> LLVM intrinsics / libm
    fastexp.py     inline vectorisable float32 exp / exp2
    metadata.py    !llvm.loop nodes (vectorize / unroll hints)
    types.py       dtype -> LLVM type (compute and storage), typed constants
    manifest.py    the JSON manifest; size-expression spelling of shapes and grids
    link.py        finding the C compiler, linking atomically
    header.py      the C header
    context.py     per-function emitter state; TL05xx error helpers
"""
from __future__ import annotations

from .header import c_header
from .link import link_shared, find_c_compiler
from .compile import CompiledObject, compile_module
from .target import TargetSpec, host_target, resolve as resolve_target

__all__ = ["compile_module", "CompiledObject", "link_shared", "c_header", "find_c_compiler",
           "TargetSpec", "host_target", "resolve_target"]
