/* test_gpuirr.c -- GPUIRR_OPEN/SET_JP/SET_LIST/PRED_ALL/PRED_ACT/FIRR_VEC/
 * FIRR/CLOSE through the legacy symbols, against a double-precision
 * prediction and sum computed here.  Records carry NBODY6's F = acc/2 and
 * FDOT = jerk/6; lists are 1-based absolute indices; output row n belongs to
 * addr(n); an empty list gives exactly zero; a coincident member adds 0.
 * Also gpuirr_use_device's argument and call-order checks (its GPU path:
 * tests/gpu/test_gpuirr_device.c). */
#include "gpuirr.h"
#include "nb6accel_legacy.h"
#include "testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct record {
    double x0[3], v0[3], f[3], fdot[3], m, t0;
} record;

static int nmax, lmax;
static record *rec;   /* [nmax], slot a-1 */
static int *lists;    /* [nmax][lmax], NBODY6 LIST format */

static void predict(const record *r, double t, double x[3], double v[3])
{
    double dt = t - r->t0;
    for (int k = 0; k < 3; k++) {
        x[k] = r->x0[k] + dt * (r->v0[k] + dt * (r->f[k] + dt * r->fdot[k]));
        v[k] = r->v0[k] + 2.0 * dt * (r->f[k] + 1.5 * dt * r->fdot[k]);
    }
}

static double norm(const double x[3]) { return sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]); }

static double displacement(const record *r, const double x[3])
{
    double d[3] = {x[0] - r->x0[0], x[1] - r->x0[1], x[2] - r->x0[2]};
    return sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
}

/* acc and jerk on particle a from its list at time t; scale = sum of the
 * magnitudes of the terms, the natural yardstick when terms cancel, each
 * weighted by (r + |d_i| + |d_j| + 2^-16 (|x0_i| + |x0_j|)) / r: the library
 * predicts the displacement d = x(t) - x0 in float and stores x0 to 2^-40 of
 * itself, so dx is good to about eps times that numerator (gpuirr.h;
 * tests/simd/test_gpuirr_simd.c derives the same bound).  The weight
 * matters only for tight pairs that these random velocities carry far
 * beyond their separation, which a real step does not. */
static void reference(int a, double t, double acc[3], double jrk[3], double *ascale, double *jscale)
{
    const int *col = lists + (size_t)(a - 1) * (size_t)lmax;
    double xi[3], vi[3];
    predict(&rec[a - 1], t, xi, vi);
    double di = displacement(&rec[a - 1], xi);
    memset(acc, 0, 3 * sizeof(double));
    memset(jrk, 0, 3 * sizeof(double));
    *ascale = *jscale = 0.0;
    for (int e = 1; e <= col[0]; e++) {
        int j = col[e];
        double xj[3], vj[3], vv, m = rec[j - 1].m;
        predict(&rec[j - 1], t, xj, vj);
        double r2 = tl_pair_add(xi, vi, xj, vj, m, acc, jrk, &vv);
        if (r2 == 0.0)
            continue;
        double r = sqrt(r2);
        double stored = 0x1p-16 * (norm(rec[a - 1].x0) + norm(rec[j - 1].x0));
        double weight = (r + di + displacement(&rec[j - 1], xj) + stored) / r;
        *ascale += weight * m / r2;
        *jscale += weight * 4.0 * m * vv / (r2 * r);
    }
}

static void random_record(record *r, const tl_cluster *c, int j)
{
    for (int k = 0; k < 3; k++) {
        r->x0[k] = c->x[j][k];
        r->v0[k] = c->v[j][k];
        r->f[k] = 0.5 * tl_normal();
        r->fdot[k] = tl_normal() / 6.0;
    }
    r->m = c->m[j];
    r->t0 = -0.01 * tl_uniform();
}

static void send_record(int a)
{
    record *r = &rec[a - 1];
    NB6_F_GPUIRR_SET_JP(&a, r->x0, r->v0, r->f, r->fdot, &r->m, &r->t0);
}

/* A random ascending list for a of n members drawn near a in index space
 * (the cluster is unsorted, so that is a random spatial sample). */
static void random_list(int a, int n, int first, int last)
{
    int *col = lists + (size_t)(a - 1) * (size_t)lmax, k = 0;
    int span = last - first + 1;
    double p = (double)n / (double)(span - 1);
    for (int j = first; j <= last && k < n; j++)
        if (j != a && tl_uniform() < p)
            col[1 + k++] = j;
    col[0] = k;
}

static double worst_acc, worst_jrk, worst_acc_scale, worst_jrk_scale;

