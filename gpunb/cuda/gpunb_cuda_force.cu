/* gpunb_cuda_force.cu -- the regular-force kernel: force, jerk, potential and
 * neighbour flags of BLOCK_I i-particles against one slice of the j-set per
 * block (the slices of one i-tile spread over the grid's x dimension), so
 * that even 32-64 i fill every SM; inside a block JWAYS threads share each
 * i and split the tile's j, and the next tile is copied into shared memory
 * while the current one is computed.
 *
 * Precision: positions are float relative to an origin chosen at send (the
 * j-set's centre of mass), so particles far from the coordinate origin keep
 * their digits; pair arithmetic in single precision, rsqrt on the special
 * function unit; each tile's terms are summed in float and the tile sums in
 * double (long slices lose nothing to the running sum).  The PRECISE variant
 * also carries each coordinate's float remainder (x = hi + lo) and forms
 * dx = (hi_j - hi_i) + (lo_j - lo_i): close pairs that are no neighbours
 * (tiny h2) keep their relative accuracy, at 4 more instructions per
 * interaction; the host runs it only where the fast one may be short. */
#include "gpunb_cuda_gather.cuh"

/* 32-j words of a thread's part of the tile unrolled together: each is ~1300
 * instructions, and more than two overran the instruction cache (session 3). */
#ifndef GPUNB_CUDA_WORD_UNROLL
#define GPUNB_CUDA_WORD_UNROLL 2
#endif
static constexpr int word_unroll = GPUNB_CUDA_WORD_UNROLL; /* (#pragma unroll expands no macro) */
/* The far test reads the boxes of a tile's quarters from shared memory,
 * copied with the tile (1), or from global memory after the tile's barrier
 * (0). */
#ifndef GPUNB_CUDA_FAR_BOX_SMEM
#define GPUNB_CUDA_FAR_BOX_SMEM 1
#endif
/* The same for the words of a quarter that passed the far test. */
#ifndef GPUNB_CUDA_FAR_UNROLL
#define GPUNB_CUDA_FAR_UNROLL 1
#endif
static constexpr int far_unroll = GPUNB_CUDA_FAR_UNROLL;

/* rsqrt.approx.ftz: one MUFU.RSQ, without the denormal fix-up code that
 * rsqrtf() gets when nvcc runs without -ftz=true. */
static __device__ __forceinline__ float rsqrt_ftz(float x)
{
    float y;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* Append a thread's n buffered word records (column `lane` of buf), which
 * hold nnb neighbours, to its i's unordered records in global memory: one
 * atomic adds both counts ((records << 32) + neighbours).  The counts grow
 * even past cap, so that an overflow reports the true neighbour count. */
static __device__ __noinline__ void flush_words(int2 (*buf)[GPUNB_CUDA_FORCE_THREADS], int lane, int n, int nnb,
                                                unsigned long long *count, int2 *list, int cap)
{
    const int pos = (int)(atomicAdd(count, (unsigned long long)n << 32 | (unsigned)nnb) >> 32);
    for (int e = 0; e < n && pos + e < cap; e++)
        list[pos + e] = buf[e][lane];
}

/* One 16-byte j record from global to shared memory: asynchronous on sm_80
 * and later (the copy of the next tile then overlaps the current tile's
 * arithmetic without holding registers), a plain load and store before. */
static __device__ __forceinline__ void copy16(float4 *dst, const float4 *src)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(__cvta_generic_to_global(src))
                 : "memory");
#else
    *dst = *src;
#endif
}

