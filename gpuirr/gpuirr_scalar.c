/* gpuirr_scalar.c -- reference GPUIRR kernel: double-precision prediction and
 * double-precision sums, OpenMP over particles.  The SIMD kernels are checked
 * against what this computes. */
#include "config.h"
#include "gpuirr_internal.h"

#include <math.h>

static inline void predict_slot(gpuirr *g, int s, double t)
{
    const gpuirr_source *r = &g->src[s];
    double dt = t - r->t0;
    for (int k = 0; k < 3; k++) {
        double a2 = r->f_half[k], j6 = r->fdot_sixth[k];
        g->xp[s][k] = r->x0[k] + dt * (r->v0[k] + dt * (a2 + dt * j6));
        g->vp[s][k] = r->v0[k] + 2.0 * dt * (a2 + 1.5 * dt * j6);
    }
}

static long long scalar_predict_due(gpuirr *g, int first, int last)
{
    long long count = 0;
#pragma omp parallel for schedule(static) reduction(+ : count) if (last - first >= 4096)
    for (int s = first; s <= last; s++)
        if (gpuirr_claim(g, s)) {
            predict_slot(g, s, g->pred_time);
            count++;
        }
    return count;
}

/* Sum over the list of slot i from the predictions xp, vp. */
static void force_one(const gpuirr *g, int i, double acc[3], double jrk[3])
{
    const int *members = g->lists + (size_t)i * (size_t)g->lmax;
    double a[3] = {0, 0, 0}, jk[3] = {0, 0, 0};
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
        acc[k] = a[k];
        jrk[k] = jk[k];
    }
}

/* Phase 1 predicts what this call reads and is due (each slot by the one
 * thread that claims it), the barrier of its loop orders those writes
 * before phase 2 reads them. */
static double scalar_force(gpuirr *g, int ni, const int *addr, double (*acc)[3], double (*jrk)[3],
                           long long *predicted)
{
    const double t = g->pred_time;
    double pairs = 0.0;
    long long count = 0;
#pragma omp parallel if (ni >= GPUIRR_PARALLEL_MIN) reduction(+ : pairs, count)
    {
#pragma omp for schedule(dynamic, 4)
        for (int n = 0; n < ni; n++) {
            int i = addr[n] - 1;
            const int *members = g->lists + (size_t)i * (size_t)g->lmax;
            if (gpuirr_claim(g, i))
                predict_slot(g, i, t), count++;
            for (int e = 1; e <= members[0]; e++) {
                int j = members[e] / GPUIRR_REC;
                if (gpuirr_claim(g, j))
                    predict_slot(g, j, t), count++;
            }
        }
#pragma omp for schedule(guided)
        for (int n = 0; n < ni; n++) {
            int i = addr[n] - 1;
            pairs += g->lists[(size_t)i * (size_t)g->lmax];
            force_one(g, i, acc[n], jrk[n]);
        }
    }
    *predicted = count;
    return pairs;
}

const gpuirr_kernel gpuirr_kernel_scalar = {
    .name = "scalar",
    .predict_due = scalar_predict_due,
    .force = scalar_force,
};
