"""`T.Parallel` nests to VEC instructions.

The nest's loop variables form the iteration domain. Every store `X[i, j] = e` becomes a
short sequence of whole-domain VEC instructions: loads `Y[j, i]` of on-chip buffers are
operands with a dim map (`Y{1,0}`, broadcast when a dim is missing, `m{0}`), scalar
subexpressions go to the scalar unit and become register operands, a loop variable used
as a value is a VEC.IOTA, and each other operator writes a temporary tile (reused across
stores). The outermost operator writes X directly.
"""
from __future__ import annotations

from ...ir.nodes import (Atomic, Binary, BitCast, Call, Cast, Const, For, Let, Load, Select, Seq,
                         Store, Unary, Var)
from ...ir.visitor import walk
from ...targets.tcsim.isa import Glob, Tile
from . import vec_elems
from .scalar import BIN, CALLS, CALLS2, unsupported


def _nest(s: For):
    """(loop vars, extents, body) of a perfect nest of parallel loops from 0."""
    vars_, extents = [], []
    while isinstance(s, For) and s.kind in ("parallel", "vectorized"):
        if not (isinstance(s.min, Const) and s.min.value == 0):
            raise unsupported(s, "T.Parallel loops that do not start at 0")
        if not isinstance(s.extent, Const):
            raise unsupported(s, "T.Parallel loops of non-constant extent")
        vars_.append(s.var)
        extents.append(int(s.extent.value))
        s = s.body
    return vars_, tuple(extents), s