static __device__ __forceinline__ void copies_commit(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/* Wait for this thread's copies except the most recently committed group. */
static __device__ __forceinline__ void copies_wait_all_but_last(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group 1;\n" ::: "memory");
#endif
}

/* The running sums of one i over the current tile (float; the tile sums go
 * to double in shared memory). */
typedef struct tile_sums {
    float ax, ay, az, jx, jy, jz, pot;
} tile_sums;

/* One pairwise interaction into s; returns the neighbour flag.  In SASS
 * (fast kernel, with the caller's flag bit): 2 LDS.128, 6 FADD (dx, dv), 3
 * (r2, floor folded in), 3 + 3 (rp, rp2), FMUL + 2 FSETP (criterion), MUFU +
 * FSEL, 3 FMUL (rinv2, m rinv, m rinv^3), FADD (pot), 3 FFMA (acc), 3 + 2 +
 * 6 (jerk), 1 (flag) = 41 instructions for the 60 flops of the convention;
 * the PRECISE one adds an LDS and 3 FADD (and the exact r = 0 test). */
template <bool PRECISE, bool CRITERION = true>
static __device__ __forceinline__ bool interact(const float4 pi, const float4 vi, const float4 li,
                                                const float4 pj, const float4 vj, const float4 lj,
                                                tile_sums &s)
{
    const float h2 = pi.w, dt = vi.w;
    float dx = pj.x - pi.x, dy = pj.y - pi.y, dz = pj.z - pi.z;
    if (PRECISE) {
        dx += lj.x - li.x;
        dy += lj.y - li.y;
        dz += lj.z - li.z;
    }
    const float dvx = vj.x - vi.x, dvy = vj.y - vi.y, dvz = vj.z - vi.z;
    /* The fast kernel floors r2 at R2_FLOOR (folded into an FFMA): rsqrt
     * stays finite at r = 0, so only neighbours need the select; an r = 0
     * pair that is no neighbour then adds m * 0 (zero-mass j) to the forces,
     * but m_i * 1e12 to the potential if it is i itself with m_i h2 <=
     * R2_FLOOR: the host sends such i (h2 ~ 0) to the PRECISE kernel, which
     * tests r2 == 0 exactly. */
    const float r2 = PRECISE ? dx * dx + dy * dy + dz * dz
                             : fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, GPUNB_CUDA_R2_FLOOR)));
    const float px = dx + dt * dvx, py = dy + dt * dvy, pz = dz + dt * dvz;
    const float rp2 = px * px + py * py + pz * pz;
    const float mh2 = pj.w * h2;
    /* Neighbour: min(r2, rp2) < m_j h2, written without a branch.
     * Neighbours and r = 0 pairs get rinv = 0: no force, no NaN.  Without
     * CRITERION (a pair the far test found no neighbour, r > 0) the same
     * arithmetic and bits, without the test. */
    const bool nb = CRITERION && ((r2 < mh2) | (rp2 < mh2));
    float rinv = rsqrt_ftz(r2);
    if (CRITERION)
        rinv = (PRECISE ? (nb | (r2 == 0.0f)) : nb) ? 0.0f : rinv;
    const float rinv2 = rinv * rinv;
    const float mr = pj.w * rinv;
    const float mr3 = mr * rinv2;
    const float rv = dx * dvx + dy * dvy + dz * dvz;
    const float alpha = -3.0f * rv * rinv2;
    s.pot += mr;
    s.ax += mr3 * dx;
    s.ay += mr3 * dy;
    s.az += mr3 * dz;
    s.jx += mr3 * (dvx + alpha * dx);
    s.jy += mr3 * (dvy + alpha * dy);
    s.jz += mr3 * (dvz + alpha * dz);
    return nb;
}

/* Rounding allowances of the far test.  Every float difference of the pair
 * arithmetic and of the test is off by a few units of 2^-24 of the largest
 * magnitude involved (|x_i|, |x_j|, dt |v|): each distance to the box is
 * shortened by FAR_PAD times that sum, 16 times more; and the squares by
 * the factor FAR_SHRINK against the products' relative rounding. */
#define FAR_PAD 0x1p-18f
#define FAR_SHRINK (1.0f - 0x1p-10f)

/* Whether no j of a quarter can be a neighbour of this thread's i, nor at
 * r = 0 (box: the quarter's 4 records, in shared memory where SHARED, else
 * in global memory): the distance from x_i to the box of the x_j, and from x_i + dt v_i
 * to the box of the x_j + dt v_j (which holds them for dt >= 0), both at
 * least sqrt(m_max h2).  NaN anywhere, or dt < 0, answers false; h2 < 0
 * (the padding past the last i, at the origin: inside the central boxes)
 * answers true, as no j can be its neighbour: otherwise the warps of a
 * call's last, partial i-tile took the full path wherever boxes held the
 * origin. */
