/* gpunb_cuda_regf.c -- CUDA back-end of GPUNB, host side: the launch
 * sequence of one REGF and the combination of several GPUs, with the
 * precision check of the fast kernel and the redo of the i it may have
 * served short.  The asynchronous force of the resident path
 * (gpunb_cuda_resident.c) launches and collects its chunks, and redoes its
 * i, through these functions too.
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
 * out as it lands; else on the launch's events: stamps from the ~1100
 * blocks of a call of 1000 i, each behind a system-scope fence, made such
 * calls 15-40 us slower on the H100) and the sum over GPUs in double on the
 * host.  The j-set is split over the GPUs in contiguous ranges, so their
 * lists concatenate in ascending order.  Every launch runs in a lane
 * (cuda_lane, gpunb_cuda_state.h): two regular forces may be in flight on
 * a GPU, and a redo runs beside them.
 *
 * The coordinates are floats about an origin near the cluster (see
 * gpunb_cuda.c).  A close pair that is no neighbour (h2 tiny or 0) still
 * loses digits in the float difference of coordinates far from the origin.
 * The PRECISE kernel
 * (two-float coordinates) avoids that: the fast kernel runs first, its error
 * is bounded per i, and the i whose bound exceeds 1e-6 of their force are
 * redone with the PRECISE kernel (in Plummer runs a handful per million; the
 * close statistics count them).  Only blocks with a tiny neighbour radius,
 * where most i would be redone, go to the PRECISE kernel directly.  (Until
 * session 4 blocks of NI <= 256 did too, which cost 3 of 46 us per NI = 64
 * call at NJ = 128k on the H100.)
 * NB6ACCEL_CUDA_PRECISE=always|never overrides that choice.
 *
 * The precision check and the redo stay in this file rather than one of
 * their own: the redo flags are set in the same pass that collects the
 * results (collect_flag: a pass of its own cost a team's start and end),
 * and a redo is itself a chunk of this launch sequence (regf_chunk), so a
 * file of their own would call most of this one across the boundary. */
#include "config.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpunb_cuda_state.h"

/* Most ints the partial neighbour lists of one launch may take per GPU
 * (chunk * cap); a huge lmax shrinks the chunk of i per launch instead. */
#define LIST_BUDGET_INTS (32L << 20)

/* Below this many quarter tiles per slice, slices are whole tiles. */
#ifndef QUARTER_SLICES_MIN /* (overridable for the A/B of tests/gpu/ab-flags.sh) */
#define QUARTER_SLICES_MIN 8
#endif

/* Spins of the wait for a small call's stamps between two queries of the
 * stream (each ~1 us of host time; 1024 spins are some 50 us). */
#define POLL_QUERY 1024

#define RESULTS_BYTES (sizeof(gpunb_cuda_result) * GPUNB_CUDA_NI_CHUNK)

static gpunb_cuda_result *results_of(unsigned char *out) { return (gpunb_cuda_result *)out; }

/* The sorted lists start right after the ni records of this call, i's at
 * i * cap (a fixed place: no allocator on the GPU; the kernels write only
 * the entries, straight into this pinned memory, so the gaps cost nothing). */
static int *compact_of(unsigned char *out, int ni)
{
    return (int *)(out + sizeof(gpunb_cuda_result) * (size_t)ni);
}

/* Neighbour entries each i may store on GPU g: never more than its j. */
static int cap_of(const cuda_gpu *g, int limit)
{
    int cap = limit < g->nj ? limit : g->nj;
    return cap > 0 ? cap : 1;
}

/* The list buffers grow to chunk * cap entries (word records on the GPU,
 * sorted ints in the host's buffer) the first time a call needs more (once
 * per run in NBODY6, whose lmax is fixed). */
