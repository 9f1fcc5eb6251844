"""TileLang's reducer statements: `acc = T.alloc_reducer(shape, dtype, op="sum" | "max" |
"min")`, `T.reducer_init(acc, seed=None)` (every element the op's identity, or the
seed) and `T.reducer_update(acc[i], value)` (the element combined with the value, also
from many T.Parallel iterations: a reducer's updates are reduced on both targets, as
`acc[i] += x[i, j]` is). `T.finalize_reducer(acc, result)` copies it (tileops.py)."""
from __future__ import annotations

from .. import dtypes
from ..diagnostics import codes_tileops as C3
from ..ir.nodes import Binary, Const, Fill, Load, Store
from .callargs import REQUIRED, Sig, bind
from .errors import fail
from .regions import region_arg
from .values import NoneVal, Str, const_ints, describe

REDUCER_OPS = ("sum", "max", "min")


class ReducerMixin:
    def reducer_op(self, name, tree):
        """Record the op of reducer `name` (`op=` of T.alloc_reducer)."""
        op = "sum" if tree in (None, "sum") else self.eval(tree)
        op = op.value if isinstance(op, Str) else op
        if op not in REDUCER_OPS:
            raise fail(C3.BAD_FUNCTION, f"the op of T.alloc_reducer is one of "
                       f"{', '.join(REDUCER_OPS)}", self.spans.of(tree), f"{op!r}"
                       if isinstance(op, str) else describe(op))
        self.reducer_ops = {**getattr(self, "reducer_ops", {}), name: op}

    def _reducer(self, tree, what):
        spec = region_arg(self, tree, what)
        op = getattr(self, "reducer_ops", {}).get(spec.buffer.name)
        if op is None:
            raise fail(C3.BAD_FUNCTION, f"{what} must be a T.alloc_reducer buffer, "
                       f"`{spec.buffer.name}` is not", spec.span, "not a reducer")
        return spec, op

    def _op_reducer_init(self, tree, span):
        args = bind(Sig("T.reducer_init", (("reducer", REQUIRED), ("value", None))), tree,
                    self.spans)
        spec, op = self._reducer(args["reducer"], "the reducer of T.reducer_init")
        buf = spec.buffer
        seed = None if args["value"] is None else self.eval(args["value"])
        if seed is None or isinstance(seed, NoneVal):
            value = Const(dtypes.reduction_identity(op, buf.dtype), buf.dtype, span=span)
        else:
            value = self.value_for(buf, seed)
        return Fill(spec.region(spec.extents or tuple(buf.shape)), value, span=span)

    def _op_reducer_update(self, tree, span):
        args = bind(Sig("T.reducer_update", (("dst", REQUIRED), ("value", REQUIRED))), tree,
                    self.spans)
        dst_tree = args["dst"]
        spec, op = self._reducer(dst_tree, "the destination of T.reducer_update")
        buf = spec.buffer
        if spec.extents is not None and any(e != 1 for e in const_ints(spec.extents)):
            raise fail(C3.BAD_ATOMIC, "T.reducer_update updates one element `acc[i]`",
                       spec.span, "not an element")
        idx = tuple(spec.starts)
        value = self.value_for(buf, self.eval(args["value"]))
        old = Load(buf, idx, buf.dtype, span=span)
        combined = Binary({"sum": "+", "max": "max", "min": "min"}[op], old, value,
                          buf.dtype, span=span)
        return Store(buf, idx, combined, span=span)


__all__ = ["ReducerMixin", "REDUCER_OPS"]
