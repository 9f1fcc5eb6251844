"""Scalar expressions -> LLVM IR.

Values live in their dtype's compute type (types.py). Integer division and modulo are
floor-based (Python semantics) and never trap: a zero divisor gives 0 like numpy.
`Select` and `and`/`or` evaluate an arm that reads memory only when it is chosen.
"""
from __future__ import annotations

import contextvars

from llvmlite import ir

from ... import dtypes
from ...diagnostics import codes_codegen as codes
from ...ir.nodes import (Binary, BitCast, Buffer, Call, Cast, Const, Load, Select, Unary, Var,
                         COMPARISONS, RANK_QUERIES)
from ...ir.visitor import walk
from . import convert, intrinsics
from .context import FuncContext, internal, user_error
from .types import I1, I64, constant, is_unsigned, storage_type

_FLOAT_FLAGS = ("contract",)   # lets LLVM fuse a*b+c into an FMA
# fast math (TileLang's TL_ENABLE_FAST_MATH): reassociation, reciprocals, approximate
# functions, no signed zeros; infinities and NaN keep their meaning (-inf starts maxima)
_FAST_FLAGS = ("contract", "reassoc", "arcp", "afn", "nsz")
FAST_MATH = contextvars.ContextVar("tilelang_fast_math", default=False)


def common_dtype(a: str, b: str) -> str:
    """The dtype two operands of a comparison meet in when the IR left them mixed:
    the wider float if either is a float, else the wider integer (signed on a tie)."""
    if a == b:
        return a
    if dtypes.is_float(a) or dtypes.is_float(b):
        return "float64" if "float64" in (a, b) else "float32"
    if dtypes.bits(a) != dtypes.bits(b):
        return a if dtypes.bits(a) > dtypes.bits(b) else b
    return a if dtypes.is_signed(a) and a != "bool" else b


