/* gpuirr_internal.h -- the GPUIRR state and the seam to its kernels.
 * gpuirr_api.c owns the state (records, lists, checks, statistics); a kernel
 * (gpuirr_scalar.c, SIMD variants) predicts and sums.  Internal. */
#ifndef GPUIRR_INTERNAL_H
#define GPUIRR_INTERNAL_H

#include "gpuirr.h"
#include "nb6_common.h"

#include <stdatomic.h>

/* A particle's record as NBODY6 sets it: x0, v0, F = acc/2, FDOT = jerk/6
 * at t0, and its mass.  One 128-byte block (two cache lines, the arrays are
 * 64-byte aligned): the force calls predict list members in random order,
 * and six separate arrays cost six misses per member. */
typedef struct gpuirr_source {
    double x0[3], v0[3], f_half[3], fdot_sixth[3];
    double t0, mass, pad[2];
} gpuirr_source;

/* Slot s = addr - 1 holds particle addr. */
struct gpuirr {
    int nmax, lmax;

    gpuirr_source *src;

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

    /* Lazy prediction.  PRED_ALL and PRED_ACT only start a prediction epoch:
     * they record its time and which slots are due; the force call predicts
     * the slots it reads (each i and its list members) that are due and not
     * yet predicted in this epoch, each exactly once (an atomic claim on
     * stamp[s]), then sums.  So a block costs O(what FIRR_VEC reads), not
     * O(N), and lists replaced by SET_LIST after PRED_ALL are covered.
     * Slots due in the epoch: lazy_first..lazy_last (0-based, from PRED_ALL;
     * empty when first > last), and with lazy_any (PRED_ACT) every slot that
     * a force call reads (PRED_ACT may predict a superset, ABI 5.5).
     * stamp[s] == epoch: slot s predicted to pred_time in this epoch;
     * gpuirr_set_particle clears it, so a record set after PRED is predicted
     * afresh.  Stamps are C11 atomics (claimed by compare-and-swap inside the
     * kernels' parallel regions).  A slot outside the due set keeps its
     * older prediction, as with eager prediction: when an epoch starts, the
     * unread slots of the previous range that it no longer covers are
     * predicted to the previous time (start_epoch in gpuirr_api.c); a record
     * set for such a slot is seen after the next predict call covering it.
     * Statistics: time_predict_all/active hold the bookkeeping only, the
     * prediction time is part of time_force. */
    _Atomic unsigned *stamp;
    unsigned epoch;
    int lazy_any, lazy_first, lazy_last;
    double pred_time;

    const struct gpuirr_kernel *kernel;
    gpuirr_stats stats;
};

typedef struct gpuirr_kernel {
    const char *name;
    /* Predict to g->pred_time the slots first..last (0-based, inclusive)
     * not yet predicted in this epoch (gpuirr_claim), claiming them; returns
     * how many it predicted. */
    long long (*predict_due)(gpuirr *g, int first, int last);
    /* Irregular force as gpuirr_force documents; addr already checked.
     * First predicts, inside the same parallel region, every slot it reads
     * that gpuirr_claim gives it (*predicted: how many), then sums.
     * Returns the number of pairs summed (the sum of the list lengths),
     * counted inside the parallel loop: a serial pass over the lists before
     * it costs ~10 % of a 16-thread call. */
    double (*force)(gpuirr *g, int ni, const int *addr, double (*acc)[3], double (*jrk)[3],
                    long long *predicted);
} gpuirr_kernel;

enum {
    GPUIRR_NMAX = 0x7fffffff / 16, /* lists hold GPUIRR_REC * slot as an int */
    GPUIRR_REC = 16,     /* floats per record                               */
    GPUIRR_REC_XHI = 0,  /* x, y, z rounded to float                        */
    GPUIRR_REC_MASS = 3, /* mass                                            */
    GPUIRR_REC_XLO = 4,  /* x - hi, y - hi, z - hi, rounded to float        */
    GPUIRR_REC_V = 8     /* vx, vy, vz; floats 7 and 11..15 are padding     */
};

/* Whether slot s is due in this epoch and not yet predicted in it. */
static inline int gpuirr_due(const gpuirr *g, int s)
{
    return atomic_load_explicit(&g->stamp[s], memory_order_relaxed) != g->epoch &&
           (g->lazy_any || (s >= g->lazy_first && s <= g->lazy_last));
}

/* Slot s, found due, is taken by the caller, who predicts it now: always
 * when the caller is the only thread at work (solo), else if its
 * compare-and-swap wins (of threads that race for one slot exactly one
 * does).  The prediction is read by others only after a barrier (or the end
 * of the parallel region), which orders it. */
static inline int gpuirr_take(gpuirr *g, int s, int solo)
{
    unsigned seen = atomic_load_explicit(&g->stamp[s], memory_order_relaxed);
    if (seen == g->epoch) /* taken since it was found due */
        return 0;
    if (solo) {
        atomic_store_explicit(&g->stamp[s], g->epoch, memory_order_relaxed);
        return 1;
    }
    return atomic_compare_exchange_strong_explicit(&g->stamp[s], &seen, g->epoch,
                                                   memory_order_relaxed, memory_order_relaxed);
}

/* Due and taken (by a thread that may race with others). */
static inline int gpuirr_claim(gpuirr *g, int s) { return gpuirr_due(g, s) && gpuirr_take(g, s, 0); }

/* Below this many particles a force call runs in the calling thread: waking
 * the team costs more than a few particles' prediction and sums. */
enum { GPUIRR_PARALLEL_MIN = 8 };

NB6_INTERNAL extern const gpuirr_kernel gpuirr_kernel_scalar;
/* SIMD kernels (gpuirr/simd/gpuirr_simd_kernel.c, one per level built). */
NB6_INTERNAL extern const gpuirr_kernel gpuirr_kernel_sse2;
NB6_INTERNAL extern const gpuirr_kernel gpuirr_kernel_avx;
NB6_INTERNAL extern const gpuirr_kernel gpuirr_kernel_avx2;
NB6_INTERNAL extern const gpuirr_kernel gpuirr_kernel_avx512;

NB6_INTERNAL int gpuirr_fail(int status, const char *fmt, ...) NB6_PRINTF(2, 3);

#endif
