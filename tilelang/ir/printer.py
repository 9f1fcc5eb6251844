"""The IR as .tl text: `print_module(mod)` / `print_node(node)`.

The output is the language users write (valid Python, `import tilelang.language as T`)
and the frontend parses it back to a structurally equal IR, at every stage. A few
spellings exist so that this holds exactly:

* constants print bare where the parser's literal typing gives back their dtype (the
  other operand's dtype, a store's buffer dtype, or int32 / float32 / bool), typed
  otherwise: `T.float16(2.0)`; `inf` is `T.infinity("float32")`;
* a negated constant is `-(c)` (`-c` is the negative constant itself) and a binary
  operator on two constants types its left operand (`T.int32(1) + 2`), since
  untyped literals fold;
* loops: `range(n)`, `T.serial(a, b)`, `T.Parallel(n, ...)` (min 0),
  `T.parallel(a, b)`, `T.vectorized`, `T.unroll`, `T.Pipelined(n, num_stages=s)`;
* regions: a whole buffer by name; next to a whole buffer, a start corner `A[i, j]`
  when the parser infers the same extents; otherwise slices `A[i:i + 128, 0:32]` (a
  dim of extent 1 as a bare index when another dim is a slice).

Imports nothing outside tilelang.ir and tilelang.dtypes.
"""
from __future__ import annotations

import math

from .. import dtypes
from .nodes import (Node, Expr, Const, Var, Binary, Unary, Call, Cast, BitCast, Select, Buffer,
                    Load, Stmt, Seq, Let, Alloc, Store, Atomic, For, If, While, Region, Copy,
                    Gemm, Fill,
                    Prefetch, Reduce, TileAtomic, Kernel, PrimFunc, Module, COMPARISONS,
                    PeerCopy, SignalOp, Wait, Barrier, AtomicFetch)

_PREC = {"or": 1, "and": 2, "+": 6, "-": 6, "*": 7, "/": 7, "//": 7, "%": 7}
_CMP, _NOT, _UNARY, _ATOM = 4, 3, 8, 9
_DEFAULT = {"int": "int32", "float": "float32", "bool": "bool"}
_INDENT = "    "


def print_module(mod: Module) -> str:
    lines = ["import tilelang.language as T", ""]
    seen = []
    for f in mod.funcs:
        for s in f.symbols:
            if s.name not in seen:
                seen.append(s.name)
    lines += [f'{name} = T.dynamic("{name}")' for name in seen]
    for f in mod.funcs:
        lines += ["", ""] + _func_lines(f)
    return "\n".join(lines) + "\n"


def print_node(node: Node) -> str:
    if isinstance(node, Module):
        return print_module(node)
    if isinstance(node, PrimFunc):
        return "\n".join(_func_lines(node)) + "\n"
    if isinstance(node, Expr):
        return _expr(node)[0]
    if isinstance(node, Stmt):
        return "\n".join(_stmt_lines(node, 0)) + "\n"
    if isinstance(node, Region):
        return _region(node)
    if isinstance(node, Buffer):
        return node.name
    raise TypeError(f"cannot print {type(node).__name__}")


# ----------------------------------------------------------------------------- functions

_WIDTH = 100


def _func_lines(f: PrimFunc) -> list[str]:
    lines = ["@T.prim_func"] + _signature(f)
    body = f.body.stmts if isinstance(f.body, Seq) else (f.body,)
    lines += _block(body, 1)
    return lines


def _signature(f: PrimFunc) -> list[str]:
    """`def name(params):`, parameters wrapped (aligned after the parenthesis) to keep
    lines within _WIDTH columns."""
    head = f"def {f.name}("
    params = [_param(p) for p in f.params]
    lines, current = [], head
    for k, text in enumerate(params):
        piece = text + (", " if k + 1 < len(params) else "")
        holds_param = current not in (head, " " * len(head))
        if holds_param and len(current) + len(piece.rstrip()) > _WIDTH:
            lines.append(current.rstrip())
            current = " " * len(head)
        current += piece
    lines.append(current.rstrip() + "):")
    return lines