template <bool SHARED>
static __device__ __forceinline__ bool far_from_quarter(const float4 *box, const float4 pi, const float4 vi)
{
    const float4 lo = SHARED ? box[0] : __ldg(box), hi = SHARED ? box[1] : __ldg(box + 1);
    const float4 vlo = SHARED ? box[2] : __ldg(box + 2), vhi = SHARED ? box[3] : __ldg(box + 3);
    const float h2 = pi.w, dt = vi.w;
    const float imag = fmaxf(fmaxf(fabsf(pi.x), fabsf(pi.y)), fabsf(pi.z)) +
                       dt * fmaxf(fmaxf(fabsf(vi.x), fabsf(vi.y)), fabsf(vi.z));
    const float pad = FAR_PAD * fmaf(dt, vhi.w, imag + hi.w);
    const float ex = fmaxf(fmaxf(lo.x - pi.x, pi.x - hi.x) - pad, 0.0f);
    const float ey = fmaxf(fmaxf(lo.y - pi.y, pi.y - hi.y) - pad, 0.0f);
    const float ez = fmaxf(fmaxf(lo.z - pi.z, pi.z - hi.z) - pad, 0.0f);
    const float px = fmaf(dt, vi.x, pi.x), py = fmaf(dt, vi.y, pi.y), pz = fmaf(dt, vi.z, pi.z);
    const float fx = fmaxf(fmaxf(fmaf(dt, vlo.x, lo.x) - px, px - fmaf(dt, vhi.x, hi.x)) - pad, 0.0f);
    const float fy = fmaxf(fmaxf(fmaf(dt, vlo.y, lo.y) - py, py - fmaf(dt, vhi.y, hi.y)) - pad, 0.0f);
    const float fz = fmaxf(fmaxf(fmaf(dt, vlo.z, lo.z) - pz, pz - fmaf(dt, vhi.z, hi.z)) - pad, 0.0f);
    const float d2 = (ex * ex + ey * ey + ez * ez) * FAR_SHRINK;
    const float p2 = (fx * fx + fy * fy + fz * fz) * FAR_SHRINK;
    const float mh2 = lo.w * h2;
    return h2 < 0.0f || (d2 >= mh2 && p2 >= mh2 && d2 > 0.0f && dt >= 0.0f);
}


/* The end of a single-launch force kernel: a grid-wide barrier (every
 * block is resident: cooperative launch), then the first min(ni, blocks)
 * blocks do what the gathering kernel does with REDUCE, one i at a time, on
 * the force's shared memory (j-tile buffers for the list, the double sums
 * for the warp totals); the others leave at once.  sync[0] counts arrivals,
 * sync[1] the workers that saw all arrive; the last of those zeroes both for
 * the next launch.  Only the workers wait, having finished their own slice:
 * the spin of one thread per block, with a sleep, takes few issue slots from
 * the force blocks still running beside it. */
