"""The current style of `@tilelang.jit`: the decorated function is the kernel itself.

    @tilelang.jit
    def matmul(A, B, block_M, block_N, block_K, dtype=T.float16):
        M, N, K = T.const("M, N, K")         # sizes taken from the arguments' shapes
        A: T.Tensor((M, K), dtype)           # A and B are tensor parameters
        B: T.Tensor((K, N), dtype)
        C = T.empty((M, N), dtype)           # an output the call allocates
        with T.Kernel(...) as (bx, by):
            ...
        return C

`build_eager(func, constants, signature_only)` builds it: the function's other parameters
(`block_M`, `dtype`) and the T.const sizes are compile-time constants given in
`constants`. The kernel's parameters are the annotated tensors, in the function's
parameter order, then the T.empty outputs in the order declared; `return` names the
outputs the call returns. With `signature_only` the T.const sizes are symbols and only the
declarations before the first `T.Kernel` are built: that is how the JIT learns which
argument dimension gives which size (`EagerSignature.tensors`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from lark import Tree

from ..diagnostics import TileLangError, Diagnostic
from ..diagnostics.codes_compat import EAGER_FORM
from ..ir.nodes import Buffer, Module, PrimFunc, Seq, Var
from .callargs import Sig, REQUIRED, bind
from .errors import Fail, fail
from .values import Lit, Str, TRef, Tup, describe, span_of


@dataclass
class EagerSignature:
    """What a current-style kernel takes and returns."""
    name: str
    params: list                    # the function's parameters, in order
    tensors: list                   # [(name, shape)] of the tensor parameters, in call order
    outputs: list                   # names of the T.empty outputs, in order
    returned: tuple | None          # the names `return` gives (None: no return)
    consts: list = field(default_factory=list)      # the T.const names

    @property
    def out_idx(self) -> list | None:
        """Kernel parameter positions of the returned outputs, in return order."""
        if not self.returned:
            return None
        base = len(self.tensors)
        return [base + self.outputs.index(n) for n in self.returned]


class EagerState:
    """The declarations of one current-style body while it is built."""

    def __init__(self, param_names, consts, signature_only: bool):
        self.param_names = list(param_names)
        self.consts = consts                  # name -> int (None: symbols)
        self.signature_only = signature_only
        self.tensors: dict[str, Buffer] = {}
        self.outputs: list[Buffer] = []
        self.const_names: list[str] = []

    # -- `x = T.const(...)`, `C = T.empty(...)`, `M = T.dynamic(...)` -----------------
    def declare(self, b, target, value_tree, span):
        kind = _t_call(b, value_tree)
        if kind == "const":
            return self._const(b, target, value_tree)
        if kind == "empty":
            return self._empty(b, target, value_tree, span)
        if kind in ("dynamic", "symbolic"):
            return self._dynamic(b, target, value_tree, kind)
        return None

    def _const(self, b, target, tree):
        args = bind(Sig("T.const", (("name", REQUIRED), ("dtype", "int32"))), tree, b.spans)
        text = b.eval(args["name"])
        if not isinstance(text, Str):
            raise fail(EAGER_FORM, "T.const takes the sizes' names as one string",
                       span_of(text), describe(text), help='e.g. M, N = T.const("M, N")')
        names = [n for n in re.split(r"[\s,]+", text.value.strip()) if n]
        targets = _target_names(b, target)
        if len(targets) != len(names):
            raise fail(EAGER_FORM, f"T.const names {len(names)} size"
                       f"{'s' if len(names) != 1 else ''} but {len(targets)} "
                       f"{'are' if len(targets) != 1 else 'is'} assigned",
                       b.spans.of(target), f"{len(targets)} names")
        for (name, span), const in zip(targets, names):
            self.const_names.append(const)
            if self.consts is None:
                b.scope.bind(name, Var(const, "int32", span=span), "const")
            elif const in self.consts:
                b.scope.bind(name, Lit(int(self.consts[const]), span), "const")
            else:
                raise fail(EAGER_FORM, f"the size `{const}` is not known", span,
                           "no value", help=f"pass it: `.compile({const}=...)`, or use "
                           f"`{const}` in the shape of a tensor argument")
        return []

    def _empty(self, b, target, tree, span):
        (name, name_span), = _target_names(b, target, single=True)
        args = bind(Sig("T.empty", (("shape", REQUIRED), ("dtype", "float32"))), tree,
                    b.spans)
        buf = self._buffer(b, name, name_span, args["shape"], args["dtype"])
        self.outputs.append(buf)
        b.scope.bind(name, buf, "param")
        b.used.add(name)
        return []

    def _dynamic(self, b, target, tree, kind):
        (name, span), = _target_names(b, target, single=True)
        args = bind(Sig(f"T.{kind}", (("name", REQUIRED), ("dtype", "int32"))), tree, b.spans)
        text = b.eval(args["name"])
        if not isinstance(text, Str) or not text.value.isidentifier():
            raise fail(EAGER_FORM, f"T.{kind} takes the size's name as a string",
                       span_of(text), describe(text))
        b.scope.bind(name, Var(text.value, "int32", span=span), "const")
        return []

    # -- `A: T.Tensor((M, K), dtype)` ----------------------------------------------------
    def annotate(self, b, name, name_span, ann, span):
        if name not in self.param_names:
            raise fail(EAGER_FORM, f"`{name}` is annotated but is not a parameter of the "
                       "function", name_span, "not a parameter",
                       help=f"add `{name}` to the function's parameters, or assign it a value")
        shape_tree, dtype_tree = _tensor_annotation(b, ann)
        if shape_tree is None:          # a scalar parameter: `n: T.int32`
            from .intrinsics import dtype_of
            var = Var(name, dtype_of(b.eval(ann)), span=name_span)
            self.tensors[name] = var
            b.scope.bind(name, var, "param")
            b.used.add(name)
            return []
        buf = self._buffer(b, name, name_span, shape_tree, dtype_tree)
        self.tensors[name] = buf
        b.scope.bind(name, buf, "param")
        b.used.add(name)
        return []

    def _buffer(self, b, name, span, shape_tree, dtype_tree) -> Buffer:
        from .intrinsics import dtype_of
        dtype = "float32" if dtype_tree == "float32" else dtype_of(b.eval(dtype_tree))
        b.collecting_params = True          # symbols in the shape become the kernel's
        try:
            shape = b.eager_shape(b.eval(shape_tree))
        finally:
            b.collecting_params = False
        return Buffer(name, shape, dtype, "global", span=span)


def _t_call(b, tree) -> str | None:
    """The T.<name> a value tree calls, if it is a call of T.const / empty / dynamic."""
    if isinstance(tree, Tree) and tree.data == "call":
        callee = tree.children[0]
        if isinstance(callee, Tree) and callee.data == "getattr":
            attr = str(callee.children[1])
            if attr in ("const", "empty", "dynamic", "symbolic"):
                base = b.eval(callee.children[0])
                from .values import TModule
                if isinstance(base, TModule):
                    return attr
    return None


def _target_names(b, target, single: bool = False) -> list:
    items = target.children if isinstance(target, Tree) and target.data == "tuple" \
        else [target]
    out = []
    for t in items:
        if t is None:
            continue
        if not (isinstance(t, Tree) and t.data == "name"):
            raise fail(EAGER_FORM, "declarations assign to names", b.spans.of(t), "not a name")
        out.append((str(t.children[0]), b.spans.of(t)))
    if single and len(out) != 1:
        raise fail(EAGER_FORM, "this declaration assigns one name", b.spans.of(target),
                   f"{len(out)} names")
    return out


def _tensor_annotation(b, ann):
    """(shape tree, dtype tree) of `T.Tensor(shape, dtype)` / `T.Tensor[shape, dtype]`
    (also T.Buffer), or (None, None) for a dtype annotation."""
    if isinstance(ann, Tree) and ann.data in ("call", "getitem"):
        callee = b.eval(ann.children[0])
        if isinstance(callee, TRef) and callee.name in ("Tensor", "Buffer"):
            if ann.data == "call":
                args = bind(Sig(f"T.{callee.name}", (("shape", REQUIRED),
                                                     ("dtype", "float32"))), ann, b.spans)
                return args["shape"], args["dtype"]
            subs = ann.children[1].children
            if len(subs) != 2:
                raise fail(EAGER_FORM, f"write `T.{callee.name}[shape, dtype]`",
                           b.spans.of(ann), "shape and dtype expected")
            return subs[0], subs[1]
    return None, None


def build_eager(pyfunc, constants: dict, consts: dict | None, signature_only: bool,
                strict_dtypes: bool = False):
    """(Module, EagerSignature) of a current-style function; `constants`: its
    compile-time parameters (and defines), `consts`: the T.const sizes (None: symbols)."""
    import inspect
    from .function import FunctionBuilder
    from .promotion import strict_dtypes as strict
    from .pyfunc import _Loader
    from .pyvalues import python_value
    from ..diagnostics import SourceMap
    func = inspect.unwrap(pyfunc)
    loader = _Loader()
    try:
        with strict(strict_dtypes):
            funcdef, spans = loader.parse(func)
            name_tok, params_tree, _ret, body = funcdef.children
            names = [str(p.children[0]) for p in (params_tree.children if params_tree else [])]
            b = FunctionBuilder(loader.globals_for(func, constants), spans)
            b.eager = EagerState(names, consts, signature_only)
            for n in names:
                if n in constants:
                    b.scope.bind(n, python_value(constants[n], loader.macro), "const")
            _annotated_parameters(b, params_tree, constants)
            stmts = [t for t in body.children if isinstance(t, Tree)]
            returned, stmts = _split_return(b, stmts)
            if signature_only:
                out = _declarations(b, stmts)
            else:
                out = b.prologue_and_kernel(Tree("suite", stmts, body.meta), name_tok)
            sig = _signature(b, str(name_tok), names, returned, spans.of(name_tok))
            params = [b.eager.tensors[n] for n, _ in sig.tensors] + b.eager.outputs
            prim = PrimFunc(str(name_tok), tuple(params), tuple(b.symbols),
                            Seq(tuple(out), span=spans.of(body)), span=spans.of(funcdef))
            return Module((prim,), span=prim.span), sig
    except Fail as err:
        raise TileLangError(err.diag, loader.sources) from None


def _annotated_parameters(b, params_tree, constants) -> None:
    """`def f(A: T.Tensor((M, K), dtype), ...)`: a tensor annotated in the signature is
    declared as one annotated in the body is."""
    for p in (params_tree.children if params_tree else []):
        name, ann = str(p.children[0]), p.children[1] if len(p.children) > 1 else None
        if ann is None or name in constants or _tensor_annotation(b, ann)[0] is None:
            continue
        b.eager.annotate(b, name, b.spans.of(p.children[0]), ann, b.spans.of(p))


def _split_return(b, stmts):
    if stmts and stmts[-1].data == "return_stmt":
        value = stmts[-1].children[0]
        items = value.children if isinstance(value, Tree) and value.data == "tuple" \
            else ([] if value is None else [value])
        names = []
        for item in items:
            if item is None:
                continue
            if not (isinstance(item, Tree) and item.data == "name"):
                raise fail(EAGER_FORM, "`return` names T.empty outputs", b.spans.of(item),
                           "not an output name")
            names.append((str(item.children[0]), b.spans.of(item)))
        return names, stmts[:-1]
    return None, stmts


def _declarations(b, stmts) -> list:
    """The statements before the first grid (signature mode)."""
    out = []
    for t in stmts:
        if t.data == "with_stmt":
            break
        out += b.stmt(t)
    return out


def _signature(b, name, params, returned, name_span) -> EagerSignature:
    st = b.eager
    outputs = [o.name for o in st.outputs]
    if returned is not None:
        for n, span in returned:
            if n not in outputs:
                what = "an input" if n in st.tensors else "not a T.empty output"
                raise fail(EAGER_FORM, f"`return` names `{n}`, {what}", span,
                           "not an output", help="return the tensors declared with "
                                                 "`= T.empty(shape, dtype)`")
    unreturned = [o for o in st.outputs if returned is None or o.name not in
                  [n for n, _ in returned]]
    if unreturned:
        raise fail(EAGER_FORM, f"output `{unreturned[0].name}` is never returned",
                   unreturned[0].span, "declared here",
                   help=f"end the function with `return {', '.join(outputs)}`")
    tensors = [(n, getattr(st.tensors[n], "shape", None)) for n in params if n in st.tensors]
    return EagerSignature(name, params, tensors, outputs,
                          tuple(n for n, _ in returned) if returned else None,
                          list(st.const_names))


__all__ = ["EagerSignature", "build_eager"]
