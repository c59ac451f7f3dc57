/* gpunb_simd_kernel.c -- the regular force of the GPUNB host back-end for one
 * instruction set.  Compiled once per SIMD level (gpunb/simd/local.mk) with
 * that level's flags and -DNB6_SIMD_BUILD_<LEVEL>, which selects the vector
 * vocabulary of gpuirr/simd/nb6_simd_<level>.h; without one it is the
 * portable one-lane path.  Defines gpunb_simd_regf_<level>.
 *
 * OpenMP over pairs of i, SIMD over j (contiguous float columns, no
 * gathers).  Float pair arithmetic on two-float positions; per-lane float
 * sums over a tile of j, then added in double, so that N = 10^6 terms lose
 * nothing that matters.
 * Neighbours (the mass-weighted velocity criterion of gpunb.h) are found
 * lane by lane in ascending j and so come out sorted. */
#include "config.h"
#include "gpunb_simd.h"
#include "nb6_simd_select.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>

/* j per float partial sum: 256 terms per lane at every level. */
enum { J_TILE = 256 * SIMD_VL };

static inline int lowest_bit(unsigned bits) { return __builtin_ctz(bits); }

/* The i-particles go through j in pairs: the ten loads of each group of j,
 * and the loop around them, then serve two i, and the two i's independent
 * sums give the core more to overlap.  On the GPU machine's Xeon (AVX-512,
 * bench_gpunb_simd, 64k j, tests/simd/RESULTS.md) that took 16 threads from
 * 1.0-1.2e10 to 1.4-1.6e10 pairs per second; three i per pass were no
 * faster than two.  Each i's operations, and so its bits, are those of a
 * pass of its own.
 *
 * The per-i code is written once, as the macros below, for a pass of one
 * (an odd i left over) and of two: with the i's constants and sums as
 * arrays or structs indexed by i, the compiler kept the sums in memory and
 * the paired pass ran slower than single ones. */

