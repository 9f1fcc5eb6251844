"""Straight-line runs of scalar ALU instructions, compiled into Python functions.

Most of a compiled kernel's instructions are scalar bookkeeping (the synchronisation
protocol's phase registers, stage indices, loop counters) between engine instructions.
The scalar unit used to interpret them one by one; a run of such instructions (no
control flow, no memory, no semaphores, no engine op) now executes as one generated
function over the register list, with the same operations in the same order, so
every register value (and so every cycle count) is what the interpreter computes. The
scalar unit still charges `scalar_cycles` per instruction.
"""
from __future__ import annotations

import heapq
import math

from .numerics import SCALAR_BIN

# operations whose meaning is a Python expression (exactly the numerics lambdas: a
# condition's 0 / 1 written as a conditional expression, which is int(condition)
# without the call)
_BIN = {"ADD": "({a} + {b})", "SUB": "({a} - {b})", "MUL": "({a} * {b})",
        "ADDI": "({a} + {b})", "MULI": "({a} * {b})",
        "LT": "(1 if {a} < {b} else 0)", "LE": "(1 if {a} <= {b} else 0)",
        "GT": "(1 if {a} > {b} else 0)", "GE": "(1 if {a} >= {b} else 0)",
        "EQ": "(1 if {a} == {b} else 0)", "NE": "(1 if {a} != {b} else 0)",
        "AND": "(1 if {a} and {b} else 0)", "OR": "(1 if {a} or {b} else 0)"}
_INT_BY_CONST = {"MOD": "%", "FDIV": "//"}
_UN = {"MOV": "{a}", "NEG": "(-{a})", "NOT": "(0 if {a} else 1)"}

MIN_RUN = 2          # shorter runs are interpreted (a call costs about one step)


def compile_runs(code, kinds, cycles) -> None:
    """Attach `run = (function, length)` to the first instruction of every run of at
    least MIN_RUN pure scalar instructions (`kinds`: the decoded kinds that qualify).
    The function takes the registers and the scalar unit's time and returns the time
    after the run, adding `cycles` once per instruction (as the interpreter does, so
    the float sums round alike)."""
    i, n = 0, len(code)
    while i < n:
        j = i
        while j < n and code[j].engine < 0 and code[j].kind in kinds:
            j += 1
        if j - i >= MIN_RUN:
            code[i].run = (_compile(code[i:j], cycles), j - i)
        i = max(j, i + 1)


def _literal(v):
    """`v` as Python source that evaluates to an equal object of its type (an int, or a
    finite float: repr round-trips), or None. A literal is read faster than a name."""
    if type(v) is int or (type(v) is float and math.isfinite(v)):
        return f"({v!r})"
    return None


def _time_literal(cycles) -> str:
    """`cycles` as the float literal of its value where it has one (the unit's time is
    a float: float + float skips converting an int operand each time; the sum is the
    same, an int of a float's exact value converting exactly), else its name `C`."""
    if type(cycles) in (int, float) and math.isfinite(cycles) and float(cycles) == cycles:
        return f"({float(cycles)!r})"
    return "C"


def _operands(consts: dict, regs: str):
    """The source text of an operand spec: a register read from `regs`, or a constant
    (a literal, or bound into `consts` under a fresh name)."""
    def operand(spec) -> str:
        is_reg, v = spec
        if is_reg:
            return f"{regs}[{v}]"
        lit = _literal(v)
        if lit is not None:
            return lit
        name = f"k{len(consts)}"
        consts[name] = v
        return name
    return operand


def _compile(ds, cycles):
    consts: dict = {"C": cycles}       # the source reads C where cycles has no literal
    operand = _operands(consts, "r")
    lines = ["def run(r, t):"]
    for d in ds:
        lines.append(f"    {_assign(d, operand, consts)}")
    lines += _add_cycles("    ", len(ds), cycles)
    lines.append("    return t")
    namespace = dict(consts)
    exec("\n".join(lines), namespace)          # source built from decoded operands only
    return namespace["run"]


# terms of one `t = t + C + ...` statement (a longer chain nests deeper when compiled)
_SUM_TERMS = 64


