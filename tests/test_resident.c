/* test_resident.c -- the extended GPUNB path (resident j-particles predicted
 * by the library, asynchronous regular force) against the legacy path on the
 * same data, on every back-end this machine runs; its call-order rules; and
 * GPUNB_SET_JP from many threads at once. */
#include "gpunb.h"
#include "nb6accel_legacy.h"
#include "testlib.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { N = 3000, NI = 700, LMAX = 160 };

static tl_cluster c;
static double f_half[N][3], fdot_sixth[N][3], t0[N];

static void predict(int j, double t, double x[3], double v[3])
{
    double dt = t - t0[j];
    for (int k = 0; k < 3; k++) {
        x[k] = c.x[j][k] + dt * (c.v[j][k] + dt * (f_half[j][k] + dt * fdot_sixth[j][k]));
        v[k] = c.v[j][k] + 2.0 * dt * (f_half[j][k] + 1.5 * dt * fdot_sixth[j][k]);
    }
}

static void set_all(gpunb *nb)
{
    for (int j = 0; j < N; j++)
        gpunb_set_jparticle(nb, j, c.x[j], c.v[j], f_half[j], fdot_sixth[j], c.m[j], t0[j]);
}

/* The block of ji, h2, dtr as two forces in flight (a third of it, then
 * the rest started before the first is collected), collected in the order
 * of the starts: the same lists and forces as one start (acc, list) on the
 * same j-set. */
static void two_in_flight(gpunb *b, const int *ji, const double *h2, const double *dtr, double (*acc)[3],
                          const int *list, const char *label)
{
    static double acc3[NI][3], jrk3[NI][3], pot3[NI];
    static int list3[NI * LMAX];
    const int n1 = NI / 3;
    double worst = 0.0;
    int differ = 0;
    TL_CHECK(gpunb_regf_start(b, n1, ji, h2, dtr, LMAX, LMAX - 5) == GPUNB_OK, "%s first start: %s", label,
             gpunb_last_error());
    TL_CHECK(gpunb_regf_start(b, NI - n1, ji + n1, h2 + n1, dtr + n1, LMAX, LMAX - 5) == GPUNB_OK,
             "%s second start: %s", label, gpunb_last_error());
    TL_CHECK(gpunb_regf_finish(b, acc3, jrk3, pot3, list3) == GPUNB_OK, "%s first finish: %s", label,
             gpunb_last_error());
    TL_CHECK(gpunb_regf_finish(b, acc3 + n1, jrk3 + n1, pot3 + n1, list3 + n1 * LMAX) == GPUNB_OK,
             "%s second finish: %s", label, gpunb_last_error());
    for (int i = 0; i < NI; i++) {
        const int *c1 = list + i * LMAX, *c3 = list3 + i * LMAX;
        int same = c1[0] == c3[0];
        for (int e = 1; same && e <= c1[0]; e++)
            same = c1[e] == c3[e];
        differ += !same;
        worst = fmax(worst, tl_relerr3(acc3[i], acc[i], 0.0));
    }
    TL_CHECK(differ == 0, "%s: %d of %d lists differ with two forces in flight", label, differ, NI);
    TL_CHECK(worst < 1e-6, "%s: forces differ by %.2e with two forces in flight", label, worst);
    printf("  %-10s two forces in flight vs one: %d lists differ, worst force difference %.2e\n", label, differ,
           worst);
}

/* Legacy path: predict here, send, regf.  Extended path: the library
 * predicts, regf_start/finish.  Same block, same answers. */
