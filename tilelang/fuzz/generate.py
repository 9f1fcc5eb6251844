"""Well-typed random kernels: the program families the differential tests draw from.

    program = generate(RandomChooser(seed))          # campaigns (campaign.py)
    programs()                                       # a hypothesis strategy (tests)

Every choice goes through a `Chooser`, so the same code draws from a seeded generator
(a campaign: reproducible from its seed, shrunk by shrink.py) or from hypothesis (the
test suite: hypothesis shrinks it). The families mix what kernels are made of:

* `elementwise`: tiles copied in (dtype converted), a `T.Parallel` body of random
  expressions over them (every operator and intrinsic, casts, `T.if_then_else`,
  broadcasts of row vectors, transposed reads), tiles copied out;
* `gemm`: `T.Pipelined` K loop (num_stages 0..3) of tile copies into shared memory and
  `T.gemm` (transposes, float32 / float16 / bfloat16 / float8 / int8 operands), an
  epilogue, a copy out or a split-K tile `T.atomic_add`;
* `reduce`: `T.reduce_*` of every kind along either dim, over column tiles with
  `clear=False`, combined with `T.Parallel` updates;
* `scalar`: serial loops, `T.alloc_var` accumulators, element loads and stores of
  global tensors (CPU only: tcsim has no element stores outside T.Parallel);
* `gather`: rows read through an index tensor (in range, or hanging past the tensor),
  element-wise and by `T.copy` at a loaded row;
* `chain`: block-local temporaries computed one from another in a loop, dying at
  different points, one carried across iterations (what memory_reuse must respect);
* `paged`: a paged cache read block by block through a block table (a `T.copy` region
  starting at a loaded index, FlashMLA-style) with a loop-carried dynamic slice
  (`0:rows`) masking the last block's tail, reduced or stored through a dynamic slice;
  table entries and lengths sometimes past the cache;
* `grids`: two grids in sequence, the second reading what other blocks of the first
  wrote (tiled differently).

Sizes are drawn ragged (not multiples of the blocks), including sizes smaller than one
block, and kept small enough for the interpreter.
"""
from __future__ import annotations

from .program import E, Program, S, Tensor, leaf, line

FLOATS = ("float32", "float16", "bfloat16", "float64")
LOW_FLOATS = ("float16", "bfloat16", "float8_e4m3fn", "float8_e4m3", "float8_e5m2")
INTS = ("int32", "int8", "uint8", "int64")
FAMILIES = ("elementwise", "gemm", "reduce", "scalar", "chain", "gather", "paged", "grids")


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


def programs(families=FAMILIES):
    """A hypothesis strategy of Programs."""
    from hypothesis import strategies as st

    @st.composite
    def build(draw):
        return generate(DrawChooser(draw), families)
    return build()


_WEIGHTS = {"elementwise": 7, "gemm": 6, "reduce": 4, "scalar": 2, "chain": 4, "gather": 3,
            "paged": 4, "grids": 3}


def generate(c: Chooser, families=FAMILIES) -> Program:
    weighted = [f for f in families for _ in range(_WEIGHTS.get(f, 1))]
    family = c.choice(weighted)
    return _FAMILIES[family](c)


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

def _dim(c: Chooser, name: str, block: int, sizes: list, consts: list, dynamic=True):
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


def _block(c: Chooser, hi: int = 16) -> int:
    """A block extent: mostly small, sometimes past a register tile (tails)."""
    if hi > 16 and c.bool(0.25):
        return c.choice([b for b in (17, 20, 24, 31, 32) if b <= hi])
    return c.choice([b for b in (1, 2, 3, 4, 5, 8, 12, 16) if b <= hi])


def _offset(c: Chooser, block: int) -> str:
    """An offset added to a tile's start corner: mostly none, sometimes a step or a
    whole block back (the tile then hangs over the tensor's start: reads give 0)."""
    k = c.int(0, 9)
    if k <= 6:
        return ""
    return c.choice([" + 1", " - 1", f" - {block}", " + 2"])


