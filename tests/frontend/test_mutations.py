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


def apply_ops(items, ops):
    """Drop, duplicate or swap elements of `items` (tokens or lines) in place."""
    for kind, a, b in ops:
        if not items:
            break
        a, b = a % len(items), b % len(items)
        if kind == "drop":
            del items[a]
        elif kind == "dup":
            items.insert(a, items[a])
        else:
            items[a], items[b] = items[b], items[a]
    return "".join(items)


def mutate_tokens(text, ops):
    return apply_ops(TOKEN.findall(text), ops)


def mutate_lines(text, ops):
    return apply_ops(text.splitlines(keepends=True), ops)


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
