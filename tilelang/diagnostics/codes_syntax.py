"""TL00xx: syntax errors found by the parser (grammar, tokens, indentation)."""
from .codes import register

UNEXPECTED_TOKEN = register("TL0001", "unexpected token", """
The parser found a token where the grammar does not allow it. The message names what
was expected and what was found, e.g. `expected ':', found end of line` after
`for i in range(n)`. The tile language is a subset of Python: check for a missing
colon, comma, operator or closing bracket just before the position shown.
""")
UNCLOSED_BRACKET = register("TL0002", "unclosed bracket", """
An opening bracket `(`, `[` or `{` is never closed. Inside brackets line breaks are
ignored, so the error often shows up lines later; the diagnostic points at the opening
bracket. Add the matching closing bracket.
""")
MISMATCHED_BRACKET = register("TL0003", "mismatched closing bracket", """
A closing bracket does not match the innermost open bracket (`(a]`), or closes a
bracket that was never opened. Brackets must nest: `(` with `)`, `[` with `]`.
""")
UNEXPECTED_CHARACTER = register("TL0004", "unexpected character", """
A character that cannot start any token of the language, e.g. `$`, `?` or a stray
backtick. Remove it, or, if it is meant to be text, put it inside a string.
""")
BAD_DEDENT = register("TL0005", "unindent does not match any outer level", """
A line is indented less than the line before it, but not back to the indentation of
any enclosing block. Blocks are delimited by indentation as in Python: every line of
a block has the same indentation, and a dedent returns exactly to an outer level.
""")
TAB_INDENT = register("TL0006", "tab in indentation", """
Indentation uses tab characters. Tabs and spaces mix badly (their width depends on
the editor), so the tile language requires spaces for indentation. Replace each tab
by spaces (4 per level is conventional).
""")
UNEXPECTED_EOF = register("TL0007", "unexpected end of file", """
The file ends in the middle of a statement or before a block has a body, e.g. a
`def` or `for` header whose indented body is missing.
""")
UNEXPECTED_INDENT = register("TL0008", "unexpected indent", """
A line is indented more than the line before it, but the previous line does not open
a block (it does not end with `:`). Remove the extra indentation.
""")
UNSUPPORTED_SYNTAX = register("TL0009", "unsupported syntax", """
Valid Python that the tile language does not support, e.g. `**`, `None`, lambda-like
constructs, tuple assignment or attribute access on something other than the `T`
namespace. Kernels are compiled, not executed, so only the constructs of the language
reference are available.
""")
UNTERMINATED_STRING = register("TL0010", "unterminated string literal", """
A string literal is not closed on the same line. Close it with the same quote
character that opened it, or use a triple-quoted string for multi-line text.
""")
EXPECTED_BLOCK = register("TL0011", "expected an indented block", """
A statement ending in `:` (def, for, if, elif, else, with) must be followed by an
indented block on the next lines (or a statement on the same line). Use `pass` for
an empty block.
""")