static int ensure_lists(cuda_gpu *g, cuda_lane *L, long ints)
{
    const size_t out_bytes = RESULTS_BYTES + sizeof(int) * (size_t)ints;
    if (ints <= L->list_ints)
        return GPUNB_OK;
    CHECK(g, cudaSetDevice(g->device));
    CHECK(g, cudaStreamSynchronize(L->stream));
    CHECK(g, cudaStreamSynchronize(L->side));
    cudaFree(L->d_nblist);
    cudaFreeHost(L->h_out);
    L->d_nblist = NULL;
    L->h_out = L->d_hout = NULL;
    L->list_ints = 0;
    CHECK(g, cudaMalloc((void **)&L->d_nblist, sizeof *L->d_nblist * (size_t)ints));
    /* The gathering blocks load each row's first entries with its count, in
     * one round trip, and drop those past the count: defined bytes there
     * keep compute-sanitizer's initcheck quiet (once per allocation; in
     * the stream of the force kernels that write the rows). */
    CHECK(g, cudaMemsetAsync(L->d_nblist, 0xff, sizeof *L->d_nblist * (size_t)ints, L->stream));
    CHECK(g, cudaHostAlloc((void **)&L->h_out, out_bytes, cudaHostAllocPortable | cudaHostAllocMapped));
    CHECK(g, cudaHostGetDevicePointer((void **)&L->d_hout, L->h_out, 0));
    L->list_ints = ints;
    return GPUNB_OK;
}

/* Force waves of a large-NI call on GPU g, with the j-set in spatial order
 * or not (see GPUNB_CUDA_WAVES). */
static int waves_of(const cuda_state *s, const cuda_gpu *g, int spatial)
{
    if (s->waves)
        return s->waves;
    if (spatial)
        return GPUNB_CUDA_WAVES_SPATIAL;
    return g->ntiles <= GPUNB_CUDA_WAVES_SHORT_TILES ? GPUNB_CUDA_WAVES_SHORT : GPUNB_CUDA_WAVES;
}

/* Whether a call of ni i on GPU g uses the spatial order (where g's j-set
 * has one, NB6ACCEL_CUDA_SPATIAL): always where asked for, otherwise from
 * SPATIAL_MIN_PAIRS interactions per GPU, where the far test saves more
 * than ordering the i and gathering through the order cost. */
static int spatial_pays(const cuda_state *s, const cuda_gpu *g, int ni)
{
    return g->spatial && (s->spatial_mode > 0 || (long long)ni * g->ntiles * GPUNB_CUDA_TILE_J >= SPATIAL_MIN_PAIRS);
}

/* Enqueue one chunk in lane `lane` of GPU g: upload i (coordinates from
 * h_ibuf, or with members set, j-set indices from h_iidx), force, reduce,
 * gather, download. */
