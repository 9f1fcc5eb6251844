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

from .draw import (FLOATS, INTS, LOW_FLOATS, Chooser, DrawChooser, RandomChooser, Scope,
                   block, const, dim, expr, extreme, grid_text, identity, is_float, offset)
from .indexed import gather, grids, paged
from .program import E, Program, S, Tensor, leaf, line

FAMILIES = ("elementwise", "gemm", "reduce", "scalar", "chain", "gather", "paged", "grids")


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


# ----------------------------------------------------------------------------- families

def elementwise(c: Chooser) -> Program:
    sizes, consts = [], []
    bm, bn = block(c), block(c)
    m, n = dim(c, "M", bm, sizes, consts), dim(c, "N", bn, sizes, consts)
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
    ox, oy = offset(c, bm), offset(c, bn)
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
                   (grid_text(n, bn), grid_text(m, bm)), ("bx", "by"), tuple(body))


def gemm(c: Chooser) -> Program:
    sizes, consts = [], []
    bm, bn, bk = block(c, 32), block(c, 32), block(c, 12)
    m, n = dim(c, "M", bm, sizes, consts), dim(c, "N", bn, sizes, consts)
    k = dim(c, "K", bk, sizes, consts)
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
        grid = (grid_text(n, bn), grid_text(m, bm), str(splits))
        bvars = ("bx", "by", "bz")
    else:
        grid, bvars = (grid_text(n, bn), grid_text(m, bm)), ("bx", "by")
    return Program("gemm", tuple(tensors), tuple(sizes), tuple(consts), grid, bvars,
                   tuple(body))


_REDUCE_KINDS = ("sum", "max", "min", "abssum", "absmax")


def reduce(c: Chooser) -> Program:
    sizes, consts = [], []
    bm, bn = block(c), block(c)
    m, n = dim(c, "M", bm, sizes, consts), dim(c, "N", bn, sizes, consts)
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
    axis = 1 if along_rows else 0
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
        body.append(line(f"T.fill(acc, {extreme(kind, dacc)})"))
        loop.append(line(f"T.reduce_{kind}(x, acc, dim={axis}, clear=False)"))
    else:
        body.append(line(f"T.fill(acc, {identity(kind, dacc)})"))
        loop.append(line(f"T.reduce_{kind}(x, part, dim={axis})"))
        op = {"sum": "+", "max": "max", "min": "min"}[kind]
        combined = E("bin", op, dacc, (leaf("acc[i]", dacc), leaf("part[i]", dacc)))
        loop.append(S("parallel", f"for i in T.Parallel({outer}):", ("acc[i]",), (combined,)))
    body.append(S("loop", f"for t in range({tiles}):", body=tuple(loop)))
    body.append(line(f"T.copy(acc, O[by * {outer}])"))
    grid = (grid_text(m if along_rows else n, outer),)
    return Program("reduce", tuple(tensors), tuple(sizes), tuple(consts), grid, ("by",),
                   tuple(body))


def scalar(c: Chooser) -> Program:
    """Serial loops and element accesses of global tensors (the CPU target's)."""
    sizes, consts = [], []
    bn = block(c)
    n = dim(c, "N", bn, sizes, consts)
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
                   (grid_text(n, bn),), ("bx",), tuple(body), targets=("cpu",))


def chain(c: Chooser) -> Program:
    """A chain of block-local temporaries, each computed from earlier ones, inside a
    loop over column tiles: buffers die at different points (memory_reuse shares their
    bytes), one carries a value across iterations (read before it is written again)."""
    sizes, consts = [], []
    bm, bn = block(c), block(c)
    m, n = dim(c, "M", bm, sizes, consts), dim(c, "N", bn, sizes, consts)
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
                   (grid_text(m, bm),), ("by",), tuple(body))


_FAMILIES = {"elementwise": elementwise, "gather": gather, "gemm": gemm, "reduce": reduce,
             "scalar": scalar, "chain": chain, "paged": paged, "grids": grids}

__all__ = ["FAMILIES", "RandomChooser", "DrawChooser", "programs", "generate"]