class ExprEmitter:
    def __init__(self, ctx: FuncContext):
        self.ctx = ctx
        self._lazy_cache: dict[int, tuple[object, bool]] = {}

    @property
    def b(self) -> ir.IRBuilder:
        return self.ctx.builder

    # ------------------------------------------------------------------ dispatch

    def expr(self, e) -> ir.Value:
        method = getattr(self, "_" + type(e).__name__, None)
        if method is None:
            raise user_error(codes.UNSUPPORTED_NODE,
                             f"{type(e).__name__} cannot be compiled to CPU code", e.span)
        return method(e)

    def expr_as(self, e, dtype: str) -> ir.Value:
        """`e` converted to `dtype` (tolerates operands the type checker left mixed)."""
        return convert.cast(self.b, self.expr(e), e.dtype, dtype)

    def _Const(self, e: Const) -> ir.Value:
        return constant(e.value, e.dtype)

    def _Var(self, e: Var) -> ir.Value:
        value = self.ctx.env.get(e)
        if value is None:
            raise internal(f"variable {e.name!r} ({e.dtype}) used before it is bound")
        return value

    def _Cast(self, e: Cast) -> ir.Value:
        return convert.cast(self.b, self.expr(e.value), e.value.dtype, e.dtype)

    def _BitCast(self, e: BitCast) -> ir.Value:
        """The value's bits in memory form, read as the other dtype (an LLVM bitcast)."""
        raw = convert.to_storage(self.b, e.value.dtype, self.expr(e.value))
        if raw.type != storage_type(e.dtype):
            raw = self.b.bitcast(raw, storage_type(e.dtype))
        return convert.from_storage(self.b, e.dtype, raw)

    # ------------------------------------------------------------------ arithmetic

    def _Unary(self, e: Unary) -> ir.Value:
        if e.op == "not":
            v = self.expr_as(e.operand, "bool")
            return self.b.xor(v, ir.Constant(I1, 1))
        v = self.expr_as(e.operand, e.dtype)
        if dtypes.is_float(e.dtype):
            return self.b.fneg(v)
        return self.b.sub(ir.Constant(v.type, 0), v)

    def _Binary(self, e: Binary) -> ir.Value:
        if e.op in ("and", "or"):
            return self._logical(e)
        if e.op in COMPARISONS:
            dt = common_dtype(e.lhs.dtype, e.rhs.dtype)
            return self._compare(e.op, self.expr_as(e.lhs, dt), self.expr_as(e.rhs, dt), dt)
        a, c = self.expr_as(e.lhs, e.dtype), self.expr_as(e.rhs, e.dtype)
        return self.arith(e.op, a, c, e.dtype)

    def arith(self, op: str, a: ir.Value, c: ir.Value, dtype: str) -> ir.Value:
        if dtypes.is_float(dtype):
            return self._float_arith(op, a, c)
        if dtype == "bool":
            return self._bool_arith(op, a, c)
        return self._int_arith(op, a, c, is_unsigned(dtype))

    def _float_arith(self, op, a, c):
        b = self.b
        flags = _FAST_FLAGS if FAST_MATH.get() else _FLOAT_FLAGS
        if op == "+":
            return b.fadd(a, c, flags=flags)
        if op == "-":
            return b.fsub(a, c, flags=flags)
        if op == "*":
            return b.fmul(a, c, flags=flags)
        if op == "/":
            return b.fdiv(a, c, flags=flags if FAST_MATH.get() else ())
        if op == "//":
            return self._float_floordiv(a, c)
        if op == "%":
            return self._float_mod(a, c)
        if op in ("min", "max"):
            name = "llvm.minnum" if op == "min" else "llvm.maxnum"
            return intrinsics.call_float(b, name, [a, c])
        raise internal(f"unknown float operator {op!r}")

    def _float_mod_parts(self, a, c):
        """(Python's a % c, whether the C remainder was moved) -- numpy's npy_divmod."""
        b = self.b
        r = b.frem(a, c)
        zero = ir.Constant(a.type, 0.0)
        moved = b.and_(b.fcmp_ordered("!=", r, zero),
                       b.xor(b.fcmp_ordered("<", r, zero), b.fcmp_ordered("<", c, zero)))
        mod = b.select(moved, b.fadd(r, c), r)
        # an exact zero takes the divisor's sign, as in Python
        signed_zero = intrinsics.call_float(b, "llvm.copysign", [zero, c])
        mod = b.select(b.fcmp_ordered("==", r, zero), signed_zero, mod)
        return r, moved, mod

    def _float_mod(self, a, c):
        return self._float_mod_parts(a, c)[2]

    def _float_floordiv(self, a, c):
        """Python's a // c for floats: (a - fmod(a, c)) / c, stepped down when the
        remainder moved, then rounded to the nearest integer (numpy's npy_divmod), which
        is not always floor(a / c) (1 // 0.1 == 9)."""
        b = self.b
        r, moved, _ = self._float_mod_parts(a, c)
        div = b.fdiv(b.fsub(a, r), c)
        div = b.select(moved, b.fsub(div, ir.Constant(a.type, 1.0)), div)
        fl = intrinsics.unary_float(b, "floor", div)
        up = b.fcmp_ordered(">", b.fsub(div, fl), ir.Constant(a.type, 0.5))
        fl = b.select(up, b.fadd(fl, ir.Constant(a.type, 1.0)), fl)
        # div == 0 keeps the sign of a / c; a zero divisor gives a / c (inf or nan)
        q = b.fdiv(a, c)
        fl = b.select(b.fcmp_ordered("==", div, ir.Constant(a.type, 0.0)),
                      intrinsics.call_float(b, "llvm.copysign", [ir.Constant(a.type, 0.0), q]),
                      fl)
        return b.select(b.fcmp_ordered("==", c, ir.Constant(a.type, 0.0)), q, fl)

    def _bool_arith(self, op, a, c):
        b = self.b
        if op in ("+", "max"):
            return b.or_(a, c)
        if op in ("*", "min"):
            return b.and_(a, c)
        if op == "-":
            return b.xor(a, c)
        raise user_error(codes.UNSUPPORTED_DTYPE_OP, f"operator {op!r} on bool values")

    def _int_arith(self, op, a, c, unsigned):
        b = self.b
        if op == "+":
            return b.add(a, c)
        if op == "-":
            return b.sub(a, c)
        if op == "*":
            return b.mul(a, c)
        if op in ("//", "/"):
            return self.floordiv(a, c, unsigned)
        if op == "%":
            return self.floormod(a, c, unsigned)
        if op in ("min", "max"):
            cmp = b.icmp_unsigned if unsigned else b.icmp_signed
            return b.select(cmp("<" if op == "min" else ">", a, c), a, c)
        raise internal(f"unknown integer operator {op!r}")

    def _safe_divisor(self, c):
        """The divisor with 0 (and, for signed division, -1) replaced by 1, so the
        division instruction cannot trap; callers patch those results."""
        b = self.b
        if isinstance(c, ir.Constant) and c.constant not in (0, -1):
            return c, None, None
        one = ir.Constant(c.type, 1)
        is_zero = b.icmp_signed("==", c, ir.Constant(c.type, 0))
        is_m1 = b.icmp_signed("==", c, ir.Constant(c.type, -1))
        return b.select(b.or_(is_zero, is_m1), one, c), is_zero, is_m1

    def floordiv(self, a, c, unsigned=False):
        b = self.b
        if unsigned:
            safe = b.select(b.icmp_unsigned("==", c, ir.Constant(c.type, 0)),
                            ir.Constant(c.type, 1), c)
            q = b.udiv(a, safe)
            return b.select(b.icmp_unsigned("==", c, ir.Constant(c.type, 0)),
                            ir.Constant(c.type, 0), q)
        safe, is_zero, is_m1 = self._safe_divisor(c)
        q, r = b.sdiv(a, safe), b.srem(a, safe)
        # round toward -inf: step down when the remainder's sign differs from c's
        adjust = b.and_(b.icmp_signed("!=", r, ir.Constant(r.type, 0)),
                        b.icmp_signed("<", b.xor(r, c), ir.Constant(r.type, 0)))
        q = b.sub(q, b.zext(adjust, q.type))
        if is_zero is None:
            return q
        q = b.select(is_m1, b.sub(ir.Constant(a.type, 0), a), q)
        return b.select(is_zero, ir.Constant(a.type, 0), q)

    def floormod(self, a, c, unsigned=False):
        b = self.b
        if unsigned:
            zero = b.icmp_unsigned("==", c, ir.Constant(c.type, 0))
            r = b.urem(a, b.select(zero, ir.Constant(c.type, 1), c))
            return b.select(zero, ir.Constant(c.type, 0), r)
        safe, is_zero, is_m1 = self._safe_divisor(c)
        r = b.srem(a, safe)
        adjust = b.and_(b.icmp_signed("!=", r, ir.Constant(r.type, 0)),
                        b.icmp_signed("<", b.xor(r, c), ir.Constant(r.type, 0)))
        r = b.select(adjust, b.add(r, c), r)
        if is_zero is None:
            return r
        return b.select(b.or_(is_zero, is_m1), ir.Constant(a.type, 0), r)

    def _compare(self, op, a, c, dtype):
        if dtypes.is_float(dtype):
            if op == "!=":
                return self.b.fcmp_unordered("!=", a, c)   # NaN != x is true
            return self.b.fcmp_ordered(op, a, c)      # false when either is NaN
        if is_unsigned(dtype):
            return self.b.icmp_unsigned(op, a, c)
        return self.b.icmp_signed(op, a, c)

    def _logical(self, e: Binary) -> ir.Value:
        lhs = self.expr_as(e.lhs, "bool")
        if not self.reads_memory(e.rhs):
            rhs = self.expr_as(e.rhs, "bool")
            return self.b.and_(lhs, rhs) if e.op == "and" else self.b.or_(lhs, rhs)
        # short-circuit: `i < n and A[i] > 0` must not read A[i] when i >= n
        short = ir.Constant(I1, 0 if e.op == "and" else 1)
        if e.op == "and":
            return self._branchy(lhs, lambda: self.expr_as(e.rhs, "bool"), lambda: short)
        return self._branchy(lhs, lambda: short, lambda: self.expr_as(e.rhs, "bool"))

    # ------------------------------------------------------------------ select

    def reads_memory(self, e) -> bool:
        """Whether evaluating `e` reads a buffer (so it must not run speculatively)."""
        hit = self._lazy_cache.get(id(e))
        if hit is None or hit[0] is not e:
            hit = (e, any(isinstance(n, Load) for n in walk(e)))
            self._lazy_cache[id(e)] = hit
        return hit[1]

    def _Select(self, e: Select) -> ir.Value:
        cond = self.expr_as(e.cond, "bool")
        if self.reads_memory(e.true_value) or self.reads_memory(e.false_value):
            return self._branchy(cond, lambda: self.expr_as(e.true_value, e.dtype),
                                 lambda: self.expr_as(e.false_value, e.dtype))
        t = self.expr_as(e.true_value, e.dtype)
        f = self.expr_as(e.false_value, e.dtype)
        return self.b.select(cond, t, f)

    def _branchy(self, cond, then_fn, else_fn) -> ir.Value:
        """cond ? then_fn() : else_fn(), evaluating only the chosen arm (branch + phi)."""
        ctx, b = self.ctx, self.b
        then_bb, else_bb = ctx.new_block("sel.then"), ctx.new_block("sel.else")
        merge_bb = ctx.new_block("sel.end")
        b.cbranch(cond, then_bb, else_bb)
        b.position_at_end(then_bb)
        t = then_fn()
        t_end = b.block
        b.branch(merge_bb)
        b.position_at_end(else_bb)
        f = else_fn()
        f_end = b.block
        b.branch(merge_bb)
        b.position_at_end(merge_bb)
        phi = b.phi(t.type)
        phi.add_incoming(t, t_end)
        phi.add_incoming(f, f_end)
        return phi

    # ------------------------------------------------------------------ calls

    def _Call(self, e: Call) -> ir.Value:
        if e.name in RANK_QUERIES:
            return self.rank_query(e.name)          # ranks.py: read from the rank table
        args = [self.expr_as(a, e.dtype) for a in e.args]
        if e.name == "ceildiv" and dtypes.is_int(e.dtype):
            return self._int_ceildiv(args[0], args[1], is_unsigned(e.dtype))
        return intrinsics.emit(self.b, e, args)

    def _int_ceildiv(self, a, c, unsigned):
        b = self.b
        if unsigned:
            return self.floordiv(b.add(a, b.sub(c, ir.Constant(c.type, 1))), c, True)
        # ceil(a / c) == -((-a) // c), exact for every sign combination
        neg = self.floordiv(b.sub(ir.Constant(a.type, 0), a), c)
        return b.sub(ir.Constant(a.type, 0), neg)

    # ------------------------------------------------------------------ memory

    def index64(self, e) -> ir.Value:
        """An index expression evaluated in int64: +, -, * are widened at the leaves, so
        a linear address never wraps in 32 bits and stays affine for the vectoriser."""
        b = self.b
        if isinstance(e, Binary) and e.op in ("+", "-", "*") and dtypes.is_int(e.dtype) \
                and not is_unsigned(e.dtype):
            x, y = self.index64(e.lhs), self.index64(e.rhs)
            op = {"+": b.add, "-": b.sub, "*": b.mul}[e.op]
            return op(x, y, flags=("nsw",))
        if isinstance(e, Const):
            return ir.Constant(I64, int(e.value))
        v = self.expr(e)
        if v.type == I64:
            return v
        if v.type.width > 64:
            raise internal("index wider than 64 bits")
        return b.zext(v, I64) if is_unsigned(e.dtype) else b.sext(v, I64)

    def address(self, buf: Buffer, indices, inbounds: bool = True) -> tuple[ir.Value, int]:
        """Pointer to buf[indices] (row-major, int64 linear index, GEP from the base) and
        the alignment that can be claimed for it. `inbounds=False` for an address that
        may lie outside the buffer (a prefetch's), which an inbounds GEP makes poison."""
        slot = self.ctx.buffers.get(buf.name)
        if slot is None:
            raise internal(f"buffer {buf.name!r} used before it is allocated")
        if len(indices) != len(slot.dims):
            raise internal(f"buffer {buf.name!r} indexed with {len(indices)} indices, "
                           f"has {len(slot.dims)} dims")
        elem = storage_type(buf.dtype)
        linear = None
        for dim, idx in zip(slot.dims, indices):
            i = self.index64(idx)
            linear = i if linear is None else self.b.add(self.b.mul(linear, dim, flags=("nsw",)),
                                                         i, flags=("nsw",))
        if linear is None:
            return slot.base, slot.align
        ptr = self.b.gep(slot.base, [linear], inbounds=inbounds, source_etype=elem)
        return ptr, min(slot.align, dtypes.nbytes(buf.dtype))

    def _Load(self, e: Load) -> ir.Value:
        ptr, align = self.address(e.buffer, e.indices)
        raw = self.b.load(ptr, typ=storage_type(e.buffer.dtype), align=align)
        value = convert.from_storage(self.b, e.buffer.dtype, raw)
        return convert.cast(self.b, value, e.buffer.dtype, e.dtype)

