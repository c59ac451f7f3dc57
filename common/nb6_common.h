/* nb6_common.h -- small helpers shared by libgpunb and libgpuirr: error
 * messages, clocks, environment switches.  Internal: hidden from the
 * installed libraries' symbol tables (NB6_INTERNAL). */
#ifndef NB6_COMMON_H
#define NB6_COMMON_H

#include <stddef.h>
#if defined(__SSE2__) && !defined(__CUDACC__)
#include <emmintrin.h>
#endif

#if defined(__GNUC__)
#define NB6_INTERNAL __attribute__((visibility("hidden")))
#define NB6_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define NB6_NORETURN __attribute__((noreturn))
#else
#define NB6_INTERNAL
#define NB6_PRINTF(a, b)
#define NB6_NORETURN
#endif

/* Helpers that CUDA kernels call too. */
#ifdef __CUDACC__
#define NB6_HOST_DEVICE __host__ __device__
#else
#define NB6_HOST_DEVICE
#endif

#define NB6_ERRMSG_LEN 512

/* Format a message into buf (NB6_ERRMSG_LEN bytes). */
NB6_INTERNAL void nb6_format(char *buf, const char *fmt, ...) NB6_PRINTF(2, 3);

/* Monotonic wall clock in seconds (arbitrary origin). */
NB6_INTERNAL double nb6_clock(void);

/* Seconds since the process loaded the library (NBODY6's WTIME origin). */
NB6_INTERNAL double nb6_process_time(void);

/* Value of an environment variable, or NULL when unset or empty. */
NB6_INTERNAL const char *nb6_getenv(const char *name);

/* Number of OpenMP threads a parallel region will use (1 without OpenMP). */
NB6_INTERNAL int nb6_max_threads(void);

/* The CPU this thread runs on now (-1 where the system does not say), this
 * thread's number in its OpenMP team and the team's size (0 and 1 without
 * OpenMP): for diagnostics. */
NB6_INTERNAL int nb6_current_cpu(void);
NB6_INTERNAL int nb6_thread_num(void);
NB6_INTERNAL int nb6_team_size(void);

/* Once per process and library: warn on stderr if OpenMP work-sharing does
 * not work here (two OpenMP runtimes loaded: see nb6_common.c). */
NB6_INTERNAL void nb6_check_openmp_runtime(const char *library);

/* Index of the first non-finite value in v[0..n-1], or -1. */
NB6_INTERNAL long nb6_first_nonfinite(const double *v, long n);

/* Index of the first value below zero in v[0..n-1] (finite ones), or -1. */
NB6_INTERNAL long nb6_first_negative(const double *v, long n);

/* Whether a particle's state (three 3-vectors and two scalars, the 14
 * values a set-particle call takes) is all finite: v - v is 0 for a finite
 * v and NaN otherwise, so one sum answers without a call or a branch per
 * value.  The per-step set calls (10^8 a run) check this way first and name
 * the culprit with nb6_first_nonfinite only when it fails. */
static inline int nb6_state_finite(const double a[3], const double b[3], const double c[3], const double d[3],
                                   double e, double f)
{
    double s = (e - e) + (f - f);
    for (int k = 0; k < 3; k++)
        s += (a[k] - a[k]) + (b[k] - b[k]) + (c[k] - c[k]) + (d[k] - d[k]);
    return s == 0.0;
}

/* The legacy NBODY6 entry points have no status argument: they print the
 * reason ("nb6accel: <message>") on stderr and stop the program with exit
 * status 2.  nb6_legacy_require_open stops with "<routine> called before
 * <opener>" when handle is NULL. */
NB6_INTERNAL NB6_NORETURN void nb6_legacy_stop(const char *message);
NB6_INTERNAL void nb6_legacy_require_open(const void *handle, const char *routine,
                                          const char *opener, const char *closer);

/* Orders this thread's earlier streaming stores (GPUNB's and GPUIRR's
 * records, which only a locked instruction or a fence order) before what
 * it does next: each library calls it before it reads its records or
 * starts a copy of them. */
static inline void nb6_stream_fence(void)
{
#if defined(__SSE2__) && !defined(__CUDACC__)
    _mm_sfence();
#endif
}

/* x as two floats, hi = (float)x and lo = (float)(x - hi), together good to
 * about 48 bits.  hi passes through an empty asm statement so that the
 * compiler cannot see that it came from x: GCC 12.2's SLP vectorizer at -O3
 * folds (double)(float)x back to x and so makes lo = 0 (positions then lose
 * everything below a float ulp; caught by test_gpuirr built with -O3). */
static inline void nb6_split(double x, float *hi, float *lo)
{
    float h = (float)x;
#if defined(__GNUC__) && !defined(__CUDA_ARCH__) && (defined(__x86_64__) || defined(__i386__)) && defined(__SSE__)
    __asm__("" : "+x"(h));
#elif defined(__GNUC__) && !defined(__CUDA_ARCH__) && defined(__aarch64__)
    __asm__("" : "+w"(h));
#else
    volatile float opaque = h;
    h = opaque;
#endif
    *hi = h;
    *lo = (float)(x - (double)h);
}

/* The Morton code of a cell of a 1024^3 grid (each c[k] < 1024): the bits
 * of the three coordinates interleaved, x lowest.  (The GPU's spatial order
 * and the tests' use the same code.) */
static inline NB6_HOST_DEVICE unsigned nb6_morton10(const unsigned c[3])
{
    unsigned key = 0;
    for (int k = 0; k < 3; k++) {
        unsigned v = c[k] & 0x3ffu;
        v = (v | (v << 16)) & 0x30000ffu;
        v = (v | (v << 8)) & 0x300f00fu;
        v = (v | (v << 4)) & 0x30c30c3u;
        key |= ((v | (v << 2)) & 0x9249249u) << k;
    }
    return key;
}

/* Allocation aligned to 64 bytes, zeroed; NULL on failure.  Free with nb6_free. */
NB6_INTERNAL void *nb6_alloc(size_t bytes);
/* The same aligned to align (a power of two, at least sizeof(void *)). */
NB6_INTERNAL void *nb6_alloc_aligned(size_t align, size_t bytes);
NB6_INTERNAL void nb6_free(void *p);

#endif
