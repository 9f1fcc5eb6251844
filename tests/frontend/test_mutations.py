"""Mutated kernels (tokens and lines dropped, duplicated, swapped) either parse or give
a TileLangError with a rendered diagnostic — never another exception."""
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from tilelang.diagnostics import TileLangError
from tilelang.frontend import parse_module
from tilelang.ir.printer import print_module

SOURCES = [p.read_text() for p in sorted((Path(__file__).parent / "kernels").glob("*.tl"))]
TOKEN = re.compile(r"\s+|\w+|\"[^\"\n]*\"|//|\*\*|[<>=!]=|.", re.S)


def mutate_tokens(text, ops):
    toks = TOKEN.findall(text)
    for kind, a, b in ops:
        if not toks:
            break
        a, b = a % len(toks), b % len(toks)
        if kind == "drop":
            del toks[a]
        elif kind == "dup":
            toks.insert(a, toks[a])
        else:
            toks[a], toks[b] = toks[b], toks[a]
    return "".join(toks)


def mutate_lines(text, ops):
    lines = text.splitlines(keepends=True)
    for kind, a, b in ops:
        if not lines:
            break
        a, b = a % len(lines), b % len(lines)
        if kind == "drop":
            del lines[a]
        elif kind == "dup":
            lines.insert(a, lines[a])
        else:
            lines[a], lines[b] = lines[b], lines[a]
    return "".join(lines)


OPS = st.lists(st.tuples(st.sampled_from(["drop", "dup", "swap"]),
                         st.integers(0, 10_000), st.integers(0, 10_000)), min_size=1, max_size=4)


def check_parses_or_diagnoses(text):
    try:
        mod = parse_module(text, "mutant.tl")
    except TileLangError as err:
        rendered = err.render()
        assert rendered.startswith("error[TL") and "Traceback" not in rendered
        assert "__ANON" not in rendered and "_DEDENT" not in rendered and "$END" not in rendered
        return
    # a mutant that still parses must also print and parse back
    assert parse_module(print_module(mod), "printed.tl") == mod


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(range(len(SOURCES))), OPS)
def test_token_mutations(which, ops):
    check_parses_or_diagnoses(mutate_tokens(SOURCES[which], ops))


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(range(len(SOURCES))), OPS)
def test_line_mutations(which, ops):
    check_parses_or_diagnoses(mutate_lines(SOURCES[which], ops))
