"""Small kernels the profiler and autotuner tests compile (`.tl` text)."""

GEMM = '''
import tilelang.language as T
M = T.dynamic("M")
N = T.dynamic("N")
K = T.dynamic("K")
BLOCK_M = 64
BLOCK_N = 64
BLOCK_K = 32
NUM_STAGES = 2
dtype = "float32"

@T.prim_func
def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
         C: T.Tensor((M, N), "float32")):
    with T.Kernel(T.ceildiv(N, BLOCK_N), T.ceildiv(M, BLOCK_M), threads=128) as (bx, by):
        A_s = T.alloc_shared((BLOCK_M, BLOCK_K), dtype)
        B_s = T.alloc_shared((BLOCK_K, BLOCK_N), dtype)
        C_f = T.alloc_fragment((BLOCK_M, BLOCK_N), "float32")
        T.clear(C_f)
        for k in T.Pipelined(T.ceildiv(K, BLOCK_K), num_stages=NUM_STAGES):
            T.copy(A[by * BLOCK_M, k * BLOCK_K], A_s)
            T.copy(B[k * BLOCK_K, bx * BLOCK_N], B_s)
            T.gemm(A_s, B_s, C_f)
        T.copy(C_f, C[by * BLOCK_M, bx * BLOCK_N])
'''

# out[i, :] = table[idx[i], :]: idx is an index input
GATHER = '''
import tilelang.language as T
N = T.dynamic("N")
R = T.dynamic("R")

@T.prim_func
def gather(table: T.Tensor((R, 16), "float32"), idx: T.Tensor((N,), "int32"),
           out: T.Tensor((N, 16), "float32")):
    with T.Kernel(T.ceildiv(N, 32)) as bx:
        for i, j in T.Parallel(32, 16):
            if bx * 32 + i < N:
                out[bx * 32 + i, j] = table[idx[bx * 32 + i], j]
'''

# y = x * alpha + y, written in place (no out_idx)
AXPY = '''
import tilelang.language as T
N = T.dynamic("N")
BLOCK = 1024
dtype = "float32"

@T.prim_func
def axpy(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
    with T.Kernel(T.ceildiv(N, BLOCK)) as bx:
        for i in T.Parallel(BLOCK):
            if bx * BLOCK + i < N:
                Y[bx * BLOCK + i] = X[bx * BLOCK + i] * 2.0 + Y[bx * BLOCK + i]
'''
