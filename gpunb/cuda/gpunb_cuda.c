/* gpunb_cuda.c -- CUDA back-end of GPUNB, host side: device state, uploads,
 * the launch sequence of one REGF and the combination of several GPUs.
 *
 * Per REGF call and GPU: one upload of the i data, the force kernel (i on
 * threads, the GPU's j range split into slices over the blocks, as many as
 * the GPU keeps resident, sized from its SM count at open), the reduction
 * kernel (partial forces summed in double) and the list-gathering kernel
 * (sorted lists; for small NI one kernel does both, or with the single
 * launch the force kernel itself after a grid-wide barrier), which write the
 * NI result records and the sorted lists behind them straight into pinned
 * host memory (no download to wait for); then one wait per GPU (for NI <=
 * 256 on the gathering blocks' stamps in mapped memory, with each i copied
 * out as it lands; else a stream synchronisation: stamps from the ~1100
 * blocks of a call of 1000 i, each behind a system-scope fence, made such
 * calls 15-40 us slower on the H100) and the sum over GPUs in double on the
 * host.  The j-set is split over the GPUs in contiguous ranges, so their
 * lists concatenate in ascending order.
 *
 * Extended path (gpunb_predict, gpunb_regf_start/finish): each GPU keeps the
 * predictor records of its j range in double, receives only the records
 * changed since the last predict, and predicts its range into the same float
 * j-set a send leaves (bit-identical to the host's double prediction); the i
 * of a block are gathered from that j-set on the GPU (one GPU) or read back
 * from it and sent (several GPUs, each holding only its range), the launch
 * returns at once and the finish synchronises once.
 *
 * Positions go to the GPU as floats relative to an origin chosen at send or
 * predict (the centre of mass on a coarse grid): the i coordinates, bit-equal to their j
 * entries in double, convert to bit-equal floats, so self stays an exact
 * r = 0 neighbour; and clusters far from the coordinate origin lose nothing.
 * A close pair that is no neighbour (h2 tiny or 0) still loses digits in the
 * float difference of coordinates far from the origin.  The PRECISE kernel
 * (two-float coordinates) avoids that: the fast kernel runs first, its error
 * is bounded per i, and the i whose bound exceeds 1e-6 of their force are
 * redone with the PRECISE kernel (in Plummer runs a handful per million; the
 * close statistics count them).  Only blocks with a tiny neighbour radius,
 * where most i would be redone, go to the PRECISE kernel directly.  (Until
 * session 4 blocks of NI <= 256 did too, which cost 3 of 46 us per NI = 64
 * call at NJ = 128k on the H100.)
 * NB6ACCEL_CUDA_PRECISE=always|never overrides that choice. */
#include "config.h"
#include "gpunb_backend.h"
#include "gpunb_profile.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpunb_cuda_const.h"
#include "gpunb_cuda_devices.h"
#include "gpunb_cuda_kernels.h"

/* Most ints the partial neighbour lists of one launch may take per GPU
 * (chunk * cap); a huge lmax shrinks the chunk of i per launch instead. */
#define LIST_BUDGET_INTS (32L << 20)

/* Up to this NI one kernel does the reduction and the list gathering (the
 * call's latency counts there); larger blocks run the two side by side. */
#define FUSED_REDUCE_NI 256

/* From this NI the host's per-i loops of a call (filling the i, copying
 * results and lists out of the pinned buffer, choosing what to redo) run
 * on the OpenMP threads.  They read what the GPU wrote into host memory,
 * i.e. from DRAM, about 0.5 KiB per i with its list: on one thread about
 * 80 ns per i, most of the 100 us a call of 1024 i spent beside its
 * kernels; a team costs a few us to wake. */
#define HOST_PARALLEL_NI 256

/* Below this many quarter tiles per slice, slices are whole tiles. */
#ifndef QUARTER_SLICES_MIN /* (overridable for the A/B of tests/gpu/ab-flags.sh) */
#define QUARTER_SLICES_MIN 8
#endif

/* Spins of the wait for a small call's stamps between two queries of the
 * stream (each ~1 us of host time; 1024 spins are some 50 us). */
#define POLL_QUERY 1024

enum precise_mode { PRECISE_AUTO, PRECISE_ALWAYS, PRECISE_NEVER };

typedef struct cuda_gpu {
    int device;
    char name[256];
    int sms;          /* multiprocessors                                  */
    int force_blocks; /* force blocks resident at once on the whole GPU   */
    int single_blocks; /* the same for the single-launch kernels; 0: no single launch */
    int pdl;           /* gathering kernel of small calls as a dependent launch */
    gpunb_cuda_inline_i inl; /* the i of a one-tile launch, passed with it */
    /* GPU clock stamps (ns) of a small call, mapped: [0] the force kernel's
     * start, [1 + i] the end of i's gathering; stamped_ni: this call's ni,
     * 0 where the call is timed by the events */
    unsigned long long *h_stamp, *d_stamp;
    int stamped_ni;
    cudaStream_t stream, side;     /* side: the gathering kernel, beside the reduction */
    cudaEvent_t ev_force0, ev_force1; /* timing of the force kernel */
    cudaEvent_t ev_fork, ev_join;     /* side waits for the force, stream for side */
    cudaEvent_t ev_records;           /* the host's records copied (predict) */
    /* this GPU's part of the current j-set: j0 .. j0 + nj - 1 */
    int j0, nj;
    long long ntiles;
    float4 *d_jpos, *d_jvel, *d_jlo, *h_jpos, *h_jvel, *h_jlo; /* capacity rounded to a tile */
    float4 *d_ibuf;          /* 3 * NI_CHUNK: positions, velocities, remainders */
    float *d_partial;        /* per slice and i: NPARTIAL floats               */
    int *d_nbcount;          /* NI_CHUNK, zero between calls                  */
    int *d_sync;             /* the single launch's grid barrier: 2 ints, zero between calls */
    int *d_nblist;           /* chunk * cap unordered entries                  */
    /* results: NI_CHUNK records, then the sorted lists (list_ints ints): i's at i * cap */
    unsigned char *h_out, *d_hout; /* pinned host memory, and its address on the GPU */
    long list_ints;
    int busy;           /* has work in the current call                  */
    /* Resident j-particles (gpunb_predict): the records of this GPU's j range,
     * and a pinned staging area for a few changed ones (records, then their
     * local indices), both for rec_cap records; allocated at the first
     * predict.  Many changed: the range is copied from the host's records. */
    gpunb_cuda_jrec *d_rec;
    unsigned char *d_stage, *h_stage;
    long rec_cap;
    int4 *d_iidx; /* i as j-set members (gpunb_regf_start), NI_CHUNK entries */
    /* Irregular force (one GPU): its own stream, of the highest priority so
     * that its small launches pass a regular force in flight; the list rows
     * (capacity x lmax ints); the indices of changed records and lists, the
     * i and the results in mapped pinned memory (the kernels read and write
     * them there: no copies to order), and the device addresses of the
     * host's records and lists, which the GPU reads the changed ones from.
     * ev_jset: the last prediction has read the records (the irregular
     * stream may overwrite them then); ev_irr_records: its own full copy of
     * the host's records is done; ev_irr: its force is done; ev_push: the
     * copies of the last gpunb_push are done (push_pending: not waited for
     * yet; its kernels read the index arrays). */
    cudaStream_t irr;
    cudaEvent_t ev_jset, ev_irr_records, ev_irr, ev_push;
    int push_pending;
    int jset_unwaited; /* ev_jset recorded since the irregular stream last waited for it */
    int *d_lists;
    int *h_rec_changed, *d_rec_changed, *h_list_changed, *d_list_changed; /* capacity each */
    const void *host_rec, *host_lists, *host_rec_dev, *host_lists_dev;
    int *h_irr_idx, *d_irr_idx;
    double *h_irr_out, *d_irr_out;
    int irr_cap;
    double2 *d_irr_pred; /* every record predicted, for large blocks (rec_cap x 4) */
    /* The pending i's j-set entries read back (fetch_jset_entries), mapped:
     * their local indices, and jpos, jvel, jlo of each. */
    int *h_fetch_idx, *d_fetch_idx;
    float4 *h_fetch, *d_fetch;
    int fetch_cap, fetch_n;
} cuda_gpu;

