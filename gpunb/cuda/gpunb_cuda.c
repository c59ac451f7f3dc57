/* gpunb_cuda.c -- CUDA back-end of GPUNB, host side: device state (open,
 * close), the j-set upload of gpunb_send and the origin of its floats, the
 * back-end's table of operations, and GPUPOT.  The calls themselves have a
 * file each (one concern per file): the legacy REGF with the precision
 * check and redo every force call shares (gpunb_cuda_regf.c), the resident
 * j-particles and the asynchronous force (gpunb_cuda_resident.c), the
 * irregular force over neighbour lists (gpunb_cuda_irr.c); the state they
 * share is declared in gpunb_cuda_state.h.
 *
 * The j-set is split over the GPUs in contiguous ranges of whole tiles
 * (gpunb_cuda_split_jset), so their lists concatenate in ascending order.
 *
 * Positions go to the GPU as floats relative to an origin chosen at send or
 * predict (the centre of mass on a coarse grid): the i coordinates, bit-equal to their j
 * entries in double, convert to bit-equal floats, so self stays an exact
 * r = 0 neighbour; and clusters far from the coordinate origin lose nothing.
 * What the floats still lose, and how the force makes up for it, is told in
 * gpunb_cuda_regf.c. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpunb_cuda_state.h"

int gpunb_cuda_usable(char *why)
{
    int *ids, n = gpunb_cuda_devices_select(&ids, why), ok = n > 0;
    for (int k = 0; k < n && ok; k++) {
        cudaError_t err = cudaSetDevice(ids[k]);
        if (err == cudaSuccess)
            err = gpunb_cuda_probe_kernels();
        if (err != cudaSuccess) {
            nb6_format(why, "CUDA device %d cannot run the GPUNB kernels: %s: %s", ids[k],
                       cudaGetErrorName(err), cudaGetErrorString(err));
            cudaGetLastError();
            ok = 0;
        }
    }
    free(ids);
    return ok;
}

static void free_lane(cuda_lane *L)
{
    if (L->own_scratch) {
        cudaFree(L->d_ibuf);
        cudaFree(L->d_iidx);
        cudaFree(L->d_partial);
        cudaFree(L->d_sync);
    }
    cudaFree(L->d_nbcount);
    cudaFree(L->d_iorder);
    cudaFree(L->d_nblist);
    cudaFreeHost(L->h_out);
    cudaFreeHost(L->h_stamp);
    if (L->ev_force0)
        cudaEventDestroy(L->ev_force0);
    if (L->ev_force1)
        cudaEventDestroy(L->ev_force1);
    if (L->ev_reduced)
        cudaEventDestroy(L->ev_reduced);
    if (L->ev_join)
        cudaEventDestroy(L->ev_join);
    if (L->own_streams && L->stream)
        cudaStreamDestroy(L->stream);
    if (L->own_streams && L->side)
        cudaStreamDestroy(L->side);
}

static void free_gpu(cuda_gpu *g)
{
    if (cudaSetDevice(g->device) != cudaSuccess)
        return;
    cudaDeviceSynchronize(); /* nothing of any lane may still run on what goes */
    for (int l = 0; l < GPUNB_CUDA_LANES; l++)
        free_lane(&g->lane[l]);
    cudaFree(g->d_jpos);
    cudaFree(g->d_jvel);
    cudaFree(g->d_jlo);
    cudaFree(g->d_box);
    cudaFree(g->d_spos);
    cudaFree(g->d_svel);
    cudaFree(g->d_slo);
    cudaFree(g->d_perm);
    cudaFree(g->d_sort_idx);
    cudaFree(g->d_sort_keys);
    cudaFree(g->d_sort_temp);
    if (g->order)
        cudaGraphExecDestroy(g->order);
    cudaFreeHost(g->h_jpos);
    cudaFreeHost(g->h_jvel);
    cudaFreeHost(g->h_jlo);
    cudaFree(g->d_rec);
    cudaFreeHost(g->h_pull_bits);
    cudaFreeHost(g->h_moments);
    if (g->ev_moments)
        cudaEventDestroy(g->ev_moments);
    free(g->pull_idx);
    if (g->irr) /* nothing may still run on what goes next */
        cudaStreamSynchronize(g->irr);
    cudaFree(g->d_lists);
    cudaFree(g->d_irr_pred);
    cudaFreeHost(g->h_rec_changed);
    cudaFreeHost(g->h_list_changed);
    cudaFreeHost(g->h_irr_idx);
    cudaFreeHost(g->h_irr_out);
    cudaFreeHost(g->h_fetch_idx);
    cudaFreeHost(g->h_fetch);
    if (g->ev_irr_records)
        cudaEventDestroy(g->ev_irr_records);
    if (g->ev_irr)
        cudaEventDestroy(g->ev_irr);
    if (g->ev_push)
        cudaEventDestroy(g->ev_push);
    if (g->irr)
        cudaStreamDestroy(g->irr);
    if (g->ev_records)
        cudaEventDestroy(g->ev_records);
    if (g->stream)
        cudaStreamDestroy(g->stream);
    if (g->side)
        cudaStreamDestroy(g->side);
}

