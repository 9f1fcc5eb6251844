"""TileLang's layout constructors, for `T.annotate_layout({buf: make_swizzled_layout(buf)})`.

Layouts are hints here: the compiler chooses every on-chip layout itself (the CPU packs
a GEMM's B operand into panels, tcsim's tiles have no bank conflicts to avoid), so an
annotated layout changes neither the result nor the code. These names exist so that a
kernel that imports them ports unchanged; inside a kernel `T.annotate_layout(...)` is
accepted without evaluating its argument.
"""
from __future__ import annotations


class LayoutHint:
    """What a layout constructor returns when Python itself calls it."""

    def __init__(self, kind: str, *args, **kwargs):
        self.kind, self.args, self.kwargs = kind, args, kwargs

    def __repr__(self) -> str:
        return f"<layout hint {self.kind}>"


def _constructor(kind: str):
    def make(*args, **kwargs) -> LayoutHint:
        return LayoutHint(kind, *args, **kwargs)
    make.__name__ = make.__qualname__ = kind
    make.__doc__ = f"`{kind}`: a layout hint (accepted, no effect here)."
    return make


Layout = _constructor("Layout")
Fragment = _constructor("Fragment")
_NAMES = ("make_swizzled_layout", "make_volta_swizzled_layout", "make_wgmma_swizzled_layout",
          "make_full_bank_swizzled_layout", "make_half_bank_swizzled_layout",
          "make_quarter_bank_swizzled_layout", "make_linear_layout")
for _name in _NAMES:
    globals()[_name] = _constructor(_name)
del _name

__all__ = ["LayoutHint", "Layout", "Fragment", *_NAMES]
