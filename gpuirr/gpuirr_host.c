/* gpuirr_host.c -- host helpers NBODY6 calls beside GPUIRR: prediction of
 * X/XDOT (CXVPRED), the KS perturber force (CNBINT), the wall clock (WTIME). */
#include "config.h"
#include "gpuirr_internal.h"

#include <math.h>

/* Same Horner form as NBODY6's JPRED; without FMA contraction both give the
 * same bits, so a particle predicted in Fortran and here agrees exactly. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("fp-contract=off")))
#endif
void gpuirr_host_predict(int js, int je, double time, const double *t0, const double (*x0)[3],
                         const double (*x0dot)[3], const double (*f)[3], const double (*fdot)[3],
                         double (*x)[3], double (*xdot)[3], double *tpred)
{
#pragma omp parallel for schedule(static) if (je - js > 4096)
    for (int j = js - 1; j <= je - 1; j++) {
        if (tpred[j] == time)
            continue;
        double s = time - t0[j];
        for (int k = 0; k < 3; k++) {
            x[j][k] = x0[j][k] + s * (x0dot[j][k] + s * (f[j][k] + s * fdot[j][k]));
            xdot[j][k] = x0dot[j][k] + 2.0 * s * (f[j][k] + 1.5 * s * fdot[j][k]);
        }
        tpred[j] = time;
    }
}

void gpuirr_host_neighbour_force(int i, const double (*x)[3], const double (*xdot)[3],
                                 const double *mass, int n, const int *members, double f[3],
                                 double fdot[3])
{
    double a[3] = {0, 0, 0}, jk[3] = {0, 0, 0};
    const int si = i - 1;
    for (int e = 0; e < n; e++) {
        int j = members[e] - 1;
        double dx[3], dv[3];
        for (int k = 0; k < 3; k++) {
            dx[k] = x[j][k] - x[si][k];
            dv[k] = xdot[j][k] - xdot[si][k];
        }
        double r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2];
        if (r2 == 0.0)
            continue;
        double rinv2 = 1.0 / r2;
        double mr3 = mass[j] * rinv2 * sqrt(rinv2);
        double rv = 3.0 * (dx[0] * dv[0] + dx[1] * dv[1] + dx[2] * dv[2]) * rinv2;
        for (int k = 0; k < 3; k++) {
            a[k] += mr3 * dx[k];
            jk[k] += mr3 * (dv[k] - rv * dx[k]);
        }
    }
    for (int k = 0; k < 3; k++) {
        f[k] = a[k];
        fdot[k] = jk[k];
    }
}

double gpuirr_wall_time(void) { return nb6_process_time(); }
