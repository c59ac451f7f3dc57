/* gpunb_api.c -- the GPUNB handle: argument checks, back-end choice,
 * statistics.  The arithmetic lives in the back-ends (gpunb_backend.h). */
#include "config.h"
#include "gpunb_backend.h"
#include "gpunb_dirty.h"
#include "gpunb_profile.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
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

    /* Resident j-particles: per-record writes and flags only, so that
     * gpunb_set_jparticle is safe from concurrent threads.  rec is the
     * back-end's memory (pinned with CUDA): its predict copies the records
     * from there, so when many changed a set is the whole host cost of
     * sending a particle. */
    gpunb_jrecord *rec;
    unsigned char *known;
    /* The records changed since a back-end last took them (gpunb_dirty.h:
     * NBODY6 sets every corrected particle, ~10^8 calls per run at 64k,
     * from all its threads); dirty_list: their indices, for a back-end to
     * send just those when few changed.  known_prefix: how many of the
     * first records are known to be set. */
    gpunb_dirty *dirty;
    int *dirty_list;
    int known_prefix;
    /* The back-end may still be reading rec for the last predict: a set
     * waits first (records_wait), so that no record changes under a copy. */
    atomic_int records_busy;
    _Atomic double lightest; /* smallest non-zero mass set (0: none) */
    int predicted;          /* the j-set is the prediction of the records */
    double (*xp)[3], (*vp)[3], *mp; /* host prediction, when the back-end has none */

    /* The force between gpunb_regf_start and gpunb_regf_finish. */
    int in_flight, pending_ni, pending_lmax, pending_limit, pending_cap;
    double *pending_h2, *pending_dtr, (*pending_x)[3], (*pending_v)[3];

    /* Irregular force (gpunb_irr_open): list rows of irr_lmax ints (count,
     * then members) in the back-end's memory, like rec; list_dirty: the rows
     * changed since the device last took the lists.  The records' dirty
     * flags serve both gpunb_predict and gpunb_firr_start: whichever comes
     * first uploads a record, and both read the device's one copy. */
    int irr_lmax, irr_on_device, irr_predicted;
    int *lists;
    /* list_count[j] = row j's count: the statistics of a call read this
     * compact array, not one cache line per particle of the rows (a serial
     * pass of DRAM misses that cost ~0.3 ms in a block of 3k at 64k). */
    int *list_count;
    gpunb_dirty *list_dirty;
    int *list_dirty_index;
    /* The irregular force between gpunb_firr_start and gpunb_firr_finish;
     * the host path computes it at start into firr_acc, firr_jrk. */
    int firr_in_flight, firr_ni, firr_cap;
    double firr_pairs;
    int pushed; /* a gpunb_push started a copy: close waits for it */
    double (*firr_acc)[3], (*firr_jrk)[3];
    gpunb_profile profile; /* NB6ACCEL_PROFILE_IRR */
};

/* From this many particles a call's host loops over them run on all
 * threads (a parallel region costs a few microseconds). */
enum { FIRR_PARALLEL_MIN = 4096 };

/* Before the back-end's state goes (its memory may hold rec). */
static void free_records(gpunb *nb)
{
    if (nb->rec && nb->ops->free_records)
        nb->ops->free_records(nb->state, nb->rec);
    else
        nb6_free(nb->rec);
    nb->rec = NULL;
}

/* Everything gpunb_irr_open made (before the back-end's state goes: its
 * memory may hold the lists). */
static void free_lists(gpunb *nb)
{
    if (nb->lists && nb->ops->free_records)
        nb->ops->free_records(nb->state, nb->lists);
    else
        nb6_free(nb->lists);
    nb6_free(nb->list_count);
    gpunb_dirty_free(nb->list_dirty);
    nb6_free(nb->list_dirty_index);
    nb->lists = NULL;
    nb->list_count = NULL;
    nb->list_dirty = NULL;
    nb->list_dirty_index = NULL;
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
    nb6_free(nb->pending_h2);
    nb6_free(nb->pending_dtr);
    nb6_free(nb->pending_x);
    nb6_free(nb->pending_v);
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
    free_lists(nb);
    nb->ops->close(nb->state); /* waits for a force still in flight */
    free_resident(nb);
    free(nb);
}