typedef struct cuda_state {
    int ngpu;
    cuda_gpu *gpu;
    int capacity_pad;
    int nj;
    int dirty; /* a call failed half-way: the counters need a reset */
    enum precise_mode precise_mode;
    /* irregular force: predict every record first (NB6ACCEL_CUDA_IRR_PREDICT) */
    enum { IRR_PREDICT_AUTO, IRR_PREDICT_ALWAYS, IRR_PREDICT_NEVER } irr_predict;
    int min_blocks; /* which compiled force variant (GPUNB_CUDA_FORCE_MIN_BLOCKS[_ALT]) */
    int waves;      /* force blocks of a large-NI call, in units of what the GPU holds at once;
                     * 0: by the GPU's j range (waves_of) */
    int single;     /* one launch for a small call (NB6ACCEL_CUDA_SINGLE_LAUNCH) */
    int pdl;        /* else the gathering kernel as a dependent launch (NB6ACCEL_CUDA_PDL):
                     * 1 or 0 as asked, -1 where each GPU that can (9.0) */
    int inline_i;   /* a one-tile launch takes its i with it (NB6ACCEL_CUDA_INLINE_I) */
    double origin[3], vorigin[3];
    double min_mass; /* smallest non-zero j mass (error bound of the fast kernel) */
    float4 *h_ibuf;  /* pinned, 3 * NI_CHUNK, shared by the GPUs */
    /* the i that the fast kernel may have served short (flags per i of a
     * chunk, then packed for a redo) */
    unsigned char *short_flag;
    double *least_a2; /* precision_bounds of a chunk */
    int *redo, *redo_j; /* redo_j: their j-set indices (resident path) */
    long long redone; /* i redone so far */
    double *r_h2, *r_dtr, (*r_xi)[3], (*r_vi)[3], (*r_acc)[3], (*r_jrk)[3], *r_pot;
    int *r_list;
    long r_list_ints;
    /* Resident j-particles: the nj the GPUs' records were laid out for (-1:
     * none yet, or a failed predict), predicts since the origin was chosen,
     * and the host records and time of the last predict. */
    int rec_nj, origin_age;
    const gpunb_jrecord *rec;
    double t_pred;
    int4 *h_iidx; /* pinned, NI_CHUNK */
    int irr_lmax, irr_ni; /* irregular force: list row length; i of the launch */
    /* The force between regf_start and regf_finish. */
    enum { PENDING_NONE, PENDING_LAUNCHED, PENDING_DEFERRED } p_mode;
    int p_ni, p_lmax, p_limit, p_direct, p_cap;
    /* p_xi, p_vi: not filled; predicted on the host from the records
     * (absolute; only for the precision bound); fetched from the j-set
     * (about the origin, exactly what the force read). */
    enum { PX_NONE, PX_HOST, PX_FETCHED } p_x;
    int *p_jidx;
    double *p_h2, *p_dtr, (*p_xi)[3], (*p_vi)[3];
    /* NB6ACCEL_PROFILE_IRR: the host's seconds in the pieces of the
     * irregular path's copies and launches, and the GPU's time in the
     * copies and the force of each irregular call by its size (bucket b:
     * 2^(b-1) .. 2^b - 1 particles), from timing events on its stream. */
    struct {
        int on;
        double wait_push, records, lists, launch;
        long long pulls, launches;
        cudaEvent_t ev[3]; /* before the copies, after them, after the force */
        long long calls[GPUNB_PROF_BUCKETS];
        double gpu_copy_ms[GPUNB_PROF_BUCKETS], gpu_force_ms[GPUNB_PROF_BUCKETS];
        int bucket;
    } prof;
} cuda_state;

/* Predicts after which the origin is chosen again from the records (an
 * O(N) pass on the host, so not every block; the centre of mass moves
 * little in that time, and any origin near the cluster keeps the digits). */
#define ORIGIN_REFRESH 64

#define CHECK(g, expr) GPUNB_CUDA_CHECK((g)->device, expr)
#define RESULTS_BYTES (sizeof(gpunb_cuda_result) * GPUNB_CUDA_NI_CHUNK)

static long long tiles_of(long long n) { return (n + GPUNB_CUDA_TILE_J - 1) / GPUNB_CUDA_TILE_J; }

static gpunb_cuda_result *results_of(unsigned char *out) { return (gpunb_cuda_result *)out; }

/* The sorted lists start right after the ni records of this call, i's at
 * i * cap (a fixed place: no allocator on the GPU; the kernels write only
 * the entries, straight into this pinned memory, so the gaps cost nothing). */
static int *compact_of(unsigned char *out, int ni)
{
    return (int *)(out + sizeof(gpunb_cuda_result) * (size_t)ni);
}

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

