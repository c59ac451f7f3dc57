/* gpunb_irregular.c -- the irregular force over neighbour lists: the lists
 * (gpunb_irr_open, gpunb_set_list) kept beside the resident records, the
 * copies of both that the device lacks (gpunb_push), and the force itself
 * (gpunb_firr_start, gpunb_firr_done, gpunb_firr_finish), on the device or,
 * where the back-end does not compute it, on the host.  Split from
 * gpunb_api.c (one concern per file); the records and their dirty marks
 * belong to gpunb_resident.c, the handle is struct gpunb (gpunb_handle.h). */
#include "config.h"
#include "gpunb_handle.h"

#include <limits.h>
#include <math.h>
#include <string.h>

/* From this many particles a call's host loops over them run on all
 * threads (a parallel region costs a few microseconds). */
enum { FIRR_PARALLEL_MIN = 4096 };

/* Everything gpunb_irr_open made (before the back-end's state goes: its
 * memory may hold the lists). */
void gpunb_free_lists(gpunb *nb)
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

int gpunb_refuse_irregular_in_flight(const char *routine)
{
    return gpunb_fail(GPUNB_EUSAGE,
                      "%s: an irregular force started by gpunb_firr_start is in flight; call "
                      "gpunb_firr_finish first",
                      routine);
}

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
        gpunb_free_lists(nb);
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
            gpunb_free_lists(nb);
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
        return gpunb_refuse_irregular_in_flight("gpunb_set_list");
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
     * looked for only when one of them finds one.  Members below
     * known_prefix are set particles: their flags need no reading (that
     * gather was half of a call, some 400 cycles at 64k on the H100 box). */
    int bad = 0, highest = -1;
    for (int k = 0; k < n; k++) {
        bad |= (members[k] < 0) | (members[k] >= nb->capacity) | (members[k] == j);
        highest = members[k] > highest ? members[k] : highest;
    }
    if (!bad && highest >= nb->known_prefix) /* (members in range: known may be read) */
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
        gpunb_predict_record(&rec[i], t, xi, vi);
        for (int l = 1; l <= row[0]; l++) {
            const gpunb_jrecord *r = &rec[row[l]];
            double xk[3], vk[3], dx[3], dv[3];
            gpunb_predict_record(r, t, xk, vk);
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
    c.listed = gpunb_take_dirty_records(nb, nb->capacity, &c.ndirty);
    c.nlists = gpunb_dirty_list(nb->list_dirty, nb->capacity, nb->list_dirty_index);
    return c;
}

static void take_done(gpunb *nb)
{
    gpunb_clear_dirty_records(nb, nb->capacity);
    gpunb_dirty_clear(nb->list_dirty, nb->capacity);
}

int gpunb_push(gpunb *nb)
{
    double t0 = nb6_clock();
    int st;

    if (!nb)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_push: called before gpunb_open (handle is NULL)");
    nb6_stream_fence();
    if (nb->firr_in_flight)
        return gpunb_refuse_irregular_in_flight("gpunb_push");
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
    nb6_stream_fence();
    if (nb->firr_in_flight)
        return gpunb_refuse_irregular_in_flight("gpunb_firr_start");
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

int gpunb_irr_on_device(const gpunb *nb, int *on_device)
{
    if (!nb)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_irr_on_device: called before gpunb_open (handle is NULL)");
    if (!on_device)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_irr_on_device: on_device is NULL");
    if (!nb->irr_lmax)
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_irr_on_device: no lists: call gpunb_irr_open first");
    *on_device = nb->irr_on_device;
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