static void check_forces(int ni, int *addr, double t, const char *label)
{
    double(*acc)[3] = malloc(sizeof(double[3]) * (size_t)ni);
    double(*jrk)[3] = malloc(sizeof(double[3]) * (size_t)ni);
    int bad = 0;
    for (int n = 0; n < ni; n++)
        acc[n][0] = jrk[n][0] = NAN;
    NB6_F_GPUIRR_FIRR_VEC(&ni, addr, acc, jrk);
    for (int n = 0; n < ni && !bad; n++) {
        double ra[3], rj[3], as, js;
        int a = addr[n];
        reference(a, t, ra, rj, &as, &js);
        if (lists[(size_t)(a - 1) * (size_t)lmax] == 0) {
            bad = !TL_CHECK(acc[n][0] == 0.0 && acc[n][1] == 0.0 && acc[n][2] == 0.0 &&
                                jrk[n][0] == 0.0 && jrk[n][1] == 0.0 && jrk[n][2] == 0.0,
                            "%s: particle %d has an empty list but acc = (%g,%g,%g)", label, a,
                            acc[n][0], acc[n][1], acc[n][2]);
            continue;
        }
        /* Each single-precision term carries a few 1e-7 of its own (weighted)
         * size, so a sum errs by up to ~1e-6 of the weighted sum of the
         * magnitudes of its terms whatever cancels.  Against |ref| it has no
         * bound (a sum of neighbour forces can nearly cancel): that error is
         * only printed, as the worst seen. */
        double ea = tl_relerr3(acc[n], ra, 0.0), ej = tl_relerr3(jrk[n], rj, 0.0);
        double eas = tl_relerr3(acc[n], ra, as); /* as >= |ra|: this is err / as */
        double ejs = tl_relerr3(jrk[n], rj, js);
        worst_acc = fmax(worst_acc, ea);
        worst_jrk = fmax(worst_jrk, ej);
        worst_acc_scale = fmax(worst_acc_scale, eas);
        worst_jrk_scale = fmax(worst_jrk_scale, ejs);
        bad = !TL_CHECK(isfinite(ea) && isfinite(ej) && eas < 1e-6 && ejs < 5e-6,
                        "%s: row %d (particle %d, %d members): error of acc %.2e of |acc|, %.2e of "
                        "sum|terms|; of jerk %.2e, %.2e", label, n, a,
                        lists[(size_t)(a - 1) * (size_t)lmax], ea, eas, ej, ejs);
    }
    printf("  %-44s %5d particles checked\n", label, ni);
    free(acc);
    free(jrk);
}

/* gpuirr_use_device: bad arguments and calls out of order are errors that
 * name them; "off" is not an error and says so. */
static void device_arguments(void)
{
    gpuirr *g = NULL, *late = NULL;
    int on = -1;
    const double z[3] = {0.5, 0.25, 0.125};
    TL_CHECK(gpuirr_use_device(NULL, 512, &on) == GPUIRR_EUSAGE && on == 0 &&
                 strstr(gpuirr_last_error(), "before gpuirr_open"),
             "use_device(NULL): %s", gpuirr_last_error());
    TL_CHECK(gpuirr_open(&g, 100, 20) == GPUIRR_OK, "gpuirr_open: %s", gpuirr_last_error());
    TL_CHECK(gpuirr_use_device(g, -5, &on) == GPUIRR_EUSAGE && strstr(gpuirr_last_error(), "min_ni = -5"),
             "use_device(min_ni = -5): %s", gpuirr_last_error());
    setenv("NB6ACCEL_GPUIRR_DEVICE", "12abc", 1);
    TL_CHECK(gpuirr_use_device(g, GPUIRR_DEVICE_DEFAULT, &on) == GPUIRR_EUSAGE &&
                 strstr(gpuirr_last_error(), "NB6ACCEL_GPUIRR_DEVICE=\"12abc\""),
             "NB6ACCEL_GPUIRR_DEVICE=12abc: %s", gpuirr_last_error());
    setenv("NB6ACCEL_GPUIRR_DEVICE", "off", 1);
    on = -1;
    TL_CHECK(gpuirr_use_device(g, GPUIRR_DEVICE_DEFAULT, &on) == GPUIRR_OK && on == 0 &&
                 strstr(gpuirr_device_note(g), "off"),
             "NB6ACCEL_GPUIRR_DEVICE=off: on = %d, note \"%s\"", on, gpuirr_device_note(g));
    unsetenv("NB6ACCEL_GPUIRR_DEVICE");
    TL_CHECK(gpuirr_use_device(g, 512, &on) == GPUIRR_EUSAGE && strstr(gpuirr_last_error(), "twice"),
             "use_device twice: %s", gpuirr_last_error());
    TL_CHECK(gpuirr_open(&late, 100, 20) == GPUIRR_OK && gpuirr_set_particle(late, 7, z, z, z, z, 1.0, 0.0) == GPUIRR_OK,
             "gpuirr_open / set_particle: %s", gpuirr_last_error());
    TL_CHECK(gpuirr_use_device(late, 512, &on) == GPUIRR_EUSAGE &&
                 strstr(gpuirr_last_error(), "after gpuirr_set_particle"),
             "use_device after set_particle: %s", gpuirr_last_error());
    gpuirr_close(late);
    gpuirr_close(g);
    printf("  %-44s checked\n", "gpuirr_use_device's errors");
}