static void print_irr_profile(cuda_state *s)
{
    if (!s->prof.on || s->prof.pulls == 0)
        return;
    fprintf(stderr,
            "profile cuda irregular path, host us per copy (%lld, pushes included): wait for the last push %.1f, "
            "changed records %.1f, changed lists %.1f; per force launch (%lld) %.1f\n",
            s->prof.pulls, 1e6 * s->prof.wait_push / s->prof.pulls, 1e6 * s->prof.records / s->prof.pulls,
            1e6 * s->prof.lists / s->prof.pulls, s->prof.launches,
            s->prof.launches ? 1e6 * s->prof.launch / s->prof.launches : 0.0);
    fprintf(stderr, "profile cuda irregular force, GPU us per call: %21s %9s %9s %9s\n", "size", "calls", "copies",
            "force");
    for (int b = 0; b < GPUNB_PROF_BUCKETS; b++)
        if (s->prof.calls[b] > 0) {
            long lo, hi;
            gpunb_profile_bucket_sizes(b, &lo, &hi);
            fprintf(stderr, "profile cuda irregular force, GPU us per call: %10ld..%10ld %9lld %9.1f %9.1f\n", lo, hi,
                    s->prof.calls[b], 1e3 * s->prof.gpu_copy_ms[b] / s->prof.calls[b],
                    1e3 * s->prof.gpu_force_ms[b] / s->prof.calls[b]);
        }
}

static void cuda_close(void *state)
{
    cuda_state *s = state;
    if (!s)
        return;
    print_irr_profile(s);
    for (int e = 0; e < 3; e++)
        if (s->prof.ev[e])
            cudaEventDestroy(s->prof.ev[e]);
    for (int k = 0; k < s->ngpu; k++)
        free_gpu(&s->gpu[k]);
    for (int l = 0; l < GPUNB_CUDA_LANES; l++) {
        cudaFreeHost(s->h_ibuf[l]);
        cudaFreeHost(s->h_iidx[l]);
    }
    for (int q = 0; q < GPUNB_REGF_IN_FLIGHT; q++) {
        free(s->pend[q].jidx);
        free(s->pend[q].h2);
        free(s->pend[q].dtr);
        free(s->pend[q].xi);
        free(s->pend[q].vi);
    }
    free(s->redo);
    free(s->redo_j);
    free(s->short_flag);
    free(s->least_a2);
    free(s->r_h2);
    free(s->r_dtr);
    free(s->r_xi);
    free(s->r_vi);
    free(s->r_acc);
    free(s->r_jrk);
    free(s->r_pot);
    free(s->r_list);
    free(s->gpu);
    free(s);
}

static int host_alloc(cuda_gpu *g, void **p, size_t bytes)
{
    CHECK(g, cudaHostAlloc(p, bytes, cudaHostAllocPortable));
    return GPUNB_OK;
}

/* pinned host memory that the GPU reads or writes in place */
int gpunb_cuda_mapped_alloc(cuda_gpu *g, void **host, void **device, size_t bytes)
{
    CHECK(g, cudaHostAlloc(host, bytes, cudaHostAllocPortable | cudaHostAllocMapped));
    CHECK(g, cudaHostGetDevicePointer(device, *host, 0));
    return GPUNB_OK;
}

/* The device address of pinned host memory, asked once per array. */
int gpunb_cuda_device_address(cuda_gpu *g, const void *host, const void **cached_host, const void **cached_dev)
{
    if (*cached_host != host) {
        void *dev = NULL;
        CHECK(g, cudaHostGetDevicePointer(&dev, (void *)host, 0));
        *cached_host = host;
        *cached_dev = dev;
    }
    return GPUNB_OK;
}

/* Lane `l` of GPU g (see cuda_lane): lane 1 shares lane 0's streams and
 * scratch, the redo lane has its own, its streams of the highest priority. */
static int open_lane(cuda_gpu *g, int l, size_t partial_floats)
{
    cuda_lane *L = &g->lane[l];
    int least, greatest;
    L->own_streams = l == LANE_REDO;
    L->own_scratch = l != 1;
    if (L->own_streams) {
        CHECK(g, cudaDeviceGetStreamPriorityRange(&least, &greatest));
        CHECK(g, cudaStreamCreateWithPriority(&L->stream, cudaStreamNonBlocking, greatest));
        CHECK(g, cudaStreamCreateWithPriority(&L->side, cudaStreamNonBlocking, greatest));
    } else {
        L->stream = g->stream;
        L->side = g->side;
    }
    CHECK(g, cudaEventCreate(&L->ev_force0));
    CHECK(g, cudaEventCreate(&L->ev_force1));
    CHECK(g, cudaEventCreateWithFlags(&L->ev_reduced, cudaEventDisableTiming));
    CHECK(g, cudaEventCreateWithFlags(&L->ev_join, cudaEventDisableTiming));
    if (L->own_scratch) {
        CHECK(g, cudaMalloc((void **)&L->d_ibuf, 2 * 3 * sizeof(float4) * GPUNB_CUDA_NI_CHUNK));
        CHECK(g, cudaMalloc((void **)&L->d_iidx, 2 * sizeof(int4) * GPUNB_CUDA_NI_CHUNK));
        CHECK(g, cudaMalloc((void **)&L->d_partial, sizeof(float) * partial_floats));
        CHECK(g, cudaMalloc((void **)&L->d_sync, 2 * sizeof(int)));
        CHECK(g, cudaMemset(L->d_sync, 0, 2 * sizeof(int)));
    } else {
        L->d_ibuf = g->lane[0].d_ibuf;
        L->d_iidx = g->lane[0].d_iidx;
        L->d_partial = g->lane[0].d_partial;
        L->d_sync = g->lane[0].d_sync;
    }
    CHECK(g, cudaMalloc((void **)&L->d_iorder, sizeof(int) * GPUNB_CUDA_NI_CHUNK));
    CHECK(g, cudaMalloc((void **)&L->d_nbcount, sizeof *L->d_nbcount * GPUNB_CUDA_NI_CHUNK));
    CHECK(g, cudaMemset(L->d_nbcount, 0, sizeof *L->d_nbcount * GPUNB_CUDA_NI_CHUNK));
    return gpunb_cuda_mapped_alloc(g, (void **)&L->h_stamp, (void **)&L->d_stamp,
                                   sizeof(unsigned long long) * (1 + FUSED_REDUCE_NI));
}