static int refuse_in_flight(const char *routine)
{
    return gpunb_fail(GPUNB_EUSAGE,
                      "%s: a regular force started by gpunb_regf_start is in flight; call "
                      "gpunb_regf_finish first",
                      routine);
}

static int refuse_irregular_in_flight(const char *routine)
{
    return gpunb_fail(GPUNB_EUSAGE,
                      "%s: an irregular force started by gpunb_firr_start is in flight; call "
                      "gpunb_firr_finish first",
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
        return refuse_in_flight("gpunb_send");
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
        return refuse_in_flight("gpunb_regf");
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

/* records_busy: 0 no copy reads the records; RECORDS_COPYING a copy may
 * (set by gpunb_predict); RECORDS_WAITING one caller waits for it.  The
 * callers of gpunb_set_jparticle are a corrector's whole team, which meets
 * the flag at once: one of them asks the back-end (CUDA calls, which
 * serialise on the driver's locks: sixteen threads each asking took some
 * 0.1 ms), the others watch the flag. */
enum { RECORDS_COPYING = 1, RECORDS_WAITING = 2 };

static int wait_for_records(gpunb *nb)
{
    for (;;) {
        int busy = atomic_load_explicit(&nb->records_busy, memory_order_acquire);
        if (busy == 0)
            return GPUNB_OK;
        if (busy == RECORDS_COPYING &&
            atomic_compare_exchange_strong_explicit(&nb->records_busy, &busy, RECORDS_WAITING,
                                                    memory_order_acq_rel, memory_order_acquire)) {
            const int st = nb->ops->records_wait(nb->state);
            /* after a failure the next caller asks again */
            atomic_store_explicit(&nb->records_busy, st == GPUNB_OK ? 0 : RECORDS_COPYING, memory_order_release);
            return st;
        }
    }
}

int gpunb_set_jparticle(gpunb *nb, int j, const double x0[3], const double v0[3],
                        const double f_half[3], const double fdot_sixth[3], double m, double t0)
{
    if (!nb)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_set_jparticle: called before gpunb_open (handle is NULL)");
    if (nb->firr_in_flight)
        return refuse_irregular_in_flight("gpunb_set_jparticle");
    if (j < 0 || j >= nb->capacity)
        return gpunb_fail(GPUNB_EUSAGE,
                          "gpunb_set_jparticle: j = %d is outside 0..%d (the capacity given at open)",
                          j, nb->capacity - 1);
    if (!x0 || !v0 || !f_half || !fdot_sixth)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_set_jparticle: a NULL array for j-particle %d", j);
    if (!nb6_state_finite(x0, v0, f_half, fdot_sixth, m, t0) || m < 0.0) {
        const double *arrays[4] = {x0, v0, f_half, fdot_sixth};
        static const char *const names[4] = {"x0", "v0", "f_half", "fdot_sixth"};
        for (int a = 0; a < 4; a++) {
            long k = nb6_first_nonfinite(arrays[a], 3);
            if (k >= 0)
                return gpunb_fail(GPUNB_EUSAGE, "gpunb_set_jparticle: %s[%ld] = %g of j-particle %d is not finite",
                                  names[a], k, arrays[a][k], j);
        }
        if (!isfinite(m) || m < 0.0)
            return gpunb_fail(GPUNB_EUSAGE,
                              "gpunb_set_jparticle: m = %g of j-particle %d is not a finite non-negative mass", m, j);
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_set_jparticle: t0 = %g of j-particle %d is not finite", t0, j);
    }
    if (atomic_load_explicit(&nb->records_busy, memory_order_acquire)) {
        int st = wait_for_records(nb);
        if (st != GPUNB_OK)
            return st;
    }
    gpunb_jrecord *r = &nb->rec[j];
    for (int k = 0; k < 3; k++) {
        r->x0[k] = x0[k];
        r->v0[k] = v0[k];
        r->f_half[k] = f_half[k];
        r->fdot_sixth[k] = fdot_sixth[k];
    }
    r->m = m;
    r->t0 = t0;
    double lightest = atomic_load_explicit(&nb->lightest, memory_order_relaxed);
    while (m > 0.0 && (lightest == 0.0 || m < lightest) &&
           !atomic_compare_exchange_weak_explicit(&nb->lightest, &lightest, m, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
    /* Stores only where the flag changes: a line of flags shared by threads
     * stays clean in their caches. */
    if (!nb->known[j])
        nb->known[j] = 1;
    if (gpunb_dirty_mark(nb->dirty, j))
        return gpunb_fail(GPUNB_ERESOURCE,
                          "gpunb_set_jparticle: out of host memory to note that j-particle %d changed", j);
    return GPUNB_OK;
}

/* The host's predictions must be bit-identical to the GPU's (no FMA there,
 * gpunb_cuda_predict.cu): an i-particle then converts to exactly the floats
 * of its j entry.  Every function that predicts, and so may inline
 * predict_record, is compiled without contraction. */
#if defined(__GNUC__) && !defined(__clang__)
#define NO_CONTRACTION __attribute__((optimize("fp-contract=off")))
#else
#define NO_CONTRACTION
#endif

/* Same Horner form as NBODY6's JPRED and gpuirr_host_predict. */
NO_CONTRACTION static void predict_record(const gpunb_jrecord *r, double t, double x[3], double v[3])
{
    const double dt = t - r->t0;
    for (int k = 0; k < 3; k++) {
        const double a2 = r->f_half[k], j6 = r->fdot_sixth[k];
        x[k] = r->x0[k] + dt * (r->v0[k] + dt * (a2 + dt * j6));
        v[k] = r->v0[k] + 2.0 * dt * (a2 + 1.5 * dt * j6);
    }
}

NO_CONTRACTION static void host_predict(gpunb *nb, int nj, double t)
{
    const gpunb_jrecord *rec = nb->rec;
#pragma omp parallel for schedule(static) if (nj > 4096)
    for (int j = 0; j < nj; j++) {
        predict_record(&rec[j], t, nb->xp[j], nb->vp[j]);
        nb->mp[j] = rec[j].m;
    }
}

/* The changed records among 0..n-1, for a back-end to upload: their count,
 * and (return value) whether they are listed in dirty_list.  When a quarter
 * or more changed they are not: a copy of all n costs less than a list. */
static int take_dirty_records(gpunb *nb, int n, int *ndirty)
{
    if (n >= nb->capacity) { /* every mark counts: no list needed when many changed */
        *ndirty = gpunb_dirty_count(nb->dirty);
        if (*ndirty >= n / 4)
            return 0;
    }
    *ndirty = gpunb_dirty_list(nb->dirty, n, nb->dirty_list);
    return *ndirty < n / 4;
}

/* After the back-end took them: clear the marks of take_dirty_records. */
static void clear_dirty_records(gpunb *nb, int n) { gpunb_dirty_clear(nb->dirty, n); }

int gpunb_predict(gpunb *nb, int nj, double t)
{
    double t0 = nb6_clock();
    int st, ndirty = 0;

    if (!nb)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_predict: called before gpunb_open (handle is NULL)");
    if (nb->in_flight)
        return refuse_in_flight("gpunb_predict");
    if (nb->firr_in_flight)
        return refuse_irregular_in_flight("gpunb_predict");
    if (nj < 1 || nj > nb->capacity)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_predict: nj = %d is outside 1..%d (the capacity given at open)",
                          nj, nb->capacity);
    if (!isfinite(t))
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_predict: time = %g is not finite", t);
    while (nb->known_prefix < nj && nb->known[nb->known_prefix])
        nb->known_prefix++;
    if (nb->known_prefix < nj)
        return gpunb_fail(GPUNB_EUSAGE,
                          "gpunb_predict: j-particle %d of 0..%d was never set with gpunb_set_jparticle",
                          nb->known_prefix, nj - 1);
    /* The changed records inside the j-set; those beyond nj wait. */
    const int listed = take_dirty_records(nb, nj, &ndirty);
    nb->nj = 0;
    nb->predicted = 0;
    if (nb->ops->predict) {
        st = nb->ops->predict(nb->state, nj, t, nb->rec, ndirty, listed ? nb->dirty_list : NULL,
                              atomic_load(&nb->lightest));
        atomic_store(&nb->records_busy, RECORDS_COPYING); /* also after a failure half-way */
    } else {
        host_predict(nb, nj, t);
        st = nb->ops->send(nb->state, nj, nb->mp, (const double(*)[3])nb->xp,
                           (const double(*)[3])nb->vp);
    }
    if (st != GPUNB_OK) /* the list stays: upload again next time */
        return st;
    clear_dirty_records(nb, nj);
    nb->nj = nj;
    nb->predicted = 1;
    nb->irr_predicted = 1;
    nb->stats.send_calls++;
    nb->stats.time_send += nb6_clock() - t0;
    nb->stats.time_total += nb6_clock() - t0;
    return GPUNB_OK;
}

static int grow_pending(gpunb *nb, int ni)
{
    if (ni <= nb->pending_cap)
        return GPUNB_OK;
    nb6_free(nb->pending_h2);
    nb6_free(nb->pending_dtr);
    nb6_free(nb->pending_x);
    nb6_free(nb->pending_v);
    nb->pending_h2 = nb6_alloc((size_t)ni * sizeof(double));
    nb->pending_dtr = nb6_alloc((size_t)ni * sizeof(double));
    nb->pending_x = nb6_alloc((size_t)ni * sizeof(double[3]));
    nb->pending_v = nb6_alloc((size_t)ni * sizeof(double[3]));
    nb->pending_cap = ni;
    if (!nb->pending_h2 || !nb->pending_dtr || !nb->pending_x || !nb->pending_v) {
        nb->pending_cap = 0;
        return gpunb_fail(GPUNB_ERESOURCE, "gpunb_regf_start: out of host memory for ni = %d", ni);
    }
    return GPUNB_OK;
}

int gpunb_regf_start(gpunb *nb, int ni, const int *j_index, const double *h2, const double *dtr,
                     int lmax, int nbmax)
{
    double t0 = nb6_clock();
    long k;
    int st;

    if (!nb)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf_start: called before gpunb_open (handle is NULL)");
    if (nb->in_flight)
        return refuse_in_flight("gpunb_regf_start");
    if (!nb->predicted)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf_start: no predicted j-set: call gpunb_predict first");
    if (ni < 1)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf_start: ni = %d, must be at least 1", ni);
    if (lmax < 1)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf_start: lmax = %d, must be at least 1", lmax);
    if (nbmax < 0)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf_start: nbmax = %d is negative", nbmax);
    if (!j_index || !h2 || !dtr)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf_start: a NULL array (j_index, h2 or dtr)");
    for (int i = 0; i < ni; i++)
        if (j_index[i] < 0 || j_index[i] >= nb->nj)
            return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf_start: j_index[%d] = %d is outside 0..%d (the j-set)",
                              i, j_index[i], nb->nj - 1);
    if ((k = nb6_first_nonfinite(h2, ni)) >= 0)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf_start: h2[%ld] = %g is not finite", k, h2[k]);
    if ((k = nb6_first_nonfinite(dtr, ni)) >= 0)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf_start: dtr[%ld] = %g is not finite", k, dtr[k]);

    int limit = nbmax < lmax - 1 ? nbmax : lmax - 1;
    if (nb->ops->regf_start) {
        st = nb->ops->regf_start(nb->state, ni, j_index, h2, dtr, lmax, limit);
    } else {
        /* Host emulation: remember the block, compute it at finish. */
        if ((st = grow_pending(nb, ni)) == GPUNB_OK)
            for (int i = 0; i < ni; i++) {
                nb->pending_h2[i] = h2[i];
                nb->pending_dtr[i] = dtr[i];
                memcpy(nb->pending_x[i], nb->xp[j_index[i]], sizeof nb->pending_x[i]);
                memcpy(nb->pending_v[i], nb->vp[j_index[i]], sizeof nb->pending_v[i]);
            }
    }
    if (st != GPUNB_OK)
        return st;
    nb->in_flight = 1;
    nb->pending_ni = ni;
    nb->pending_lmax = lmax;
    nb->pending_limit = limit;
    nb->stats.time_total += nb6_clock() - t0;
    return GPUNB_OK;
}

int gpunb_regf_finish(gpunb *nb, double (*acc)[3], double (*jrk)[3], double *pot, int *list)
{
    double t0 = nb6_clock(), t_force = 0.0, t_gather = 0.0;
    int st;

    if (!nb)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf_finish: called before gpunb_open (handle is NULL)");
    if (!nb->in_flight)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf_finish: no regular force in flight: call gpunb_regf_start first");
    if (!acc || !jrk || !list)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf_finish: a NULL array (acc, jrk or list)");
    nb->in_flight = 0;
    if (nb->ops->regf_finish)
        st = nb->ops->regf_finish(nb->state, acc, jrk, pot, list, &t_force, &t_gather);
    else
        st = nb->ops->regf(nb->state, nb->pending_ni, nb->pending_h2, nb->pending_dtr,
                           (const double(*)[3])nb->pending_x, (const double(*)[3])nb->pending_v, acc,
                           jrk, pot, nb->pending_lmax, nb->pending_limit, list, &t_force, &t_gather);
    if (st != GPUNB_OK)
        return st;
    nb->stats.regf_calls++;
    nb->stats.i_forced += nb->pending_ni;
    nb->stats.interactions += (double)nb->pending_ni * (double)nb->nj;
    nb->stats.time_force += t_force;
    nb->stats.time_gather += t_gather;
    nb->stats.time_total += nb6_clock() - t0;
    return GPUNB_OK;
}

/* ---- Irregular force over neighbour lists ------------------------------ */

int gpunb_irr_open(gpunb *nb, int lmax)
{
    if (!nb)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_irr_open: called before gpunb_open (handle is NULL)");
    if (nb->irr_lmax)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_irr_open: called twice (lists of lmax = %d are kept already)",
                          nb->irr_lmax);
    if (lmax < 1)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_irr_open: lmax = %d, must be at least 1", lmax);
    const size_t n = (size_t)nb->capacity, bytes = n * (size_t)lmax * sizeof(int);
    nb->lists = nb->ops->alloc_records ? nb->ops->alloc_records(nb->state, bytes)
                                       : nb6_alloc_aligned(64, bytes);
    nb->list_count = nb6_alloc(n * sizeof(int));
    nb->list_dirty = gpunb_dirty_new(nb->capacity);
    nb->list_dirty_index = nb6_alloc(n * sizeof(int));
    if (!nb->lists || !nb->list_count || !nb->list_dirty || !nb->list_dirty_index) {
        free_lists(nb);
        return gpunb_fail(GPUNB_ERESOURCE,
                          "gpunb_irr_open: out of host memory for %d lists of lmax = %d (%.0f MB)",
                          nb->capacity, lmax, bytes / 1e6);
    }
    /* Every list starts empty, on the host and (the back-end's irr_open) on
     * the device, so none needs an upload. */
    for (size_t j = 0; j < n; j++)
        nb->lists[j * (size_t)lmax] = 0;
    memset(nb->list_count, 0, n * sizeof(int));
    nb->irr_on_device = 0;
    if (nb->ops->irr_open) {
        int st = nb->ops->irr_open(nb->state, nb->capacity, lmax, &nb->irr_on_device);
        if (st != GPUNB_OK) {
            free_lists(nb);
            return st;
        }
    }
    nb->irr_lmax = lmax;
    nb->irr_predicted = 0; /* the device lays its records out at a predict */
    return GPUNB_OK;
}

int gpunb_set_list(gpunb *nb, int j, int n, const int *members)
{
    if (!nb)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_set_list: called before gpunb_open (handle is NULL)");
    if (!nb->irr_lmax)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_set_list: no room for lists: call gpunb_irr_open first");
    if (nb->firr_in_flight)
        return refuse_irregular_in_flight("gpunb_set_list");
    if (j < 0 || j >= nb->capacity)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_set_list: j = %d is outside 0..%d (the capacity given at open)",
                          j, nb->capacity - 1);
    if (n < 0 || n > nb->irr_lmax - 1)
        return gpunb_fail(GPUNB_EUSAGE,
                          "gpunb_set_list: n = %d members for j-particle %d is outside 0..%d (lmax - 1 of gpunb_irr_open)",
                          n, j, nb->irr_lmax - 1);
    if (n > 0 && !members)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_set_list: members is NULL for n = %d (j-particle %d)", n, j);
    /* Passes that vectorise (one list per regular step); the culprit is
     * looked for only when one of them finds one. */
    int bad = 0;
    for (int k = 0; k < n; k++)
        bad |= (members[k] < 0) | (members[k] >= nb->capacity) | (members[k] == j);
    if (!bad) /* (members in range: known may be read) */
        for (int k = 0; k < n; k++)
            bad |= !nb->known[members[k]];
    for (int k = 0; bad && k < n; k++) {
        const int m = members[k];
        if (m < 0 || m >= nb->capacity)
            return gpunb_fail(GPUNB_EUSAGE,
                              "gpunb_set_list: members[%d] = %d of j-particle %d is outside 0..%d", k, m, j,
                              nb->capacity - 1);
        if (m == j)
            return gpunb_fail(GPUNB_EUSAGE, "gpunb_set_list: members[%d] = %d is j-particle %d itself", k, m, j);
        if (!nb->known[m])
            return gpunb_fail(GPUNB_EUSAGE,
                              "gpunb_set_list: members[%d] = %d of j-particle %d was never set with "
                              "gpunb_set_jparticle",
                              k, m, j);
    }
    int *row = nb->lists + (size_t)j * (size_t)nb->irr_lmax;
    row[0] = n;
    if (n > 0)
        memcpy(row + 1, members, sizeof(int) * (size_t)n);
    nb->list_count[j] = n;
    if (gpunb_dirty_mark(nb->list_dirty, j))
        return gpunb_fail(GPUNB_ERESOURCE, "gpunb_set_list: out of host memory to note that list %d changed", j);
    return GPUNB_OK;
}