def _add_cycles(pad: str, k: int, cycles) -> list:
    """Source adding the scalar cycles of `k` instructions to `t`, one addition per
    instruction in order (`t + C + C` is `(t + C) + C`: the float sums round as the
    interpreter's `t += C` per instruction do), without storing `t` in between."""
    term = f" + {_time_literal(cycles)}"
    out = []
    while k > 0:
        m = min(k, _SUM_TERMS)
        out.append(f"{pad}t = t{term * m}")
        k -= m
    return out


def compile_dispatch(d):
    """A function building the in-flight `Op` of engine instruction `d` from a block's
    registers: its stages (range-checked), box start, waits and signal resolved with
    the register reads written out, so dispatch runs no loop over operand specs.
    Returns None when a semaphore index is a register (the generic path resolves it)."""
    if not _makeable(d):
        return None
    consts: dict = {}
    lines = ["def make(core, regs, ready, eng):"]
    lines += ["    " + x for x in _op_lines(d, consts, "regs", "")]
    lines.append("    return op")
    namespace = dict(consts)
    exec("\n".join(lines), namespace)
    return namespace["make"]


def _makeable(d) -> bool:
    """Whether `d`'s semaphores are fixed places in the block's list (_op_lines)."""
    return not (any(f < 0 for f, *_ in d.wait_sems) or
                (d.signal_sem and d.signal_sem[0] < 0))


def _op_lines(d, consts, regs: str, tag) -> list:
    """Statements building `op`, the in-flight `Op` of `d`, from `core`, the registers
    `regs`, `ready` and `eng` (compile_dispatch's maker; a region writes them out).
    Constants are bound in `consts` under names ending in `tag`."""
    from .machine import Op
    consts["Op"] = Op
    consts[f"D{tag}"] = d
    value = _operands(consts, regs)
    lines = ["op = Op()", f"op.di = D{tag}", "op.ready = ready", "op.eng = eng"]
    if d.static_stages is not None:
        consts[f"STAGES{tag}"] = d.static_stages
        lines.append(f"op.stages = STAGES{tag}")
    else:
        names = []
        for i, t in enumerate(d.tiles):
            if t.stage is None:
                names.append("0")
                continue
            lines.append(f"s{i} = {value(t.stage)}")
            lines.append(f"if not 0 <= s{i} < {t.decl.stages}: "
                         f"bad_stage(core, D{tag}, {i}, s{i})")
            names.append(f"s{i}")
        lines.append(f"op.stages = ({', '.join(names)},)")
        consts["bad_stage"] = bad_stage
    if d.glob is not None:
        lines.append(f"op.starts = ({', '.join(value(s) for s in d.glob[1])},)")
        if d.stop is None:
            lines.append("op.stops = None")
        else:
            stops = ", ".join("None" if x is None else f"int({value(x)})" for x in d.stop)
            lines.append(f"op.stops = ({stops},)")
    if d.wait_sems:
        lines.append("flat = core.flat")
        waits = ", ".join(f"(flat[{f}], {value(p)})" for f, _, _, p in d.wait_sems)
        lines.append(f"op.waits = ({waits},)")
    else:
        lines.append("op.waits = ()")
    if d.signal_sem is None:
        lines.append("op.signal = None")
    else:
        lines.append(f"op.signal = {'flat' if d.wait_sems else 'core.flat'}"
                     f"[{d.signal_sem[0]}]")
    lines += ["op.nbytes = 0", "op.recs = ()", "op.core = core", "op.fence = core.last_fence"]
    return lines


def bad_stage(core, d, i, s):
    from .errors import SimError
    t = d.tiles[i]
    raise SimError(f"{core.label}: {d.op} (instruction {d.index}) uses stage {s} of "
                   f"{t.buf}, which has {t.decl.stages}")


