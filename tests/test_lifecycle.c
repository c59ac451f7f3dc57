/* test_lifecycle.c -- open/close order as NBODY6 uses it (FPOLY0 opens and
 * closes, INTGRT opens again, ADJUST may close twice), and the stops that
 * the legacy routines make on bad input: each runs in a child process whose
 * exit status and message are checked. */
#include "nb6accel_legacy.h"
#include "testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static tl_cluster c;

static void one_regf(int ni, double *acc_out)
{
    double h2[4], dtr[4], xi[4][3], vi[4][3], acc[4][3], jrk[4][3], pot[4];
    int lmax = 64, nbmax = 60, list[4 * 64];
    for (int i = 0; i < ni; i++) {
        h2[i] = 0.01 / tl_cluster_mean_mass(&c);
        dtr[i] = 0.001;
        memcpy(xi[i], c.x[i], sizeof xi[i]);
        memcpy(vi[i], c.v[i], sizeof vi[i]);
    }
    NB6_F_GPUNB_REGF(&ni, h2, dtr, xi, vi, acc, jrk, pot, &lmax, &nbmax, list);
    if (acc_out)
        memcpy(acc_out, acc[0], sizeof acc[0]);
}

/* ---- sequences run in children ------------------------------------------ */
static void seq_reopen(void *arg)
{
    int cap = c.n + 100, nmax = c.n + 10, lmax = 50, n = c.n, one = 1;
    double acc1[3], acc2[3], t = 0.0, zero[3] = {0, 0, 0};
    (void)arg;
    for (int round = 0; round < 3; round++) {
        NB6_F_GPUNB_OPEN(&cap);
        NB6_F_GPUIRR_OPEN(&nmax, &lmax);
        NB6_F_GPUNB_SEND(&n, c.m, c.x, c.v);
        one_regf(4, round == 0 ? acc1 : acc2);
        NB6_F_GPUIRR_SET_JP(&one, c.x[0], c.v[0], zero, zero, &c.m[0], &t);
        NB6_F_GPUNB_CLOSE();
        NB6_F_GPUIRR_CLOSE();
        if (round > 0 && memcmp(acc1, acc2, sizeof acc1) != 0)
            exit(3);
    }
    NB6_F_GPUNB_CLOSE(); /* ADJUST closes what FPOLY0 already closed */
    NB6_F_GPUIRR_CLOSE();
}

static void seq_open_twice_keeps_capacity(void *arg)
{
    int small = 100, big = 5000, n = 200;
    (void)arg;
    NB6_F_GPUNB_OPEN(&small);
    NB6_F_GPUNB_OPEN(&big); /* "already open": keeps 100 */
    NB6_F_GPUNB_SEND(&n, c.m, c.x, c.v);
}

static void seq_regf_before_open(void *arg)
{
    (void)arg;
    one_regf(1, NULL);
}

static void seq_regf_before_send(void *arg)
{
    int cap = 100;
    (void)arg;
    NB6_F_GPUNB_OPEN(&cap);
    one_regf(1, NULL);
}

static void seq_set_jp_before_open(void *arg)
{
    int a = 3;
    double z[3] = {1, 2, 3}, m = 1.0, t = 0.0;
    (void)arg;
    NB6_F_GPUIRR_SET_JP(&a, z, z, z, z, &m, &t);
}

static void seq_set_jp_beyond_capacity(void *arg)
{
    int nmax = 100, lmax = 20, a = 101;
    double z[3] = {1, 2, 3}, m = 1.0, t = 0.0;
    (void)arg;
    NB6_F_GPUIRR_OPEN(&nmax, &lmax);
    NB6_F_GPUIRR_SET_JP(&a, z, z, z, z, &m, &t);
}

static void seq_nan_position(void *arg)
{
    int cap = c.n, n = c.n;
    (void)arg;
    c.x[77][1] = NAN;
    NB6_F_GPUNB_OPEN(&cap);
    NB6_F_GPUNB_SEND(&n, c.m, c.x, c.v);
}

static void seq_list_contains_self(void *arg)
{
    int nmax = 100, lmax = 20, a = 7, list[4] = {3, 2, 7, 9};
    (void)arg;
    NB6_F_GPUIRR_OPEN(&nmax, &lmax);
    NB6_F_GPUIRR_SET_LIST(&a, list);
}

static void seq_list_too_long(void *arg)
{
    int nmax = 100, lmax = 4, a = 7, list[8] = {5, 1, 2, 3, 4, 5};
    (void)arg;
    NB6_F_GPUIRR_OPEN(&nmax, &lmax);
    NB6_F_GPUIRR_SET_LIST(&a, list);
}

static void seq_negative_mass(void *arg)
{
    int cap = c.n, n = c.n;
    (void)arg;
    c.m[12] = -0.5;
    NB6_F_GPUNB_OPEN(&cap);
    NB6_F_GPUNB_SEND(&n, c.m, c.x, c.v);
}

static void seq_nan_velocity_set_jp(void *arg)
{
    int nmax = 100, lmax = 20, a = 42;
    double x[3] = {1, 2, 3}, v[3] = {0, 0, INFINITY}, z[3] = {0, 0, 0}, m = 0.01, t = 0.0;
    (void)arg;
    NB6_F_GPUIRR_OPEN(&nmax, &lmax);
    NB6_F_GPUIRR_SET_JP(&a, x, v, z, z, &m, &t);
}