static int launch_gpu(cuda_state *s, cuda_gpu *g, int lane, int ni, int limit, int precise, int members)
{
    cuda_lane *const L = &g->lane[lane];
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
    /* ... the force kernel itself, whose grid barrier needs the whole GPU:
     * not in the redo lane, which runs beside another lane's force */
    const int single = fused && s->single && g->single_blocks > 0 && lane != LANE_REDO;
    /* The j-set in spatial order where it is sorted and the call is large
     * enough to pay for ordering the i (spatial_pays), for the fast kernel
     * (the only one with the far test) on more than one i-tile (with one,
     * the order would only cost the gathering), unless the lists could
     * outgrow the shared memory that gathering them from that order needs.
     * The i then go to the force kernel in spatial order too, and the
     * kernels write each i's results at the caller's place. */
    const int spatial = spatial_pays(s, g, ni) && !precise && ni_tiles > 1 &&
                        limit <= (single ? GPUNB_CUDA_SINGLE_SMEM_LIST : GPUNB_CUDA_GATHER_SMEM_LIST);
    long long nslices = single ? g->single_blocks / ni_tiles
                               : (long long)(fused ? 1 : waves_of(s, g, spatial)) * g->force_blocks / ni_tiles;
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
        /* a failed call's kernels may still run: their stamps must not land
         * in this call's (every lane's counters: the failure may have been
         * in another) */
        for (int l = 0; l < GPUNB_CUDA_LANES; l++) {
            cuda_lane *const o = &g->lane[l];
            CHECK(g, cudaStreamSynchronize(o->stream));
            CHECK(g, cudaStreamSynchronize(o->side));
            CHECK(g, cudaMemsetAsync(o->d_nbcount, 0, sizeof *o->d_nbcount * GPUNB_CUDA_NI_CHUNK, o->stream));
            if (o->own_scratch)
                CHECK(g, cudaMemsetAsync(o->d_sync, 0, 2 * sizeof(int), o->stream));
            CHECK(g, cudaStreamSynchronize(o->stream));
        }
    }
    const size_t ibytes = members ? sizeof(int4) * (size_t)ni_pad : sizeof(float4) * (size_t)ni_pad * (precise ? 3 : 2);
    const int inline_i = s->inline_i && ni_tiles == 1 && !single;
    if (inline_i)
        memcpy(g->inl.v, members ? (const void *)s->h_iidx[lane] : (const void *)s->h_ibuf[lane], ibytes);
    else if (members)
        CHECK(g, cudaMemcpyAsync(L->d_iidx, s->h_iidx[lane], ibytes, cudaMemcpyHostToDevice, L->stream));
    else
        CHECK(g, cudaMemcpyAsync(L->d_ibuf, s->h_ibuf[lane], ibytes, cudaMemcpyHostToDevice, L->stream));
    /* spatial: the i ranked into that order first */
    const float4 *ibuf = L->d_ibuf;
    const int4 *iidx = L->d_iidx;
    const int *iorder = NULL;
    if (spatial) {
        float4 *ibuf_sorted = L->d_ibuf + 3 * GPUNB_CUDA_NI_CHUNK;
        int4 *iidx_sorted = L->d_iidx + GPUNB_CUDA_NI_CHUNK;
        CHECK(g, gpunb_cuda_launch_order_i(ni, ni_pad, s->spatial_scale, L->d_ibuf, ibuf_sorted, 2 /* no ilo */,
                                           members ? L->d_iidx : NULL, iidx_sorted, g->d_jpos, L->d_iorder,
                                           L->stream));
        ibuf = ibuf_sorted;
        iidx = iidx_sorted;
        iorder = L->d_iorder;
    }
    /* A small call is timed by the GPU's own clock, stamped by the kernels
     * (two event records cost its critical path ~3 us of host time). */
    L->stamped_ni = fused && !single ? ni : 0;
    if (L->stamped_ni) /* (the lane's last stamps have all arrived: finish_gpu waited for them) */
        memset(L->h_stamp, 0, sizeof(unsigned long long) * (size_t)(1 + ni));
    const int *perm = spatial ? g->d_perm : NULL;
    gpunb_cuda_force_args a = {
        .precise = precise, .min_blocks = s->min_blocks, .jpos = spatial ? g->d_spos : g->d_jpos,
        .jvel = spatial ? g->d_svel : g->d_jvel, .jlo = spatial ? g->d_slo : g->d_jlo,
        .mpos = g->d_jpos, .mvel = g->d_jvel, .mlo = g->d_jlo,
        .ntiles = g->ntiles, .j0 = g->j0, .ipos = ibuf, .ivel = ibuf + ni_pad,
        .ilo = ibuf + 2 * ni_pad, .iidx = members ? iidx : NULL, .ni_tiles = ni_tiles,
        .nslices = (int)nslices, .granule = granule,
        .slice_units = (int)(units / nslices), .slice_extra = (int)(units % nslices),
        .partial = L->d_partial, .slices_inner = fused, .nbcount = L->d_nbcount,
        .nblist = L->d_nblist, .cap = cap,
        .single = single, .sync = L->d_sync, .ni = ni, .limit = limit,
        .result = results_of(L->d_hout), .compact = compact_of(L->d_hout, ni),
        .stamp_start = L->stamped_ni ? L->d_stamp : NULL,
        .box = spatial ? g->d_box : NULL, .perm = perm, .iorder = iorder,
    };
    /* A programmatic dependent launch needs the gathering kernel right after
     * the force kernel.  The force time of a small call includes the
     * gathering (as it does with the single launch). */
    const int pdl = fused && !single && g->pdl;
    if (!L->stamped_ni)
        CHECK(g, cudaEventRecord(L->ev_force0, L->stream));
    CHECK(g, gpunb_cuda_launch_force(&a, inline_i ? &g->inl : NULL, L->stream));
    if (!L->stamped_ni)
        CHECK(g, cudaEventRecord(L->ev_force1, L->stream));
    L->gathered_aside = !single && !fused;
    if (single) {
        /* nothing more: the force kernel has reduced and gathered */
    } else if (fused) {
        CHECK(g, gpunb_cuda_launch_gather(L->d_nbcount, L->d_nblist, cap, perm, iorder, g->j0, ni, limit,
                                          compact_of(L->d_hout, ni), results_of(L->d_hout), L->d_partial,
                                          (int)nslices, ni_pad, L->d_stamp + 1, pdl, L->stream));
    } else {
        /* Reduction and gathering need only the force kernel: side by
         * side.  The stream does not wait for the gathering: the next
         * force in it (the other lane's) writes other buffers and reads
         * nothing the gathering writes, so it runs while this one's lists
         * go to the host; collecting waits for both. */
        CHECK(g, cudaStreamWaitEvent(L->side, L->ev_force1, 0));
        CHECK(g, gpunb_cuda_launch_gather(L->d_nbcount, L->d_nblist, cap, perm, iorder, g->j0, ni, limit,
                                          compact_of(L->d_hout, ni), results_of(L->d_hout), NULL, 0, 0, NULL,
                                          0, L->side));
        CHECK(g, cudaEventRecord(L->ev_join, L->side));
        CHECK(g, gpunb_cuda_launch_reduce(L->d_partial, (int)nslices, ni, ni_pad, iorder, results_of(L->d_hout),
                                          L->stream));
    }
    if (!L->stamped_ni)
        CHECK(g, cudaEventRecord(L->ev_reduced, L->stream));
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
 * *done when the lane's stream has ended. */
