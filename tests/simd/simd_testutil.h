/* simd_testutil.h -- what the SIMD tests and benchmarks share: a random
 * generator seeded afresh each run (NB6_TEST_SEED=<n> repeats one), the SIMD
 * levels and whether this build and CPU have them, thread control, the CPU
 * model.  Header-only so that each program stays one file. */
#ifndef SIMD_TESTUTIL_H
#define SIMD_TESTUTIL_H

#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static uint64_t rng_state;

static inline uint64_t rng_seed_fresh(void)
{
    const char *s = getenv("NB6_TEST_SEED");
    uint64_t seed = s ? strtoull(s, NULL, 10)
                      : (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid() << 16;
    rng_state = seed ? seed : 1;
    return seed;
}

static inline uint64_t rng_next(void) /* xorshift64* */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

/* Uniform in [0, 1). */
static inline double rng_uniform(void) { return (double)(rng_next() >> 11) * 0x1.0p-53; }

/* Uniform integer in 0..n-1. */
static inline int rng_int(int n) { return (int)(rng_uniform() * n); }

static inline double rng_normal(void)
{
    double u = rng_uniform(), v = rng_uniform();
    return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}

/* A point of a Plummer sphere of unit scale radius (radius capped at 20). */
static inline void rng_plummer(double x[3])
{
    double r;
    do
        r = 1.0 / sqrt(pow(rng_uniform() * 0.999 + 1e-6, -2.0 / 3.0) - 1.0);
    while (r > 20.0);
    double ct = 2.0 * rng_uniform() - 1.0, st = sqrt(1.0 - ct * ct), ph = 6.283185307179586 * rng_uniform();
    x[0] = r * st * cos(ph);
    x[1] = r * st * sin(ph);
    x[2] = r * ct;
}

/* SIMD levels in the order of NB6ACCEL_SIMD's values. */
enum { NLEVELS = 5 };
static const char *const level_name[NLEVELS] = {"scalar", "sse2", "avx", "avx2", "avx512"};

static inline int level_compiled(int l)
{
    switch (l) {
    case 0:
        return 1;
#ifdef NB6ACCEL_HAVE_SSE2
    case 1:
        return 1;
#endif
#ifdef NB6ACCEL_HAVE_AVX
    case 2:
        return 1;
#endif
#ifdef NB6ACCEL_HAVE_AVX2
    case 3:
        return 1;
#endif
#ifdef NB6ACCEL_HAVE_AVX512
    case 4:
        return 1;
#endif
    default:
        return 0;
    }
}

static inline int level_cpu_has(int l)
{
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    __builtin_cpu_init();
    switch (l) {
    case 0:
        return 1;
    case 1:
        return __builtin_cpu_supports("sse2");
    case 2:
        return __builtin_cpu_supports("avx");
    case 3:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case 4:
        return __builtin_cpu_supports("avx512f");
    }
    return 0;
#else
    return l == 0;
#endif
}

static inline void set_threads(int n)
{
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    (void)n;
#endif
}

static inline int max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* "model name" of /proc/cpuinfo, or "unknown CPU". */
static inline const char *cpu_model(void)
{
    static char model[256] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    if (!f)
        return model;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0) {
            char *p = strchr(line, ':');
            if (p) {
                p += 1 + strspn(p + 1, " \t");
                p[strcspn(p, "\n")] = 0;
                snprintf(model, sizeof model, "%s", p);
            }
            break;
        }
    fclose(f);
    return model;
}

/* Clock of the benchmarks: wall time, or with NB6_BENCH_CPUTIME set the
 * process's CPU time (for 1-thread figures on a shared, busy machine). */
static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(getenv("NB6_BENCH_CPUTIME") ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

#endif
