/* nb6_common.h -- small helpers shared by libgpunb and libgpuirr: error
 * messages, clocks, environment switches.  Internal: hidden from the
 * installed libraries' symbol tables (NB6_INTERNAL). */
#ifndef NB6_COMMON_H
#define NB6_COMMON_H

#include <stddef.h>

#if defined(__GNUC__)
#define NB6_INTERNAL __attribute__((visibility("hidden")))
#define NB6_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define NB6_NORETURN __attribute__((noreturn))
#else
#define NB6_INTERNAL
#define NB6_PRINTF(a, b)
#define NB6_NORETURN
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

/* Index of the first non-finite value in v[0..n-1], or -1. */
NB6_INTERNAL long nb6_first_nonfinite(const double *v, long n);

/* The legacy NBODY6 entry points have no status argument: they print the
 * reason ("nb6accel: <message>") on stderr and stop the program with exit
 * status 2.  nb6_legacy_require_open stops with "<routine> called before
 * <opener>" when handle is NULL. */
NB6_INTERNAL NB6_NORETURN void nb6_legacy_stop(const char *message);
NB6_INTERNAL void nb6_legacy_require_open(const void *handle, const char *routine,
                                          const char *opener, const char *closer);

/* Allocation aligned to 64 bytes, zeroed; NULL on failure.  Free with nb6_free. */
NB6_INTERNAL void *nb6_alloc(size_t bytes);
NB6_INTERNAL void nb6_free(void *p);

#endif