static int open_gpu(cuda_gpu *g, int capacity_pad, int min_blocks, int waves, int single, int pdl)
{
    struct cudaDeviceProp prop;
    int per_sm = 0, single_per_sm = 0, st;
    const size_t jbytes = sizeof(float4) * (size_t)capacity_pad;
    size_t partial_floats;

    CHECK(g, cudaSetDevice(g->device));
    CHECK(g, cudaGetDeviceProperties(&prop, g->device));
    snprintf(g->name, sizeof g->name, "%s", prop.name);
    g->sms = prop.multiProcessorCount;
    CHECK(g, gpunb_cuda_force_occupancy(min_blocks, &per_sm));
    g->force_blocks = g->sms * (per_sm > 0 ? per_sm : 1);
    /* The single launch's barrier needs every block resident: a cooperative
     * launch, no larger than the GPU holds of the single-launch kernels. */
    if (single) {
        if (!prop.cooperativeLaunch)
            return gpunb_fail(GPUNB_EDEVICE,
                              "gpunb_open: NB6ACCEL_CUDA_SINGLE_LAUNCH=1: CUDA device %d (%s) cannot launch "
                              "cooperative kernels",
                              g->device, g->name);
        CHECK(g, gpunb_cuda_single_occupancy(min_blocks, &single_per_sm));
        g->single_blocks = g->sms * single_per_sm;
        if (g->single_blocks > g->force_blocks) /* the partial sums are sized for force_blocks */
            g->single_blocks = g->force_blocks;
    }
    g->pdl = pdl < 0 ? prop.major >= 9 : pdl;
    if (pdl > 0 && prop.major < 9)
        return gpunb_fail(GPUNB_EDEVICE,
                          "gpunb_open: NB6ACCEL_CUDA_PDL=1: CUDA device %d (%s) has compute capability %d.%d, "
                          "programmatic dependent launch needs 9.0",
                          g->device, g->name, prop.major, prop.minor);
    CHECK(g, cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
    CHECK(g, cudaStreamCreateWithFlags(&g->side, cudaStreamNonBlocking));
    CHECK(g, cudaEventCreateWithFlags(&g->ev_records, cudaEventDisableTiming));
    CHECK(g, cudaMalloc((void **)&g->d_jpos, jbytes));
    CHECK(g, cudaMalloc((void **)&g->d_jvel, jbytes));
    CHECK(g, cudaMalloc((void **)&g->d_jlo, jbytes));
    { /* the spatial order and the far test */
        CHECK(g, cudaMalloc((void **)&g->d_box, jbytes / GPUNB_CUDA_QUARTER_J * 4));
        CHECK(g, cudaMalloc((void **)&g->d_spos, jbytes));
        CHECK(g, cudaMalloc((void **)&g->d_svel, jbytes));
        CHECK(g, cudaMalloc((void **)&g->d_slo, jbytes));
        CHECK(g, cudaMalloc((void **)&g->d_perm, sizeof(int) * (size_t)capacity_pad));
        CHECK(g, cudaMalloc((void **)&g->d_sort_idx, 2 * sizeof(int) * (size_t)capacity_pad));
        CHECK(g, cudaMalloc((void **)&g->d_sort_keys, 2 * sizeof(unsigned) * (size_t)capacity_pad));
        CHECK(g, gpunb_cuda_spatial_temp_bytes(capacity_pad, &g->sort_temp_bytes));
        CHECK(g, cudaMalloc(&g->d_sort_temp, g->sort_temp_bytes));
    }
    CHECK(g, gpunb_cuda_order_i_prepare());
    /* nslices * ni_tiles <= max(waves * force_blocks, ni_tiles) (see launch_gpu, gpunb_cuda_regf.c) */
    partial_floats = (size_t)(waves * g->force_blocks + GPUNB_CUDA_NI_CHUNK / GPUNB_CUDA_BLOCK_I) *
                     GPUNB_CUDA_BLOCK_I * GPUNB_CUDA_NPARTIAL;
    for (int l = 0; l < GPUNB_CUDA_LANES; l++)
        if ((st = open_lane(g, l, partial_floats)) != GPUNB_OK)
            return st;
    /* cudaMemset runs in the legacy default stream, which the non-blocking
     * streams of the calls do not wait for: done before the first call. */
    CHECK(g, cudaDeviceSynchronize());
    if ((st = host_alloc(g, (void **)&g->h_jpos, jbytes)) ||
        (st = host_alloc(g, (void **)&g->h_jvel, jbytes)) ||
        (st = host_alloc(g, (void **)&g->h_jlo, jbytes)))
        return st;
    return GPUNB_OK;
}

static int cuda_open(void **state, int capacity, char *desc)
{
    char why[NB6_ERRMSG_LEN];
    int *ids, n = gpunb_cuda_devices_select(&ids, why), st;
    const char *mode = nb6_getenv("NB6ACCEL_CUDA_PRECISE");
    const char *blocks = nb6_getenv("NB6ACCEL_CUDA_FORCE_BLOCKS");
    const char *waves = nb6_getenv("NB6ACCEL_CUDA_WAVES");
    const char *single = nb6_getenv("NB6ACCEL_CUDA_SINGLE_LAUNCH");
    const char *pdl = nb6_getenv("NB6ACCEL_CUDA_PDL");
    const char *inline_i = nb6_getenv("NB6ACCEL_CUDA_INLINE_I");
    const char *irr_predict = nb6_getenv("NB6ACCEL_CUDA_IRR_PREDICT");
    const char *spatial = nb6_getenv("NB6ACCEL_CUDA_SPATIAL");
    const size_t chunk = GPUNB_CUDA_NI_CHUNK;
    cuda_state *s;
    size_t len;

    if (n < 1)
        return gpunb_fail(GPUNB_EDEVICE, "gpunb_open: %s", why);
    if (mode && strcmp(mode, "auto") && strcmp(mode, "always") && strcmp(mode, "never")) {
        free(ids);
        return gpunb_fail(GPUNB_EUSAGE,
                          "gpunb_open: NB6ACCEL_CUDA_PRECISE=\"%s\" is not one of auto, always, never",
                          mode);
    }
    if (blocks && atoi(blocks) != GPUNB_CUDA_FORCE_MIN_BLOCKS &&
        atoi(blocks) != GPUNB_CUDA_FORCE_MIN_BLOCKS_ALT) {
        free(ids);
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_open: NB6ACCEL_CUDA_FORCE_BLOCKS=\"%s\" is not %d or %d",
                          blocks, GPUNB_CUDA_FORCE_MIN_BLOCKS, GPUNB_CUDA_FORCE_MIN_BLOCKS_ALT);
    }
    char *end = NULL;
    const long nwaves = waves ? strtol(waves, &end, 10) : 0;
    if (waves && (end == waves || *end || nwaves < 1 || nwaves > GPUNB_CUDA_MAX_WAVES)) {
        free(ids);
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_open: NB6ACCEL_CUDA_WAVES=\"%s\" is not in 1..%d", waves,
                          GPUNB_CUDA_MAX_WAVES);
    }
    if (single && strcmp(single, "0") && strcmp(single, "1")) {
        free(ids);
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_open: NB6ACCEL_CUDA_SINGLE_LAUNCH=\"%s\" is not 0 or 1", single);
    }
    if (pdl && strcmp(pdl, "0") && strcmp(pdl, "1")) {
        free(ids);
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_open: NB6ACCEL_CUDA_PDL=\"%s\" is not 0 or 1", pdl);
    }
    if (inline_i && strcmp(inline_i, "0") && strcmp(inline_i, "1")) {
        free(ids);
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_open: NB6ACCEL_CUDA_INLINE_I=\"%s\" is not 0 or 1", inline_i);
    }
    if (spatial && strcmp(spatial, "auto") && strcmp(spatial, "0") && strcmp(spatial, "1")) {
        free(ids);
        return gpunb_fail(GPUNB_EUSAGE, "gpunb_open: NB6ACCEL_CUDA_SPATIAL=\"%s\" is not one of auto, 0, 1",
                          spatial);
    }
    if (irr_predict && strcmp(irr_predict, "auto") && strcmp(irr_predict, "always") && strcmp(irr_predict, "never")) {
        free(ids);
        return gpunb_fail(GPUNB_EUSAGE,
                          "gpunb_open: NB6ACCEL_CUDA_IRR_PREDICT=\"%s\" is not one of auto, always, never",
                          irr_predict);
    }
    s = calloc(1, sizeof *s);
    if (!s || !(s->gpu = calloc((size_t)n, sizeof *s->gpu)) ||
        !(s->redo = malloc(sizeof(int) * chunk)) || !(s->redo_j = malloc(sizeof(int) * chunk)) ||
        !(s->short_flag = malloc(chunk)) || !(s->least_a2 = malloc(sizeof(double) * chunk)) ||
        !(s->r_h2 = malloc(sizeof(double) * chunk)) || !(s->r_dtr = malloc(sizeof(double) * chunk)) ||
        !(s->r_xi = malloc(sizeof(double[3]) * chunk)) || !(s->r_vi = malloc(sizeof(double[3]) * chunk)) ||
        !(s->r_acc = malloc(sizeof(double[3]) * chunk)) ||
        !(s->r_jrk = malloc(sizeof(double[3]) * chunk)) || !(s->r_pot = malloc(sizeof(double) * chunk))) {
        free(ids);
        if (s)
            cuda_close(s);
        return gpunb_fail(GPUNB_ERESOURCE, "gpunb_open: out of host memory");
    }
    s->prof.on = gpunb_profile_enabled();
    s->irr_predict = !irr_predict || !strcmp(irr_predict, "auto") ? IRR_PREDICT_AUTO
                     : !strcmp(irr_predict, "always")             ? IRR_PREDICT_ALWAYS
                                                                  : IRR_PREDICT_NEVER;
    s->precise_mode = !mode || !strcmp(mode, "auto") ? PRECISE_AUTO
                      : !strcmp(mode, "always")      ? PRECISE_ALWAYS
                                                     : PRECISE_NEVER;
    s->min_blocks = blocks ? atoi(blocks) : GPUNB_CUDA_FORCE_MIN_BLOCKS;
    s->waves = (int)nwaves;
    s->single = single ? single[0] == '1' : GPUNB_CUDA_SINGLE_LAUNCH;
    s->pdl = pdl ? pdl[0] == '1' : GPUNB_CUDA_PDL ? -1 : 0;
    s->inline_i = inline_i ? inline_i[0] == '1' : GPUNB_CUDA_INLINE_I;
    s->spatial_mode = !spatial || !strcmp(spatial, "auto") ? -1 : spatial[0] == '1';
    s->ngpu = n;
    s->capacity_pad = (int)(tiles_of(capacity) * GPUNB_CUDA_TILE_J);
    for (int k = 0; k < n; k++)
        s->gpu[k].device = ids[k];
    free(ids);
    for (int k = 0; k < n; k++)
        if ((st = open_gpu(&s->gpu[k], s->capacity_pad, s->min_blocks,
                           s->waves ? s->waves : GPUNB_CUDA_WAVES_MOST, s->single,
                           s->pdl)) != GPUNB_OK) {
            cuda_close(s);
            return st;
        }
    /* A GPU named twice in GPU_LIST (a test of the several-GPU path) would
     * run two single launches at once, each needing the whole GPU resident
     * for its barrier: those shares use the two kernels. */
    for (int k = 0; k < n; k++)
        for (int l = 0; l < k; l++)
            if (s->gpu[l].device == s->gpu[k].device)
                s->gpu[k].single_blocks = s->gpu[l].single_blocks = 0;
    s->rec_nj = -1;
    for (int l = 0; l < GPUNB_CUDA_LANES; l++)
        if ((st = host_alloc(&s->gpu[0], (void **)&s->h_ibuf[l], 3 * sizeof(float4) * chunk)) ||
            (st = host_alloc(&s->gpu[0], (void **)&s->h_iidx[l], sizeof(int4) * chunk))) {
            cuda_close(s);
            return st;
        }
    len = (size_t)snprintf(desc, NB6_ERRMSG_LEN, "CUDA, %d GPU%s:", n, n > 1 ? "s" : "");
    for (int k = 0; k < n && len < NB6_ERRMSG_LEN; k++)
        len += (size_t)snprintf(desc + len, NB6_ERRMSG_LEN - len, "%s %d = %s (%d SMs, %d force blocks)",
                                k ? "," : "", s->gpu[k].device, s->gpu[k].name, s->gpu[k].sms,
                                s->gpu[k].force_blocks);
    if (len < NB6_ERRMSG_LEN && s->waves)
        len += (size_t)snprintf(desc + len, NB6_ERRMSG_LEN - len, "; %d force waves", s->waves);
    else if (len < NB6_ERRMSG_LEN)
        len += (size_t)snprintf(desc + len, NB6_ERRMSG_LEN - len,
                                "; %d force waves (%d for a GPU's j range up to %d, %d in spatial order)",
                                GPUNB_CUDA_WAVES, GPUNB_CUDA_WAVES_SHORT,
                                GPUNB_CUDA_WAVES_SHORT_TILES * GPUNB_CUDA_TILE_J, GPUNB_CUDA_WAVES_SPATIAL);
    if (len < NB6_ERRMSG_LEN)
        snprintf(desc + len, NB6_ERRMSG_LEN - len,
                 " for NI > %d, %s for NI <= %d; float pairs about the j-set's centre of mass (two-float where "
                 "needed), double sums",
                 FUSED_REDUCE_NI,
                 s->single ? "single launch"
                 : s->gpu[0].pdl ? "force + dependent gathering kernel"
                           : "force + gathering kernel",
                 FUSED_REDUCE_NI);
    *state = s;
    return GPUNB_OK;
}