static void compare_paths(enum gpunb_backend_kind kind, const char *label)
{
    static double xp[N][3], vp[N][3], h2[NI], dtr[NI], xi[NI][3], vi[NI][3];
    static double acc1[NI][3], jrk1[NI][3], pot1[NI], acc2[NI][3], jrk2[NI][3], pot2[NI];
    static int list1[NI * LMAX], list2[NI * LMAX], ji[NI];
    gpunb *a = NULL, *b = NULL;
    double t = 0.004, bodym = tl_cluster_mean_mass(&c), worst = 0.0;
    int differ = 0;

    if (gpunb_open(&a, N, kind) != GPUNB_OK || gpunb_open(&b, N, kind) != GPUNB_OK) {
        printf("  %-10s not available here: %s\n", label, gpunb_last_error());
        gpunb_close(a);
        return;
    }
    for (int j = 0; j < N; j++)
        predict(j, t, xp[j], vp[j]);
    for (int i = 0; i < NI; i++) {
        ji[i] = (int)((long)i * 37 % N);
        memcpy(xi[i], xp[ji[i]], sizeof xi[i]);
        memcpy(vi[i], vp[ji[i]], sizeof vi[i]);
        h2[i] = pow(0.1 * (0.5 + tl_uniform()), 2) / bodym;
        dtr[i] = 0.002;
    }
    gpunb_send(a, N, c.m, (const double(*)[3])xp, (const double(*)[3])vp);
    TL_CHECK(gpunb_regf(a, NI, h2, dtr, (const double(*)[3])xi, (const double(*)[3])vi, acc1, jrk1, pot1,
                        LMAX, LMAX - 5, list1) == GPUNB_OK, "%s legacy regf: %s", label, gpunb_last_error());

    set_all(b);
    TL_CHECK(gpunb_predict(b, N, t) == GPUNB_OK, "%s predict: %s", label, gpunb_last_error());
    TL_CHECK(gpunb_regf_start(b, NI, ji, h2, dtr, LMAX, LMAX - 5) == GPUNB_OK, "%s start: %s", label,
             gpunb_last_error());
    TL_CHECK(gpunb_regf_finish(b, acc2, jrk2, pot2, list2) == GPUNB_OK, "%s finish: %s", label,
             gpunb_last_error());
    for (int i = 0; i < NI; i++) {
        const int *c1 = list1 + i * LMAX, *c2 = list2 + i * LMAX;
        int same = c1[0] == c2[0];
        for (int e = 1; same && e <= c1[0]; e++)
            same = c1[e] == c2[e];
        if (!same) {
            differ++;
            continue;
        }
        worst = fmax(worst, tl_relerr3(acc2[i], acc1[i], 0.0));
        worst = fmax(worst, tl_relerr3(jrk2[i], jrk1[i], 0.0));
    }
    /* The library predicts in double with the same formula, so the j-set is
     * the same up to the last bit; only a back-end with its own (device)
     * prediction may differ by rounding. */
    TL_CHECK(differ <= NI / 100, "%s: %d of %d lists differ between the paths", label, differ, NI);
    TL_CHECK(worst < 1e-6, "%s: forces differ by %.2e between the paths", label, worst);
    printf("  %-10s extended vs legacy path: %d of %d lists differ, worst force difference %.2e\n", label,
           differ, NI, worst);
    two_in_flight(b, ji, h2, dtr, acc2, list2, label);

    /* Change 40 records only; the next prediction must see exactly them. */
    for (int k = 0; k < 40; k++) {
        int j = tl_int(0, N - 1);
        for (int d = 0; d < 3; d++)
            f_half[j][d] += 0.1;
        gpunb_set_jparticle(b, j, c.x[j], c.v[j], f_half[j], fdot_sixth[j], c.m[j], t0[j]);
    }
    for (int j = 0; j < N; j++)
        predict(j, t, xp[j], vp[j]);
    for (int i = 0; i < NI; i++) {
        memcpy(xi[i], xp[ji[i]], sizeof xi[i]);
        memcpy(vi[i], vp[ji[i]], sizeof vi[i]);
    }
    gpunb_send(a, N, c.m, (const double(*)[3])xp, (const double(*)[3])vp);
    gpunb_regf(a, NI, h2, dtr, (const double(*)[3])xi, (const double(*)[3])vi, acc1, jrk1, pot1, LMAX,
               LMAX - 5, list1);
    gpunb_predict(b, N, t);
    gpunb_regf_start(b, NI, ji, h2, dtr, LMAX, LMAX - 5);
    gpunb_regf_finish(b, acc2, jrk2, pot2, list2);
    worst = 0.0;
    for (int i = 0; i < NI; i++)
        if (list1[i * LMAX] == list2[i * LMAX])
            worst = fmax(worst, tl_relerr3(acc2[i], acc1[i], 0.0));
    TL_CHECK(worst < 1e-6, "%s: after updating 40 records the paths differ by %.2e", label, worst);
    gpunb_close(a);
    gpunb_close(b);
}

