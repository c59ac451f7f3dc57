/* gpunb_cuda_resident.c -- CUDA back-end of GPUNB, host side: resident
 * j-particles and the asynchronous force.
 *
 * Extended path (gpunb_predict, gpunb_regf_start/finish): each GPU keeps the
 * predictor records of its j range in double, receives only the records
 * changed since the last predict, and predicts its range into the same float
 * j-set a send leaves (bit-identical to the host's double prediction); the i
 * of a block are gathered from that j-set on the GPU (one GPU) or read back
 * from it and sent (several GPUs, each holding only its range), the launch
 * returns at once and the finish synchronises once.  The launch, the
 * collection and the precision redo are those of the legacy REGF call
 * (gpunb_cuda_regf.c); the records serve the irregular force on the GPU too
 * (gpunb_cuda_irr.c). */
#include "config.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gpunb_cuda_state.h"

/* Records, pull bitmap and index list for this GPU's largest share of the
 * capacity (the records last: once they are there, so is the rest). */
int gpunb_cuda_resident_ensure_records(cuda_state *s, cuda_gpu *g)
{
    if (g->d_rec)
        return GPUNB_OK;
    const long cap_tiles = tiles_of(s->capacity_pad);
    const long share = (cap_tiles + s->ngpu - 1) / s->ngpu * GPUNB_CUDA_TILE_J;
    const size_t words = (size_t)(share + 31) / 32;
    int st;
    if (!g->pull_idx && !(g->pull_idx = malloc(sizeof(int) * (size_t)share)))
        return gpunb_fail(GPUNB_ERESOURCE, "gpunb_predict: no host memory for %ld record indices", share);
    if (!g->h_pull_bits) {
        if ((st = gpunb_cuda_mapped_alloc(g, (void **)&g->h_pull_bits, (void **)&g->d_pull_bits,
                                          sizeof(unsigned) * words)) != GPUNB_OK)
            return st;
        memset(g->h_pull_bits, 0, sizeof(unsigned) * words);
        g->pull_n = 0;
    }
    CHECK(g, cudaMalloc((void **)&g->d_rec, sizeof(gpunb_cuda_jrec) * (size_t)share));
    /* The irregular force's prediction pass predicts every record below n,
     * also those never set (whose results no list reads): zeros, not
     * undefined bytes, for compute-sanitizer's initcheck. */
    CHECK(g, cudaMemset(g->d_rec, 0, sizeof(gpunb_cuda_jrec) * (size_t)share));
    CHECK(g, cudaDeviceSynchronize()); /* (the legacy stream, which no stream of ours waits for) */
    g->rec_cap = share;
    return GPUNB_OK;
}

_Static_assert(sizeof(gpunb_cuda_jrec) == sizeof(gpunb_jrecord) &&
                   offsetof(gpunb_cuda_jrec, x0) == offsetof(gpunb_jrecord, x0) &&
                   offsetof(gpunb_cuda_jrec, v0) == offsetof(gpunb_jrecord, v0) &&
                   offsetof(gpunb_cuda_jrec, f_half) == offsetof(gpunb_jrecord, f_half) &&
                   offsetof(gpunb_cuda_jrec, fdot_sixth) == offsetof(gpunb_jrecord, fdot_sixth) &&
                   offsetof(gpunb_cuda_jrec, m) == offsetof(gpunb_jrecord, m) &&
                   offsetof(gpunb_cuda_jrec, t0) == offsetof(gpunb_jrecord, t0),
               "the GPU's record must be the host's gpunb_jrecord");

/* The host's records (and lists), pinned and mapped: the GPUs copy them by
 * DMA, or read the changed ones, straight from where gpunb_set_jparticle
 * (gpunb_set_list) wrote them. */
void *gpunb_cuda_resident_alloc_records(void *state, size_t bytes)
{
    void *p = NULL;
    (void)state;
    if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable | cudaHostAllocMapped) != cudaSuccess)
        return NULL;
    memset(p, 0, bytes);
    return p;
}

