/* gpuirr_scalar.c -- reference GPUIRR kernel: double-precision prediction
 * (of each i and member as it is summed) and double-precision sums, OpenMP
 * over particles.  The SIMD kernels are checked
 * against what this computes. */
#include "config.h"
#include "gpuirr_internal.h"

#include <math.h>

/* Slot s predicted to t, as gpuirr.h states, in double. */
static inline void predict_slot(const gpuirr *g, int s, double t, double x[3], double v[3])
{
    double dt = t - g->t0[s];
    for (int k = 0; k < 3; k++) {
        double a2 = g->f_half[s][k], j6 = g->fdot_sixth[s][k];
        x[k] = g->x0[s][k] + dt * (g->v0[s][k] + dt * (a2 + dt * j6));
        v[k] = g->v0[s][k] + 2.0 * dt * (a2 + 1.5 * dt * j6);
    }
}

static double scalar_force(const gpuirr *g, int ni, const int *addr, double (*acc)[3],
                           double (*jrk)[3], gpuirr_team *team)
{
    const double t = g->t_pred;
    double pairs = 0.0;
    const double t_call = nb6_clock();
    double lag = 0.0, busy = 0.0;
    int threads = 0;
#pragma omp parallel reduction(+ : pairs, busy, threads) reduction(max : lag)
    {
    const double t_start = nb6_clock();
#pragma omp for schedule(guided) nowait
    for (int n = 0; n < ni; n++) {
        int i = addr[n] - 1;
        const int *members = g->lists + (size_t)i * (size_t)g->lmax;
        double a[3] = {0, 0, 0}, jk[3] = {0, 0, 0}, xi[3], vi[3];
        pairs += members[0];
        predict_slot(g, i, t, xi, vi);
        for (int e = 1; e <= members[0]; e++) {
            int j = members[e] / GPUIRR_REC;
            double dx[3], dv[3], xj[3], vj[3];
            predict_slot(g, j, t, xj, vj);
            for (int k = 0; k < 3; k++) {
                dx[k] = xj[k] - xi[k];
                dv[k] = vj[k] - vi[k];
            }
            double r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2];
            if (r2 == 0.0)
                continue;
            double rinv2 = 1.0 / r2;
            double mr3 = g->mass[j] * rinv2 * sqrt(rinv2);
            double rv = 3.0 * (dx[0] * dv[0] + dx[1] * dv[1] + dx[2] * dv[2]) * rinv2;
            for (int k = 0; k < 3; k++) {
                a[k] += mr3 * dx[k];
                jk[k] += mr3 * (dv[k] - rv * dx[k]);
            }
        }
        for (int k = 0; k < 3; k++) {
            acc[n][k] = a[k];
            jrk[n][k] = jk[k];
        }
    }
    lag = t_start - t_call;
    busy = nb6_clock() - t_start;
    threads = 1;
    }
    *team = (gpuirr_team){lag, busy, threads};
    return pairs;
}

const gpuirr_kernel gpuirr_kernel_scalar = {
    .name = "scalar",
    .float_records = 0,
    .force = scalar_force,
};
