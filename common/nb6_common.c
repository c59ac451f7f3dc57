#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_getcpu */
#endif
#include "config.h"
#include "nb6_common.h"

#if defined(__linux__)
#include <sched.h>
#include <sys/mman.h>
#endif

#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
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

/* Blocks of the check loops below: a vectorised pass over a block, then a
 * value-by-value search only in a block that fails.  A search with an exit
 * per value does not vectorise; it took 130-240 us for the 458 752 values of
 * a 64k gpunb_send, each time NBODY6 sends its j-set.
 *
 * From CHECK_PARALLEL_MIN values the blocks are checked on the OpenMP team,
 * in the static split NBODY6's CXVPRED (gpuirr_host_predict) uses to write
 * X and XDOT just before GPUNB_SEND checks them: each thread reads its own
 * share from its own cache.  On one thread the check of the 64k j-set took
 * 1.6 % of NBODY6's master thread (perf, session 30), time in which the
 * whole run waits.  Callers inside a parallel region get a team of one. */
enum { CHECK_BLOCK = 2048, CHECK_PARALLEL_MIN = 32768 };

static int block_has_nonfinite(const double *v, long b, long e)
{
    double s = 0.0; /* v - v: 0 for a finite v, NaN otherwise */
#pragma omp simd reduction(+ : s)
    for (long k = b; k < e; k++)
        s += v[k] - v[k];
    return s != 0.0;
}

static int block_has_negative(const double *v, long b, long e)
{
    int any = 0;
#pragma omp simd reduction(| : any)
    for (long k = b; k < e; k++)
        any |= v[k] < 0.0;
    return any;
}

/* The first block of v[0..n-1] where has() holds, or -1. */
static long first_block(const double *v, long n, int (*has)(const double *, long, long))
{
    const long nblocks = (n + CHECK_BLOCK - 1) / CHECK_BLOCK;
    long first = nblocks;
#pragma omp parallel for schedule(static) reduction(min : first) if (n >= CHECK_PARALLEL_MIN)
    for (long blk = 0; blk < nblocks; blk++) {
        const long b = blk * CHECK_BLOCK, e = b + CHECK_BLOCK < n ? b + CHECK_BLOCK : n;
        if (blk < first && has(v, b, e))
            first = blk;
    }
    return first < nblocks ? first : -1;
}

long nb6_first_nonfinite(const double *v, long n)
{
    const long blk = first_block(v, n, block_has_nonfinite);
    if (blk >= 0)
        for (long k = blk * CHECK_BLOCK; k < n; k++)
            if (!isfinite(v[k]))
                return k;
    return -1;
}

long nb6_first_negative(const double *v, long n)
{
    const long blk = first_block(v, n, block_has_negative);
    if (blk >= 0)
        for (long k = blk * CHECK_BLOCK; k < n; k++)
            if (v[k] < 0.0)
                return k;
    return -1;
}

/* Arrays of at least this size go on transparent huge pages where the
 * kernel offers them only on request (THP "madvise", the usual default):
 * GPUIRR reads records and lists scattered over all N, and with 4 KiB
 * pages nearly every member is a TLB miss once the records outgrow what the
 * TLB covers (a few MiB), which under a hypervisor costs a two-level walk. */
enum { HUGE_PAGE = 2 << 20 };

static int want_huge_pages(size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const char *v = nb6_getenv("NB6ACCEL_HUGEPAGES");
    return bytes >= HUGE_PAGE && !(v && strcmp(v, "0") == 0);
#else
    (void)bytes;
    return 0;
#endif
}

void *nb6_alloc_aligned(size_t align, size_t bytes)
{
    void *p = NULL;
    if (bytes == 0)
        bytes = align;
    const int huge = want_huge_pages(bytes);
    if (huge && align < HUGE_PAGE)
        align = HUGE_PAGE;
    bytes = (bytes + align - 1) & ~(align - 1);
    p = aligned_alloc(align, bytes);
    if (!p)
        return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (huge) /* before the first touch below; a refusal only costs speed */
        (void)madvise(p, bytes, MADV_HUGEPAGE);
#endif
    memset(p, 0, bytes);
    return p;
}

void *nb6_alloc(size_t bytes) { return nb6_alloc_aligned(64, bytes); }

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

int nb6_current_cpu(void)
{
#if defined(__linux__)
    return sched_getcpu();
#else
    return -1;
#endif
}

int nb6_thread_num(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

int nb6_team_size(void)
{
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

/* One team runs a dynamically scheduled loop and counts the iterations it
 * executed: with a working runtime that is exactly the trip count.  Seen on
 * a machine whose gfortran found only libgomp.a: the program carried a
 * static libgomp that started the team while the loop's scheduling calls
 * went to the libgomp.so the library was linked with, so every thread ran
 * every iteration (right results, 16 threads at the speed of one). */
void nb6_check_openmp_runtime(const char *library)
{
#ifdef _OPENMP
    static _Atomic int checked;
    if (atomic_exchange(&checked, 1))
        return;
    enum { TRIPS = 4096 };
    long executed = 0;
    int team = 1;
#pragma omp parallel reduction(+ : executed)
    {
#pragma omp for schedule(dynamic, 1) nowait
        for (int k = 0; k < TRIPS; k++)
            executed++;
#pragma omp master
        team = omp_get_num_threads();
    }
    if (executed != TRIPS)
        fprintf(stderr,
                "nb6accel (%s): WARNING: OpenMP work-sharing is broken in this process: a loop of %d "
                "iterations ran %ld times on a team of %d threads.  Two OpenMP runtimes are loaded, "
                "typically because the program was linked with a static libgomp (libgomp.a, e.g. a "
                "gfortran whose libgomp.so link is missing) while nb6accel uses the shared one.  "
                "Results stay right, but parallel loops do every thread's work on every thread.  "
                "Relink the program against the shared libgomp (check `ldd <program> | grep gomp`).\n",
                library, (int)TRIPS, executed, team);
#else
    (void)library;
#endif
}
