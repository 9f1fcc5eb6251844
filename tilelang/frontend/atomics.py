"""TileLang's further atomics, written with the IR's Atomic / AtomicFetch / Load / Store:

* `T.atomic_add / max / min(..., return_prev=True)` used as a value
  (`old[i] = T.atomic_add(B[i], A[i], return_prev=True)`): an AtomicFetch emitted
  before the statement, its variable the value;
* `T.atomic_addx2 / addx4(B[i, j], A[i, j])`: the 2 / 4 elements from `[i, j]` along
  the last dim (`B[i, j:j + n] += A[i, j:j + n]`), element by element; with regions it
  is the tile atomic;
* a tile atomic of a scalar (`T.atomic_add(A[0:64, 0:64], 1.0)`, `T.atomic_add(B, 1)`):
  the scalar combined into every element of the region;
* `T.atomic_load(x[i])` / `T.atomic_store(x[i], v)`: a load and a store, each checked
  for a memory order that C++ allows it (a load cannot release, a store cannot acquire).

Memory orders are not distinguished here (docs/compat.md, "Differs").
"""
from __future__ import annotations

from lark import Tree

from ..diagnostics import codes_tileops as C3
from ..ir.nodes import Atomic, AtomicFetch, Binary, Const, Load, Store, Var
from .callargs import REQUIRED, Sig, bind
from .errors import fail
from .loops import parallel_nest
from .regions import region_arg
from .values import BufRef, NoneVal, Str, const_ints, describe, span_of

LOAD_ORDERS = ("relaxed", "consume", "acquire", "seq_cst")
STORE_ORDERS = ("relaxed", "release", "seq_cst")


