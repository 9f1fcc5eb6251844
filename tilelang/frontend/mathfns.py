"""TileLang's further math functions, written with the IR's own operations so that
every target computes them (each to within a few float ulps of the exact function):

* `T.exp10(x)` = exp2(x * log2 10), `T.log10(x)` = log2(x) * log10 2,
  `T.sinh` / `T.cosh` from exp(x) and exp(-x), `T.fmod(x, y)` = x - trunc(x / y) * y,
  `T.atan` by range reduction and its series (`_atan`), `T.isfinite / isnan / isinf`
  by comparisons;
* `T.nearbyint(x)` and `T.round(x, "ties-to-even")`: T.round (ties to even);
  `T.round(x, "ties-away-from-zero")`: trunc(x), moved one away from zero when the
  fraction x - trunc(x) (exact) is at least one half;
* the fast-math spellings `T.__exp`, `T.__exp10`, `T.__log`, `T.__log2`, `T.__log10`,
  `T.__sin`, `T.__cos`, `T.__tan`: the functions themselves (a CUDA approximation has
  nothing faster to map to here);
* `T.ieee_add / sub / mul / fdiv / fmaf / frcp / fsqrt(..., rounding_mode="rn")` and
  `T.ieee_frsqrt(x)`: the operation rounded to nearest, as every operation here is; the
  directed modes ("rz", "ru", "rd") are a diagnostic.
"""
from __future__ import annotations

import math

from ..diagnostics import codes_types as CT
from ..ir.nodes import Binary, Call, Const, Let, Select, Var
from .callargs import REQUIRED, Sig, bind
from .errors import fail
from .values import Lit, Str, as_expr, describe, kind_of, lit_to, unify

FAST = ("__exp", "__exp10", "__log", "__log2", "__log10", "__sin", "__cos", "__tan")
DERIVED = ("exp10", "log10", "sinh", "cosh", "atan", "nearbyint", "fmod", "isfinite", "isnan",
           "isinf")
IEEE = ("ieee_add", "ieee_sub", "ieee_mul", "ieee_fdiv", "ieee_fmaf", "ieee_frcp",
        "ieee_fsqrt", "ieee_frsqrt")
NAMES = FAST + DERIVED + IEEE
ROUNDING_MODES = ("rn", "rz", "ru", "rd")
_IEEE_ARITY = {"ieee_add": 2, "ieee_sub": 2, "ieee_mul": 2, "ieee_fdiv": 2, "ieee_fmaf": 3,
               "ieee_frcp": 1, "ieee_fsqrt": 1, "ieee_frsqrt": 1}


def _float(b, tree, name):
    v = b.eval(tree)
    e = lit_to(v, "float32") if isinstance(v, Lit) else as_expr(v)
    if kind_of(e.dtype) != "float":
        raise fail(CT.BAD_OPERAND, f"T.{name} needs a float argument, found {e.dtype}",
                   e.span, e.dtype, help=f'convert first: T.{name}(T.cast(x, "float32"))')
    return e


def _c(value, like):
    return Const(float(value), like.dtype, span=like.span)


def _bin(op, x, y):
    return Binary(op, x, y, x.dtype, span=x.span)


def _call(name, *args):
    return Call(name, tuple(args), args[0].dtype, span=args[0].span)


def unary(b, name, tree, span):
    """The one-argument functions of FAST and DERIVED."""
    if name == "fmod":
        return _fmod(b, tree, span)
    args = bind(Sig(f"T.{name}", (("x", REQUIRED),)), tree, b.spans)
    x = _float(b, args["x"], name)
    base = name.lstrip("_")
    if base in ("exp", "log", "log2", "sin", "cos", "tan"):
        return Call(base, (x,), x.dtype, span=span)
    if base == "exp10":
        return _call("exp2", _bin("*", x, _c(math.log2(10), x)))
    if base == "log10":
        return _bin("*", _call("log2", x), _c(math.log10(2), x))
    if base in ("isfinite", "isnan", "isinf"):
        return _classify(base, x)
    if base == "atan":
        return _atan(b, x)
    if base == "nearbyint":
        return Call("round", (x,), x.dtype, span=span)
    up, down = _call("exp", x), _call("exp", Binary("-", _c(0, x), x, x.dtype, span=span))
    return _bin("*", _bin("-" if base == "sinh" else "+", up, down), _c(0.5, x))


