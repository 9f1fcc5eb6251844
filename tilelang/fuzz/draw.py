"""What the program generator draws with: choosers (a seeded generator or hypothesis),
random well-typed expressions over what a statement may read, and ragged shapes.

generate.py and indexed.py build the program families from these.
"""
from __future__ import annotations

from .program import E, leaf

FLOATS = ("float32", "float16", "bfloat16", "float64")
LOW_FLOATS = ("float16", "bfloat16", "float8_e4m3fn", "float8_e4m3", "float8_e5m2")
INTS = ("int32", "int8", "uint8", "int64")


# ----------------------------------------------------------------------------- choosers

class Chooser:
    def int(self, lo: int, hi: int) -> int:          # inclusive
        raise NotImplementedError

    def choice(self, items):
        items = list(items)
        return items[self.int(0, len(items) - 1)]

    def bool(self, p: float = 0.5) -> bool:
        return self.int(0, 999) < int(p * 1000)


class RandomChooser(Chooser):
    def __init__(self, seed: int):
        import numpy as np
        self.rng = np.random.default_rng(seed)

    def int(self, lo, hi):
        return int(self.rng.integers(lo, hi + 1))


class DrawChooser(Chooser):
    """Choices drawn by hypothesis (`st.data()`), so that it can shrink them."""

    def __init__(self, draw):
        from hypothesis import strategies as st
        self.draw, self.st = draw, st

    def int(self, lo, hi):
        return self.draw(self.st.integers(lo, hi))


# ----------------------------------------------------------------------------- expressions

class Scope:
    """What an expression may read: (text, dtype, exact) leaves; `exact` leaves hold
    input values (copied, never computed), so comparing them is safe to branch on."""

    def __init__(self, leaves, index_vars=()):
        self.leaves = list(leaves)
        self.index_vars = list(index_vars)


def is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


def const(c: Chooser, dtype: str) -> E:
    if is_float(dtype):
        v = c.choice([0.5, 1.0, 2.0, 0.25, 1.5, -1.0, -0.75, 3.0, 0.125])
        text = repr(v)
    elif dtype == "uint8":
        text = str(c.int(0, 9))
    else:
        text = str(c.int(-9, 9))
    if dtype in ("float32", "int32"):
        return leaf(text, dtype)
    return leaf(f"T.{dtype}({text})", dtype)


def expr(c: Chooser, scope: Scope, dtype: str, depth: int) -> E:
    if depth <= 0 or c.bool(0.25):
        return _leaf(c, scope, dtype)
    if is_float(dtype):
        return _float_expr(c, scope, dtype, depth)
    return _int_expr(c, scope, dtype, depth)


def _leaf(c, scope, dtype) -> E:
    pick = c.int(0, 9)
    same = [lf for lf in scope.leaves if lf[1] == dtype]
    kind_ok = [lf for lf in scope.leaves if is_float(lf[1]) == is_float(dtype)]
    if pick < 5 and same:
        text, dt, _ = c.choice(same)
        return leaf(text, dt)
    if pick < 7 and kind_ok:
        text, dt, _ = c.choice(kind_ok)
        return E("cast", "", dtype, (leaf(text, dt),))
    if pick < 8 and scope.index_vars:
        v = c.choice(scope.index_vars)
        return leaf(v, "int32") if dtype == "int32" else E("cast", "", dtype, (leaf(v, "int32"),))
    return const(c, dtype)


def _float_expr(c, scope, dtype, depth) -> E:
    k = c.int(0, 13)
    sub = lambda: expr(c, scope, dtype, depth - 1)  # noqa: E731
    if k <= 3:
        return E("bin", c.choice(["+", "-", "*", "+"]), dtype, (sub(), sub()))
    if k == 4:      # a safe division: the divisor is at least 1 in magnitude
        den = E("bin", "+", dtype, (E("call", "abs", dtype, (sub(),)), const1(dtype)))
        return E("bin", "/", dtype, (sub(), den))
    if k == 5:
        return E("bin", c.choice(["min", "max"]), dtype, (sub(), sub()))
    if k == 6:
        return E("un", "-", dtype, (sub(),))
    if k == 7:
        return E("call", "abs", dtype, (sub(),))
    if k == 8:      # bounded arguments keep exp / exp2 far from overflow in float16
        fn = c.choice(["exp", "exp2"])
        return E("call", fn, dtype, (E("bin", "min", dtype, (sub(), const1(dtype, "2.0"))),))
    if k == 9:
        return E("call", c.choice(["tanh", "sigmoid"]), dtype, (sub(),))
    if k == 10:
        fn = c.choice(["sqrt", "log", "rsqrt"])
        arg = E("bin", "+", dtype, (E("call", "abs", dtype, (sub(),)), const1(dtype)))
        return E("call", fn, dtype, (arg,))
    if k == 11:
        return E("select", "", dtype, (cond(c, scope), sub(), sub()))
    if k == 12:     # through another float dtype
        other = c.choice([d for d in FLOATS + ("float8_e4m3fn",) if d != dtype])
        return E("cast", "", dtype, (expr(c, scope, other, depth - 1),))
    other = c.choice(["int32", "int8"])
    return E("cast", "", dtype, (expr(c, scope, other, depth - 1),))


