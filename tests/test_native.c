/* test_native.c -- the native C API under the legacy symbols: status codes
 * and messages instead of stops, independent handles, statistics. */
#include "gpuirr.h"
#include "gpunb.h"
#include "testlib.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void expect_status(int got, int want, const char *msg, const char *needle, const char *what)
{
    if (TL_CHECK(got == want, "%s: status %d, expected %d (%s)", what, got, want, msg) && needle)
        TL_CHECK(strstr(msg, needle) != NULL, "%s: message \"%s\" lacks \"%s\"", what, msg, needle);
}

/* gpunb_send's checks scan the j-set in blocks of 2048 values (a vectorised
 * pass, then a search in a block that fails), on the OpenMP team from 32768
 * values: bad values on either side of block edges, in any thread's share
 * and in the last, partial block must still be named exactly, and of two
 * the first, wherever the other lies. */
static void send_names_bad_values(void)
{
    enum { N = 40000 };
    static double m[N], x[N][3], v[N][3];
    gpunb *h = NULL;
    char want[96];
    for (int j = 0; j < N; j++) {
        m[j] = 1.0 / N;
        for (int k = 0; k < 3; k++) {
            x[j][k] = 2.0 * tl_uniform() - 1.0;
            v[j][k] = 2.0 * tl_uniform() - 1.0;
        }
    }
    if (!TL_CHECK(gpunb_open(&h, N, GPUNB_BACKEND_REFERENCE) == GPUNB_OK, "open: %s", gpunb_last_error()))
        return;
    /* flat indices of x: 2047 is x[682][1], 2048 x[682][2]; 119999 is the last */
    static const long flat[] = {0, 2047, 2048, 4095, 6144, 29999, 61439, 61440, 104447, 119999};
    for (size_t q = 0; q < sizeof flat / sizeof flat[0]; q++) {
        const long j = flat[q] / 3, k = flat[q] % 3;
        const double keep = x[j][k];
        x[j][k] = q % 2 ? NAN : -INFINITY;
        snprintf(want, sizeof want, "x[%ld][%ld] = %s", j, k, q % 2 ? "nan" : "-inf");
        expect_status(gpunb_send(h, N, m, (const double(*)[3])x, (const double(*)[3])v), GPUNB_EUSAGE,
                      gpunb_last_error(), want, "gpunb_send with a bad position past a block edge");
        x[j][k] = keep;
    }
    /* Two bad values: the first is named, whichever thread finds the other. */
    static const long pairs[][2] = {{3, 119998}, {59000, 117000}, {40961, 40962}, {100000, 100001}};
    for (size_t q = 0; q < sizeof pairs / sizeof pairs[0]; q++) {
        const long j0 = pairs[q][0] / 3, k0 = pairs[q][0] % 3, j1 = pairs[q][1] / 3, k1 = pairs[q][1] % 3;
        const double keep0 = v[j0][k0], keep1 = v[j1][k1];
        v[j0][k0] = INFINITY;
        v[j1][k1] = NAN;
        snprintf(want, sizeof want, "v[%ld][%ld] = inf", j0, k0);
        expect_status(gpunb_send(h, N, m, (const double(*)[3])x, (const double(*)[3])v), GPUNB_EUSAGE,
                      gpunb_last_error(), want, "gpunb_send with two bad velocities");
        v[j0][k0] = keep0;
        v[j1][k1] = keep1;
    }
    static const long bad_m[] = {2047, 2048, 9999, 32767, 32768, 39999};
    for (size_t q = 0; q < sizeof bad_m / sizeof bad_m[0]; q++) {
        m[bad_m[q]] = -0.25;
        snprintf(want, sizeof want, "m[%ld] = -0.25 is negative", bad_m[q]);
        expect_status(gpunb_send(h, N, m, (const double(*)[3])x, (const double(*)[3])v), GPUNB_EUSAGE,
                      gpunb_last_error(), want, "gpunb_send with a negative mass past a block edge");
        m[bad_m[q]] = INFINITY;
        snprintf(want, sizeof want, "m[%ld] = inf is not finite", bad_m[q]);
        expect_status(gpunb_send(h, N, m, (const double(*)[3])x, (const double(*)[3])v), GPUNB_EUSAGE,
                      gpunb_last_error(), want, "gpunb_send with an infinite mass past a block edge");
        m[bad_m[q]] = 1.0 / N;
    }
    TL_CHECK(gpunb_send(h, N, m, (const double(*)[3])x, (const double(*)[3])v) == GPUNB_OK,
             "send after the bad values were restored: %s", gpunb_last_error());
    gpunb_close(h);
}

