/* Calling an ahead-of-time compiled kernel from C.
 *
 *   tilec compile examples/gemm.tl -o gemm.so          # writes gemm.so and gemm.h
 *   cc -O2 -I. examples/aot/gemm_main.c ./gemm.so -o gemm_main -Wl,-rpath,'$ORIGIN'
 *   ./gemm_main 300 200 100
 *
 * `gemm(A, B, C, M, K, N)` runs the whole grid on the calling thread; the symbolic sizes
 * follow the tensors, in the order the header lists them. The result is checked against
 * a plain triple loop in double precision. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gemm.h"

static float uniform(unsigned *state) {
    *state = *state * 1664525u + 1013904223u;
    return (float)((*state >> 8) & 0xffff) / 32768.0f - 1.0f;   /* [-1, 1) */
}

int main(int argc, char **argv) {
    int64_t M = argc > 1 ? atoll(argv[1]) : 300;
    int64_t K = argc > 2 ? atoll(argv[2]) : 200;
    int64_t N = argc > 3 ? atoll(argv[3]) : 100;
    float *A = malloc(sizeof(float) * M * K);
    float *B = malloc(sizeof(float) * K * N);
    float *C = malloc(sizeof(float) * M * N);
    if (!A || !B || !C) {
        fprintf(stderr, "out of memory\n");
        return 2;
    }
    unsigned state = 1;
    for (int64_t i = 0; i < M * K; i++) A[i] = uniform(&state);
    for (int64_t i = 0; i < K * N; i++) B[i] = uniform(&state);

    gemm(A, B, C, M, K, N);

    /* float32 accumulation of K terms: within K * 2^-24 * sum|a b| of the exact sum */
    double worst = 0.0;
    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++) {
            double exact = 0.0, abs_sum = 0.0;
            for (int64_t k = 0; k < K; k++) {
                exact += (double)A[i * K + k] * B[k * N + j];
                abs_sum += fabs((double)A[i * K + k] * B[k * N + j]);
            }
            double err = fabs(C[i * N + j] - exact) / (abs_sum > 0 ? abs_sum : 1.0);
            if (err > worst) worst = err;
        }
    }
    int ok = worst <= 1e-5;
    printf("gemm %lldx%lldx%lld from C: max error %.2e (relative to sum|a b|) %s\n",
           (long long)M, (long long)N, (long long)K, worst, ok ? "PASS" : "FAIL");
    free(A);
    free(B);
    free(C);
    return ok ? 0 : 1;
}
