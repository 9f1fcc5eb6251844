"""Malformed-input fuzzing: mutants of valid programs must be diagnosed, never crash.

A generated program's text is mutated at the token level (drop, duplicate, swap, or
replace a token with an extreme number, another dtype, a keyword, a stray character) and
at the line level (drop, duplicate, swap, re-indent), then compiled for every target as
`tilec` would: parse, the pass pipeline with the verifier on, code generation. A
`TileLangError` (a diagnostic) or success is fine; anything else is an internal error
the campaign reports, with the mutant's text.
"""
from __future__ import annotations

import re

from ..diagnostics import InternalError, TileLangError

TOKEN = re.compile(r"\s+|\w+|\"[^\"\n]*\"|//|\*\*|[<>=!]=|.", re.S)

REPLACEMENTS = (
    "0", "-1", "1", "2147483647", "2147483648", "-2147483649", "9" * 30, "1e400", "1e-400",
    "0.0", "-0.0", "nan", "inf", '"float8_e4m3"', '"bool"', '"int4"', '""', "None", "True",
    "T", "T.Kernel", "T.Parallel", "lambda", "yield", "(", ")", "[", "]", ":", ",", "=",
    "\t", "\\", "#", "'", "@", "T.alloc_shared((1 << 40,), \"float32\")",
    "T.ceildiv(0, 0)", "1 // 0", "T.gemm", "T.copy", "bx", "for", "if", "with",
)


def mutate(text: str, c) -> str:
    """1 to 3 random token or line mutations of `text` (`c`: a generate.Chooser)."""
    for _ in range(c.int(1, 3)):
        if c.bool(0.7):
            items = TOKEN.findall(text)
            text = "".join(_mutate_items(items, c, tokens=True))
        else:
            items = text.splitlines(keepends=True)
            text = "".join(_mutate_items(items, c, tokens=False))
    return text


def _mutate_items(items, c, tokens: bool):
    if not items:
        return items
    a, b = c.int(0, len(items) - 1), c.int(0, len(items) - 1)
    kind = c.choice(["drop", "dup", "swap", "replace" if tokens else "indent"])
    if kind == "drop":
        del items[a]
    elif kind == "dup":
        items.insert(a, items[a])
    elif kind == "swap":
        items[a], items[b] = items[b], items[a]
    elif kind == "replace":
        items[a] = c.choice(REPLACEMENTS)
    else:
        items[a] = c.choice(["    ", "  ", "", "\t"]) + items[a]
    return items


def check_mutant(text: str, targets=("cpu", "tcsim:tiny")) -> tuple[str, str]:
    """("rejected" | "accepted" | "internal", detail) for one mutant."""
    from ..frontend import parse_module
    try:
        module = parse_module(text, "mutant.tl")
    except TileLangError:
        return "rejected", ""
    except Exception as e:  # noqa: BLE001
        return "internal", f"parse: {type(e).__name__}: {e}"
    outcome = "accepted"
    for target in targets:
        try:
            _compile(module, target)
        except TileLangError:
            outcome = "rejected"
        except InternalError as e:
            return "internal", f"{target}: {str(e).splitlines()[0]}"
        except RecursionError as e:
            return "internal", f"{target}: RecursionError: {e}"
        except Exception as e:  # noqa: BLE001
            return "internal", f"{target}: {type(e).__name__}: {e}"
    return outcome, ""


def _compile(module, target: str) -> None:
    from ..driver.options import make_options
    from ..passes.manager import PassManager
    options = make_options(target=target, opt=1)
    lowered = PassManager(options.target.pipeline(), verify_each=True).run(module)
    options.target.codegen(lowered, options)
