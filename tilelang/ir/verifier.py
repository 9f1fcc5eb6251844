"""Well-formedness checks of the IR.

`verify(module)` raises `InternalError` (naming the offending node's source position) when
a module breaks an invariant that later layers rely on. User errors are reported earlier
by the frontend's builder, so a failure here is always a compiler bug; the pass manager
runs the verifier after every pass when asked to (tests always do).
"""
from __future__ import annotations

from .. import dtypes
from ..diagnostics import InternalError
from .nodes import (Node, Expr, Const, Var, Binary, Unary, Call, Cast, BitCast, Select, Buffer,
                    Load, Stmt, Seq, Let, Alloc, Store, Atomic, For, If, While, Region, Copy,
                    Gemm, Fill,
                    Reduce, TileAtomic, Prefetch, Kernel, PrimFunc, Module, NO_SPAN, BINARY_OPS,
                    COMPARISONS, INTRINSICS, SCOPES, ATOMIC_OPS, LOOP_KINDS, REDUCE_KINDS,
                    PeerCopy, SignalOp, Wait, Barrier, AtomicFetch, SIGNAL_OPS, WAIT_CMPS, RANK_QUERIES,
                    CYCLE_COUNTER, BINARY_INTRINSICS, BIT_INTRINSICS)

_LOGICAL = ("and", "or")
_INT_ONLY_CALLS = ("ceildiv",) + BIT_INTRINSICS
_FLOAT_ONLY_CALLS = ("sin", "cos", "tan", "pow", "round", "trunc")
_TILE_OPS = (Copy, Gemm, Fill, Reduce, TileAtomic)


def verify(module: Module) -> None:
    """Check every function of `module`; raise InternalError on the first violation."""
    if not isinstance(module, Module):
        raise InternalError(f"verify expects a Module, got {type(module).__name__}")
    names = set()
    for func in module.funcs:
        if func.name in names:
            _fail(func, f"two functions are named {func.name!r}")
        names.add(func.name)
        _FuncVerifier(func).run()


def _fail(node: Node, message: str):
    span = getattr(node, "span", NO_SPAN)
    where = f"{span}: " if span is not NO_SPAN else ""
    raise InternalError(f"{where}ill-formed IR: {message} (in {type(node).__name__})")


class _Scope:
    """Names visible at a point: vars and buffers, with a parent chain for nesting."""

    def __init__(self, parent: "_Scope | None" = None):
        self.parent = parent
        self.vars: dict[str, Var] = {}
        self.buffers: dict[str, Buffer] = {}

    def lookup_var(self, name: str) -> Var | None:
        s = self
        while s is not None:
            if name in s.vars:
                return s.vars[name]
            s = s.parent
        return None

    def lookup_buffer(self, name: str) -> Buffer | None:
        s = self
        while s is not None:
            if name in s.buffers:
                return s.buffers[name]
            s = s.parent
        return None