static void free_gpu(cuda_gpu *g)
{
    if (cudaSetDevice(g->device) != cudaSuccess)
        return;
    cudaFree(g->d_jpos);
    cudaFree(g->d_jvel);
    cudaFree(g->d_jlo);
    cudaFreeHost(g->h_jpos);
    cudaFreeHost(g->h_jvel);
    cudaFreeHost(g->h_jlo);
    cudaFree(g->d_ibuf);
    cudaFree(g->d_partial);
    cudaFree(g->d_nbcount);
    cudaFree(g->d_sync);
    cudaFreeHost(g->h_stamp);
    cudaFree(g->d_nblist);
    cudaFreeHost(g->h_out);
    cudaFree(g->d_rec);
    cudaFree(g->d_stage);
    cudaFreeHost(g->h_stage);
    cudaFree(g->d_iidx);
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
    if (g->ev_jset)
        cudaEventDestroy(g->ev_jset);
    if (g->ev_irr_records)
        cudaEventDestroy(g->ev_irr_records);
    if (g->ev_irr)
        cudaEventDestroy(g->ev_irr);
    if (g->ev_push)
        cudaEventDestroy(g->ev_push);
    if (g->irr)
        cudaStreamDestroy(g->irr);
    if (g->ev_force0)
        cudaEventDestroy(g->ev_force0);
    if (g->ev_force1)
        cudaEventDestroy(g->ev_force1);
    if (g->ev_fork)
        cudaEventDestroy(g->ev_fork);
    if (g->ev_join)
        cudaEventDestroy(g->ev_join);
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
    cudaFreeHost(s->h_ibuf);
    cudaFreeHost(s->h_iidx);
    free(s->p_jidx);
    free(s->p_h2);
    free(s->p_dtr);
    free(s->p_xi);
    free(s->p_vi);
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
static int mapped_alloc(cuda_gpu *g, void **host, void **device, size_t bytes)
{
    CHECK(g, cudaHostAlloc(host, bytes, cudaHostAllocPortable | cudaHostAllocMapped));
    CHECK(g, cudaHostGetDevicePointer(device, *host, 0));
    return GPUNB_OK;
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
    CHECK(g, cudaEventCreate(&g->ev_force0));
    CHECK(g, cudaEventCreate(&g->ev_force1));
    CHECK(g, cudaEventCreateWithFlags(&g->ev_fork, cudaEventDisableTiming));
    CHECK(g, cudaEventCreateWithFlags(&g->ev_join, cudaEventDisableTiming));
    CHECK(g, cudaEventCreateWithFlags(&g->ev_records, cudaEventDisableTiming));
    CHECK(g, cudaMalloc((void **)&g->d_jpos, jbytes));
    CHECK(g, cudaMalloc((void **)&g->d_jvel, jbytes));
    CHECK(g, cudaMalloc((void **)&g->d_jlo, jbytes));
    CHECK(g, cudaMalloc((void **)&g->d_ibuf, 3 * sizeof(float4) * GPUNB_CUDA_NI_CHUNK));
    CHECK(g, cudaMalloc((void **)&g->d_iidx, sizeof(int4) * GPUNB_CUDA_NI_CHUNK));
    /* nslices * ni_tiles <= max(waves * force_blocks, ni_tiles) (see launch_gpu) */
    partial_floats = (size_t)(waves * g->force_blocks + GPUNB_CUDA_NI_CHUNK / GPUNB_CUDA_BLOCK_I) *
                     GPUNB_CUDA_BLOCK_I * GPUNB_CUDA_NPARTIAL;
    CHECK(g, cudaMalloc((void **)&g->d_partial, sizeof(float) * partial_floats));
    CHECK(g, cudaMalloc((void **)&g->d_nbcount, sizeof(int) * GPUNB_CUDA_NI_CHUNK));
    CHECK(g, cudaMemset(g->d_nbcount, 0, sizeof(int) * GPUNB_CUDA_NI_CHUNK));
    CHECK(g, cudaMalloc((void **)&g->d_sync, 2 * sizeof(int)));
    CHECK(g, cudaMemset(g->d_sync, 0, 2 * sizeof(int)));
    if ((st = mapped_alloc(g, (void **)&g->h_stamp, (void **)&g->d_stamp,
                           sizeof(unsigned long long) * (1 + FUSED_REDUCE_NI))) ||
        (st = host_alloc(g, (void **)&g->h_jpos, jbytes)) ||
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
    if ((st = host_alloc(&s->gpu[0], (void **)&s->h_ibuf, 3 * sizeof(float4) * chunk)) ||
        (st = host_alloc(&s->gpu[0], (void **)&s->h_iidx, sizeof(int4) * chunk))) {
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
        len += (size_t)snprintf(desc + len, NB6_ERRMSG_LEN - len, "; %d force waves (%d for a GPU's j range up to %d)",
                                GPUNB_CUDA_WAVES, GPUNB_CUDA_WAVES_SHORT,
                                GPUNB_CUDA_WAVES_SHORT_TILES * GPUNB_CUDA_TILE_J);
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
/* m[j * stride], x[j * stride + c], v[j * stride + c]: the j-set's arrays
 * (stride 1 and 3) or the resident records (one stride for all). */
static void choose_origin(cuda_state *s, int nj, const double *m, const double *x, const double *v,
                          size_t mstride, size_t stride)
{
    double mt = 0, sx = 0, sv = 0, cx[3] = {0, 0, 0}, cv[3] = {0, 0, 0}, min_mass = INFINITY;
    for (int pass = 0; pass < 2 && !(mt > 0.0); pass++) { /* pass 1: a massless set, weight 1 */
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
        mt = mt_, sx = sx_, sv = sv_;
        cx[0] = x0, cx[1] = x1, cx[2] = x2, cv[0] = v0, cv[1] = v1, cv[2] = v2;
    }
    double x2 = 0.0, v2 = 0.0;
    for (int c = 0; c < 3; c++) {
        cx[c] /= mt;
        cv[c] /= mt;
        x2 += cx[c] * cx[c];
        v2 += cv[c] * cv[c];
    }
    const double rx = sqrt(fmax(sx / mt - x2, 0.0)), rv = sqrt(fmax(sv / mt - v2, 0.0));
    for (int c = 0; c < 3; c++) {
        s->origin[c] = on_grid(cx[c], rx, 4);
        s->vorigin[c] = on_grid(cv[c], rv, 2);
    }
    s->min_mass = min_mass < INFINITY ? min_mass : 0.0;
}

/* The j-set split over the GPUs in contiguous whole tiles. */
static void split_jset(cuda_state *s, int nj)
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

    choose_origin(s, nj, m, &x[0][0], &v[0][0], 1, 3);
    s->origin_age = ORIGIN_REFRESH; /* the next predict chooses its own */
    split_jset(s, nj);
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
    }
    s->nj = nj;
    return GPUNB_OK;
}

/* Neighbour entries each i may store on GPU g: never more than its j. */
static int cap_of(const cuda_gpu *g, int limit)
{
    int cap = limit < g->nj ? limit : g->nj;
    return cap > 0 ? cap : 1;
}

/* The list buffers grow to chunk * cap ints the first time a call needs more
 * (once per run in NBODY6, whose lmax is fixed). */
static int ensure_lists(cuda_gpu *g, long ints)
{
    const size_t out_bytes = RESULTS_BYTES + sizeof(int) * (size_t)ints;
    if (ints <= g->list_ints)
        return GPUNB_OK;
    CHECK(g, cudaSetDevice(g->device));
    CHECK(g, cudaStreamSynchronize(g->stream));
    cudaFree(g->d_nblist);
    cudaFreeHost(g->h_out);
    g->d_nblist = NULL;
    g->h_out = g->d_hout = NULL;
    g->list_ints = 0;
    CHECK(g, cudaMalloc((void **)&g->d_nblist, sizeof(int) * (size_t)ints));
    CHECK(g, cudaHostAlloc((void **)&g->h_out, out_bytes, cudaHostAllocPortable | cudaHostAllocMapped));
    CHECK(g, cudaHostGetDevicePointer((void **)&g->d_hout, g->h_out, 0));
    g->list_ints = ints;
    return GPUNB_OK;
}

/* Force waves of a large-NI call on GPU g (see GPUNB_CUDA_WAVES). */
static int waves_of(const cuda_state *s, const cuda_gpu *g)
{
    if (s->waves)
        return s->waves;
    return g->ntiles <= GPUNB_CUDA_WAVES_SHORT_TILES ? GPUNB_CUDA_WAVES_SHORT : GPUNB_CUDA_WAVES;
}

/* Enqueue one chunk on GPU g: upload i (coordinates from h_ibuf, or with
 * members set, j-set indices from h_iidx), force, reduce, gather, download. */
static int launch_gpu(cuda_state *s, cuda_gpu *g, int ni, int limit, int precise, int members)
{
    const int ni_tiles = (ni + GPUNB_CUDA_BLOCK_I - 1) / GPUNB_CUDA_BLOCK_I;
    const int ni_pad = ni_tiles * GPUNB_CUDA_BLOCK_I;
    const int cap = cap_of(g, limit);
    /* Slices for one wave of the blocks the GPU holds at once where NI is
     * small (the call's latency counts, and every slice adds to the
     * reduction), for `waves` of them where NI is large: the warp
     * schedulers favour older warps, so the blocks of one SM finish one
     * after another, and with a single wave the SM ends the kernel with too
     * few warps to hide latency; later waves fill the places of the early
     * finishers.  Each slice at least a quarter tile; whole tiles where
     * slices would be only a few quarters long (small NI: a slice that
     * starts or ends inside a tile idles warps, 25 -> 36 us at NI = 64). */
    const int fused = ni <= FUSED_REDUCE_NI; /* one kernel reduces and gathers */
    const int single = fused && s->single && g->single_blocks > 0; /* ... the force kernel itself */
    long long nslices = single ? g->single_blocks / ni_tiles
                               : (long long)(fused ? 1 : waves_of(s, g)) * g->force_blocks / ni_tiles;
    int granule = 1;

    if (nslices < 1)
        nslices = 1;
    if (fused && !single && ni_tiles == 1) {
        /* One i-tile: equal whole numbers of j-tiles per slice, for about
         * ONE_TILE_BLOCKS_PER_SM blocks per SM.  No warp idles at a slice's
         * first or last tile, and the gathering waits for fewer partial sums:
         * NI = 64 took 1-3 us less at NJ = 128k and 1M (session 20); with
         * more i-tiles the same rule was slower. */
        const long long blocks = (long long)GPUNB_CUDA_ONE_TILE_BLOCKS_PER_SM * g->sms;
        const long long want = blocks < g->force_blocks ? blocks : g->force_blocks;
        const long long per_slice = g->ntiles > want ? (g->ntiles + want - 1) / want : 1;
        nslices = g->ntiles > 0 ? (g->ntiles + per_slice - 1) / per_slice : 1;
        granule = GPUNB_CUDA_JWAYS;
    } else if (g->ntiles * GPUNB_CUDA_JWAYS < QUARTER_SLICES_MIN * nslices) {
        granule = GPUNB_CUDA_JWAYS;
        if (nslices > g->ntiles)
            nslices = g->ntiles;
    }
    const long long units = g->ntiles * GPUNB_CUDA_JWAYS / granule;
    CHECK(g, cudaSetDevice(g->device));
    if (s->dirty) {
        /* a failed call's kernels may still run: their stamps must not land in this call's */
        CHECK(g, cudaStreamSynchronize(g->stream));
        CHECK(g, cudaMemsetAsync(g->d_nbcount, 0, sizeof(int) * GPUNB_CUDA_NI_CHUNK, g->stream));
        CHECK(g, cudaMemsetAsync(g->d_sync, 0, 2 * sizeof(int), g->stream));
    }
    const size_t ibytes = members ? sizeof(int4) * (size_t)ni_pad : sizeof(float4) * (size_t)ni_pad * (precise ? 3 : 2);
    const int inline_i = s->inline_i && ni_tiles == 1 && !single;
    if (inline_i)
        memcpy(g->inl.v, members ? (const void *)s->h_iidx : (const void *)s->h_ibuf, ibytes);
    else if (members)
        CHECK(g, cudaMemcpyAsync(g->d_iidx, s->h_iidx, ibytes, cudaMemcpyHostToDevice, g->stream));
    else
        CHECK(g, cudaMemcpyAsync(g->d_ibuf, s->h_ibuf, ibytes, cudaMemcpyHostToDevice, g->stream));
    /* A small call is timed by the GPU's own clock, stamped by the kernels
     * (two event records cost its critical path ~3 us of host time). */
    g->stamped_ni = fused && !single ? ni : 0;
    if (g->stamped_ni) /* (the last call's stamps have all arrived: finish_gpu waited for them) */
        memset(g->h_stamp, 0, sizeof(unsigned long long) * (size_t)(1 + ni));
    gpunb_cuda_force_args a = {
        .precise = precise, .min_blocks = s->min_blocks, .jpos = g->d_jpos, .jvel = g->d_jvel, .jlo = g->d_jlo,
        .ntiles = g->ntiles, .j0 = g->j0, .ipos = g->d_ibuf, .ivel = g->d_ibuf + ni_pad,
        .ilo = g->d_ibuf + 2 * ni_pad, .iidx = members ? g->d_iidx : NULL, .ni_tiles = ni_tiles,
        .nslices = (int)nslices, .granule = granule,
        .slice_units = (int)(units / nslices), .slice_extra = (int)(units % nslices),
        .partial = g->d_partial, .slices_inner = fused, .nbcount = g->d_nbcount,
        .nblist = g->d_nblist, .cap = cap,
        .single = single, .sync = g->d_sync, .ni = ni, .limit = limit,
        .result = results_of(g->d_hout), .compact = compact_of(g->d_hout, ni),
        .stamp_start = g->stamped_ni ? g->d_stamp : NULL,
    };
    /* A programmatic dependent launch needs the gathering kernel right after
     * the force kernel.  The force time of a small call includes the
     * gathering (as it does with the single launch). */
    const int pdl = fused && !single && g->pdl;
    if (!g->stamped_ni)
        CHECK(g, cudaEventRecord(g->ev_force0, g->stream));
    CHECK(g, gpunb_cuda_launch_force(&a, inline_i ? &g->inl : NULL, g->stream));
    if (!g->stamped_ni)
        CHECK(g, cudaEventRecord(g->ev_force1, g->stream));
    if (single) {
        /* nothing more: the force kernel has reduced and gathered */
    } else if (fused) {
        CHECK(g, gpunb_cuda_launch_gather(g->d_nbcount, g->d_nblist, cap, ni, limit,
                                          compact_of(g->d_hout, ni), results_of(g->d_hout), g->d_partial,
                                          (int)nslices, ni_pad, g->d_stamp + 1, pdl, g->stream));
    } else { /* reduction and gathering need only the force kernel: side by side */
        CHECK(g, cudaEventRecord(g->ev_fork, g->stream));
        CHECK(g, cudaStreamWaitEvent(g->side, g->ev_fork, 0));
        CHECK(g, gpunb_cuda_launch_gather(g->d_nbcount, g->d_nblist, cap, ni, limit,
                                          compact_of(g->d_hout, ni), results_of(g->d_hout), NULL, 0, 0, NULL,
                                          0, g->side));
        CHECK(g, cudaEventRecord(g->ev_join, g->side));
        CHECK(g, gpunb_cuda_launch_reduce(g->d_partial, (int)nslices, ni, ni_pad, results_of(g->d_hout),
                                          g->stream));
        CHECK(g, cudaStreamWaitEvent(g->stream, g->ev_join, 0));
    }
    return GPUNB_OK;
}

/* A spinning thread's hint to its core. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("pause");
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Between spins on a small call's stamps: a failed kernel's error, or
 * *done when the stream has ended. */
static int query_stream(cuda_gpu *g, int *done)
{
    const cudaError_t e = cudaStreamQuery(g->stream);
    if (e != cudaErrorNotReady && e != cudaSuccess)
        return gpunb_cuda_error(g->device, "cudaStreamQuery(g->stream)", __FILE__, __LINE__, e);
    *done = e == cudaSuccess;
    return GPUNB_OK;
}

/* Wait for a small call's stamps: the first force block's and every
 * gathering block's, each written after what that block wrote for the host
 * (behind a system-scope fence).  Their arrival, not the stream's end, tells
 * that the results are in: the stream's completion reaches the host some us
 * after the last block (grid exit, the front end's fence and semaphore).
 * Every POLL_QUERY spins the stream is asked too, so that a failed kernel is
 * reported rather than waited for. */
static int wait_stamps(cuda_gpu *g)
{
    const volatile unsigned long long *stamp = g->h_stamp;
    int next = 0, done = 0, st;
    for (unsigned spin = 1;; spin++) {
        while (next <= g->stamped_ni && stamp[next] != 0)
            next++;
        if (next > g->stamped_ni)
            break;
        if (done) /* the stream ended without them: cannot happen unless the GPU lost a write */
            return gpunb_fail(GPUNB_EDEVICE, "gpunb_regf: CUDA device %d finished without stamping i %d of %d",
                              g->device, next, g->stamped_ni);
        if (spin % POLL_QUERY == 0 && (st = query_stream(g, &done)) != GPUNB_OK)
            return st;
        cpu_relax();
    }
    atomic_thread_fence(memory_order_acquire); /* the results are read after the stamps */
    return GPUNB_OK;
}

/* Wait for GPU g: its results are then in h_out. */
static int finish_gpu(cuda_gpu *g, double *t_force)
{
    float ms = 0.0f;
    if (g->stamped_ni) { /* first force block's start to the last gathering block's end */
        const int st = wait_stamps(g);
        if (st != GPUNB_OK)
            return st;
        const volatile unsigned long long *stamp = g->h_stamp;
        unsigned long long end = stamp[0];
        for (int i = 1; i <= g->stamped_ni; i++)
            end = stamp[i] > end ? stamp[i] : end;
        *t_force += 1e-9 * (double)(end - stamp[0]);
        return GPUNB_OK;
    }
    CHECK(g, cudaSetDevice(g->device));
    CHECK(g, cudaStreamSynchronize(g->stream));
    CHECK(g, cudaEventElapsedTime(&ms, g->ev_force0, g->ev_force1));
    *t_force += 1e-3 * ms;
    return GPUNB_OK;
}

/* The i of a chunk as float coordinates about the origin, in h_ibuf: xi, vi
 * are taken about o, vo (the state's origin, or zero where they are relative
 * to it already). */
static void fill_ibuf(cuda_state *s, int ni, const double *h2, const double *dtr,
                      const double (*xi)[3], const double (*vi)[3], const double *o, const double *vo)
{
    const int ni_pad = (ni + GPUNB_CUDA_BLOCK_I - 1) / GPUNB_CUDA_BLOCK_I * GPUNB_CUDA_BLOCK_I;
    float4 *ipos = s->h_ibuf, *ivel = s->h_ibuf + ni_pad, *ilo = s->h_ibuf + 2 * ni_pad;

#pragma omp parallel for if (ni >= HOST_PARALLEL_NI) schedule(static)
    for (int i = 0; i < ni_pad; i++) {
        float4 p = {0, 0, 0, -1.0f}, u = {0, 0, 0, 0}, l = {0, 0, 0, 0}; /* padding: h2 < 0 */
        if (i < ni) {
            nb6_split(xi[i][0] - o[0], &p.x, &l.x);
            nb6_split(xi[i][1] - o[1], &p.y, &l.y);
            nb6_split(xi[i][2] - o[2], &p.z, &l.z);
            p.w = (float)h2[i];
            u = (float4){(float)(vi[i][0] - vo[0]), (float)(vi[i][1] - vo[1]),
                         (float)(vi[i][2] - vo[2]), (float)dtr[i]};
        }
        ipos[i] = p;
        ivel[i] = u;
        ilo[i] = l;
    }
}

/* The i of a chunk as j-set members, in h_iidx (one GPU: local = global). */
static void fill_iidx(cuda_state *s, int ni, const int *j_index, const double *h2, const double *dtr)
{
    const int ni_pad = (ni + GPUNB_CUDA_BLOCK_I - 1) / GPUNB_CUDA_BLOCK_I * GPUNB_CUDA_BLOCK_I;
#pragma omp parallel for if (ni >= HOST_PARALLEL_NI) schedule(static)
    for (int i = 0; i < ni_pad; i++) {
        int4 d = {-1, 0, 0, 0};
        if (i < ni) {
            float fh = (float)h2[i], fd = (float)dtr[i];
            d.x = j_index[i];
            memcpy(&d.y, &fh, sizeof fh);
            memcpy(&d.z, &fd, sizeof fd);
        }
        s->h_iidx[i] = d;
    }
}

/* Enqueue a chunk of at most NI_CHUNK i (filled in by fill_ibuf or
 * fill_iidx) on every GPU that holds j; returns without waiting. */
static int chunk_launch(cuda_state *s, int ni, int limit, int precise, int members)
{
    int st;
    for (int k = 0; k < s->ngpu; k++) {
        cuda_gpu *g = &s->gpu[k];
        g->busy = g->ntiles > 0;
        if (g->busy && (st = launch_gpu(s, g, ni, limit, precise, members)) != GPUNB_OK)
            return st;
    }
    return GPUNB_OK;
}

/* The least |acc|^2 at which the fast kernel's result for i is good to
 * 1e-6 of its force.  A float coordinate at distance R from the origin is off
 * by up to 2^-24 R, so a pair's dx by ~1e-7 (R_i + R_j), and its term m dx /
 * r^3 by ~4e-7 m (2 R_i / r^3 + 1 / r^2); a pair that is no neighbour has
 * r^2 >= m h2, so the worst term is that of the lightest j.  -1: good at any
 * force (no mass, no force); NaN: never (h2 <= 0, no neighbours: close
 * pairs are in the sums).  Only the inputs count, so it is found while the
 * GPU works. */
static double least_good_a2(const cuda_state *s, double h2, const double xi[3], const double *o)
{
    double r2 = 0;
    if (s->min_mass <= 0.0)
        return -1.0;
    if (h2 <= 0.0)
        return NAN;
    for (int c = 0; c < 3; c++)
        r2 += (xi[c] - o[c]) * (xi[c] - o[c]);
    const double mh2 = s->min_mass * h2;
    const double least = 0.4 * s->min_mass * (2.0 * sqrt(r2) / (mh2 * sqrt(mh2)) + 1.0 / mh2);
    return least * least;
}

/* least_good_a2 of the ni i of a chunk, into s->least_a2. */
static void precision_bounds(cuda_state *s, int ni, const double *h2, const double (*xi)[3], const double *o)
{
#pragma omp parallel for if (ni >= HOST_PARALLEL_NI) schedule(static)
    for (int i = 0; i < ni; i++)
        s->least_a2[i] = least_good_a2(s, h2[i], xi[i], o);
}

/* Whether a result of force acc may be off by more than 1e-6 of it. */
static int short_of_precision(double least_a2, const double acc[3])
{
    const double a2 = acc[0] * acc[0] + acc[1] * acc[1] + acc[2] * acc[2];
    return !(least_a2 < 0.0) && !(a2 >= least_a2);
}

/* i's results of every busy GPU, combined in double (the lists of GPU k
 * before those of GPU k + 1), written as gpunb_regf does. */
static void collect_one(const cuda_state *s, int i, int ni, double (*acc)[3], double (*jrk)[3], double *pot,
                        int lmax, int limit, int *list)
{
    double a[3] = {0, 0, 0}, jk[3] = {0, 0, 0}, phi = 0.0;
    long count = 0;
    int *col = list + (size_t)i * (size_t)lmax;
    for (int k = 0; k < s->ngpu; k++) {
        const cuda_gpu *g = &s->gpu[k];
        if (!g->busy)
            continue;
        const gpunb_cuda_result *r = results_of(g->h_out) + i;
        for (int c = 0; c < 3; c++) {
            a[c] += r->acc[c];
            jk[c] += r->jrk[c];
        }
        phi += r->pot;
        count += r->count < 0 ? -(long)r->count : r->count;
    }
    if (count > limit) {
        col[0] = (int)-count;
    } else {
        int n = 0;
        col[0] = (int)count;
        for (int k = 0; k < s->ngpu; k++) {
            const cuda_gpu *g = &s->gpu[k];
            const gpunb_cuda_result *r = results_of(g->h_out) + i;
            if (!g->busy || r->count <= 0)
                continue;
            memcpy(col + 1 + n, compact_of(g->h_out, ni) + r->off, sizeof(int) * (size_t)r->count);
            n += r->count;
        }
    }
    for (int c = 0; c < 3; c++) {
        acc[i][c] = a[c];
        jrk[i][c] = jk[c];
    }
    if (pot)
        pot[i] = phi;
}

/* collect_one, and with flag (the chunk's precision_bounds are in
 * least_a2) whether redo_precise must redo i: in the same pass, since a
 * pass of its own over a large call's i cost a team's start and end (5-12
 * us at NI = 512-2048 on the H100 box). */
static void collect_flag(cuda_state *s, int i, int ni, double (*acc)[3], double (*jrk)[3], double *pot,
                         int lmax, int limit, int *list, int flag)
{
    collect_one(s, i, ni, acc, jrk, pot, lmax, limit, list);
    if (flag)
        s->short_flag[i] = list[(size_t)i * (size_t)lmax] >= 0 && short_of_precision(s->least_a2[i], acc[i]);
}

/* A stamped call on one GPU, written out i by i as the gathering blocks
 * stamp them: the host copies the first i's results (some 60 ns each) while
 * the GPU still gathers the others.  Then finish_gpu finds every stamp in. */
static int collect_as_stamped(cuda_state *s, cuda_gpu *g, int ni, double (*acc)[3], double (*jrk)[3],
                              double *pot, int lmax, int limit, int *list, int flag, double *t_force)
{
    const volatile unsigned long long *stamp = g->h_stamp + 1;
    unsigned char copied[FUSED_REDUCE_NI] = {0};
    int left = ni, done = 0, st;
    for (unsigned spin = 1; left > 0 && !done; spin++) {
        for (int i = 0; i < ni; i++)
            if (!copied[i] && stamp[i] != 0) {
                atomic_thread_fence(memory_order_acquire); /* i's results are read after its stamp */
                collect_flag(s, i, ni, acc, jrk, pot, lmax, limit, list, flag);
                copied[i] = 1;
                left--;
            }
        /* done: the rest are in, or finish_gpu reports them lost */
        if (left > 0 && spin % POLL_QUERY == 0 && (st = query_stream(g, &done)) != GPUNB_OK)
            return st;
        if (left > 0)
            cpu_relax();
    }
    if ((st = finish_gpu(g, t_force)) != GPUNB_OK)
        return st;
    for (int i = 0; i < ni; i++)
        if (!copied[i])
            collect_flag(s, i, ni, acc, jrk, pot, lmax, limit, list, flag);
    return GPUNB_OK;
}

/* Wait for the chunk of chunk_launch and write it as gpunb_regf does; with
 * flag (its precision_bounds are in least_a2), also the redo flags. */
static int chunk_collect(cuda_state *s, int ni, double (*acc)[3], double (*jrk)[3], double *pot,
                         int lmax, int limit, int *list, int flag, double *t_force)
{
    double tf = 0.0;
    int st;

    if (s->ngpu == 1 && s->gpu[0].busy && s->gpu[0].stamped_ni == ni && ni < HOST_PARALLEL_NI)
        return collect_as_stamped(s, &s->gpu[0], ni, acc, jrk, pot, lmax, limit, list, flag, t_force);
    for (int k = 0; k < s->ngpu; k++) {
        double t = 0.0; /* GPUs run side by side: the slowest one counts */
        if (s->gpu[k].busy && (st = finish_gpu(&s->gpu[k], &t)) != GPUNB_OK)
            return st;
        tf = t > tf ? t : tf;
    }
    *t_force += tf;

#pragma omp parallel for if (ni >= HOST_PARALLEL_NI) schedule(static)
    for (int i = 0; i < ni; i++)
        collect_flag(s, i, ni, acc, jrk, pot, lmax, limit, list, flag);
    return GPUNB_OK;
}

/* One chunk of at most NI_CHUNK i with coordinates from the host (about o,
 * vo: see fill_ibuf); with bounds, also their precision_bounds, found while
 * the GPU works. */
static int regf_chunk(cuda_state *s, int ni, const double *h2, const double *dtr,
                      const double (*xi)[3], const double (*vi)[3], const double *o, const double *vo,
                      double (*acc)[3], double (*jrk)[3], double *pot, int lmax, int limit, int *list,
                      int precise, int bounds, double *t_force)
{
    int st;
    fill_ibuf(s, ni, h2, dtr, xi, vi, o, vo);
    if ((st = chunk_launch(s, ni, limit, precise, 0)) != GPUNB_OK)
        return st;
    if (bounds)
        precision_bounds(s, ni, h2, xi, o);
    return chunk_collect(s, ni, acc, jrk, pot, lmax, limit, list, bounds, t_force);
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
    if ((st = mapped_alloc(g, (void **)&g->h_fetch_idx, (void **)&g->d_fetch_idx, sizeof(int) * (size_t)n)) ||
        (st = mapped_alloc(g, (void **)&g->h_fetch, (void **)&g->d_fetch, 3 * sizeof(float4) * (size_t)n)))
        return st;
    g->fetch_cap = n;
    return GPUNB_OK;
}

/* Entries j[0..n-1] of the j-set as the last gpunb_predict made them, read
 * back from what the force kernels read, into x, v about the origin.  Not
 * predicted again from the host's records: those may have changed since
 * (gpunb_set_jparticle takes effect at the next predict), and an i taken
 * from them would sit elsewhere than its j entry.  hi + lo of a float pair
 * is exact in double, so fill_ibuf (with a zero origin) splits the
 * coordinates back into the same floats. */
static int fetch_jset_entries(cuda_state *s, int n, const int *j, double (*x)[3], double (*v)[3])
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

static const double zero3[3] = {0.0, 0.0, 0.0};

/* Redo, with the PRECISE kernel, the i of a chunk that the fast kernel may
 * have served short: packed into the state's buffers, then scattered back.
 * xi, vi about o, vo decide which; with j_index (the i are j-set members
 * whose xi may be only near their entries, see predict_pending_on_host) the
 * redone i are read back from the j-set.  flags_ready: the collection has
 * set short_flag already (collect_flag). */
static int redo_precise(cuda_state *s, int ni, const double *h2, const double *dtr,
                        const double (*xi)[3], const double (*vi)[3], const double *o, const double *vo,
                        const int *j_index, double (*acc)[3], double (*jrk)[3], double *pot, int lmax,
                        int limit, int *list, int flags_ready, double *t_force)
{
    int n = 0, st;
    if (!flags_ready) { /* bound and flag in one pass: a team's start costs more than either */
#pragma omp parallel for if (ni >= HOST_PARALLEL_NI) schedule(static)
        for (int i = 0; i < ni; i++)
            s->short_flag[i] = list[(size_t)i * (size_t)lmax] >= 0 &&
                               short_of_precision(least_good_a2(s, h2[i], xi[i], o), acc[i]);
    }
    for (int i = 0; i < ni; i++)
        if (s->short_flag[i])
            s->redo[n++] = i;
    if (n == 0)
        return GPUNB_OK;
    s->redone += n;
    if ((long)n * lmax > s->r_list_ints) {
        free(s->r_list);
        s->r_list_ints = 0;
        if (!(s->r_list = malloc(sizeof(int) * (size_t)n * (size_t)lmax)))
            return gpunb_fail(GPUNB_ERESOURCE, "gpunb_regf: out of host memory (%d x lmax = %d)", n, lmax);
        s->r_list_ints = (long)n * lmax;
    }
    for (int q = 0; q < n; q++) {
        const int i = s->redo[q];
        s->r_h2[q] = h2[i];
        s->r_dtr[q] = dtr[i];
        memcpy(s->r_xi[q], xi[i], sizeof s->r_xi[q]);
        memcpy(s->r_vi[q], vi[i], sizeof s->r_vi[q]);
        if (j_index)
            s->redo_j[q] = j_index[i];
    }
    if (j_index) {
        if ((st = fetch_jset_entries(s, n, s->redo_j, s->r_xi, s->r_vi)) != GPUNB_OK)
            return st;
        o = vo = zero3;
    }
    st = regf_chunk(s, n, s->r_h2, s->r_dtr, (const double(*)[3])s->r_xi, (const double(*)[3])s->r_vi, o, vo,
                    s->r_acc, s->r_jrk, s->r_pot, lmax, limit, s->r_list, 1, 0, t_force);
    if (st != GPUNB_OK)
        return st;
    for (int q = 0; q < n; q++) {
        const int i = s->redo[q];
        int *col = list + (size_t)i * (size_t)lmax;
        const int *src = s->r_list + (size_t)q * (size_t)lmax;
        memcpy(acc[i], s->r_acc[q], sizeof acc[i]);
        memcpy(jrk[i], s->r_jrk[q], sizeof jrk[i]);
        if (pot)
            pot[i] = s->r_pot[q];
        memcpy(col, src, sizeof(int) * (size_t)(src[0] >= 0 ? 1 + src[0] : 1));
    }
    return GPUNB_OK;
}

/* The i per launch (at most NI_CHUNK, fewer where lmax is huge) and list
 * buffers for that many on every GPU. */
static int prepare_lists(cuda_state *s, int limit, int *chunk_out)
{
    int chunk = GPUNB_CUDA_NI_CHUNK, cap_max = 1, st;
    for (int k = 0; k < s->ngpu; k++)
        if (s->gpu[k].ntiles > 0 && cap_of(&s->gpu[k], limit) > cap_max)
            cap_max = cap_of(&s->gpu[k], limit);
    while (chunk > GPUNB_CUDA_BLOCK_I && (long)chunk * cap_max > LIST_BUDGET_INTS)
        chunk /= 2;
    for (int k = 0; k < s->ngpu; k++)
        if (s->gpu[k].ntiles > 0 &&
            (st = ensure_lists(&s->gpu[k], (long)chunk * cap_of(&s->gpu[k], limit))) != GPUNB_OK)
            return st;
    *chunk_out = chunk;
    return GPUNB_OK;
}

/* Whether a chunk goes to the PRECISE kernel directly (see the top). */
static int precise_directly(const cuda_state *s, int n, const double *h2)
{
    int direct = s->precise_mode == PRECISE_ALWAYS;
    for (int i = 0; i < n && !direct; i++) /* the fast kernel's r2 floor */
        direct = h2[i] * s->min_mass <= GPUNB_CUDA_H2M_SAFE;
    return direct;
}

/* The regular force of ni i with coordinates from the host, about o, vo (see
 * fill_ibuf), chunk after chunk. */
static int regf_all(cuda_state *s, int ni, const double *h2, const double *dtr, const double (*xi)[3],
                    const double (*vi)[3], const double *o, const double *vo, double (*acc)[3],
                    double (*jrk)[3], double *pot, int lmax, int limit, int *list, double *t_force,
                    double *t_gather)
{
    const double t0 = nb6_clock();
    int chunk, st;

    if ((st = prepare_lists(s, limit, &chunk)) != GPUNB_OK)
        return st;
    *t_force = 0.0;
    for (int i0 = 0; i0 < ni && st == GPUNB_OK; i0 += chunk) {
        const int n = ni - i0 < chunk ? ni - i0 : chunk;
        const int direct = precise_directly(s, n, h2 + i0);
        const int redo = !direct && s->precise_mode == PRECISE_AUTO;
        int *cols = list + (size_t)i0 * (size_t)lmax;
        st = regf_chunk(s, n, h2 + i0, dtr + i0, xi + i0, vi + i0, o, vo, acc + i0, jrk + i0,
                        pot ? pot + i0 : NULL, lmax, limit, cols, direct, redo, t_force);
        if (st == GPUNB_OK && redo)
            st = redo_precise(s, n, h2 + i0, dtr + i0, xi + i0, vi + i0, o, vo, NULL, acc + i0, jrk + i0,
                              pot ? pot + i0 : NULL, lmax, limit, cols, 1, t_force);
    }
    s->dirty = st != GPUNB_OK;
    *t_gather = nb6_clock() - t0 - *t_force;
    if (*t_gather < 0.0)
        *t_gather = 0.0;
    return st;
}

static int cuda_regf(void *state, int ni, const double *h2, const double *dtr,
                     const double (*xi)[3], const double (*vi)[3], double (*acc)[3],
                     double (*jrk)[3], double *pot, int lmax, int limit, int *list,
                     double *t_force, double *t_gather)
{
    cuda_state *s = state;
    return regf_all(s, ni, h2, dtr, xi, vi, s->origin, s->vorigin, acc, jrk, pot, lmax, limit, list, t_force,
                    t_gather);
}

/* ---- Resident j-particles and the asynchronous force ------------------- */

/* Records and staging for this GPU's largest share of the capacity. */
static int ensure_records(cuda_state *s, cuda_gpu *g)
{
    if (g->d_rec)
        return GPUNB_OK;
    const long cap_tiles = tiles_of(s->capacity_pad);
    const long share = (cap_tiles + s->ngpu - 1) / s->ngpu * GPUNB_CUDA_TILE_J;
    const size_t stage = (sizeof(gpunb_cuda_jrec) + sizeof(int)) * (size_t)share;
    CHECK(g, cudaMalloc((void **)&g->d_rec, sizeof(gpunb_cuda_jrec) * (size_t)share));
    CHECK(g, cudaMalloc((void **)&g->d_stage, stage));
    CHECK(g, cudaHostAlloc((void **)&g->h_stage, stage, cudaHostAllocPortable));
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
static void *cuda_alloc_records(void *state, size_t bytes)
{
    void *p = NULL;
    (void)state;
    if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable | cudaHostAllocMapped) != cudaSuccess)
        return NULL;
    memset(p, 0, bytes);
    return p;
}

static void cuda_free_records(void *state, void *records)
{
    (void)state;
    cudaFreeHost(records);
}

static int cuda_records_wait(void *state)
{
    cuda_state *s = state;
    for (int k = 0; k < s->ngpu; k++) {
        cuda_gpu *g = &s->gpu[k];
        CHECK(g, cudaSetDevice(g->device));
        CHECK(g, cudaEventSynchronize(g->ev_records));
        if (g->ev_irr_records)
            CHECK(g, cudaEventSynchronize(g->ev_irr_records));
        if (g->ev_push)
            CHECK(g, cudaEventSynchronize(g->ev_push));
    }
    return GPUNB_OK;
}

/* Upload the changed records of GPU g's range (the whole range when
 * dirty is NULL), then predict its whole range into its float j-set;
 * asynchronous: ev_records tells when the host's records have been read. */
static int predict_gpu(cuda_state *s, cuda_gpu *g, double t, const gpunb_jrecord *rec, int ndirty,
                       const int *dirty)
{
    gpunb_cuda_jrec *staged;
    int st, n = 0;

    CHECK(g, cudaSetDevice(g->device));
    if ((st = ensure_records(s, g)) != GPUNB_OK)
        return st;
    if (g->ev_push) /* a push may still write records */
        CHECK(g, cudaStreamWaitEvent(g->stream, g->ev_push, 0));
    if (!dirty) {
        /* In a Plummer run most of N changes between two regular blocks:
         * a DMA of the whole range costs the host nothing. */
        if (g->nj > 0)
            CHECK(g, cudaMemcpyAsync(g->d_rec, rec + g->j0, sizeof(gpunb_cuda_jrec) * (size_t)g->nj,
                                     cudaMemcpyHostToDevice, g->stream));
    } else {
        CHECK(g, cudaStreamSynchronize(g->stream)); /* the staging area is free */
        staged = (gpunb_cuda_jrec *)g->h_stage;
        /* dirty is in no order: this GPU's records are those in its range. */
        const int j0 = g->j0, j1 = g->j0 + g->nj;
        for (int q = 0; q < ndirty; q++)
            n += dirty[q] >= j0 && dirty[q] < j1;
        int *index = (int *)(staged + n);
        if (n == ndirty) {
            for (int q = 0; q < n; q++)
                index[q] = dirty[q] - j0;
        } else {
            n = 0;
            for (int q = 0; q < ndirty; q++)
                if (dirty[q] >= j0 && dirty[q] < j1)
                    index[n++] = dirty[q] - j0;
        }
#pragma omp parallel for if (n > 4096) schedule(static)
        for (int q = 0; q < n; q++)
            memcpy(&staged[q], &rec[j0 + index[q]], sizeof staged[q]);
        if (n > 0) {
            CHECK(g, cudaMemcpyAsync(g->d_stage, staged, (sizeof(gpunb_cuda_jrec) + sizeof(int)) * (size_t)n,
                                     cudaMemcpyHostToDevice, g->stream));
            CHECK(g, gpunb_cuda_launch_scatter((const gpunb_cuda_jrec *)g->d_stage,
                                               (const int *)((gpunb_cuda_jrec *)g->d_stage + n), n, g->d_rec,
                                               g->stream));
        }
    }
    CHECK(g, cudaEventRecord(g->ev_records, g->stream));
    gpunb_cuda_origin o;
    memcpy(o.x, s->origin, sizeof o.x);
    memcpy(o.v, s->vorigin, sizeof o.v);
    CHECK(g, gpunb_cuda_launch_predict(g->d_rec, g->nj, (int)(g->ntiles * GPUNB_CUDA_TILE_J), t, &o,
                                       g->d_jpos, g->d_jvel, g->d_jlo, g->stream));
    if (g->ev_jset) {
        CHECK(g, cudaEventRecord(g->ev_jset, g->stream));
        g->jset_unwaited = 1;
    }
    return GPUNB_OK;
}

/* The GPUs keep the records of their j ranges (copied in full when the
 * split changes or many changed, else only the listed ones) and predict
 * them themselves: no host prediction, no upload of the j-set. */
static int cuda_predict(void *state, int nj, double t, const gpunb_jrecord *rec, int ndirty,
                        const int *dirty, double lightest)
{
    cuda_state *s = state;
    int st;

    const int full = s->rec_nj != nj;
    if (full) /* a new split (or a failed call): every record to its GPU */
        dirty = NULL;
    s->rec_nj = -1; /* until this call has succeeded */
    if (full || s->origin_age >= ORIGIN_REFRESH) {
        const size_t stride = sizeof(gpunb_jrecord) / sizeof(double);
        choose_origin(s, nj, &rec[0].m, &rec[0].x0[0], &rec[0].v0[0], stride, stride);
        s->origin_age = 0;
    }
    /* a lighter particle tightens the error bound */
    if (lightest > 0.0 && (s->min_mass == 0.0 || lightest < s->min_mass))
        s->min_mass = lightest;
    split_jset(s, nj);
    for (int k = 0; k < s->ngpu; k++)
        if (s->gpu[k].ntiles > 0 &&
            (st = predict_gpu(s, &s->gpu[k], t, rec, ndirty, dirty)) != GPUNB_OK)
            return st;
    s->nj = nj;
    s->rec_nj = nj;
    s->origin_age++;
    s->rec = rec;
    s->t_pred = t;
    return GPUNB_OK;
}

/* The pending i predicted on the host from the records as they are now:
 * where a record changed after gpunb_predict this is not where its j entry
 * is, so it serves only the precision bound of redo_precise.  On the team:
 * one scattered record per i, and a serial pass over the 7-16k i of a
 * large block took some 0.2-0.4 ms of every gpunb_regf_finish. */
static void predict_pending_on_host(cuda_state *s)
{
    const double t = s->t_pred;
#pragma omp parallel for if (s->p_ni >= HOST_PARALLEL_NI) schedule(static)
    for (int i = 0; i < s->p_ni; i++) {
        const gpunb_jrecord *r = &s->rec[s->p_jidx[i]];
        const double dt = t - r->t0;
        for (int k = 0; k < 3; k++) {
            const double a2 = r->f_half[k], j6 = r->fdot_sixth[k];
            s->p_xi[i][k] = r->x0[k] + dt * (r->v0[k] + dt * (a2 + dt * j6));
            s->p_vi[i][k] = r->v0[k] + 2.0 * dt * (a2 + 1.5 * dt * j6);
        }
    }
    s->p_x = PX_HOST;
}

static int grow_pending(cuda_state *s, int ni)
{
    if (ni <= s->p_cap)
        return GPUNB_OK;
    free(s->p_jidx);
    free(s->p_h2);
    free(s->p_dtr);
    free(s->p_xi);
    free(s->p_vi);
    s->p_jidx = malloc(sizeof(int) * (size_t)ni);
    s->p_h2 = malloc(sizeof(double) * (size_t)ni);
    s->p_dtr = malloc(sizeof(double) * (size_t)ni);
    s->p_xi = malloc(sizeof(double[3]) * (size_t)ni);
    s->p_vi = malloc(sizeof(double[3]) * (size_t)ni);
    s->p_cap = ni;
    if (!s->p_jidx || !s->p_h2 || !s->p_dtr || !s->p_xi || !s->p_vi) {
        s->p_cap = 0;
        return gpunb_fail(GPUNB_ERESOURCE, "gpunb_regf_start: out of host memory for ni = %d", ni);
    }
    return GPUNB_OK;
}

/* One GPU: the i are gathered from the predicted j-set on the GPU (only
 * their indices, h2 and dtr cross PCIe).  Several GPUs: the i are read back
 * from the j-set and sent, since each GPU holds only its range.  A block
 * larger than one launch (NI_CHUNK) is computed at finish, its i read back
 * from the j-set likewise. */
static int cuda_regf_start(void *state, int ni, const int *j_index, const double *h2, const double *dtr,
                           int lmax, int limit)
{
    cuda_state *s = state;
    int chunk, st;

    if ((st = grow_pending(s, ni)) != GPUNB_OK || (st = prepare_lists(s, limit, &chunk)) != GPUNB_OK)
        return st;
    memcpy(s->p_jidx, j_index, sizeof(int) * (size_t)ni);
    memcpy(s->p_h2, h2, sizeof(double) * (size_t)ni);
    memcpy(s->p_dtr, dtr, sizeof(double) * (size_t)ni);
    s->p_ni = ni;
    s->p_lmax = lmax;
    s->p_limit = limit;
    s->p_x = PX_NONE;
    if (ni > chunk) {
        s->p_mode = PENDING_DEFERRED;
        return GPUNB_OK;
    }
    s->p_direct = precise_directly(s, ni, h2);
    if (s->ngpu == 1) {
        fill_iidx(s, ni, j_index, h2, dtr);
        st = chunk_launch(s, ni, limit, s->p_direct, 1);
    } else if ((st = fetch_jset_entries(s, ni, j_index, s->p_xi, s->p_vi)) == GPUNB_OK) {
        s->p_x = PX_FETCHED;
        fill_ibuf(s, ni, h2, dtr, (const double(*)[3])s->p_xi, (const double(*)[3])s->p_vi, zero3, zero3);
        st = chunk_launch(s, ni, limit, s->p_direct, 0);
    }
    s->dirty |= st != GPUNB_OK;
    s->p_mode = st == GPUNB_OK ? PENDING_LAUNCHED : PENDING_NONE;
    return st;
}

static int cuda_regf_finish(void *state, double (*acc)[3], double (*jrk)[3], double *pot, int *list,
                            double *t_force, double *t_gather)
{
    cuda_state *s = state;
    const int mode = s->p_mode, ni = s->p_ni, lmax = s->p_lmax, limit = s->p_limit;
    int st;

    s->p_mode = PENDING_NONE;
    if (mode == PENDING_DEFERRED) {
        if ((st = fetch_jset_entries(s, ni, s->p_jidx, s->p_xi, s->p_vi)) != GPUNB_OK)
            return st;
        return regf_all(s, ni, s->p_h2, s->p_dtr, (const double(*)[3])s->p_xi, (const double(*)[3])s->p_vi, zero3,
                        zero3, acc, jrk, pot, lmax, limit, list, t_force, t_gather);
    }
    *t_force = 0.0;
    st = chunk_collect(s, ni, acc, jrk, pot, lmax, limit, list, 0, t_force);
    const double t0 = nb6_clock();
    if (st == GPUNB_OK && !s->p_direct && s->precise_mode == PRECISE_AUTO) {
        const int fetched = s->p_x == PX_FETCHED;
        if (s->p_x == PX_NONE)
            predict_pending_on_host(s);
        st = redo_precise(s, ni, s->p_h2, s->p_dtr, (const double(*)[3])s->p_xi, (const double(*)[3])s->p_vi,
                          fetched ? zero3 : s->origin, fetched ? zero3 : s->vorigin, fetched ? NULL : s->p_jidx,
                          acc, jrk, pot, lmax, limit, list, 0, t_force);
    }
    s->dirty = st != GPUNB_OK;
    *t_gather = nb6_clock() - t0;
    return st;
}

/* ---- Irregular force over neighbour lists (one GPU) -------------------- */

static int cuda_irr_open(void *state, int capacity, int lmax, int *on_device)
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
    if ((st = ensure_records(s, g)) != GPUNB_OK)
        return st;
    CHECK(g, cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CHECK(g, cudaStreamCreateWithPriority(&g->irr, cudaStreamNonBlocking, greatest));
    CHECK(g, cudaEventCreateWithFlags(&g->ev_jset, cudaEventDisableTiming));
    CHECK(g, cudaEventCreateWithFlags(&g->ev_irr_records, cudaEventDisableTiming));
    CHECK(g, cudaEventCreateWithFlags(&g->ev_irr, cudaEventDisableTiming));
    CHECK(g, cudaEventCreateWithFlags(&g->ev_push, cudaEventDisableTiming));
    const size_t rows = (size_t)g->rec_cap * (size_t)lmax;
    CHECK(g, cudaMalloc((void **)&g->d_lists, sizeof(int) * rows));
    CHECK(g, cudaMemset(g->d_lists, 0, sizeof(int) * rows)); /* every list empty, as on the host */
    CHECK(g, cudaMalloc((void **)&g->d_irr_pred, 4 * sizeof(double2) * (size_t)g->rec_cap));
    if ((st = mapped_alloc(g, (void **)&g->h_rec_changed, (void **)&g->d_rec_changed,
                           sizeof(int) * (size_t)g->rec_cap)) != GPUNB_OK ||
        (st = mapped_alloc(g, (void **)&g->h_list_changed, (void **)&g->d_list_changed,
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
    if ((st = mapped_alloc(g, (void **)&g->h_irr_idx, (void **)&g->d_irr_idx, sizeof(int) * (size_t)cap)) ||
        (st = mapped_alloc(g, (void **)&g->h_irr_out, (void **)&g->d_irr_out, sizeof(double) * 6 * (size_t)cap)))
        return st;
    g->irr_cap = cap;
    return GPUNB_OK;
}

/* The device address of pinned host memory, asked once per array. */
static int device_address(cuda_gpu *g, const void *host, const void **cached_host, const void **cached_dev)
{
    if (*cached_host != host) {
        void *dev = NULL;
        CHECK(g, cudaHostGetDevicePointer(&dev, (void *)host, 0));
        *cached_host = host;
        *cached_dev = dev;
    }
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
    if (g->jset_unwaited) {
        CHECK(g, cudaStreamWaitEvent(g->irr, g->ev_jset, 0));
        g->jset_unwaited = 0;
    }
    if (ndirty > 0 && !dirty) {
        CHECK(g, cudaMemcpyAsync(g->d_rec, rec, sizeof(gpunb_cuda_jrec) * (size_t)nrec, cudaMemcpyHostToDevice,
                                 g->irr));
        CHECK(g, cudaEventRecord(g->ev_irr_records, g->irr));
    } else if (ndirty > 0) {
        if ((st = device_address(g, rec, &g->host_rec, &g->host_rec_dev)) != GPUNB_OK)
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
        if ((st = device_address(g, lists, &g->host_lists, &g->host_lists_dev)) != GPUNB_OK)
            return st;
        memcpy(g->h_list_changed, list_index, sizeof(int) * (size_t)nlists);
        CHECK(g, gpunb_cuda_launch_list_pull((const int *)g->host_lists_dev, s->irr_lmax, g->d_list_changed, nlists,
                                             g->d_lists, g->irr));
    }
    if (s->prof.on)
        s->prof.lists += nb6_clock() - t;
    return GPUNB_OK;
}

static int cuda_push(void *state, const gpunb_jrecord *rec, int nrec, int ndirty, const int *dirty, const int *lists,
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
    return GPUNB_OK;
}

static int cuda_firr_start(void *state, int ni, const int *i_index, double t, const gpunb_jrecord *rec,
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
     * the records several times over; else each pair predicts its member. */
    const int predict_all = s->irr_predict == IRR_PREDICT_ALWAYS ||
                            (s->irr_predict == IRR_PREDICT_AUTO && (long long)ni * GPUNB_CUDA_IRR_PREDICT_RATIO >= nrec);
    CHECK(g, gpunb_cuda_launch_irregular(g->d_rec, nrec, predict_all ? g->d_irr_pred : NULL, g->d_lists, s->irr_lmax,
                                         g->d_irr_idx, ni, t, g->d_irr_out, g->irr));
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

static int cuda_firr_query(void *state, int *done)
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

static int cuda_firr_finish(void *state, double (*acc)[3], double (*jrk)[3])
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

static long long cuda_i_redone(const void *state) { return ((const cuda_state *)state)->redone; }

const gpunb_backend_ops gpunb_backend_cuda = {
    .name = "cuda",
    .open = cuda_open,
    .close = cuda_close,
    .send = cuda_send,
    .regf = cuda_regf,
    .alloc_records = cuda_alloc_records,
    .free_records = cuda_free_records,
    .predict = cuda_predict,
    .records_wait = cuda_records_wait,
    .regf_start = cuda_regf_start,
    .regf_finish = cuda_regf_finish,
    .irr_open = cuda_irr_open,
    .push = cuda_push,
    .firr_start = cuda_firr_start,
    .firr_query = cuda_firr_query,
    .firr_finish = cuda_firr_finish,
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
