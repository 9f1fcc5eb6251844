"""Multi-rank statements, spelled as TileScale spells them: block copies to and from a
peer (`T.put_block` / `T.get_block`), signals (`T.st`, `T.signal_op`), waits
(`T.wait_eq` ...), `T.barrier_blocks`, and atomics that return the previous value
(`old = T.atomic_add(x[i], 1, return_prev=True)`, `old = T.atom_add(x[i], 1)`)."""
from __future__ import annotations

from lark import Tree

from .. import dtypes
from ..diagnostics import codes_ranks as CR
from ..ir.nodes import (Atomic, AtomicFetch, Barrier, Cast, Const, PeerCopy, SignalOp, Var,
                        Wait)
from .callargs import Sig, REQUIRED, bind
from .errors import fail
from .values import BufRef, Lit, Str, TRef, as_expr, describe, lit_to, span_of

_SIGNAL_DTYPES = ("int32", "int64")
_COPY_HINTS = ("unroll_factor", "enable_aggressive_vectorize")
_ST_HINTS = ("scope", "sem", "na")


class RankOpMixin:
    # ------------------------------------------------------------------ block copies
    def _op_put_block(self, tree, span, name="T.put_block", hints=()):
        args = bind(Sig(name, (("src", REQUIRED), ("dst", REQUIRED), ("size", REQUIRED),
                               ("dst_pe", -1)), ignored=hints), tree, self.spans)
        return self._peer_copy("put", name, args, args["dst_pe"], span)

    def _op_get_block(self, tree, span, name="T.get_block", hints=()):
        args = bind(Sig(name, (("src", REQUIRED), ("dst", REQUIRED), ("size", REQUIRED),
                               ("src_pe", -1)), ignored=hints), tree, self.spans)
        return self._peer_copy("get", name, args, args["src_pe"], span)

    def _op_put_warp(self, tree, span):
        return self._op_put_block(tree, span, "T.put_warp", _COPY_HINTS)

    def _op_get_warp(self, tree, span):
        return self._op_get_block(tree, span, "T.get_warp", _COPY_HINTS)

    def _peer_copy(self, kind, name, args, pe_tree, span):
        # the side on this rank may be a block-local tile (a peer's row pulled into it)
        src, src_idx = self._address(args["src"], f"the source of {name}", kind == "put")
        dst, dst_idx = self._address(args["dst"], f"the destination of {name}", kind == "get")
        if src.dtype != dst.dtype:
            raise fail(CR.BAD_RANK_OP, f"{name} copies bytes between tensors of one dtype: "
                       f"`{src.name}` is {src.dtype}, `{dst.name}` is {dst.dtype}",
                       self.spans.of(args["dst"]), dst.dtype,
                       secondary=[(self.spans.of(args["src"]), src.dtype)],
                       help="convert with T.copy first, or make both tensors one dtype")
        size = self.eval_int(args["size"], "a size in elements")
        return PeerCopy(kind, src, src_idx, dst, dst_idx, _int32(size), self._pe(pe_tree),
                        span=span)

    def _address(self, tree, what, local_ok=False):
        """(buffer, indices) of `T.address_of(buf[i, ...])` or `buf[i, ...]`."""
        if isinstance(tree, Tree) and tree.data == "call":
            callee = self.eval(tree.children[0])
            if isinstance(callee, TRef) and callee.name == "address_of":
                inner = bind(Sig("T.address_of", (("element", REQUIRED),)), tree, self.spans)
                tree = inner["element"]
        if not (isinstance(tree, Tree) and tree.data == "getitem"):
            raise fail(CR.BAD_RANK_OP, f"{what} must be an element `buf[i, j]` or "
                       "`T.address_of(buf[i, j])`", self.spans.of(tree), "not an element")
        return self._global_element(tree, what, local_ok)

    def _global_element(self, tree, what, local_ok=False):
        base = self.eval(tree.children[0])
        if not isinstance(base, BufRef):
            raise fail(CR.BAD_RANK_OP, f"{what} must be an element of a tensor, found "
                       f"{describe(base)}", span_of(base), "not a tensor")
        buf = base.buffer
        if buf.scope == "var" or (buf.scope != "global" and not local_ok):
            raise fail(CR.BAD_RANK_OP, f"{what} is `{buf.name}`, a {buf.scope} buffer",
                       self.spans.of(tree), "not a global tensor",
                       help="multi-rank primitives reach tensors in global memory (kernel "
                            "arguments in a symmetric heap)")
        idx = self.indices(buf, tree.children[1].children, self.spans.of(tree))
        return buf, idx

    def _pe(self, tree):
        if tree == -1 or tree is None:
            return Const(-1, "int32")
        return _int32(self.eval_int(tree, "a rank"))

    # ------------------------------------------------------------------ signals
    def _op_st(self, tree, span):
        args = bind(Sig("T.st", (("dst", REQUIRED), ("value", REQUIRED), ("scope", "gpu"),
                                 ("sem", "weak"), ("na", False), ("dst_pe", -1))),
                    tree, self.spans)
        return self._signal("set", "T.st", args["dst"], args["value"], args["dst_pe"], span)

    def _op_signal_op(self, tree, span):
        args = bind(Sig("T.signal_op", (("sig_addr", REQUIRED), ("signal", REQUIRED),
                                        ("sig_op", REQUIRED), ("pe", -1))), tree, self.spans)
        op = self.eval(args["sig_op"])
        if not (isinstance(op, Str) and op.value in ("set", "add")):
            raise fail(CR.BAD_RANK_OP, f"T.signal_op's sig_op must be \"set\" or \"add\", "
                       f"found {describe(op)}", span_of(op), "not a signal operation")
        return self._signal(op.value, "T.signal_op", args["sig_addr"], args["signal"],
                            args["pe"], span)

    def _signal(self, op, name, dst_tree, value_tree, pe_tree, span):
        buf, idx = self._signal_element(self._strip_address(dst_tree), f"the signal of {name}")
        value = self._int_value(buf, value_tree)
        return SignalOp(op, buf, idx, value, self._pe(pe_tree), span=span)

    def _strip_address(self, tree):
        if isinstance(tree, Tree) and tree.data == "call":
            callee = self.eval(tree.children[0])
            if isinstance(callee, TRef) and callee.name == "address_of":
                return bind(Sig("T.address_of", (("element", REQUIRED),)), tree,
                            self.spans)["element"]
        return tree

    def _signal_element(self, tree, what):
        if not (isinstance(tree, Tree) and tree.data == "getitem"):
            raise fail(CR.BAD_RANK_OP, f"{what} must be an element `sig[i]`",
                       self.spans.of(tree), "not an element")
        buf, idx = self._global_element(tree, what)
        if buf.dtype not in _SIGNAL_DTYPES:
            raise fail(CR.BAD_RANK_OP, f"{what} is `{buf.name}`, a {buf.dtype} tensor",
                       self.spans.of(tree), buf.dtype, help="signals are int32 or int64")
        return buf, idx

    def _int_value(self, buf, tree):
        v = self.eval(tree)
        if isinstance(v, Lit):
            return lit_to(v, buf.dtype, buf.span)
        e = as_expr(v)
        if not dtypes.is_int(e.dtype):
            raise fail(CR.BAD_RANK_OP, f"a signal value must be an integer, found {e.dtype}",
                       e.span, e.dtype, help=f'convert: T.cast(x, "{buf.dtype}")')
        return e if e.dtype == buf.dtype else Cast(e, buf.dtype, span=e.span)

    # ------------------------------------------------------------------ waits, barrier
    def _wait(self, cmp, tree, span):
        name = f"T.wait_{cmp}"
        args = bind(Sig(name, (("value", REQUIRED), ("expected", REQUIRED), ("peer", -1))),
                    tree, self.spans)
        buf, idx = self._signal_element(self._strip_address(args["value"]),
                                        f"the signal of {name}")
        expected = self._int_value(buf, args["expected"])
        return Wait(cmp, buf, idx, expected, self._pe(args["peer"]), span=span)

    def _op_barrier_blocks(self, tree, span, name="T.barrier_blocks"):
        args = bind(Sig(name, (("barrier", REQUIRED),)), tree, self.spans)
        v = self.eval(self._strip_address(args["barrier"]))
        if isinstance(v, BufRef) and v.buffer.scope == "global" and v.buffer.ndim == 1 \
                and v.buffer.dtype == "int32":
            return Barrier(v.buffer, span=span)
        raise fail(CR.BAD_RANK_OP, f"{name} takes a whole int32 tensor of one word per rank, "
                   f"found {describe(v)}", span_of(v), "not a barrier tensor",
                   help="declare it `T.Tensor((num_ranks,), \"int32\")` in a symmetric heap")

    def _op_sync_blocks(self, tree, span):
        return self._op_barrier_blocks(tree, span, "T.sync_blocks")

    # ------------------------------------------------------------------ atomics
    def _op_atom_add(self, tree, span):
        buf, idx, value = self._atom_args(tree, "T.atom_add",
                                          (("scope", "gpu"), ("sem", "relaxed")))
        return Atomic("add", buf, idx, value, span=span)

    def _atom_args(self, tree, name, extra):
        args = bind(Sig(name, (("dst", REQUIRED), ("value", REQUIRED)) + extra), tree,
                    self.spans)
        target = self._strip_address(args["dst"])
        buf = self.element_buffer(target, name, CR.BAD_RANK_OP, "x[i]")
        if not dtypes.is_int(buf.dtype) or buf.dtype == "bool":
            raise fail(CR.BAD_RANK_OP, f"{name} returning the previous value needs an "
                       f"integer tensor, `{buf.name}` is {buf.dtype}", self.spans.of(target),
                       buf.dtype)
        idx = self.indices(buf, target.children[1].children, self.spans.of(target))
        return buf, idx, self._int_value(buf, args["value"])

    def _int_destination(self, call_tree) -> bool:
        """Whether the call's first argument is an element of an integer tensor (others
        are fetched as a value, atomics.py)."""
        args = call_tree.children[1]
        first = args.children[0] if args is not None and args.children else None
        if not (isinstance(first, Tree) and first.data == "getitem"):
            return True                         # the diagnostics of _atom_args
        base = self.eval(first.children[0])
        return not isinstance(base, BufRef) or (dtypes.is_int(base.buffer.dtype)
                                                and base.buffer.dtype != "bool")

    def fetch_assign(self, name, tspan, value_tree, span):
        """`old = T.atomic_add(x[i], v, return_prev=True)` / `old = T.atom_add(x[i], v)`:
        an AtomicFetch binding `old`, or None when the value is no such call."""
        if not (isinstance(value_tree, Tree) and value_tree.data == "call"):
            return None
        callee = self.eval(value_tree.children[0])
        if not isinstance(callee, TRef):
            return None
        if callee.name == "atom_add":
            buf, idx, value = self._atom_args(value_tree, "T.atom_add",
                                              (("scope", "gpu"), ("sem", "relaxed")))
        elif callee.name == "atomic_add" and _has_kwarg(value_tree, "return_prev") and \
                self._int_destination(value_tree):      # others: atomics.py, as a value
            args = bind(Sig("T.atomic_add", (("dst", REQUIRED), ("value", REQUIRED),
                                             ("memory_order", None), ("return_prev", False))),
                        value_tree, self.spans)
            if not self.const_arg(args["return_prev"], "return_prev", bool):
                return None
            buf, idx, value = self._atom_args(value_tree, "T.atomic_add",
                                              (("memory_order", None), ("return_prev", True)))
        else:
            return None
        if not self.in_kernel:
            raise fail(CR.BAD_RANK_OP, "an atomic outside `T.Kernel`", span, "atomic")
        self._check_fresh_local(name, tspan)
        var = Var(self.fresh(name), buf.dtype, span=tspan)
        self.scope.bind(name, var, "let")
        return [AtomicFetch(var, "add", buf, idx, value, span=span)]


def _has_kwarg(call_tree, name: str) -> bool:
    args = call_tree.children[1]
    return args is not None and any(
        getattr(a, "data", None) == "kwarg" and str(a.children[0]) == name
        for a in args.children)


def _int32(e):
    return e if e.dtype == "int32" else Cast(e, "int32", span=e.span)


for _cmp in ("eq", "ne", "ge", "le", "gt", "lt"):
    setattr(RankOpMixin, f"_op_wait_{_cmp}",
            lambda self, tree, span, _c=_cmp: self._wait(_c, tree, span))
