"""Python-side helpers of TileLang factories: tilelang.cdiv / next_power_of_2, T.ceildiv
and T.max on ints, tuples computed by the factory used as shapes, shape expressions."""
import numpy as np

import tilelang
import tilelang.language as T

from .helpers import close, randn


def test_helpers_compute_on_python_numbers():
    assert tilelang.cdiv(129, 64) == 3 and T.ceildiv(129, 64) == 3
    assert tilelang.next_power_of_2(300) == 512 and tilelang.next_power_of_2(1) == 1
    assert T.max(3, 7) == 7 and T.min(3, 7) == 3 and T.floordiv(-7, 2) == -4
    assert T.truncdiv(-7, 2) == -3 and T.clamp(9, 0, 4) == 4


def test_submodules_as_attributes_of_a_fresh_import():
    """`import tilelang` then `tilelang.language.X` (as `import tilelang as tl; T =
    tl.language`): the lazy attribute imported itself forever (RecursionError)."""
    import subprocess
    import sys
    code = ("import tilelang as tl; T = tl.language; "
            "print(T.Kernel.__name__, tl.layout.__name__, tl.profiler.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["Kernel", "tilelang.layout", "tilelang.profiler"]


@tilelang.jit(out_idx=[-1])
def rowsum(M, N):
    BN = min(tilelang.next_power_of_2(N), 64)
    grid = T.ceildiv(M, 4)                          # computed by Python
    x_shape = (4, BN)                                # a tuple as a shape
    out_shape = (M, T.ceildiv(N, BN))

    @T.prim_func
    def kernel(X: T.Tensor((M, N), "float32"), Y: T.Tensor(out_shape, "float32")):
        with T.Kernel(grid, threads=32) as bx:
            x = T.alloc_fragment(x_shape, "float32")
            s = T.alloc_fragment((4,), "float32")
            for k in range(out_shape[1]):
                T.copy(X[bx * 4, k * BN], x)
                T.reduce_sum(x, s, dim=1)
                for i in T.Parallel(4):
                    Y[bx * 4 + i, k] = s[i]
    return kernel


def test_factory_shapes_and_grids(target):
    x = randn(10, 150)
    want = np.stack([x[:, k * 64:(k + 1) * 64].sum(1) for k in range(3)], 1)
    close(rowsum(10, 150)(x), want, 1e-4, 1e-4)


def test_shape_expressions_of_symbolic_sizes(target):
    N = T.dynamic("N")

    @tilelang.jit
    def pairs(block):
        @T.prim_func
        def kernel(X: T.Tensor((N * 2,), "float32"), Y: T.Tensor((N,), "float32")):
            with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
                for i in T.Parallel(block):
                    if bx * block + i < N:
                        Y[bx * block + i] = X[(bx * block + i) * 2] + X[(bx * block + i) * 2 + 1]
        return kernel
    x = randn(2 * 37)
    y = np.zeros(37, np.float32)          # N is bound from Y (X's shape is N * 2)
    pairs(16)(x, y)
    close(y, x[0::2] + x[1::2])
