/* gpunb_api.c -- the GPUNB handle: its opening and closing, the choice of
 * back-end, errors, statistics, and the legacy API (gpunb_send,
 * gpunb_regf, gpunb_potential) with its argument checks.  The arithmetic
 * lives in the back-ends (gpunb_backend.h).  The resident j-particles and
 * the asynchronous regular force are in gpunb_resident.c, the irregular
 * force over neighbour lists in gpunb_irregular.c: one concern per file, so
 * that a change to one API does not have to be read past the other two.
 * The handle they share is struct gpunb (gpunb_handle.h). */
#include "config.h"
#include "gpunb_handle.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Before the back-end's state goes (its memory may hold rec). */
static void free_records(gpunb *nb)
{
    if (nb->rec && nb->ops->free_records)
        nb->ops->free_records(nb->state, nb->rec);
    else
        nb6_free(nb->rec);
    nb->rec = NULL;
}

static void free_resident(gpunb *nb)
{
    nb6_free(nb->firr_acc);
    nb6_free(nb->firr_jrk);
    nb6_free(nb->known);
    gpunb_dirty_free(nb->dirty);
    nb6_free(nb->dirty_list);
    nb6_free(nb->xp);
    nb6_free(nb->vp);
    nb6_free(nb->mp);
    for (int q = 0; q < GPUNB_REGF_IN_FLIGHT; q++) {
        nb6_free(nb->pending[q].h2);
        nb6_free(nb->pending[q].dtr);
        nb6_free(nb->pending[q].x);
        nb6_free(nb->pending[q].v);
    }
}

static int alloc_resident(gpunb *nb, int capacity)
{
    size_t n = (size_t)capacity;
    if (nb->ops->alloc_records)
        nb->rec = nb->ops->alloc_records(nb->state, n * sizeof(gpunb_jrecord));
    else
        nb->rec = nb6_alloc_aligned(64, n * sizeof(gpunb_jrecord));
    atomic_init(&nb->records_busy, 0);
    atomic_init(&nb->lightest, 0.0);
    nb->known = nb6_alloc(n);
    nb->dirty = gpunb_dirty_new(capacity);
    nb->dirty_list = nb6_alloc(n * sizeof(int));
    if (!nb->ops->predict) {
        nb->xp = nb6_alloc(n * sizeof(double[3]));
        nb->vp = nb6_alloc(n * sizeof(double[3]));
        nb->mp = nb6_alloc(n * sizeof(double));
        if (!nb->xp || !nb->vp || !nb->mp)
            return 0;
    }
    return nb->rec && nb->known && nb->dirty && nb->dirty_list;
}

static _Thread_local char last_error[NB6_ERRMSG_LEN];

const char *gpunb_version(void) { return PACKAGE_VERSION; }

const char *gpunb_last_error(void) { return last_error; }

int gpunb_fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

static int usable_cuda(char *why)
{
#ifdef NB6ACCEL_HAVE_CUDA
    return gpunb_cuda_usable(why);
#else
    nb6_format(why, "this build has no CUDA back-end (configure found no nvcc or was run --without-cuda)");
    return 0;
#endif
}

static const gpunb_backend_ops *host_ops(void)
{
#ifdef NB6ACCEL_HAVE_GPUNB_SIMD
    return &gpunb_backend_simd;
#else
    return &gpunb_backend_cpu;
#endif
}

static const gpunb_backend_ops *cuda_ops(void)
{
#ifdef NB6ACCEL_HAVE_CUDA
    return &gpunb_backend_cuda;
#else
    return NULL;
#endif
}

/* A build with CUDA was made for a GPU: when none is usable, a run on the CPU
 * (tens of times slower) happens only if the user allows it. */
static int cpu_fallback_allowed(void)
{
    const char *env = nb6_getenv("NB6ACCEL_CPU_FALLBACK");
    return env && strcmp(env, "0") != 0 && strcmp(env, "no") != 0;
}

/* NB6ACCEL_GPUNB overrides the default; a GPU that was asked for but cannot be
 * used is an error, never a silent switch to the CPU. */