static int query_stream(const cuda_gpu *g, const cuda_lane *L, int *done)
{
    const cudaError_t e = cudaStreamQuery(L->stream);
    if (e != cudaErrorNotReady && e != cudaSuccess)
        return gpunb_cuda_error(g->device, "cudaStreamQuery(lane stream)", __FILE__, __LINE__, e);
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
static int wait_stamps(const cuda_gpu *g, const cuda_lane *L)
{
    const volatile unsigned long long *stamp = L->h_stamp;
    int next = 0, done = 0, st;
    for (unsigned spin = 1;; spin++) {
        while (next <= L->stamped_ni && stamp[next] != 0)
            next++;
        if (next > L->stamped_ni)
            break;
        if (done) /* the stream ended without them: cannot happen unless the GPU lost a write */
            return gpunb_fail(GPUNB_EDEVICE, "gpunb_regf: CUDA device %d finished without stamping i %d of %d",
                              g->device, next, L->stamped_ni);
        if (spin % POLL_QUERY == 0 && (st = query_stream(g, L, &done)) != GPUNB_OK)
            return st;
        cpu_relax();
    }
    atomic_thread_fence(memory_order_acquire); /* the results are read after the stamps */
    return GPUNB_OK;
}

/* Wait for lane L of GPU g: its results are then in L->h_out.  On the
 * lane's events, not its stream, which may hold the other lane's force
 * by now. */
static int finish_gpu(cuda_gpu *g, cuda_lane *L, double *t_force)
{
    float ms = 0.0f;
    if (L->stamped_ni) { /* first force block's start to the last gathering block's end */
        const int st = wait_stamps(g, L);
        if (st != GPUNB_OK)
            return st;
        const volatile unsigned long long *stamp = L->h_stamp;
        unsigned long long end = stamp[0];
        for (int i = 1; i <= L->stamped_ni; i++)
            end = stamp[i] > end ? stamp[i] : end;
        *t_force += 1e-9 * (double)(end - stamp[0]);
        return GPUNB_OK;
    }
    CHECK(g, cudaSetDevice(g->device));
    CHECK(g, cudaEventSynchronize(L->ev_reduced));
    if (L->gathered_aside)
        CHECK(g, cudaEventSynchronize(L->ev_join));
    CHECK(g, cudaEventElapsedTime(&ms, L->ev_force0, L->ev_force1));
    *t_force += 1e-3 * ms;
    return GPUNB_OK;
}

/* The i of a chunk as float coordinates about the origin, in h_ibuf: xi, vi
 * are taken about o, vo (the state's origin, or zero where they are relative
 * to it already), in the caller's order: the GPUs rank them where
 * spatial_pays says so (on the host, the keys and the sort cost a 1024-i
 * call 19 us of its critical path, session 25). */
void gpunb_cuda_regf_fill_ibuf(cuda_state *s, int lane, int ni, const double *h2, const double *dtr,
                               const double (*xi)[3], const double (*vi)[3], const double *o, const double *vo)
{
    const int ni_pad = (ni + GPUNB_CUDA_BLOCK_I - 1) / GPUNB_CUDA_BLOCK_I * GPUNB_CUDA_BLOCK_I;
    float4 *ipos = s->h_ibuf[lane], *ivel = s->h_ibuf[lane] + ni_pad, *ilo = s->h_ibuf[lane] + 2 * ni_pad;
#pragma omp parallel for if (ni >= HOST_PARALLEL_NI) schedule(static)
    for (int i = 0; i < ni_pad; i++) {
        float4 p = {0, 0, 0, -1.0f}, u = {0, 0, 0, 0}, l = {0, 0, 0, 0}; /* padding: h2 < 0 */
        if (i < ni) {
            nb6_split(xi[i][0] - o[0], &p.x, &l.x);
            nb6_split(xi[i][1] - o[1], &p.y, &l.y);
            nb6_split(xi[i][2] - o[2], &p.z, &l.z);
            p.w = (float)h2[i];
            u = (float4){(float)(vi[i][0] - vo[0]), (float)(vi[i][1] - vo[1]), (float)(vi[i][2] - vo[2]),
                         (float)dtr[i]};
        }
        ipos[i] = p;
        ivel[i] = u;
        ilo[i] = l;
    }
}

/* The i of a chunk as j-set members, in h_iidx (one GPU: local = global),
 * in the caller's order (see gpunb_cuda_regf_fill_ibuf). */
void gpunb_cuda_regf_fill_iidx(cuda_state *s, int lane, int ni, const int *j_index, const double *h2,
                               const double *dtr)
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
        s->h_iidx[lane][i] = d;
    }
}