def _param(p) -> str:
    if isinstance(p, Buffer):
        return f'{p.name}: T.Tensor({_shape(p.shape)}, "{p.dtype}")'
    return f"{p.name}: T.{p.dtype}"


def _shape(shape) -> str:
    items = [_expr(s)[0] for s in shape]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


# ----------------------------------------------------------------------------- statements

def _block(stmts, depth: int) -> list[str]:
    lines = []
    for s in stmts:
        lines += _stmt_lines(s, depth)
    return lines or [_INDENT * depth + "pass"]


def _stmt_lines(s: Stmt, depth: int) -> list[str]:
    pad = _INDENT * depth
    if isinstance(s, Seq):
        return _block(s.stmts, depth)
    if isinstance(s, For):
        return _for_lines(s, depth)
    if isinstance(s, If):
        return _if_lines(s, depth, "if")
    if isinstance(s, While):
        return [pad + f"while {_expr(s.cond)[0]}:"] + _body(s.body, depth + 1)
    if isinstance(s, Kernel):
        return _kernel_lines(s, depth)
    return [pad + _simple(s)]


def _body(s: Stmt, depth: int) -> list[str]:
    return _block(s.stmts if isinstance(s, Seq) else (s,), depth)


def _simple(s: Stmt) -> str:
    if isinstance(s, Let):
        # a bare literal would bind a compile-time constant, not a variable: type it
        value = _const(s.value, None, typed=True) if isinstance(s.value, Const) \
            else _expr(s.value)
        return f"{s.var.name} = {value[0]}"
    if isinstance(s, Alloc):
        return _alloc(s)
    if isinstance(s, Store):
        value = _expr(s.value, s.buffer.dtype)[0]
        if s.buffer.scope == "var":
            return f"{s.buffer.name} = {value}"
        return f"{_element(s.buffer, s.indices)} = {value}"
    if isinstance(s, Atomic):
        return f"T.atomic_{s.op}({_element(s.buffer, s.indices)}, " \
               f"{_expr(s.value, s.buffer.dtype)[0]})"
    if isinstance(s, Copy):
        src, dst = _region_pair(s.src, s.dst)
        hint = "" if s.eviction_policy == "evict_normal" else \
            f", eviction_policy={s.eviction_policy!r}"
        return f"T.copy({src}, {dst}{hint})"
    if isinstance(s, Fill):
        return f"T.fill({_region(s.dst)}, {_expr(s.value, s.dst.buffer.dtype)[0]})"
    if isinstance(s, Gemm):
        flags = [f"{k}=True" for k, v in (("transpose_A", s.transpose_a),
                                          ("transpose_B", s.transpose_b),
                                          ("clear_accum", s.clear_accum)) if v]
        args = [_region(s.a), _region(s.b), _region(s.c)] + flags
        return f"T.gemm({', '.join(args)})"
    if isinstance(s, Reduce):
        clear = "" if s.clear else ", clear=False"
        return f"T.reduce_{s.kind}({s.src.name}, {s.dst.name}, dim={s.dim}{clear})"
    if isinstance(s, Prefetch):
        split = "" if s.parts == 1 else f", part={_expr(s.part)[0]}, parts={s.parts}"
        return f"T.prefetch({_region(s.region)}{split})"
    if isinstance(s, TileAtomic):
        src, dst = _region_pair(s.src, s.dst)
        return f"T.atomic_{s.op}({dst}, {src})"
    text = _rank_stmt(s)
    if text is not None:
        return text
    raise TypeError(f"cannot print statement {type(s).__name__}")


