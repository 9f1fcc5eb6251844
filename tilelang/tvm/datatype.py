"""`tvm.DataType`: a dtype's bit width, lane count and kind, for Python code that sizes
buffers by them (`128 // DataType(T.float16).bits`)."""
from __future__ import annotations

from .. import dtypes


class DataType:
    """A scalar dtype of the tile language (one lane), by any of its spellings."""

    def __init__(self, name):
        found = dtypes.canonical(str(name))
        if found is None:
            raise ValueError(f"unknown dtype {name!r}; dtypes: {', '.join(dtypes.DTYPES)}")
        self.name = found
        self.bits = dtypes.bits(found) if found != "bool" else 1
        self.lanes = 1

    def is_float(self) -> bool:
        return dtypes.is_float(self.name)

    def is_int(self) -> bool:
        return dtypes.is_int(self.name) and dtypes.is_signed(self.name)

    def is_uint(self) -> bool:
        return dtypes.is_int(self.name) and not dtypes.is_signed(self.name)

    def __eq__(self, other) -> bool:
        return str(self) == str(other)

    def __hash__(self) -> int:
        return hash(self.name)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"DataType({self.name!r})"
