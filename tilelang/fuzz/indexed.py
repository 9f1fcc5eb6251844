"""Program families of indexed memory and several grids: rows gathered through an index
tensor, a paged cache read through a block table with dynamic slices, two grids in
sequence (the module docstring of generate.py describes every family)."""
from __future__ import annotations

from .draw import FLOATS, Chooser, Scope, block, dim, expr, grid_text, identity, is_float
from .program import Program, S, Tensor, leaf, line


def gather(c: Chooser) -> Program:
    """Rows gathered through an index tensor (`X[I[r], j]`, paged-KV style), inside a
    T.Parallel nest and through a T.copy at a loaded row; indices in range, or hanging
    past the tensor (those elements read 0)."""
    sizes, consts = [], []
    bm, bn = block(c), block(c)
    rows, n = dim(c, "R", bm, sizes, consts), dim(c, "N", bn, sizes, consts)
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
                   (grid_text(n, bn), grid_text(m, bm)), ("bx", "by"), tuple(body),
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
                 line(f"T.fill(acc, {identity(kind, dt)})")]
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
    bm, bn = block(c), block(c)
    m, n = dim(c, "M", bm, sizes, consts), dim(c, "N", bn, sizes, consts)
    dx = c.choice(FLOATS + ("float16", "int32"))
    dy = c.choice([dx, "float32"] if is_float(dx) else [dx, "int64"])
    tensors = [Tensor("X", (m, n), dx), Tensor("Y", (m, n), dy), Tensor("O", (m,), dy)]
    first = [line(f'x = T.alloc_fragment(({bm}, {bn}), "{dy}")', True),
             line(f"T.copy(X[by * {bm}, bx * {bn}], x)")]
    scope = Scope([("x[i, j]", dy, True)], ["i", "j"])
    first.append(S("parallel", f"for i, j in T.Parallel({bm}, {bn}):", ("x[i, j]",),
                   (expr(c, scope, dy, c.int(1, 3)),)))
    first.append(line(f"T.copy(x, Y[by * {bm}, bx * {bn}])"))
    cm, cn = block(c), block(c)
    kind = c.choice(["sum", "max", "min"])
    second = [line(f'y = T.alloc_shared(({cm}, {cn}), "{dy}")', True),
              line(f'acc = T.alloc_fragment(({cm},), "{dy}")', True),
              line(f"T.fill(acc, {identity(kind, dy)})"),
              S("loop", f"for t in range(T.ceildiv({n}, {cn})):", body=(
                  line(f"T.copy(Y[cy * {cm}, t * {cn}], y)"),
                  line(f"T.reduce_{kind}(y, acc, dim=1, clear=False)"))),
              line(f"T.copy(acc, O[cy * {cm}])")]
    return Program("grids", tuple(tensors), tuple(sizes), tuple(consts),
                   (grid_text(n, bn), grid_text(m, bm)), ("bx", "by"), tuple(first),
                   more_grids=(((grid_text(m, cm),), ("cy",), tuple(second)),))