class _FuncVerifier:
    def __init__(self, func: PrimFunc):
        self.func = func
        self.kernels = 0
        self.in_kernel = False

    # ------------------------------------------------------------------ binding

    def bind_var(self, scope: _Scope, var: Var, at: Node) -> None:
        if not isinstance(var, Var):
            _fail(at, f"expected a Var to bind, got {type(var).__name__}")
        self.check_dtype(var.dtype, var)
        if scope.lookup_var(var.name) is not None or scope.lookup_buffer(var.name) is not None:
            _fail(at, f"{var.name!r} is bound again while already in scope")
        scope.vars[var.name] = var

    def bind_buffer(self, scope: _Scope, buf: Buffer, at: Node) -> None:
        if scope.lookup_var(buf.name) is not None or scope.lookup_buffer(buf.name) is not None:
            _fail(at, f"buffer {buf.name!r} is declared again while already in scope")
        self.check_buffer_decl(scope, buf)
        scope.buffers[buf.name] = buf

    def check_buffer_decl(self, scope: _Scope, buf: Buffer) -> None:
        self.check_dtype(buf.dtype, buf)
        if buf.scope not in SCOPES:
            _fail(buf, f"unknown scope {buf.scope!r} of buffer {buf.name!r}")
        if buf.scope == "var" and buf.ndim != 0:
            _fail(buf, f"T.alloc_var buffer {buf.name!r} must have rank 0")
        for dim in buf.shape:
            self.expr(scope, dim)
            if not dtypes.is_int(dim.dtype):
                _fail(buf, f"shape of {buf.name!r} has a non-integer extent")

    def use_buffer(self, scope: _Scope, buf: Buffer, at: Node) -> None:
        declared = scope.lookup_buffer(buf.name)
        if declared is None:
            _fail(at, f"buffer {buf.name!r} is used but not a parameter or an enclosing "
                      f"allocation")
        if declared != buf:
            _fail(at, f"buffer {buf.name!r} is used with a declaration that differs from "
                      f"its parameter / allocation")

    def check_dtype(self, dtype: str, at: Node) -> None:
        if dtype not in dtypes.DTYPES:
            _fail(at, f"unknown dtype {dtype!r}")

    # ------------------------------------------------------------------ function

    def run(self) -> None:
        func = self.func
        scope = _Scope()
        for sym in func.symbols:
            self.bind_var(scope, sym, func)
            if not dtypes.is_int(sym.dtype):
                _fail(func, f"symbolic size {sym.name!r} is not an integer")
        for p in func.params:
            if isinstance(p, Buffer):
                if p.scope != "global":
                    _fail(func, f"tensor parameter {p.name!r} has scope {p.scope!r}")
                self.bind_buffer(scope, p, func)
            elif isinstance(p, Var):
                self.bind_var(scope, p, func)
            else:
                _fail(func, f"parameter of unexpected kind {type(p).__name__}")
        self.stmt(scope, func.body)
        if self.kernels < 1:
            _fail(func, f"function {func.name!r} has no T.Kernel block")
        items = func.items()
        first = next(i for i, s in enumerate(items) if isinstance(s, Kernel))
        if any(not isinstance(s, Kernel) for s in items[first:]):
            _fail(func, f"function {func.name!r} has statements between or after its "
                        f"T.Kernel grids")

    # ------------------------------------------------------------------ statements

    def stmt(self, scope: _Scope, s: Stmt) -> None:
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            _fail(s, f"unexpected node {type(s).__name__} in statement position")
        method(scope, s)

    def stmt_Seq(self, scope: _Scope, s: Seq) -> None:
        # Lets and Allocs bind for the rest of the enclosing Seq.
        inner = _Scope(scope)
        for item in s.stmts:
            self.stmt(inner, item)

    def stmt_Let(self, scope: _Scope, s: Let) -> None:
        self.expr(scope, s.value)
        if s.value.dtype != s.var.dtype:
            _fail(s, f"let {s.var.name!r} of dtype {s.var.dtype} is bound to a "
                     f"{s.value.dtype} value")
        self.bind_var(scope, s.var, s)

    def stmt_Alloc(self, scope: _Scope, s: Alloc) -> None:
        buf = s.buffer
        if not self.in_kernel and buf.scope != "global" and s.source is None:
            _fail(s, f"block-local buffer {buf.name!r} allocated outside the T.Kernel")
        if (s.offset is None) != (s.align is None) or (s.align is not None and (
                s.align <= 0 or s.align & (s.align - 1) or s.offset < 0
                or s.offset % s.align or buf.scope in ("global", "var"))):
            _fail(s, f"bad placement of {buf.name!r}: offset={s.offset}, align={s.align}")
        if s.source is not None:
            self.use_buffer(scope, s.source, s)
            if buf.scope != "global" or s.source.scope != "global" or \
                    s.source.dtype != buf.dtype:
                _fail(s, f"view {buf.name!r} must be a global buffer of the dtype of the "
                         f"global tensor it views")
        if s.pe is not None:
            if s.source is None or not self.in_kernel:
                _fail(s, f"only a view inside a kernel may name a rank: {buf.name!r}")
            self.expr(scope, s.pe)
            if not dtypes.is_int(s.pe.dtype):
                _fail(s, f"the rank of view {buf.name!r} is {s.pe.dtype}, not an integer")
        if s.init is not None:
            self.expr(scope, s.init)
            if s.init.dtype != buf.dtype:
                _fail(s, f"initial value of {buf.name!r} is {s.init.dtype}, "
                         f"buffer is {buf.dtype}")
        self.bind_buffer(scope, buf, s)

    def stmt_Store(self, scope: _Scope, s: Store) -> None:
        self.access(scope, s.buffer, s.indices, s)
        self.expr(scope, s.value)
        if s.value.dtype != s.buffer.dtype:
            _fail(s, f"store of a {s.value.dtype} value into {s.buffer.dtype} buffer "
                     f"{s.buffer.name!r}")

    def stmt_Atomic(self, scope: _Scope, s: Atomic) -> None:
        if s.op not in ATOMIC_OPS:
            _fail(s, f"unknown atomic op {s.op!r}")
        self.stmt_Store(scope, s)

    def stmt_For(self, scope: _Scope, s: For) -> None:
        if s.kind not in LOOP_KINDS:
            _fail(s, f"unknown loop kind {s.kind!r}")
        for e in (s.min, s.extent):
            self.expr(scope, e)
            if not dtypes.is_int(e.dtype):
                _fail(s, "loop bounds must be integers")
        if not dtypes.is_int(s.var.dtype):
            _fail(s, f"loop variable {s.var.name!r} is not an integer")
        inner = _Scope(scope)
        self.bind_var(inner, s.var, s)
        self.stmt(inner, s.body)

    def stmt_If(self, scope: _Scope, s: If) -> None:
        self.expr(scope, s.cond)
        if s.cond.dtype != "bool":
            _fail(s, f"if condition is {s.cond.dtype}, expected bool")
        self.stmt(_Scope(scope), s.then_body)
        if s.else_body is not None:
            self.stmt(_Scope(scope), s.else_body)

    def stmt_While(self, scope: _Scope, s: While) -> None:
        self.expr(scope, s.cond)
        if s.cond.dtype != "bool":
            _fail(s, f"while condition is {s.cond.dtype}, expected bool")
        if not self.in_kernel:
            _fail(s, "a while loop outside T.Kernel")
        self.stmt(_Scope(scope), s.body)

    def stmt_Kernel(self, scope: _Scope, s: Kernel) -> None:
        if self.in_kernel:
            _fail(s, "T.Kernel nested inside another T.Kernel")
        self.kernels += 1
        if not 1 <= len(s.grid) <= 3 or len(s.grid) != len(s.block_vars):
            _fail(s, "a T.Kernel needs 1 to 3 grid extents, one block variable each")
        for g in s.grid:
            self.expr(scope, g)
            if not dtypes.is_int(g.dtype):
                _fail(s, "grid extents must be integers")
        inner = _Scope(scope)
        for v in s.block_vars:
            self.bind_var(inner, v, s)
        self.in_kernel = True
        try:
            self.stmt(inner, s.body)
        finally:
            self.in_kernel = False

    # ------------------------------------------------------------------ tile ops

    def tile_op(self, s: Stmt) -> None:
        if not self.in_kernel:
            _fail(s, f"tile op {type(s).__name__} outside the T.Kernel")

    def region(self, scope: _Scope, r: Region, at: Node) -> None:
        self.use_buffer(scope, r.buffer, at)
        rank = r.buffer.ndim
        if len(r.starts) != rank or len(r.extents) != rank:
            _fail(at, f"region of {r.buffer.name!r} has {len(r.starts)} starts and "
                      f"{len(r.extents)} extents for a rank-{rank} buffer")
        for e in r.extents:
            if not isinstance(e, int) or isinstance(e, bool) or e <= 0:
                _fail(at, f"region of {r.buffer.name!r} has extent {e!r}, "
                          f"expected a positive int")
        for st in r.starts:
            self.expr(scope, st)
            if not dtypes.is_int(st.dtype):
                _fail(at, f"region start of {r.buffer.name!r} is not an integer")
        if r.limits is not None:
            if len(r.limits) != rank:
                _fail(at, f"region of {r.buffer.name!r} has {len(r.limits)} limits for a "
                          f"rank-{rank} buffer")
            for lim in r.limits:
                if lim is not None:
                    self.expr(scope, lim)
                    if not dtypes.is_int(lim.dtype):
                        _fail(at, f"region limit of {r.buffer.name!r} is not an integer")

    def stmt_Copy(self, scope: _Scope, s: Copy) -> None:
        self.tile_op(s)
        self.region(scope, s.src, s)
        self.region(scope, s.dst, s)
        src = [e for e in s.src.extents if e != 1]
        dst = [e for e in s.dst.extents if e != 1]
        if src != dst:
            _fail(s, f"copy regions disagree: {s.src.extents} vs {s.dst.extents}")

    def stmt_Gemm(self, scope: _Scope, s: Gemm) -> None:
        self.tile_op(s)
        for r in (s.a, s.b, s.c):
            self.region(scope, r, s)

    def stmt_Fill(self, scope: _Scope, s: Fill) -> None:
        self.tile_op(s)
        self.region(scope, s.dst, s)
        self.expr(scope, s.value)

    def stmt_TileAtomic(self, scope: _Scope, s: TileAtomic) -> None:
        self.tile_op(s)
        if s.op not in ATOMIC_OPS:
            _fail(s, f"unknown atomic op {s.op!r}")
        self.region(scope, s.dst, s)
        self.region(scope, s.src, s)

    def stmt_Prefetch(self, scope: _Scope, s: Prefetch) -> None:
        self.tile_op(s)
        self.region(scope, s.region, s)
        if s.region.buffer.scope != "global":
            _fail(s, f"prefetch of {s.region.buffer.name!r}, a {s.region.buffer.scope} "
                     f"buffer (only global tensors are prefetched)")
        self.expr(scope, s.part)
        if not dtypes.is_int(s.part.dtype):
            _fail(s, "prefetch part is not an integer")
        if not isinstance(s.parts, int) or isinstance(s.parts, bool) or s.parts < 1:
            _fail(s, f"prefetch parts is {s.parts!r}, expected a positive int")

    def stmt_Reduce(self, scope: _Scope, s: Reduce) -> None:
        self.tile_op(s)
        if s.kind not in REDUCE_KINDS:
            _fail(s, f"unknown reduction {s.kind!r}")
        self.use_buffer(scope, s.src, s)
        self.use_buffer(scope, s.dst, s)
        if not 0 <= s.dim < s.src.ndim:
            _fail(s, f"reduction dim {s.dim} out of range for rank {s.src.ndim}")
        kept = s.src.shape[:s.dim] + s.src.shape[s.dim + 1:]
        if s.dst.shape != kept and not _keepdim_shape(s):
            _fail(s, f"reduction of {s.src.name!r} along dim {s.dim} into "
                     f"{s.dst.name!r}: destination shape does not match")

    # ------------------------------------------------------------------ multi-rank

    def _pe(self, scope: _Scope, s: Stmt) -> None:
        self.expr(scope, s.pe)
        if s.pe.dtype != "int32":
            _fail(s, f"peer rank of {type(s).__name__} is {s.pe.dtype}, expected int32")

    def stmt_PeerCopy(self, scope: _Scope, s: PeerCopy) -> None:
        self.tile_op(s)
        if s.kind not in ("put", "get"):
            _fail(s, f"unknown peer copy kind {s.kind!r}")
        for buf, idx in ((s.src, s.src_indices), (s.dst, s.dst_indices)):
            self.access(scope, buf, idx, s)
        if s.remote.scope != "global":
            _fail(s, f"peer copy reaching {s.remote.name!r}, a {s.remote.scope} buffer, on "
                     f"a peer")
        if s.src.dtype != s.dst.dtype:
            _fail(s, f"peer copy from {s.src.dtype} to {s.dst.dtype}")
        self.expr(scope, s.size)
        if not dtypes.is_int(s.size.dtype):
            _fail(s, "peer copy size is not an integer")
        self._pe(scope, s)

    def _signal(self, scope: _Scope, s: Stmt, value: Expr) -> None:
        self.tile_op(s)
        self.access(scope, s.buffer, s.indices, s)
        if s.buffer.scope != "global" or s.buffer.dtype not in ("int32", "int64"):
            _fail(s, f"signal {s.buffer.name!r} must be an int32/int64 global tensor")
        self.expr(scope, value)
        if value.dtype != s.buffer.dtype:
            _fail(s, f"signal value is {value.dtype}, signal {s.buffer.name!r} is "
                     f"{s.buffer.dtype}")
        self._pe(scope, s)

    def stmt_SignalOp(self, scope: _Scope, s: SignalOp) -> None:
        if s.op not in SIGNAL_OPS:
            _fail(s, f"unknown signal op {s.op!r}")
        self._signal(scope, s, s.value)

    def stmt_Wait(self, scope: _Scope, s: Wait) -> None:
        if s.cmp not in WAIT_CMPS:
            _fail(s, f"unknown wait comparison {s.cmp!r}")
        self._signal(scope, s, s.expected)

    def stmt_Barrier(self, scope: _Scope, s: Barrier) -> None:
        self.tile_op(s)
        self.use_buffer(scope, s.buffer, s)
        if s.buffer.scope != "global" or s.buffer.dtype != "int32" or s.buffer.ndim != 1:
            _fail(s, f"barrier {s.buffer.name!r} must be a 1-d int32 global tensor")

    def stmt_AtomicFetch(self, scope: _Scope, s: AtomicFetch) -> None:
        self.tile_op(s)
        if s.op not in ATOMIC_OPS:
            _fail(s, f"unknown atomic op {s.op!r}")
        self.access(scope, s.buffer, s.indices, s)
        self.expr(scope, s.value)
        if s.value.dtype != s.buffer.dtype or s.var.dtype != s.buffer.dtype:
            _fail(s, f"atomic fetch on {s.buffer.dtype} buffer {s.buffer.name!r} with "
                     f"{s.value.dtype} value into {s.var.dtype} variable")
        self.bind_var(scope, s.var, s)

    # ------------------------------------------------------------------ expressions

    def access(self, scope: _Scope, buf: Buffer, indices, at: Node) -> None:
        self.use_buffer(scope, buf, at)
        if len(indices) != buf.ndim:
            _fail(at, f"{len(indices)} indices for rank-{buf.ndim} buffer {buf.name!r}")
        for i in indices:
            self.expr(scope, i)
            if not dtypes.is_int(i.dtype):
                _fail(at, f"index into {buf.name!r} is {i.dtype}, expected an integer")

    def expr(self, scope: _Scope, e: Expr) -> None:
        if not isinstance(e, Expr):
            _fail(e, f"expected an expression, got {type(e).__name__}")
        self.check_dtype(e.dtype, e)
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is None:
            _fail(e, f"unexpected expression node {type(e).__name__}")
        method(scope, e)

    def expr_Const(self, scope: _Scope, e: Const) -> None:
        ok = ((dtypes.is_bool(e.dtype) and isinstance(e.value, bool))
              or (dtypes.is_int(e.dtype) and isinstance(e.value, int)
                  and not isinstance(e.value, bool))
              or (dtypes.is_float(e.dtype) and isinstance(e.value, (int, float))
                  and not isinstance(e.value, bool)))
        if not ok:
            _fail(e, f"constant {e.value!r} does not fit its dtype {e.dtype}")

    def expr_Var(self, scope: _Scope, e: Var) -> None:
        bound = scope.lookup_var(e.name)
        if bound is None:
            _fail(e, f"variable {e.name!r} is used but not bound")
        if bound.dtype != e.dtype:
            _fail(e, f"variable {e.name!r} used as {e.dtype}, bound as {bound.dtype}")

    def expr_Binary(self, scope: _Scope, e: Binary) -> None:
        if e.op not in BINARY_OPS:
            _fail(e, f"unknown binary op {e.op!r}")
        self.expr(scope, e.lhs)
        self.expr(scope, e.rhs)
        if e.lhs.dtype != e.rhs.dtype:
            _fail(e, f"operands of {e.op!r} disagree: {e.lhs.dtype} vs {e.rhs.dtype}")
        if e.op in _LOGICAL:
            if e.lhs.dtype != "bool" or e.dtype != "bool":
                _fail(e, f"{e.op!r} needs bool operands and gives bool")
        elif e.op in COMPARISONS:
            if e.dtype != "bool":
                _fail(e, f"comparison {e.op!r} has dtype {e.dtype}, expected bool")
        elif e.dtype != e.lhs.dtype:
            _fail(e, f"{e.op!r} of {e.lhs.dtype} operands has dtype {e.dtype}")

    def expr_Unary(self, scope: _Scope, e: Unary) -> None:
        self.expr(scope, e.operand)
        if e.op == "not":
            if e.operand.dtype != "bool" or e.dtype != "bool":
                _fail(e, "'not' needs a bool operand and gives bool")
        elif e.op == "-":
            if e.dtype != e.operand.dtype:
                _fail(e, f"negation of {e.operand.dtype} has dtype {e.dtype}")
        else:
            _fail(e, f"unknown unary op {e.op!r}")

    def expr_Call(self, scope: _Scope, e: Call) -> None:
        if e.name not in INTRINSICS:
            _fail(e, f"unknown intrinsic {e.name!r}")
        want = 2 if e.name in BINARY_INTRINSICS else 0 \
            if e.name in RANK_QUERIES + (CYCLE_COUNTER,) else 1
        if len(e.args) != want:
            _fail(e, f"T.{e.name} takes {want} arguments, got {len(e.args)}")
        for a in e.args:
            self.expr(scope, a)
            if a.dtype != e.dtype:
                _fail(e, f"argument of T.{e.name} is {a.dtype}, call is {e.dtype}")
        if e.name in _INT_ONLY_CALLS and not dtypes.is_int(e.dtype):
            _fail(e, f"T.{e.name} needs integer arguments")
        if e.name in _FLOAT_ONLY_CALLS and not dtypes.is_float(e.dtype):
            _fail(e, f"T.{e.name} needs float arguments")
        if e.name == "cycle_counter" and e.dtype != "int64":
            _fail(e, "T.cycle_counter() is int64")

    def expr_Cast(self, scope: _Scope, e: Cast) -> None:
        self.expr(scope, e.value)

    def expr_BitCast(self, scope: _Scope, e: BitCast) -> None:
        self.expr(scope, e.value)
        src = e.value.dtype
        if "bool" in (src, e.dtype) or dtypes.bits(src) != dtypes.bits(e.dtype):
            _fail(e, f"T.reinterpret of {src} as {e.dtype}: not two dtypes of one width")

    def expr_Select(self, scope: _Scope, e: Select) -> None:
        for part in (e.cond, e.true_value, e.false_value):
            self.expr(scope, part)
        if e.cond.dtype != "bool":
            _fail(e, f"select condition is {e.cond.dtype}, expected bool")
        if not e.true_value.dtype == e.false_value.dtype == e.dtype:
            _fail(e, f"select arms disagree: {e.true_value.dtype} / "
                     f"{e.false_value.dtype}, select is {e.dtype}")

    def expr_Load(self, scope: _Scope, e: Load) -> None:
        self.access(scope, e.buffer, e.indices, e)
        if e.dtype != e.buffer.dtype:
            _fail(e, f"load of {e.buffer.dtype} buffer {e.buffer.name!r} has dtype {e.dtype}")


def _keepdim_shape(s: Reduce) -> bool:
    """dst may keep the reduced dim with extent 1, and a rank-1 source may reduce into a
    one-element buffer."""
    src, dst = s.src.shape, s.dst.shape
    if len(dst) == len(src):
        kept = [d for i, d in enumerate(src) if i != s.dim]
        return ([d for i, d in enumerate(dst) if i != s.dim] == kept
                and isinstance(dst[s.dim], Const) and dst[s.dim].value == 1)
    return False
