"""Scalar expressions to the tcsim scalar unit: registers for block indices, symbols,
scalar parameters, lets and loop variables; ALU instructions for the rest. Also grid
expressions as the text the runtime evaluates."""
from __future__ import annotations

from ...diagnostics import Diagnostic, Label, TileLangError
from ...diagnostics.codes_tcsim import UNSUPPORTED
from ...dtypes import is_float
from ...ir.nodes import Binary, BitCast, Call, Cast, Const, Load, Select, Unary, Var
from ...targets.tcsim.isa import Glob, Imm, Reg

BIN = {"+": "ADD", "-": "SUB", "*": "MUL", "/": "DIV", "//": "FDIV", "%": "MOD",
       "min": "MIN", "max": "MAX", "<": "LT", "<=": "LE", ">": "GT", ">=": "GE",
       "==": "EQ", "!=": "NE", "and": "AND", "or": "OR"}
CALLS = {"exp": "EXP", "exp2": "EXP2", "log": "LOG", "log2": "LOG2", "sqrt": "SQRT",
         "rsqrt": "RSQRT", "tanh": "TANH", "sigmoid": "SIGMOID", "abs": "ABS",
         "floor": "FLOOR", "ceil": "CEIL", "erf": "ERF", "sin": "SIN", "cos": "COS",
         "tan": "TAN", "round": "ROUND", "trunc": "TRUNC", "bitwise_not": "BNOT"}
# two-argument intrinsics computed by one instruction
CALLS2 = {"pow": "POW", "bitwise_and": "BAND", "bitwise_or": "BOR", "bitwise_xor": "BXOR",
          "shift_left": "SHL", "shift_right": "SHR"}


def unsupported(node, what: str) -> TileLangError:
    span = getattr(node, "span", None)
    label = Label.from_span(span) if span is not None and span.line else None
    return TileLangError(Diagnostic(UNSUPPORTED, f"tcsim: {what}", primary=label,
                                    help="rewrite with whole-tile operations, or use "
                                         "`--target cpu`"))


def const_value(c: Const):
    if c.dtype == "bool":
        return int(bool(c.value))
    return float(c.value) if is_float(c.dtype) else int(c.value)


class ScalarLowering:
    """Lowers scalar expressions into registers of an Emitter; `env` maps Vars to
    registers (or to constant operands), and `T.alloc_var` buffers (by name) to the
    registers that hold them."""

    def __init__(self, em, env: dict):
        self.em = em
        self.env = env
        self.vars: dict[str, Reg] = {}

    def var_reg(self, buffer) -> Reg:
        if buffer.name not in self.vars:
            raise unsupported(buffer, f"`{buffer.name}` is used before its T.alloc_var")
        return self.vars[buffer.name]

    def operand(self, e):
        """A Reg or Imm holding the value of scalar expression `e`."""
        if isinstance(e, Const):
            return Imm(const_value(e))
        if isinstance(e, Var):
            if e not in self.env:
                raise unsupported(e, f"variable `{e.name}` has no scalar value here")
            return self.env[e]
        if isinstance(e, Load) and e.buffer.scope == "var":
            return self.var_reg(e.buffer)            # a T.alloc_var lives in a register
        out = Reg(self.em.reg())
        self.into(out, e)
        return out

    def into(self, dst: Reg, e) -> None:
        em = self.em
        if isinstance(e, (Const, Var)) or (isinstance(e, Load) and e.buffer.scope == "var"):
            em.emit("MOV", dst, self.operand(e))
        elif isinstance(e, Binary):
            em.emit(BIN[e.op], dst, self.operand(e.lhs), self.operand(e.rhs))
        elif isinstance(e, Unary):
            em.emit("NEG" if e.op == "-" else "NOT", dst, self.operand(e.operand))
        elif isinstance(e, Cast):
            op = "CVTF" if is_float(e.dtype) else ("NE" if e.dtype == "bool" else "CVTI")
            if op == "NE":
                em.emit("NE", dst, self.operand(e.value), Imm(0))
            else:
                em.emit(op, dst, self.operand(e.value))
        elif isinstance(e, Select):
            em.emit("SEL", dst, self.operand(e.cond), self.operand(e.true_value),
                    self.operand(e.false_value))
        elif isinstance(e, Call) and e.name == "ceildiv":
            a, b = self.operand(e.args[0]), self.operand(e.args[1])
            em.emit("ADD", dst, a, b)
            em.emit("SUB", dst, dst, Imm(1))
            em.emit("FDIV", dst, dst, b)
        elif isinstance(e, Call) and e.name in CALLS:
            em.emit(CALLS[e.name], dst, self.operand(e.args[0]))
        elif isinstance(e, Call) and e.name in CALLS2:
            em.emit(CALLS2[e.name], dst, self.operand(e.args[0]), self.operand(e.args[1]))
        elif isinstance(e, Load) and e.buffer.name in em.buffers:
            self._read_on_chip(dst, e)
        elif isinstance(e, Load) and e.buffer.scope == "global":
            # one element of a global tensor (a scale, a length): a scalar load
            starts = tuple(self.operand(i) for i in e.indices)
            em.emit("LDG", dst, Glob(e.buffer.name, starts))
            if not is_float(e.dtype) and e.dtype != "bool":
                em.emit("CVTI", dst, dst)
        elif isinstance(e, BitCast):
            # the registers carry no dtype: the instruction names both
            em.emit("BITCAST", dst, self.operand(e.value), src=e.value.dtype, dst=e.dtype)
        else:
            raise unsupported(e, f"`{type(e).__name__}` in a scalar expression (data-"
                                 f"dependent values are not supported)")


    def _read_on_chip(self, dst: Reg, e) -> None:
        """One on-chip element into a register (`if mask[k]:`): the scalar unit waits for
        the engines that wrote the buffer, then reads it (LDS)."""
        em = self.em
        name = e.buffer.name
        for w in em._waits(name, "SCALAR", ("w",)):
            em.emit("SEM.WAIT", w.sem, w.phase)
        shape = em.buffers[name].shape
        flat = None
        for ix, n in zip(e.indices, shape):
            if flat is not None:
                em.emit("MUL", dst, flat, Imm(n))
                flat = dst
            term = self.operand(ix)
            if flat is None:
                flat = term
            else:
                em.emit("ADD", dst, flat, term)
        em.emit("LDS", dst, em.tile(name), flat if flat is not None else Imm(0))
        if not is_float(e.dtype) and e.dtype != "bool":
            em.emit("CVTI", dst, dst)


_GRID_OPS = {"+", "-", "*", "//", "%"}


def grid_text(e) -> str:
    """An integer expression over symbols as grid text (runtime/tcsim/grid.py)."""
    if isinstance(e, Const):
        return str(int(e.value))
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Binary) and e.op in _GRID_OPS | {"/"}:
        op = "//" if e.op == "/" else e.op
        return f"({grid_text(e.lhs)} {op} {grid_text(e.rhs)})"
    if isinstance(e, Binary) and e.op in ("min", "max"):
        return f"{e.op}({grid_text(e.lhs)}, {grid_text(e.rhs)})"
    if isinstance(e, Call) and e.name == "ceildiv":
        return f"ceildiv({grid_text(e.args[0])}, {grid_text(e.args[1])})"
    raise unsupported(e, "grid extent is not an integer expression of the sizes")