void gpunb_cuda_resident_free_records(void *state, void *records)
{
    (void)state;
    cudaFreeHost(records);
}

int gpunb_cuda_resident_records_wait(void *state)
{
    cuda_state *s = state;
    for (int k = 0; k < s->ngpu; k++) {
        cuda_gpu *g = &s->gpu[k];
        CHECK(g, cudaSetDevice(g->device));
        CHECK(g, cudaEventSynchronize(g->ev_records));
        atomic_store_explicit(&g->records_read, 1, memory_order_release);
        if (g->ev_irr_records)
            CHECK(g, cudaEventSynchronize(g->ev_irr_records));
        if (g->ev_push)
            CHECK(g, cudaEventSynchronize(g->ev_push));
    }
    return GPUNB_OK;
}

/* The changed records of GPU g's range to the GPU (the whole range when
 * dirty is NULL), and its whole range predicted into its float j-set;
 * asynchronous: ev_records tells when the host's records (and the bitmap)
 * have been read. */
static int predict_gpu(cuda_state *s, cuda_gpu *g, double t, const gpunb_jrecord *rec, int ndirty,
                       const int *dirty)
{
    const gpunb_cuda_jrec *host_rec = NULL; /* set: the kernel pulls the marked records */
    int st, n = 0;

    CHECK(g, cudaSetDevice(g->device));
    if ((st = gpunb_cuda_resident_ensure_records(s, g)) != GPUNB_OK)
        return st;
    g->irr_pred_n = 0; /* the records change below */
    if (g->push_unpredicted) { /* a push may still write records */
        CHECK(g, cudaStreamWaitEvent(g->stream, g->ev_push, 0));
        g->push_unpredicted = 0;
    }
    if (!dirty) {
        /* In a Plummer run most of N changes between two regular blocks:
         * a DMA of the whole range costs the host nothing. */
        if (g->nj > 0)
            CHECK(g, cudaMemcpyAsync(g->d_rec, rec + g->j0, sizeof(gpunb_cuda_jrec) * (size_t)g->nj,
                                     cudaMemcpyHostToDevice, g->stream));
    } else {
        /* The prediction kernel reads the changed records straight from the
         * host's mapped array: the host only marks them in a mapped bitmap
         * (a staged copy of ~1000 scattered records cost the host ~30 us
         * per call at 128k, a separate pull kernel a launch).  The last
         * prediction has read the bitmap once ev_records has passed. */
        if (!atomic_load_explicit(&g->records_read, memory_order_acquire))
            CHECK(g, cudaEventSynchronize(g->ev_records));
        if ((st = gpunb_cuda_device_address(g, rec, &g->host_rec, &g->host_rec_dev)) != GPUNB_OK)
            return st;
        unsigned *bits = g->h_pull_bits;
        for (int q = 0; q < g->pull_n; q++)
            bits[g->pull_idx[q] >> 5] = 0u;
        /* dirty is in no order: this GPU's records are those in its range. */
        const int j0 = g->j0, j1 = g->j0 + g->nj;
        for (int q = 0; q < ndirty; q++)
            if (dirty[q] >= j0 && dirty[q] < j1) {
                const int j = dirty[q] - j0;
                g->pull_idx[n++] = j;
                bits[j >> 5] |= 1u << (j & 31);
            }
        g->pull_n = n;
        if (n > 0)
            host_rec = (const gpunb_cuda_jrec *)g->host_rec_dev + j0;
    }
    gpunb_cuda_origin o;
    memcpy(o.x, s->origin, sizeof o.x);
    memcpy(o.v, s->vorigin, sizeof o.v);
    /* In an order that stays, the kernel makes the sorted copies too. */
    const int sorted_made = gpunb_cuda_spatial_order_current(s, g);
    const gpunb_cuda_sorted_out sorted = {g->d_perm, g->d_spos, g->d_svel, g->d_slo, g->d_box};
    CHECK(g, gpunb_cuda_launch_predict(g->d_rec, host_rec, host_rec ? g->d_pull_bits : NULL, g->nj,
                                       (int)(g->ntiles * GPUNB_CUDA_TILE_J), t, &o, g->d_jpos, g->d_jvel,
                                       g->d_jlo, sorted_made ? &sorted : NULL, g->stream));
    atomic_store_explicit(&g->records_read, 0, memory_order_relaxed);
    CHECK(g, cudaEventRecord(g->ev_records, g->stream));
    g->records_unwaited = 1;
    return gpunb_cuda_jset_ready(s, g, sorted_made);
}

