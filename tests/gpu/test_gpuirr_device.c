/* test_gpuirr_device.c -- GPUIRR's large blocks on the GPU
 * (gpuirr_use_device) on a fresh random cluster: records and lists set from
 * an OpenMP team (the GPU's copy is stored from every thread, as NBODY6's
 * loops do), forces of a block whose first call is large computed on the GPU
 * in double (checked against a double-precision reference computed here, to
 * 1e-10 of the sum of the terms' magnitudes: float would give 1e-7), every later call of that block
 * too however small, and every call of a block whose first call is small on
 * the host (bit for bit what a handle without the GPU gives).  Records and
 * lists changed between blocks reach the GPU, also those set while a copy
 * started early by a host block runs.  Without a usable GPU:
 * "SKIP: ...", exit 77 (the calls' argument checks are in tests/test_gpuirr.c). */
#include "config.h"
#include "gpuirr.h"
#include "testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIN_NI 64
/* The GPU predicts in double but contracts into FMA: x_j - x_i of a pair a
 * thousandth apart some 3 units from the origin keeps about 1e-13. */
#define TOL_DOUBLE 1e-10

typedef struct record {
    double x0[3], v0[3], f[3], fdot[3], m, t0;
} record;

static int nmax, lmax, first, last;
static record *rec;  /* slot a-1 */
static int *lists;   /* [nmax][lmax]: count, then 1-based members */
static gpuirr *host, *dev;

static void predict(const record *r, double t, double x[3], double v[3])
{
    tl_predict(r->x0, r->v0, r->f, r->fdot, t - r->t0, x, v);
}

/* acc and jerk on a from its list at t in double; *scale = sum of the terms'
 * magnitudes (acc), *jscale the same for the jerk. */
static void reference(int a, double t, double acc[3], double jrk[3], double *scale, double *jscale)
{
    const int *col = lists + (size_t)(a - 1) * (size_t)lmax;
    double xi[3], vi[3];
    predict(&rec[a - 1], t, xi, vi);
    memset(acc, 0, 3 * sizeof(double));
    memset(jrk, 0, 3 * sizeof(double));
    *scale = *jscale = 0.0;
    for (int e = 1; e <= col[0]; e++) {
        const record *r = &rec[col[e] - 1];
        double xj[3], vj[3], dv;
        predict(r, t, xj, vj);
        const double r2 = tl_pair_add(xi, vi, xj, vj, r->m, acc, jrk, &dv);
        if (r2 > 0.0) {
            *scale += r->m / r2;
            *jscale += 4.0 * r->m * dv / (r2 * sqrt(r2));
        }
    }
}

static void set_record(int a)
{
    const record *r = &rec[a - 1];
    int st = gpuirr_set_particle(host, a, r->x0, r->v0, r->f, r->fdot, r->m, r->t0);
    if (st == GPUIRR_OK)
        st = gpuirr_set_particle(dev, a, r->x0, r->v0, r->f, r->fdot, r->m, r->t0);
    TL_CHECK(st == GPUIRR_OK, "gpuirr_set_particle(%d): %s", a, gpuirr_last_error());
}

static void set_list(int a)
{
    const int *col = lists + (size_t)(a - 1) * (size_t)lmax;
    int st = gpuirr_set_list(host, a, col[0], col + 1);
    if (st == GPUIRR_OK)
        st = gpuirr_set_list(dev, a, col[0], col + 1);
    TL_CHECK(st == GPUIRR_OK, "gpuirr_set_list(%d): %s", a, gpuirr_last_error());
}

/* A random ascending list of about n members of first..last, not a. */
static void random_list(int a, int n)
{
    int *col = lists + (size_t)(a - 1) * (size_t)lmax, k = 0;
    double p = (double)n / (double)(last - first);
    for (int j = first; j <= last && k < lmax - 1; j++)
        if (j != a && tl_uniform() < p)
            col[1 + k++] = j;
    col[0] = k;
}

static long long device_calls(void)
{
    gpuirr_stats s;
    gpuirr_get_stats(dev, &s);
    return s.device_calls;
}

/* Corrected records of addr[0..count-1] at epoch t0, set from a team
 * (NBODY6's loop 60). */
static void correct(int count, const int *addr, double t0)
{
    for (int k = 0; k < count; k++) {
        record *r = &rec[addr[k] - 1];
        for (int d = 0; d < 3; d++) {
            r->x0[d] += 1e-3 * tl_normal();
            r->v0[d] += 1e-2 * tl_normal();
            r->f[d] = 0.5 * tl_normal();
        }
        r->t0 = t0;
    }
#pragma omp parallel for
    for (int k = 0; k < count; k++)
        set_record(addr[k]);
}

