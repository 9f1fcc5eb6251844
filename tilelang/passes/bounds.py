"""A small interval analysis over integer index expressions.

Bounds are linear forms `c + sum(a_i * atom_i)` whose atoms are opaque expressions
(symbolic sizes, loads, anything the analysis does not model). Symbolic sizes are known
to be non-negative; any other atom has an unknown sign. That is enough to prove the
common cases: `i < N` when `i` runs over `range(N)`, and `by * 128 + i < 1024` once the
grid is constant. Whatever cannot be proved stays guarded, so imprecision only costs
speed, never correctness.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import dtypes
from ..ir import Expr, Const, Var, Binary, Cast, Load, walk


@dataclass(frozen=True)
class Lin:
    """c + sum(coef * atom)."""
    c: int = 0
    terms: tuple[tuple[Expr, int], ...] = field(default=())

    @staticmethod
    def atom(e: Expr) -> "Lin":
        return Lin(0, ((e, 1),))

    def _combine(self, other: "Lin", sign: int) -> "Lin":
        coefs = dict(self.terms)
        for atom, coef in other.terms:
            coefs[atom] = coefs.get(atom, 0) + sign * coef
        return Lin(self.c + sign * other.c,
                   tuple((a, k) for a, k in coefs.items() if k != 0))

    def __add__(self, other: "Lin") -> "Lin":
        return self._combine(other, 1)

    def __sub__(self, other: "Lin") -> "Lin":
        return self._combine(other, -1)

    def scale(self, k: int) -> "Lin":
        if k == 0:
            return Lin(0)
        return Lin(self.c * k, tuple((a, coef * k) for a, coef in self.terms))

    def is_const(self) -> bool:
        return not self.terms


Interval = tuple  # (lo: Lin | None, hi: Lin | None)
UNKNOWN: Interval = (None, None)


class Bounds:
    """Interval queries under an environment var name -> Interval. `nonneg` names the
    atoms (symbolic sizes) known to be >= 0."""

    def __init__(self, nonneg: set[str]):
        self.nonneg_atoms = nonneg

    # ------------------------------------------------------------------ proofs

    def _atoms_nonneg(self, lin: Lin, sign: int) -> bool:
        return all(isinstance(a, Var) and a.name in self.nonneg_atoms and sign * k >= 0
                   for a, k in lin.terms)

    def nonneg(self, lin: Lin | None) -> bool:
        """lin >= 0 for every value of its atoms."""
        return lin is not None and lin.c >= 0 and self._atoms_nonneg(lin, 1)

    def negative(self, lin: Lin | None) -> bool:
        """lin < 0 for every value of its atoms."""
        return lin is not None and lin.c < 0 and self._atoms_nonneg(lin, -1)

    def le(self, a: Lin | None, b: Lin | None) -> bool:
        return a is not None and b is not None and self.nonneg(b - a)

    def in_bounds(self, env: dict, index: Expr, size: Expr) -> tuple[bool, bool]:
        """(index >= 0 is proved, index < size is proved)."""
        lo, hi = self.interval(env, index)
        size_lo, _ = self.interval(env, size)
        upper = hi is not None and size_lo is not None and self.negative(hi - size_lo)
        return self.nonneg(lo), upper

    # ------------------------------------------------------------------ intervals

    def interval(self, env: dict, e: Expr) -> Interval:
        if not dtypes.is_int(e.dtype):
            return UNKNOWN
        if isinstance(e, Const):
            return Lin(e.value), Lin(e.value)
        if isinstance(e, Var):
            if e.name in env:
                return env[e.name]
            return Lin.atom(e), Lin.atom(e)
        if isinstance(e, Cast) and dtypes.is_int(e.value.dtype):
            return self.interval(env, e.value)
        if isinstance(e, Binary):
            result = self._binary(env, e)
            if result is not None:
                return result
        return Lin.atom(e), Lin.atom(e)

    def _binary(self, env: dict, e: Binary) -> Interval | None:
        a = self.interval(env, e.lhs)
        b = self.interval(env, e.rhs)
        op = e.op
        if op == "+":
            return _add(a[0], b[0]), _add(a[1], b[1])
        if op == "-":
            return _sub(a[0], b[1]), _sub(a[1], b[0])
        if op == "*":
            return self._mul(a, b)
        if op in ("//", "%"):
            c = _const_of(b)
            if c is None or c <= 0:
                return None
            return self._floordiv(a, c) if op == "//" else self._mod(a, c)
        if op == "min":
            return self._pick(a[0], b[0], low=True), self._either(a[1], b[1], low=True)
        if op == "max":
            return self._either(a[0], b[0], low=False), self._pick(a[1], b[1], low=False)
        return None

    def _mul(self, a: Interval, b: Interval) -> Interval:
        for x, y in ((a, b), (b, a)):
            k = _const_of(y)
            if k is not None:
                lo, hi = (_scale(x[0], k), _scale(x[1], k))
                return (lo, hi) if k >= 0 else (hi, lo)
        if all(v is not None and v.is_const() for v in (*a, *b)):
            products = [p.c * q.c for p in a for q in b]
            return Lin(min(products)), Lin(max(products))
        return UNKNOWN

    def _floordiv(self, a: Interval, c: int) -> Interval:
        lo, hi = a
        if lo is not None and lo.is_const():
            new_lo = Lin(lo.c // c)
        else:
            new_lo = Lin(0) if self.nonneg(lo) else None
        if hi is not None and hi.is_const():
            new_hi = Lin(hi.c // c)
        else:
            new_hi = hi if self.nonneg(hi) else None   # x // c <= x when x >= 0
        return new_lo, new_hi

    def _mod(self, a: Interval, c: int) -> Interval:
        # Floor modulo by c > 0 lies in [0, c - 1]; a value already there is unchanged.
        if self.nonneg(a[0]) and self.le(a[1], Lin(c - 1)):
            return a
        return Lin(0), Lin(c - 1)

    def _pick(self, x: Lin | None, y: Lin | None, low: bool) -> Lin | None:
        """The bound of min (low=True) / max that needs the smaller / larger of x, y."""
        if x is None or y is None:
            return None
        if x.is_const() and y.is_const():
            return Lin(min(x.c, y.c) if low else max(x.c, y.c))
        if self.le(x, y):
            return x if low else y
        if self.le(y, x):
            return y if low else x
        return None

    def _either(self, x: Lin | None, y: Lin | None, low: bool) -> Lin | None:
        """Either operand's bound bounds min's upper / max's lower end: take the tighter
        one when it is provable, else any known one."""
        if x is None or y is None:
            return x if y is None else y
        if self.le(x, y):
            return x if low else y
        if self.le(y, x):
            return y if low else x
        return x


def _add(a, b):
    return None if a is None or b is None else a + b


def _sub(a, b):
    return None if a is None or b is None else a - b


def _scale(a, k):
    return None if a is None else a.scale(k)


def _const_of(iv: Interval) -> int | None:
    lo, hi = iv
    if lo is not None and hi is not None and lo.is_const() and hi.is_const() and lo.c == hi.c:
        return lo.c
    return None


def loop_interval(bounds: Bounds, env: dict, start: Expr, extent: Expr) -> Interval:
    """The values of a loop variable running from `start` for `extent` iterations."""
    lo, s_hi = bounds.interval(env, start)
    _, e_hi = bounds.interval(env, extent)
    hi = None if s_hi is None or e_hi is None else s_hi + e_hi - Lin(1)
    return snapshot((lo, hi))


def snapshot(iv: Interval) -> Interval:
    """An interval to remember for a variable (a let, a loop variable). A bound that
    mentions a load is dropped: memory may change before the variable is used, and two
    loads of one location must not cancel out across that change."""
    return tuple(None if b is None or any(_reads_memory(a) for a, _ in b.terms) else b
                 for b in iv)


def _reads_memory(e: Expr) -> bool:
    return any(isinstance(n, Load) for n in walk(e))
