"""Shapes given by size expressions in the manifest (`"M * 2"`, `"(N + 3) // 4"`):
checked on inputs, evaluated for out_idx outputs and workspaces, names validated."""
import numpy as np
import pytest

from tilelang.diagnostics import ArtifactError
from tilelang.runtime.sizes import SizeExpr

import runtime_ckernels as ck

# pairsum(X: float32[M, 2], scale: int32, Y: float32[M * scale]) with a workspace sized
# by a manifest `let`: Y[i*scale + s] = X[i, 0] + X[i, 1] (+ ws, which is zero).
PAIRSUM = ({
    "name": "pairsum",
    "params": [{"name": "X", "kind": "tensor", "dtype": "float32", "shape": ["M", 2]},
               {"name": "scale", "kind": "scalar", "dtype": "int32"},
               {"name": "Y", "kind": "tensor", "dtype": "float32", "shape": ["M * scale"]}],
    "symbols": ["M"],
    "lets": [{"name": "rows", "expr": "ceildiv(M, 4) * 4"}],
    "workspaces": [{"name": "ws", "dtype": "float32", "shape": ["rows", "max(scale, 1)"]}],
    "grid": ["1", "1", "1"], "threads": 1}, r"""
int64_t pairsum__num_blocks(const int64_t *a) { (void)a; return 1; }
void pairsum__blocks(const int64_t *a, int64_t begin, int64_t end) {
    const float *X = (const float *)a[0];
    int64_t scale = a[1], M = a[3];
    float *Y = (float *)a[2], *ws = (float *)a[4];
    (void)begin; (void)end;
    for (int64_t i = 0; i < M; i++)
        for (int64_t s = 0; s < scale; s++)
            Y[i * scale + s] = X[2 * i] + X[2 * i + 1] + ws[i * scale + s];
}
""")


@pytest.fixture(scope="module")
def pairsum(tmp_path_factory):
    if ck.CC is None:
        pytest.skip("no C compiler on this machine")
    path = str(tmp_path_factory.mktemp("sizes") / "pairsum.so")
    from tilelang.runtime.artifact import load
    src = ck.library_source(["pairsum"], kernels={"pairsum": PAIRSUM})
    return load(ck.build(src, path)).pairsum


def test_expression_output_and_workspace(pairsum):
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    y = pairsum(x, 3, out_idx=-1)
    assert y.shape == (15,)
    np.testing.assert_array_equal(y, np.repeat(x.sum(axis=1), 3))


def test_expression_input_checked(pairsum):
    x = np.ones((5, 2), np.float32)
    pairsum(x, 2, np.zeros(10, np.float32))
    with pytest.raises(ValueError, match=r"'Y'.*M \* scale = 10 \(M = 5, scale = 2\), got 11"):
        pairsum(x, 2, np.zeros(11, np.float32))


def test_negative_expression_size(pairsum):
    with pytest.raises(ValueError, match="'Y'.*negative"):
        pairsum(np.ones((5, 2), np.float32), -1, out_idx=-1)


def test_size_expr_semantics():
    env = {"M": 7, "K": -3}
    assert SizeExpr("(M + 3) // 4", "t").evaluate(env) == 2
    assert SizeExpr("K // 2", "t").evaluate(env) == -2          # floor, as in the IR
    assert SizeExpr("K % 4", "t").evaluate(env) == 1
    assert SizeExpr("ceildiv(M, 2)", "t").evaluate(env) == 4
    assert SizeExpr("min(M, 3) - -1", "t").evaluate(env) == 4
    assert SizeExpr("max(M, K)", "t").names == {"M", "K"}
    with pytest.raises(ValueError, match="divides by zero"):
        SizeExpr("M // (K + 3)", "t").evaluate(env)
    for bad in ("M ** 2", "__import__('os')", "M.x", "f(M)", "1.5", "M if K else 2"):
        with pytest.raises(ArtifactError):
            SizeExpr(bad, "t")


def test_unknown_name_in_expression_is_reported_at_call(build_lib):
    entry = dict(PAIRSUM[0], workspaces=[{"name": "ws", "dtype": "float32",
                                          "shape": ["num_split * M"]}])
    from tilelang.runtime.artifact import load
    lib = load(build_lib(["pairsum"], manifest_overrides={"kernels": [entry]},
                         kernels={"pairsum": PAIRSUM}))
    with pytest.raises(ArtifactError, match="'num_split'.*cannot compute"):
        lib.pairsum(np.ones((2, 2), np.float32), 1, out_idx=-1)
