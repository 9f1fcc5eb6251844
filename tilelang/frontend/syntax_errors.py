"""Lark's parse errors in the user's words.

lark reports terminals by their grammar names (`__ANON_0`, `_DEDENT`, `$END`) and
cannot see brackets left open at the end of the file; this module maps each error to
a diagnostic with the token's real text, what was expected, and the right position.
"""
from __future__ import annotations

from lark.exceptions import UnexpectedCharacters, UnexpectedToken, UnexpectedEOF
from lark.lexer import PatternStr

from ..diagnostics import codes_syntax as C
from .errors import Fail, fail

_NAMED = {
    "NAME": "a name", "NUMBER": "a number", "STRING": "a string", "LONG_STRING": "a string",
    "COMP_OP": "a comparison", "AUGASSIGN": "an augmented assignment",
    "_NEWLINE": "end of line", "_INDENT": "an indented block", "_DEDENT": "end of block",
    "$END": "end of file",
}
# Tokens that may continue a complete expression: listed last (or summarised), since
# after an expression the interesting expectation is the statement's punctuation.
_CONTINUATIONS = {"+", "-", "*", "/", "//", "%", "**", ".", "(", "[", "and", "or",
                  "a comparison", "if", "="}
_EXPR_START = {"a name", "a number", "a string", "(", "[", "-", "+", "not", "True",
               "False", "None"}
_BRACKET_CLOSE = {"(": ")", "[": "]", "{": "}"}


def translate(err, text: str, spans, brackets, parser) -> Fail:
    if isinstance(err, UnexpectedCharacters):
        return _bad_character(err, text, spans)
    if isinstance(err, UnexpectedToken):
        return _bad_token(err, text, spans, brackets, parser)
    if isinstance(err, UnexpectedEOF):
        line = text.count("\n")
        return fail(C.UNEXPECTED_EOF, "unexpected end of file", spans.at(max(line, 1), 1))
    return fail(C.UNEXPECTED_TOKEN, "invalid syntax", spans.at(getattr(err, "line", 1) or 1,
                                                               getattr(err, "column", 1) or 1))


def _bad_character(err, text, spans) -> Fail:
    char = text[err.pos_in_stream] if err.pos_in_stream < len(text) else ""
    span = spans.at(err.line, err.column)
    if char in "\"'":
        end = text.find("\n", err.pos_in_stream)
        end = len(text) if end < 0 else end
        width = end - err.pos_in_stream
        return fail(C.UNTERMINATED_STRING, "unterminated string literal",
                    spans.at(err.line, err.column, err.line, err.column + max(width, 1)),
                    "string starts here", help=f"close the string with {char}")
    shown = repr(char)[1:-1] if char.isprintable() else f"U+{ord(char):04X}"
    return fail(C.UNEXPECTED_CHARACTER, f"unexpected character `{shown}`", span,
                "not valid here")


def _describe_terminal(name: str, parser) -> str:
    if name in _NAMED:
        return _NAMED[name]
    term = _terminals(parser).get(name)
    if term is not None and isinstance(term.pattern, PatternStr):
        return term.pattern.value
    return name.lower()


def _terminals(parser):
    cache = getattr(parser, "_tl_terminals", None)
    if cache is None:
        cache = {t.name: t for t in parser.terminals}
        parser._tl_terminals = cache
    return cache


def _quote(word: str) -> str:
    if word.startswith(("a ", "an ", "end of")):
        return word
    return f"'{word}'" if not word.isidentifier() else f"`{word}`"


def expected_text(expected, parser) -> str:
    words = {_describe_terminal(n, parser) for n in expected}
    if {"a name", "a number", "("} <= words:
        words = (words - _EXPR_START) | {"an expression"}
    if "=" in words:                     # `x = ...` and `x += ...` both possible
        words = (words - {"an augmented assignment"}) | {"'='"}
    main = sorted(w for w in words if w not in _CONTINUATIONS)
    if not main:
        main = ["an operator"]
    shown = [_quote(w) for w in main[:5]]
    if len(main) > 5:
        shown.append("...")
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


def found_text(token) -> str:
    if token.type in _NAMED and token.type not in ("NAME", "NUMBER", "STRING", "COMP_OP",
                                                   "AUGASSIGN", "LONG_STRING"):
        return _NAMED[token.type]
    value = str(token.value)
    if token.type in ("STRING", "LONG_STRING"):
        value = value if len(value) < 30 else value[:27] + "..."
    if token.type == "NAME":
        return f"`{value}`"
    if value.isidentifier():
        return f"keyword `{value}`"
    return f"'{value}'"


def _token_span(token, text, spans):
    line = token.line if isinstance(token.line, int) and token.line > 0 else None
    if line is None:
        line = max(text.count("\n"), 1)
        return spans.at(line, 1)
    if token.type in ("_NEWLINE", "_DEDENT", "_INDENT", "$END"):
        if token.type == "_INDENT":
            row = token.end_line
            return spans.at(row, 1, row, max(len(token.value), 1) + 1)
        return spans.at(token.line, token.column)
    return spans.at(token.line, token.column, token.end_line, token.end_column)


