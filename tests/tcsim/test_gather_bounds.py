"""The index bounds behind tcsim's gathered global loads (codegen/tcsim/vec_gather.py):
for random index expressions over the loop variables of a T.Parallel nest and a
run-time scalar, every value over the domain lies in [base, base + extent)."""
import itertools

from hypothesis import given, settings, strategies as st

from tilelang.codegen.tcsim.vec_gather import index_range
from tilelang.ir.nodes import Binary, Const, Var
from tilelang.ir.visitor import walk

I, J, S = Var("i"), Var("j"), Var("s")          # two loop variables, a block index


class Nest:
    """What index_range asks of the vector lowering: the domain and its lets."""

    def __init__(self, extents):
        self.dom = {I: 0, J: 1}
        self.shape = extents
        self.let_values = {}

    def depends(self, e) -> bool:
        return any(isinstance(n, Var) and n in self.dom for n in walk(e))


def _value(e, env):
    if isinstance(e, Const):
        return int(e.value)
    if isinstance(e, Var):
        return env[e]
    a, b = _value(e.lhs, env), _value(e.rhs, env)
    return {"+": a + b, "-": a - b, "*": a * b, "//": a // b if b else 0,
            "%": a % b if b else 0}[e.op]


leaves = st.sampled_from([I, J, S]) | st.integers(-9, 9).map(lambda c: Const(c, "int32"))


def _extend(children):
    const = st.integers(-4, 9).map(lambda c: Const(c, "int32"))
    positive = st.integers(1, 9).map(lambda c: Const(c, "int32"))
    return (st.tuples(st.sampled_from(["+", "-"]), children, children)
            | st.tuples(st.just("*"), children, const)
            | st.tuples(st.sampled_from(["//", "%"]), children, positive)).map(
        lambda t: Binary(t[0], t[1], t[2], "int32"))


exprs = st.recursive(leaves, _extend, max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(e=exprs, extents=st.tuples(st.integers(1, 12), st.integers(1, 12)),
       s=st.integers(-40, 40))
def test_every_value_lies_in_the_box(e, extents, s):
    nest = Nest(extents)
    r = index_range(nest, e)
    if r is None:
        return                              # not followed: the whole dim is loaded
    base, ext = r
    lo = 0 if base is None else _value(base, {S: s})
    assert ext >= 1
    for i, j in itertools.product(range(extents[0]), range(extents[1])):
        x = _value(e, {I: i, J: j, S: s})
        assert lo <= x < lo + ext, (e, (i, j), x, lo, ext)


def test_im2col_rows_are_bounded_tightly():
    # h = m % (OH * OW) // OW * S + k // (K * C) * D - P over a 16 x 16 tile:
    # the row index spans at most OH rows plus the taps of a K tile
    nest = Nest((16, 16))
    m = Binary("+", Binary("*", S, Const(16, "int32"), "int32"), I, "int32")
    h = Binary("-", Binary("+", Binary("//", Binary("%", m, Const(64, "int32"), "int32"),
                                       Const(8, "int32"), "int32"),
                           Binary("//", J, Const(24, "int32"), "int32"), "int32"),
               Const(1, "int32"), "int32")
    _, ext = index_range(nest, h)
    assert ext <= 8 + 1