def _rank_stmt(s: Stmt) -> str | None:
    """The multi-rank statements, in TileScale's spelling."""
    if isinstance(s, PeerCopy):
        src = f"T.address_of({_element(s.src, s.src_indices)})"
        dst = f"T.address_of({_element(s.dst, s.dst_indices)})"
        pe = "dst_pe" if s.kind == "put" else "src_pe"
        return f"T.{s.kind}_block({src}, {dst}, {_expr(s.size)[0]}, {pe}={_expr(s.pe)[0]})"
    if isinstance(s, SignalOp):
        return (f"T.signal_op({_element(s.buffer, s.indices)}, "
                f"{_expr(s.value, s.buffer.dtype)[0]}, \"{s.op}\", {_expr(s.pe)[0]})")
    if isinstance(s, Wait):
        return (f"T.wait_{s.cmp}({_element(s.buffer, s.indices)}, "
                f"{_expr(s.expected, s.buffer.dtype)[0]}, {_expr(s.pe)[0]})")
    if isinstance(s, Barrier):
        return f"T.barrier_blocks({s.buffer.name})"
    if isinstance(s, AtomicFetch):
        return (f"{s.var.name} = T.atomic_{s.op}({_element(s.buffer, s.indices)}, "
                f"{_expr(s.value, s.buffer.dtype)[0]}, return_prev=True)")
    return None


def _alloc(s: Alloc) -> str:
    b = s.buffer
    if b.scope == "var":
        init = "" if s.init is None else f", init={_expr(s.init, b.dtype)[0]}"
        return f'{b.name} = T.alloc_var("{b.dtype}"{init})'
    if s.source is not None:
        pe = "" if s.pe is None else f", pe={_expr(s.pe)[0]}"
        return f'{b.name} = T.Tensor({_shape(b.shape)}, "{b.dtype}", {s.source.name}.data{pe})'
    place = "" if s.offset is None else f", offset={s.offset}, align={s.align}"
    return f'{b.name} = T.alloc_{b.scope}({_shape(b.shape)}, "{b.dtype}"{place})'


def _element(buf: Buffer, indices) -> str:
    return f"{buf.name}[{', '.join(_expr(i)[0] for i in indices)}]"


def _if_lines(s: If, depth: int, keyword: str) -> list[str]:
    pad = _INDENT * depth
    # a bare `if False:` would be a compile-time `if` (only the branch taken is built)
    cond = _const(s.cond, None, typed=True) if isinstance(s.cond, Const) else _expr(s.cond)
    lines = [f"{pad}{keyword} {cond[0]}:"] + _body(s.then_body, depth + 1)
    e = s.else_body
    if isinstance(e, If):
        lines += _if_lines(e, depth, "elif")
    elif e is not None:
        lines += [f"{pad}else:"] + _body(e, depth + 1)
    return lines


def _kernel_lines(k: Kernel, depth: int) -> list[str]:
    pad = _INDENT * depth
    args = [_expr(g)[0] for g in k.grid] + [f"threads={k.threads}"]
    names = [v.name for v in k.block_vars]
    target = names[0] if len(names) == 1 else "(" + ", ".join(names) + ")"
    swizzle = [f"{_INDENT * (depth + 1)}T.use_swizzle({k.raster})"] if k.raster else []
    return [f"{pad}with T.Kernel({', '.join(args)}) as {target}:"] + swizzle + \
        _body(k.body, depth + 1)


def _is_zero(e) -> bool:
    return isinstance(e, Const) and not isinstance(e.value, bool) and e.value == 0


def _for_lines(f: For, depth: int) -> list[str]:
    pad = _INDENT * depth
    names, iterator, body = [f.var.name], _loop_iterator(f), f.body
    if f.kind == "parallel" and _is_zero(f.min) and not f.annotations:
        extents = [_expr(f.extent)[0]]
        while (isinstance(body, For) and body.kind == "parallel" and _is_zero(body.min)
               and not body.annotations):
            names.append(body.var.name)
            extents.append(_expr(body.extent)[0])
            body = body.body
        iterator = f"T.Parallel({', '.join(extents)})"
    return [f"{pad}for {', '.join(names)} in {iterator}:"] + _body(body, depth + 1)