/* The moments of each GPU's records as the last predict left them, for the
 * next choice of the origin: on the host, a pass over all the records cost
 * some 0.3 ms at 128k (16 threads, bound by memory), every ORIGIN_REFRESH
 * predicts. */
static int make_moments(cuda_gpu *g)
{
    int st;
    CHECK(g, cudaSetDevice(g->device));
    if (!g->h_moments) {
        if ((st = gpunb_cuda_mapped_alloc(g, (void **)&g->h_moments, (void **)&g->d_moments,
                                          sizeof(gpunb_cuda_moments) * GPUNB_CUDA_MOMENT_BLOCKS)) != GPUNB_OK)
            return st;
        CHECK(g, cudaEventCreateWithFlags(&g->ev_moments, cudaEventDisableTiming));
    }
    CHECK(g, gpunb_cuda_launch_moments(g->d_rec, g->nj, g->d_moments, g->stream));
    CHECK(g, cudaEventRecord(g->ev_moments, g->stream));
    return GPUNB_OK;
}

/* The sum of the GPUs' moments into *mo, in a fixed order. */
static int collect_moments(cuda_state *s, gpunb_cuda_moments *mo)
{
    *mo = (gpunb_cuda_moments){.min_mass = INFINITY};
    for (int k = 0; k < s->ngpu; k++) {
        cuda_gpu *g = &s->gpu[k];
        if (g->ntiles == 0)
            continue;
        CHECK(g, cudaSetDevice(g->device));
        CHECK(g, cudaEventSynchronize(g->ev_moments));
        for (int b = 0; b < GPUNB_CUDA_MOMENT_BLOCKS; b++) {
            const gpunb_cuda_moments *p = &g->h_moments[b];
            mo->w += p->w;
            for (int c = 0; c < 3; c++) {
                mo->x[c] += p->x[c];
                mo->v[c] += p->v[c];
            }
            mo->x2 += p->x2;
            mo->v2 += p->v2;
            mo->min_mass = fmin(mo->min_mass, p->min_mass);
        }
    }
    return GPUNB_OK;
}

/* The GPUs keep the records of their j ranges (copied in full when the
 * split changes or many changed, else only the listed ones) and predict
 * them themselves: no host prediction, no upload of the j-set. */
