/* gpuirr_internal.h -- the GPUIRR state and the seam to its kernels.
 * gpuirr_api.c owns the state (records, lists, checks, statistics); a kernel
 * (gpuirr_scalar.c, SIMD variants) predicts and sums.  Internal. */
#ifndef GPUIRR_INTERNAL_H
#define GPUIRR_INTERNAL_H

#include "gpuirr.h"
#include "nb6_common.h"

#include <stdatomic.h>

/* Slot s = addr - 1 holds particle addr.
 *
 * Prediction is lazy: the predict calls only record the time, and the force
 * predicts each i and each list member from its record as it sums.  A
 * separate prediction pass read six arrays and wrote a record for every
 * member of every active list (PRED_ACT, PRED_ALL: 62 % of GPUIRR's time in
 * the 64k Plummer run on the H100 box); predicting in the force reads the
 * member's record once, where the force has to read it anyway. */
struct gpuirr {
    int nmax, lmax;

    /* Records of the reference kernel (kernel->float_records == 0), as
     * NBODY6 sets them: x0, v0, F = acc/2, FDOT = jerk/6 at t0; else NULL. */
    double (*x0)[3], (*v0)[3], (*f_half)[3], (*fdot_sixth)[3];
    double *mass, *t0;

    /* Records of the SIMD kernels (kernel->float_records): GPUIRR_REC
     * floats per slot, laid out as GPUIRR_REC_* says, 64-byte aligned so
     * that one record is one cache line.  A list's members are scattered
     * over all N, so the host kernel waits on one cache miss per
     * member, and a core has few misses in flight (its line-fill buffers):
     * one line per record instead of two gave 1.4 times the pairs per
     * second on the H100 box's Xeon with sixteen threads, 1.2-2.1 times
     * with one (tests/simd/RESULTS.md, session 49).  The position
     * and the epoch are a float hi and a 16-bit integer lo in units of
     * 2^-16 of hi's ulp (gpuirr_lo16 in gpuirr_api.c; about 40 bits): x_j - x_i keeps full
     * float precision far from the origin and for pairs down to about
     * 2^-16 |x| apart, and t0 is exact for t0 < 128 and every block time
     * that is a multiple of 2^-33.  Else NULL. */
    float *rec;

    /* lists[s*lmax] = count, lists[s*lmax + 1 .. count] = the members as
     * offsets of their records, GPUIRR_REC * (addr - 1): the SIMD kernels
     * address a record straight from its list entry (no shift per member),
     * which limits nmax to INT_MAX / GPUIRR_REC. */
    int *lists;

    /* Time of the last predict call; NaN before the first one. */
    double t_pred;

    const struct gpuirr_kernel *kernel;
    gpuirr_stats stats;

    /* gpuirr_use_device (gpuirr_device.c): the GPU's copy of the records
     * and lists, a GPUNB handle whose j-particle addr is particle addr (j = 0
     * unused), NULL if none; the smallest block that goes there; where the
     * calls since the last predict call go (-1 not decided yet, 0 the host,
     * 1 the GPU); why none is used.  any_set: a particle was set (after
     * that, gpuirr_use_device is too late: the copy would lack it).
     * dev_last_ni: the first call's ni of the last block (its members are
     * set after it); dev_unsent: about how many particles were set since
     * the GPU last took the changes (block sizes, not a count of the set
     * calls: those come from every thread at once). */
    struct gpunb *dev;
    int dev_min_ni, dev_block, dev_asked, dev_last_ni;
    long long dev_unsent;
    atomic_int any_set;
    char dev_note[NB6_ERRMSG_LEN];
};

/* How one force call's thread team ran (gpuirr_stats sums these). */
typedef struct gpuirr_team {
    double start_lag; /* s from the call until its last thread started */
    double busy;      /* thread-seconds inside the parallel region     */
    int threads;
} gpuirr_team;

typedef struct gpuirr_kernel {
    const char *name;
    /* 1: the kernel reads rec (float records), 0: the double arrays. */
    int float_records;
    /* Irregular force as gpuirr_force documents, every i and member
     * predicted to g->t_pred; addr already checked.  Returns the number of
     * pairs summed (the sum of the list lengths), counted inside the
     * parallel loop: a serial pass over the lists before it costs ~10 % of
     * a 16-thread call.  Fills *team. */
    double (*force)(const gpuirr *g, int ni, const int *addr, double (*acc)[3], double (*jrk)[3],
                    struct gpuirr_team *team);
} gpuirr_kernel;

enum {
    GPUIRR_NMAX = 0x7fffffff / 32, /* lists hold GPUIRR_REC (<= 32) * slot  */
    GPUIRR_REC = 16,      /* floats per record (one cache line)              */
    /* In the order the force uses them, each half a load of its own (fields
     * 0..7, 8..15), so that few are live at a time.  Two fields each hold
     * two 16-bit lo parts (gpuirr_lo16), the first in the low half: */
    GPUIRR_REC_T0HI = 0,  /* t0 rounded to float                             */
    GPUIRR_REC_LO_TX = 1, /* lo parts of t0 and x0                           */
    GPUIRR_REC_F = 2,     /* F = acc/2 (3)                                   */
    GPUIRR_REC_FDOT = 5,  /* FDOT = jerk/6 (3)                               */
    GPUIRR_REC_V = 8,     /* v0 (3)                                          */
    GPUIRR_REC_XHI = 11,  /* x0, y0, z0 rounded to float (3)                 */
    GPUIRR_REC_MASS = 14, /* mass                                            */
    GPUIRR_REC_LO_YZ = 15 /* lo parts of y0 and z0                           */
};

NB6_INTERNAL extern const gpuirr_kernel gpuirr_kernel_scalar;
/* SIMD kernels (gpuirr/simd/gpuirr_simd_kernel.c, one per level built). */
NB6_INTERNAL extern const gpuirr_kernel gpuirr_kernel_sse2;
NB6_INTERNAL extern const gpuirr_kernel gpuirr_kernel_avx;
NB6_INTERNAL extern const gpuirr_kernel gpuirr_kernel_avx2;
NB6_INTERNAL extern const gpuirr_kernel gpuirr_kernel_avx512;

NB6_INTERNAL int gpuirr_fail(int status, const char *fmt, ...) NB6_PRINTF(2, 3);

/* The GPU's copy (gpuirr_device.c), for gpuirr_api.c: a set record or list
 * stored there too, a force computed there (returns its pairs), an early
 * copy started, the copy freed.  Called only where g->dev is not NULL,
 * arguments checked. */
NB6_INTERNAL int gpuirr_device_set_particle(gpuirr *g, int addr, const double x0[3], const double v0[3],
                                            const double f_half[3], const double fdot_sixth[3], double mass,
                                            double t0);
NB6_INTERNAL int gpuirr_device_set_list(gpuirr *g, int addr, int n, const int *members);
NB6_INTERNAL int gpuirr_device_force(gpuirr *g, int ni, const int *addr, double (*acc)[3], double (*jrk)[3],
                                     double *pairs);
/* Start copying what changed since the GPU last took it (gpunb_push). */
NB6_INTERNAL int gpuirr_device_push(gpuirr *g);
NB6_INTERNAL void gpuirr_device_close(gpuirr *g);

#endif
