"""`for` loops: range / T.serial / T.Parallel / T.Pipelined / T.unroll / T.vectorized."""
from __future__ import annotations

from lark import Tree

from ..diagnostics import codes_names as CN, codes_tileops as C3, codes_types as CT
from ..ir.nodes import Binary, Call, Const, Var, For
from ..language.names import LOOP_ITERS
from .callargs import Sig, REQUIRED, bind
from .errors import fail
from .parallel_deps import check_parallel_nest
from .regions import simplify_sub
from .values import Str, TRef, Tup, const_value, describe, span_of

_KIND = {"range": "serial", "serial": "serial", "Serial": "serial", "Parallel": "parallel",
         "parallel": "parallel", "Pipelined": "pipelined", "unroll": "unroll",
         "vectorized": "vectorized"}
# loops that may carry an `eviction_policy` annotation: where lower_tile_ops puts a
# T.copy's hint (its innermost loop), printed back as `T.vectorized(n, eviction_policy=...)`
_HINTED = ("serial", "parallel", "vectorized")


def parallel_nest(b, extents, body_at, span):
    """`for ix in T.Parallel(*extents): body_at(ix)`, built by the frontend itself (an
    extent is an int or an int32 expression)."""
    ivars = [Var(b.fresh("i"), "int32", span=span) for _ in extents]
    body = body_at(tuple(ivars))
    for var, extent in reversed(list(zip(ivars, extents))):
        ext = Const(extent, "int32", span=span) if isinstance(extent, int) else extent
        body = For(var, Const(0, "int32", span=span), ext, "parallel", body, span=span)
    return body