static int choose_backend(enum gpunb_backend_kind kind, const gpunb_backend_ops **ops,
                          char *note)
{
    char why[NB6_ERRMSG_LEN];
    note[0] = '\0';
    if (kind == GPUNB_BACKEND_DEFAULT) {
        const char *env = nb6_getenv("NB6ACCEL_GPUNB");
        if (!env || strcmp(env, "auto") == 0) {
            if (!cuda_ops()) {
                *ops = host_ops();
            } else if (usable_cuda(why)) {
                *ops = cuda_ops();
            } else if (cpu_fallback_allowed()) {
                *ops = host_ops();
                nb6_format(note, "CPU fallback allowed by NB6ACCEL_CPU_FALLBACK: %s", why);
            } else {
                return gpunb_fail(GPUNB_EDEVICE,
                                  "gpunb_open: this build is for CUDA GPUs but %s; set "
                                  "NB6ACCEL_CPU_FALLBACK=1 to run on the CPU instead, or "
                                  "NB6ACCEL_GPUNB=cpu",
                                  why);
            }
            return GPUNB_OK;
        }
        if (strcmp(env, "cpu") == 0)
            kind = GPUNB_BACKEND_CPU;
        else if (strcmp(env, "cuda") == 0)
            kind = GPUNB_BACKEND_CUDA;
        else if (strcmp(env, "reference") == 0)
            kind = GPUNB_BACKEND_REFERENCE;
        else
            return gpunb_fail(GPUNB_EUSAGE,
                              "gpunb_open: NB6ACCEL_GPUNB=\"%s\" is not one of auto, cpu, cuda, reference",
                              env);
    }
    if (kind == GPUNB_BACKEND_CPU) {
        *ops = host_ops();
        return GPUNB_OK;
    }
    if (kind == GPUNB_BACKEND_REFERENCE) {
        *ops = &gpunb_backend_cpu;
        return GPUNB_OK;
    }
    if (kind == GPUNB_BACKEND_CUDA) {
        if (!usable_cuda(why))
            return gpunb_fail(GPUNB_EDEVICE, "gpunb_open: the CUDA back-end was asked for but %s", why);
        *ops = cuda_ops();
        return GPUNB_OK;
    }
    return gpunb_fail(GPUNB_EUSAGE, "gpunb_open: kind = %d is not a gpunb_backend_kind", (int)kind);
}

int gpunb_backend_usable(enum gpunb_backend_kind kind)
{
    char note[NB6_ERRMSG_LEN];
    const gpunb_backend_ops *ops = NULL;
    return choose_backend(kind, &ops, note) == GPUNB_OK;
}

int gpunb_open(gpunb **out, int capacity, enum gpunb_backend_kind kind)
{
    char note[NB6_ERRMSG_LEN];
    const gpunb_backend_ops *ops = NULL;
    gpunb *nb;
    int st;

    if (!out)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_open: out is NULL");
    *out = NULL;
    if (capacity < 1)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_open: capacity = %d, must be at least 1", capacity);
    st = choose_backend(kind, &ops, note);
    if (st != GPUNB_OK)
        return st;
    nb6_check_openmp_runtime("libgpunb");
    nb = calloc(1, sizeof *nb);
    if (!nb)
        return gpunb_fail(GPUNB_ERESOURCE, "gpunb_open: out of host memory");
    st = ops->open(&nb->state, capacity, nb->description);
    if (st != GPUNB_OK) {
        free(nb);
        return st;
    }
    if (note[0]) {
        size_t len = strlen(nb->description);
        snprintf(nb->description + len, sizeof nb->description - len, " (%s)", note);
    }
    nb->ops = ops;
    nb->capacity = capacity;
    gpunb_profile_init(&nb->profile);
    if (!alloc_resident(nb, capacity)) {
        free_records(nb);
        ops->close(nb->state);
        free_resident(nb);
        free(nb);
        return gpunb_fail(GPUNB_ERESOURCE,
                          "gpunb_open: out of host memory for %d resident j-particles", capacity);
    }
    *out = nb;
    return GPUNB_OK;
}

void gpunb_close(gpunb *nb)
{
    if (!nb)
        return;
    if (nb->firr_in_flight && nb->irr_on_device) /* it may still read rec and the lists */
        nb->ops->firr_finish(nb->state, nb->firr_acc, nb->firr_jrk);
    if (atomic_load(&nb->records_busy) || nb->pushed) /* a copy may still read rec and the lists */
        nb->ops->records_wait(nb->state);
    gpunb_profile_print(&nb->profile, stderr);
    free_records(nb);
    gpunb_free_lists(nb);
    nb->ops->close(nb->state); /* waits for a force still in flight */
    free_resident(nb);
    free(nb);
}

int gpunb_refuse_in_flight(const char *routine)
{
    return gpunb_fail(GPUNB_EUSAGE,
                      "%s: a regular force started by gpunb_regf_start is in flight; call "
                      "gpunb_regf_finish for each one first",
                      routine);
}

const char *gpunb_backend_name(const gpunb *nb) { return nb ? nb->ops->name : "none"; }

const char *gpunb_backend_description(const gpunb *nb) { return nb ? nb->description : ""; }

void gpunb_get_stats(const gpunb *nb, gpunb_stats *out)
{
    if (nb && out) {
        *out = nb->stats;
        out->i_redone = nb->ops->i_redone ? nb->ops->i_redone(nb->state) : 0;
    }
}

/* Names the first NaN/Inf in a row array: "x[17][1] = nan". */
static int check_rows(const char *routine, const char *name, const double (*a)[3], int n)
{
    long k = nb6_first_nonfinite(&a[0][0], 3L * n);
    if (k >= 0)
        return gpunb_fail(GPUNB_EUSAGE, "%s: %s[%ld][%ld] = %g (particle %ld, 0-based) is not finite",
                          routine, name, k / 3, k % 3, a[k / 3][k % 3], k / 3);
    return GPUNB_OK;
}