/* The irregular force in double on the host, from the records and lists as
 * they are: each particle and member predicted as gpunb_predict does. */
NO_CONTRACTION static void host_irregular(gpunb *nb, int ni, const int *j_index, double t)
{
    const gpunb_jrecord *rec = nb->rec;
    const int lmax = nb->irr_lmax;
#pragma omp parallel for schedule(dynamic, 16) if (ni > 64)
    for (int n = 0; n < ni; n++) {
        const int i = j_index[n];
        const int *row = nb->lists + (size_t)i * (size_t)lmax;
        double xi[3], vi[3], a[3] = {0, 0, 0}, jk[3] = {0, 0, 0};
        predict_record(&rec[i], t, xi, vi);
        for (int l = 1; l <= row[0]; l++) {
            const gpunb_jrecord *r = &rec[row[l]];
            double xk[3], vk[3], dx[3], dv[3];
            predict_record(r, t, xk, vk);
            for (int c = 0; c < 3; c++) {
                dx[c] = xk[c] - xi[c];
                dv[c] = vk[c] - vi[c];
            }
            const double r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2];
            if (r2 == 0.0)
                continue;
            const double rinv2 = 1.0 / r2, mr3 = r->m * rinv2 * sqrt(rinv2);
            const double rv = 3.0 * (dx[0] * dv[0] + dx[1] * dv[1] + dx[2] * dv[2]) * rinv2;
            for (int c = 0; c < 3; c++) {
                a[c] += mr3 * dx[c];
                jk[c] += mr3 * (dv[c] - rv * dx[c]);
            }
        }
        memcpy(nb->firr_acc[n], a, sizeof a);
        memcpy(nb->firr_jrk[n], jk, sizeof jk);
    }
}

