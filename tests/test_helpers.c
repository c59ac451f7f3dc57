/* test_helpers.c -- GPUPOT, CXVPRED, CNBINT, WTIME and DBLTIM through the
 * legacy symbols, against references computed here. */
#include "nb6accel_legacy.h"
#include "testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void test_gpupot(void)
{
    tl_cluster c;
    int n = 2500;
    tl_cluster_make(&c, n, 30, 1.3, 0.3);
    /* Two particles at one place: their pair is skipped, not infinite. */
    memcpy(c.x[5], c.x[4], sizeof c.x[4]);
    double *pot = malloc(sizeof(double) * (size_t)(n + 8));
    for (int k = 0; k < n + 8; k++)
        pot[k] = -1.0;
    NB6_F_GPUPOT(&n, c.m, c.x, pot);
    double worst = 0.0;
    int positive = 1;
    for (int k = 0; k < n; k++) {
        long double ref = 0.0L;
        for (int l = 0; l < n; l++) {
            long double dx = (long double)c.x[l][0] - c.x[k][0], dy = (long double)c.x[l][1] - c.x[k][1],
                        dz = (long double)c.x[l][2] - c.x[k][2];
            long double r2 = dx * dx + dy * dy + dz * dz;
            if (l != k && r2 > 0.0L)
                ref += c.m[l] / sqrtl(r2);
        }
        positive &= pot[k] > 0.0;
        worst = fmax(worst, fabs((double)((pot[k] - ref) / ref)));
    }
    TL_CHECK(positive, "GPUPOT: a potential is not positive");
    TL_CHECK(worst < 1e-12, "GPUPOT: worst relative error %.3e vs long double", worst);
    TL_CHECK(pot[n] == -1.0, "GPUPOT wrote past element n");
    printf("GPUPOT: n = %d, worst relative error vs long double %.3e\n", n, worst);

    int zero = 0;
    NB6_F_GPUPOT(&zero, c.m, c.x, pot);
    TL_CHECK(pot[0] > 0.0, "GPUPOT with n = 0 changed pot[0]");
    free(pot);
    tl_cluster_free(&c);
}

static void test_cxvpred(void)
{
    enum { N = 600 };
    static double t0[N], x0[N][3], x0dot[N][3], f[N][3], fdot[N][3], x[N][3], xdot[N][3], tpred[N];
    int js = 101, je = 499; /* 1-based, inclusive */
    double time = 0.75;
    for (int j = 0; j < N; j++) {
        t0[j] = time - 0.01 * tl_uniform();
        tpred[j] = j % 7 == 0 ? time : -1.0; /* already predicted: leave alone */
        for (int k = 0; k < 3; k++) {
            x0[j][k] = tl_normal();
            x0dot[j][k] = tl_normal();
            f[j][k] = tl_normal();
            fdot[j][k] = tl_normal();
            x[j][k] = xdot[j][k] = 12345.0;
        }
    }
    NB6_F_CXVPRED(&js, &je, &time, t0, x0, x0dot, f, fdot, x, xdot, tpred);
    int outside = 1, skipped = 1, exact = 1;
    for (int j = 0; j < N; j++) {
        int a = j + 1;
        if (a < js || a > je) {
            outside &= x[j][0] == 12345.0 && xdot[j][2] == 12345.0 && (tpred[j] == time || tpred[j] == -1.0);
            continue;
        }
        if (j % 7 == 0) {
            skipped &= x[j][1] == 12345.0;
            continue;
        }
        double s = time - t0[j];
        for (int k = 0; k < 3; k++) {
            /* NBODY6's JPRED, evaluated in the same order; every product
             * rounded on its own (volatile), as a compiler without FMA
             * contraction does, whatever -march this test is built for. */
            volatile double p1 = s * fdot[j][k], a1 = f[j][k] + p1, p2 = s * a1, a2 = x0dot[j][k] + p2;
            volatile double p3 = s * a2, xp = x0[j][k] + p3;
            volatile double q1 = 1.5 * s, q2 = q1 * fdot[j][k], b1 = f[j][k] + q2, q3 = 2.0 * s, q4 = q3 * b1;
            volatile double vp = x0dot[j][k] + q4;
            exact &= x[j][k] == xp && xdot[j][k] == vp;
        }
        exact &= tpred[j] == time;
    }
    TL_CHECK(outside, "CXVPRED wrote outside js..je");
    TL_CHECK(skipped, "CXVPRED recomputed a particle with TPRED == TIME");
    TL_CHECK(exact, "CXVPRED differs from NBODY6's JPRED formula");
    printf("CXVPRED: range %d..%d checked bit for bit\n", js, je);
}

