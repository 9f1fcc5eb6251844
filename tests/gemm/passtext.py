"""Before/after `.tl` text for the GEMM passes: parse a text, run passes, compare with
the parsed expected text (printing both on a mismatch) and check that the result's
printed form parses back to the same IR."""
from __future__ import annotations

import textwrap

import pytest

from tilelang.frontend import parse_module
from tilelang.ir.printer import print_module
from tilelang.ir.verifier import verify

HEADER = "import tilelang.language as T\n\n"


def parse(src: str, header: str = HEADER):
    mod = parse_module(header + textwrap.dedent(src), "<test>")
    verify(mod)
    return mod


def run(pass_fn, src: str, header: str = HEADER):
    """`pass_fn` applied to the parsed `src`; verified and round-tripped."""
    got = pass_fn(parse(src, header))
    verify(got)
    assert parse_module(print_module(got), "<printed>") == got
    return got


def check(pass_fn, before: str, after: str, header: str = HEADER):
    got = run(pass_fn, before, header)
    want = parse(after, header)
    if got != want:
        pytest.fail(f"--- got:\n{print_module(got)}\n--- want:\n{print_module(want)}")