class VecLowering:
    def __init__(self, st, dom_vars, shape):
        self.st, self.em = st, st.em
        self.dom = {v: i for i, v in enumerate(dom_vars)}
        self.shape = shape
        self.free = st.vec_pool     # (dtype, shape) -> free temp names, kernel-wide
        self.busy: list = []
        self.lets: dict = {}        # let var -> operand
        self.let_values: dict = {}  # let var -> its expression
        self.staged: set = set()    # buffers copied where the vector unit reaches them

    def depends(self, e) -> bool:
        """Whether `e` varies over the domain (T.alloc_var scalars do not, nor does a
        global element at indices free of it: the scalar unit loads it, `lens[b]`)."""
        for n in walk(e):
            if isinstance(n, Load) and n.buffer.scope == "global" and not any(
                    self.depends(i) for i in n.indices):
                continue
            if isinstance(n, Load) and n.buffer.scope != "var":
                return True
            if isinstance(n, Var) and (n in self.dom or n in self.lets):
                return True
        return False

    def temp(self, dtype: str) -> str:
        key = (dtype, self.shape)
        pool = self.free.setdefault(key, [])
        if pool:
            name = pool.pop()
        else:
            name = f"__t{len(self.em.buffers)}"
            # an elementwise temporary: computed element by element, never a whole tile
            # in registers, so it takes no room (BufferDecl.transient)
            self.em.declare(name, self.st.plan.fragment, dtype, self.shape, transient=True)
        self.busy.append((key, name))
        return name

    def release(self, keep=()) -> None:
        for key, name in self.busy:
            if name not in keep:
                self.free[key].append(name)
        self.busy = [b for b in self.busy if b[1] in keep]

    def operand(self, e):
        """An operand for `e`: Imm/Reg (domain-independent), or a Tile."""
        if not self.depends(e):
            return self.st.scalar.operand(e)
        if isinstance(e, Var) and e in self.lets:
            return self.lets[e]
        if isinstance(e, Load):
            return self._load(e)
        narrow = self._narrow(e)
        if narrow is not None:
            return narrow
        name = self.temp(e.dtype)
        self.compute(Tile(name), name, e)
        return Tile(name)

    def _narrow(self, e):
        """`e` computed over the loop dims it depends on only (`m[i] * scale` in an
        (i, j) nest is one value per row, as a thread computes it once per row), as a
        temporary broadcast over the others; None when it needs every dim."""
        if any(isinstance(n, Var) and n in self.lets for n in walk(e)):
            return None
        used = sorted({self.dom[n] for n in walk(e) if isinstance(n, Var) and n in self.dom})
        if not used or len(used) == len(self.shape):
            return None
        order = sorted(self.dom, key=self.dom.get)
        inner = VecLowering(self.st, [order[d] for d in used],
                            tuple(self.shape[d] for d in used))
        name = inner.temp(e.dtype)
        inner.compute(Tile(name), name, e)
        self.busy += inner.busy                     # released with this nest's temps
        return Tile(name, None, tuple(used))

    def _load(self, e: Load):
        name = e.buffer.name
        if name not in self.st.local:
            return self._global_load(e)
        if vec_elems.needs_gather(self, e):
            return vec_elems.gather(self, e)
        if vec_elems.is_unit_access(self, e.indices):
            return vec_elems.unit_load(self, e)
        box, dims = self._access(e, name, e.indices)
        if len(set(dims)) != len(dims):
            raise unsupported(e, "a T.Parallel loop variable indexing two dims of one load")
        if self.em.buffers[name].level not in self.st.plan.vec:
            staged, _ = self._reachable((name, box))
            return Tile(staged, None, dims)
        base = self.em.tile(name)
        return Tile(base.buf, base.stage, dims, box)

    def _access(self, node, name: str, indices, constants: bool = False):
        """(static sub-box or None, domain dims) of an on-chip access at indices of the
        form `var`, `var + c` or `var - c` (var a loop variable of the nest); with
        `constants`, a constant index too, a unit extent of no dim (`acc[0] += ...`)."""
        shape = self.em.buffers[name].shape
        box, dims = [], []
        for ix, n in zip(indices, shape):
            var, off = self._var_offset(ix)
            if var is not None:
                ext = self.shape[self.dom[var]]
                dims.append(self.dom[var])
            elif constants and isinstance(ix, Const):
                off, ext = int(ix.value), 1
            else:
                raise unsupported(node, "on-chip indices inside T.Parallel other than "
                                        "`loop variable [+ constant]`")
            if off < 0 or off + ext > n:
                raise unsupported(node, f"T.Parallel access outside `{name}`")
            box.append((off, ext))
        whole = all(o == 0 and x == n for (o, x), n in zip(box, shape))
        return (None if whole else tuple(box)), tuple(dims)

    def _var_offset(self, ix):
        if isinstance(ix, Var) and ix in self.dom:
            return ix, 0
        if isinstance(ix, Binary) and ix.op in ("+", "-"):
            pairs = [(ix.lhs, ix.rhs)] + ([(ix.rhs, ix.lhs)] if ix.op == "+" else [])
            for v, c in pairs:
                if isinstance(v, Var) and v in self.dom and isinstance(c, Const):
                    return v, int(c.value) * (1 if ix.op == "+" else -1)
        return None, 0

    def _reachable(self, view):
        """A copy of `view` the vector unit can read (once per nest)."""
        staged = self.st.staging(view, self.st.plan.fragment, "vec")
        if view not in self.staged:
            self.st.move(staged, view)
            self.staged.add(view)
        return staged

    def _split_index(self, ix):
        """(domain-free part or None, domain var or None) of `scalar + var` / `var`."""
        if isinstance(ix, Var) and ix in self.dom:
            return None, ix
        if not self.depends(ix):
            return ix, None
        if isinstance(ix, Binary) and ix.op == "+":
            for a, b in ((ix.lhs, ix.rhs), (ix.rhs, ix.lhs)):
                if not self.depends(a):
                    base, var = self._split_index(b)
                    if var is not None:
                        return (a if base is None else Binary("+", a, base, ix.dtype)), var
        raise unsupported(ix, "global index inside T.Parallel that is not "
                              "`offset + loop variable`")

    def _global_load(self, e: Load):
        """Stage the box of a global tensor the nest reads (`bias[bx * 128 + j]`, also
        strided: `X[(bx * 64 + i) * 2]`) on chip with one DMA (zero fill outside the
        tensor, as the CPU's guarded loads); a strided box is then gathered."""
        return vec_elems.global_load(self, e)

    def compute(self, dst: Tile, dst_name: str, e) -> None:
        """Emit the instruction computing `e` (domain-dependent) into `dst`."""
        if isinstance(e, Var) and e in self.dom:
            return self._vec(dst_name, "VEC.IOTA", (dst,), dim=self.dom[e])
        if isinstance(e, (Load, Var)):
            return self._vec(dst_name, "VEC.MOV", (dst, self.operand(e)))
        if isinstance(e, Binary):
            args = (dst, self.operand(e.lhs), self.operand(e.rhs))
            return self._vec(dst_name, "VEC." + BIN[e.op], args)
        if isinstance(e, Unary):
            return self._vec(dst_name, "VEC.NEG" if e.op == "-" else "VEC.NOT",
                             (dst, self.operand(e.operand)))
        if isinstance(e, Cast):
            return self._vec(dst_name, "VEC.MOV", (dst, self.operand(e.value)))
        if isinstance(e, BitCast):
            return self._vec(dst_name, "VEC.BITCAST", (dst, self.operand(e.value)),
                             src=e.value.dtype)
        if isinstance(e, Select):
            args = (dst, self.operand(e.cond), self.operand(e.true_value),
                    self.operand(e.false_value))
            return self._vec(dst_name, "VEC.SEL", args)
        if isinstance(e, Call) and e.name in CALLS:
            return self._vec(dst_name, "VEC." + CALLS[e.name],
                             (dst, self.operand(e.args[0])))
        if isinstance(e, Call) and e.name in CALLS2:
            return self._vec(dst_name, "VEC." + CALLS2[e.name],
                             (dst, self.operand(e.args[0]), self.operand(e.args[1])))
        raise unsupported(e, f"`{type(e).__name__}` inside T.Parallel")

    def _vec(self, dst_name, op, args, **attrs):
        reads = tuple(dict.fromkeys(a.buf for a in args[1:] if isinstance(a, Tile)))
        self.em.engine_op("VEC", op, args, reads=reads, writes=(dst_name,),
                          shape=self.shape, **attrs)

    def store(self, s, guard=None) -> None:
        """A Store (or element Atomic) over the domain, under `guard` (None: always)."""
        name = s.buffer.name
        if name not in self.st.local:
            vec_elems.store_global(self, s, guard)
            self.release(keep={t.buf for t in self.lets.values()})
            return
        if isinstance(s, Atomic):           # on chip, blocks do not share: a plain update
            op = {"add": "+", "max": "max", "min": "min"}[s.op]
            s = Store(s.buffer, s.indices, Binary(op, Load(s.buffer, s.indices,
                                                           s.buffer.dtype, span=s.span),
                                                  s.value, s.value.dtype, span=s.span),
                      span=s.span)
        if vec_elems.is_accumulation(self, s):      # o[i] += x[i, j]: a reduction over j
            vec_elems.accumulate(self, s, guard)
            self.release(keep={t.buf for t in self.lets.values()})
            return
        if guard is not None:
            s = Store(s.buffer, s.indices, Select(guard, s.value, Load(
                s.buffer, s.indices, s.buffer.dtype, span=s.span), s.value.dtype,
                span=s.span), span=s.span)
        if vec_elems.is_unit_access(self, s.indices):
            vec_elems.store_local_unit(self, s, s.value)
            self.release(keep={t.buf for t in self.lets.values()})
            return
        box, dims = self._access(s, name, s.indices)
        if sorted(dims) != list(range(len(self.shape))):
            raise unsupported(s, "a store inside T.Parallel must use every loop variable once")
        if self.em.buffers[name].level not in self.st.plan.vec:
            raise unsupported(s, f"element stores to `{name}`, which the vector unit of "
                                 f"{self.st.plan.cfg.name} cannot reach")
        base = self.em.tile(name)
        dst = Tile(base.buf, base.stage, dims, box)
        if not self.depends(s.value):
            self._vec(name, "VEC.MOV", (dst, self.st.scalar.operand(s.value)))
        else:
            self.compute(dst, name, s.value)
        self.release(keep={t.buf for t in self.lets.values()})


def lower_parallel(st, s: For) -> None:
    dom_vars, shape, body = _nest(s)
    v = VecLowering(st, dom_vars, shape)
    stmts = body.stmts if isinstance(body, Seq) else (body,)
    for x, guard in vec_elems.flatten(stmts):
        if isinstance(x, (Store, Atomic)):
            v.store(x, guard)
        elif isinstance(x, Let):
            if v.depends(x.value):
                name = v.temp(x.value.dtype)
                v.compute(Tile(name), name, x.value)
                v.lets[x.var] = Tile(name)               # lives to the nest's end
                v.let_values[x.var] = x.value            # for index bounds
                v.release(keep={t.buf for t in v.lets.values()})
            else:
                st.stmt(x)
        else:
            raise unsupported(x, f"`{type(x).__name__}` inside T.Parallel")
    v.release()