static __device__ __forceinline__ void single_tail(const gpunb_cuda_force_args &a, float4 *sp, float4 *sv,
                                                   double *sums)
{
    static_assert(GPUNB_CUDA_GATHER_THREADS == GPUNB_CUDA_FORCE_THREADS, "one gathering block per force block");
    static_assert(GPUNB_CUDA_SINGLE_SMEM_LIST + 4 <= 4 * 2 * GPUNB_CUDA_TILE_J,
                  "the list fits a double j-tile buffer");
    const int tid = threadIdx.x;
    const int nblocks = gridDim.x * gridDim.y, b = blockIdx.y * gridDim.x + blockIdx.x;
    const int nworkers = a.ni < nblocks ? a.ni : nblocks;

    __threadfence(); /* this thread's partial sums and list entries, for every block */
    __syncthreads(); /* ... of every thread of the block; and the force is done with shared memory */
    if (tid == 0)
        atomicAdd(a.sync, 1);
    if (b >= nworkers)
        return;
    if (tid == 0) {
        const volatile int *arrived = a.sync;
        while (*arrived < nblocks)
            __nanosleep(64);
        __threadfence(); /* what the others wrote before arriving, for this block's reads */
        if (atomicAdd(a.sync + 1, 1) == nworkers - 1) {
            a.sync[0] = 0;
            a.sync[1] = 0;
        }
    }
    __syncthreads();
    const gather_smem sm = {reinterpret_cast<int *>(sp), reinterpret_cast<int *>(sv), GPUNB_CUDA_SINGLE_SMEM_LIST,
                            reinterpret_cast<double(*)[GPUNB_CUDA_NPARTIAL]>(sums)};
    for (int i = b; i < a.ni; i += nblocks) {
        gather_one<true, 1>(i, a.iorder ? __ldg(a.iorder + i) : i, a.nbcount, a.nblist, a.cap, a.perm, a.j0,
                            a.limit, a.compact, a.result, a.partial, a.nslices, gridDim.y * GPUNB_CUDA_BLOCK_I,
                            sm);
        __syncthreads(); /* the warp totals of this i are read before the next i's are written */
    }
}

/* Copy j-tile t (TILE_J records, one per thread) into shared buffer b; with
 * sbox, also the boxes of its JWAYS quarters (4 records each, consecutive). */
template <bool PRECISE>
static __device__ __forceinline__ void load_tile(const gpunb_cuda_force_args &a, int t, int tid,
                                                 float4 (*sp)[GPUNB_CUDA_TILE_J], float4 (*sv)[GPUNB_CUDA_TILE_J],
                                                 float4 *sl, float4 (*sbox)[4 * GPUNB_CUDA_JWAYS], int b)
{
    const int j = t * GPUNB_CUDA_TILE_J + tid;
    copy16(&sp[b][tid], a.jpos + j);
    copy16(&sv[b][tid], a.jvel + j);
    if (PRECISE)
        copy16(sl + b * GPUNB_CUDA_TILE_J + tid, a.jlo + j); /* sl: [2][TILE_J] */
    if (sbox && tid < 4 * GPUNB_CUDA_JWAYS)
        copy16(&sbox[b][tid], a.box + 4 * GPUNB_CUDA_JWAYS * t + tid);
}

/* The kernel's second parameter: the i of a one-tile launch, or a stub. */
template <bool INLINE>
struct inline_arg {
    gpunb_cuda_inline_i i;
};
template <>
struct inline_arg<false> {
    int unused;
};
static __device__ __forceinline__ const float4 *inline_src(const inline_arg<true> &in) { return in.i.v; }
static __device__ __forceinline__ const float4 *inline_src(const inline_arg<false> &) { return nullptr; }

/* FAR: the fast kernel with the far test (a.box set; a separate variant, so
 * that the others compile as without it). */
