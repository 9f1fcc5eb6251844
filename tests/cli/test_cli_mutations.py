"""Mutated kernels never get a Python traceback out of `tilec` (a "Done when" of the issue):
dropping, duplicating and swapping tokens and lines of valid kernels gives either a
successful compile (exit 0) or a rendered diagnostic (exit 1)."""
from __future__ import annotations

import os
import re
import tempfile

from hypothesis import HealthCheck, given, settings, strategies as st

import cli_kernels as kernels

TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d*)?|\s+|.", re.S)
OPS = ("drop_token", "dup_token", "swap_tokens", "drop_line", "dup_line", "swap_lines")


def mutate(text: str, op: str, i: int, j: int) -> str:
    if op.endswith("line") or op.endswith("lines"):
        units = text.splitlines(keepends=True)
        idx = [k for k, line in enumerate(units) if line.strip()]
    else:
        units = TOKEN.findall(text)
        idx = [k for k, tok in enumerate(units) if not tok.isspace()]
    a, b = idx[i % len(idx)], idx[j % len(idx)]
    if op.startswith("drop"):
        del units[a]
    elif op.startswith("dup"):
        units.insert(a, units[a])
    else:
        units[a], units[b] = units[b], units[a]
    return "".join(units)


mutations = st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 10_000),
                               st.integers(0, 10_000)), min_size=1, max_size=3)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(source=st.sampled_from(sorted(kernels.SOURCES)), edits=mutations,
       emit=st.sampled_from(["obj", "ir"]))
def test_mutated_kernel_gives_diagnostic_or_success(cli, monkeypatch, source, edits, emit):
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "1")
    text = kernels.SOURCES[source]
    for op, i, j in edits:
        text = mutate(text, op, i, j)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "k.tl")
        with open(path, "w") as f:
            f.write(text)
        result = cli("compile", path, "--emit", emit, "-o", os.path.join(tmp, "k.out"))
    report = f"exit {result.exit_code}\n--- source\n{text}\n--- output\n{result.output}"
    assert result.exit_code in (0, 1), report
    assert "Traceback" not in result.output, report
    if result.exit_code == 1:
        assert re.match(r"error\[TL\d{4}\]: ", result.stderr), report


def test_mutate_changes_the_text():
    text = kernels.VECTOR_ADD
    assert mutate(text, "drop_line", 3, 0) != text
    assert mutate(text, "dup_token", 5, 0) != text
    assert mutate(text, "swap_tokens", 0, 1) != text
