"""Shrinking a failing program to a minimal one, and saving it as a regression.

`shrink(program, still_fails)` tries simpler variants one at a time and keeps any that
still fails the same way, until none does: a statement dropped, an expression replaced
by one of its operands or a constant, a symbolic size made smaller, a grid after the
first dropped, a loop made `range`. `still_fails(program) -> bool` decides (the
campaign compares the verdict's kind and where it happened).

`save(program, verdict, directory)` writes the program as a `.tl` file whose header
records how to run it (sizes, input seed) and what it failed with;
tests/regressions/test_regressions.py runs every such file through the differential
check and expects agreement.
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import replace

from .program import E, Program, S, leaf


def shrink(program: Program, still_fails, max_checks: int = 400) -> Program:
    best, checks = program, 0
    improved = True
    while improved and checks < max_checks:
        improved = False
        for candidate in _candidates(best):
            checks += 1
            if _key(candidate) != _key(best) and still_fails(candidate):
                best, improved = candidate, True
                break
            if checks >= max_checks:
                break
    return best


def _key(p: Program):
    return p.render(), p.sizes


def _candidates(p: Program):
    yield from _smaller_sizes(p)
    yield from _dropped_grids(p)
    yield from _dropped_statements(p)
    yield from _simpler_expressions(p)
    yield from _simpler_text(p)


def _smaller_sizes(p: Program):
    for i, (name, value) in enumerate(p.sizes):
        for smaller in sorted({1, value // 2, value - 1}):
            if 1 <= smaller < value:
                sizes = list(p.sizes)
                sizes[i] = (name, smaller)
                yield replace(p, sizes=tuple(sizes))


def _dropped_grids(p: Program):
    """The program without one of the grids after the first."""
    for i in range(len(p.more_grids)):
        yield replace(p, more_grids=p.more_grids[:i] + p.more_grids[i + 1:])


def _dropped_statements(p: Program):
    for path in _paths(p.body):
        body = _drop(p.body, path)
        if body is not None:
            yield p.with_body(body)


def _paths(body, prefix=()):
    for i, s in enumerate(body):
        yield prefix + (i,)
        if s.kind == "loop":
            yield from _paths(s.body, prefix + (i,))


def _drop(body, path):
    i = path[0]
    if len(path) == 1:
        if body[i].essential:
            return None
        return body[:i] + body[i + 1:]
    inner = _drop(body[i].body, path[1:])
    if inner is None:
        return None
    return body[:i] + (replace(body[i], body=inner),) + body[i + 1:]


def _simpler_expressions(p: Program):
    for path in _paths(p.body):
        s = _at(p.body, path)
        for k, e in enumerate(s.exprs):
            for simpler in _simpler(e):
                exprs = s.exprs[:k] + (simpler,) + s.exprs[k + 1:]
                yield p.with_body(_put(p.body, path, replace(s, exprs=exprs)))


def _simpler(e: E):
    """Operands of the same dtype, a constant, then the same for each operand."""
    for a in e.args:
        if a.dtype == e.dtype:
            yield a
    if e.op != "leaf":
        text = "1.0" if e.dtype.startswith(("float", "bfloat")) else "1"
        yield leaf(text if e.dtype in ("float32", "int32") else f"T.{e.dtype}({text})",
                   e.dtype)
    for k, a in enumerate(e.args):
        for simpler in _simpler(a):
            yield replace(e, args=e.args[:k] + (simpler,) + e.args[k + 1:])


def _at(body, path) -> S:
    s = body[path[0]]
    for i in path[1:]:
        s = s.body[i]
    return s


def _put(body, path, new: S):
    i = path[0]
    if len(path) == 1:
        return body[:i] + (new,) + body[i + 1:]
    return body[:i] + (replace(body[i], body=_put(body[i].body, path[1:], new)),) + body[i + 1:]


_NUM_STAGES = re.compile(r"num_stages=\d+")


def _simpler_text(p: Program):
    """Pipelined loops as plain ranges, num_stages down to 0."""
    for path in _paths(p.body):
        s = _at(p.body, path)
        if s.kind == "loop" and "T.Pipelined" in s.text:
            m = re.search(r"T\.Pipelined\((.*), num_stages=\d+\)", s.text)
            if m:
                yield p.with_body(_put(p.body, path, replace(
                    s, text=s.text.replace(m.group(0), f"range({m.group(1)})"))))
            yield p.with_body(_put(p.body, path, replace(
                s, text=_NUM_STAGES.sub("num_stages=0", s.text))))


# ----------------------------------------------------------------------------- saving

HEADER = "# regression:"


def save(text: str, sizes: dict, seed: int, verdict: str, directory: str,
         found_by: str = "") -> str:
    """Write a shrunk program as `<directory>/<kind>-<hash>.tl`; returns the path."""
    os.makedirs(directory, exist_ok=True)
    kind = re.sub(r"[^a-z0-9]+", "_", verdict.split(":")[0].lower()).strip("_")[:40]
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    path = os.path.join(directory, f"{kind}-{digest}.tl")
    sizes_text = ",".join(f"{k}={v}" for k, v in sizes.items())
    header = [f"{HEADER} sizes={sizes_text or '-'} seed={seed}",
              f"# found by: {found_by or 'the differential fuzzer'}",
              f"# it failed with: {verdict.splitlines()[0][:300]}",
              "# tests/regressions/test_regressions.py checks that every target agrees "
              "with the reference interpreter"]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(header) + "\n" + text)
    return path


def load(path: str) -> tuple[str, dict, int]:
    """(text, sizes, seed) of a saved regression."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    first = text.splitlines()[0]
    if not first.startswith(HEADER):
        raise ValueError(f"{path}: not a saved regression (no `{HEADER}` header)")
    fields = dict(item.split("=", 1) for item in first[len(HEADER):].split())
    sizes = {} if fields["sizes"] == "-" else {
        k: int(v) for k, v in (kv.split("=") for kv in fields["sizes"].split(","))}
    return text, sizes, int(fields["seed"])
