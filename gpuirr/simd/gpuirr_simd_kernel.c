/* gpuirr_simd_kernel.c -- the GPUIRR kernel for one instruction set.
 *
 * This one source is compiled once per SIMD level (gpuirr/simd/local.mk),
 * each time with that level's -m flags and -DNB6_SIMD_BUILD_<LEVEL>, which
 * selects the vector vocabulary nb6_simd_<level>.h (FFTW's way).  Each build
 * defines gpuirr_kernel_<level>; gpuirr_dispatch.c picks one at run time.
 *
 * Precision: prediction in double as gpuirr.h states, stored as a two-float
 * position (hi + lo), float velocity and mass.  The force forms
 * dx = (x_j,hi - x_i,hi) + (x_j,lo - x_i,lo): the hi difference is exact for
 * neighbours (Sterbenz), so dx is good to a float ulp wherever the pair is.
 * Pair arithmetic in float, per-lane float sums (a list of a few hundred
 * members gives each lane a few dozen terms), the lanes summed in double. */
#include "config.h"
#include "gpuirr_internal.h"
#include "nb6_simd_select.h"

#include <stddef.h>

/* ---- prediction ------------------------------------------------------------ */

/* x = x0 + dt (v0 + dt (F + dt FDOT)), v = v0 + 2 dt (F + 1.5 dt FDOT), in
 * double, written as a record (GPUIRR_REC_*). */
static inline void predict_slot(const gpuirr *restrict g, float *restrict rec, int s, double t)
{
    const double dt = t - g->t0[s];
    float *r = rec + (size_t)s * GPUIRR_REC;
    for (int k = 0; k < 3; k++) {
        double a2 = g->f_half[s][k], j6 = g->fdot_sixth[s][k];
        double x = g->x0[s][k] + dt * (g->v0[s][k] + dt * (a2 + dt * j6));
        double v = g->v0[s][k] + 2.0 * dt * (a2 + 1.5 * dt * j6);
        float hi = (float)x;
        r[GPUIRR_REC_XHI + k] = hi;
        r[GPUIRR_REC_XLO + k] = (float)(x - (double)hi);
        r[GPUIRR_REC_V + k] = (float)v;
    }
    r[GPUIRR_REC_MASS] = (float)g->mass[s];
}

static void SIMD_SUFFIX(predict_range)(gpuirr *g, int first, int last, double t)
{
    float *rec = g->rec;
    /* Small ranges are not worth waking the thread team. */
#pragma omp parallel for simd schedule(static) if (last - first >= 4096)
    for (int s = first; s <= last; s++)
        predict_slot(g, rec, s, t);
}

static void SIMD_SUFFIX(predict_slots)(gpuirr *g, int n, const int *slot, double t)
{
    float *rec = g->rec;
#pragma omp parallel for schedule(static) if (n >= 4096)
    for (int k = 0; k < n; k++)
        predict_slot(g, rec, slot[k], t);
}

/* ---- irregular force -------------------------------------------------------- */

/* Sum over the list of slot s; SIMD over the members, gathered from their
 * records.  Lanes past the end of the list gather nothing (mass 0) and so
 * add exactly 0; r = 0 pairs get 1/r = 0 and add 0 too. */