def _grid_text(extent, block: int) -> str:
    return f"T.ceildiv({extent}, {block})"


# ----------------------------------------------------------------------------- families

def elementwise(c: Chooser) -> Program:
    sizes, consts = [], []
    bm, bn = _block(c), _block(c)
    m, n = _dim(c, "M", bm, sizes, consts), _dim(c, "N", bn, sizes, consts)
    ints = c.bool(0.25)
    pool = INTS if ints else FLOATS + LOW_FLOATS
    dx, dy, dz = (c.choice(pool) for _ in range(3))
    tx = c.choice([dx, "float32"] if not ints else [dx, "int32"])
    ty = c.choice([dy, tx])
    tz = c.choice([dz, tx])
    square = bm == bn and c.bool(0.3)
    row_vec = c.bool(0.3)
    tensors = [Tensor("X", (m, n), dx),
               Tensor("Y", (n,) if row_vec else (m, n), dy),
               Tensor("Z", (m, n), dz)]
    sx, sy, sz = (c.choice(["fragment", "shared", "fragment"]) for _ in range(3))
    ox, oy = _offset(c, bm), _offset(c, bn)
    body = [line(f'xa = T.alloc_{sx}(({bm}, {bn}), "{tx}")', True),
            line(f'yb = T.alloc_{sy}(({bn},), "{ty}")' if row_vec else
                 f'yb = T.alloc_{sy}(({bm}, {bn}), "{ty}")', True),
            line(f'zc = T.alloc_{sz}(({bm}, {bn}), "{tz}")', True)]
    if bm > 1 and bn > 1 and c.bool(0.2):     # a partial tile: the rest stays as filled
        h, w = c.int(1, bm - 1), c.int(1, bn - 1)
        r0, c0 = c.int(0, bm - h), c.int(0, bn - w)
        body += [line(f"T.fill(xa, {const(c, tx).render()})"),
                 line(f"T.copy(X[by * {bm}{ox}, bx * {bn}{oy}], xa[{r0}:{r0 + h}, "
                      f"{c0}:{c0 + w}])")]
    else:
        body.append(line(f"T.copy(X[by * {bm}{ox}, bx * {bn}{oy}], xa)"))
    body.append(line(f"T.copy(Y[bx * {bn}{oy}], yb)" if row_vec else
                     f"T.copy(Y[by * {bm}{ox}, bx * {bn}{oy}], yb)"))
    leaves = [("xa[i, j]", tx, True), ("yb[j]" if row_vec else "yb[i, j]", ty, True)]
    if square:
        leaves.append(("xa[j, i]", tx, True))
    if c.bool(0.3):                       # a first update of xa, read by the second body
        # (not xa[j, i]: another iteration's element of the tile being written)
        scope = Scope([lf for lf in leaves if lf[0] != "xa[j, i]"], ["i", "j"])
        body.append(S("parallel", f"for i, j in T.Parallel({bm}, {bn}):", ("xa[i, j]",),
                      (expr(c, scope, tx, c.int(1, 3)),)))
        leaves = [(t, d, False) if t.startswith("xa") else (t, d, e) for t, d, e in leaves]
    if c.bool(0.25):                      # a global element read inside the nest
        leaves.append((f"X[by * {bm} + i, bx * {bn} + j]", dx, True))
    scope = Scope(leaves, ["i", "j"])
    targets, exprs = [], []
    for n_let in range(c.int(0, 2)):      # lets: per-iteration values the store reads
        dt = c.choice([tz, tx, "float32" if not ints else "int32"])
        targets.append(f"v{n_let}")
        exprs.append(expr(c, scope, dt, c.int(1, 3)))
        scope.leaves.append((f"v{n_let}", dt, False))
    targets.append("zc[i, j]")
    exprs.append(expr(c, scope, tz, c.int(1, 4)))
    body.append(S("parallel", f"for i, j in T.Parallel({bm}, {bn}):", tuple(targets),
                  tuple(exprs)))
    if c.bool(0.15):            # tile atomics: each block owns its tile, the op decides
        body.append(line(f"T.atomic_{c.choice(['add', 'max', 'min'])}("
                         f"Z[by * {bm}, bx * {bn}], zc)"))
    else:
        body.append(line(f"T.copy(zc, Z[by * {bm}, bx * {bn}])"))
    return Program("elementwise", tuple(tensors), tuple(sizes), tuple(consts),
                   (_grid_text(n, bn), _grid_text(m, bm)), ("bx", "by"), tuple(body))