def _loop_iterator(f: For) -> str:
    if _is_zero(f.min):
        bounds = [_expr(f.extent)[0]]
    else:
        bounds = [_expr(f.min)[0], _expr(_end(f.min, f.extent))[0]]
    kw = [f"{k}={v!r}" for k, v in f.annotations]
    name = {"serial": "T.serial", "parallel": "T.parallel", "pipelined": "T.Pipelined",
            "unroll": "T.unroll", "vectorized": "T.vectorized"}[f.kind]
    if f.kind == "serial" and len(bounds) == 1 and not kw:
        name = "range"
    return f"{name}({', '.join(bounds + kw)})"


def _end(start: Expr, extent: Expr) -> Expr:
    """start + extent, computed when both are integer constants."""
    if (isinstance(start, Const) and isinstance(extent, Const)
            and not isinstance(start.value, bool) and not isinstance(extent.value, bool)):
        return Const(start.value + extent.value, start.dtype)
    return Binary("+", start, extent, start.dtype)


# ----------------------------------------------------------------------------- regions

def _is_whole(r: Region) -> bool:
    return len(r.extents) == len(r.buffer.shape) and all(_is_zero(s) for s in r.starts) \
        and all(isinstance(d, Const) and d.value == e for d, e in zip(r.buffer.shape, r.extents)) \
        and not _limited(r)


def _limited(r: Region) -> bool:
    return r.limits is not None and any(x is not None for x in r.limits)


def _inferred(ndim: int, other: tuple) -> tuple | None:
    """The extents the parser gives a start corner `A[i, j]` of an `ndim`-d buffer next
    to a region of extents `other` (same rank: the same; else non-unit extents
    right-aligned)."""
    if len(other) == ndim:
        return tuple(other)
    core = tuple(e for e in other if e != 1)
    return None if len(core) > ndim else (1,) * (ndim - len(core)) + core


def _region_pair(src: Region, dst: Region) -> tuple[str, str]:
    """Two regions of a copy: a side next to a whole buffer prints as its start corner
    (`T.copy(A[by * 128, k * 32], A_s)`) when the parser infers the same extents."""
    texts = []
    for this, other in ((src, dst), (dst, src)):
        corner = (not _is_whole(this) and not _limited(this) and _is_whole(other)
                  and _inferred(len(this.extents), tuple(other.extents)) == tuple(this.extents))
        texts.append(_element(this.buffer, this.starts) if corner else _region(this))
    return texts[0], texts[1]


def _region(r: Region) -> str:
    buf = r.buffer
    if _is_whole(r):
        return buf.name
    any_slice = any(e != 1 for e in r.extents)
    parts = []
    limits = r.limits or (None,) * len(r.starts)
    for start, extent, limit in zip(r.starts, r.extents, limits):
        if limit is not None:            # a dynamic slice: sized by the other operand
            parts.append(f"{_expr(start)[0]}:{_expr(limit)[0]}")
        elif extent == 1 and any_slice:
            parts.append(_expr(start)[0])
        else:
            stop = _end(start, Const(extent, start.dtype))
            parts.append(f"{_expr(start)[0]}:{_expr(stop)[0]}")
    return f"{buf.name}[{', '.join(parts)}]"


# ----------------------------------------------------------------------------- expressions

def _kind(dtype: str) -> str:
    if dtypes.is_bool(dtype):
        return "bool"
    return "float" if dtypes.is_float(dtype) else "int"


def _const(c: Const, ctx: str | None, typed: bool = False) -> tuple[str, int]:
    kind = _kind(c.dtype)
    if kind == "float":
        v = float(c.value)
        if math.isinf(v):
            text = f'T.infinity("{c.dtype}")'
            return ("-" + text, _UNARY) if v < 0 else (text, _ATOM)
        if math.isnan(v):
            inf = f'T.infinity("{c.dtype}")'
            return f"({inf} - {inf})", _ATOM
        lit = repr(v)
    elif kind == "bool":
        lit = "True" if c.value else "False"
    else:
        lit = str(int(c.value))
    bare = not typed and c.dtype == (ctx or _DEFAULT[kind])
    if bare:
        return lit, (_UNARY if lit.startswith("-") else _ATOM)
    return f"T.{c.dtype}({lit})", _ATOM