/* The records and lists the device lacks: their counts and indices for
 * ops->firr_start or ops->push; after the back-end took them, take_done
 * clears their marks. */
typedef struct device_changes {
    int ndirty, listed, nlists;
} device_changes;

static device_changes take_device_changes(gpunb *nb)
{
    device_changes c;
    c.listed = take_dirty_records(nb, nb->capacity, &c.ndirty);
    c.nlists = gpunb_dirty_list(nb->list_dirty, nb->capacity, nb->list_dirty_index);
    return c;
}

static void take_done(gpunb *nb)
{
    clear_dirty_records(nb, nb->capacity);
    gpunb_dirty_clear(nb->list_dirty, nb->capacity);
}

int gpunb_push(gpunb *nb)
{
    double t0 = nb6_clock();
    int st;

    if (!nb)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_push: called before gpunb_open (handle is NULL)");
    if (nb->firr_in_flight)
        return refuse_irregular_in_flight("gpunb_push");
    if (!nb->irr_on_device || !nb->irr_predicted || !nb->ops->push)
        return GPUNB_OK;
    double tp[GPUNB_PROF_PHASES + 1] = {t0, t0};
    const device_changes c = take_device_changes(nb);
    if (c.ndirty == 0 && c.nlists == 0)
        return GPUNB_OK;
    if (nb->profile.on)
        tp[GPUNB_PROF_BACKEND] = nb6_clock();
    /* On failure the flags stay: the next call copies them again. */
    st = nb->ops->push(nb->state, nb->rec, nb->capacity, c.ndirty, c.listed ? nb->dirty_list : NULL, nb->lists,
                       c.nlists, nb->list_dirty_index);
    if (st != GPUNB_OK)
        return st;
    if (nb->profile.on)
        tp[GPUNB_PROF_CLEAR] = nb6_clock();
    take_done(nb);
    if (nb->profile.on) {
        tp[GPUNB_PROF_FINISH] = tp[GPUNB_PROF_FINISH + 1] = nb6_clock();
        gpunb_profile_add(&nb->profile, GPUNB_PROF_PUSH, c.ndirty, c.ndirty, c.nlists, tp);
    }
    nb->pushed = 1;
    nb->stats.pushes++;
    nb->stats.time_push += nb6_clock() - t0;
    return GPUNB_OK;
}

