/* gpuirr_internal.h -- the GPUIRR state and the seam to its kernels.
 * gpuirr_api.c owns the state (records, lists, checks, statistics); a kernel
 * (gpuirr_scalar.c, SIMD variants) predicts and sums.  Internal. */
#ifndef GPUIRR_INTERNAL_H
#define GPUIRR_INTERNAL_H

#include "gpuirr.h"
#include "nb6_common.h"

#include <stdatomic.h>

/* Slot s = addr - 1 holds particle addr. */
struct gpuirr {
    int nmax, lmax;

    /* Records as NBODY6 sets them: x0, v0, F = acc/2, FDOT = jerk/6 at t0. */
    double (*x0)[3], (*v0)[3], (*f_half)[3], (*fdot_sixth)[3];
    double *mass, *t0;

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

    /* predict_active bookkeeping: stamp[s] == epoch once slot s has been
     * claimed for prediction in this call (atomic: threads claim in
     * parallel, each slot exactly once). */
    _Atomic unsigned *stamp;
    unsigned epoch;

    const struct gpuirr_kernel *kernel;
    gpuirr_stats stats;
};

/* How one force call's thread team ran (gpuirr_stats sums these). */
typedef struct gpuirr_team {
    double start_lag; /* s from the call until its last thread started */
    double busy;      /* thread-seconds inside the parallel region     */
    int threads;
} gpuirr_team;

typedef struct gpuirr_kernel {
    const char *name;
    /* Predict slots s = first..last (0-based, inclusive) to t. */
    void (*predict_range)(gpuirr *g, int first, int last, double t);
    /* Predict the n slots slot[0..n-1] (distinct) to t. */
    void (*predict_slots)(gpuirr *g, int n, const int *slot, double t);
    /* Irregular force as gpuirr_force documents; addr already checked.
     * Returns the number of pairs summed (the sum of the list lengths),
     * counted inside the parallel loop: a serial pass over the lists before
     * it costs ~10 % of a 16-thread call.  Fills *team. */
    double (*force)(const gpuirr *g, int ni, const int *addr, double (*acc)[3], double (*jrk)[3],
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

NB6_INTERNAL int gpuirr_fail(int status, const char *fmt, ...) NB6_PRINTF(2, 3);

#endif