template <bool PRECISE, int MIN_BLOCKS, bool SINGLE, bool INLINE, bool FAR = false>
static __global__ void __launch_bounds__(GPUNB_CUDA_FORCE_THREADS, MIN_BLOCKS)
gpunb_force_kernel(const gpunb_cuda_force_args a, const __grid_constant__ inline_arg<INLINE> in)
{
    /* Two buffers of the j-tile: tile t + 1 is on its way while t is used. */
    __shared__ __align__(16) float4 sp[2][GPUNB_CUDA_TILE_J], sv[2][GPUNB_CUDA_TILE_J];
    __shared__ __align__(16) float4 sl[PRECISE ? 2 : 1][PRECISE ? GPUNB_CUDA_TILE_J : 1];
    constexpr bool BOX_SMEM = FAR && GPUNB_CUDA_FAR_BOX_SMEM;
    __shared__ __align__(16) float4 sbox[BOX_SMEM ? 2 : 1][4 * GPUNB_CUDA_JWAYS];
    /* Word records (two ints) buffered per thread before a flush to global
     * memory: fewer in the PRECISE kernel, whose third j array would
     * otherwise leave room for only 4 blocks per SM. */
    constexpr int NB_DEPTH = (PRECISE ? GPUNB_CUDA_NB_BUFFER / 2 : GPUNB_CUDA_NB_BUFFER) / 2;
    __shared__ int2 nbbuf[NB_DEPTH][GPUNB_CUDA_FORCE_THREADS];
    /* Each thread's running sums in double, in shared memory rather than in
     * 14 registers: touched once per tile, and the registers they free let
     * more warps share each SM. */
    __shared__ double sums[GPUNB_CUDA_NPARTIAL][GPUNB_CUDA_FORCE_THREADS];
    const int tid = threadIdx.x;
    const int ti = tid % GPUNB_CUDA_BLOCK_I, way = tid / GPUNB_CUDA_BLOCK_I;
    const int i = blockIdx.y * GPUNB_CUDA_BLOCK_I + ti;
    const int ni_pad = gridDim.y * GPUNB_CUDA_BLOCK_I;
    const int slice = blockIdx.x;
    /* The slice, in quarters of a tile (the part one way computes), so that
     * slices differ by at most one quarter tile of work; or in whole tiles
     * (granule JWAYS) where slices are only a few quarters long: a slice
     * that starts or ends inside a tile leaves warps of the block idle.  The
     * host splits the units (a 64-bit division here cost each thread a few
     * hundred instructions). */
    const int q_begin = (slice * a.slice_units + min(slice, a.slice_extra)) * a.granule;
    const int q_end = q_begin + (a.slice_units + (slice < a.slice_extra)) * a.granule;
    const int t_begin = q_begin / GPUNB_CUDA_JWAYS;
    const int t_end = (q_end + GPUNB_CUDA_JWAYS - 1) / GPUNB_CUDA_JWAYS;

    if (a.stamp_start && slice == 0 && blockIdx.y == 0 && tid == 0) /* the first block placed */
        *a.stamp_start = gpu_clock_ns();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    /* a dependent launch (the gathering kernel, NB6ACCEL_CUDA_PDL) may place
     * its blocks now; they wait for this kernel's end and writes */
    if (!SINGLE)
        asm volatile("griddepcontrol.launch_dependents;");
#endif
    /* The i: from global memory, or (INLINE) from the launch's parameters,
     * staged in the second velocity buffer (the first copy of a tile there
     * comes after the barrier in front of the loop).  Parameters are read
     * through the constant cache, which serves one address per cycle: each
     * element once, not each thread its own i (+3.5 us for the NI = 64 call,
     * session 5). */
    const float4 *ipos = a.ipos, *ivel = a.ivel, *ilo = a.ilo;
    const int4 *iidx = a.iidx;
    if (INLINE) {
        float4 *stage = &sv[1][0];
        const float4 *src = inline_src(in);
        const int n = (a.iidx ? 1 : PRECISE ? 3 : 2) * GPUNB_CUDA_BLOCK_I;
        for (int k = tid; k < n; k += GPUNB_CUDA_FORCE_THREADS)
            stage[k] = src[k];
        __syncthreads();
        ipos = stage;
        ivel = stage + GPUNB_CUDA_BLOCK_I;
        ilo = stage + 2 * GPUNB_CUDA_BLOCK_I;
        iidx = a.iidx ? reinterpret_cast<const int4 *>(stage) : nullptr;
    }
    float4 pi, vi, li = make_float4(0, 0, 0, 0);
    if (iidx) { /* j-set members: their entries are bit-equal, self is r = 0 */
        const int4 d = iidx[i];
        if (d.x >= 0) {
            pi = a.mpos[d.x];
            vi = a.mvel[d.x];
            if (PRECISE)
                li = a.mlo[d.x];
        } else {
            pi = vi = li;
        }
        pi.w = d.x >= 0 ? __int_as_float(d.y) : -1.0f; /* padding: h2 < 0 */
        vi.w = __int_as_float(d.z);
    } else {
        pi = ipos[i];
        vi = ivel[i];
        if (PRECISE)
            li = ilo[i];
    }
#pragma unroll
    for (int c = 0; c < GPUNB_CUDA_NPARTIAL; c++)
        sums[c][tid] = 0.0;
    int nbuf = 0, nbuf_nb = 0; /* records buffered, and their neighbours */
    unsigned long long *const my_count = a.nbcount + i;
    int2 *const my_list = a.nblist + (size_t)i * a.cap;

    int b = 0;
    if (t_begin < t_end)
        load_tile<PRECISE>(a, t_begin, tid, sp, sv, &sl[0][0], BOX_SMEM ? sbox : nullptr, 0);
    copies_commit();
    if (INLINE)
        __syncthreads(); /* every thread has its i before the stage is overwritten */
    for (int t = t_begin; t < t_end; t++) {
        if (t + 1 < t_end)
            load_tile<PRECISE>(a, t + 1, tid, sp, sv, &sl[0][0], BOX_SMEM ? sbox : nullptr, b ^ 1);
        copies_commit();
        copies_wait_all_but_last(); /* this thread's part of tile t is in */
        __syncthreads();            /* ... and every thread's */
        const int my_quarter = t * GPUNB_CUDA_JWAYS + way;
        if (my_quarter >= q_begin && my_quarter < q_end) { /* uniform per warp */
            tile_sums s = {0, 0, 0, 0, 0, 0, 0};
            const int j_first = way * GPUNB_CUDA_BLOCK_I; /* this thread's part of the tile */
            static_assert(GPUNB_CUDA_BLOCK_I == GPUNB_CUDA_QUARTER_J, "a way's part of the tile is one box");
            if (FAR && __all_sync(0xffffffffu, far_from_quarter<BOX_SMEM>(
                                         BOX_SMEM ? &sbox[b][4 * way] : a.box + 4 * my_quarter, pi, vi))) {
#pragma unroll far_unroll
                for (int w = 0; w < GPUNB_CUDA_BLOCK_I / 32; w++) {
#pragma unroll
                    for (int k = 0; k < 32; k++) {
                        const int q = j_first + w * 32 + k;
                        interact<false, false>(pi, vi, li, sp[b][q], sv[b][q], li, s);
                    }
                }
            } else {
#pragma unroll word_unroll
                for (int w = 0; w < GPUNB_CUDA_BLOCK_I / 32; w++) {
                    unsigned bits = 0;
#pragma unroll
                    for (int k = 0; k < 32; k++) {
                        const int q = j_first + w * 32 + k;
                        const float4 lj = PRECISE ? sl[b][q] : make_float4(0, 0, 0, 0);
                        bits |= interact<PRECISE>(pi, vi, li, sp[b][q], sv[b][q], lj, s) ? (1u << k) : 0u;
                    }
                    /* Rare: a word with neighbours.  One record for the word,
                     * buffered in shared memory; global memory only when the
                     * buffer is full. */
                    if (bits) {
                        if (nbuf == NB_DEPTH) {
                            flush_words(nbbuf, tid, nbuf, nbuf_nb, my_count, my_list, a.cap);
                            nbuf = nbuf_nb = 0;
                        }
                        nbbuf[nbuf++][tid] =
                            make_int2((a.j0 + t * GPUNB_CUDA_TILE_J + j_first + w * 32) >> 5, (int)bits);
                        nbuf_nb += __popc(bits);
                    }
                }
            }
            sums[0][tid] += s.ax;
            sums[1][tid] += s.ay;
            sums[2][tid] += s.az;
            sums[3][tid] += s.jx;
            sums[4][tid] += s.jy;
            sums[5][tid] += s.jz;
            sums[6][tid] += s.pot;
        }
        __syncthreads(); /* buffer b is free for the copy of tile t + 2 */
        b ^= 1;
    }
    if (nbuf)
        flush_words(nbbuf, tid, nbuf, nbuf_nb, my_count, my_list, a.cap);

    /* The JWAYS partial sums of each i, added in a fixed order. */
    __syncthreads();
    if (way == 0) {
        /* slices_inner: each i's slices side by side, for the fused gathering
         * kernel (a block per i reads them coalesced; these scattered stores
         * cost the force blocks nothing they wait for) */
        const size_t c_stride = a.slices_inner ? (size_t)ni_pad * a.nslices : (size_t)ni_pad;
        float *out = a.partial + (a.slices_inner ? (size_t)i * a.nslices + slice
                                                 : (size_t)slice * GPUNB_CUDA_NPARTIAL * ni_pad + i);
#pragma unroll
        for (int c = 0; c < GPUNB_CUDA_NPARTIAL; c++) {
            double sum = sums[c][ti];
            for (int w = 1; w < GPUNB_CUDA_JWAYS; w++)
                sum += sums[c][ti + w * GPUNB_CUDA_BLOCK_I];
            out[c * c_stride] = (float)sum;
        }
    }
    if (SINGLE)
        single_tail(a, &sp[0][0], &sv[0][0], &sums[0][0]);
}

