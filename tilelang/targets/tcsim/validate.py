"""Static checks of a program against a machine: names, levels, shapes, nesting.

Returns a list of problems (empty when the program is well-formed for the machine), so
the loader can report all of them at once.
"""
from __future__ import annotations

from .config import MachineConfig
from .isa import Glob, Program, Reg, SemRef, Tile, Wait


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def validate(p: Program, cfg: MachineConfig) -> list[str]:
    bufs = {b.name: b for b in p.buffers}
    sems = dict(p.sems)
    tensors = {x.name: x for x in p.params if x.kind != "scalar"}
    levels = {lv.name for lv in cfg.levels}
    problems: list[str] = declaration_problems(p)
    for b in p.buffers:
        if b.level not in levels:
            problems.append(f"buffer {b.name}: no level {b.level} on {cfg.name}")
    if problems:
        return problems
    depth = []
    for ins in p.code:
        where = f"{ins.op} (line {ins.line})" if ins.line else ins.op
        problems += [f"{where}: {m}" for m in _check_names(ins, bufs, sems, tensors, p)]
        if ins.op == "BITCAST":
            problems += [f"{where}: {m}" for m in _bitcast_problems(ins)]
        if ins.op in ("LOOP", "IF"):
            depth.append(ins.op)
        elif ins.op == "ENDLOOP" and (not depth or depth.pop() != "LOOP"):
            problems.append(f"{where}: ENDLOOP without LOOP")
        elif ins.op == "ENDIF" and (not depth or depth.pop() != "IF"):
            problems.append(f"{where}: ENDIF without IF")
        elif ins.op == "BREAKZ" and "LOOP" not in depth:
            problems.append(f"{where}: BREAKZ outside LOOP")
        elif ins.op == "ELSE" and (not depth or depth[-1] != "IF"):
            problems.append(f"{where}: ELSE outside IF")
        if not any(problems):
            problems += [f"{where}: {m}" for m in _check_levels(ins, bufs, tensors, cfg)]
    if depth:
        problems.append(f"unclosed {depth[-1]}")
    return problems


def _bitcast_problems(ins) -> list[str]:
    """A scalar BITCAST names two known dtypes of one width (its registers carry none)."""
    from ...dtypes import DTYPES, bits
    src, dst = ins.attr("src"), ins.attr("dst")
    if src not in DTYPES or dst not in DTYPES:
        return [f"needs src= and dst= dtypes, got src={src} dst={dst}"]
    if "bool" in (src, dst) or bits(src) != bits(dst):
        return [f"{src} and {dst} are not two dtypes of one width"]
    return []


def declaration_problems(p: Program) -> list[str]:
    """Dtypes, shapes and counts of the declarations."""
    from ...dtypes import DTYPES
    out = []
    symbols = {n for n, _ in p.symbols}
    for b in p.buffers:
        if b.dtype not in DTYPES:
            out.append(f"buffer {b.name}: unknown dtype {b.dtype}")
        if not b.shape or not all(isinstance(d, int) and d > 0 for d in b.shape):
            out.append(f"buffer {b.name}: shape must be positive integers")
        if b.stages < 1 or (b.offset is not None and b.offset < 0):
            out.append(f"buffer {b.name}: bad stages or offset")
    for prm in p.params:
        if prm.dtype not in DTYPES:
            out.append(f"parameter {prm.name}: unknown dtype {prm.dtype}")
        for d in prm.shape:
            if not (isinstance(d, int) and d >= 0) and d not in symbols and \
                    not _size_text(d, symbols):
                out.append(f"parameter {prm.name}: dimension {d} is not a declared symbol")
        if prm.kind == "view" and prm.source not in {x.name for x in p.params}:
            out.append(f"view {prm.name}: no tensor {prm.source}")
        if prm.kind == "scalar" and (prm.reg is None or not 0 <= prm.reg < p.num_regs):
            out.append(f"parameter {prm.name}: needs a register")
    for name, reg in p.symbols:
        if not 0 <= reg < p.num_regs:
            out.append(f"symbol {name}: register r{reg} out of range")
    if len(p.block_regs) > 3 or not all(0 <= r < p.num_regs for r in p.block_regs):
        out.append("block registers out of range")
    if any(n < 1 for _, n in p.sems):
        out.append("semaphore arrays need at least one semaphore")
    return out


def _scalars(ins):
    for a in ins.args:
        yield a
        if isinstance(a, Tile):
            yield a.stage
        if isinstance(a, Glob):
            yield from a.starts
        if isinstance(a, SemRef):
            yield a.index
    for _, v in ins.attrs:
        for x in (v if isinstance(v, tuple) else (v,)):
            if isinstance(x, Wait):
                yield x.sem
                yield x.sem.index
                yield x.phase
            elif isinstance(x, SemRef):
                yield x
                yield x.index
            else:
                yield x


def _check_names(ins, bufs, sems, tensors, p) -> list[str]:
    out = []
    for x in _scalars(ins):
        if isinstance(x, Reg) and not 0 <= x.index < p.num_regs:
            out.append(f"register r{x.index} out of range (.regs {p.num_regs})")
        elif isinstance(x, Tile) and x.buf not in bufs:
            out.append(f"unknown buffer {x.buf}")
        elif isinstance(x, Tile) and x.box is not None:
            shape = bufs[x.buf].shape
            if len(x.box) != len(shape) or any(s < 0 or e < 1 or s + e > n
                                               for (s, e), n in zip(x.box, shape)):
                out.append(f"sub-box of {x.buf} outside its shape {tuple(shape)}")
        elif isinstance(x, Glob) and x.tensor not in tensors:
            out.append(f"unknown tensor {x.tensor}")
        elif isinstance(x, SemRef) and x.name not in sems:
            out.append(f"unknown semaphore {x.name}")
    return out


