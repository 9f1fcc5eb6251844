"""Hand-written C kernels that follow the kernel ABI of docs/interfaces.md, so the runtime
is tested without the compiler: `name__blocks(args, begin, end)`, `name__num_blocks(args)`
and `tilelang_manifest()`. Built with the system C compiler."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")

# Each kernel: manifest entry + C body. Slots: params, then symbols, then workspaces.
KERNELS = {
    # C[i] = A[i] + B[i]; blocks of 256 elements; N is slot 3.
    "vadd": ({
        "name": "vadd",
        "params": [{"name": "A", "kind": "tensor", "dtype": "float32", "shape": ["N"],
                    "access": "read"},
                   {"name": "B", "kind": "tensor", "dtype": "float32", "shape": ["N"],
                    "access": "read"},
                   {"name": "C", "kind": "tensor", "dtype": "float32", "shape": ["N"],
                    "access": "write"}],
        "symbols": ["N"], "workspaces": [], "grid": ["(N + 255) // 256", "1", "1"],
        "threads": 128}, r"""
int64_t vadd__num_blocks(const int64_t *a) { return (a[3] + 255) / 256; }
void vadd__blocks(const int64_t *a, int64_t begin, int64_t end) {
    const float *A = (const float *)a[0], *B = (const float *)a[1];
    float *C = (float *)a[2];
    int64_t n = a[3];
    for (int64_t b = begin; b < end; b++)
        for (int64_t i = b * 256; i < b * 256 + 256 && i < n; i++) C[i] = A[i] + B[i];
}
"""),
    # Y[i, j] = alpha * X[i, j] + bias[j] + k; blocks of 8 rows; no access info (all rw).
    "axpy2d": ({
        "name": "axpy2d",
        "params": [{"name": "X", "kind": "tensor", "dtype": "float32", "shape": ["M", "N"]},
                   {"name": "bias", "kind": "tensor", "dtype": "float64", "shape": ["N"]},
                   {"name": "alpha", "kind": "scalar", "dtype": "float32"},
                   {"name": "k", "kind": "scalar", "dtype": "int32"},
                   {"name": "Y", "kind": "tensor", "dtype": "float32", "shape": ["M", "N"]}],
        "symbols": ["M", "N"], "workspaces": [], "grid": ["(M + 7) // 8", "1", "1"],
        "threads": 128}, r"""
int64_t axpy2d__num_blocks(const int64_t *a) { return (a[5] + 7) / 8; }
void axpy2d__blocks(const int64_t *a, int64_t begin, int64_t end) {
    const float *X = (const float *)a[0];
    const double *bias = (const double *)a[1];
    double alpha; memcpy(&alpha, &a[2], 8);
    int64_t k = a[3];
    float *Y = (float *)a[4];
    int64_t M = a[5], N = a[6];
    for (int64_t b = begin; b < end; b++)
        for (int64_t i = b * 8; i < b * 8 + 8 && i < M; i++)
            for (int64_t j = 0; j < N; j++)
                Y[i * N + j] = (float)(alpha * X[i * N + j] + bias[j] + (double)k);
}
"""),
    # out[i] = sum_j X[i, j] through a workspace that must arrive zeroed: partial += X.
    "rowsum": ({
        "name": "rowsum",
        "params": [{"name": "X", "kind": "tensor", "dtype": "float32", "shape": ["M", 4],
                    "access": "read"},
                   {"name": "out", "kind": "tensor", "dtype": "float32", "shape": ["M"],
                    "access": "write"}],
        "symbols": ["M"], "workspaces": [{"name": "partial", "dtype": "float32",
                                          "shape": ["M", 4]}],
        "grid": ["M", "1", "1"], "threads": 1}, r"""