def compile_regions(code, kinds, branch_kinds, cycles, depth, load, endloop) -> None:
    """Attach `block` to the first instruction of every *region*: a span of scalar ALU
    instructions, scalar loads (kind `load`), balanced IF / ELSE / ENDIF and engine
    instructions (no loops, semaphores): `block = (function, end)`. The function runs the span as the
    interpreter would and returns (pc, t, instructions) with pc = end, or the pc of an
    engine instruction whose queue is full (where the scalar unit blocks or waits, as
    the interpreter decides it). Each engine instruction inside a region gets its own
    `block` too, from there to the region's end: the scalar unit resumes there.
    A region that is a whole loop body without loads (the ENDLOOP, kind `endloop`, at
    its end) runs the ENDLOOP too and goes round again itself: its `end` is past the
    ENDLOOP."""
    k_if, k_else, k_endif = branch_kinds
    i, n = 0, len(code)
    while i < n:
        j, open_ifs, last_ok = i, 0, i
        while j < n:
            d = code[j]
            if d.engine >= 0 or d.kind in kinds or d.kind == load:
                pass
            elif d.kind == k_if:
                open_ifs += 1
            elif d.kind == k_else:
                if open_ifs == 0:
                    break
            elif d.kind == k_endif:
                if open_ifs == 0:
                    break
                open_ifs -= 1
            else:
                break
            j += 1
            if open_ifs == 0:
                last_ok = j
        if last_ok - i >= MIN_RUN and any(code[k].engine >= 0 or code[k].kind == k_if
                                          for k in range(i, last_ok)):
            spec = (cycles, depth, branch_kinds, load, endloop)
            fn = _region(code, i, last_ok, spec)
            code[i].block = (fn, last_ok + 1 if _loops(code, i, last_ok, spec) else last_ok)
            _resume_points(code, i, last_ok, spec)
        i = max(last_ok, i + 1)


# instructions compiled for the resume points of one region, at most: each point is
# compiled to the region's end, so a long region of many engine instructions would
# cost quadratic time to compile (the interpreter resumes past the budget)
RESUME_BUDGET = 20000


def _resume_points(code, start, end, spec) -> None:
    """Attach `block` to each engine instruction inside the region [start, end): where
    the scalar unit resumes after a full queue stopped it, in compiled code."""
    budget = RESUME_BUDGET
    # in a loop body that goes round itself, a resume point runs the ENDLOOP too and
    # goes on in the body's function: its end is the body's
    stop = end + 1 if _loops(code, start, end, spec) else end
    for k in range(start + 1, end):
        if code[k].engine >= 0 and end - k >= MIN_RUN:
            budget -= end - k
            if budget < 0:
                return
            code[k].block = (_on_first_use(code, k, end, spec), stop)


def _on_first_use(code, k, end, spec):
    """The resume point at `k`, compiled the first time the scalar unit resumes there
    (most points of a program are never used by a given launch)."""
    def first(core, r, t):
        fn = _region(code, k, end, spec, inline=False)
        code[k].block = (fn, code[k].block[1])
        return fn(core, r, t)
    return first


def _loops(code, start, end, spec) -> bool:
    """Whether the region [start, end) is a whole loop body without loads: its ENDLOOP
    at `end` goes back to `start` (a load in flight across the ENDLOOP would need the
    scoreboard of every instruction, which the interpreter keeps)."""
    load, endloop = spec[3], spec[4]
    return end < len(code) and code[end].engine < 0 and code[end].kind == endloop and \
        code[end].jump + 1 == start and \
        not any(code[k].engine < 0 and code[k].kind == load for k in range(start, end))