def gemm(c: Chooser) -> Program:
    sizes, consts = [], []
    bm, bn, bk = _block(c, 32), _block(c, 32), _block(c, 12)
    m, n = _dim(c, "M", bm, sizes, consts), _dim(c, "N", bn, sizes, consts)
    k = _dim(c, "K", bk, sizes, consts)
    din = c.choice(["float32", "float16", "bfloat16", "int8", "float32", "float8_e4m3fn",
                    "float64"])
    acc = "int32" if din == "int8" else ("float64" if din == "float64" else "float32")
    dout = acc if din == "int8" else c.choice(["float32", "float16", "float32"])
    ta, tb = c.bool(0.3), c.bool(0.3)
    stages = c.int(0, 3)
    split = c.bool(0.2) and dout == acc
    a_shape = (k, m) if ta else (m, k)
    b_shape = (n, k) if tb else (k, n)
    tensors = [Tensor("A", a_shape, din), Tensor("B", b_shape, din),
               Tensor("C", (m, n), dout)]
    bias = c.bool(0.3)
    if bias:
        tensors.append(Tensor("D", (n,), acc))
    body = [line(f'A_s = T.alloc_shared({(bk, bm) if ta else (bm, bk)}, "{din}")', True),
            line(f'B_s = T.alloc_shared({(bn, bk) if tb else (bk, bn)}, "{din}")', True),
            line(f'C_f = T.alloc_fragment(({bm}, {bn}), "{acc}")', True)]
    clear_in_gemm = c.bool(0.2)
    if not clear_in_gemm:
        body.append(line("T.clear(C_f)"))
    kz = "bz * tiles + ko" if split else "ko"
    loop_body = [
        line(f"T.copy(A[{kz} * {bk}, by * {bm}], A_s)" if ta else
             f"T.copy(A[by * {bm}, ({kz}) * {bk}], A_s)"),
        line(f"T.copy(B[bx * {bn}, ({kz}) * {bk}], B_s)" if tb else
             f"T.copy(B[({kz}) * {bk}, bx * {bn}], B_s)"),
        line(f"T.gemm(A_s, B_s, C_f, transpose_A={ta}, transpose_B={tb})")]
    if split:
        splits = c.int(2, 3)
        body.append(line(f"tiles = T.ceildiv({k}, {bk * splits})"))
        trips = "tiles"
    else:
        trips = f"T.ceildiv({k}, {bk})"
    loop_kind = c.choice([f"T.Pipelined({trips}, num_stages={stages})", f"range({trips})",
                          f"T.serial({trips})"])
    if clear_in_gemm:        # the first K step clears: written with an if on the step
        loop_body[2] = S("loop", "if ko == 0:", body=(
            line(f"T.gemm(A_s, B_s, C_f, transpose_A={ta}, transpose_B={tb}, "
                 f"clear_accum=True)"),))
        loop_body.append(S("loop", "else:", body=(
            line(f"T.gemm(A_s, B_s, C_f, transpose_A={ta}, transpose_B={tb})"),)))
        body.append(line("T.clear(C_f)"))
    body.append(S("loop", f"for ko in {loop_kind}:", body=tuple(loop_body)))
    if c.bool(0.5) or bias:
        leaves = [("C_f[i, j]", acc, False)]
        if bias:
            leaves.append((f"D[bx * {bn} + j]", acc, True))
        scope = Scope(leaves, ["i", "j"])
        body.append(S("parallel", f"for i, j in T.Parallel({bm}, {bn}):", ("C_f[i, j]",),
                      (expr(c, scope, acc, c.int(1, 2)),)))
    if not split and c.bool(0.25):      # the epilogue goes through shared memory
        body.append(line(f'C_s = T.alloc_shared(({bm}, {bn}), "{dout}")', True))
        body.append(line("T.copy(C_f, C_s)"))
        body.append(line(f"T.copy(C_s, C[by * {bm}, bx * {bn}])"))
    elif split:
        body.append(line(f"T.atomic_add(C[by * {bm}, bx * {bn}], C_f)"))
    else:
        body.append(line(f"T.copy(C_f, C[by * {bm}, bx * {bn}])"))
    if split:
        grid = (_grid_text(n, bn), _grid_text(m, bm), str(splits))
        bvars = ("bx", "by", "bz")
    else:
        grid, bvars = (_grid_text(n, bn), _grid_text(m, bm)), ("bx", "by")
    return Program("gemm", tuple(tensors), tuple(sizes), tuple(consts), grid, bvars,
                   tuple(body))