int main(void)
{
    tl_cluster c;
    int n = 3000, first = 11; /* particles first..n+first-1, as IFIRST..NTOT */
    int last = n + first - 1;
    double t = 0.003;
    tl_seed_from_env();
    device_arguments();
    tl_cluster_make(&c, n, 0, -2.5, 0.3);
    nmax = last + 50;
    lmax = 160;
    rec = calloc((size_t)nmax, sizeof *rec);
    lists = calloc((size_t)nmax * (size_t)lmax, sizeof(int));

    NB6_F_GPUIRR_OPEN(&nmax, &lmax);
    for (int a = first; a <= last; a++) {
        random_record(&rec[a - 1], &c, a - first);
        send_record(a);
    }
    /* Particle last-1 is an exact copy of particle last (a KS pair at one
     * place): each lists the other, their pair must add 0, not NaN. */
    rec[last - 2] = rec[last - 1];
    send_record(last - 1);
    for (int a = first; a <= last; a++) {
        int len = tl_int(0, 9) == 0 ? tl_int(0, 3) : tl_int(20, lmax - 1);
        random_list(a, len, first, last);
    }
    {
        int *col = lists + (size_t)(last - 2) * (size_t)lmax;
        col[0] = 1;
        col[1] = last;
        col = lists + (size_t)(last - 1) * (size_t)lmax;
        col[0] = 2;
        col[1] = first;
        col[2] = last - 1;
    }
    lists[(size_t)(first - 1) * (size_t)lmax] = 0; /* one certain empty list */
    for (int a = first; a <= last; a++)
        NB6_F_GPUIRR_SET_LIST(&a, lists + (size_t)(a - 1) * (size_t)lmax);

    NB6_F_GPUIRR_PRED_ALL(&first, &last, &t);
    {
        /* Every particle, in a shuffled order (row n must follow addr(n)). */
        int *addr = malloc(sizeof(int) * (size_t)n);
        tl_shuffled_range(addr, n, first);
        check_forces(n, addr, t, "PRED_ALL + FIRR_VEC, shuffled addresses");
        free(addr);
    }
    {
        /* A few actives get new records at a later time, PRED_ACT predicts
         * them and their lists only; FIRR_VEC must see those predictions. */
        double t2 = t + 0.00125;
        int na = 37, addr[37];
        for (int k = 0; k < na; k++) {
            addr[k] = tl_int(first, last);
            for (int j = 0; j < k; j++)
                if (addr[j] == addr[k])
                    addr[k] = first + (addr[k] - first + 1) % n;
        }
        for (int a = first; a <= last; a++) {
            rec[a - 1].t0 = t; /* everybody moves on to the same new epoch */
            send_record(a);
        }
        NB6_F_GPUIRR_PRED_ACT(&na, addr, &t2);
        check_forces(na, addr, t2, "PRED_ACT + FIRR_VEC on 37 actives");
    }
    {
        /* New lists after PRED_ALL, as in a regular block: their members were
         * predicted by PRED_ALL, so FIRR_VEC uses them directly. */
        double t3 = t + 0.0025;
        int ni = 200, *addr = malloc(sizeof(int) * (size_t)ni);
        NB6_F_GPUIRR_PRED_ALL(&first, &last, &t3);
        for (int k = 0; k < ni; k++) {
            addr[k] = first + k * (n / ni);
            random_list(addr[k], tl_int(1, lmax - 1), first, last);
            NB6_F_GPUIRR_SET_LIST(&addr[k], lists + (size_t)(addr[k] - 1) * (size_t)lmax);
        }
        check_forces(ni, addr, t3, "SET_LIST after PRED_ALL, then FIRR_VEC");
        /* GPUIRR_FIRR: the single-particle form. */
        double acc[3], jrk[3], ra[3], rj[3], as, js;
        NB6_F_GPUIRR_FIRR(&addr[3], acc, jrk);
        reference(addr[3], t3, ra, rj, &as, &js);
        TL_CHECK(tl_relerr3(acc, ra, as) < 1e-6, "GPUIRR_FIRR differs from the reference");
        free(addr);
    }
    NB6_F_GPUIRR_CLOSE();
    printf("worst errors vs double: acc %.3e of |acc| (%.3e of weighted sum|terms|), jerk %.3e of |jerk| "
           "(%.3e of weighted sum|terms|)\n", worst_acc, worst_acc_scale, worst_jrk, worst_jrk_scale);
    free(rec);
    free(lists);
    tl_cluster_free(&c);
    return tl_finish("test_gpuirr");
}