def _bad_token(err, text, spans, brackets, parser) -> Fail:
    token = err.token
    span = _token_span(token, text, spans)
    if brackets and isinstance(token.line, int) and token.line > brackets[-1].line:
        opened = brackets[-1]
        return fail(C.UNCLOSED_BRACKET, f"'{opened.value}' was never closed",
                    spans.of(opened), "unclosed bracket",
                    secondary=[(span, "the statement continues here")],
                    help=f"add the matching '{_BRACKET_CLOSE[opened.value]}'")
    if token.type in _CLOSERS:
        return _bad_closer(token, span, spans, brackets)
    if token.type == "_INDENT":
        return fail(C.UNEXPECTED_INDENT, "unexpected indent", span, "this line is indented",
                    help="remove the extra indentation (the line before does not end with ':')")
    if token.type in ("ELSE", "ELIF"):
        return fail(C.UNEXPECTED_TOKEN, f"`{token.value}` without a matching `if`", span,
                    "no `if` before it", help="check the indentation of this line")
    if "_INDENT" in err.expected or _after_block_header(token, text):
        return fail(C.EXPECTED_BLOCK, "expected an indented block", span,
                    "the block should start here", help="indent the body; use `pass` for an empty block")
    if token.type == "$END":
        return fail(C.UNEXPECTED_EOF, f"unexpected end of file, expected "
                    f"{expected_text(err.expected, parser)}", span, "the file ends here")
    expected = set(err.expected) - ({"_NEWLINE"} if brackets else set())
    if token.type == "_NEWLINE" and "COLON" in expected and _wants_colon(err, parser):
        wanted = "':'"
    elif token.type in _STATEMENT_KEYWORDS and "_NEWLINE" in expected:
        wanted = "end of line"                 # a statement glued to the previous one
    else:
        wanted = expected_text(expected, parser)
    found = found_text(token)
    if token.type in _OPERAND_STARTS and _after_operand(err.expected, parser):
        # two operands in a row: the grammar's long list of continuations says little
        wanted = "an operator"
        if brackets:
            wanted += f", '{_BRACKET_CLOSE[brackets[-1].value]}' or ','"
        return fail(C.UNEXPECTED_TOKEN, f"expected {wanted}, found {found}", span,
                    f"unexpected {found}", help="is a comma or an operator missing before it?")
    return fail(C.UNEXPECTED_TOKEN, f"expected {wanted}, found {found}", span,
                f"unexpected {found}")


_STATEMENT_KEYWORDS = {"DEF", "FOR", "IF", "WITH", "IMPORT", "FROM", "RETURN", "PASS", "AT"}
_OPERAND_STARTS = {"NAME", "NUMBER", "STRING", "LONG_STRING", "TRUE", "FALSE", "NONE"}


def _after_operand(expected, parser) -> bool:
    """The parser sits after a complete operand when an operator could follow."""
    words = {_describe_terminal(n, parser) for n in expected}
    return bool(words & {"+", "*", ".", "["})


def _after_block_header(token, text) -> bool:
    """True when `token` starts a line and the previous code line ends with ':' (the
    lexer reports the missing indent as an unexpected token, not a missing INDENT)."""
    pos = getattr(token, "start_pos", None)
    if not isinstance(pos, int) or pos <= 0:
        return False
    before = text[:pos]
    head, _, indent = before.rpartition("\n")
    if indent.strip():
        return False
    lines = [l.split("#", 1)[0].rstrip() for l in head.splitlines()]
    lines = [l for l in lines if l]
    return bool(lines) and lines[-1].endswith(":")


_CLOSERS = {"RPAR": ")", "RSQB": "]", "RBRACE": "}"}


def _bad_closer(token, span, spans, brackets) -> Fail:
    """A closing bracket the lexer rejected: it closes nothing or the wrong bracket."""
    if not brackets:
        return fail(C.MISMATCHED_BRACKET, f"unmatched '{token.value}'", span,
                    "no bracket to close here")
    opened = brackets[-1]
    want = _BRACKET_CLOSE[opened.value]
    if want != token.value:
        return fail(C.MISMATCHED_BRACKET,
                    f"closing '{token.value}' does not match '{opened.value}'", span,
                    f"expected '{want}'", secondary=[(spans.of(opened), "opened here")])
    return fail(C.UNEXPECTED_TOKEN, f"unexpected '{token.value}'", span,
                "an expression is missing before it")


def _wants_colon(err, parser) -> bool:
    """After a complete `for`/`if`/`def` header the only statement-level way on is ':'
    (the other expectations are operators continuing the expression)."""
    words = {_describe_terminal(n, parser) for n in err.expected}
    return not (words - _CONTINUATIONS - {":"})