_REDUCE_KINDS = ("sum", "max", "min", "abssum", "absmax")


def reduce(c: Chooser) -> Program:
    sizes, consts = [], []
    bm, bn = _block(c), _block(c)
    m, n = _dim(c, "M", bm, sizes, consts), _dim(c, "N", bn, sizes, consts)
    dx = c.choice(FLOATS + ("float16", "int32", "int8"))
    ints = not is_float(dx)
    dacc = c.choice(["int32", "int64"] if ints else ["float32", "float64", dx])
    kind = c.choice(_REDUCE_KINDS)
    along_rows = c.bool()            # reduce dim 1 (a value per row) or dim 0
    tensors = [Tensor("X", (m, n), dx), Tensor("O", (m,) if along_rows else (n,), dacc)]
    outer, inner = (bm, bn) if along_rows else (bn, bm)
    body = [line(f'x = T.alloc_fragment(({bm}, {bn}), "{dacc}")', True),
            line(f'acc = T.alloc_fragment(({outer},), "{dacc}")', True),
            line(f'part = T.alloc_fragment(({outer},), "{dacc}")', True)]
    dim = 1 if along_rows else 0
    tiles = f"T.ceildiv({n if along_rows else m}, {inner})"
    start = (f"by * {bm}, t * {bn}" if along_rows else f"t * {bm}, by * {bn}")
    loop = [line(f"T.copy(X[{start}], x)")]
    if c.bool(0.4):
        scope = Scope([("x[i, j]", dacc, True)], ["i", "j"])
        loop.append(S("parallel", f"for i, j in T.Parallel({bm}, {bn}):", ("x[i, j]",),
                      (expr(c, scope, dacc, c.int(1, 2)),)))
    merge = c.choice(["clear_false", "combine"]) if kind in ("sum", "max", "min") else \
        "clear_false"
    if merge == "clear_false":
        body.append(line(f"T.fill(acc, {_extreme(kind, dacc)})"))
        loop.append(line(f"T.reduce_{kind}(x, acc, dim={dim}, clear=False)"))
    else:
        body.append(line(f"T.fill(acc, {_identity(kind, dacc)})"))
        loop.append(line(f"T.reduce_{kind}(x, part, dim={dim})"))
        op = {"sum": "+", "max": "max", "min": "min"}[kind]
        combined = E("bin", op, dacc, (leaf("acc[i]", dacc), leaf("part[i]", dacc)))
        loop.append(S("parallel", f"for i in T.Parallel({outer}):", ("acc[i]",), (combined,)))
    body.append(S("loop", f"for t in range({tiles}):", body=tuple(loop)))
    body.append(line(f"T.copy(acc, O[by * {outer}])"))
    grid = (_grid_text(m if along_rows else n, outer),)
    return Program("reduce", tuple(tensors), tuple(sizes), tuple(consts), grid, ("by",),
                   tuple(body))


def _identity(kind: str, dtype: str) -> str:
    if kind == "sum":
        return "0"
    return _extreme(kind, dtype)