def _named(b, e):
    """`e` bound to a fresh name by a Let emitted before the statement (each use of the
    name is one value, where an expression tree would repeat the computation)."""
    if not hasattr(b, "pending"):
        return e
    var = Var(b.fresh("t"), e.dtype, span=e.span)
    b.pending.append(Let(var, e, span=e.span))
    return var


def _atan(b, x):
    """atan by range reduction: |x| > 1 through pi/2 - atan(1/|x|), t > tan(pi/8) through
    pi/4 + atan((t - 1) / (t + 1)); then |u| <= tan(pi/8) = 0.414, where the odd Taylor
    series to u^21 is within 3e-10. Evaluated in float32 at least (float64 for float64)."""
    wide = "float64" if x.dtype == "float64" else "float32"
    from ..ir.nodes import Cast
    v = x if x.dtype == wide else Cast(x, wide, span=x.span)
    lt = lambda a, b: Binary("<", a, b, "bool", span=x.span)         # noqa: E731
    sel = lambda c, a, b: Select(c, a, b, wide, span=x.span)         # noqa: E731
    v = _named(b, v)
    a = _named(b, _call("abs", v))
    big = _named(b, lt(_c(1, v), a))
    t = _named(b, sel(big, _bin("/", _c(1, v), a), a))               # in [0, 1]
    shift = _named(b, lt(_c(math.tan(math.pi / 8), v), t))
    u = _named(b, sel(shift, _bin("/", _bin("-", t, _c(1, v)), _bin("+", t, _c(1, v))), t))
    u2 = _named(b, _bin("*", u, u))
    poly = _c(1 / 21 * (-1) ** 10, v)
    for k in range(9, -1, -1):                                        # Horner in u^2
        poly = _bin("+", _c((-1) ** k / (2 * k + 1), v), _bin("*", u2, poly))
    r = _named(b, _bin("*", u, poly))
    r = _named(b, sel(shift, _bin("+", r, _c(math.pi / 4, v)), r))
    r = _named(b, sel(big, _bin("-", _c(math.pi / 2, v), r), r))
    r = sel(lt(v, _c(0, v)), Binary("-", _c(0, v), r, wide, span=x.span), r)
    return r if x.dtype == wide else Cast(r, x.dtype, span=x.span)


def _classify(name, x):
    """T.isfinite / isnan / isinf: comparisons (a NaN is the one value unequal to
    itself; an infinity the one whose magnitude equals it)."""
    nan = Binary("!=", x, x, "bool", span=x.span)
    inf = Binary("==", _call("abs", x), _c(math.inf, x), "bool", span=x.span)
    if name == "isnan":
        return nan
    if name == "isinf":
        return inf
    finite = Binary("!=", _call("abs", x), _c(math.inf, x), "bool", span=x.span)
    return Binary("and", Binary("==", x, x, "bool", span=x.span), finite, "bool", span=x.span)


def _fmod(b, tree, span):
    args = bind(Sig("T.fmod", (("x", REQUIRED), ("y", REQUIRED))), tree, b.spans)
    x, y = unify(b.eval(args["x"]), b.eval(args["y"]), span)
    if kind_of(x.dtype) != "float":
        raise fail(CT.BAD_OPERAND, f"T.fmod needs float arguments, found {x.dtype}", span,
                   x.dtype)
    return _bin("-", x, _bin("*", _call("trunc", _bin("/", x, y)), y))


def round_mode(b, tree, span):
    """`T.round(x)` / `T.round(x, "ties-to-even" | "ties-away-from-zero")`."""
    args = bind(Sig("T.round", (("x", REQUIRED), ("rounding_mode", None))), tree, b.spans)
    x = _float(b, args["x"], "round")
    mode = None if args["rounding_mode"] is None else b.eval(args["rounding_mode"])
    if mode is None or isinstance(mode, Str) and mode.value == "ties-to-even":
        return Call("round", (x,), x.dtype, span=span)
    if not (isinstance(mode, Str) and mode.value == "ties-away-from-zero"):
        raise fail(CT.BAD_OPERAND, "the rounding mode of T.round is \"ties-to-even\" or "
                   "\"ties-away-from-zero\"", b.spans.of(args["rounding_mode"]),
                   describe(mode) if not isinstance(mode, Str) else "unknown mode")
    t = _call("trunc", x)
    away = Select(Binary("<", x, _c(0, x), "bool", span=span), _c(-1, x), _c(1, x), x.dtype,
                  span=span)
    half = Binary(">=", _call("abs", _bin("-", x, t)), _c(0.5, x), "bool", span=span)
    return Select(half, _bin("+", t, away), t, x.dtype, span=span)