class LoopMixin:
    def _s_for_stmt(self, tree) -> list:
        targets_tree, iter_tree, body_tree = tree.children
        names = [str(t) for t in targets_tree.children]
        name_spans = [self.spans.of(t) for t in targets_tree.children]
        it = self._loop_iterator(iter_tree)
        loops = self._loop_ranges(it, iter_tree)
        if len(loops) != len(names):
            raise fail(C3.TARGET_COUNT, f"{_spell(it.name)} gives {len(loops)} loop "
                       f"variable{'s' if len(loops) != 1 else ''} but {len(names)} "
                       f"{'are' if len(names) != 1 else 'is'} bound",
                       self.spans.of(targets_tree), f"{len(names)} names")
        with self.scope.block():
            loop_vars = []
            for (name, span), loop in zip(zip(names, name_spans), loops):
                self.check_new_name(name, span, "loop variable")
                var = Var(self.fresh(name), "int32", span=span)
                # a stepped loop counts 0, 1, ...: its name is start + count * step
                self.scope.bind(name, _stepped(var, loop[4]) if len(loop) > 4 else var,
                                "loop")
                loop_vars.append(var)
            self.nesting += 1
            parallel = any(loop[2] in ("parallel", "vectorized") for loop in loops)
            self.parallel_depth = getattr(self, "parallel_depth", 0) + parallel
            try:
                body = self.block(body_tree)
            finally:
                self.nesting -= 1
                self.parallel_depth -= parallel
        span = self.spans.of(tree)
        for var, (lo, extent, kind, ann, *_) in reversed(list(zip(loop_vars, loops))):
            body = For(var, lo, extent, kind, body, ann, span=span)
        if body.kind == "parallel":
            check_parallel_nest(body, getattr(self, "reducers", frozenset()))
        return [body]

    def _loop_iterator(self, iter_tree) -> TRef:
        if isinstance(iter_tree, Tree) and iter_tree.data == "call":
            callee = self.eval(iter_tree.children[0])
            if isinstance(callee, TRef) and (callee.name in LOOP_ITERS or callee.name == "range"):
                return callee
            what = describe(callee)
        else:
            what = "this expression"
        raise fail(C3.NOT_ITERABLE, f"cannot loop over {what}", self.spans.of(iter_tree),
                   "not a loop iterator",
                   help="loop with range(n), T.serial, T.Parallel, T.Pipelined, T.unroll or "
                        "T.vectorized")

    def _loop_ranges(self, it: TRef, tree):
        """[(min, extent, kind, annotations)] — one entry per loop variable."""
        name = it.name
        kind = _KIND[name]
        if name == "Parallel":
            args = bind(Sig("T.Parallel", (("annotations", None),), varargs="extents",
                            min_varargs=1,
                            ignored=("coalesced_width", "loop_layout", "prefer_async")),
                        tree, self.spans)
            zero = Const(0, "int32", span=self.spans.of(tree))
            loops = [(zero, self.eval_int(t, "an integer loop extent"), kind, ())
                     for t in args["extents"]]
            ann = self._parallel_annotations(args["annotations"])
            if ann:         # on the innermost loop, the one whose stores it is about
                loops[-1] = loops[-1][:3] + (ann,)
            return loops
        params = (("start", REQUIRED), ("stop", None))
        if name in ("range", "serial", "Serial", "unroll"):
            params += (("step", None),)
        if name == "Pipelined":
            params += (("num_stages", None),)
        if name == "Pipelined":             # the manual schedule (TileLang's spelling)
            params += (("order", None), ("stage", None), ("group", None))
        if name in _HINTED:                 # the lowered form of T.copy's cache hint
            params += (("eviction_policy", None),)
        hints = ("sync",) if name == "Pipelined" else ()
        args = bind(Sig(_spell(name), params, ignored=hints), tree, self.spans)
        start = self.eval_int(args["start"], "an integer loop bound")
        if args["stop"] is None:
            lo, extent = Const(0, "int32", span=start.span), start
        else:
            stop = self.eval_int(args["stop"], "an integer loop bound")
            lo, extent = start, simplify_sub(stop, start)
        step = args.get("step")
        if step is not None:
            return [self._stepped_range(start, stop if args["stop"] is not None else None,
                                        step, kind, tree)]
        ann = []
        policy = self.eviction_policy(args.get("eviction_policy"), _spell(name))
        if policy is not None and policy != "evict_normal":
            ann.append(("eviction_policy", policy))
        if name == "Pipelined" and args["num_stages"] is not None:
            stages = self.const_arg(args["num_stages"], "num_stages", minimum=0)
            ann.append(("num_stages", stages))
        if name == "Pipelined":
            for key, nested in (("group", True), ("order", False), ("stage", False)):
                if args[key] is not None:
                    ann.append((key, self._int_list(args[key], key, nested)))
        return [(lo, extent, kind, tuple(sorted(ann)))]

    def _parallel_annotations(self, tree) -> tuple:
        """`T.Parallel(..., annotations={"eviction_policy": "evict_first"})`: the cache
        hint of the loop's stores (TileLang's loop annotations; other keys are GPU
        scheduling hints, accepted with no effect)."""
        if tree is None:
            return ()
        if not (isinstance(tree, Tree) and tree.data == "dict"):
            raise fail(CT.NOT_CONSTANT, "`annotations=` of T.Parallel must be a dict "
                       "literal", self.spans.of(tree), "not a dict")
        ann = []
        for item in tree.children:
            if item is None:
                continue
            key = self.eval(item.children[0])
            if not isinstance(key, Str):
                raise fail(CT.NOT_CONSTANT, "an annotation's key must be a string",
                           self.spans.of(item.children[0]), f"{describe(key)}")
            if key.value == "eviction_policy":
                policy = self.eviction_policy(item.children[1], "T.Parallel")
                if policy != "evict_normal":
                    ann.append(("eviction_policy", policy))
        return tuple(ann)

    def _stepped_range(self, start, stop, step_tree, kind, tree):
        """`range(a, b, s)`: s.. counted from 0 for ceil((b - a) / s) iterations; the
        loop's name stands for a + count * s."""
        step = self.const_arg(step_tree, "step")
        if step == 0:
            raise fail(CT.NOT_CONSTANT, "a loop step cannot be 0", self.spans.of(step_tree),
                       "zero step")
        if stop is None:
            start, stop = Const(0, "int32", span=start.span), start
        span = self.spans.of(tree)
        if step > 0:
            count = Call("ceildiv", (simplify_sub(stop, start), Const(step, "int32")),
                         "int32", span=span)
        else:
            count = Call("ceildiv", (simplify_sub(start, stop), Const(-step, "int32")),
                         "int32", span=span)
        zero = Const(0, "int32", span=span)
        count = Binary("max", count, zero, "int32", span=span)
        return (zero, count, kind, (), (start, step))

    def _int_list(self, tree, what: str, nested: bool) -> tuple:
        """`order=[-1, 0, 1]` (or `group=[[0], [1, 2]]`): a tuple of integer constants."""
        value = self.eval(tree)

        def ints(v, where):
            if not isinstance(v, Tup):
                raise fail(CT.NOT_CONSTANT, f"`{what}=` must be a list of integer "
                           f"constants", span_of(where), f"{describe(where)}")
            out = []
            for x in v.items:
                c = const_value(x)
                if not isinstance(c, int) or isinstance(c, bool):
                    raise fail(CT.NOT_CONSTANT, f"an entry of `{what}=` must be an "
                               f"integer constant", span_of(x), f"{describe(x)}")
                out.append(c)
            return tuple(out)
        if nested:
            if not isinstance(value, Tup):
                raise fail(CT.NOT_CONSTANT, f"`{what}=` must be a list of lists of "
                           f"statement indices", span_of(value), f"{describe(value)}")
            return tuple(ints(v, v) for v in value.items)
        return ints(value, value)

    def check_new_name(self, name, span, what):
        """A loop / block variable or let may not rebind a name of the function."""
        local = self.scope.local(name)
        if local is None:
            return
        if local.kind in ("loop", "block", "param"):
            raise fail(CN.SHADOWED_VAR, f"{what} `{name}` shadows the {_KINDS[local.kind]} "
                       f"`{name}`", span, "shadows an outer variable",
                       secondary=[(span_of(local.value), "first bound here")],
                       help="use a different name")
        raise fail(CN.SHADOWED_VAR, f"{what} `{name}` rebinds `{name}`", span,
                   "already defined", secondary=[(span_of(local.value), "first bound here")],
                   help="use a different name")


_KINDS = {"loop": "loop variable", "block": "block index", "param": "parameter"}


def _spell(name):
    return name if name == "range" else f"T.{name}"


def _stepped(var: Var, start_step):
    start, step = start_step
    scaled = Binary("*", var, Const(step, "int32"), "int32", span=var.span)
    return Binary("+", start, scaled, "int32", span=var.span)