static void expect(int st, const char *needle, const char *what)
{
    const char *msg = gpunb_last_error();
    if (TL_CHECK(st == GPUNB_EUSAGE, "%s: status %d, expected a usage error", what, st))
        TL_CHECK(strstr(msg, needle) != NULL, "%s: message \"%s\" lacks \"%s\"", what, msg, needle);
}

static void call_order(void)
{
    gpunb *nb;
    double h2[2] = {0.1, 0.1}, dtr[2] = {0, 0}, acc[2][3], jrk[2][3], pot[2];
    int ji[2] = {0, 1}, list[2 * 8];
    gpunb_open(&nb, N, GPUNB_BACKEND_REFERENCE);
    expect(gpunb_regf_finish(nb, acc, jrk, pot, list), "call gpunb_regf_start first", "finish before start");
    expect(gpunb_regf_start(nb, 2, ji, h2, dtr, 8, 7), "call gpunb_predict first", "start before predict");
    for (int j = 0; j < 100; j++)
        if (j != 57)
            gpunb_set_jparticle(nb, j, c.x[j], c.v[j], f_half[j], fdot_sixth[j], c.m[j], t0[j]);
    expect(gpunb_predict(nb, 100, 0.0), "j-particle 57 of 0..99 was never set", "predict with a hole");
    expect(gpunb_set_jparticle(nb, N, c.x[0], c.v[0], f_half[0], fdot_sixth[0], 1.0, 0.0),
           "j = 3000 is outside 0..2999", "set beyond capacity");
    {
        /* Each argument non-finite in turn (and a negative mass): the error
         * names it and its place, however the check is made. */
        double x[3] = {0.1, 0.2, 0.3}, v[3] = {0.4, 0.5, 0.6}, a[3] = {1, 2, 3}, d[3] = {4, 5, 6};
        x[2] = NAN;
        expect(gpunb_set_jparticle(nb, 5, x, v, a, d, 0.01, 0.0), "x0[2] = nan of j-particle 5", "NaN x0");
        x[2] = 0.3;
        v[0] = INFINITY;
        expect(gpunb_set_jparticle(nb, 5, x, v, a, d, 0.01, 0.0), "v0[0] = inf", "infinite v0");
        v[0] = 0.4;
        a[1] = -INFINITY;
        expect(gpunb_set_jparticle(nb, 5, x, v, a, d, 0.01, 0.0), "f_half[1] = -inf", "infinite f_half");
        a[1] = 2;
        d[2] = NAN;
        expect(gpunb_set_jparticle(nb, 5, x, v, a, d, 0.01, 0.0), "fdot_sixth[2] = nan", "NaN fdot_sixth");
        d[2] = 6;
        expect(gpunb_set_jparticle(nb, 5, x, v, a, d, NAN, 0.0), "m = nan", "NaN mass");
        expect(gpunb_set_jparticle(nb, 5, x, v, a, d, -0.01, 0.0), "m = -0.01", "negative mass");
        expect(gpunb_set_jparticle(nb, 5, x, v, a, d, 0.01, INFINITY), "t0 = inf", "infinite t0");
        TL_CHECK(gpunb_set_jparticle(nb, 5, x, v, a, d, 0.0, -1e300) == GPUNB_OK, "finite extremes refused: %s",
                 gpunb_last_error());
        gpunb_set_jparticle(nb, 5, c.x[5], c.v[5], f_half[5], fdot_sixth[5], c.m[5], t0[5]);
    }
    gpunb_set_jparticle(nb, 57, c.x[57], c.v[57], f_half[57], fdot_sixth[57], c.m[57], t0[57]);
    TL_CHECK(gpunb_predict(nb, 100, 0.0) == GPUNB_OK, "predict: %s", gpunb_last_error());
    ji[1] = 100;
    expect(gpunb_regf_start(nb, 2, ji, h2, dtr, 8, 7), "j_index[1] = 100 is outside 0..99", "start beyond j-set");
    ji[1] = 1;
    TL_CHECK(gpunb_regf_start(nb, 2, ji, h2, dtr, 8, 7) == GPUNB_OK, "start: %s", gpunb_last_error());
    expect(gpunb_predict(nb, 100, 0.1), "in flight", "predict while in flight");
    expect(gpunb_send(nb, 10, c.m, (const double(*)[3])c.x, (const double(*)[3])c.v), "in flight",
           "send while in flight");
    TL_CHECK(gpunb_regf_start(nb, 2, ji, h2, dtr, 8, 7) == GPUNB_OK, "second start while in flight: %s",
             gpunb_last_error());
    expect(gpunb_regf_start(nb, 2, ji, h2, dtr, 8, 7), "2 regular forces are in flight already",
           "third start while two are in flight");
    TL_CHECK(gpunb_regf_finish(nb, acc, jrk, pot, list) == GPUNB_OK, "finish: %s", gpunb_last_error());
    expect(gpunb_predict(nb, 100, 0.1), "in flight", "predict while the second is in flight");
    TL_CHECK(gpunb_regf_finish(nb, acc, jrk, pot, list) == GPUNB_OK, "second finish: %s", gpunb_last_error());
    expect(gpunb_regf_finish(nb, acc, jrk, pot, list), "call gpunb_regf_start first", "finish three times");
    gpunb_close(nb);
    printf("  call-order rules hold\n");
}

