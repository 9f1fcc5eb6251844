"""The few names of TVM's Python API that TileLang programs use in their kernels.

TileLang programs import `tvm` beside `tilelang` (`from tilelang import tvm`,
`from tvm import tirx`) to spell typed constants and bit casts in helper functions:
`tirx.const(6, T.uint16)`, `tirx.reinterpret(T.float16, bits)`. Here `tvm.tir` (and its
newer name `tvm.tirx`) is a namespace the compiler reads in kernel code, as it reads `T`
(docs/compat.md lists its functions), `DataType` describes a dtype to Python and
`target.Target` a TVM target spec.

`import tilelang` makes `import tvm` resolve to this package when no TVM is installed
(`tilelang/tvm_alias.py`); an installed TVM is left alone.
"""
from __future__ import annotations

from . import target, tir
from .datatype import DataType

tirx = tir

__all__ = ["tir", "tirx", "target", "DataType"]