static void seq_list_member_out_of_range(void *arg)
{
    int nmax = 100, lmax = 20, a = 7, list[4] = {3, 2, 9, 101};
    (void)arg;
    NB6_F_GPUIRR_OPEN(&nmax, &lmax);
    NB6_F_GPUIRR_SET_LIST(&a, list);
}

static void seq_pred_all_beyond_capacity(void *arg)
{
    int nmax = 100, lmax = 20, js = 1, je = 150;
    double t = 0.0;
    (void)arg;
    NB6_F_GPUIRR_OPEN(&nmax, &lmax);
    NB6_F_GPUIRR_PRED_ALL(&js, &je, &t);
}

static void seq_firr_before_open(void *arg)
{
    int ni = 1, addr = 1;
    double acc[3], jrk[3];
    (void)arg;
    NB6_F_GPUIRR_FIRR_VEC(&ni, &addr, &acc, &jrk);
}

static void seq_nan_h2(void *arg)
{
    int cap = c.n, n = c.n, ni = 1, lmax = 8, nbmax = 7, list[8];
    double h2 = NAN, dtr = 0.0, acc[3], jrk[3], pot;
    (void)arg;
    NB6_F_GPUNB_OPEN(&cap);
    NB6_F_GPUNB_SEND(&n, c.m, c.x, c.v);
    NB6_F_GPUNB_REGF(&ni, &h2, &dtr, &c.x[0], &c.v[0], &acc, &jrk, &pot, &lmax, &nbmax, list);
}

static void seq_gpupot_any_state(void *arg)
{
    int n = c.n, cap = c.n;
    double *pot = malloc(sizeof(double) * (size_t)n), acc1[3], acc2[3];
    (void)arg;
    NB6_F_GPUPOT(&n, c.m, c.x, pot); /* GPUNB closed */
    NB6_F_GPUNB_OPEN(&cap);
    NB6_F_GPUNB_SEND(&n, c.m, c.x, c.v);
    one_regf(2, acc1);
    NB6_F_GPUPOT(&n, c.m, c.x, pot); /* GPUNB open: must not disturb it */
    one_regf(2, acc2);
    NB6_F_GPUNB_CLOSE();
    free(pot);
    if (memcmp(acc1, acc2, sizeof acc1) != 0)
        exit(3);
}

static void expect(void (*seq)(void *), int status, const char *needle, const char *what)
{
    char err[4096];
    int got = tl_run_child(seq, NULL, err, sizeof err);
    int ok = TL_CHECK(got == status, "%s: exit status %d, expected %d; stderr:\n%s", what, got, status, err);
    if (ok && needle)
        ok = TL_CHECK(strstr(err, needle) != NULL, "%s: message lacks \"%s\"; stderr:\n%s", what, needle, err);
    if (ok) {
        char *line = strstr(err, "nb6accel:");
        printf("  ok: %-40s %s", what, status ? (line ? line : err) : "(exit 0)\n");
    }
}

int main(void)
{
    tl_seed_from_env();
    tl_cluster_make(&c, 500, 5, 0.0, 0.2);
    expect(seq_reopen, 0, "already closed", "open, close, open again (x3); double close");
    expect(seq_open_twice_keeps_capacity, 2, "nj = 200 is outside 1..100", "second open keeps the first capacity");
    expect(seq_regf_before_open, 2, "GPUNB_REGF called before GPUNB_OPEN", "REGF before OPEN");
    expect(seq_regf_before_send, 2, "call gpunb_send first", "REGF before SEND");
    expect(seq_set_jp_before_open, 2, "GPUIRR_SET_JP called before GPUIRR_OPEN", "SET_JP before OPEN");
    expect(seq_set_jp_beyond_capacity, 2, "addr = 101 is outside 1..100", "SET_JP index beyond capacity");
    expect(seq_nan_position, 2, "x[77][1] = nan", "NaN position in SEND");
    expect(seq_list_contains_self, 2, "the particle itself", "list member equal to the particle");
    expect(seq_list_too_long, 2, "list length 5 of particle 7 is outside 0..3", "list longer than LMAX-1");
    expect(seq_negative_mass, 2, "m[12] = -0.5 is negative", "negative mass in SEND");
    expect(seq_nan_velocity_set_jp, 2, "v0[2] = inf of particle 42", "Inf velocity in SET_JP");
    expect(seq_list_member_out_of_range, 2, "member 3 of particle 7's list is 101, outside 1..100",
           "list member beyond capacity");
    expect(seq_pred_all_beyond_capacity, 2, "last = 150 is outside 1..100", "PRED_ALL beyond capacity");
    expect(seq_firr_before_open, 2, "GPUIRR_FIRR_VEC called before GPUIRR_OPEN", "FIRR_VEC before OPEN");
    expect(seq_nan_h2, 2, "h2[0] = nan", "NaN neighbour radius in REGF");
    expect(seq_gpupot_any_state, 0, NULL, "GPUPOT with GPUNB closed and open");
    tl_cluster_free(&c);
    return tl_finish("test_lifecycle");
}