def _extreme(kind: str, dtype: str) -> str:
    if kind in ("sum", "abssum", "absmax"):
        return "0"
    if is_float(dtype):
        return f'{"-" if kind == "max" else ""}T.infinity("{dtype}")'
    bits = {"int8": 8, "int32": 32, "int64": 64, "uint8": 8}[dtype]
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return str(lo if kind == "max" else hi)


def scalar(c: Chooser) -> Program:
    """Serial loops and element accesses of global tensors (the CPU target's)."""
    sizes, consts = [], []
    bn = _block(c)
    n = _dim(c, "N", bn, sizes, consts)
    dt = c.choice(["float32", "float64", "int32", "float16", "int64"])
    tensors = [Tensor("X", (n,), dt), Tensor("O", (n,), dt)]
    scope = Scope([("X[bx * %d + t]" % bn, dt, True), ("s", dt, False)], ["t"])
    step = expr(c, scope, dt, c.int(1, 2))
    body = [line(f's = T.alloc_var("{dt}", init={"0.0" if is_float(dt) else "0"})', True),
            S("loop", f"for t in range({bn}):", body=(
                S("loop", f"if bx * {bn} + t < {n}:", body=(
                    S("assign", "", ("s",), (step,)),
                    line(f"O[bx * {bn} + t] = s"))),))]
    return Program("scalar", tuple(tensors), tuple(sizes), tuple(consts),
                   (_grid_text(n, bn),), ("bx",), tuple(body), targets=("cpu",))


def chain(c: Chooser) -> Program:
    """A chain of block-local temporaries, each computed from earlier ones, inside a
    loop over column tiles: buffers die at different points (memory_reuse shares their
    bytes), one carries a value across iterations (read before it is written again)."""
    sizes, consts = [], []
    bm, bn = _block(c), _block(c)
    m, n = _dim(c, "M", bm, sizes, consts), _dim(c, "N", bn, sizes, consts)
    dx = c.choice(FLOATS + ("float16",))
    tensors = [Tensor("X", (m, n), dx), Tensor("O", (m, bn), "float32")]
    dts = [c.choice(["float32", "float32", "float16", "bfloat16", "float64"])
           for _ in range(c.int(2, 4))]
    body = [line(f'x = T.alloc_fragment(({bm}, {bn}), "{dx}")', True),
            line(f'carry = T.alloc_fragment(({bm}, {bn}), "float32")', True)]
    for k, dt in enumerate(dts):
        scope_name = c.choice(["fragment", "shared", "local"])
        body.append(line(f't{k} = T.alloc_{scope_name}(({bm}, {bn}), "{dt}")', True))
    body.append(line("T.clear(carry)"))
    loop = [line(f"T.copy(X[by * {bm}, t * {bn}], x)")]
    readable = [("x[i, j]", dx, True), ("carry[i, j]", "float32", False)]
    for k, dt in enumerate(dts):
        scope = Scope(list(readable), ["i", "j"])
        loop.append(S("parallel", f"for i, j in T.Parallel({bm}, {bn}):", (f"t{k}[i, j]",),
                      (expr(c, scope, dt, c.int(1, 3)),)))
        readable.append((f"t{k}[i, j]", dt, False))
        if c.bool(0.4) and len(readable) > 3:   # an older temporary is dead from here on
            readable.pop(2)
    scope = Scope(readable, ["i", "j"])
    update = E("bin", "+", "float32", (leaf("carry[i, j]", "float32"),
                                       expr(c, scope, "float32", c.int(1, 2))))
    loop.append(S("parallel", f"for i, j in T.Parallel({bm}, {bn}):", ("carry[i, j]",),
                  (update,)))
    body.append(S("loop", f"for t in range(T.ceildiv({n}, {bn})):", body=tuple(loop)))
    body.append(line(f"T.copy(carry, O[by * {bm}, 0])"))
    return Program("chain", tuple(tensors), tuple(sizes), tuple(consts),
                   (_grid_text(m, bm),), ("by",), tuple(body))


