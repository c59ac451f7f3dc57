/* gpuirr_internal.h -- the GPUIRR state and the seam to its kernels.
 * gpuirr_api.c owns the state (records, lists, checks, statistics); a kernel
 * (gpuirr_scalar.c, SIMD variants) predicts and sums.  Internal. */
#ifndef GPUIRR_INTERNAL_H
#define GPUIRR_INTERNAL_H

#include "gpuirr.h"
#include "nb6_common.h"

#include <stdatomic.h>

/* A record as NBODY6 sets it: x0, v0, F = acc/2, FDOT = jerk/6 at t0, and
 * the mass.  One 128-byte block per slot (two whole cache lines): phase 1 of
 * a force call predicts scattered slots, and from six arrays each would cost
 * six cache misses instead of two adjacent ones. */
typedef struct gpuirr_src {
    double x0[3], v0[3], f_half[3], fdot_sixth[3];
    double mass, t0;
    double pad[2];
} gpuirr_src;

/* Slot s = addr - 1 holds particle addr. */
struct gpuirr {
    int nmax, lmax;

    gpuirr_src *src; /* [nmax], 64-byte aligned */

    /* Predicted positions and velocities, double (reference kernel). */
    double (*xp)[3], (*vp)[3];

    /* Predictions of the SIMD kernels: one 64-byte record (one cache line,
     * so a gathered neighbour costs one line) of GPUIRR_REC floats per slot,
     * laid out as GPUIRR_REC_* says.  The position is a two-float pair
     * hi + lo (about 48 bits) so that x_j - x_i keeps full float precision
     * far from the origin and for tight pairs. */
    float *rec;

    /* lists[s*lmax] = count, lists[s*lmax + 1 .. count] = the members as
     * offsets of their records in rec, GPUIRR_REC * (addr - 1): the kernels
     * address a record straight from its list entry (no shift per member),
     * which limits nmax to INT_MAX / GPUIRR_REC. */
    int *lists;

    /* Lazy prediction.  A predict call only checks its arguments, sets
     * t_pred and starts a new epoch; the next gpuirr_force calls predict the
     * records they read, in two phases inside one parallel region: phase 1
     * predicts every slot s of their actives and lists whose stamp[s] is not
     * epoch and then sets stamp[s] = epoch; a barrier; phase 2 sums, with
     * plain loads, and writes no record.  Two threads may predict the same
     * slot in phase 1 at once: both write the same values (a function of the
     * double record and t_pred only) through relaxed atomic stores, and the
     * stamps are relaxed atomics, so there is no data race and the results
     * do not depend on who won.  gpuirr_set_particle sets its slot's stamp to
     * 0, which no epoch is, so a changed record is predicted again. */
    _Atomic unsigned *stamp;
    unsigned epoch;   /* 0 until the first predict call */
    double t_pred;    /* time of the last predict call  */

    const struct gpuirr_kernel *kernel;
    gpuirr_stats stats;
};

/* How one force call's thread team ran (gpuirr_stats sums these). */
typedef struct gpuirr_team {
    double start_lag; /* s from the call until its last thread started */
    double busy;      /* thread-seconds inside the parallel region     */
    double predict;   /* s from the call until phase 1 (prediction) ended */
    long long predicted; /* records predicted in phase 1 (all threads)  */
    int threads;
} gpuirr_team;

typedef struct gpuirr_kernel {
    const char *name;
    /* Irregular force as gpuirr_force documents; addr already checked.
     * Predicts first (phase 1, see struct gpuirr) what it reads and is not
     * predicted in this epoch, unless no predict call came yet (epoch 0).
     * Returns the number of pairs summed (the sum of the list lengths),
     * counted inside the parallel loop: a serial pass over the lists before
     * it costs ~10 % of a 16-thread call.  Fills *team. */
    double (*force)(gpuirr *g, int ni, const int *addr, double (*acc)[3], double (*jrk)[3],
                    struct gpuirr_team *team);
} gpuirr_kernel;

enum {
    GPUIRR_NMAX = 0x7fffffff / 16, /* lists hold GPUIRR_REC * slot as an int */
    GPUIRR_REC = 16,     /* floats per record                               */
    GPUIRR_REC_XHI = 0,  /* x, y, z rounded to float                        */
    GPUIRR_REC_MASS = 3, /* mass                                            */
    GPUIRR_REC_XLO = 4,  /* x - hi, y - hi, z - hi, rounded to float        */
    GPUIRR_REC_V = 8     /* vx, vy, vz; floats 7 and 11..15 are padding     */
};