static void predict_both(double t)
{
    TL_CHECK(gpuirr_predict_all(host, first, last, t) == GPUIRR_OK && gpuirr_predict_all(dev, first, last, t) == GPUIRR_OK,
             "predict_all: %s", gpuirr_last_error());
}

/* One call on both handles; where = 1: dev must have used the GPU (checked
 * against the reference at t), 0: the host (bit for bit the host handle). */
static void call(int ni, const int *addr, double t, int where, const char *label)
{
    double(*acc)[3] = malloc(sizeof(double[3]) * (size_t)ni), (*jrk)[3] = malloc(sizeof(double[3]) * (size_t)ni);
    double(*hacc)[3] = malloc(sizeof(double[3]) * (size_t)ni), (*hjrk)[3] = malloc(sizeof(double[3]) * (size_t)ni);
    const long long before = device_calls();
    int st = gpuirr_force(host, ni, addr, hacc, hjrk);
    TL_CHECK(st == GPUIRR_OK, "%s: host handle: %s", label, gpuirr_last_error());
    st = gpuirr_force(dev, ni, addr, acc, jrk);
    TL_CHECK(st == GPUIRR_OK, "%s: %s", label, gpuirr_last_error());
    TL_CHECK(device_calls() == before + where, "%s: computed on the %s, expected on the %s", label,
             device_calls() > before ? "GPU" : "host", where ? "GPU" : "host");
    double worst = 0.0;
    int differ = 0;
    for (int n = 0; n < ni; n++) {
        if (where) {
            double ra[3], rj[3], as, js;
            reference(addr[n], t, ra, rj, &as, &js);
            const double ea = as > 0.0 ? tl_relerr3(acc[n], ra, as) : fabs(acc[n][0]) + fabs(acc[n][1]) + fabs(acc[n][2]);
            const double ej = js > 0.0 ? tl_relerr3(jrk[n], rj, js) : fabs(jrk[n][0]) + fabs(jrk[n][1]) + fabs(jrk[n][2]);
            worst = fmax(worst, fmax(ea, ej));
        } else {
            differ += memcmp(acc[n], hacc[n], sizeof acc[n]) != 0 || memcmp(jrk[n], hjrk[n], sizeof jrk[n]) != 0;
        }
    }
    if (where)
        TL_CHECK(worst < TOL_DOUBLE, "%s: GPU error %.2e of the terms' sum (at most %.0e)", label, worst, TOL_DOUBLE);
    else
        TL_CHECK(differ == 0, "%s: %d of %d rows differ from the host handle's", label, differ, ni);
    printf("  %-58s %5d i on the %s%s", label, ni, where ? "GPU" : "host", where ? "" : ", same bits\n");
    if (where)
        printf(", worst %.2e\n", worst);
    free(acc);
    free(jrk);
    free(hacc);
    free(hjrk);
}