/* Enqueue a chunk of at most NI_CHUNK i (filled in by gpunb_cuda_regf_fill_ibuf or
 * gpunb_cuda_regf_fill_iidx) in `lane` of every GPU that holds j; returns without waiting.
 * With several busy GPUs each is launched by a thread of the team: one
 * GPU's launch sequence takes some 15-20 us of API calls, which in turn
 * made the last GPU start that much after the first (launch_gpu writes
 * only its GPU's state).  The whole team, not num_threads(ngpu): libgomp
 * ends the threads a smaller team leaves out and creates them again for
 * the next full one (ms per call).  The first failure's message is the
 * caller's. */
int gpunb_cuda_regf_chunk_launch(cuda_state *s, int lane, int ni, int limit, int precise, int members)
{
    int st = GPUNB_OK, busy = 0;
    char why[NB6_ERRMSG_LEN] = "";
    for (int k = 0; k < s->ngpu; k++)
        busy += s->gpu[k].lane[lane].busy = s->gpu[k].ntiles > 0;
    if (busy <= 1) { /* no region: even an if(0) one sets up a team of one */
        for (int k = 0; k < s->ngpu; k++)
            if (s->gpu[k].lane[lane].busy)
                return launch_gpu(s, &s->gpu[k], lane, ni, limit, precise, members);
        return GPUNB_OK;
    }
#pragma omp parallel for schedule(static, 1)
    for (int k = 0; k < s->ngpu; k++) {
        cuda_gpu *g = &s->gpu[k];
        const int e = g->lane[lane].busy ? launch_gpu(s, g, lane, ni, limit, precise, members) : GPUNB_OK;
        if (e != GPUNB_OK) {
#pragma omp critical /* unnamed: a named one is a global symbol of the library */
            if (st == GPUNB_OK) {
                st = e;
                snprintf(why, sizeof why, "%s", gpunb_last_error());
            }
        }
    }
    return st == GPUNB_OK ? GPUNB_OK : gpunb_fail(st, "%s", why);
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

/* The results for the caller's i of every busy GPU (each GPU's kernels
 * write them at i's place, whatever order the GPU computed the i in),
 * combined in double (the lists of GPU g before those of GPU g + 1),
 * written as gpunb_regf does. */
static void collect_one(const cuda_state *s, int lane, int i, int ni, double (*acc)[3], double (*jrk)[3],
                        double *pot, int lmax, int limit, int *list)
{
    double a[3] = {0, 0, 0}, jk[3] = {0, 0, 0}, phi = 0.0;
    long count = 0;
    int *col = list + (size_t)i * (size_t)lmax;
    for (int gi = 0; gi < s->ngpu; gi++) {
        const cuda_lane *L = &s->gpu[gi].lane[lane];
        if (!L->busy)
            continue;
        const gpunb_cuda_result *r = results_of(L->h_out) + i;
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
        for (int gi = 0; gi < s->ngpu; gi++) {
            const cuda_lane *L = &s->gpu[gi].lane[lane];
            if (!L->busy)
                continue;
            const gpunb_cuda_result *r = results_of(L->h_out) + i;
            if (r->count <= 0)
                continue;
            memcpy(col + 1 + n, compact_of(L->h_out, ni) + r->off, sizeof(int) * (size_t)r->count);
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

/* collect_one of the caller's i, and with flag (the chunk's
 * precision_bounds are in least_a2) whether gpunb_cuda_regf_redo_precise
 * must redo i: in the same pass, since a pass of its own over a large
 * call's i cost a team's start and end (5-12 us at NI = 512-2048 on the H100
 * box). */
static void collect_flag(cuda_state *s, int lane, int i, int ni, double (*acc)[3], double (*jrk)[3], double *pot,
                         int lmax, int limit, int *list, int flag)
{
    collect_one(s, lane, i, ni, acc, jrk, pot, lmax, limit, list);
    if (flag)
        s->short_flag[i] = list[(size_t)i * (size_t)lmax] >= 0 && short_of_precision(s->least_a2[i], acc[i]);
}

/* A stamped call on one GPU, written out i by i as the gathering blocks
 * stamp them: the host copies the first i's results (some 60 ns each) while
 * the GPU still gathers the others.  Then finish_gpu finds every stamp in. */
static int collect_as_stamped(cuda_state *s, int lane, int ni, double (*acc)[3], double (*jrk)[3], double *pot,
                              int lmax, int limit, int *list, int flag, double *t_force)
{
    cuda_gpu *g = &s->gpu[0];
    cuda_lane *L = &g->lane[lane];
    const volatile unsigned long long *stamp = L->h_stamp + 1;
    unsigned char copied[FUSED_REDUCE_NI] = {0};
    int left = ni, done = 0, st;
    for (unsigned spin = 1; left > 0 && !done; spin++) {
        for (int i = 0; i < ni; i++)
            if (!copied[i] && stamp[i] != 0) {
                atomic_thread_fence(memory_order_acquire); /* i's results are read after its stamp */
                collect_flag(s, lane, i, ni, acc, jrk, pot, lmax, limit, list, flag);
                copied[i] = 1;
                left--;
            }
        /* done: the rest are in, or finish_gpu reports them lost */
        if (left > 0 && spin % POLL_QUERY == 0 && (st = query_stream(g, L, &done)) != GPUNB_OK)
            return st;
        if (left > 0)
            cpu_relax();
    }
    if ((st = finish_gpu(g, L, t_force)) != GPUNB_OK)
        return st;
    for (int i = 0; i < ni; i++)
        if (!copied[i])
            collect_flag(s, lane, i, ni, acc, jrk, pot, lmax, limit, list, flag);
    return GPUNB_OK;
}

/* Wait for the chunk of gpunb_cuda_regf_chunk_launch in `lane` and write it as gpunb_regf does; with
 * flag (its precision_bounds are in least_a2), also the redo flags. */
int gpunb_cuda_regf_chunk_collect(cuda_state *s, int lane, int ni, double (*acc)[3], double (*jrk)[3], double *pot,
                                  int lmax, int limit, int *list, int flag, double *t_force)
{
    double tf = 0.0;
    int st;

    if (s->ngpu == 1 && s->gpu[0].lane[lane].busy && s->gpu[0].lane[lane].stamped_ni == ni && ni < HOST_PARALLEL_NI)
        return collect_as_stamped(s, lane, ni, acc, jrk, pot, lmax, limit, list, flag, t_force);
    for (int k = 0; k < s->ngpu; k++) {
        double t = 0.0; /* GPUs run side by side: the slowest one counts */
        cuda_lane *L = &s->gpu[k].lane[lane];
        if (L->busy && (st = finish_gpu(&s->gpu[k], L, &t)) != GPUNB_OK)
            return st;
        tf = t > tf ? t : tf;
    }
    *t_force += tf;

    /* by the caller's i: each thread writes rows of its own (false sharing
     * of acc, jrk and pot cost a 1024-i call 15 us in spatial order) */
#pragma omp parallel for if (ni >= HOST_PARALLEL_NI) schedule(static)
    for (int i = 0; i < ni; i++)
        collect_flag(s, lane, i, ni, acc, jrk, pot, lmax, limit, list, flag);
    return GPUNB_OK;
}

/* One chunk of at most NI_CHUNK i with coordinates from the host (about o,
 * vo: see gpunb_cuda_regf_fill_ibuf); with bounds, also their precision_bounds, found while
 * the GPU works. */
static int regf_chunk(cuda_state *s, int lane, int ni, const double *h2, const double *dtr,
                      const double (*xi)[3], const double (*vi)[3], const double *o, const double *vo,
                      double (*acc)[3], double (*jrk)[3], double *pot, int lmax, int limit, int *list,
                      int precise, int bounds, double *t_force)
{
    int st;
    gpunb_cuda_regf_fill_ibuf(s, lane, ni, h2, dtr, xi, vi, o, vo);
    if ((st = gpunb_cuda_regf_chunk_launch(s, lane, ni, limit, precise, 0)) != GPUNB_OK)
        return st;
    if (bounds)
        precision_bounds(s, ni, h2, xi, o);
    return gpunb_cuda_regf_chunk_collect(s, lane, ni, acc, jrk, pot, lmax, limit, list, bounds, t_force);
}

const double gpunb_cuda_zero3[3] = {0.0, 0.0, 0.0};

/* Redo, with the PRECISE kernel in `lane`, the i of a chunk that the fast
 * kernel may have served short: packed into the state's buffers, then
 * scattered back.  xi, vi about o, vo decide which; with j_index (the i are
 * j-set members whose xi may be only near their entries, see
 * predict_pending_on_host; one GPU) the redone i go to the GPU as members,
 * which it reads from the j-set exactly as the fast kernel did (no round
 * trip to read them back first).  flags_ready: the collection has set
 * short_flag already (collect_flag). */
int gpunb_cuda_regf_redo_precise(cuda_state *s, int lane, int ni, const double *h2, const double *dtr,
                                 const double (*xi)[3], const double (*vi)[3], const double *o, const double *vo,
                                 const int *j_index, double (*acc)[3], double (*jrk)[3], double *pot, int lmax,
                                 int limit, int *list, int flags_ready, double *t_force)
{
    int n = 0, chunk, st;
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
    if ((st = gpunb_cuda_regf_prepare_lists(s, lane, limit, &chunk)) != GPUNB_OK)
        return st;
    if (j_index) {
        gpunb_cuda_regf_fill_iidx(s, lane, n, s->redo_j, s->r_h2, s->r_dtr);
        if ((st = gpunb_cuda_regf_chunk_launch(s, lane, n, limit, 1, 1)) == GPUNB_OK)
            st = gpunb_cuda_regf_chunk_collect(s, lane, n, s->r_acc, s->r_jrk, s->r_pot, lmax, limit, s->r_list, 0,
                                               t_force);
    } else {
        st = regf_chunk(s, lane, n, s->r_h2, s->r_dtr, (const double(*)[3])s->r_xi, (const double(*)[3])s->r_vi, o,
                        vo, s->r_acc, s->r_jrk, s->r_pot, lmax, limit, s->r_list, 1, 0, t_force);
    }
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
 * buffers for that many in `lane` of every GPU. */
int gpunb_cuda_regf_prepare_lists(cuda_state *s, int lane, int limit, int *chunk_out)
{
    int chunk = GPUNB_CUDA_NI_CHUNK, cap_max = 1, st;
    for (int k = 0; k < s->ngpu; k++)
        if (s->gpu[k].ntiles > 0 && cap_of(&s->gpu[k], limit) > cap_max)
            cap_max = cap_of(&s->gpu[k], limit);
    while (chunk > GPUNB_CUDA_BLOCK_I && (long)chunk * cap_max > LIST_BUDGET_INTS)
        chunk /= 2;
    for (int k = 0; k < s->ngpu; k++)
        if (s->gpu[k].ntiles > 0 &&
            (st = ensure_lists(&s->gpu[k], &s->gpu[k].lane[lane], (long)chunk * cap_of(&s->gpu[k], limit))) !=
                GPUNB_OK)
            return st;
    *chunk_out = chunk;
    return GPUNB_OK;
}

/* Whether a chunk goes to the PRECISE kernel directly (see the top). */
int gpunb_cuda_regf_precise_directly(const cuda_state *s, int n, const double *h2)
{
    int direct = s->precise_mode == PRECISE_ALWAYS;
    for (int i = 0; i < n && !direct; i++) /* the fast kernel's r2 floor */
        direct = h2[i] * s->min_mass <= GPUNB_CUDA_H2M_SAFE;
    return direct;
}

/* The regular force of ni i with coordinates from the host, about o, vo (see
 * gpunb_cuda_regf_fill_ibuf), chunk after chunk in `lane`. */
int gpunb_cuda_regf_all(cuda_state *s, int lane, int ni, const double *h2, const double *dtr, const double (*xi)[3],
                        const double (*vi)[3], const double *o, const double *vo, double (*acc)[3],
                        double (*jrk)[3], double *pot, int lmax, int limit, int *list, double *t_force,
                        double *t_gather)
{
    const double t0 = nb6_clock();
    int chunk, st;

    if ((st = gpunb_cuda_regf_prepare_lists(s, lane, limit, &chunk)) != GPUNB_OK)
        return st;
    *t_force = 0.0;
    for (int i0 = 0; i0 < ni && st == GPUNB_OK; i0 += chunk) {
        const int n = ni - i0 < chunk ? ni - i0 : chunk;
        const int direct = gpunb_cuda_regf_precise_directly(s, n, h2 + i0);
        const int redo = !direct && s->precise_mode == PRECISE_AUTO;
        int *cols = list + (size_t)i0 * (size_t)lmax;
        st = regf_chunk(s, lane, n, h2 + i0, dtr + i0, xi + i0, vi + i0, o, vo, acc + i0, jrk + i0,
                        pot ? pot + i0 : NULL, lmax, limit, cols, direct, redo, t_force);
        if (st == GPUNB_OK && redo)
            st = gpunb_cuda_regf_redo_precise(s, lane, n, h2 + i0, dtr + i0, xi + i0, vi + i0, o, vo, NULL, acc + i0,
                                              jrk + i0, pot ? pot + i0 : NULL, lmax, limit, cols, 1, t_force);
    }
    s->dirty = st != GPUNB_OK;
    *t_gather = nb6_clock() - t0 - *t_force;
    if (*t_gather < 0.0)
        *t_gather = 0.0;
    return st;
}

int gpunb_cuda_regf(void *state, int ni, const double *h2, const double *dtr,
                    const double (*xi)[3], const double (*vi)[3], double (*acc)[3],
                    double (*jrk)[3], double *pot, int lmax, int limit, int *list,
                    double *t_force, double *t_gather)
{
    cuda_state *s = state;
    return gpunb_cuda_regf_all(s, 0, ni, h2, dtr, xi, vi, s->origin, s->vorigin, acc, jrk, pot, lmax, limit, list, t_force,
                               t_gather);
}
