"""First checks: a pipelined, tiled GEMM in TileLang's style parses, and print -> parse
gives the same IR."""
from tilelang.frontend import parse_module
from tilelang.ir.printer import print_module
from tilelang.ir.nodes import Kernel, For, Gemm

GEMM = '''
import tilelang.language as T

M = T.dynamic("M")
N = T.dynamic("N")
K = T.dynamic("K")
BLOCK_M = 128
BLOCK_N = 128
BLOCK_K = 32

@T.prim_func
def gemm(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
         C: T.Tensor((M, N), "float32")):
    with T.Kernel(T.ceildiv(N, BLOCK_N), T.ceildiv(M, BLOCK_M), threads=128) as (bx, by):
        A_s = T.alloc_shared((BLOCK_M, BLOCK_K), "float16")
        B_s = T.alloc_shared((BLOCK_K, BLOCK_N), "float16")
        C_f = T.alloc_fragment((BLOCK_M, BLOCK_N), "float32")
        T.clear(C_f)
        for k in T.Pipelined(T.ceildiv(K, BLOCK_K), num_stages=3):
            T.copy(A[by * BLOCK_M, k * BLOCK_K], A_s)
            T.copy(B[k * BLOCK_K, bx * BLOCK_N], B_s)
            T.gemm(A_s, B_s, C_f)
        T.copy(C_f, C[by * BLOCK_M, bx * BLOCK_N])
'''


def test_gemm_parses():
    mod = parse_module(GEMM, "gemm.tl")
    f = mod.func("gemm")
    assert [s.name for s in f.symbols] == ["M", "K", "N"]
    kernel = f.body.stmts[-1]
    assert isinstance(kernel, Kernel) and kernel.threads == 128
    loop = [s for s in kernel.body.stmts if isinstance(s, For)][0]
    assert loop.kind == "pipelined" and loop.annotation("num_stages") == 3
    assert isinstance(loop.body.stmts[-1], Gemm)


def test_gemm_round_trip():
    mod = parse_module(GEMM, "gemm.tl")
    text = print_module(mod)
    assert parse_module(text, "printed.tl") == mod
    assert print_module(parse_module(text, "printed.tl")) == text


def test_defines_override_constants():
    mod = parse_module(GEMM, "gemm.tl", defines={"BLOCK_M": "64"})
    kernel = mod.func("gemm").body.stmts[-1]
    assert kernel.body.stmts[0].buffer.shape[0].value == 64