/* One launch of variant <PRECISE, MIN_BLOCKS, SINGLE>: plain (with the i in
 * its parameters where inl is set; the far test's variant where a->box is
 * set), or cooperative for the single launch (its grid barrier needs every
 * block resident; no far test). */
template <bool PRECISE, int MIN_BLOCKS, bool SINGLE>
static cudaError_t launch_variant(const gpunb_cuda_force_args *a, const gpunb_cuda_inline_i *inl,
                                  cudaStream_t stream)
{
    const dim3 grid((unsigned)a->nslices, (unsigned)a->ni_tiles), block(GPUNB_CUDA_FORCE_THREADS);
    if (SINGLE) {
        const inline_arg<false> none = {0};
        void *args[] = {(void *)a, (void *)&none};
        const cudaError_t err = cudaLaunchCooperativeKernel(
            (const void *)gpunb_force_kernel<PRECISE, MIN_BLOCKS, true, false>, grid, block, args, 0, stream);
        return err != cudaSuccess ? err : cudaGetLastError();
    }
    if (!PRECISE && a->box && !inl)
        gpunb_force_kernel<false, MIN_BLOCKS, false, false, true><<<grid, block, 0, stream>>>(*a, inline_arg<false>{0});
    else if (inl)
        gpunb_force_kernel<PRECISE, MIN_BLOCKS, false, true>
            <<<grid, block, 0, stream>>>(*a, *reinterpret_cast<const inline_arg<true> *>(inl));
    else
        gpunb_force_kernel<PRECISE, MIN_BLOCKS, false, false><<<grid, block, 0, stream>>>(*a, inline_arg<false>{0});
    return cudaGetLastError();
}