def gather(c: Chooser) -> Program:
    """Rows gathered through an index tensor (`X[I[r], j]`, paged-KV style), inside a
    T.Parallel nest and through a T.copy at a loaded row; indices in range, or hanging
    past the tensor (those elements read 0)."""
    sizes, consts = [], []
    bm, bn = _block(c), _block(c)
    rows, n = _dim(c, "R", bm, sizes, consts), _dim(c, "N", bn, sizes, consts)
    m = c.int(1, 3 * bm)
    dx = c.choice(FLOATS + ("float16", "int32"))
    hi = rows if isinstance(rows, int) else dict(sizes)["R"]
    span = c.choice([(0, max(hi, 1)), (-2, max(hi, 1) + 2)])
    tensors = [Tensor("X", (rows, n), dx), Tensor("I", (m,), "int32"),
               Tensor("Z", (m, n), dx)]
    body = [line(f'g = T.alloc_fragment(({bm}, {bn}), "{dx}")', True)]
    # (tcsim takes neither a global load at indices of the nest nor a T.copy into a row
    # at a computed offset: its gathers are the `paged` family's)
    if c.bool():
        body.append(S("parallel", f"for i, j in T.Parallel({bm}, {bn}):", ("g[i, j]",), (
            leaf(f"X[I[T.min(by * {bm} + i, {m - 1})], bx * {bn} + j]", dx),)))
    else:
        body.append(line(f"T.clear(g)"))
        body.append(S("loop", f"for r in range({bm}):", body=(
            S("loop", f"if by * {bm} + r < {m}:", body=(
                line(f"T.copy(X[I[by * {bm} + r], bx * {bn}], g[r, 0:{bn}])"),)),)))
    scope = Scope([("g[i, j]", dx, False)], ["i", "j"])
    body.append(S("parallel", f"for i, j in T.Parallel({bm}, {bn}):", ("g[i, j]",),
                  (expr(c, scope, dx, c.int(0, 2)),)))
    body.append(line(f"T.copy(g, Z[by * {bm}, bx * {bn}])"))
    return Program("gather", tuple(tensors), tuple(sizes), tuple(consts),
                   (_grid_text(n, bn), _grid_text(m, bm)), ("bx", "by"), tuple(body),
                   targets=("cpu",), ranges=(("I",) + span,))   # tcsim: `paged` gathers


def paged(c: Chooser) -> Program:
    """A paged cache KV (NB blocks of BLK rows) read through a block table P, the first
    L[b] rows of request b: per block, `T.copy(KV[P[b, i], 0:rows, 0:D], tile)` with
    rows = L[b] - i * BLK loop-carried (the rows past it read as 0), then a reduction
    into an accumulator or a store through a dynamic slice of the output (the rows past
    it not written). Table entries and lengths are sometimes past the cache / table."""
    sizes, consts = [], []
    blk, d = c.choice([2, 3, 4, 8]), c.choice([1, 3, 4, 8, 16])   # BLK 1: a unit dim, no slice
    nb, b, maxb = c.int(1, 6), c.int(1, 4), c.int(1, 4)
    for name, value in (("NB", nb), ("B", b), ("MAXB", maxb)):
        sizes.append((name, value))
    dx = c.choice(FLOATS + ("float16", "int32"))
    dt = c.choice([dx, "float32"] if is_float(dx) else [dx, "int64"])
    table = c.choice([(0, nb), (0, nb), (-1, nb + 1)])
    lens = c.choice([(0, maxb * blk + 1), (0, maxb * blk + blk + 2)])
    store = c.bool(0.4)
    if store:
        sizes.append(("R", maxb * blk))         # the output's rows: MAXB blocks of BLK
    out = Tensor("Y", ("B", "R", d), dt) if store else Tensor("O", ("B", d), dt)
    tensors = [Tensor("KV", ("NB", blk, d), dx), Tensor("P", ("B", "MAXB"), "int32"),
               Tensor("L", ("B",), "int32"), out]
    scope_name = c.choice(["shared", "fragment"])
    body = [line(f'kv = T.alloc_{scope_name}(({blk}, {d}), "{dt}")', True)]
    loop = [line("rows = L[bx] - i * " + str(blk)),
            line(f"T.copy(KV[P[bx, i], 0:rows, 0:{d}], kv)")]
    if c.bool(0.4):
        scope = Scope([("kv[r, j]", dt, False)], ["r", "j"])
        loop.append(S("parallel", f"for r, j in T.Parallel({blk}, {d}):", ("kv[r, j]",),
                      (expr(c, scope, dt, c.int(1, 2)),)))
    if store:
        loop.append(line(f"T.copy(kv, Y[bx, i * {blk}:i * {blk} + rows, 0:{d}])"))
    else:
        kind = c.choice(["sum", "max", "min"])
        body += [line(f'acc = T.alloc_fragment(({d},), "{dt}")', True),
                 line(f"T.fill(acc, {_identity(kind, dt)})")]
        loop.append(line(f"T.reduce_{kind}(kv, acc, dim=0, clear=False)"))
    trips = f"T.ceildiv(L[bx], {blk})"
    header = c.choice([f"range({trips})", f"T.Pipelined({trips}, num_stages={c.int(0, 2)})"])
    body.append(S("loop", f"for i in {header}:", body=tuple(loop)))
    if not store:
        body.append(line(f"T.copy(acc, O[bx, 0:{d}])"))
    return Program("paged", tuple(tensors), tuple(sizes), tuple(consts), ("B",), ("bx",),
                   tuple(body), ranges=(("P",) + table, ("L",) + lens))