static void test_cnbint(void)
{
    tl_cluster c;
    int n = 400, i = 17, list[64], nnb;
    double fp[3], fd[3];
    tl_cluster_make(&c, n, 0, 0.5, 0.3);
    for (int k = 0; k < 40; k++)
        list[k] = 30 + 5 * k; /* absolute 1-based indices */
    nnb = 41;                  /* NNB2: the LIST row of the last member */
    fp[0] = fd[0] = NAN;
    NB6_F_CNBINT(&i, c.x, c.v, c.m, &nnb, list, fp, fd);
    double ra[3] = {0, 0, 0}, rj[3] = {0, 0, 0};
    for (int e = 0; e < 40; e++) {
        int j = list[e] - 1;
        double dx[3], dv[3];
        for (int k = 0; k < 3; k++) {
            dx[k] = c.x[j][k] - c.x[i - 1][k];
            dv[k] = c.v[j][k] - c.v[i - 1][k];
        }
        double r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2], r = sqrt(r2);
        double rv = dx[0] * dv[0] + dx[1] * dv[1] + dx[2] * dv[2];
        for (int k = 0; k < 3; k++) {
            ra[k] += c.m[j] * dx[k] / (r2 * r);
            rj[k] += c.m[j] * (dv[k] / (r2 * r) - 3.0 * rv * dx[k] / (r2 * r2 * r));
        }
    }
    double ea = tl_relerr3(fp, ra, 0.0), ej = tl_relerr3(fd, rj, 0.0);
    TL_CHECK(ea < 1e-12 && ej < 1e-12, "CNBINT: rel. errors acc %.2e jerk %.2e", ea, ej);
    nnb = 1;
    fp[0] = fd[1] = 99.0;
    NB6_F_CNBINT(&i, c.x, c.v, c.m, &nnb, list, fp, fd);
    TL_CHECK(fp[0] == 0.0 && fd[1] == 0.0, "CNBINT with NNB = 1 must give zero");
    printf("CNBINT: 40 members (NNB = 41), rel. error acc %.2e jerk %.2e\n", ea, ej);
    tl_cluster_free(&c);
}

static void test_clock(void)
{
    int h, m, s, h2, m2, s2;
    NB6_F_WTIME(&h, &m, &s);
    double t1 = NB6_F_DBLTIM();
    struct timespec pause = {0, 300000000};
    nanosleep(&pause, NULL);
    double t2 = NB6_F_DBLTIM();
    NB6_F_WTIME(&h2, &m2, &s2);
    TL_CHECK(h >= 0 && m >= 0 && m < 60 && s >= 0 && s < 60, "WTIME gave %d h %d m %d s", h, m, s);
    TL_CHECK(t1 >= 0.0 && t1 < 3600.0, "DBLTIM = %g s since start", t1);
    TL_CHECK(t2 - t1 > 0.25 && t2 - t1 < 5.0, "DBLTIM advanced %g s over a 0.3 s pause", t2 - t1);
    TL_CHECK(3600 * h2 + 60 * m2 + s2 >= 3600 * h + 60 * m + s, "WTIME went backwards");
    TL_CHECK(fabs((3600 * h2 + 60 * m2 + s2) - t2) <= 1.0, "WTIME and DBLTIM disagree");
    printf("WTIME/DBLTIM: %g s since start\n", t2);
}

int main(void)
{
    tl_seed_from_env();
    test_gpupot();
    test_cxvpred();
    test_cnbint();
    test_clock();
    return tl_finish("test_helpers");
}