template <int MIN_BLOCKS>
static cudaError_t launch_blocks(const gpunb_cuda_force_args *a, const gpunb_cuda_inline_i *inl,
                                 cudaStream_t stream)
{
    if (a->single)
        return a->precise ? launch_variant<true, MIN_BLOCKS, true>(a, NULL, stream)
                          : launch_variant<false, MIN_BLOCKS, true>(a, NULL, stream);
    return a->precise ? launch_variant<true, MIN_BLOCKS, false>(a, inl, stream)
                      : launch_variant<false, MIN_BLOCKS, false>(a, inl, stream);
}

extern "C" cudaError_t gpunb_cuda_launch_force(const gpunb_cuda_force_args *a, const gpunb_cuda_inline_i *inl,
                                               cudaStream_t stream)
{
    if (inl && (a->ni_tiles != 1 || a->single))
        return cudaErrorInvalidValue;
    if (a->min_blocks == GPUNB_CUDA_FORCE_MIN_BLOCKS_ALT)
        return launch_blocks<GPUNB_CUDA_FORCE_MIN_BLOCKS_ALT>(a, inl, stream);
    return launch_blocks<GPUNB_CUDA_FORCE_MIN_BLOCKS>(a, inl, stream);
}

/* The force kernels use shared memory, not L1: ask for the largest shared
 * carveout, so that the driver's choice of split never caps the blocks per
 * SM below what the registers allow (5 x 39 KB needs the 196 KB split). */