/* i-particle n of the pass (list position i + n): constants and results. */
#define I_BEGIN(n)                                                                                         \
    float hi##n[3], lo##n[3];                                                                              \
    for (int k = 0; k < 3; k++)                                                                            \
        nb6_split(xi[i + n][k], &hi##n[k], &lo##n[k]);                                                     \
    const simd_f xih##n = simd_set1(hi##n[0]), yih##n = simd_set1(hi##n[1]), zih##n = simd_set1(hi##n[2]); \
    const simd_f xil##n = simd_set1(lo##n[0]), yil##n = simd_set1(lo##n[1]), zil##n = simd_set1(lo##n[2]); \
    const simd_f vix##n = simd_set1((float)vi[i + n][0]), viy##n = simd_set1((float)vi[i + n][1]),         \
                 viz##n = simd_set1((float)vi[i + n][2]);                                                  \
    const simd_f h2i##n = simd_set1((float)h2[i + n]), dtri##n = simd_set1((float)dtr[i + n]);              \
    int *restrict col##n = list + (size_t)(i + n) * (size_t)lmax;                                          \
    double a##n[3] = {0, 0, 0}, jk##n[3] = {0, 0, 0}, phi##n = 0.0;                                        \
    int count##n = 0

/* Per-lane float sums of i-particle n over one tile of j. */
#define I_TILE_BEGIN(n)                                                                                    \
    simd_f ax##n = simd_zero(), ay##n = simd_zero(), az##n = simd_zero();                                  \
    simd_f jx##n = simd_zero(), jy##n = simd_zero(), jz##n = simd_zero(), ph##n = simd_zero()

#define I_TILE_END(n)                                                                                      \
    do {                                                                                                   \
        a##n[0] += simd_hsum(ax##n), a##n[1] += simd_hsum(ay##n), a##n[2] += simd_hsum(az##n);             \
        jk##n[0] += simd_hsum(jx##n), jk##n[1] += simd_hsum(jy##n), jk##n[2] += simd_hsum(jz##n);          \
        phi##n += simd_hsum(ph##n);                                                                        \
    } while (0)

/* i-particle n against the SIMD_VL j from j on (loaded into xjh .. mj):
 * about 55 flops per pair.  Neighbours (rare: a few hundred of N per i)
 * are found lane by lane in ascending j. */
#define I_PAIRS(n)                                                                                         \
    do {                                                                                                   \
        simd_f dx = simd_add(simd_sub(xjh, xih##n), simd_sub(xjl, xil##n));                                \
        simd_f dy = simd_add(simd_sub(yjh, yih##n), simd_sub(yjl, yil##n));                                \
        simd_f dz = simd_add(simd_sub(zjh, zih##n), simd_sub(zjl, zil##n));                                \
        simd_f dvx = simd_sub(vjx, vix##n), dvy = simd_sub(vjy, viy##n), dvz = simd_sub(vjz, viz##n);      \
        simd_f r2 = simd_fmadd(dz, dz, simd_fmadd(dy, dy, simd_mul(dx, dx)));                              \
        simd_f px = simd_fmadd(dtri##n, dvx, dx), py = simd_fmadd(dtri##n, dvy, dy),                       \
               pz = simd_fmadd(dtri##n, dvz, dz);                                                          \
        simd_f rp2 = simd_fmadd(pz, pz, simd_fmadd(py, py, simd_mul(px, px)));                             \
        simd_mask nb = simd_lt(simd_min(r2, rp2), simd_mul(mj, h2i##n));                                   \
        for (unsigned bits = simd_mask_bits(nb); bits; bits &= bits - 1) {                                 \
            if (count##n < limit)                                                                          \
                col##n[1 + count##n] = j + lowest_bit(bits);                                               \
            count##n++;                                                                                    \
        }                                                                                                  \
        simd_f rinv = simd_keep(simd_rsqrt_nz(r2), simd_mask_not(nb));                                     \
        simd_f rinv2 = simd_mul(rinv, rinv);                                                               \
        simd_f mrinv = simd_mul(mj, rinv);                                                                 \
        simd_f mr3 = simd_mul(mrinv, rinv2);                                                               \
        simd_f rv = simd_mul(simd_mul(three, rinv2),                                                       \
                             simd_fmadd(dz, dvz, simd_fmadd(dy, dvy, simd_mul(dx, dvx))));                 \
        ax##n = simd_fmadd(mr3, dx, ax##n);                                                                \
        ay##n = simd_fmadd(mr3, dy, ay##n);                                                                \
        az##n = simd_fmadd(mr3, dz, az##n);                                                                \
        jx##n = simd_fmadd(mr3, simd_fnmadd(rv, dx, dvx), jx##n);                                          \
        jy##n = simd_fmadd(mr3, simd_fnmadd(rv, dy, dvy), jy##n);                                          \
        jz##n = simd_fmadd(mr3, simd_fnmadd(rv, dz, dvz), jz##n);                                          \
        ph##n = simd_add(ph##n, mrinv);                                                                    \
    } while (0)

#define I_END(n)                                                                                           \
    do {                                                                                                   \
        col##n[0] = count##n > limit ? -count##n : count##n;                                               \
        for (int k = 0; k < 3; k++) {                                                                      \
            acc[i + n][k] = a##n[k];                                                                       \
            jrk[i + n][k] = jk##n[k];                                                                      \
        }                                                                                                  \
        if (pot)                                                                                           \
            pot[i + n] = phi##n;                                                                           \
    } while (0)

/* A pass's j columns and constant; the group of SIMD_VL j from j on, loaded
 * once for every i of the pass. */
#define PASS_BEGIN                                                                                          \
    const float *restrict xjh_ = js->xhi[0], *restrict yjh_ = js->xhi[1], *restrict zjh_ = js->xhi[2];     \
    const float *restrict xjl_ = js->xlo[0], *restrict yjl_ = js->xlo[1], *restrict zjl_ = js->xlo[2];     \
    const float *restrict vjx_ = js->v[0], *restrict vjy_ = js->v[1], *restrict vjz_ = js->v[2];           \
    const float *restrict mj_ = js->m;                                                                     \
    const simd_f three = simd_set1(3.0f)

#define J_GROUP                                                                                            \
    const simd_f xjh = simd_load(xjh_ + j), yjh = simd_load(yjh_ + j), zjh = simd_load(zjh_ + j);         \
    const simd_f xjl = simd_load(xjl_ + j), yjl = simd_load(yjl_ + j), zjl = simd_load(zjl_ + j);         \
    const simd_f vjx = simd_load(vjx_ + j), vjy = simd_load(vjy_ + j), vjz = simd_load(vjz_ + j);         \
    const simd_f mj = simd_load(mj_ + j)

/* The arguments of gpunb_simd_regf with i, the pass's first i-particle, in place of ni. */
#define REGF_ARGS                                                                                          \
    const gpunb_simd_jset *restrict js, int i, const double *h2, const double *dtr,                        \
        const double(*xi)[3], const double(*vi)[3], double(*acc)[3], double(*jrk)[3], double *pot,         \
        int lmax, int limit, int *list

static void regf_one(REGF_ARGS)
{
    PASS_BEGIN;
    I_BEGIN(0);
    for (int j0 = 0; j0 < js->njpad; j0 += J_TILE) {
        const int j1 = j0 + J_TILE < js->njpad ? j0 + J_TILE : js->njpad;
        I_TILE_BEGIN(0);
        for (int j = j0; j < j1; j += SIMD_VL) {
            J_GROUP;
            I_PAIRS(0);
        }
        I_TILE_END(0);
    }
    I_END(0);
}

static void regf_two(REGF_ARGS)
{
    PASS_BEGIN;
    I_BEGIN(0);
    I_BEGIN(1);
    for (int j0 = 0; j0 < js->njpad; j0 += J_TILE) {
        const int j1 = j0 + J_TILE < js->njpad ? j0 + J_TILE : js->njpad;
        I_TILE_BEGIN(0);
        I_TILE_BEGIN(1);
        for (int j = j0; j < j1; j += SIMD_VL) {
            J_GROUP;
            I_PAIRS(0);
            I_PAIRS(1);
        }
        I_TILE_END(0);
        I_TILE_END(1);
    }
    I_END(0);
    I_END(1);
}

/* Pass p of a call of ni i-particles: i = 2p and 2p + 1, or the last one
 * alone; returns how many it computed. */
static int regf_pass(const gpunb_simd_jset *restrict js, int p, int ni, const double *h2, const double *dtr,
                     const double (*xi)[3], const double (*vi)[3], double (*acc)[3], double (*jrk)[3],
                     double *pot, int lmax, int limit, int *list)
{
    if (2 * p + 1 < ni) {
        regf_two(js, 2 * p, h2, dtr, xi, vi, acc, jrk, pot, lmax, limit, list);
        return 2;
    }
    regf_one(js, 2 * p, h2, dtr, xi, vi, acc, jrk, pot, lmax, limit, list);
    return 1;
}

/* The same loop, timed per thread and printed (NB6ACCEL_TEAM_TRACE). */
static void traced_regf(const gpunb_simd_jset *js, int ni, const double *h2, const double *dtr,
                        const double (*xi)[3], const double (*vi)[3], double (*acc)[3],
                        double (*jrk)[3], double *pot, int lmax, int limit, int *list)
{
    enum { SHOWN = 64 };
    int cpu[SHOWN] = {0}, taken[SHOWN] = {0}, team = 1;
    double start[SHOWN] = {0}, busy[SHOWN] = {0};
    const double t0 = nb6_clock();
#pragma omp parallel
    {
        const int me = nb6_thread_num();
        const double t_start = nb6_clock();
        int mine = 0;
#pragma omp for schedule(dynamic, 1) nowait
        for (int p = 0; p < (ni + 1) / 2; p++)
            mine += regf_pass(js, p, ni, h2, dtr, xi, vi, acc, jrk, pot, lmax, limit, list);
        if (me < SHOWN) {
            cpu[me] = nb6_current_cpu();
            taken[me] = mine;
            start[me] = t_start - t0;
            busy[me] = nb6_clock() - t_start;
        }
        if (me == 0)
            team = nb6_team_size();
    }
    char line[4096];
    int len = snprintf(line, sizeof line, "gpunb regf trace: ni %d nj %d, %.3f ms, %d threads; cpu:i:start_us:busy_ms",
                       ni, js->nj, 1e3 * (nb6_clock() - t0), team);
    for (int t = 0; t < team && t < SHOWN && len < (int)sizeof line - 40; t++)
        len += snprintf(line + len, sizeof line - (size_t)len, " %d:%d:%.0f:%.2f", cpu[t], taken[t],
                        1e6 * start[t], 1e3 * busy[t]);
    fprintf(stderr, "%s\n", line);
}

void SIMD_SUFFIX(gpunb_simd_regf)(const gpunb_simd_jset *js, int ni, const double *h2,
                                  const double *dtr, const double (*xi)[3], const double (*vi)[3],
                                  double (*acc)[3], double (*jrk)[3], double *pot, int lmax,
                                  int limit, int *list)
{
    if (js->trace) {
        traced_regf(js, ni, h2, dtr, xi, vi, acc, jrk, pot, lmax, limit, list);
        return;
    }
#pragma omp parallel for schedule(dynamic, 1)
    for (int p = 0; p < (ni + 1) / 2; p++)
        regf_pass(js, p, ni, h2, dtr, xi, vi, acc, jrk, pot, lmax, limit, list);
}

/* Double-precision potential: plain C that the compiler vectorises for this
 * level (omp simd; this file is built with -fno-math-errno so that sqrt
 * vectorises).  Pairs with r = 0, self included, add nothing. */
void SIMD_SUFFIX(gpunb_simd_potential)(int n, const double *m, const double *x, const double *y,
                                       const double *z, double *pot)
{
#pragma omp parallel for schedule(dynamic, 16)
    for (int k = 0; k < n; k++) {
        const double xk = x[k], yk = y[k], zk = z[k];
        double phi = 0.0;
#pragma omp simd reduction(+ : phi)
        for (int l = 0; l < n; l++) {
            double dx = x[l] - xk, dy = y[l] - yk, dz = z[l] - zk;
            double r2 = dx * dx + dy * dy + dz * dz;
            double term = m[l] / sqrt(r2);
            phi += r2 > 0.0 ? term : 0.0;
        }
        pot[k] = phi;
    }
}
