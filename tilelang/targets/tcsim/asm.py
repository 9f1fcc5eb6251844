"""`.tcasm`: the textual assembly of tcsim programs, and its disassembler.

    .kernel gemm
    .param A tensor bfloat16 [M, K]
    .symbol M r3
    .grid (N + 127) // 128 | (M + 127) // 128 | 1
    .blockregs r0 r1 r2
    .buf A_s SMEM bfloat16 [128, 64] stages=3
    .sem full 3
        DMA.LD A_s[r7], A[r8, r9] box=128x64 signal=full[r7]
        MMA C_f, A_s[r7], B_s[r7] wait=full[r7]@r10

`disassemble(assemble(text))` is canonical text, and `assemble(disassemble(p)) == p`.
Comments start with `#`. Indentation is cosmetic (the disassembler indents loop bodies).
"""
from __future__ import annotations

import math
import re

from .isa import (OPCODES, BufferDecl, Glob, Imm, Instr, Param, Program, Reg, SemRef, Tile,
                  Wait, check_operands)


class AsmError(ValueError):
    """Malformed `.tcasm` text; the message names the line."""
    code = "TL0802"

    def __init__(self, line: int, message: str):
        self.line = line
        super().__init__(f"line {line}: {message}")


# ----------------------------------------------------------------------------- printing

def fmt_scalar(s) -> str:
    if isinstance(s, Reg):
        return f"r{s.index}"
    v = s.value
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    return str(v)


def fmt_operand(a) -> str:
    if isinstance(a, (Reg, Imm)):
        return fmt_scalar(a)
    if isinstance(a, Tile):
        text = a.buf
        if a.stage is not None:
            text += f"[{fmt_scalar(a.stage)}]"
        if a.box is not None:
            text += "<" + ",".join(f"{s}:{s + e}" for s, e in a.box) + ">"
        if a.dims is not None:
            text += "{" + ",".join(map(str, a.dims)) + "}"
        return text
    if isinstance(a, Glob):
        return f"{a.tensor}[{', '.join(fmt_scalar(s) for s in a.starts)}]"
    if isinstance(a, SemRef):
        return a.name if a.index is None else f"{a.name}[{fmt_scalar(a.index)}]"
    raise TypeError(a)


def fmt_attr(key: str, v) -> str:
    if key in ("box", "shape"):
        return f"{key}={'x'.join(map(str, v))}"
    if key == "wait":
        return "wait=" + ",".join(f"{fmt_operand(w.sem)}@{fmt_scalar(w.phase)}" for w in v)
    if key == "signal":
        return f"signal={fmt_operand(v)}"
    if key == "scale":
        return f"scale={fmt_scalar(v)}"
    if key == "stop":
        return "stop=" + ",".join("-" if x is None else fmt_scalar(x) for x in v)
    return f"{key}={v}"


def fmt_instr(ins: Instr) -> str:
    text = ins.op
    if ins.args:
        text += " " + ", ".join(fmt_operand(a) for a in ins.args)
    for k, v in ins.attrs:
        text += " " + fmt_attr(k, v)
    return text


