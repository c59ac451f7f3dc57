/* gpunb_resident.c -- resident j-particles and the asynchronous regular
 * force: gpunb_set_jparticle keeps each particle's predictor state in the
 * handle (records a back-end may copy as they are, from any number of
 * threads at once), gpunb_predict makes the j-set from the records on the
 * device or, where the back-end cannot predict, on the host, and
 * gpunb_regf_start / gpunb_regf_finish split a regular force so that the
 * host works while it runs.  NBODY6 sets every corrected particle (~10^8
 * calls a run at 64k, from all its threads): struct gpunb
 * (gpunb_handle.h) says how that shapes the records and their dirty marks,
 * which gpunb_irregular.c reads too.  Split from gpunb_api.c: one concern
 * per file. */
#include "config.h"
#include "gpunb_handle.h"

#include <math.h>
#include <stddef.h>
#include <stdatomic.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

/* A record's two cache lines written whole with streaming stores.  Plain
 * stores first fetch each line (NBODY6 and the driver set some 10^8
 * scattered records per run at 64k) and then leave it in the writer's
 * cache, where it displaces the correctors' and GPUIRR's data, although
 * only a copy to the device reads it (the host only on the CPU back-ends).
 * The 64k Plummer driver ran 0.2 s faster on average, most on the slower
 * machines (tests/plummer/RESULTS.md, session 47).  Streaming stores are
 * ordered by a locked instruction or a fence, not by a plain release
 * store: hence gpunb_set_jparticle's rule in gpunb.h, and
 * nb6_stream_fence before the handle reads records. */
static void store_record(gpunb_jrecord *r, const double x0[3], const double v0[3], const double f_half[3],
                         const double fdot_sixth[3], double m, double t0)
{
#if defined(__SSE2__)
    _Static_assert(sizeof(gpunb_jrecord) == 16 * sizeof(double) && offsetof(gpunb_jrecord, v0) == 24 &&
                       offsetof(gpunb_jrecord, f_half) == 48 && offsetof(gpunb_jrecord, fdot_sixth) == 72 &&
                       offsetof(gpunb_jrecord, m) == 96 && offsetof(gpunb_jrecord, t0) == 104,
                   "gpunb_jrecord: the stores below assume its layout");
    double *d = (double *)r;
    _mm_stream_pd(d + 0, _mm_loadu_pd(x0));
    _mm_stream_pd(d + 2, _mm_set_pd(v0[0], x0[2]));
    _mm_stream_pd(d + 4, _mm_loadu_pd(v0 + 1));
    _mm_stream_pd(d + 6, _mm_loadu_pd(f_half));
    _mm_stream_pd(d + 8, _mm_set_pd(fdot_sixth[0], f_half[2]));
    _mm_stream_pd(d + 10, _mm_loadu_pd(fdot_sixth + 1));
    _mm_stream_pd(d + 12, _mm_set_pd(t0, m));
    _mm_stream_pd(d + 14, _mm_setzero_pd());
#else
    for (int k = 0; k < 3; k++) {
        r->x0[k] = x0[k];
        r->v0[k] = v0[k];
        r->f_half[k] = f_half[k];
        r->fdot_sixth[k] = fdot_sixth[k];
    }
    r->m = m;
    r->t0 = t0;
#endif
}