/* GPUNB_SET_JP from 8 threads at once, distinct J, through the Fortran name. */
static void *set_some(void *arg)
{
    for (int j = (int)(size_t)arg; j < N; j += 8) {
        int J = j + 1;
        NB6_F_GPUNB_SET_JP(&J, c.x[j], c.v[j], f_half[j], fdot_sixth[j], &c.m[j], &t0[j]);
    }
    return NULL;
}

static void concurrent_set(void)
{
    pthread_t tid[8];
    int cap = N, nj = N, ni = 1, ji = 5, lmax = LMAX, nbmax = LMAX - 1, list[LMAX];
    double t = 0.002, h2 = 0.01 / tl_cluster_mean_mass(&c), dtr = 0.0, acc[3], jrk[3], pot, xs[3], vs[3];
    NB6_F_GPUNB_OPEN(&cap);
    for (int k = 0; k < 8; k++)
        pthread_create(&tid[k], NULL, set_some, (void *)(size_t)k);
    for (int k = 0; k < 8; k++)
        pthread_join(tid[k], NULL);
    NB6_F_GPUNB_PREDICT(&nj, &t);
    NB6_F_GPUNB_REGF_START(&ni, &ji, &h2, &dtr, &lmax, &nbmax);
    NB6_F_GPUNB_REGF_FINISH(&acc, &jrk, &pot, list);
    NB6_F_GPUNB_CLOSE();
    /* particle J = 5 is j index 4: it must be in its own list */
    predict(4, t, xs, vs);
    int self = 0;
    for (int e = 1; e <= list[0]; e++)
        self |= list[e] == 4;
    TL_CHECK(list[0] >= 1 && self, "GPUNB_REGF_FINISH: particle 5 (j 4) is not in its own list");
    printf("  GPUNB_SET_JP from 8 threads, GPUNB_PREDICT, GPUNB_REGF_START/FINISH: %d neighbours\n", list[0]);
}

int main(void)
{
    tl_seed_from_env();
    tl_cluster_make(&c, N, 20, 2.0, 0.2);
    for (int j = 0; j < N; j++) {
        for (int k = 0; k < 3; k++) {
            f_half[j][k] = 0.5 * tl_normal();
            fdot_sixth[j][k] = tl_normal() / 6.0;
        }
        t0[j] = c.m[j] > 0.0 ? -0.002 * tl_int(0, 4) : 1.0e6; /* ghosts as NBODY6 keeps them */
    }
    compare_paths(GPUNB_BACKEND_REFERENCE, "reference");
    compare_paths(GPUNB_BACKEND_CPU, "cpu");
    compare_paths(GPUNB_BACKEND_CUDA, "cuda");
    call_order();
    concurrent_set();
    tl_cluster_free(&c);
    return tl_finish("test_resident");
}