def _fmt_shape(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def disassemble(p: Program) -> str:
    out = [f".kernel {p.name}"]
    for prm in p.params:
        line = f".param {prm.name} {prm.kind} {prm.dtype}"
        if prm.kind != "scalar":
            line += " " + _fmt_shape(prm.shape)
        if prm.reg is not None:
            line += f" r{prm.reg}"
        if prm.source is not None:
            line += f" of {prm.source}"
        out.append(line)
    out += [f".symbol {n} r{r}" for n, r in p.symbols]
    out.append(".grid " + " | ".join(p.grid))
    out.append(".blockregs " + " ".join(f"r{r}" for r in p.block_regs))
    out.append(f".regs {p.num_regs}")
    out.append(f".raster {p.raster}")
    if p.threads:
        out.append(f".threads {p.threads}")
    if tuple(p.cluster) != (1, 1, 1):
        out.append(".cluster " + "x".join(map(str, p.cluster)))
    for b in p.buffers:
        line = f".buf {b.name} {b.level} {b.dtype} {_fmt_shape(b.shape)} stages={b.stages}"
        line += f" offset={b.offset}" if b.offset is not None else ""
        out.append(line + (" transient" if b.transient else ""))
    out += [f".sem {n} {c}" for n, c in p.sems]
    depth = 1
    for ins in p.code:
        if ins.op in ("ENDLOOP", "ENDIF", "ELSE"):
            depth -= 1
        out.append("    " * depth + fmt_instr(ins))
        if ins.op in ("LOOP", "IF", "ELSE"):
            depth += 1
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- parsing

_NUM = re.compile(r"^[-+]?(\d+(\.\d*)?([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?|inf|nan)$")


def parse_scalar(tok: str, line: int):
    tok = tok.strip()
    if re.fullmatch(r"r\d+", tok):
        return Reg(int(tok[1:]))
    if _NUM.match(tok):
        if re.fullmatch(r"[-+]?\d+", tok):
            return Imm(int(tok))
        return Imm(float(tok))
    raise AsmError(line, f"expected a register or a number, got {tok!r}")


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split on `sep` outside brackets and braces."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "[{(<":
            depth += 1
        elif ch in "]})>":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return [p.strip() for p in parts]


_OPERAND = re.compile(r"^([A-Za-z_][\w.]*)(\[([^\]]*)\])?(<([\d:,\s]*)>)?"
                      r"(\{([\d,\s]*)\})?$")


class _Names:
    def __init__(self):
        self.buffers: set[str] = set()
        self.tensors: set[str] = set()
        self.sems: set[str] = set()


def parse_operand(tok: str, names: _Names, line: int):
    tok = tok.strip()
    m = _OPERAND.match(tok)
    if not m or tok in ("inf", "nan"):
        return parse_scalar(tok, line)
    name, index, box, dims = m.group(1), m.group(3), m.group(5), m.group(7)
    if re.fullmatch(r"r\d+", name) and index is None and dims is None and box is None:
        return Reg(int(name[1:]))
    if name in names.buffers:
        stage = parse_scalar(index, line) if index is not None else None
        dd = tuple(int(d) for d in dims.split(",") if d.strip()) if dims is not None else None
        return Tile(name, stage, dd, _parse_box(box, line) if box is not None else None)
    if name in names.tensors:
        starts = tuple(parse_scalar(s, line) for s in _split_top(index or ""))
        return Glob(name, starts)
    if name in names.sems:
        return SemRef(name, parse_scalar(index, line) if index is not None else None)
    raise AsmError(line, f"unknown name {name!r} (not a .buf, .param or .sem)")


def _parse_box(text: str, line: int):
    out = []
    for part in text.split(","):
        lo, colon, hi = part.partition(":")
        if not colon or not lo.strip().isdigit() or not hi.strip().isdigit() \
                or int(hi) <= int(lo):
            raise AsmError(line, f"bad sub-box {part!r}; expected start:end")
        out.append((int(lo), int(hi) - int(lo)))
    return tuple(out)


def _parse_attr(key: str, val: str, names: _Names, line: int):
    if key in ("box", "shape"):
        try:
            return tuple(int(x) for x in val.split("x"))
        except ValueError:
            raise AsmError(line, f"bad {key}= {val!r}; expected e.g. 128x64") from None
    if key == "wait":
        waits = []
        for part in _split_top(val):
            sem, _, phase = part.rpartition("@")
            if not sem:
                raise AsmError(line, f"a wait needs sem@phase, got {part!r}")
            waits.append(Wait(parse_operand(sem, names, line), parse_scalar(phase, line)))
        return tuple(waits)
    if key == "signal":
        return parse_operand(val, names, line)
    if key == "scale":
        return parse_scalar(val, line)
    if key == "stop":
        return tuple(None if x.strip() == "-" else parse_scalar(x, line)
                     for x in val.split(","))
    if key in ("reduce", "src", "dst"):
        return val
    try:
        return int(val)
    except ValueError:
        raise AsmError(line, f"bad value for {key}=: {val!r}") from None


def parse_instr(text: str, names: _Names, line: int) -> Instr:
    head, _, rest = text.strip().partition(" ")
    op = head.upper()
    if op not in OPCODES:
        raise AsmError(line, f"unknown opcode {head!r}")
    # attributes are the trailing `key=value` words
    m = re.search(r"(^|\s)[a-z]+=", rest)
    operand_text, attr_text = (rest[:m.start()], rest[m.start():]) if m else (rest, "")
    args = tuple(parse_operand(t, names, line) for t in _split_top(operand_text))
    attrs = []
    for word in attr_text.split():
        key, eq, val = word.partition("=")
        if not eq or key not in OPCODES[op].attrs:
            raise AsmError(line, f"{op} takes no attribute {word!r}")
        if any(k == key for k, _ in attrs):
            raise AsmError(line, f"attribute {key}= given twice")
        attrs.append((key, _parse_attr(key, val, names, line)))
    try:
        check_operands(op, args)
    except ValueError as e:
        raise AsmError(line, str(e)) from None
    return Instr(op, args, tuple(sorted(attrs)), line=line)


def _parse_shape(text: str, line: int) -> tuple:
    text = text.strip()
    if not (text.startswith("[") and text.endswith("]")):
        raise AsmError(line, f"expected a shape like [128, 64], got {text!r}")
    dims = []
    for d in _split_top(text[1:-1]):
        dims.append(int(d) if re.fullmatch(r"\d+", d) else d)
    return tuple(dims)


def _reg(tok: str, line: int) -> int:
    if not re.fullmatch(r"r\d+", tok):
        raise AsmError(line, f"expected a register, got {tok!r}")
    return int(tok[1:])


class _Header:
    def __init__(self):
        self.name = None
        self.params, self.symbols, self.buffers, self.sems = [], [], [], []
        self.grid = ("1", "1", "1")
        self.block_regs = (0, 1, 2)
        self.raster = 0
        self.num_regs = 64
        self.threads = 0
        self.cluster = (1, 1, 1)


def _directive(text: str, h: _Header, names: _Names, line: int) -> None:
    word, _, rest = text.partition(" ")
    rest = rest.strip()
    if word == ".kernel":
        h.name = rest
    elif word == ".param":
        m = re.match(r"(\w+)\s+(tensor|scalar|workspace|view)\s+(\w+)\s*(\[[^\]]*\])?\s*"
                     r"(r\d+)?\s*(?:of\s+(\w+))?$", rest)
        if not m or (m.group(2) == "view") != (m.group(6) is not None):
            raise AsmError(line, f"bad .param: {rest!r}")
        shape = _parse_shape(m.group(4), line) if m.group(4) else ()
        reg = _reg(m.group(5), line) if m.group(5) else None
        h.params.append(Param(m.group(1), m.group(2), m.group(3), shape, reg, m.group(6)))
        if m.group(2) != "scalar":
            names.tensors.add(m.group(1))
    elif word == ".symbol":
        name, reg = rest.split()
        h.symbols.append((name, _reg(reg, line)))
    elif word == ".grid":
        h.grid = tuple(p.strip() for p in rest.split("|"))
    elif word == ".blockregs":
        h.block_regs = tuple(_reg(t, line) for t in rest.split())
    elif word == ".regs":
        h.num_regs = int(rest)
    elif word == ".raster":
        h.raster = int(rest)
    elif word == ".threads":
        h.threads = int(rest)
    elif word == ".cluster":
        dims = tuple(int(x) for x in rest.split("x"))
        if len(dims) != 3 or min(dims) < 1:
            raise AsmError(line, f"bad .cluster {rest!r}; expected e.g. 2x1x1")
        h.cluster = dims
    elif word == ".buf":
        m = re.match(r"(\w+)\s+(\w+)\s+(\w+)\s+(\[[^\]]*\])\s*(stages=(\d+))?"
                     r"\s*(offset=(\d+))?\s*(transient)?$", rest)
        if not m:
            raise AsmError(line, f"bad .buf: {rest!r}")
        stages = int(m.group(6)) if m.group(6) else 1
        offset = int(m.group(8)) if m.group(8) else None
        h.buffers.append(BufferDecl(m.group(1), m.group(2), m.group(3),
                                    _parse_shape(m.group(4), line), stages, offset,
                                    bool(m.group(9))))
        names.buffers.add(m.group(1))
    elif word == ".sem":
        name, count = rest.split()
        h.sems.append((name, int(count)))
        names.sems.add(name)
    else:
        raise AsmError(line, f"unknown directive {word}")


def assemble(text: str) -> Program:
    """Directives first (so names may be declared after their first use), then code."""
    h, names, code = _Header(), _Names(), []
    lines = [(n, raw.split("#", 1)[0].strip()) for n, raw in enumerate(text.splitlines(), 1)]
    for lineno, stripped in lines:
        if stripped.startswith("."):
            try:
                _directive(stripped, h, names, lineno)
            except (ValueError, IndexError) as e:
                if isinstance(e, AsmError):
                    raise
                raise AsmError(lineno, f"bad directive {stripped!r}") from None
    for lineno, stripped in lines:
        if stripped and not stripped.startswith("."):
            code.append(parse_instr(stripped, names, lineno))
    if h.name is None:
        raise AsmError(1, "missing .kernel NAME")
    return Program(h.name, tuple(h.params), tuple(h.symbols), h.grid, h.block_regs,
                   tuple(h.buffers), tuple(h.sems), tuple(code), h.raster, h.num_regs,
                   h.threads, h.cluster)