template <bool PRECISE, int MIN_BLOCKS, bool SINGLE, bool INLINE, bool FAR = false>
static cudaError_t prefer_shared(void)
{
    return cudaFuncSetAttribute(gpunb_force_kernel<PRECISE, MIN_BLOCKS, SINGLE, INLINE, FAR>,
                                cudaFuncAttributePreferredSharedMemoryCarveout,
                                (int)cudaSharedmemCarveoutMaxShared);
}

template <int MIN_BLOCKS>
static cudaError_t prefer_shared_all(void)
{
    cudaError_t err;
    if ((err = prefer_shared<false, MIN_BLOCKS, false, false>()) != cudaSuccess ||
        (err = prefer_shared<true, MIN_BLOCKS, false, false>()) != cudaSuccess ||
        (err = prefer_shared<false, MIN_BLOCKS, false, true>()) != cudaSuccess ||
        (err = prefer_shared<true, MIN_BLOCKS, false, true>()) != cudaSuccess ||
        (err = prefer_shared<false, MIN_BLOCKS, true, false>()) != cudaSuccess ||
        (err = prefer_shared<false, MIN_BLOCKS, false, false, true>()) != cudaSuccess)
        return err;
    return prefer_shared<true, MIN_BLOCKS, true, false>();
}

extern "C" cudaError_t gpunb_cuda_force_occupancy(int min_blocks, int *blocks_per_sm)
{
    cudaError_t err;
    if ((err = prefer_shared_all<GPUNB_CUDA_FORCE_MIN_BLOCKS>()) != cudaSuccess ||
        (err = prefer_shared_all<GPUNB_CUDA_FORCE_MIN_BLOCKS_ALT>()) != cudaSuccess)
        return err;
    if (min_blocks == GPUNB_CUDA_FORCE_MIN_BLOCKS_ALT)
        return cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            blocks_per_sm, gpunb_force_kernel<false, GPUNB_CUDA_FORCE_MIN_BLOCKS_ALT, false, false>,
            GPUNB_CUDA_FORCE_THREADS, 0);
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        blocks_per_sm, gpunb_force_kernel<false, GPUNB_CUDA_FORCE_MIN_BLOCKS, false, false>,
        GPUNB_CUDA_FORCE_THREADS, 0);
}

template <int MIN_BLOCKS>
static cudaError_t single_occupancy(int *blocks_per_sm)
{
    int fast = 0, precise = 0;
    cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &fast, gpunb_force_kernel<false, MIN_BLOCKS, true, false>, GPUNB_CUDA_FORCE_THREADS, 0);
    if (err == cudaSuccess)
        err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&precise, gpunb_force_kernel<true, MIN_BLOCKS, true, false>,
                                                            GPUNB_CUDA_FORCE_THREADS, 0);
    *blocks_per_sm = fast < precise ? fast : precise;
    return err;
}

extern "C" cudaError_t gpunb_cuda_single_occupancy(int min_blocks, int *blocks_per_sm)
{
    if (min_blocks == GPUNB_CUDA_FORCE_MIN_BLOCKS_ALT)
        return single_occupancy<GPUNB_CUDA_FORCE_MIN_BLOCKS_ALT>(blocks_per_sm);
    return single_occupancy<GPUNB_CUDA_FORCE_MIN_BLOCKS>(blocks_per_sm);
}

extern "C" cudaError_t gpunb_cuda_probe_kernels(void)
{
    cudaFuncAttributes attr;
    cudaError_t err =
        cudaFuncGetAttributes(&attr, gpunb_force_kernel<false, GPUNB_CUDA_FORCE_MIN_BLOCKS, false, false>);
    if (err == cudaSuccess)
        err = cudaFuncGetAttributes(&attr, gpunb_force_kernel<true, GPUNB_CUDA_FORCE_MIN_BLOCKS, false, false>);
    return err;
}
