/* gpunb_simd_kernel.c -- the regular force of the GPUNB host back-end for one
 * instruction set.  Compiled once per SIMD level (gpunb/simd/local.mk) with
 * that level's flags and -DNB6_SIMD_BUILD_<LEVEL>, which selects the vector
 * vocabulary of gpuirr/simd/nb6_simd_<level>.h; without one it is the
 * portable one-lane path.  Defines gpunb_simd_regf_<level>.
 *
 * OpenMP over i, SIMD over j (contiguous float columns, no gathers).  Float
 * pair arithmetic on two-float positions; per-lane float sums over a tile of
 * j, then added in double, so that N = 10^6 terms lose nothing that matters.
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

static void regf_one(const gpunb_simd_jset *restrict js, double h2, double dtr,
                     const double xi[3], const double vi[3], double acc[3], double jrk[3],
                     double *pot, int limit, int *restrict col)
{
    float hi[3], lo[3];
    for (int k = 0; k < 3; k++)
        nb6_split(xi[k], &hi[k], &lo[k]);
    const simd_f xih = simd_set1(hi[0]), yih = simd_set1(hi[1]), zih = simd_set1(hi[2]);
    const simd_f xil = simd_set1(lo[0]), yil = simd_set1(lo[1]), zil = simd_set1(lo[2]);
    const simd_f vix = simd_set1((float)vi[0]), viy = simd_set1((float)vi[1]),
                 viz = simd_set1((float)vi[2]);
    const simd_f h2i = simd_set1((float)h2), dtri = simd_set1((float)dtr);
    const simd_f three = simd_set1(3.0f);
    const float *restrict xjh = js->xhi[0], *restrict yjh = js->xhi[1], *restrict zjh = js->xhi[2];
    const float *restrict xjl = js->xlo[0], *restrict yjl = js->xlo[1], *restrict zjl = js->xlo[2];
    const float *restrict vjx = js->v[0], *restrict vjy = js->v[1], *restrict vjz = js->v[2];
    const float *restrict mj_ = js->m;
    double a[3] = {0, 0, 0}, jk[3] = {0, 0, 0}, phi = 0.0;
    int count = 0;

    for (int j0 = 0; j0 < js->njpad; j0 += J_TILE) {
        const int j1 = j0 + J_TILE < js->njpad ? j0 + J_TILE : js->njpad;
        simd_f ax = simd_zero(), ay = simd_zero(), az = simd_zero();
        simd_f jx = simd_zero(), jy = simd_zero(), jz = simd_zero(), ph = simd_zero();
        for (int j = j0; j < j1; j += SIMD_VL) {
            /* about 55 flops per pair */
            simd_f dx = simd_add(simd_sub(simd_load(xjh + j), xih), simd_sub(simd_load(xjl + j), xil));
            simd_f dy = simd_add(simd_sub(simd_load(yjh + j), yih), simd_sub(simd_load(yjl + j), yil));
            simd_f dz = simd_add(simd_sub(simd_load(zjh + j), zih), simd_sub(simd_load(zjl + j), zil));
            simd_f dvx = simd_sub(simd_load(vjx + j), vix);
            simd_f dvy = simd_sub(simd_load(vjy + j), viy);
            simd_f dvz = simd_sub(simd_load(vjz + j), viz);
            simd_f mj = simd_load(mj_ + j);
            simd_f r2 = simd_fmadd(dz, dz, simd_fmadd(dy, dy, simd_mul(dx, dx)));
            simd_f px = simd_fmadd(dtri, dvx, dx), py = simd_fmadd(dtri, dvy, dy),
                   pz = simd_fmadd(dtri, dvz, dz);
            simd_f rp2 = simd_fmadd(pz, pz, simd_fmadd(py, py, simd_mul(px, px)));
            simd_mask nb = simd_lt(simd_min(r2, rp2), simd_mul(mj, h2i));
            unsigned bits = simd_mask_bits(nb);
            while (bits) { /* rare: a few hundred of N per i */
                if (count < limit)
                    col[1 + count] = j + lowest_bit(bits);
                count++;
                bits &= bits - 1;
            }
            simd_f rinv = simd_keep(simd_rsqrt_nz(r2), simd_mask_not(nb));
            simd_f rinv2 = simd_mul(rinv, rinv);
            simd_f mrinv = simd_mul(mj, rinv);
            simd_f mr3 = simd_mul(mrinv, rinv2);
            simd_f rv = simd_mul(simd_mul(three, rinv2),
                                 simd_fmadd(dz, dvz, simd_fmadd(dy, dvy, simd_mul(dx, dvx))));
            ax = simd_fmadd(mr3, dx, ax);
            ay = simd_fmadd(mr3, dy, ay);
            az = simd_fmadd(mr3, dz, az);
            jx = simd_fmadd(mr3, simd_fnmadd(rv, dx, dvx), jx);
            jy = simd_fmadd(mr3, simd_fnmadd(rv, dy, dvy), jy);
            jz = simd_fmadd(mr3, simd_fnmadd(rv, dz, dvz), jz);
            ph = simd_add(ph, mrinv);
        }
        a[0] += simd_hsum(ax);
        a[1] += simd_hsum(ay);
        a[2] += simd_hsum(az);
        jk[0] += simd_hsum(jx);
        jk[1] += simd_hsum(jy);
        jk[2] += simd_hsum(jz);
        phi += simd_hsum(ph);
    }
    col[0] = count > limit ? -count : count;
    for (int k = 0; k < 3; k++) {
        acc[k] = a[k];
        jrk[k] = jk[k];
    }
    if (pot)
        *pot = phi;
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
        for (int i = 0; i < ni; i++) {
            regf_one(js, h2[i], dtr[i], xi[i], vi[i], acc[i], jrk[i], pot ? pot + i : NULL, limit,
                     list + (size_t)i * (size_t)lmax);
            mine++;
        }
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
    for (int i = 0; i < ni; i++)
        regf_one(js, h2[i], dtr[i], xi[i], vi[i], acc[i], jrk[i], pot ? pot + i : NULL, limit,
                 list + (size_t)i * (size_t)lmax);
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