static inline void force_one(const float *restrict rec, const int *restrict col, int s,
                             double acc[3], double jrk[3])
{
    /* Member m (1-based) has its record at base + GPUIRR_REC * m. */
    const float *base = rec - GPUIRR_REC;
    const float *ri = rec + (size_t)s * GPUIRR_REC;
    const int len = col[0];
    const simd_f xih = simd_set1(ri[GPUIRR_REC_XHI]), yih = simd_set1(ri[GPUIRR_REC_XHI + 1]),
                 zih = simd_set1(ri[GPUIRR_REC_XHI + 2]);
    const simd_f xil = simd_set1(ri[GPUIRR_REC_XLO]), yil = simd_set1(ri[GPUIRR_REC_XLO + 1]),
                 zil = simd_set1(ri[GPUIRR_REC_XLO + 2]);
    const simd_f vix = simd_set1(ri[GPUIRR_REC_V]), viy = simd_set1(ri[GPUIRR_REC_V + 1]),
                 viz = simd_set1(ri[GPUIRR_REC_V + 2]);
    const simd_f three = simd_set1(3.0f);
    simd_f ax = simd_zero(), ay = simd_zero(), az = simd_zero();
    simd_f jx = simd_zero(), jy = simd_zero(), jz = simd_zero();

    for (int e = 0; e < len; e += SIMD_VL) {
        const int left = len - e;
        const simd_mask valid = simd_first(left);
        const simd_idx idx = simd_idx_load16(col + 1 + e, left);
        /* 10 gathers, about 45 flops per pair. */
        simd_f dx = simd_add(simd_sub(simd_gather(base + GPUIRR_REC_XHI, idx, valid), xih),
                             simd_sub(simd_gather(base + GPUIRR_REC_XLO, idx, valid), xil));
        simd_f dy = simd_add(simd_sub(simd_gather(base + GPUIRR_REC_XHI + 1, idx, valid), yih),
                             simd_sub(simd_gather(base + GPUIRR_REC_XLO + 1, idx, valid), yil));
        simd_f dz = simd_add(simd_sub(simd_gather(base + GPUIRR_REC_XHI + 2, idx, valid), zih),
                             simd_sub(simd_gather(base + GPUIRR_REC_XLO + 2, idx, valid), zil));
        simd_f dvx = simd_sub(simd_gather(base + GPUIRR_REC_V, idx, valid), vix);
        simd_f dvy = simd_sub(simd_gather(base + GPUIRR_REC_V + 1, idx, valid), viy);
        simd_f dvz = simd_sub(simd_gather(base + GPUIRR_REC_V + 2, idx, valid), viz);
        simd_f mj = simd_gather(base + GPUIRR_REC_MASS, idx, valid);

        simd_f r2 = simd_fmadd(dz, dz, simd_fmadd(dy, dy, simd_mul(dx, dx)));
        simd_f rinv = simd_rsqrt_nz(r2);
        simd_f rinv2 = simd_mul(rinv, rinv);
        simd_f mr3 = simd_mul(simd_mul(mj, rinv), rinv2);
        simd_f rv = simd_mul(simd_mul(three, rinv2),
                             simd_fmadd(dz, dvz, simd_fmadd(dy, dvy, simd_mul(dx, dvx))));
        ax = simd_fmadd(mr3, dx, ax);
        ay = simd_fmadd(mr3, dy, ay);
        az = simd_fmadd(mr3, dz, az);
        jx = simd_fmadd(mr3, simd_fnmadd(rv, dx, dvx), jx);
        jy = simd_fmadd(mr3, simd_fnmadd(rv, dy, dvy), jy);
        jz = simd_fmadd(mr3, simd_fnmadd(rv, dz, dvz), jz);
    }
    acc[0] = simd_hsum(ax);
    acc[1] = simd_hsum(ay);
    acc[2] = simd_hsum(az);
    jrk[0] = simd_hsum(jx);
    jrk[1] = simd_hsum(jy);
    jrk[2] = simd_hsum(jz);
}

static void SIMD_SUFFIX(force)(const gpuirr *g, int ni, const int *addr, double (*acc)[3],
                               double (*jrk)[3])
{
    const float *rec = g->rec;
    const int *lists = g->lists;
    const size_t lmax = (size_t)g->lmax;
    /* A block of a few particles costs less than waking the team. */
#pragma omp parallel for schedule(dynamic, 8) if (ni >= 32)
    for (int n = 0; n < ni; n++) {
        int s = addr[n] - 1;
        force_one(rec, lists + (size_t)s * lmax, s, acc[n], jrk[n]);
    }
}

const gpuirr_kernel SIMD_SUFFIX(gpuirr_kernel) = {
    .name = SIMD_LEVEL_NAME,
    .predict_range = SIMD_SUFFIX(predict_range),
    .predict_slots = SIMD_SUFFIX(predict_slots),
    .force = SIMD_SUFFIX(force),
};