int64_t rowsum__num_blocks(const int64_t *a) { return a[2]; }
void rowsum__blocks(const int64_t *a, int64_t begin, int64_t end) {
    const float *X = (const float *)a[0];
    float *out = (float *)a[1], *partial = (float *)a[3];
    for (int64_t i = begin; i < end; i++) {
        float s = 0;
        for (int j = 0; j < 4; j++) { partial[i * 4 + j] += X[i * 4 + j]; s += partial[i * 4 + j]; }
        out[i] = s;
    }
}
"""),
    # hits[b] += 1 and tids[b] = the thread that ran block b; a grid of NB blocks.
    "mark": ({
        "name": "mark",
        "params": [{"name": "hits", "kind": "tensor", "dtype": "int32", "shape": ["NB"]},
                   {"name": "tids", "kind": "tensor", "dtype": "int64", "shape": ["NB"]},
                   {"name": "spin_us", "kind": "scalar", "dtype": "int64"}],
        "symbols": ["NB"], "workspaces": [], "grid": ["NB", "1", "1"], "threads": 1}, r"""
int64_t mark__num_blocks(const int64_t *a) { return a[3]; }
void mark__blocks(const int64_t *a, int64_t begin, int64_t end) {
    int32_t *hits = (int32_t *)a[0];
    int64_t *tids = (int64_t *)a[1];
    for (int64_t b = begin; b < end; b++) {
        hits[b] += 1;
        tids[b] = (int64_t)syscall(SYS_gettid);
        if (a[2] > 0) usleep((useconds_t)a[2]);
    }
}
"""),
    # out[k] = args[k + 1] for the 6 scalars and the symbol M: shows the packed slots.
    "echo": ({
        "name": "echo",
        "params": [{"name": "out", "kind": "tensor", "dtype": "int64", "shape": [8]},
                   {"name": "i8", "kind": "scalar", "dtype": "int8"},
                   {"name": "u8", "kind": "scalar", "dtype": "uint8"},
                   {"name": "flag", "kind": "scalar", "dtype": "bool"},
                   {"name": "x", "kind": "scalar", "dtype": "float32"},
                   {"name": "y", "kind": "scalar", "dtype": "float64"},
                   {"name": "n", "kind": "scalar", "dtype": "int64"},
                   {"name": "t", "kind": "tensor", "dtype": "bfloat16", "shape": ["M", 2]}],
        "symbols": ["M"], "workspaces": [], "grid": ["1", "1", "1"], "threads": 1}, r"""
int64_t echo__num_blocks(const int64_t *a) { (void)a; return 1; }
void echo__blocks(const int64_t *a, int64_t begin, int64_t end) {
    int64_t *out = (int64_t *)a[0];
    (void)begin; (void)end;
    for (int k = 0; k < 6; k++) out[k] = a[k + 1];
    out[6] = a[8];                              /* the symbol M */
    out[7] = (int64_t)((const uint16_t *)a[7])[0];   /* first bf16 element's bits */
}
"""),
}

HEADER = r"""
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
"""


def c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def library_source(names, manifest_overrides=None, omit_symbols=(), kernels=None) -> str:
    """C source of a library holding `names` (from `kernels`, default KERNELS);
    `manifest_overrides` patches the manifest (to write bad ones) and `omit_symbols`
    leaves functions out (as `static` copies)."""
    kernels = kernels or KERNELS
    manifest = {"format": 1, "compiler_version": "0.1.0",
                "target": {"triple": "x86_64-unknown-linux-gnu", "cpu": "generic",
                           "features": ""},
                "kernels": [kernels[n][0] for n in names]}
    manifest.update(manifest_overrides or {})
    body = "".join(kernels[n][1] for n in names)
    for sym in omit_symbols:
        body = body.replace(f"int64_t {sym}(", f"static int64_t {sym}_unused(")
        body = body.replace(f"void {sym}(", f"static void {sym}_unused(")
    return (HEADER + body + "\nconst char *tilelang_manifest(void) { return "
            + c_string(json.dumps(manifest)) + "; }\n")


def build(source: str, path: str) -> str:
    """Compile C `source` into the shared library `path`."""
    c_path = os.path.splitext(path)[0] + ".c"
    with open(c_path, "w") as f:
        f.write(source)
    subprocess.run([CC, "-O2", "-shared", "-fPIC", "-Wno-unused-function", "-o", path,
                    c_path], check=True, capture_output=True, text=True)
    return path