int gpunb_firr_start(gpunb *nb, int ni, const int *j_index, double t)
{
    double t0 = nb6_clock();
    int st;

    if (!nb)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_firr_start: called before gpunb_open (handle is NULL)");
    if (nb->firr_in_flight)
        return refuse_irregular_in_flight("gpunb_firr_start");
    if (!nb->irr_lmax)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_firr_start: no lists: call gpunb_irr_open first");
    if (!nb->irr_predicted)
        return gpunb_fail(GPUNB_EUSAGE,
                          "gpunb_firr_start: the records were never predicted: call gpunb_predict once first");
    if (ni < 1)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_firr_start: ni = %d, must be at least 1", ni);
    if (!j_index)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_firr_start: j_index is NULL");
    if (!isfinite(t))
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_firr_start: time = %g is not finite", t);
    /* Every index below known_prefix is a set particle, so one pass of
     * bounds over j_index checks a call (it delays the launch); the flags
     * are read only where that fails.  The pass is serial: 2-3 us for 64k
     * indices, where waking the team cost 20-290 us before launches on the
     * H100 box.  The pair count (statistics) reads a scattered array, so it
     * comes after the launch, beside the GPU's work. */
    int lo = INT_MAX, hi = -1;
    for (int n = 0; n < ni; n++) {
        lo = j_index[n] < lo ? j_index[n] : lo;
        hi = j_index[n] > hi ? j_index[n] : hi;
    }
    for (int n = 0; (lo < 0 || hi >= nb->known_prefix) && n < ni; n++) {
        const int i = j_index[n];
        if (i < 0 || i >= nb->capacity)
            return gpunb_fail(GPUNB_EUSAGE, "gpunb_firr_start: j_index[%d] = %d is outside 0..%d", n, i,
                              nb->capacity - 1);
        if (!nb->known[i])
            return gpunb_fail(GPUNB_EUSAGE,
                              "gpunb_firr_start: j_index[%d] = %d was never set with gpunb_set_jparticle", n, i);
    }
    if (ni > nb->firr_cap) {
        nb6_free(nb->firr_acc);
        nb6_free(nb->firr_jrk);
        nb->firr_acc = nb6_alloc((size_t)ni * sizeof(double[3]));
        nb->firr_jrk = nb6_alloc((size_t)ni * sizeof(double[3]));
        nb->firr_cap = nb->firr_acc && nb->firr_jrk ? ni : 0;
        if (!nb->firr_cap)
            return gpunb_fail(GPUNB_ERESOURCE, "gpunb_firr_start: out of host memory for ni = %d", ni);
    }
    double tp[GPUNB_PROF_PHASES + 1] = {t0};
    device_changes c = {0, 0, 0};
    if (nb->profile.on)
        tp[GPUNB_PROF_TAKE] = nb6_clock();
    if (nb->irr_on_device) {
        /* The records (of the whole capacity: a list may name any set
         * particle) and lists changed since the device last took them.  A
         * full copy needs no records_busy: gpunb_firr_finish waits for it,
         * and nothing may set a record before that. */
        c = take_device_changes(nb);
        if (nb->profile.on)
            tp[GPUNB_PROF_BACKEND] = nb6_clock();
        st = nb->ops->firr_start(nb->state, ni, j_index, t, nb->rec, nb->capacity, c.ndirty,
                                 c.listed ? nb->dirty_list : NULL, nb->lists, c.nlists, nb->list_dirty_index);
        if (st != GPUNB_OK) /* the flags stay: upload again next time (a copy read half-way is redone) */
            return st;
        if (nb->profile.on)
            tp[GPUNB_PROF_CLEAR] = nb6_clock();
        take_done(nb);
    } else {
        if (nb->profile.on)
            tp[GPUNB_PROF_BACKEND] = nb6_clock();
        host_irregular(nb, ni, j_index, t);
        if (nb->profile.on)
            tp[GPUNB_PROF_CLEAR] = nb6_clock();
    }
    if (nb->profile.on) {
        tp[GPUNB_PROF_FINISH] = tp[GPUNB_PROF_FINISH + 1] = nb6_clock();
        gpunb_profile_add(&nb->profile, GPUNB_PROF_FIRR, ni, c.ndirty, c.nlists, tp);
    }
    double pairs = 0.0;
    const int *list_count = nb->list_count;
#pragma omp parallel for if (ni >= FIRR_PARALLEL_MIN) schedule(static) reduction(+ : pairs)
    for (int n = 0; n < ni; n++)
        pairs += list_count[j_index[n]];
    nb->firr_in_flight = 1;
    nb->firr_ni = ni;
    nb->firr_pairs = pairs;
    nb->stats.time_irregular += nb6_clock() - t0;
    return GPUNB_OK;
}

