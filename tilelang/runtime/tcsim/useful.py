"""Useful work: how much of each MMA multiplies data rather than padding.

A tile op works on whole tiles, but a tile loaded from the edge of a tensor holds zeros
past the edge (a decode step's 64-row query tile may hold one real query). Each block
slot keeps, per buffer stage, the *valid extents* of its contents: the in-bounds part of
the box a DMA loaded, carried through the vector unit (an elementwise result is valid
where all its tile operands are; a reduction drops the reduced dim) and through MMAs (an
accumulator is valid over the rows of A and columns of B that were valid). An MMA's
useful FLOPs are 2 * m * n * k over those extents; the report's TFLOPS and utilisation
use them, and the issued (padded) FLOPs are reported beside them.

Extents are a tuple per buffer dim; a missing entry means the whole buffer is valid (a
fill, an iota, a write to a static sub-box: counted as useful, the conservative side).
"""
from __future__ import annotations


def on_load(valid: dict, tile, stage: int, starts, box, shape) -> None:
    """A DMA.LD into `tile`: its valid extents are the in-bounds part of the box."""
    key = (tile.buf, stage)
    counts = []
    full = True
    for s, e, n in zip(starts, box, shape):
        c = min(s + e, n) - max(s, 0)
        c = c if c > 0 else 0
        counts.append(c)
        full = full and c == e
    if full or tile.slices is not None:
        valid.pop(key, None)
        return
    kept = [c for c, e in zip(counts, box) if e != 1]
    if len(kept) < len(counts) and any(c == 0 for c, e in zip(counts, box) if e == 1):
        kept = [0] * len(kept)                         # a dropped dim is out of bounds
    dims = [i for i, n in enumerate(tile.shape) if n != 1]
    if len(dims) != len(kept):
        valid.pop(key, None)                           # a reshape we do not follow
        return
    ext = [1] * len(tile.shape)
    for i, c in zip(dims, kept):
        ext[i] = c
    if any(c == 0 for c in kept):
        ext = [0] * len(tile.shape)
    valid[key] = tuple(ext)


def on_mma(valid: dict, d, stages, ta: bool, tb: bool) -> float:
    """Useful FLOPs of an MMA, and the accumulator's valid extents after it."""
    c, a, b = d.tiles
    sc, sa, sb = stages
    va = valid.get((a.buf, sa)) if a.slices is None else None
    vb = valid.get((b.buf, sb)) if b.slices is None else None
    m, k = (a.shape[1], a.shape[0]) if ta else (a.shape[0], a.shape[1])
    kb, n = (b.shape[1], b.shape[0]) if tb else (b.shape[0], b.shape[1])
    if va is not None:
        m, k = (va[1], va[0]) if ta else (va[0], va[1])
    if vb is not None:
        kb, n = (vb[1], vb[0]) if tb else (vb[0], vb[1])
    k = min(k, kb)
    key = (c.buf, sc)
    if c.slices is None and key in valid:
        old = valid[key]
        grown = (max(old[0], m), max(old[1], n))
        if grown == tuple(c.shape):
            del valid[key]
        else:
            valid[key] = grown
    return 2.0 * m * n * k


def on_zero(valid: dict, tile, stage: int) -> None:
    """ACC.ZERO: nothing accumulated yet."""
    if tile.slices is None:
        valid[(tile.buf, stage)] = (0,) * len(tile.shape)


def vec_keys(tiles, stages) -> tuple:
    """(the destination's key in `valid`, the keys of the operands `on_vec` reads) of a
    vector instruction whose stages are fixed."""
    keys = [(t.buf, s) for t, s in zip(tiles, stages)]
    return keys[0], tuple(k for k, t in zip(keys[1:], tiles[1:]) if t.slices is None)


def on_vec(valid: dict, d, stages) -> None:
    """A vector-unit instruction: the destination is valid where its tile operands are."""
    keys = d.valid_keys
    if keys is not None:
        # with no operand's extents known, every case below ends the destination's
        # (whole buffer valid): the usual case, decided without building keys
        for k in keys[1]:
            if k in valid:
                break
        else:
            valid.pop(keys[0], None)
            return
    dst = d.tiles[0]
    key = (dst.buf, stages[0])
    if dst.slices is not None:
        valid.pop(key, None)
        return
    op = d.op
    if op.startswith("VEC.RED."):
        src = valid.get((d.tiles[1].buf, stages[1]))
        dim = d.attrs["dim"]
        if src is None or d.tiles[1].slices is not None:
            valid.pop(key, None)
            return
        kept = src[:dim] + src[dim + 1:]
        _set(valid, key, kept if len(kept) == len(dst.shape) else None, dst.shape)
        return
    if op == "VEC.IOTA" or len(d.tiles) == 1:
        valid.pop(key, None)
        return
    domain = d.attrs.get("shape") or None
    if domain is None:                                  # COPY, ACC.READ: same layout
        src = d.tiles[1]
        v = valid.get((src.buf, stages[1])) if src.slices is None else None
        ok = v is not None and len(v) == len(dst.shape)
        _set(valid, key, v if ok else None, dst.shape)
        return
    dom = list(domain)
    seen = False
    for t, s in zip(d.tiles[1:], stages[1:]):
        v = valid.get((t.buf, s)) if t.slices is None else None
        if v is None:
            continue
        if t.dims is None and tuple(t.shape) != tuple(domain):
            valid.pop(key, None)                        # a reshaping COPY: not followed
            return
        seen = True
        dims = t.dims if t.dims is not None else tuple(range(len(v)))
        for i, dd in enumerate(dims):
            if v[i] < dom[dd]:
                dom[dd] = v[i]
    if not seen:
        valid.pop(key, None)
        return
    dims = dst.dims if dst.dims is not None else tuple(range(len(dst.shape)))
    _set(valid, key, tuple(dom[dd] for dd in dims), dst.shape)


def _set(valid: dict, key, ext, shape) -> None:
    if ext is None or tuple(ext) == tuple(shape):
        valid.pop(key, None)
    else:
        valid[key] = tuple(ext)