def _region(code, start, end, spec, inline=True):
    """The function of the region [start, end) (`spec`: compile_regions' cycles, queue
    depth, branch kinds, load and ENDLOOP kinds). `inline`: its dispatches build their
    ops in place (_dispatch); a resume point's function (many, each to the region's
    end, so their source grows with the square of the region) calls the makers."""
    cycles, depth, branch_kinds, load, _ = spec
    k_if, k_else, k_endif = branch_kinds
    consts: dict = {"C": cycles}
    c = _time_literal(cycles)
    lines = ["def block(core, r, t):", "    queues = core.queues"]
    if any(code[k].kind == load and code[k].engine < 0 for k in range(start, end)):
        lines.append("    loading = core.loading")
    looping = _loops(code, start, end, spec)
    base = 1
    if looping:
        # Core.step's ENDLOOP at `end`, written out: the body again while the count
        # lasts (the loop's record is the top of the unit's loop stack)
        lines += ["    loops = core.loops", "    n = 0", "    while True:"]
        base = 2
    # registers a load in the region (before the instruction at hand) fills: the
    # instructions that name one wait for it first (Core._operands_ready, its
    # scoreboard; the region is entered with no load in flight)
    loaded: set = set()
    operand = _operands(consts, "r")
    # `t` and the instruction count `n` are brought up to date lazily: `pending`
    # instructions' cycles are added where `t` is next read (a dispatch, a branch's
    # end, a return), in the same order (_add_cycles); `count` instructions are added
    # to `n` only where the paths of a branch join, so a straight path returns its
    # count as a literal (`n` exists once a branch has joined: `joined`)
    pending = count = 0
    joined = looping

    def settle_t(pad):
        nonlocal pending
        if pending:
            lines.extend(_add_cycles(pad, pending, cycles))
            pending = 0

    def n_now() -> str:
        return (f"n + {count}" if count else "n") if joined else str(count)

    def settle_n(pad):
        nonlocal count
        lines.append(f"{pad}n = {n_now()}")
        count = 0

    def wait_operands(d, pad):
        names = [x for x in d.regs if x in loaded]
        if names:
            settle_t(pad)
            for x in names:
                lines.append(f"{pad}w = loading.pop({x}, None)")
                lines.append(f"{pad}if w is not None and w > t:")
                lines.append(f"{pad}    t = w")

    def emit(pc, stop, indent):
        nonlocal pending, count, joined
        pad = "    " * indent
        while pc < stop:
            d = code[pc]
            wait_operands(d, pad)
            if d.engine >= 0:
                settle_t(pad)
                _dispatch(lines, consts, pad, pc, d, depth, c, n_now(), inline)
                pending += 1
                count += 1
                pc += 1
            elif d.kind == k_if:
                target = d.jump                       # its ELSE or ENDIF
                pending += 1
                count += 1
                lines.append(f"{pad}if {operand(d.args[0])}:")
                lines.append(f"{pad}    pass")
                endif = target if code[target].kind == k_endif else code[target].jump
                before = pending, count, joined
                emit(pc + 1, target, indent + 1)
                pending += 1            # the then-branch runs the ELSE or reaches the ENDIF
                count += 1
                settle_t(pad + "    ")
                settle_n(pad + "    ")
                lines.append(f"{pad}else:")
                lines.append(f"{pad}    pass")
                pending, count, joined = before
                if code[target].kind == k_else:
                    emit(target + 1, endif, indent + 1)
                    pending += 1                      # the else-branch reaches the ENDIF
                    count += 1
                settle_t(pad + "    ")
                settle_n(pad + "    ")
                joined = True
                pc = endif + 1
            elif d.kind == load:
                # Core.step's LDG: the value now, its register ready after the latency
                settle_t(pad)
                consts[f"g{pc}"] = d.args[1]
                dst = d.args[0][1]
                lines.append(f"{pad}r[{dst}], w = core.sim.load_scalar(g{pc}, r)")
                lines.append(f"{pad}loading[{dst}] = t + w")
                loaded.add(dst)
                pending += 1
                count += 1
                pc += 1
            else:
                lines.append(f"{pad}{_assign(d, operand, consts)}")
                pending += 1
                count += 1
                pc += 1

    pc = start
    while pc < end:                 # a resume point inside an IF: its closers
        stop = _closer(code, pc, end, branch_kinds)
        emit(pc, stop, base)
        if stop == end:
            break
        pending += 1                                  # the ELSE or ENDIF
        count += 1
        # after a then-branch the ELSE jumps past its ENDIF (not counted)
        pc = code[stop].jump + 1 if code[stop].kind == k_else else stop + 1
    body = code[end].jump + 1 if end < len(code) else -1
    if looping:
        pending += 1                                  # the ENDLOOP
        count += 1
        pad = "        "
        lines += [f"{pad}top = loops[-1]", f"{pad}top[0] -= 1"]
        settle_t(pad)
        settle_n(pad)
        lines += [f"{pad}if not top[0] > 0:", f"{pad}    loops.pop()",
                  f"{pad}    return {end + 1}, t, n"]
    elif start > body >= 0 and code[body].block is not None and \
            code[body].block[1] == end + 1:
        # a resume point of a loop body that goes round itself: the ENDLOOP, then
        # the body's function for the iterations left
        pending += 1
        count += 1
        consts["BODY"] = code[body].block[0]
        lines += ["    top = core.loops[-1]", "    top[0] -= 1"]
        settle_t("    ")
        lines += ["    if not top[0] > 0:", "        core.loops.pop()",
                  f"        return {end + 1}, t, {n_now()}",
                  "    pc, t, m = BODY(core, r, t)", f"    return pc, t, {n_now()} + m"]
    else:
        settle_t("    ")
        lines.append(f"    return {end}, t, {n_now()}")
    namespace = dict(consts)
    exec("\n".join(lines), namespace)
    return namespace["block"]