/* c rounded to a grid of 2^-shift of the set's spread (a power of two): the
 * origin moves in steps, so two sets that differ a little (the records and
 * their prediction, a set and the same set a step later) get the same
 * origin and the same floats, while it stays close enough to keep the
 * digits (positions: within 1/16 of the rms radius of the centre of mass;
 * velocities: a quarter of the rms speed, so a cluster at rest gets 0). */
static double on_grid(double c, double spread, int shift)
{
    if (!(spread > 0.0) || !isfinite(spread))
        return c;
    const double g = ldexp(1.0, ilogb(spread) - shift);
    return nearbyint(c / g) * g;
}

/* The origin of the float coordinates: the centre of mass (ghosts have no
 * mass and sit at 1e6, so they do not pull it away), or the plain mean of a
 * massless set, on the grid of on_grid; and the smallest non-zero mass. */
void gpunb_cuda_origin_from_moments(cuda_state *s, const gpunb_cuda_moments *mo)
{
    double cx[3], cv[3], x2 = 0.0, v2 = 0.0;
    for (int c = 0; c < 3; c++) {
        cx[c] = mo->x[c] / mo->w;
        cv[c] = mo->v[c] / mo->w;
        x2 += cx[c] * cx[c];
        v2 += cv[c] * cv[c];
    }
    const double rx = sqrt(fmax(mo->x2 / mo->w - x2, 0.0)), rv = sqrt(fmax(mo->v2 / mo->w - v2, 0.0));
    /* The spatial order's cube: 1024 cells over 6-12 rms radii about the
     * origin, at a power of two of cells per unit, so that the send's
     * positions and the records' (gpunb_predict) give the same order, as
     * they give the same origin (on_grid). */
    s->spatial_scale = rx > 0.0 ? ldexpf(1.0f, (int)floor(log2(1024.0 / (6.0 * rx)))) : 1.0f;
    for (int c = 0; c < 3; c++) {
        s->origin[c] = on_grid(cx[c], rx, 4);
        s->vorigin[c] = on_grid(cv[c], rv, 2);
    }
    s->min_mass = mo->min_mass < INFINITY ? mo->min_mass : 0.0;
}