int main(void)
{
    tl_cluster c;
    gpunb *a = NULL, *b = NULL;
    gpuirr *g = NULL;
    tl_seed_from_env();
    tl_cluster_make(&c, 300, 3, 0.0, 0.0); /* no tight pair may dominate the force */

    expect_status(gpunb_open(&a, 0, GPUNB_BACKEND_REFERENCE), GPUNB_EUSAGE, gpunb_last_error(),
                  "capacity = 0", "gpunb_open with capacity 0");
    expect_status(gpunb_open(NULL, 10, GPUNB_BACKEND_REFERENCE), GPUNB_EUSAGE, gpunb_last_error(),
                  "out is NULL", "gpunb_open with out = NULL");
    expect_status(gpunb_send(NULL, 10, c.m, (const double(*)[3])c.x, (const double(*)[3])c.v),
                  GPUNB_EUSAGE, gpunb_last_error(), "before gpunb_open", "gpunb_send on NULL");

    TL_CHECK(gpunb_backend_usable(GPUNB_BACKEND_REFERENCE) && gpunb_backend_usable(GPUNB_BACKEND_CPU),
             "the host back-ends must always be usable");
    if (!gpunb_backend_usable(GPUNB_BACKEND_CUDA))
        TL_CHECK(strstr(gpunb_last_error(), "CUDA") != NULL, "no reason given why CUDA is unusable: \"%s\"",
                 gpunb_last_error());

    /* Two handles with different j-sets do not see each other. */
    TL_CHECK(gpunb_open(&a, 300, GPUNB_BACKEND_REFERENCE) == GPUNB_OK, "open a: %s", gpunb_last_error());
    TL_CHECK(gpunb_open(&b, 300, GPUNB_BACKEND_CPU) == GPUNB_OK, "open b: %s", gpunb_last_error());
    TL_CHECK(strcmp(gpunb_backend_name(a), "reference") == 0, "handle a runs %s", gpunb_backend_name(a));
    printf("reference back-end: %s\nCPU back-end (%s): %s\n", gpunb_backend_description(a),
           gpunb_backend_name(b), gpunb_backend_description(b));
    TL_CHECK(gpunb_send(a, 300, c.m, (const double(*)[3])c.x, (const double(*)[3])c.v) == GPUNB_OK,
             "send a: %s", gpunb_last_error());
    TL_CHECK(gpunb_send(b, 150, c.m, (const double(*)[3])c.x, (const double(*)[3])c.v) == GPUNB_OK,
             "send b: %s", gpunb_last_error());
    {
        double h2[2] = {0.0, 0.0}, dtr[2] = {0, 0}, acc_a[2][3], acc_b[2][3], jrk[2][3];
        int list[2 * 8];
        gpunb_regf(a, 2, h2, dtr, (const double(*)[3])c.x, (const double(*)[3])c.v, acc_a, jrk, NULL, 8, 7, list);
        gpunb_regf(b, 2, h2, dtr, (const double(*)[3])c.x, (const double(*)[3])c.v, acc_b, jrk, NULL, 8, 7, list);
        TL_CHECK(fabs(acc_a[0][0] - acc_b[0][0]) > 1e-6 * fabs(acc_a[0][0]),
                 "handles a (300 j) and b (150 j) gave the same force");
        gpunb_stats st;
        gpunb_get_stats(a, &st);
        TL_CHECK(st.regf_calls == 1 && st.send_calls == 1 && st.interactions == 600.0,
                 "stats: %lld regf, %lld send, %g interactions", st.regf_calls, st.send_calls, st.interactions);
        expect_status(gpunb_regf(a, 2, h2, dtr, (const double(*)[3])c.x, (const double(*)[3])c.v, acc_a,
                                 jrk, NULL, 0, 7, list),
                      GPUNB_EUSAGE, gpunb_last_error(), "lmax = 0", "gpunb_regf with lmax 0");
        dtr[1] = INFINITY;
        expect_status(gpunb_regf(a, 2, h2, dtr, (const double(*)[3])c.x, (const double(*)[3])c.v, acc_a,
                                 jrk, NULL, 8, 7, list),
                      GPUNB_EUSAGE, gpunb_last_error(), "dtr[1] = inf", "gpunb_regf with infinite dtr");
    }
    expect_status(gpunb_send(a, 301, c.m, (const double(*)[3])c.x, (const double(*)[3])c.v), GPUNB_EUSAGE,
                  gpunb_last_error(), "nj = 301 is outside 1..300", "gpunb_send above capacity");
    c.m[9] = -1.0;
    expect_status(gpunb_send(a, 300, c.m, (const double(*)[3])c.x, (const double(*)[3])c.v), GPUNB_EUSAGE,
                  gpunb_last_error(), "m[9] = -1 is negative", "gpunb_send with a negative mass");
    expect_status(gpunb_regf(a, 1, (double[]){1.0}, (double[]){0.0}, (const double(*)[3])c.x,
                             (const double(*)[3])c.v, (double[1][3]){{0}}, (double[1][3]){{0}}, NULL, 8, 7,
                             (int[8]){0}),
                  GPUNB_EUSAGE, gpunb_last_error(), "call gpunb_send first", "regf after a failed send");
    gpunb_close(a);
    gpunb_close(b);
    gpunb_close(NULL);
    send_names_bad_values();

    expect_status(gpuirr_open(&g, 0, 10), GPUIRR_EUSAGE, gpuirr_last_error(), "nmax = 0", "gpuirr_open nmax 0");
    TL_CHECK(gpuirr_open(&g, 50, 10) == GPUIRR_OK, "gpuirr_open: %s", gpuirr_last_error());
    printf("GPUIRR kernel: %s\n", gpuirr_kernel_name(g));
    expect_status(gpuirr_set_list(g, 3, 2, (int[]){4, 51}), GPUIRR_EUSAGE, gpuirr_last_error(),
                  "is 51, outside 1..50", "list member beyond capacity");
    expect_status(gpuirr_set_list(g, 3, 3, (int[]){4, 7, 0}), GPUIRR_EUSAGE, gpuirr_last_error(),
                  "member 3 of particle 3's list is 0, outside 1..50", "list member 0 (the lists are 1-based)");
    expect_status(gpuirr_predict_all(g, 1, 51, 0.0), GPUIRR_EUSAGE, gpuirr_last_error(),
                  "last = 51 is outside 1..50", "predict_all beyond capacity");
    double z[3] = {0, 0, 0}, bad[3] = {0, NAN, 0};
    expect_status(gpuirr_set_particle(g, 4, z, bad, z, z, 1.0, 0.0), GPUIRR_EUSAGE, gpuirr_last_error(),
                  "v0[1] = nan of particle 4", "NaN velocity");
    /* Every other argument non-finite in turn, and a negative mass. */
    expect_status(gpuirr_set_particle(g, 4, bad, z, z, z, 1.0, 0.0), GPUIRR_EUSAGE, gpuirr_last_error(),
                  "x0[1] = nan", "NaN position");
    expect_status(gpuirr_set_particle(g, 4, z, z, (double[3]){0, 0, INFINITY}, z, 1.0, 0.0), GPUIRR_EUSAGE,
                  gpuirr_last_error(), "f_half[2] = inf", "infinite force");
    expect_status(gpuirr_set_particle(g, 4, z, z, z, (double[3]){-INFINITY, 0, 0}, 1.0, 0.0), GPUIRR_EUSAGE,
                  gpuirr_last_error(), "fdot_sixth[0] = -inf", "infinite jerk");
    expect_status(gpuirr_set_particle(g, 4, z, z, z, z, NAN, 0.0), GPUIRR_EUSAGE, gpuirr_last_error(),
                  "mass = nan", "NaN mass");
    expect_status(gpuirr_set_particle(g, 4, z, z, z, z, -1.0, 0.0), GPUIRR_EUSAGE, gpuirr_last_error(),
                  "mass = -1", "negative mass");
    expect_status(gpuirr_set_particle(g, 4, z, z, z, z, 1.0, NAN), GPUIRR_EUSAGE, gpuirr_last_error(),
                  "t0 = nan", "NaN epoch");
    expect_status(gpuirr_force(g, 1, (int[]){0}, (double[1][3]){{0}}, (double[1][3]){{0}}), GPUIRR_EUSAGE,
                  gpuirr_last_error(), "addr[n] = 0 is outside", "force on index 0");
    /* Prediction happens in the force at the predict call's time: none yet. */
    expect_status(gpuirr_force(g, 1, (int[]){4}, (double[1][3]){{0}}, (double[1][3]){{0}}), GPUIRR_EUSAGE,
                  gpuirr_last_error(), "called before any prediction", "force before any predict call");
    TL_CHECK(gpuirr_predict_active(g, 1, (int[]){4}, 0.5) == GPUIRR_OK, "predict_active: %s", gpuirr_last_error());
    TL_CHECK(gpuirr_force(g, 1, (int[]){4}, (double[1][3]){{0}}, (double[1][3]){{0}}) == GPUIRR_OK,
             "force after a predict call: %s", gpuirr_last_error());
    gpuirr_close(g);
    tl_cluster_free(&c);
    return tl_finish("test_native");
}