def _check_levels(ins, bufs, tensors, cfg) -> list[str]:
    op = ins.op
    tiles = [a for a in ins.args if isinstance(a, Tile)]

    def level_ok(t: Tile, allowed, use):
        lv = bufs[t.buf].level
        return [] if lv in allowed else [f"{t.buf} is in {lv}; {use} needs {'/'.join(allowed)}"]

    if op in ("DMA.LD", "DMA.ST"):
        t = tiles[0]
        g = next(a for a in ins.args if isinstance(a, Glob))
        out = level_ok(t, cfg.dma_levels, "DMA")
        box = ins.attr("box")
        if box is None or len(box) != len(tensors[g.tensor].shape) or len(g.starts) != len(box):
            out.append(f"box must give one extent per dim of {g.tensor}")
        elif _prod(box) != _prod(t.shape(bufs[t.buf])):
            out.append(f"box {box} does not hold the {_prod(t.shape(bufs[t.buf]))} "
                       f"elements of {t.buf}")
        return out
    if op == "MMA":
        c, a, b = tiles
        out = level_ok(a, cfg.mma_ab_levels, "an MMA operand")
        out += level_ok(b, cfg.mma_ab_levels, "an MMA operand")
        out += level_ok(c, cfg.mma_c_levels, "an MMA accumulator")
        out += _mma_shapes(ins, a.shape(bufs[a.buf]), b.shape(bufs[b.buf]),
                           c.shape(bufs[c.buf]))
        return out
    if op == "ACC.ZERO":
        return level_ok(tiles[0], cfg.mma_c_levels, "an accumulator")
    if op == "COPY":                    # the on-chip mover reaches every level
        dst, src = (t.shape(bufs[t.buf]) for t in tiles)
        if tiles[0].dims is None and tiles[1].dims is None and _prod(dst) != _prod(src):
            return [f"COPY between tiles of {_prod(src)} and {_prod(dst)} elements"]
        return [] if tiles[0].dims is None and tiles[1].dims is None \
            else _vec_shapes(ins, bufs)
    if ins.engine == "VEC":
        out = []
        for t in tiles:
            out += level_ok(t, cfg.vec_levels, "a VEC operand")
        return out + _vec_shapes(ins, bufs)
    return []


def _vec_shapes(ins, bufs) -> list[str]:
    """Operands of a VEC instruction fit its iteration domain."""
    tiles = [a for a in ins.args if isinstance(a, Tile)]
    dst = tiles[0]
    if ins.op.startswith("VEC.RED."):
        src = tiles[1].shape(bufs[tiles[1].buf])
        dim = ins.attr("dim")
        if dim is None or not 0 <= dim < len(src):
            return [f"reduction dim {dim} outside the source's {len(src)} dims"]
        if _prod(dst.shape(bufs[dst.buf])) * src[dim] != _prod(src):
            return [f"{dst.buf} does not hold the reduction of {tiles[1].buf} along {dim}"]
        return []
    domain = ins.attr("shape") or _dst_domain(dst, dst.shape(bufs[dst.buf]))
    if domain is None:
        return [f"{dst.buf}: its dim map must name every dim once"]
    if ins.op == "VEC.IOTA" and not 0 <= (ins.attr("dim") or 0) < len(domain):
        return ["VEC.IOTA dim outside the domain"]
    out = []
    for i, t in enumerate(tiles):
        if ins.op == "VEC.GATHER" and i == 1:
            continue                    # the gathered buffer: any shape
        shape = t.shape(bufs[t.buf])
        dims = t.dims if t.dims is not None else tuple(range(len(shape)))
        # a source dim of extent 1 is broadcast over its domain dim (`m[0]`)
        if len(dims) != len(shape) or any(not 0 <= d < len(domain) for d in dims) or \
                any(shape[k] != domain[d] and (i == 0 or shape[k] != 1)
                    for k, d in enumerate(dims)):
            out.append(f"{t.buf} {tuple(shape)} does not fit the domain {tuple(domain)}")
        elif i == 0 and sorted(dims) != list(range(len(domain))):
            out.append(f"destination {t.buf} must cover the whole domain")
    return out


def _dst_domain(dst, shape):
    if dst.dims is None:
        return tuple(shape)
    if sorted(dst.dims) != list(range(len(shape))):
        return None
    out = [0] * len(shape)
    for k, d in enumerate(dst.dims):
        out[d] = shape[k]
    return tuple(out)


def _mma_shapes(ins, sa, sb, sc) -> list[str]:
    if len(sa) != 2 or len(sb) != 2 or len(sc) != 2:
        return ["MMA operands must be 2-D"]
    m, k = (sa[1], sa[0]) if ins.attr("ta") else sa
    k2, n = (sb[1], sb[0]) if ins.attr("tb") else sb
    if k != k2 or sc != (m, n):
        return [f"MMA shapes disagree: A {sa}, B {sb}, C {sc}"]
    return []


def _size_text(text, symbols) -> bool:
    """A tensor or workspace dim may be a size expression over the symbols (`N * 2`), in
    the grid-expression syntax the launcher evaluates: integers, names, + - * // %,
    ceildiv / min / max."""
    import ast
    if not isinstance(text, str):
        return False
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return False
    ops = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.USub)
    for n in ast.walk(tree.body):
        if isinstance(n, ast.Name) and n.id not in symbols and n.id not in (
                "ceildiv", "min", "max"):
            return False
        if not isinstance(n, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Call, ast.Name,
                              ast.Constant, ast.Load) + ops):
            return False
        if isinstance(n, ast.Constant) and not isinstance(n.value, int):
            return False
    return True