/* m[j * stride], x[j * stride + c], v[j * stride + c]: the j-set's arrays
 * (stride 1 and 3) or the resident records (one stride for all). */
void gpunb_cuda_choose_origin(cuda_state *s, int nj, const double *m, const double *x, const double *v,
                              size_t mstride, size_t stride)
{
    gpunb_cuda_moments mo = {0};
    double min_mass = INFINITY;
    for (int pass = 0; pass < 2 && !(mo.w > 0.0); pass++) { /* pass 1: a massless set, weight 1 */
        double mt_ = 0, sx_ = 0, sv_ = 0, x0 = 0, x1 = 0, x2 = 0, v0 = 0, v1 = 0, v2 = 0;
#pragma omp parallel for if (nj > 16384) schedule(static) reduction(+ : mt_, sx_, sv_, x0, x1, x2, v0, v1, v2) \
    reduction(min : min_mass)
        for (int j = 0; j < nj; j++) {
            const double w = pass ? 1.0 : m[j * mstride];
            if (w == 0.0) /* a ghost far away: not even 0 * inf */
                continue;
            if (!pass && w < min_mass) /* the lightest j with mass */
                min_mass = w;
            const double *xj = x + j * stride, *vj = v + j * stride;
            mt_ += w;
            x0 += w * xj[0];
            x1 += w * xj[1];
            x2 += w * xj[2];
            v0 += w * vj[0];
            v1 += w * vj[1];
            v2 += w * vj[2];
            sx_ += w * (xj[0] * xj[0] + xj[1] * xj[1] + xj[2] * xj[2]);
            sv_ += w * (vj[0] * vj[0] + vj[1] * vj[1] + vj[2] * vj[2]);
        }
        mo = (gpunb_cuda_moments){mt_, {x0, x1, x2}, {v0, v1, v2}, sx_, sv_, min_mass};
    }
    gpunb_cuda_origin_from_moments(s, &mo);
}

