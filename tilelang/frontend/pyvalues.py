"""Python objects seen by a `@tilelang.kernel` function (globals, closure, evaluated
annotations) as builder values."""
from __future__ import annotations

import numbers
import types

from ..diagnostics import codes_types as CT
from ..ir.nodes import Const, Var, Buffer
from ..language.names import ALL_NAMES
from .errors import fail
from .intrinsics import dtype_of
from .values import (Lit, DType, Str, TRef, TModule, OpaqueModule, Opaque, Tup, NoneVal,
                     TirModule, PyFunc)


def python_value(obj, macro_loader):
    """The builder value of a Python object, or None if it cannot appear in a kernel
    (unknown names then report as such)."""
    from .. import language
    if isinstance(obj, language.DTypeName):
        return DType(str(obj))
    if isinstance(obj, bool) or isinstance(obj, numbers.Integral):
        return Lit(bool(obj) if isinstance(obj, bool) else int(obj))
    if isinstance(obj, numbers.Real):
        return Lit(float(obj))
    if isinstance(obj, str):
        return Str(obj)
    if obj is None:
        return NoneVal()
    if isinstance(obj, (tuple, list)):          # a shape computed by the factory
        items = [python_value(x, macro_loader) for x in obj]
        if all(i is not None and not isinstance(i, Opaque) for i in items):
            return Tup(tuple(items))
        return Opaque(f"a Python {type(obj).__name__} of non-constant values")
    if isinstance(obj, dict) and all(isinstance(k, str) for k in obj):
        from .starargs import DictVal          # a dict of helpers (`OPS[op](a, b)`)
        items = tuple((k, python_value(v, macro_loader)) for k, v in obj.items())
        if all(v is not None for _, v in items):
            return DictVal(items)
    if isinstance(obj, language.Symbol):
        return Var(obj.name, "int32")
    if isinstance(obj, types.ModuleType):
        if obj is language:
            return TModule()
        if obj.__name__ == "tilelang.tvm.tir":
            return TirModule()
        return OpaqueModule(obj.__name__)
    kind = getattr(obj, "__tilelang_kind__", None)
    if kind == "macro":
        return macro_loader(obj)
    name = getattr(obj, "__name__", "")
    if callable(obj) and name in ALL_NAMES and getattr(language, name, None) is obj:
        return TRef(name)               # `reduce_fn = T.reduce_max`, called in the kernel
    if kind is None and isinstance(obj, types.FunctionType) and \
            not obj.__module__.startswith("tilelang."):
        return PyFunc(obj, macro_loader)
    if kind == "prim_func":
        return TRef("prim_func")
    if callable(obj) and getattr(obj, "__module__", "") == "tilelang.language":
        return Opaque(f"`{getattr(obj, '__name__', '?')}` from tilelang.language")
    return Opaque(f"a Python {type(obj).__name__}")


def annotation_param(b, name, obj, span, ann_tree):
    """A parameter from its evaluated annotation (a TensorType, a dtype, or a string
    under `from __future__ import annotations`, which is evaluated from the source)."""
    from .. import language
    ann_span = b.spans.of(ann_tree)
    if isinstance(obj, language.TensorType) and any(
            isinstance(d, language.SizeExpr) for d in obj.shape):
        return b._param_from_tree(name, ann_tree, span)   # `N * 2`: read from the source
    if isinstance(obj, language.TensorType):
        shape = []
        for item in obj.shape:
            if isinstance(item, language.Symbol):
                var = Var(item.name, "int32", span=ann_span)
                b.check_symbol(var, ann_span)
                shape.append(var)
            elif isinstance(item, numbers.Integral) and not isinstance(item, bool) and item > 0:
                shape.append(Const(int(item), "int32", span=ann_span))
            else:
                raise fail(CT.BAD_SHAPE_ENTRY, "a tensor shape entry must be a positive "
                           f"integer or a T.dynamic size, found {item!r}", ann_span,
                           "bad shape entry")
        dtype = dtype_of(Str(obj.dtype, ann_span))
        return Buffer(name, tuple(shape), dtype, "global", span=span)
    if isinstance(obj, language.DTypeName):
        return Var(name, str(obj), span=span)
    return b._param_from_tree(name, ann_tree, span)