def _operand_ctx(a: Expr, b: Expr) -> tuple[str | None, str | None]:
    """Contexts for two operands whose literals adapt to each other."""
    a_ctx = b.dtype if isinstance(a, Const) and not isinstance(b, Const) else None
    b_ctx = a.dtype if isinstance(b, Const) else None
    return a_ctx, b_ctx


def _expr(e: Expr, ctx: str | None = None) -> tuple[str, int]:
    """(text, precedence) of an expression; `ctx` is the dtype a bare literal would take."""
    if isinstance(e, Const):
        return _const(e, ctx)
    if isinstance(e, Var):
        return e.name, _ATOM
    if isinstance(e, Load):
        if e.buffer.scope == "var":
            return e.buffer.name, _ATOM
        return _element(e.buffer, e.indices), _ATOM
    if isinstance(e, Binary):
        return _binary(e)
    if isinstance(e, Unary):
        return _unary(e)
    if isinstance(e, Call):
        args = _pair_args(e.args) if len(e.args) == 2 else [_expr(a)[0] for a in e.args]
        if len(e.args) == 2 and all(isinstance(a, Const) for a in e.args):
            # two bare literals would be computed by the parser: type the first
            args[0] = _const(e.args[0], None, typed=True)[0]
        return f"T.{e.name}({', '.join(args)})", _ATOM
    if isinstance(e, Cast):
        return f'T.cast({_expr(e.value)[0]}, "{e.dtype}")', _ATOM
    if isinstance(e, BitCast):
        return f'T.reinterpret("{e.dtype}", {_expr(e.value)[0]})', _ATOM
    if isinstance(e, Select):
        arms = _pair_args((e.true_value, e.false_value))
        return f"T.if_then_else({_expr(e.cond)[0]}, {arms[0]}, {arms[1]})", _ATOM
    raise TypeError(f"cannot print expression {type(e).__name__}")


def _pair_args(args) -> list[str]:
    a, b = args
    a_ctx, b_ctx = _operand_ctx(a, b)
    return [_expr(a, a_ctx)[0], _expr(b, b_ctx)[0]]


def _binary(e: Binary) -> tuple[str, int]:
    if e.op in ("min", "max"):
        return f"T.{e.op}({', '.join(_pair_args((e.lhs, e.rhs)))})", _ATOM
    a_ctx, b_ctx = _operand_ctx(e.lhs, e.rhs)
    both_const = isinstance(e.lhs, Const) and isinstance(e.rhs, Const)
    # two bare literals would be folded by the parser: type the left one
    lhs = _const(e.lhs, None, typed=True) if both_const else _expr(e.lhs, a_ctx)
    rhs = _expr(e.rhs, b_ctx)
    if e.op in COMPARISONS:
        prec = _CMP
        left = _paren(lhs, lhs[1] <= prec)
        right = _paren(rhs, rhs[1] <= prec)
    else:
        prec = _PREC[e.op]
        left = _paren(lhs, lhs[1] < prec)
        right = _paren(rhs, rhs[1] <= prec)
    return f"{left} {e.op} {right}", prec


def _unary(e: Unary) -> tuple[str, int]:
    if e.op == "not":
        inner = _const(e.operand, None, typed=True) if isinstance(e.operand, Const) \
            else _expr(e.operand)
        return f"not {_paren(inner, inner[1] < _NOT)}", _NOT
    if isinstance(e.operand, Const):
        # `-c` would be read as the constant -c; the parentheses keep the negation
        return f"-({_expr(e.operand)[0]})", _UNARY
    inner = _expr(e.operand)
    return f"-{_paren(inner, inner[1] < _UNARY)}", _UNARY


def _paren(item: tuple[str, int], needed: bool) -> str:
    return f"({item[0]})" if needed else item[0]