NB6_INTERNAL extern const gpuirr_kernel gpuirr_kernel_scalar;
/* SIMD kernels (gpuirr/simd/gpuirr_simd_kernel.c, one per level built). */
NB6_INTERNAL extern const gpuirr_kernel gpuirr_kernel_sse2;
NB6_INTERNAL extern const gpuirr_kernel gpuirr_kernel_avx;
NB6_INTERNAL extern const gpuirr_kernel gpuirr_kernel_avx2;
NB6_INTERNAL extern const gpuirr_kernel gpuirr_kernel_avx512;

/* Phase 1 prefetches: the members of a list are scattered over all N, so
 * each stale one costs misses on its source record (two lines), its
 * prediction's line (written) and its stamp; asked for PREDICT_AHEAD
 * members early they overlap with the work on the ones before. */
enum { GPUIRR_PREDICT_AHEAD = 8 };

static inline __attribute__((always_inline)) void
gpuirr_prefetch_stale(const gpuirr *g, int s, unsigned epoch)
{
    if (atomic_load_explicit(&g->stamp[s], memory_order_relaxed) == epoch)
        return;
    __builtin_prefetch(&g->src[s], 0, 3);
    __builtin_prefetch((const char *)&g->src[s] + 64, 0, 3);
    __builtin_prefetch(g->rec + (size_t)s * GPUIRR_REC, 1, 3);
}

/* Slot s predicted by predict(g, s), which stores through relaxed atomics,
 * unless it is already in this epoch; then stamped.  The stamp is stored
 * after the record, relaxed: a thread that sees it set skips the slot and
 * reads the record only after the barrier that ends phase 1, so it needs no
 * ordering from the stamp itself.  Returns 1 if it predicted. */
static inline __attribute__((always_inline)) int
gpuirr_predict_stale(gpuirr *g, int s, unsigned epoch, void (*predict)(gpuirr *g, int s))
{
    if (atomic_load_explicit(&g->stamp[s], memory_order_relaxed) == epoch)
        return 0;
    predict(g, s);
    atomic_store_explicit(&g->stamp[s], epoch, memory_order_relaxed);
    return 1;
}

/* Phase 1 of a force call for positions n = begin..end-1 of addr: each
 * active and each member of its list not yet predicted in this epoch is
 * predicted and stamped.  Returns the number of records this thread
 * predicted. */
static inline __attribute__((always_inline)) long long
gpuirr_predict_lists(gpuirr *g, const int *addr, int begin, int end,
                     void (*predict)(gpuirr *g, int s))
{
    const unsigned epoch = g->epoch;
    const size_t lmax = (size_t)g->lmax;
    long long done = 0;
    (void)sizeof(char[sizeof(gpuirr_src) == 128 ? 1 : -1]);
    if (begin < end) /* the first line (the count) of the first list */
        __builtin_prefetch(g->lists + (size_t)(addr[begin] - 1) * lmax, 0, 3);
    for (int n = begin; n < end; n++) {
        const int i = addr[n] - 1;
        const int *col = g->lists + (size_t)i * lmax;
        const int len = col[0];
        /* The lines of the next list that hold members (its first line was
         * asked for one particle ago, so its count is there by now) and
         * the first line of the one after: lists come from memory. */
        if (n + 1 < end) {
            const int *next = g->lists + (size_t)(addr[n + 1] - 1) * lmax;
            const char *p = (const char *)next;
            const size_t bytes = sizeof(int) * (size_t)(next[0] + 1);
            for (size_t off = 64; off < bytes && off < 64 * 10; off += 64)
                __builtin_prefetch(p + off, 0, 3);
            if (n + 2 < end)
                __builtin_prefetch(g->lists + (size_t)(addr[n + 2] - 1) * lmax, 0, 3);
        }
        for (int e = 1; e <= len && e <= GPUIRR_PREDICT_AHEAD; e++)
            gpuirr_prefetch_stale(g, col[e] / GPUIRR_REC, epoch);
        done += gpuirr_predict_stale(g, i, epoch, predict);
        for (int e = 1; e <= len; e++) {
            if (e + GPUIRR_PREDICT_AHEAD <= len)
                gpuirr_prefetch_stale(g, col[e + GPUIRR_PREDICT_AHEAD] / GPUIRR_REC, epoch);
            done += gpuirr_predict_stale(g, col[e] / GPUIRR_REC, epoch, predict);
        }
    }
    return done;
}

NB6_INTERNAL int gpuirr_fail(int status, const char *fmt, ...) NB6_PRINTF(2, 3);

#endif