class AtomicExtMixin:
    # ------------------------------------------------------------------ load / store
    def _op_atomic_store(self, tree, span):
        args = bind(Sig("T.atomic_store", (("dst", REQUIRED), ("value", REQUIRED),
                                           ("memory_order", None))), tree, self.spans)
        self._memory_order(args["memory_order"], "atomic_store", STORE_ORDERS)
        buf, idx = self._element(args["dst"], "T.atomic_store")
        return Store(buf, idx, self.value_for(buf, self.eval(args["value"])), span=span)

    def atomic_load(self, tree, span):
        args = bind(Sig("T.atomic_load", (("src", REQUIRED), ("memory_order", None))), tree,
                    self.spans)
        self._memory_order(args["memory_order"], "atomic_load", LOAD_ORDERS)
        buf, idx = self._element(args["src"], "T.atomic_load")
        return Load(buf, idx, buf.dtype, span=span)

    def _memory_order(self, tree, op, allowed):
        if tree is None:
            return
        v = self.eval(tree)
        if isinstance(v, NoneVal):
            return
        if not isinstance(v, Str) or v.value not in allowed:
            shown = f'"{v.value}"' if isinstance(v, Str) else describe(v)
            raise fail(C3.BAD_ATOMIC, f"T.{op} does not support memory_order {shown}",
                       self.spans.of(tree), "not allowed here",
                       help="one of " + ", ".join(f'"{o}"' for o in allowed))

    def _element(self, tree, op):
        """(buffer, indices) of an element argument `x[i, j]`."""
        if not (isinstance(tree, Tree) and tree.data == "getitem"):
            raise fail(C3.BAD_ATOMIC, f"{op} takes a buffer element `x[i]`",
                       self.spans.of(tree), "not an element")
        base = self.eval(tree.children[0])
        if not isinstance(base, BufRef):
            raise fail(C3.BAD_ATOMIC, f"{op} needs a buffer element, found {describe(base)}",
                       span_of(base), "not a buffer")
        buf = base.buffer
        return buf, tuple(self.indices(buf, tree.children[1].children, self.spans.of(tree)))

    def bit_atomic(self, name, span):
        raise fail(C3.BAD_ATOMIC, f"`T.{name}` (a bitwise atomic) is not supported", span,
                   "not supported", help="the atomics here are T.atomic_add, "
                   "T.atomic_max and T.atomic_min (on elements or tiles)")

    # ------------------------------------------------------------------ return_prev
    def atomic_fetch_value(self, op, tree, span):
        """`T.atomic_<op>(x[i], v, return_prev=True)` as a value."""
        name = f"T.atomic_{op}"
        args = bind(Sig(name, (("dst", REQUIRED), ("value", REQUIRED), ("memory_order", None),
                               ("return_prev", False))), tree, self.spans)
        if not self.const_arg(args["return_prev"], "return_prev", bool):
            raise fail(C3.BAD_ATOMIC, f"`{name}` has a value only with return_prev=True",
                       span, "used as a value",
                       help="pass return_prev=True to get the previous value")
        if not hasattr(self, "pending"):
            raise fail(C3.BAD_ATOMIC, f"`{name}` outside a statement", span, "atomic")
        buf, idx = self._element(args["dst"], name)
        value = self.value_for(buf, self.eval(args["value"]))
        var = Var(self.fresh("prev"), buf.dtype, span=span)
        self.pending.append(AtomicFetch(var, op, buf, idx, value, span=span))
        return var

    # ------------------------------------------------------------------ x2 / x4
    def _op_atomic_addx2(self, tree, span):
        return self._atomic_addxn(2, tree, span)

    def _op_atomic_addx4(self, tree, span):
        return self._atomic_addxn(4, tree, span)

    def _atomic_addxn(self, n, tree, span):
        name = f"T.atomic_addx{n}"
        args = bind(Sig(name, (("dst", REQUIRED), ("value", REQUIRED)),
                        ignored=("memory_order", "return_prev")), tree, self.spans)
        if self._is_tile(args["value"]) or self._is_tile(args["dst"]):
            return self._atomic("add", tree, span)              # regions: the tile atomic
        dst, didx = self._element(args["dst"], name)
        src, sidx = self._element(args["value"], name)
        out = []
        for k in range(n):
            at_d = didx[:-1] + (_plus(didx[-1], k),)
            at_s = sidx[:-1] + (_plus(sidx[-1], k),)
            value = self.value_for(dst, Load(src, at_s, src.dtype, span=span))
            out.append(Atomic("add", dst, at_d, value, span=span))
        return out

    def lanes_fetch_assign(self, target, value_tree, span):
        """`Prev[0:2] = T.atomic_addx2(Dst[0:2], Val[0:2], return_prev=True)`: per lane
        an AtomicFetch and a store of its previous value; None for any other assignment."""
        if not (isinstance(value_tree, Tree) and value_tree.data == "call"):
            return None
        callee = self.eval(value_tree.children[0])
        n = {"atomic_addx2": 2, "atomic_addx4": 4}.get(getattr(callee, "name", None))
        if n is None or not self._is_tile(target):
            return None
        name = f"T.atomic_addx{n}"
        args = bind(Sig(name, (("dst", REQUIRED), ("value", REQUIRED), ("memory_order", None),
                               ("return_prev", False))), value_tree, self.spans)
        if not self.const_arg(args["return_prev"], "return_prev", bool):
            return None
        regions = [region_arg(self, t, what) for t, what in (
            (args["dst"], f"the destination of {name}"), (args["value"], f"the value of {name}"),
            (target, "the target of the assignment"))]
        for r in regions:
            sizes = const_ints(r.extents or ())
            if sizes[-1:] != [n] or any(e != 1 for e in sizes[:-1]):
                raise fail(C3.BAD_ATOMIC, f"{name} with return_prev=True takes {n} "
                           f"consecutive elements along the last dim", r.span,
                           f"not {n} elements")
        dst, src, out = regions
        stmts = []
        for k in range(n):
            at = [tuple(r.starts[:-1]) + (_plus(r.starts[-1], k),) for r in regions]
            value = self.value_for(dst.buffer, Load(src.buffer, at[1], src.buffer.dtype,
                                                    span=span))
            var = Var(self.fresh("prev"), dst.buffer.dtype, span=span)
            stmts.append(AtomicFetch(var, "add", dst.buffer, at[0], value, span=span))
            stmts.append(Store(out.buffer, at[2], self.value_for(out.buffer, var), span=span))
        return stmts

    # ------------------------------------------------------------------ tile of a scalar
    def tile_atomic_scalar(self, op, spec, value, span):
        """`T.atomic_<op>(region, scalar)`: a T.Parallel nest of element atomics."""
        value = self.value_for(spec.buffer, value)
        return parallel_nest(self, spec.extents, lambda ix: Atomic(
            op, spec.buffer, tuple(_plus(s, v) for s, v in zip(spec.starts, ix)), value,
            span=span), span)


def _plus(e, k):
    if isinstance(k, int):
        if k == 0:
            return e
        k = Const(k, e.dtype, span=e.span)
    if isinstance(e, Const) and e.value == 0:
        return k
    return Binary("+", e, k, e.dtype, span=e.span)


__all__ = ["AtomicExtMixin", "LOAD_ORDERS", "STORE_ORDERS"]