int gpunb_firr_done(gpunb *nb, int *done)
{
    if (!nb)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_firr_done: called before gpunb_open (handle is NULL)");
    if (!done)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_firr_done: done is NULL");
    if (!nb->firr_in_flight)
        return gpunb_fail(GPUNB_EUSAGE,
                          "gpunb_firr_done: no irregular force in flight: call gpunb_firr_start first");
    *done = 1;
    if (nb->irr_on_device && nb->ops->firr_query)
        return nb->ops->firr_query(nb->state, done);
    return GPUNB_OK;
}

int gpunb_firr_finish(gpunb *nb, double (*acc)[3], double (*jrk)[3])
{
    double t0 = nb6_clock();
    int st = GPUNB_OK;

    if (!nb)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_firr_finish: called before gpunb_open (handle is NULL)");
    if (!nb->firr_in_flight)
        return gpunb_fail(GPUNB_EUSAGE,
                          "gpunb_firr_finish: no irregular force in flight: call gpunb_firr_start first");
    if (!acc || !jrk)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_firr_finish: a NULL array (acc or jrk)");
    nb->firr_in_flight = 0;
    if (nb->irr_on_device) {
        st = nb->ops->firr_finish(nb->state, acc, jrk);
    } else {
        memcpy(acc, nb->firr_acc, (size_t)nb->firr_ni * sizeof(double[3]));
        memcpy(jrk, nb->firr_jrk, (size_t)nb->firr_ni * sizeof(double[3]));
    }
    if (st != GPUNB_OK)
        return st;
    if (nb->profile.on)
        gpunb_profile_finish(&nb->profile, nb6_clock() - t0);
    nb->stats.firr_calls++;
    nb->stats.firr_on_device += nb->irr_on_device;
    nb->stats.irr_pairs += nb->firr_pairs;
    nb->stats.time_irregular += nb6_clock() - t0;
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