int gpunb_set_jparticle(gpunb *nb, int j, const double x0[3], const double v0[3],
                        const double f_half[3], const double fdot_sixth[3], double m, double t0)
{
    if (!nb)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_set_jparticle: called before gpunb_open (handle is NULL)");
    if (nb->firr_in_flight)
        return gpunb_refuse_irregular_in_flight("gpunb_set_jparticle");
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
    store_record(&nb->rec[j], x0, v0, f_half, fdot_sixth, m, t0);
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

NO_CONTRACTION static void host_predict(gpunb *nb, int nj, double t)
{
    const gpunb_jrecord *rec = nb->rec;
#pragma omp parallel for schedule(static) if (nj > 4096)
    for (int j = 0; j < nj; j++) {
        gpunb_predict_record(&rec[j], t, nb->xp[j], nb->vp[j]);
        nb->mp[j] = rec[j].m;
    }
}

/* The changed records among 0..n-1, for a back-end to upload: their count,
 * and (return value) whether they are listed in dirty_list.  When a quarter
 * or more changed they are not: a copy of all n costs less than a list. */
int gpunb_take_dirty_records(gpunb *nb, int n, int *ndirty)
{
    if (n >= nb->capacity) { /* every mark counts: no list needed when many changed */
        *ndirty = gpunb_dirty_count(nb->dirty);
        if (*ndirty >= n / 4)
            return 0;
    }
    *ndirty = gpunb_dirty_list(nb->dirty, n, nb->dirty_list);
    return *ndirty < n / 4;
}

/* After the back-end took them: clear the marks of gpunb_take_dirty_records. */
void gpunb_clear_dirty_records(gpunb *nb, int n) { gpunb_dirty_clear(nb->dirty, n); }

int gpunb_predict(gpunb *nb, int nj, double t)
{
    double t0 = nb6_clock();
    int st, ndirty = 0;

    if (!nb)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_predict: called before gpunb_open (handle is NULL)");
    nb6_stream_fence();
    if (nb->in_flight)
        return gpunb_refuse_in_flight("gpunb_predict");
    if (nb->firr_in_flight)
        return gpunb_refuse_irregular_in_flight("gpunb_predict");
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
    const int listed = gpunb_take_dirty_records(nb, nj, &ndirty);
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
    gpunb_clear_dirty_records(nb, nj);
    nb->nj = nj;
    nb->predicted = 1;
    nb->irr_predicted = 1;
    nb->stats.send_calls++;
    nb->stats.time_send += nb6_clock() - t0;
    nb->stats.time_total += nb6_clock() - t0;
    return GPUNB_OK;
}

static int grow_pending(struct gpunb_pending *p, int ni)
{
    if (ni <= p->cap)
        return GPUNB_OK;
    nb6_free(p->h2);
    nb6_free(p->dtr);
    nb6_free(p->x);
    nb6_free(p->v);
    p->h2 = nb6_alloc((size_t)ni * sizeof(double));
    p->dtr = nb6_alloc((size_t)ni * sizeof(double));
    p->x = nb6_alloc((size_t)ni * sizeof(double[3]));
    p->v = nb6_alloc((size_t)ni * sizeof(double[3]));
    p->cap = ni;
    if (!p->h2 || !p->dtr || !p->x || !p->v) {
        p->cap = 0;
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
    if (nb->in_flight >= GPUNB_REGF_IN_FLIGHT)
        return gpunb_fail(GPUNB_EUSAGE,
                          "gpunb_regf_start: %d regular forces are in flight already (the most there may be); "
                          "call gpunb_regf_finish first",
                          nb->in_flight);
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
    struct gpunb_pending *p = &nb->pending[(nb->pending_head + nb->in_flight) % GPUNB_REGF_IN_FLIGHT];
    if (nb->ops->regf_start) {
        st = nb->ops->regf_start(nb->state, ni, j_index, h2, dtr, lmax, limit);
    } else {
        /* Host emulation: remember the block, compute it at finish. */
        if ((st = grow_pending(p, ni)) == GPUNB_OK)
            for (int i = 0; i < ni; i++) {
                p->h2[i] = h2[i];
                p->dtr[i] = dtr[i];
                memcpy(p->x[i], nb->xp[j_index[i]], sizeof p->x[i]);
                memcpy(p->v[i], nb->vp[j_index[i]], sizeof p->v[i]);
            }
    }
    if (st != GPUNB_OK)
        return st;
    nb->in_flight++;
    p->ni = ni;
    p->lmax = lmax;
    p->limit = limit;
    nb->stats.time_total += nb6_clock() - t0;
    return GPUNB_OK;
}

int gpunb_regf_finish(gpunb *nb, double (*acc)[3], double (*jrk)[3], double *pot, int *list)
{
    double t0 = nb6_clock(), t_force = 0.0, t_gather = 0.0;
    int st;

    if (!nb)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf_finish: called before gpunb_open (handle is NULL)");
    nb6_stream_fence();
    if (!nb->in_flight)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf_finish: no regular force in flight: call gpunb_regf_start first");
    if (!acc || !jrk || !list)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf_finish: a NULL array (acc, jrk or list)");
    const struct gpunb_pending *p = &nb->pending[nb->pending_head];
    nb->pending_head = (nb->pending_head + 1) % GPUNB_REGF_IN_FLIGHT;
    nb->in_flight--;
    if (nb->ops->regf_finish)
        st = nb->ops->regf_finish(nb->state, acc, jrk, pot, list, &t_force, &t_gather);
    else
        st = nb->ops->regf(nb->state, p->ni, p->h2, p->dtr, (const double(*)[3])p->x, (const double(*)[3])p->v,
                           acc, jrk, pot, p->lmax, p->limit, list, &t_force, &t_gather);
    if (st != GPUNB_OK)
        return st;
    nb->stats.regf_calls++;
    nb->stats.i_forced += p->ni;
    nb->stats.interactions += (double)p->ni * (double)nb->nj;
    nb->stats.time_force += t_force;
    nb->stats.time_gather += t_gather;
    nb->stats.time_total += nb6_clock() - t0;
    return GPUNB_OK;
}