/* Whether a j-set of npad entries goes to the force kernel in spatial order. */
static int spatial_for(const cuda_state *s, int npad)
{
    return s->spatial_mode > 0 || (s->spatial_mode < 0 && npad >= SPATIAL_MIN_J);
}

int gpunb_cuda_spatial_order_current(const cuda_state *s, const cuda_gpu *g)
{
    const int npad = (int)(g->ntiles * GPUNB_CUDA_TILE_J);
    return spatial_for(s, npad) && npad == g->sort_npad && g->sort_age < SPATIAL_REFRESH;
}

/* A new spatial order of GPU g's j-set and its sorted copies and boxes,
 * as one CUDA graph: its ten launches (keys, CUB's radix sort, the layout,
 * the copies) cost the host some 110 us every SPATIAL_REFRESH j-sets at
 * 128k on the H100 box, one graph launch a fraction of that.  The graph is
 * captured again when the size or the cube of the keys changes; a new cube
 * (its scale a kernel argument) updates the graph in place, since a set
 * whose rms radius sits near the edge of two cubes may change it at every
 * choice of the origin. */
static int launch_new_order(cuda_state *s, cuda_gpu *g, int npad, int stride)
{
    if (!g->order || g->order_npad != npad || g->order_scale != s->spatial_scale) {
        cudaGraph_t graph = NULL;
        CHECK(g, cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal));
        cudaError_t err = gpunb_cuda_launch_spatial_sort(g->d_jpos, npad, s->spatial_scale, stride, g->d_sort_keys,
                                                         g->d_sort_idx, g->d_sort_temp, g->sort_temp_bytes,
                                                         g->d_perm, g->stream);
        if (err == cudaSuccess)
            err = gpunb_cuda_launch_sorted_boxes(g->d_perm, g->d_jpos, g->d_jvel, g->d_jlo,
                                                 (int)(g->ntiles * GPUNB_CUDA_JWAYS), g->d_spos, g->d_svel,
                                                 g->d_slo, g->d_box, g->stream);
        const cudaError_t end = cudaStreamEndCapture(g->stream, &graph); /* also after a failure */
        if (err == cudaSuccess)
            err = end;
        int updated = 0;
#if CUDART_VERSION >= 12000
        cudaGraphExecUpdateResultInfo info;
        if (err == cudaSuccess && g->order && g->order_npad == npad) {
            updated = cudaGraphExecUpdate(g->order, graph, &info) == cudaSuccess;
            if (!updated)
                (void)cudaGetLastError(); /* not updatable in place: made anew */
        }
#endif
        if (err == cudaSuccess && !updated) {
            if (g->order)
                cudaGraphExecDestroy(g->order);
            g->order = NULL;
            err = cudaGraphInstantiateWithFlags(&g->order, graph, 0);
        }
        if (graph)
            cudaGraphDestroy(graph);
        CHECK(g, err);
        g->order_npad = npad;
        g->order_scale = s->spatial_scale;
    }
    CHECK(g, cudaGraphLaunch(g->order, g->stream));
    return GPUNB_OK;
}

