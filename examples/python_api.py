"""The Python entry points, end to end: `tilelang.compile` on a `.tl` file,
`@tilelang.kernel` on a Python function, `@tilelang.jit` on a TileLang-style factory,
and `tilelang.load` on an ahead-of-time library.

    python examples/python_api.py

Each step checks its result against numpy and the script exits non-zero on a mismatch.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import tilelang
import tilelang.language as T

HERE = Path(__file__).resolve().parent
N = T.dynamic("N")
BLOCK = 256


# A kernel written in Python: the body is parsed by the tile-language frontend, never
# executed; BLOCK and N are resolved from this module's globals.
@tilelang.kernel(out_idx=[-1])
def axpy(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32"), alpha: T.float32,
         Z: T.Tensor((N,), "float32")):
    with T.Kernel(T.ceildiv(N, BLOCK), threads=128) as bx:
        for i in T.Parallel(BLOCK):
            idx = bx * BLOCK + i
            if idx < N:
                Z[idx] = alpha * X[idx] + Y[idx]


# TileLang's factory form: the arguments are compile-time parameters; each distinct
# tuple is compiled once (and cached on disk).
@tilelang.jit(out_idx=[-1])
def scaled_copy(block, scale):
    @T.prim_func
    def kernel(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            X_f = T.alloc_fragment((block,), "float32")
            T.copy(X[bx * block], X_f)
            for i in T.Parallel(block):
                X_f[i] = X_f[i] * scale
            T.copy(X_f, Y[bx * block])
    return kernel


def check(name: str, got, want, rtol=1e-6, atol=0.0) -> bool:
    ok = np.allclose(got, want, rtol=rtol, atol=atol)
    print(f"{name:40} {'PASS' if ok else 'FAIL'}")
    return ok


def main() -> int:
    rng = np.random.default_rng(0)
    ok = True

    # 1. a .tl file; one kernel, so `compile` returns a callable; out_idx=[-1] returns C
    gemm = tilelang.compile(str(HERE / "gemm.tl"), out_idx=[-1],
                            defines={"in_dtype": "float16"})
    a = rng.standard_normal((300, 200)).astype(np.float16)
    b = rng.standard_normal((200, 100)).astype(np.float16)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    # a float32 dot product of 200 terms: error within 200 u of (|a| @ |b|)
    ok &= check("tilelang.compile(gemm.tl, fp16 in)", gemm(a, b), a64 @ b64,
                rtol=0, atol=1e-5 * float((np.abs(a64) @ np.abs(b64)).max()))

    # 2. a file with two kernels: a library, kernels by name
    sums = tilelang.compile(str(HERE / "reduce.tl"))
    x = rng.standard_normal((100, 30)).astype(np.float32)
    rows = np.zeros(100, np.float32)
    sums["row_sum"](x, rows)
    ok &= check("tilelang.compile(reduce.tl)['row_sum']", rows, x.sum(axis=1),
                rtol=0, atol=1e-5 * float(np.abs(x).sum(axis=1).max()))

    # 3. @tilelang.kernel, with a scalar argument
    xs, ys = rng.standard_normal(1000).astype(np.float32), np.ones(1000, np.float32)
    ok &= check("@tilelang.kernel axpy", axpy(xs, ys, 2.0), 2.0 * xs + ys)

    # 4. @tilelang.jit: two parameter tuples, two kernels
    ok &= check("@tilelang.jit scaled_copy(128, 2.0)", scaled_copy(128, 2.0)(xs), 2.0 * xs)
    ok &= check("@tilelang.jit scaled_copy(64, -1.0)", scaled_copy(64, -1.0)(xs), -xs)

    # 5. ahead of time: tilec writes a shared library; tilelang.load runs it (the
    #    loading process needs neither llvmlite nor lark)
    with tempfile.TemporaryDirectory() as tmp:
        so = str(Path(tmp) / "vector_add.so")
        subprocess.run([sys.executable, "-m", "tilelang.cli", "compile",
                        str(HERE / "vector_add.tl"), "-o", so], check=True)
        lib = tilelang.load(so)             # lib["vector_add"], or the library itself:
        c = np.zeros(1000, np.float32)      # it holds one kernel
        lib(xs, ys, c)
        ok &= check("tilelang.load(vector_add.so)", c, xs + ys)

    print("all steps match numpy" if ok else "SOME STEPS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
