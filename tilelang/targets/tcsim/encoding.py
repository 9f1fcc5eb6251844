"""Compact binary encoding of tcsim programs.

Layout: magic `TCB1`, a string table (every name once), then the program as tagged
values: unsigned LEB128 varints, zig-zag for signed integers, IEEE doubles for floats.
An opcode is one varint (its index in `isa.OPCODE_LIST`), so a typical instruction takes
a handful of bytes. `decode(encode(p)) == p` for every program.
"""
from __future__ import annotations

import struct

from .isa import (OPCODE_LIST, BufferDecl, Glob, Imm, Instr, Param, Program, Reg, SemRef,
                  Tile, Wait, check_operands)

MAGIC = b"TCB1"

# value tags
(T_NONE, T_INT, T_FLOAT, T_STR, T_TUPLE, T_REG, T_IMM, T_TILE, T_GLOB, T_SEM, T_WAIT,
 T_TRUE, T_FALSE) = range(13)


class EncodingError(ValueError):
    """Bytes that are not a tcsim binary program."""
    code = "TL0802"


class _Writer:
    def __init__(self):
        self.out = bytearray()
        self.strings: dict[str, int] = {}

    def uint(self, n: int) -> None:
        while True:
            b = n & 0x7F
            n >>= 7
            if n:
                self.out.append(b | 0x80)
            else:
                self.out.append(b)
                return

    def sint(self, n: int) -> None:
        self.uint((n << 1) if n >= 0 else ((-n) << 1) - 1)

    def string(self, s: str) -> None:
        if s not in self.strings:
            self.strings[s] = len(self.strings)
        self.uint(self.strings[s])

    def value(self, v) -> None:
        if v is None:
            self.out.append(T_NONE)
        elif v is True or v is False:
            self.out.append(T_TRUE if v else T_FALSE)
        elif isinstance(v, int):
            self.out.append(T_INT)
            self.sint(v)
        elif isinstance(v, float):
            self.out.append(T_FLOAT)
            self.out += struct.pack("<d", v)
        elif isinstance(v, str):
            self.out.append(T_STR)
            self.string(v)
        elif isinstance(v, tuple):
            self.out.append(T_TUPLE)
            self.uint(len(v))
            for x in v:
                self.value(x)
        elif isinstance(v, Reg):
            self.out.append(T_REG)
            self.uint(v.index)
        elif isinstance(v, Imm):
            self.out.append(T_IMM)
            self.value(v.value)
        elif isinstance(v, Tile):
            self.out.append(T_TILE)
            self.string(v.buf)
            self.value(v.stage)
            self.value(v.dims)
            self.value(v.box)
        elif isinstance(v, Glob):
            self.out.append(T_GLOB)
            self.string(v.tensor)
            self.value(v.starts)
        elif isinstance(v, SemRef):
            self.out.append(T_SEM)
            self.string(v.name)
            self.value(v.index)
        elif isinstance(v, Wait):
            self.out.append(T_WAIT)
            self.value(v.sem)
            self.value(v.phase)
        else:
            raise TypeError(f"cannot encode {v!r}")


class _Reader:
    def __init__(self, data: bytes, pos: int, strings: list[str]):
        self.data, self.pos, self.strings = data, pos, strings

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise EncodingError("truncated program")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def uint(self) -> int:
        n, shift = 0, 0
        while True:
            b = self.byte()
            n |= (b & 0x7F) << shift
            if not b & 0x80:
                return n
            shift += 7

    def sint(self) -> int:
        n = self.uint()
        return (n >> 1) if not n & 1 else -((n + 1) >> 1)

    def string(self) -> str:
        i = self.uint()
        if i >= len(self.strings):
            raise EncodingError("bad string index")
        return self.strings[i]

    def value(self):
        tag = self.byte()
        if tag == T_NONE:
            return None
        if tag in (T_TRUE, T_FALSE):
            return tag == T_TRUE
        if tag == T_INT:
            return self.sint()
        if tag == T_FLOAT:
            if self.pos + 8 > len(self.data):
                raise EncodingError("truncated program")
            v = struct.unpack_from("<d", self.data, self.pos)[0]
            self.pos += 8
            return v
        if tag == T_STR:
            return self.string()
        if tag == T_TUPLE:
            return tuple(self.value() for _ in range(self.uint()))
        if tag == T_REG:
            return Reg(self.uint())
        if tag == T_IMM:
            return Imm(self.value())
        if tag == T_TILE:
            return Tile(self.string(), self.value(), self.value(), self.value())
        if tag == T_GLOB:
            return Glob(self.string(), self.value())
        if tag == T_SEM:
            return SemRef(self.string(), self.value())
        if tag == T_WAIT:
            return Wait(self.value(), self.value())
        raise EncodingError(f"bad value tag {tag}")


def _body(w: _Writer, p: Program) -> None:
    w.string(p.name)
    w.value(tuple((x.name, x.kind, x.dtype, x.shape, x.reg) + ((x.source,) if x.source else ())
                  for x in p.params))
    w.value(p.symbols)
    w.value(p.grid)
    w.value(p.block_regs)
    w.value(tuple((b.name, b.level, b.dtype, b.shape, b.stages, b.offset, b.transient)
                  for b in p.buffers))
    w.value(p.sems)
    w.uint(p.raster)
    w.uint(p.num_regs)
    w.uint(p.threads)
    w.value(tuple(p.cluster))
    w.uint(len(p.code))
    for ins in p.code:
        w.uint(OPCODE_LIST.index(ins.op))
        w.value(ins.args)
        w.value(ins.attrs)


def encode(p: Program) -> bytes:
    w = _Writer()
    _body(w, p)
    table = _Writer()
    table.uint(len(w.strings))
    for s in w.strings:                     # dicts keep insertion order = index order
        raw = s.encode("utf-8")
        table.uint(len(raw))
        table.out += raw
    return MAGIC + bytes(table.out) + bytes(w.out)


def decode(data: bytes) -> Program:
    if not data.startswith(MAGIC):
        raise EncodingError("not a tcsim binary program (bad magic)")
    r = _Reader(data, len(MAGIC), [])
    try:
        strings = []
        for _ in range(r.uint()):
            n = r.uint()
            strings.append(bytes(data[r.pos:r.pos + n]).decode("utf-8"))
            r.pos += n
        r.strings = strings
        return _read_program(r)
    except (IndexError, UnicodeDecodeError, TypeError, ValueError) as e:
        if isinstance(e, EncodingError):
            raise
        raise EncodingError(f"malformed program: {e}") from None


def _read_program(r: _Reader) -> Program:
    name = r.string()
    params = tuple(Param(*x) for x in r.value())
    symbols, grid, block_regs = r.value(), r.value(), r.value()
    buffers = tuple(BufferDecl(*x) for x in r.value())
    sems = r.value()
    raster, num_regs, threads = r.uint(), r.uint(), r.uint()
    cluster = r.value()
    code = []
    for _ in range(r.uint()):
        op = OPCODE_LIST[r.uint()]
        args, attrs = r.value(), r.value()
        if not isinstance(args, tuple) or not isinstance(attrs, tuple):
            raise EncodingError(f"malformed {op} instruction")
        check_operands(op, args)
        code.append(Instr(op, args, attrs))
    if r.pos != len(r.data):
        raise EncodingError("trailing bytes after the program")
    return Program(name, params, symbols, grid, block_regs, buffers, sems, tuple(code),
                   raster, num_regs, threads, cluster)