int gpunb_cuda_jset_ready(cuda_state *s, cuda_gpu *g, int sorted_made)
{
    const int npad = (int)(g->ntiles * GPUNB_CUDA_TILE_J);
    g->spatial = spatial_for(s, npad);
    if (!g->spatial)
        return GPUNB_OK;
    if (npad != g->sort_npad || g->sort_age >= SPATIAL_REFRESH) { /* any copies made are replaced */
        const int runs = npad / GPUNB_CUDA_TILE_J;
        int stride = (int)(0.618 * runs) | 1; /* coprime to runs: tile r goes to r * stride mod runs */
        for (;; stride += 2) {
            int a = stride, b = runs;
            while (b) {
                const int t = a % b;
                a = b;
                b = t;
            }
            if (a == 1)
                break;
        }
        g->sort_npad = -1; /* until the new order is made */
        const int st = launch_new_order(s, g, npad, stride);
        if (st != GPUNB_OK)
            return st;
        g->sort_npad = npad;
        g->sort_age = 1;
        return GPUNB_OK;
    }
    g->sort_age++;
    if (!sorted_made)
        CHECK(g, gpunb_cuda_launch_sorted_boxes(g->d_perm, g->d_jpos, g->d_jvel, g->d_jlo,
                                            (int)(g->ntiles * GPUNB_CUDA_JWAYS), g->d_spos, g->d_svel, g->d_slo,
                                            g->d_box, g->stream));
    return GPUNB_OK;
}

/* The j-set split over the GPUs in contiguous whole tiles. */
void gpunb_cuda_split_jset(cuda_state *s, int nj)
{
    const long long ntiles = tiles_of(nj);
    for (int k = 0; k < s->ngpu; k++) {
        cuda_gpu *g = &s->gpu[k];
        const long long t0 = ntiles * k / s->ngpu, t1 = ntiles * (k + 1) / s->ngpu;
        const long long jend = t1 * GPUNB_CUDA_TILE_J < nj ? t1 * GPUNB_CUDA_TILE_J : nj;
        g->j0 = (int)(t0 * GPUNB_CUDA_TILE_J);
        g->nj = jend > g->j0 ? (int)(jend - g->j0) : 0;
        g->ntiles = t1 - t0;
    }
}

static int cuda_send(void *state, int nj, const double *m, const double (*x)[3], const double (*v)[3])
{
    cuda_state *s = state;

    gpunb_cuda_choose_origin(s, nj, m, &x[0][0], &v[0][0], 1, 3);
    s->origin_age = ORIGIN_REFRESH; /* the next predict chooses its own */
    s->moments_made = 0;
    gpunb_cuda_split_jset(s, nj);
    for (int k = 0; k < s->ngpu; k++) {
        cuda_gpu *g = &s->gpu[k];
        if (g->ntiles == 0)
            continue;
        CHECK(g, cudaSetDevice(g->device));
        CHECK(g, cudaStreamSynchronize(g->stream)); /* the staging buffers are free */
        const int npad = (int)(g->ntiles * GPUNB_CUDA_TILE_J);
        const double *o = s->origin, *vo = s->vorigin;
#pragma omp parallel for if (npad > 16384) schedule(static)
        for (int q = 0; q < npad; q++) {
            float4 p = {0, 0, 0, 0}, u = {0, 0, 0, 0}, l = {0, 0, 0, 0};
            if (q < g->nj) { /* else padding: massless, never a neighbour, adds nothing */
                const int j = g->j0 + q;
                nb6_split(x[j][0] - o[0], &p.x, &l.x);
                nb6_split(x[j][1] - o[1], &p.y, &l.y);
                nb6_split(x[j][2] - o[2], &p.z, &l.z);
                p.w = (float)m[j];
                u = (float4){(float)(v[j][0] - vo[0]), (float)(v[j][1] - vo[1]),
                             (float)(v[j][2] - vo[2]), 0.0f};
            }
            g->h_jpos[q] = p;
            g->h_jvel[q] = u;
            g->h_jlo[q] = l;
        }
        const size_t bytes = sizeof(float4) * (size_t)npad;
        CHECK(g, cudaMemcpyAsync(g->d_jpos, g->h_jpos, bytes, cudaMemcpyHostToDevice, g->stream));
        CHECK(g, cudaMemcpyAsync(g->d_jvel, g->h_jvel, bytes, cudaMemcpyHostToDevice, g->stream));
        CHECK(g, cudaMemcpyAsync(g->d_jlo, g->h_jlo, bytes, cudaMemcpyHostToDevice, g->stream));
        int st = gpunb_cuda_jset_ready(s, g, 0);
        if (st != GPUNB_OK)
            return st;
    }
    s->nj = nj;
    return GPUNB_OK;
}

