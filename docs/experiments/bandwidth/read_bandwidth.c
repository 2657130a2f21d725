/* Read bandwidth of one core for buffers of 1 to 64 MB (docs/benchmarks.md, session 32).
 * Each buffer is summed with AVX2 loads, four accumulators, enough times to read 2 GB.
 * Build and run: gcc -O2 -mavx2 read_bandwidth.c -o read_bandwidth && ./read_bandwidth
 * Not part of the product; the sum is printed only so that the loop is not removed. */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
    for (size_t mb = 1; mb <= 64; mb *= 2) {
        size_t n = mb * 1024 * 1024 / 8;
        double *a = aligned_alloc(64, n * 8);
        for (size_t i = 0; i < n; i++) a[i] = i * 1e-9;
        int reps = 2000 / mb;
        __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
        double t0 = now();
        for (int r = 0; r < reps; r++)
            for (size_t i = 0; i < n; i += 16) {
                s0 = _mm256_add_pd(s0, _mm256_load_pd(a + i));
                s1 = _mm256_add_pd(s1, _mm256_load_pd(a + i + 4));
                s2 = _mm256_add_pd(s2, _mm256_load_pd(a + i + 8));
                s3 = _mm256_add_pd(s3, _mm256_load_pd(a + i + 12));
            }
        double t = now() - t0;
        double out[4];
        _mm256_storeu_pd(out, _mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3)));
        printf("%zu MB: %.1f GB/s (sum %g)\n", mb, reps * (double)n * 8 / t / 1e9, out[0]);
        free(a);
    }
    return 0;
}
