/* gpunb_cpu.c -- reference CPU back-end of GPUNB: OpenMP over i, a plain loop
 * over j, double precision throughout.  It defines what the faster back-ends
 * must reproduce. */
#include "config.h"
#include "gpunb_backend.h"

#include <math.h>
#include <string.h>

typedef struct cpu_state {
    int capacity, nj;
    double *m;        /* [capacity]    */
    double (*x)[3];   /* [capacity][3] */
    double (*v)[3];
} cpu_state;

static void cpu_close(void *state)
{
    cpu_state *s = state;
    if (!s)
        return;
    nb6_free(s->m);
    nb6_free(s->x);
    nb6_free(s->v);
    nb6_free(s);
}

static int cpu_open(void **state, int capacity, char *desc)
{
    cpu_state *s = nb6_alloc(sizeof *s);
    if (!s)
        return gpunb_fail(GPUNB_ERESOURCE, "gpunb_open: out of host memory");
    s->capacity = capacity;
    s->m = nb6_alloc(sizeof(double) * (size_t)capacity);
    s->x = nb6_alloc(sizeof(double[3]) * (size_t)capacity);
    s->v = nb6_alloc(sizeof(double[3]) * (size_t)capacity);
    if (!s->m || !s->x || !s->v) {
        cpu_close(s);
        return gpunb_fail(GPUNB_ERESOURCE,
                          "gpunb_open: out of host memory for capacity = %d j-particles", capacity);
    }
    nb6_format(desc, "CPU reference back-end, double precision, %d OpenMP threads", nb6_max_threads());
    *state = s;
    return GPUNB_OK;
}

static int cpu_send(void *state, int nj, const double *m, const double (*x)[3], const double (*v)[3])
{
    cpu_state *s = state;
    memcpy(s->m, m, sizeof(double) * (size_t)nj);
    memcpy(s->x, x, sizeof(double[3]) * (size_t)nj);
    memcpy(s->v, v, sizeof(double[3]) * (size_t)nj);
    s->nj = nj;
    return GPUNB_OK;
}

static int cpu_regf(void *state, int ni, const double *h2, const double *dtr,
                    const double (*xi)[3], const double (*vi)[3], double (*acc)[3],
                    double (*jrk)[3], double *pot, int lmax, int limit, int *list,
                    double *t_force, double *t_gather)
{
    const cpu_state *s = state;
    const int nj = s->nj;
    double t0 = nb6_clock();

#pragma omp parallel for schedule(dynamic, 4)
    for (int i = 0; i < ni; i++) {
        double a[3] = {0, 0, 0}, jk[3] = {0, 0, 0}, phi = 0.0;
        int *col = list + (size_t)i * (size_t)lmax;
        int count = 0;
        for (int j = 0; j < nj; j++) {
            double dx[3], dv[3], dp[3];
            for (int k = 0; k < 3; k++) {
                dx[k] = s->x[j][k] - xi[i][k];
                dv[k] = s->v[j][k] - vi[i][k];
                dp[k] = dx[k] + dtr[i] * dv[k];
            }
            double r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2];
            double rp2 = dp[0] * dp[0] + dp[1] * dp[1] + dp[2] * dp[2];
            double rmin2 = r2 < rp2 ? r2 : rp2;
            if (rmin2 < s->m[j] * h2[i]) {
                if (count < limit)
                    col[1 + count] = j;
                count++;
                continue;
            }
            if (r2 == 0.0)
                continue;
            double rinv2 = 1.0 / r2, rinv = sqrt(rinv2);
            double mr3 = s->m[j] * rinv * rinv2;
            double rv = 3.0 * (dx[0] * dv[0] + dx[1] * dv[1] + dx[2] * dv[2]) * rinv2;
            for (int k = 0; k < 3; k++) {
                a[k] += mr3 * dx[k];
                jk[k] += mr3 * (dv[k] - rv * dx[k]);
            }
            phi += s->m[j] * rinv;
        }
        col[0] = count > limit ? -count : count;
        for (int k = 0; k < 3; k++) {
            acc[i][k] = a[k];
            jrk[i][k] = jk[k];
        }
        if (pot)
            pot[i] = phi;
    }
    *t_force = nb6_clock() - t0;
    *t_gather = 0.0;
    return GPUNB_OK;
}

const gpunb_backend_ops gpunb_backend_cpu = {
    .name = "reference",
    .open = cpu_open,
    .close = cpu_close,
    .send = cpu_send,
    .regf = cpu_regf,
};

int gpunb_cpu_potential(int n, const double *m, const double (*x)[3], double *pot)
{
#pragma omp parallel for schedule(dynamic, 64)
    for (int k = 0; k < n; k++) {
        double phi = 0.0;
        for (int l = 0; l < n; l++) {
            double dx = x[l][0] - x[k][0], dy = x[l][1] - x[k][1], dz = x[l][2] - x[k][2];
            double r2 = dx * dx + dy * dy + dz * dz;
            if (l != k && r2 > 0.0)
                phi += m[l] / sqrt(r2);
        }
        pot[k] = phi;
    }
    return GPUNB_OK;
}