int gpunb_cuda_resident_predict(void *state, int nj, double t, const gpunb_jrecord *rec, int ndirty,
                                const int *dirty, double lightest)
{
    cuda_state *s = state;
    int st;

    const int full = s->rec_nj != nj;
    if (full) /* a new split (or a failed call): every record to its GPU */
        dirty = NULL;
    s->rec_nj = -1; /* until this call has succeeded */
    if (full || s->origin_age >= ORIGIN_REFRESH) {
        /* The moments the GPUs made of the same split at the last predict,
         * else a pass over the host's records (also for a massless set). */
        gpunb_cuda_moments mo = {0};
        if (!full && s->moments_made && (st = collect_moments(s, &mo)) != GPUNB_OK)
            return st;
        if (mo.w > 0.0) {
            gpunb_cuda_origin_from_moments(s, &mo);
        } else {
            const size_t stride = sizeof(gpunb_jrecord) / sizeof(double);
            gpunb_cuda_choose_origin(s, nj, &rec[0].m, &rec[0].x0[0], &rec[0].v0[0], stride, stride);
        }
        s->origin_age = 0;
    }
    s->moments_made = 0;
    /* a lighter particle tightens the error bound */
    if (lightest > 0.0 && (s->min_mass == 0.0 || lightest < s->min_mass))
        s->min_mass = lightest;
    gpunb_cuda_split_jset(s, nj);
    for (int k = 0; k < s->ngpu; k++)
        if (s->gpu[k].ntiles > 0 &&
            (st = predict_gpu(s, &s->gpu[k], t, rec, ndirty, dirty)) != GPUNB_OK)
            return st;
    if (s->origin_age + 1 >= ORIGIN_REFRESH) { /* due at the next predict */
        for (int k = 0; k < s->ngpu; k++)
            if (s->gpu[k].ntiles > 0 && (st = make_moments(&s->gpu[k])) != GPUNB_OK)
                return st;
        s->moments_made = 1;
    }
    s->nj = nj;
    s->rec_nj = nj;
    s->origin_age++;
    s->rec = rec;
    s->t_pred = t;
    return GPUNB_OK;
}

/* GPU g's fetch buffers for n entries (mapped: the kernel writes the host's). */
static int ensure_fetch(cuda_gpu *g, int n)
{
    int st;
    if (n <= g->fetch_cap)
        return GPUNB_OK;
    cudaFreeHost(g->h_fetch_idx);
    cudaFreeHost(g->h_fetch);
    g->h_fetch_idx = NULL;
    g->h_fetch = NULL;
    g->fetch_cap = 0;
    if ((st = gpunb_cuda_mapped_alloc(g, (void **)&g->h_fetch_idx, (void **)&g->d_fetch_idx,
                                      sizeof(int) * (size_t)n)) ||
        (st = gpunb_cuda_mapped_alloc(g, (void **)&g->h_fetch, (void **)&g->d_fetch, 3 * sizeof(float4) * (size_t)n)))
        return st;
    g->fetch_cap = n;
    return GPUNB_OK;
}

/* Entries j[0..n-1] of the j-set as the last gpunb_predict made them, read
 * back from what the force kernels read, into x, v about the origin.  Not
 * predicted again from the host's records: those may have changed since
 * (gpunb_set_jparticle takes effect at the next predict), and an i taken
 * from them would sit elsewhere than its j entry.  hi + lo of a float pair
 * is exact in double, so gpunb_cuda_regf_fill_ibuf (with a zero origin) splits the
 * coordinates back into the same floats. */
int gpunb_cuda_resident_fetch_jset_entries(cuda_state *s, int n, const int *j, double (*x)[3], double (*v)[3])
{
    int st;
    for (int k = 0; k < s->ngpu; k++) {
        cuda_gpu *g = &s->gpu[k];
        int m = 0;
        g->fetch_n = 0;
        if (g->ntiles == 0)
            continue;
        if ((st = ensure_fetch(g, n)) != GPUNB_OK)
            return st;
        for (int i = 0; i < n; i++)
            if (j[i] >= g->j0 && j[i] < g->j0 + g->nj)
                g->h_fetch_idx[m++] = j[i] - g->j0;
        g->fetch_n = m;
        CHECK(g, cudaSetDevice(g->device));
        CHECK(g, gpunb_cuda_launch_fetch(g->d_jpos, g->d_jvel, g->d_jlo, g->d_fetch_idx, m, g->d_fetch,
                                         g->stream));
    }
    for (int k = 0; k < s->ngpu; k++) {
        cuda_gpu *g = &s->gpu[k];
        if (g->fetch_n > 0) {
            CHECK(g, cudaSetDevice(g->device));
            CHECK(g, cudaStreamSynchronize(g->stream));
        }
        g->fetch_n = 0; /* from here: the entries taken so far */
    }
    for (int i = 0; i < n; i++)
        for (int k = 0; k < s->ngpu; k++) {
            cuda_gpu *g = &s->gpu[k];
            if (g->ntiles == 0 || j[i] < g->j0 || j[i] >= g->j0 + g->nj)
                continue;
            const float4 *e = g->h_fetch + 3 * (size_t)g->fetch_n++;
            x[i][0] = (double)e[0].x + (double)e[2].x;
            x[i][1] = (double)e[0].y + (double)e[2].y;
            x[i][2] = (double)e[0].z + (double)e[2].z;
            v[i][0] = e[1].x;
            v[i][1] = e[1].y;
            v[i][2] = e[1].z;
            break;
        }
    return GPUNB_OK;
}

