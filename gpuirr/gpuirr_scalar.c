/* gpuirr_scalar.c -- reference GPUIRR kernel: double-precision prediction
 * (lazy, in two phases as struct gpuirr describes) and double-precision sums,
 * OpenMP over particles.  The SIMD kernels are checked
 * against what this computes. */
#include "config.h"
#include "gpuirr_internal.h"

#include <math.h>

/* A predicted value written in phase 1 of a force call (see struct gpuirr):
 * relaxed atomic, as two threads may write the same slot (the same value). */
static inline void store_double(double *p, double v) { __atomic_store(p, &v, __ATOMIC_RELAXED); }

/* Slot s to g->t_pred, into xp, vp. */
static void scalar_predict_one(gpuirr *g, int s)
{
    const gpuirr_src *q = &g->src[s];
    double dt = g->t_pred - q->t0;
    for (int k = 0; k < 3; k++) {
        double a2 = q->f_half[k], j6 = q->fdot_sixth[k];
        store_double(&g->xp[s][k], q->x0[k] + dt * (q->v0[k] + dt * (a2 + dt * j6)));
        store_double(&g->vp[s][k], q->v0[k] + 2.0 * dt * (a2 + 1.5 * dt * j6));
    }
}

static double scalar_force(gpuirr *g, int ni, const int *addr, double (*acc)[3],
                           double (*jrk)[3], gpuirr_team *team)
{
    double pairs = 0.0;
    const double t_call = nb6_clock();
    double lag = 0.0, busy = 0.0, predict = 0.0;
    long long predicted = 0;
    int threads = 0;
    const int lazy = g->epoch != 0; /* 0: no predict call yet, nothing to predict */
#pragma omp parallel if (ni >= 32) reduction(+ : pairs, busy, threads, predicted) \
    reduction(max : lag, predict)
    {
    const double t_start = nb6_clock();
    if (lazy) {
        /* Phase 1: equal shares of addr; xp, vp only written here. */
        const int tid = nb6_thread_num(), nt = nb6_team_size();
        predicted = gpuirr_predict_lists(g, addr, (int)((long long)ni * tid / nt),
                                         (int)((long long)ni * (tid + 1) / nt), scalar_predict_one);
#pragma omp barrier
        predict = nb6_clock() - t_call;
    }
    /* Phase 2: plain loads, no writes to xp, vp. */
#pragma omp for schedule(guided) nowait
    for (int n = 0; n < ni; n++) {
        int i = addr[n] - 1;
        const int *members = g->lists + (size_t)i * (size_t)g->lmax;
        double a[3] = {0, 0, 0}, jk[3] = {0, 0, 0};
        pairs += members[0];
        for (int e = 1; e <= members[0]; e++) {
            int j = members[e] / GPUIRR_REC;
            double dx[3], dv[3];
            for (int k = 0; k < 3; k++) {
                dx[k] = g->xp[j][k] - g->xp[i][k];
                dv[k] = g->vp[j][k] - g->vp[i][k];
            }
            double r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2];
            if (r2 == 0.0)
                continue;
            double rinv2 = 1.0 / r2;
            double mr3 = g->src[j].mass * rinv2 * sqrt(rinv2);
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
    *team = (gpuirr_team){lag, busy, predict, predicted, threads};
    return pairs;
}

const gpuirr_kernel gpuirr_kernel_scalar = {
    .name = "scalar",
    .force = scalar_force,
};
