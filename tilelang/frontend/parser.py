"""Source text -> lark parse tree (LALR + Python-style indentation).

The grammar is built once per process and cached on disk by lark (`cache=`), so
start-up costs a few milliseconds. Syntax errors come out as `Fail` diagnostics in
the user's words (see syntax_errors.py).
"""
from __future__ import annotations

import hashlib
import keyword
import os
import threading
from pathlib import Path

from lark import Lark, Token
from lark.exceptions import UnexpectedInput
from lark.indenter import Indenter

from ..diagnostics import codes_syntax as C
from .errors import Spans, fail
from . import syntax_errors

_GRAMMAR_PATH = Path(__file__).with_name("grammar.lark")
_OPEN = {"LPAR": ")", "LSQB": "]", "LBRACE": "}"}
_CLOSE = {"RPAR": "(", "RSQB": "[", "RBRACE": "{"}


class TLIndenter(Indenter):
    """lark's Indenter, extended to remember the open brackets (for "unclosed
    bracket" errors), to reject tabs and to report bad dedents with a position."""
    NL_type = "_NEWLINE"
    OPEN_PAREN_types = list(_OPEN)
    CLOSE_PAREN_types = list(_CLOSE)
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8

    def __init__(self):
        super().__init__()
        self.spans = Spans("<unknown>")
        self.brackets: list[Token] = []

    def process(self, stream):
        self.paren_level = 0
        self.indent_level = [0]
        self.brackets = []
        return self._process(stream)

    def _process(self, stream):
        last = None
        for token in stream:
            last = token
            if token.type == self.NL_type:
                if not self.brackets:
                    yield from self._newline(token)
                continue
            self._check_keyword(token)
            self._track_bracket(token)
            yield token
        if self.brackets:
            opened = self.brackets[-1]
            raise fail(C.UNCLOSED_BRACKET, f"'{opened.value}' was never closed",
                       self.spans.of(opened), "unclosed bracket",
                       help=f"add the matching '{_OPEN[opened.type]}'")
        while len(self.indent_level) > 1:
            self.indent_level.pop()
            yield Token.new_borrow_pos(self.DEDENT_type, "", last) if last else \
                Token(self.DEDENT_type, "", 0, 1, 1, 1, 1, 0)

    def _check_keyword(self, token):
        """The contextual lexer reads a keyword as a NAME where the keyword cannot
        occur (`else:` without `if`); report it as a misplaced keyword."""
        if token.type == "NAME" and keyword.iskeyword(token.value):
            raise fail(C.UNEXPECTED_TOKEN, f"keyword `{token.value}` cannot be used here",
                       self.spans.of(token), "unexpected keyword")

    def _track_bracket(self, token):
        if token.type in _OPEN:
            self.brackets.append(token)
        elif token.type in _CLOSE:
            if not self.brackets:
                raise fail(C.MISMATCHED_BRACKET, f"unmatched '{token.value}'",
                           self.spans.of(token), "no bracket to close here")
            opened = self.brackets.pop()
            if _OPEN[opened.type] != token.value:
                raise fail(C.MISMATCHED_BRACKET,
                           f"closing '{token.value}' does not match '{opened.value}'",
                           self.spans.of(token), f"expected '{_OPEN[opened.type]}'",
                           secondary=[(self.spans.of(opened), "opened here")])
        self.paren_level = len(self.brackets)

    def _newline(self, token):
        """Emit the newline and the INDENT/DEDENT tokens the next line's indentation
        implies; the indentation starts right after the last '\\n' of the token."""
        yield token
        indent_str = token.value.rsplit("\n", 1)[1]
        line = token.end_line
        if "\t" in indent_str:
            col = indent_str.index("\t") + 1
            raise fail(C.TAB_INDENT, "tab character in indentation",
                       self.spans.at(line, col), "tab here",
                       help="indent with spaces only")
        indent = len(indent_str)
        if indent > self.indent_level[-1]:
            self.indent_level.append(indent)
            yield Token.new_borrow_pos(self.INDENT_type, indent_str, token)
            return
        while indent < self.indent_level[-1]:
            self.indent_level.pop()
            yield Token.new_borrow_pos(self.DEDENT_type, indent_str, token)
        if indent != self.indent_level[-1]:
            levels = ", ".join(str(i) for i in self.indent_level)
            raise fail(C.BAD_DEDENT, "unindent does not match any outer indentation level",
                       self.spans.at(line, 1, line, indent + 1),
                       f"dedent to column {indent + 1}",
                       notes=[f"enclosing blocks are indented by {levels} spaces"])


_lock = threading.Lock()
_parser: Lark | None = None
_indenter: TLIndenter | None = None


def _cache_path(grammar: str) -> str | bool:
    """The grammar-analysis cache under the user cache dir (its own folder, apart from
    the kernel cache), or False when that is not writable. Files of older grammars
    are removed when a new one is first written."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    digest = hashlib.sha256(grammar.encode()).hexdigest()[:16]
    directory = os.path.join(base, "tilelang", "grammar")
    path = os.path.join(directory, f"grammar-{digest}.lark.cache")
    try:
        os.makedirs(directory, exist_ok=True)
        if not os.access(directory, os.W_OK):
            return False
        if not os.path.exists(path):
            for old in os.listdir(directory):
                if old.startswith("grammar-") and old.endswith(".lark.cache"):
                    os.remove(os.path.join(directory, old))
    except OSError:
        return False
    return path


def _get_parser() -> tuple[Lark, TLIndenter]:
    global _parser, _indenter
    if _parser is None:
        grammar = _GRAMMAR_PATH.read_text(encoding="utf-8")
        indenter = TLIndenter()
        options = dict(parser="lalr", postlex=indenter, propagate_positions=True,
                       maybe_placeholders=True, start="start")
        try:
            parser = Lark(grammar, cache=_cache_path(grammar), **options)
        except OSError:
            parser = Lark(grammar, **options)
        _parser, _indenter = parser, indenter
    return _parser, _indenter


def parse_tree(text: str, spans: Spans):
    """Parse `text` into a lark tree; raises `Fail` with a syntax diagnostic."""
    if not text.endswith("\n"):
        text += "\n"
    with _lock:
        parser, indenter = _get_parser()
        indenter.spans = spans
        try:
            return parser.parse(text)
        except UnexpectedInput as err:
            raise syntax_errors.translate(err, text, spans, list(indenter.brackets),
                                          parser) from None