/* The pending i predicted on the host from the records as they are now:
 * where a record changed after gpunb_predict this is not where its j entry
 * is, so it serves only the precision bound of gpunb_cuda_regf_redo_precise.  On the team:
 * one scattered record per i, and a serial pass over the 7-16k i of a
 * large block took some 0.2-0.4 ms of every gpunb_regf_finish. */
static void predict_pending_on_host(const cuda_state *s, cuda_pending *p)
{
    const double t = s->t_pred;
#pragma omp parallel for if (p->ni >= HOST_PARALLEL_NI) schedule(static)
    for (int i = 0; i < p->ni; i++) {
        const gpunb_jrecord *r = &s->rec[p->jidx[i]];
        const double dt = t - r->t0;
        for (int k = 0; k < 3; k++) {
            const double a2 = r->f_half[k], j6 = r->fdot_sixth[k];
            p->xi[i][k] = r->x0[k] + dt * (r->v0[k] + dt * (a2 + dt * j6));
            p->vi[i][k] = r->v0[k] + 2.0 * dt * (a2 + 1.5 * dt * j6);
        }
    }
    p->x = PX_HOST;
}

static int grow_pending(cuda_pending *p, int ni)
{
    if (ni <= p->cap)
        return GPUNB_OK;
    free(p->jidx);
    free(p->h2);
    free(p->dtr);
    free(p->xi);
    free(p->vi);
    p->jidx = malloc(sizeof(int) * (size_t)ni);
    p->h2 = malloc(sizeof(double) * (size_t)ni);
    p->dtr = malloc(sizeof(double) * (size_t)ni);
    p->xi = malloc(sizeof(double[3]) * (size_t)ni);
    p->vi = malloc(sizeof(double[3]) * (size_t)ni);
    p->cap = ni;
    if (!p->jidx || !p->h2 || !p->dtr || !p->xi || !p->vi) {
        p->cap = 0;
        return gpunb_fail(GPUNB_ERESOURCE, "gpunb_regf_start: out of host memory for ni = %d", ni);
    }
    return GPUNB_OK;
}

/* One GPU: the i are gathered from the predicted j-set on the GPU (only
 * their indices, h2 and dtr cross PCIe).  Several GPUs: the i are read back
 * from the j-set and sent, since each GPU holds only its range.  A block
 * larger than one launch (NI_CHUNK) is computed at finish, its i read back
 * from the j-set likewise.  The API keeps at most GPUNB_REGF_IN_FLIGHT
 * forces in flight; each runs in the lane of its place in pend. */
