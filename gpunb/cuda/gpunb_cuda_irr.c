/* gpunb_cuda_irr.c -- CUDA back-end of GPUNB, host side of the irregular
 * force over neighbour lists on one GPU (gpunb_irr_open, gpunb_push,
 * gpunb_firr_start/done/finish); its kernels are in gpunb_cuda_irregular.cu.
 *
 * The GPU holds every j-particle's record (those of the resident path,
 * gpunb_cuda_resident.c) and every list, and pulls the changed ones from
 * the host's pinned arrays, on a stream of its own of the highest priority
 * so that its small launches pass a regular force in flight.  Several GPUs
 * hold a range of the records each; the irregular force needs every
 * member's record on one GPU, so there the host computes it. */
#include "config.h"

#include <string.h>

#include "gpunb_cuda_state.h"

int gpunb_cuda_irr_open(void *state, int capacity, int lmax, int *on_device)
{
    cuda_state *s = state;
    cuda_gpu *g = &s->gpu[0];
    int st, least, greatest;

    (void)capacity;
    /* Several GPUs hold a range of the records each; the irregular force
     * needs every member's record on one GPU, so there the host computes it. */
    *on_device = 0;
    if (s->ngpu != 1)
        return GPUNB_OK;
    CHECK(g, cudaSetDevice(g->device));
    if ((st = gpunb_cuda_resident_ensure_records(s, g)) != GPUNB_OK)
        return st;
    CHECK(g, cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CHECK(g, cudaStreamCreateWithPriority(&g->irr, cudaStreamNonBlocking, greatest));
    CHECK(g, cudaEventCreateWithFlags(&g->ev_irr_records, cudaEventDisableTiming));
    CHECK(g, cudaEventCreateWithFlags(&g->ev_irr, cudaEventDisableTiming));
    CHECK(g, cudaEventCreateWithFlags(&g->ev_push, cudaEventDisableTiming));
    const size_t rows = (size_t)g->rec_cap * (size_t)lmax;
    CHECK(g, cudaMalloc((void **)&g->d_lists, sizeof(int) * rows));
    CHECK(g, cudaMemset(g->d_lists, 0, sizeof(int) * rows)); /* every list empty, as on the host */
    /* (in the legacy default stream, which the irregular stream does not wait for) */
    CHECK(g, cudaDeviceSynchronize());
    CHECK(g, cudaMalloc((void **)&g->d_irr_pred, 4 * sizeof(double2) * (size_t)g->rec_cap));
    if ((st = gpunb_cuda_mapped_alloc(g, (void **)&g->h_rec_changed, (void **)&g->d_rec_changed,
                                      sizeof(int) * (size_t)g->rec_cap)) != GPUNB_OK ||
        (st = gpunb_cuda_mapped_alloc(g, (void **)&g->h_list_changed, (void **)&g->d_list_changed,
                                      sizeof(int) * (size_t)g->rec_cap)) != GPUNB_OK)
        return st;
    s->irr_lmax = lmax;
    *on_device = 1;
    return GPUNB_OK;
}

/* Room for ni i and their results. */
static int grow_irr_io(cuda_gpu *g, int ni)
{
    int st;
    if (ni <= g->irr_cap)
        return GPUNB_OK;
    const int cap = ni + ni / 2;
    cudaFreeHost(g->h_irr_idx);
    cudaFreeHost(g->h_irr_out);
    g->h_irr_idx = NULL;
    g->h_irr_out = NULL;
    g->irr_cap = 0;
    if ((st = gpunb_cuda_mapped_alloc(g, (void **)&g->h_irr_idx, (void **)&g->d_irr_idx,
                                      sizeof(int) * (size_t)cap)) ||
        (st = gpunb_cuda_mapped_alloc(g, (void **)&g->h_irr_out, (void **)&g->d_irr_out,
                                      sizeof(double) * 6 * (size_t)cap)))
        return st;
    g->irr_cap = cap;
    return GPUNB_OK;
}

/* The changed records and lists into the device's copies, on the irregular
 * stream (firr_start and push). */
static int pull_changes(cuda_state *s, cuda_gpu *g, const gpunb_jrecord *rec, int nrec, int ndirty,
                        const int *dirty, const int *lists, int nlists, const int *list_index)
{
    int st;

    double t = s->prof.on ? nb6_clock() : 0.0;
    if (g->push_pending) { /* its kernels may still read the index arrays */
        CHECK(g, cudaEventSynchronize(g->ev_push));
        g->push_pending = 0;
    }
    if (s->prof.on) {
        s->prof.wait_push += nb6_clock() - t;
        t = nb6_clock();
        s->prof.pulls++;
    }
    /* The records may be overwritten once the last prediction has read them
     * (once waited for, the stream's later work is ordered after it). */
    if (g->records_unwaited) {
        CHECK(g, cudaStreamWaitEvent(g->irr, g->ev_records, 0));
        g->records_unwaited = 0;
    }
    if (ndirty > 0)
        g->irr_pred_n = 0;
    if (ndirty > 0 && !dirty) {
        CHECK(g, cudaMemcpyAsync(g->d_rec, rec, sizeof(gpunb_cuda_jrec) * (size_t)nrec, cudaMemcpyHostToDevice,
                                 g->irr));
        CHECK(g, cudaEventRecord(g->ev_irr_records, g->irr));
    } else if (ndirty > 0) {
        if ((st = gpunb_cuda_device_address(g, rec, &g->host_rec, &g->host_rec_dev)) != GPUNB_OK)
            return st;
        memcpy(g->h_rec_changed, dirty, sizeof(int) * (size_t)ndirty);
        CHECK(g, gpunb_cuda_launch_record_pull((const gpunb_cuda_jrec *)g->host_rec_dev, g->d_rec_changed, ndirty,
                                               g->d_rec, g->irr));
    }
    if (s->prof.on) {
        s->prof.records += nb6_clock() - t;
        t = nb6_clock();
    }
    if (nlists > 0) {
        if ((st = gpunb_cuda_device_address(g, lists, &g->host_lists, &g->host_lists_dev)) != GPUNB_OK)
            return st;
        memcpy(g->h_list_changed, list_index, sizeof(int) * (size_t)nlists);
        CHECK(g, gpunb_cuda_launch_list_pull((const int *)g->host_lists_dev, s->irr_lmax, g->d_list_changed, nlists,
                                             g->d_lists, g->irr));
    }
    if (s->prof.on)
        s->prof.lists += nb6_clock() - t;
    return GPUNB_OK;
}

int gpunb_cuda_irr_push(void *state, const gpunb_jrecord *rec, int nrec, int ndirty, const int *dirty, const int *lists,
                        int nlists, const int *list_index)
{
    cuda_state *s = state;
    cuda_gpu *g = &s->gpu[0];
    int st;

    CHECK(g, cudaSetDevice(g->device));
    if ((st = pull_changes(s, g, rec, nrec, ndirty, dirty, lists, nlists, list_index)) != GPUNB_OK)
        return st;
    CHECK(g, cudaEventRecord(g->ev_push, g->irr));
    g->push_pending = 1;
    g->push_unpredicted = 1;
    return GPUNB_OK;
}

int gpunb_cuda_irr_start(void *state, int ni, const int *i_index, double t, const gpunb_jrecord *rec,
                         int nrec, int ndirty, const int *dirty, const int *lists, int nlists,
                         const int *list_index)
{
    cuda_state *s = state;
    cuda_gpu *g = &s->gpu[0];
    int st;

    CHECK(g, cudaSetDevice(g->device));
    if ((st = grow_irr_io(g, ni)) != GPUNB_OK)
        return st;
    if (s->prof.on) {
        if (!s->prof.ev[0])
            for (int e = 0; e < 3; e++)
                CHECK(g, cudaEventCreate(&s->prof.ev[e]));
        CHECK(g, cudaEventRecord(s->prof.ev[0], g->irr));
    }
    if ((st = pull_changes(s, g, rec, nrec, ndirty, dirty, lists, nlists, list_index)) != GPUNB_OK)
        return st;
    double t_launch = 0.0;
    if (s->prof.on) {
        CHECK(g, cudaEventRecord(s->prof.ev[1], g->irr));
        t_launch = nb6_clock();
    }
    memcpy(g->h_irr_idx, i_index, sizeof(int) * (size_t)ni);
    /* Predict every record once where the pairs (about 80 per i) outnumber
     * the records several times over; else each pair predicts its member.
     * A prediction of this time from these records is there already after
     * a block's first call (all its members), for the calls of its regular
     * bodies' new lists: a few thousand i each, each pair would predict
     * its member again. */
    const int reuse = s->irr_predict != IRR_PREDICT_NEVER && g->irr_pred_n == nrec && g->irr_pred_t == t;
    const int predict_all = !reuse && (s->irr_predict == IRR_PREDICT_ALWAYS ||
                                       (s->irr_predict == IRR_PREDICT_AUTO &&
                                        (long long)ni * GPUNB_CUDA_IRR_PREDICT_RATIO >= nrec));
    g->irr_pred_n = 0; /* until the launch is known to have gone */
    CHECK(g, gpunb_cuda_launch_irregular(g->d_rec, nrec, reuse || predict_all ? g->d_irr_pred : NULL, predict_all,
                                         g->d_lists, s->irr_lmax, g->d_irr_idx, ni, t, g->d_irr_out, g->irr));
    if (reuse || predict_all) {
        g->irr_pred_n = nrec;
        g->irr_pred_t = t;
    }
    CHECK(g, cudaEventRecord(g->ev_irr, g->irr));
    if (s->prof.on) {
        CHECK(g, cudaEventRecord(s->prof.ev[2], g->irr));
        s->prof.launch += nb6_clock() - t_launch;
        s->prof.launches++;
        s->prof.bucket = gpunb_profile_bucket(ni);
    }
    s->irr_ni = ni;
    return GPUNB_OK;
}

int gpunb_cuda_irr_query(void *state, int *done)
{
    cuda_state *s = state;
    cuda_gpu *g = &s->gpu[0];

    CHECK(g, cudaSetDevice(g->device));
    const cudaError_t e = cudaEventQuery(g->ev_irr);
    if (e == cudaErrorNotReady) {
        /* Not an error; should the runtime have noted it as the last error,
         * the next launch's check would report it. */
        if (cudaPeekAtLastError() == cudaErrorNotReady)
            (void)cudaGetLastError();
        *done = 0;
        return GPUNB_OK;
    }
    CHECK(g, e);
    *done = 1;
    return GPUNB_OK;
}

int gpunb_cuda_irr_finish(void *state, double (*acc)[3], double (*jrk)[3])
{
    cuda_state *s = state;
    cuda_gpu *g = &s->gpu[0];

    CHECK(g, cudaSetDevice(g->device));
    CHECK(g, cudaEventSynchronize(g->ev_irr));
    if (s->prof.on) {
        float copy = 0.0f, force = 0.0f;
        CHECK(g, cudaEventSynchronize(s->prof.ev[2]));
        CHECK(g, cudaEventElapsedTime(&copy, s->prof.ev[0], s->prof.ev[1]));
        CHECK(g, cudaEventElapsedTime(&force, s->prof.ev[1], s->prof.ev[2]));
        s->prof.calls[s->prof.bucket]++;
        s->prof.gpu_copy_ms[s->prof.bucket] += copy;
        s->prof.gpu_force_ms[s->prof.bucket] += force;
    }
    const double *out = g->h_irr_out;
    const int ni = s->irr_ni;
    /* The GPU wrote these lines from across PCIe, so none is in a cache:
     * one thread reads them back at DRAM latency, some 0.2 ms for 50k. */
#pragma omp parallel for if (ni >= 4096) schedule(static)
    for (int q = 0; q < ni; q++)
        for (int c = 0; c < 3; c++) {
            acc[q][c] = out[6 * (size_t)q + c];
            jrk[q][c] = out[6 * (size_t)q + 3 + c];
        }
    return GPUNB_OK;
}