def _dispatch(lines, consts, pad, pc, d, depth, c, n, inline) -> None:
    """Source dispatching engine instruction `d` (at `pc`) at the unit's time `t`, or
    returning (pc, t, n) where its queue is full. A timing run (`core.fast`) builds
    the op here (the statements of `d.make_op`) — Simulator.dispatch written out:
    into a non-empty queue it is only appended; into an empty one the engine also
    learns that the queue holds something and, unless its data phases are all taken,
    tries it."""
    e = d.engine
    consts[f"d{pc}"] = d
    lines.append(f"{pad}q = queues[{e}]")
    lines.append(f"{pad}if len(q) >= {depth}:")
    lines.append(f"{pad}    return {pc}, t, {n}")
    lines.append(f"{pad}eng = core.engines[{e}]")
    if d.make_op is None:
        lines.append(f"{pad}core.sim.dispatch(core, eng, d{pc}, t + {c})")
        return
    if not inline:
        # into a non-empty queue, Simulator.dispatch's timing path written out
        consts[f"m{pc}"] = d.make_op
        lines += [f"{pad}if q and core.fast:",
                  f"{pad}    q.append(m{pc}(core, r, t + {c}, eng))",
                  f"{pad}else:",
                  f"{pad}    core.sim.dispatch(core, eng, d{pc}, t + {c})"]
        return
    inner = pad + "    "
    lines += [f"{pad}if not core.fast:",
              f"{pad}    core.sim.dispatch(core, eng, d{pc}, t + {c})",
              f"{pad}else:",
              f"{inner}ready = t + {c}"]
    lines += [inner + x for x in _op_lines(d, consts, "r", pc)]
    lines += [f"{inner}q.append(op)",
              f"{inner}if len(q) == 1:",
              f"{inner}    eng.queued |= core.bit",
              f"{inner}    if not eng.data_active:",
              f"{inner}        bu = eng.busy_until",
              f"{inner}        if bu > ready:",
              f"{inner}            ready = bu",
              # Simulator.push of the engine's try, written out
              f"{inner}        sim = core.sim",
              f"{inner}        events = sim.at.get(ready)",
              f"{inner}        if events is None:",
              f"{inner}            sim.at[ready] = [eng.try_event]",
              f"{inner}            heappush(sim.times, ready)",
              f"{inner}        else:",
              f"{inner}            events.append(eng.try_event)"]
    consts["heappush"] = heapq.heappush


def _closer(code, pc, end, branch_kinds) -> int:
    """The first ELSE or ENDIF from `pc` on that closes an IF opened before `pc`
    (`end` if none): a region entered at a resume point may start inside a branch."""
    k_if, k_else, k_endif = branch_kinds
    depth = 0
    for j in range(pc, end):
        k = code[j].kind if code[j].engine < 0 else 0
        if k == k_if:
            depth += 1
        elif k == k_endif:
            if depth == 0:
                return j
            depth -= 1
        elif k == k_else and depth == 0:
            return j
    return end


def _assign(d, operand, consts) -> str:
    """`r[dst] = <expression>` of one scalar ALU instruction."""
    a = d.args
    dst = f"r[{a[0][1]}]"
    if d.op == "SEL":
        return f"{dst} = ({operand(a[2])} if {operand(a[1])} else {operand(a[3])})"
    if len(a) == 3:
        x, y = operand(a[1]), operand(a[2])
        if d.op in _BIN:
            return f"{dst} = {_BIN[d.op].format(a=x, b=y)}"
        fn = f"f{len(consts)}"
        consts[fn] = SCALAR_BIN[d.op]
        b = a[2][1]
        if d.op in _INT_BY_CONST and not a[2][0] and type(b) is int and b != 0:
            # an int register by a nonzero int constant: numerics' _mod / _floordiv
            # compute exactly Python's int % and // then (the call for other types)
            op = _INT_BY_CONST[d.op]
            return f"{dst} = ({x} {op} {y}) if type({x}) is int else {fn}({x}, {y})"
        return f"{dst} = {fn}({x}, {y})"
    x = operand(a[1])
    if d.op in _UN:
        return f"{dst} = {_UN[d.op].format(a=x)}"
    fn = f"f{len(consts)}"
    consts[fn] = d.fn
    return f"{dst} = {fn}({x})"