int main(void)
{
    tl_cluster c;
    const int n = 5000; /* at least GPUIRR_DEVICE_PUSH_MIN (checked below) */
    int on = 0;
    tl_seed_from_env();
    first = 11;
    last = first + n - 1;
    nmax = last + 40;
    lmax = 200;
    if (gpuirr_open(&dev, nmax, lmax) != GPUIRR_OK || gpuirr_use_device(dev, MIN_NI, &on) != GPUIRR_OK) {
        TL_CHECK(0, "gpuirr_open / gpuirr_use_device: %s", gpuirr_last_error());
        return tl_finish("test_gpuirr_device");
    }
    if (!on) {
        char why[512];
        snprintf(why, sizeof why, "%s", gpuirr_device_note(dev));
        gpuirr_close(dev);
        if (!TL_CHECK(why[0] != '\0', "no GPU used and no reason given"))
            return tl_finish("test_gpuirr_device");
        tl_skip("gpuirr_use_device found no GPU to use (%s)", why);
    }
    TL_CHECK(gpuirr_open(&host, nmax, lmax) == GPUIRR_OK && gpuirr_use_device(host, 0, NULL) == GPUIRR_OK,
             "host handle: %s", gpuirr_last_error());
    tl_cluster_make(&c, n, n / 100, -2.5, 0.3);
    rec = calloc((size_t)nmax, sizeof *rec);
    lists = calloc((size_t)nmax * (size_t)lmax, sizeof(int));
    for (int a = first; a <= last; a++) {
        record *r = &rec[a - 1];
        for (int k = 0; k < 3; k++) {
            r->x0[k] = c.x[a - first][k];
            r->v0[k] = c.v[a - first][k];
            r->f[k] = 0.5 * tl_normal();
            r->fdot[k] = tl_normal() / 6.0;
        }
        r->m = c.m[a - first];
        r->t0 = -0.01 * tl_uniform();
        random_list(a, tl_int(0, 9) == 0 ? tl_int(0, 3) : tl_int(20, lmax - 2));
    }
    /* From a team, records and lists in one loop (NBODY6's loop 1040):
     * a list may name a particle another thread has not set yet. */
#pragma omp parallel for schedule(dynamic, 7)
    for (int a = first; a <= last; a++) {
        set_record(a);
        set_list(a);
    }

    int *all = malloc(sizeof(int) * (size_t)n);
    tl_shuffled_range(all, n, first);
    double t = 0.002;
    predict_both(t);
    call(n, all, t, 1, "a block of all, shuffled");
    call(5, all + 100, t, 1, "five more of that block: still the GPU");
    call(MIN_NI, all + 200, t, 1, "and the block's last call");

    /* The next block starts small: all of its calls on the host. */
    t += 0.001;
    predict_both(t);
    call(MIN_NI - 1, all, t, 0, "a block whose first call is small");
    call(n, all, t, 0, "a large call of that block: still the host");
    t += 0.0005;
    TL_CHECK(gpuirr_predict_active(host, 37, all + 50, t) == GPUIRR_OK &&
                 gpuirr_predict_active(dev, 37, all + 50, t) == GPUIRR_OK,
             "predict_active: %s", gpuirr_last_error());
    call(37, all + 50, t, 0, "37 actives after gpuirr_predict_active");

    /* Corrected records at a new epoch and new lists of a regular block,
     * set from a team between the block's calls, as NBODY6 does. */
    t += 0.00025;
    correct(400, all, t - 0.00025);
    predict_both(t);
    call(400, all, t, 1, "changed records, old lists");
    for (int k = 0; k < 400; k++)
        random_list(all[k], tl_int(1, lmax - 2));
#pragma omp parallel for
    for (int k = 0; k < 400; k++)
        set_list(all[k]);
    call(400, all, t, 1, "the same block's new lists");

    /* A large block's members set after its force (NBODY6's loop 60), then
     * a block that goes to the host: there the changes start on their way
     * to the GPU (gpuirr.h); records set again while that copy may still
     * run reach the GPU all the same by its next block. */
    TL_CHECK(n >= GPUIRR_DEVICE_PUSH_MIN, "the test's %d particles start no early copy (GPUIRR_DEVICE_PUSH_MIN %d)", n,
             (int)GPUIRR_DEVICE_PUSH_MIN);
    t += 0.00025;
    predict_both(t);
    call(n, all, t, 1, "a block of all again");
    correct(n, all, t);
    t += 0.000125;
    predict_both(t);
    gpuirr_stats s;
    gpuirr_get_stats(dev, &s);
    const long long pushes = s.device_pushes;
    call(MIN_NI - 1, all + 7, t, 0, "then a small block (its changes sent early)");
    gpuirr_get_stats(dev, &s);
    TL_CHECK(s.device_pushes == pushes + 1, "the small block after %d were set started %lld early copies, expected 1",
             n, s.device_pushes - pushes);
    correct(500, all + 1000, t);
    t += 0.000125;
    predict_both(t);
    call(n, all, t, 1, "and a large one (500 set again meanwhile)");

    gpuirr_get_stats(dev, &s);
    TL_CHECK(s.device_calls == 7 && s.force_calls == 11,
             "statistics: %lld of %lld calls on the GPU, expected 7 of 11", s.device_calls, s.force_calls);
    TL_CHECK(s.device_pushes == 2, "statistics: %lld early copies, expected 2 (after the two blocks of all)",
             s.device_pushes);
    printf("GPU: %lld calls, %lld particles, %.3f ms\n", s.device_calls, s.device_particles, 1e3 * s.time_device);
    gpuirr_close(dev);
    gpuirr_close(host);
    free(all);
    free(rec);
    free(lists);
    tl_cluster_free(&c);
    return tl_finish("test_gpuirr_device");
}