static long long cuda_i_redone(const void *state) { return ((const cuda_state *)state)->redone; }

const gpunb_backend_ops gpunb_backend_cuda = {
    .name = "cuda",
    .open = cuda_open,
    .close = cuda_close,
    .send = cuda_send,
    .regf = gpunb_cuda_regf,
    .alloc_records = gpunb_cuda_resident_alloc_records,
    .free_records = gpunb_cuda_resident_free_records,
    .predict = gpunb_cuda_resident_predict,
    .records_wait = gpunb_cuda_resident_records_wait,
    .regf_start = gpunb_cuda_resident_regf_start,
    .regf_finish = gpunb_cuda_resident_regf_finish,
    .irr_open = gpunb_cuda_irr_open,
    .push = gpunb_cuda_irr_push,
    .firr_start = gpunb_cuda_irr_start,
    .firr_query = gpunb_cuda_irr_query,
    .firr_finish = gpunb_cuda_irr_finish,
    .i_redone = cuda_i_redone,
};

/* GPUPOT on the GPUs: every GPU gets all particles and a share of the k. */
int gpunb_cuda_potential(int n, const double *m, const double (*x)[3], double *pot)
{
    char why[NB6_ERRMSG_LEN];
    int *ids, ngpu = gpunb_cuda_devices_select(&ids, why), st = GPUNB_OK;
    gpunb_cuda_xm *xm;
    gpunb_cuda_xm **d_xm;
    double **d_pot;
    cudaStream_t *stream;

    if (ngpu < 1)
        return gpunb_fail(GPUNB_EDEVICE, "gpunb_potential: %s", why);
    xm = malloc(sizeof *xm * (size_t)n);
    d_xm = calloc((size_t)ngpu, sizeof *d_xm);
    d_pot = calloc((size_t)ngpu, sizeof *d_pot);
    stream = calloc((size_t)ngpu, sizeof *stream);
    if (!xm || !d_xm || !d_pot || !stream) {
        st = gpunb_fail(GPUNB_ERESOURCE, "gpunb_potential: out of host memory for n = %d", n);
        goto done;
    }
    for (int l = 0; l < n; l++)
        xm[l] = (gpunb_cuda_xm){x[l][0], x[l][1], x[l][2], m[l]};

#define POT_CHECK(k, expr)                                                                 \
    do {                                                                                   \
        cudaError_t e_ = (expr);                                                           \
        if (e_ != cudaSuccess) {                                                           \
            st = gpunb_cuda_error(ids[k], #expr, __FILE__, __LINE__, e_);                   \
            goto done;                                                                     \
        }                                                                                  \
    } while (0)
    for (int k = 0; k < ngpu; k++) {
        const int k0 = (int)((long long)n * k / ngpu), k1 = (int)((long long)n * (k + 1) / ngpu);
        POT_CHECK(k, cudaSetDevice(ids[k]));
        POT_CHECK(k, cudaStreamCreateWithFlags(&stream[k], cudaStreamNonBlocking));
        POT_CHECK(k, cudaMalloc((void **)&d_xm[k], sizeof *xm * (size_t)n));
        POT_CHECK(k, cudaMalloc((void **)&d_pot[k], sizeof(double) * (size_t)(k1 - k0 + 1)));
        POT_CHECK(k, cudaMemcpyAsync(d_xm[k], xm, sizeof *xm * (size_t)n, cudaMemcpyHostToDevice,
                                     stream[k]));
        POT_CHECK(k, gpunb_cuda_launch_potential(d_xm[k], n, k0, k1, d_pot[k], stream[k]));
        POT_CHECK(k, cudaMemcpyAsync(pot + k0, d_pot[k], sizeof(double) * (size_t)(k1 - k0),
                                     cudaMemcpyDeviceToHost, stream[k]));
    }
    for (int k = 0; k < ngpu; k++) {
        POT_CHECK(k, cudaSetDevice(ids[k]));
        POT_CHECK(k, cudaStreamSynchronize(stream[k]));
    }
#undef POT_CHECK
done:
    for (int k = 0; ids && d_xm && d_pot && stream && k < ngpu; k++) {
        if (cudaSetDevice(ids[k]) != cudaSuccess)
            continue;
        if (stream[k])
            cudaStreamSynchronize(stream[k]);
        cudaFree(d_xm[k]);
        cudaFree(d_pot[k]);
        if (stream[k])
            cudaStreamDestroy(stream[k]);
    }
    free(xm);
    free(d_xm);
    free(d_pot);
    free(stream);
    free(ids);
    return st;
}