int gpunb_cuda_resident_regf_start(void *state, int ni, const int *j_index, const double *h2, const double *dtr,
                                   int lmax, int limit)
{
    cuda_state *s = state;
    const int lane = (s->pend_head + s->pend_count) % GPUNB_REGF_IN_FLIGHT;
    cuda_pending *p = &s->pend[lane];
    int chunk, st;

    if ((st = grow_pending(p, ni)) != GPUNB_OK ||
        (st = gpunb_cuda_regf_prepare_lists(s, lane, limit, &chunk)) != GPUNB_OK)
        return st;
    memcpy(p->jidx, j_index, sizeof(int) * (size_t)ni);
    memcpy(p->h2, h2, sizeof(double) * (size_t)ni);
    memcpy(p->dtr, dtr, sizeof(double) * (size_t)ni);
    p->ni = ni;
    p->lmax = lmax;
    p->limit = limit;
    p->x = PX_NONE;
    if (ni > chunk) {
        p->mode = PENDING_DEFERRED;
        s->pend_count++;
        return GPUNB_OK;
    }
    p->direct = gpunb_cuda_regf_precise_directly(s, ni, h2);
    if (s->ngpu == 1) {
        gpunb_cuda_regf_fill_iidx(s, lane, ni, j_index, h2, dtr);
        st = gpunb_cuda_regf_chunk_launch(s, lane, ni, limit, p->direct, 1);
    } else if ((st = gpunb_cuda_resident_fetch_jset_entries(s, ni, j_index, p->xi, p->vi)) == GPUNB_OK) {
        p->x = PX_FETCHED;
        gpunb_cuda_regf_fill_ibuf(s, lane, ni, h2, dtr, (const double(*)[3])p->xi, (const double(*)[3])p->vi,
                                  gpunb_cuda_zero3, gpunb_cuda_zero3);
        st = gpunb_cuda_regf_chunk_launch(s, lane, ni, limit, p->direct, 0);
    }
    s->dirty |= st != GPUNB_OK;
    p->mode = st == GPUNB_OK ? PENDING_LAUNCHED : PENDING_NONE;
    if (st == GPUNB_OK)
        s->pend_count++;
    return st;
}

/* The oldest force in flight.  Its PRECISE redo runs in the redo lane, so
 * that it passes the next force if that is in flight already. */
int gpunb_cuda_resident_regf_finish(void *state, double (*acc)[3], double (*jrk)[3], double *pot, int *list,
                                    double *t_force, double *t_gather)
{
    cuda_state *s = state;
    const int lane = s->pend_head;
    cuda_pending *p = &s->pend[lane];
    const int mode = p->mode, ni = p->ni, lmax = p->lmax, limit = p->limit;
    int st;

    if (s->pend_count < 1 || mode == PENDING_NONE) /* the API's order checks make this unreachable */
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_regf_finish: no regular force in flight in the CUDA back-end");
    p->mode = PENDING_NONE;
    s->pend_head = (s->pend_head + 1) % GPUNB_REGF_IN_FLIGHT;
    s->pend_count--;
    if (mode == PENDING_DEFERRED) {
        if ((st = gpunb_cuda_resident_fetch_jset_entries(s, ni, p->jidx, p->xi, p->vi)) != GPUNB_OK)
            return st;
        return gpunb_cuda_regf_all(s, lane, ni, p->h2, p->dtr, (const double(*)[3])p->xi,
                                   (const double(*)[3])p->vi, gpunb_cuda_zero3, gpunb_cuda_zero3, acc, jrk, pot,
                                   lmax, limit, list, t_force, t_gather);
    }
    *t_force = 0.0;
    st = gpunb_cuda_regf_chunk_collect(s, lane, ni, acc, jrk, pot, lmax, limit, list, 0, t_force);
    const double t0 = nb6_clock();
    if (st == GPUNB_OK && !p->direct && s->precise_mode == PRECISE_AUTO) {
        const int fetched = p->x == PX_FETCHED;
        if (p->x == PX_NONE)
            predict_pending_on_host(s, p);
        st = gpunb_cuda_regf_redo_precise(s, LANE_REDO, ni, p->h2, p->dtr, (const double(*)[3])p->xi,
                                          (const double(*)[3])p->vi, fetched ? gpunb_cuda_zero3 : s->origin,
                                          fetched ? gpunb_cuda_zero3 : s->vorigin, fetched ? NULL : p->jidx, acc,
                                          jrk, pot, lmax, limit, list, 0, t_force);
    }
    s->dirty = st != GPUNB_OK;
    *t_gather = nb6_clock() - t0;
    return st;
}