int gpunb_send(gpunb *nb, int nj, const double *m, const double (*x)[3], const double (*v)[3])
{
    double t0 = nb6_clock();
    long k;
    int st;

    if (!nb)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_send: called before gpunb_open (handle is NULL)");
    if (nb->in_flight)
        return gpunb_refuse_in_flight("gpunb_send");
    nb->nj = 0; /* a rejected j-set must not leave the old one in use */
    nb->predicted = 0;
    if (nj < 1 || nj > nb->capacity)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_send: nj = %d is outside 1..%d (the capacity given at open)",
                          nj, nb->capacity);
    if (!m || !x || !v)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_send: a NULL array (m, x or v)");
    if ((k = nb6_first_nonfinite(m, nj)) >= 0)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_send: m[%ld] = %g is not finite", k, m[k]);
    if ((k = nb6_first_negative(m, nj)) >= 0)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_send: m[%ld] = %g is negative", k, m[k]);
    if ((st = check_rows("gpunb_send", "x", x, nj)) || (st = check_rows("gpunb_send", "v", v, nj)))
        return st;

    st = nb->ops->send(nb->state, nj, m, x, v);
    if (st != GPUNB_OK)
        return st;
    nb->nj = nj;
    nb->stats.send_calls++;
    nb->stats.time_send += nb6_clock() - t0;
    nb->stats.time_total += nb6_clock() - t0;
    return GPUNB_OK;
}

int gpunb_regf(gpunb *nb, int ni, const double *h2, const double *dtr, const double (*xi)[3],
               const double (*vi)[3], double (*acc)[3], double (*jrk)[3], double *pot, int lmax,
               int nbmax, int *list)
{
    double t0 = nb6_clock(), t_force = 0.0, t_gather = 0.0;
    long k;
    int st, limit;

    if (!nb)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf: called before gpunb_open (handle is NULL)");
    if (nb->in_flight)
        return gpunb_refuse_in_flight("gpunb_regf");
    if (nb->nj < 1)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf: no j-particles: call gpunb_send first");
    if (ni < 0)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf: ni = %d is negative", ni);
    if (ni == 0)
        return GPUNB_OK;
    if (lmax < 1)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf: lmax = %d, must be at least 1", lmax);
    if (nbmax < 0)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf: nbmax = %d is negative", nbmax);
    if (!h2 || !dtr || !xi || !vi || !acc || !jrk || !list)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf: a NULL array (h2, dtr, xi, vi, acc, jrk or list)");
    if ((k = nb6_first_nonfinite(h2, ni)) >= 0)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf: h2[%ld] = %g is not finite", k, h2[k]);
    if ((k = nb6_first_nonfinite(dtr, ni)) >= 0)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf: dtr[%ld] = %g is not finite", k, dtr[k]);
    if ((st = check_rows("gpunb_regf", "xi", xi, ni)) || (st = check_rows("gpunb_regf", "vi", vi, ni)))
        return st;

    limit = nbmax < lmax - 1 ? nbmax : lmax - 1;
    st = nb->ops->regf(nb->state, ni, h2, dtr, xi, vi, acc, jrk, pot, lmax, limit, list, &t_force,
                       &t_gather);
    if (st != GPUNB_OK)
        return st;
    nb->stats.regf_calls++;
    nb->stats.i_forced += ni;
    nb->stats.interactions += (double)ni * (double)nb->nj;
    nb->stats.time_force += t_force;
    nb->stats.time_gather += t_gather;
    nb->stats.time_total += nb6_clock() - t0;
    return GPUNB_OK;
}

int gpunb_potential(int n, const double *m, const double (*x)[3], double *pot)
{
    char why[NB6_ERRMSG_LEN];
    long k;
    int st;

    if (n < 0)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_potential: n = %d is negative", n);
    if (n == 0)
        return GPUNB_OK;
    if (!m || !x || !pot)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_potential: a NULL array (m, x or pot)");
    if ((k = nb6_first_nonfinite(m, n)) >= 0)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_potential: m[%ld] = %g is not finite", k, m[k]);
    if ((st = check_rows("gpunb_potential", "x", x, n)))
        return st;
    {
        const char *env = nb6_getenv("NB6ACCEL_GPUNB");
        int want_cpu = env && (strcmp(env, "cpu") == 0 || strcmp(env, "reference") == 0);
        if (!want_cpu && usable_cuda(why)) {
#ifdef NB6ACCEL_HAVE_CUDA
            return gpunb_cuda_potential(n, m, x, pot);
#endif
        }
    }
#ifdef NB6ACCEL_HAVE_GPUNB_SIMD
    if (!(nb6_getenv("NB6ACCEL_GPUNB") && strcmp(nb6_getenv("NB6ACCEL_GPUNB"), "reference") == 0))
        return gpunb_simd_potential(n, m, x, pot);
#endif
    return gpunb_cpu_potential(n, m, x, pot);
}
