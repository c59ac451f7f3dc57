#include "config.h"
#include "nb6_common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

void nb6_format(char *buf, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, NB6_ERRMSG_LEN, fmt, ap);
    va_end(ap);
}

double nb6_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* NBODY6's WTIME reports time since start; the original libraries took that
 * origin in a static initialiser, before the Fortran main program ran. */
static double process_origin;

#if defined(__GNUC__)
__attribute__((constructor)) static void take_process_origin(void)
{
    process_origin = nb6_clock();
}
#endif

double nb6_process_time(void)
{
    if (process_origin == 0.0)
        process_origin = nb6_clock();
    return nb6_clock() - process_origin;
}

const char *nb6_getenv(const char *name)
{
    const char *v = getenv(name);
    return (v && *v) ? v : NULL;
}

int nb6_max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

long nb6_first_nonfinite(const double *v, long n)
{
    for (long k = 0; k < n; k++)
        if (!isfinite(v[k]))
            return k;
    return -1;
}

void *nb6_alloc(size_t bytes)
{
    void *p = NULL;
    if (bytes == 0)
        bytes = 64;
    bytes = (bytes + 63) & ~(size_t)63;
    p = aligned_alloc(64, bytes);
    if (p)
        memset(p, 0, bytes);
    return p;
}

void nb6_free(void *p)
{
    free(p);
}

void nb6_legacy_stop(const char *message)
{
    fprintf(stderr, "nb6accel: %s\n", message);
    fflush(stderr);
    exit(2);
}

void nb6_legacy_require_open(const void *handle, const char *routine, const char *opener,
                             const char *closer)
{
    char msg[NB6_ERRMSG_LEN];
    if (handle)
        return;
    nb6_format(msg, "%s called before %s (or after %s)", routine, opener, closer);
    nb6_legacy_stop(msg);
}