def const1(dtype: str, text: str = "1.0") -> E:
    return leaf(text, dtype) if dtype == "float32" else leaf(f"T.{dtype}({text})", dtype)


def _int_expr(c, scope, dtype, depth) -> E:
    k = c.int(0, 9)
    sub = lambda: expr(c, scope, dtype, depth - 1)  # noqa: E731
    if k <= 3:
        return E("bin", c.choice(["+", "-", "*"]), dtype, (sub(), sub()))
    if k == 4:      # floor division and modulo, by zero too (defined: 0)
        return E("bin", c.choice(["//", "%"]), dtype, (sub(), sub()))
    if k == 5:
        return E("bin", c.choice(["min", "max"]), dtype, (sub(), sub()))
    if k == 6 and dtype != "uint8":
        return E("call", "abs", dtype, (sub(),))
    if k == 7:
        return E("select", "", dtype, (cond(c, scope), sub(), sub()))
    if k == 8:
        other = c.choice([d for d in INTS if d != dtype])
        return E("cast", "", dtype, (expr(c, scope, other, depth - 1),))
    return sub()


def cond(c: Chooser, scope: Scope) -> E:
    """A condition that two correct implementations evaluate alike: over loop indices,
    or over exact input values."""
    exact = [lf for lf in scope.leaves if lf[2]]
    if scope.index_vars and (not exact or c.bool(0.6)):
        a = leaf(c.choice(scope.index_vars), "int32")
        b = leaf(c.choice(scope.index_vars), "int32") if c.bool() else \
            leaf(str(c.int(0, 8)), "int32")
        if c.bool(0.3):
            a = E("bin", "%", "int32", (a, leaf(str(c.int(2, 3)), "int32")))
            b = leaf("0", "int32")
        return E("cmp", c.choice(["<", "<=", "==", "!=", ">"]), "bool", (a, b))
    text, dt, _ = c.choice(exact)
    zero = leaf("0.0" if is_float(dt) else "0", dt) if dt in ("float32", "int32") else \
        leaf(f"T.{dt}(0)" if not is_float(dt) else f"T.{dt}(0.0)", dt)
    return E("cmp", c.choice(["<", ">", ">=", "!="]), "bool", (leaf(text, dt), zero))


# ----------------------------------------------------------------------------- shapes

def dim(c: Chooser, name: str, block: int, sizes: list, consts: list, dynamic=True):
    """A ragged extent for a tensor dim tiled by `block`: a T.dynamic size (sometimes 0:
    an empty grid) or a constant."""
    k = c.int(0, 9)
    if k == 0:
        value = c.int(1, block - 1) if block > 1 else 1
    elif k == 1:
        value = block
    elif k <= 4:
        value = block + c.int(1, block)
    elif k <= 6:
        value = 2 * block + c.int(0, max(0, block - 1))
    elif k == 7 and dynamic:
        value = 0
    else:
        value = c.int(1, 3 * block)
    if value == 0 or (dynamic and c.bool(0.8)):
        sizes.append((name, value))
        return name
    return value


def block(c: Chooser, hi: int = 16) -> int:
    """A block extent: mostly small, sometimes past a register tile (tails)."""
    if hi > 16 and c.bool(0.25):
        return c.choice([b for b in (17, 20, 24, 31, 32) if b <= hi])
    return c.choice([b for b in (1, 2, 3, 4, 5, 8, 12, 16) if b <= hi])


def offset(c: Chooser, block: int) -> str:
    """An offset added to a tile's start corner: mostly none, sometimes a step or a
    whole block back (the tile then hangs over the tensor's start: reads give 0)."""
    k = c.int(0, 9)
    if k <= 6:
        return ""
    return c.choice([" + 1", " - 1", f" - {block}", " + 2"])


def grid_text(extent, block: int) -> str:
    return f"T.ceildiv({extent}, {block})"


def identity(kind: str, dtype: str) -> str:
    if kind == "sum":
        return "0"
    return extreme(kind, dtype)


def extreme(kind: str, dtype: str) -> str:
    if kind in ("sum", "abssum", "absmax"):
        return "0"
    if is_float(dtype):
        return f'{"-" if kind == "max" else ""}T.infinity("{dtype}")'
    bits = {"int8": 8, "int32": 32, "int64": 64, "uint8": 8}[dtype]
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return str(lo if kind == "max" else hi)

