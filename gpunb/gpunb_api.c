/* gpunb_api.c -- the GPUNB handle: argument checks, back-end choice,
 * statistics.  The arithmetic lives in the back-ends (gpunb_backend.h). */
#include "config.h"
#include "gpunb_backend.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gpunb {
    const gpunb_backend_ops *ops;
    void *state;
    int capacity;
    int nj; /* size of the current j-set; 0 before the first send */
    char description[NB6_ERRMSG_LEN];
    gpunb_stats stats;
};

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
    *out = nb;
    return GPUNB_OK;
}

void gpunb_close(gpunb *nb)
{
    if (!nb)
        return;
    nb->ops->close(nb->state);
    free(nb);
}

const char *gpunb_backend_name(const gpunb *nb) { return nb ? nb->ops->name : "none"; }

const char *gpunb_backend_description(const gpunb *nb) { return nb ? nb->description : ""; }

void gpunb_get_stats(const gpunb *nb, gpunb_stats *out)
{
    if (nb && out)
        *out = nb->stats;
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
    nb->nj = 0; /* a rejected j-set must not leave the old one in use */
    if (nj < 1 || nj > nb->capacity)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_send: nj = %d is outside 1..%d (the capacity given at open)",
                          nj, nb->capacity);
    if (!m || !x || !v)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_send: a NULL array (m, x or v)");
    if ((k = nb6_first_nonfinite(m, nj)) >= 0)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_send: m[%ld] = %g is not finite", k, m[k]);
    for (k = 0; k < nj; k++)
        if (m[k] < 0.0)
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
    return gpunb_cpu_potential(n, m, x, pot);
}