def ieee(b, name, tree, span):
    n = _IEEE_ARITY[name]
    params = tuple((p, REQUIRED) for p in "abc"[:n])
    if name != "ieee_frsqrt":
        params += (("rounding_mode", "rn"),)
    args = bind(Sig(f"T.{name}", params), tree, b.spans)
    mode = args.get("rounding_mode", "rn")
    if mode != "rn":
        m = b.eval(mode)
        if not isinstance(m, Str) or m.value not in ROUNDING_MODES:
            raise fail(CT.BAD_OPERAND, f"invalid rounding mode of T.{name}: "
                       f"{m.value if isinstance(m, Str) else describe(m)}",
                       b.spans.of(mode), "not a rounding mode",
                       help="one of " + ", ".join(f'"{r}"' for r in ROUNDING_MODES))
        if m.value != "rn":
            raise fail(CT.BAD_OPERAND, f"T.{name} with rounding mode \"{m.value}\": only "
                       "\"rn\" (round to nearest even) is supported here", b.spans.of(mode),
                       "directed rounding", help="every operation here rounds to nearest: "
                       "drop the mode, or write the plain operation")
    xs = [_float(b, args[p], name) for p in "abc"[:n]]
    if n > 1:
        first, *rest = xs
        for k, r in enumerate(rest):
            first, rest[k] = unify(first, r, span)
        xs = [first] + rest
    x = xs[0]
    if name == "ieee_frcp":
        return _bin("/", _c(1, x), x)
    if name in ("ieee_fsqrt", "ieee_frsqrt"):
        return _call("sqrt" if name == "ieee_fsqrt" else "rsqrt", x)
    if name == "ieee_fmaf":
        return _bin("+", _bin("*", xs[0], xs[1]), xs[2])
    return _bin({"ieee_add": "+", "ieee_sub": "-", "ieee_mul": "*", "ieee_fdiv": "/"}[name],
                xs[0], xs[1])


ANY_ALL_LIMIT = 64          # elements of an any_of / all_of region (an unrolled chain)


def any_all(b, name, tree, span):
    """`T.any_of(mask[by, bx, k, :])` / `T.all_of(...)`: whether any / every element of
    the region is true (nonzero), as the chain of its elements' loads."""
    import itertools
    from ..ir.nodes import Load
    from .regions import region_arg
    from .values import const_ints
    args = bind(Sig(f"T.{name}", (("region", REQUIRED),)), tree, b.spans)
    spec = region_arg(b, args["region"], f"the region of T.{name}")
    buf = spec.buffer
    sizes = const_ints(spec.extents or (1,) * len(spec.starts))
    count = math.prod(sizes) if None not in sizes else None
    if count is None or count > ANY_ALL_LIMIT:
        raise fail(CT.BAD_OPERAND, f"T.{name} takes a region of constant extents, at most "
                   f"{ANY_ALL_LIMIT} elements", spec.span, "too large or not constant")
    out = None
    for offs in itertools.product(*(range(n) for n in sizes)):
        idx = tuple(st if k == 0 else Binary("+", st, Const(k, st.dtype, span=span), st.dtype,
                                             span=span) for st, k in zip(spec.starts, offs))
        e = Load(buf, idx, buf.dtype, span=span)
        if buf.dtype != "bool":
            e = Binary("!=", e, Const(0, buf.dtype, span=span), "bool", span=span)
        out = e if out is None else Binary("or" if name == "any_of" else "and", out, e,
                                           "bool", span=span)
    return out


HANDLERS = {n: unary for n in FAST + DERIVED}
HANDLERS.update(any_of=any_all, all_of=any_all)
HANDLERS.update({n: ieee for n in IEEE})
HANDLERS["round"] = lambda b, name, tree, span: round_mode(b, tree, span)

__all__ = ["HANDLERS", "NAMES"]