def grids(c: Chooser) -> Program:
    """Two grids: the first writes Y = f(X) tile by tile, the second reads Y in tiles of
    another shape (elements other blocks of the first grid wrote) and reduces its rows."""
    sizes, consts = [], []
    bm, bn = _block(c), _block(c)
    m, n = _dim(c, "M", bm, sizes, consts), _dim(c, "N", bn, sizes, consts)
    dx = c.choice(FLOATS + ("float16", "int32"))
    dy = c.choice([dx, "float32"] if is_float(dx) else [dx, "int64"])
    tensors = [Tensor("X", (m, n), dx), Tensor("Y", (m, n), dy), Tensor("O", (m,), dy)]
    first = [line(f'x = T.alloc_fragment(({bm}, {bn}), "{dy}")', True),
             line(f"T.copy(X[by * {bm}, bx * {bn}], x)")]
    scope = Scope([("x[i, j]", dy, True)], ["i", "j"])
    first.append(S("parallel", f"for i, j in T.Parallel({bm}, {bn}):", ("x[i, j]",),
                   (expr(c, scope, dy, c.int(1, 3)),)))
    first.append(line(f"T.copy(x, Y[by * {bm}, bx * {bn}])"))
    cm, cn = _block(c), _block(c)
    kind = c.choice(["sum", "max", "min"])
    second = [line(f'y = T.alloc_shared(({cm}, {cn}), "{dy}")', True),
              line(f'acc = T.alloc_fragment(({cm},), "{dy}")', True),
              line(f"T.fill(acc, {_identity(kind, dy)})"),
              S("loop", f"for t in range(T.ceildiv({n}, {cn})):", body=(
                  line(f"T.copy(Y[cy * {cm}, t * {cn}], y)"),
                  line(f"T.reduce_{kind}(y, acc, dim=1, clear=False)"))),
              line(f"T.copy(acc, O[cy * {cm}])")]
    return Program("grids", tuple(tensors), tuple(sizes), tuple(consts),
                   (_grid_text(n, bn), _grid_text(m, bm)), ("bx", "by"), tuple(first),
                   more_grids=(((_grid_text(m, cm),), ("cy",), tuple(second)),))


_FAMILIES = {"elementwise": elementwise, "gather": gather, "gemm": gemm, "reduce": reduce,
             "scalar": scalar, "chain": chain, "paged": paged, "grids": grids}
