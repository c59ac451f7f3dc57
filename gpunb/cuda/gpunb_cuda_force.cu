/* gpunb_cuda_force.cu -- the regular-force kernel: force, jerk, potential and
 * neighbour flags of BLOCK_I i-particles against one slice of the j-set per
 * block (the slices of one i-tile spread over the grid's x dimension), so
 * that even 32-64 i fill every SM; inside a block JWAYS threads share each i
 * and split the tile's j.
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
#include "gpunb_cuda_kernels.h"

/* rsqrt.approx.ftz: one MUFU.RSQ, without the denormal fix-up code that
 * rsqrtf() gets when nvcc runs without -ftz=true. */
static __device__ __forceinline__ float rsqrt_ftz(float x)
{
    float y;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* Append a thread's buffered neighbours (column `lane` of buf) to its i's
 * unordered list in global memory; the count grows even past cap, so that
 * an overflow reports the true count. */
static __device__ __noinline__ void flush_neighbours(int (*buf)[GPUNB_CUDA_FORCE_THREADS], int lane,
                                                     int n, int *count, int *list, int cap)
{
    int pos = atomicAdd(count, n);
    for (int e = 0; e < n && pos + e < cap; e++)
        list[pos + e] = buf[e][lane];
}

template <bool PRECISE, int MIN_BLOCKS>
static __global__ void __launch_bounds__(GPUNB_CUDA_FORCE_THREADS, MIN_BLOCKS)
gpunb_force_kernel(const gpunb_cuda_force_args a)
{
    __shared__ float4 sp[GPUNB_CUDA_TILE_J], sv[GPUNB_CUDA_TILE_J];
    __shared__ float4 sl[PRECISE ? GPUNB_CUDA_TILE_J : 1];
    __shared__ int nbbuf[GPUNB_CUDA_NB_BUFFER][GPUNB_CUDA_FORCE_THREADS];
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
     * that starts or ends inside a tile leaves warps of the block idle. */
    const long long nunits = a.ntiles * GPUNB_CUDA_JWAYS / a.granule;
    const long long q_begin = nunits * slice / a.nslices * a.granule;
    const long long q_end = nunits * (slice + 1) / a.nslices * a.granule;

    if (slice == 0 && blockIdx.y == 0 && tid == 0)
        *a.total = 0; /* the gathering kernel's allocator, for this call */

    float4 pi, vi, li = make_float4(0, 0, 0, 0);
    if (a.iidx) { /* j-set members: their entries are bit-equal, self is r = 0 */
        const int4 d = a.iidx[i];
        if (d.x >= 0) {
            pi = a.jpos[d.x];
            vi = a.jvel[d.x];
            if (PRECISE)
                li = a.jlo[d.x];
        } else {
            pi = vi = li;
        }
        pi.w = d.x >= 0 ? __int_as_float(d.y) : -1.0f; /* padding: h2 < 0 */
        vi.w = __int_as_float(d.z);
    } else {
        pi = a.ipos[i];
        vi = a.ivel[i];
        if (PRECISE)
            li = a.ilo[i];
    }
    const float h2 = pi.w, dt = vi.w;
#pragma unroll
    for (int c = 0; c < GPUNB_CUDA_NPARTIAL; c++)
        sums[c][tid] = 0.0;
    int nbuf = 0;
    int *const my_count = a.nbcount + i;
    int *const my_list = a.nblist + (size_t)i * a.cap;

    for (long long t = q_begin / GPUNB_CUDA_JWAYS; t * GPUNB_CUDA_JWAYS < q_end; t++) {
        const long long jt = t * GPUNB_CUDA_TILE_J;
        const long long my_quarter = t * GPUNB_CUDA_JWAYS + way;
        sp[tid] = a.jpos[jt + tid];
        sv[tid] = a.jvel[jt + tid];
        if (PRECISE)
            sl[tid] = a.jlo[jt + tid];
        __syncthreads();
        if (my_quarter >= q_begin && my_quarter < q_end) { /* uniform per warp */
            float ax = 0, ay = 0, az = 0, jx = 0, jy = 0, jz = 0, pot = 0;
            const int j_first = way * GPUNB_CUDA_BLOCK_I; /* this thread's part of the tile */
#pragma unroll
            for (int w = 0; w < GPUNB_CUDA_BLOCK_I / 32; w++) {
                unsigned bits = 0;
#pragma unroll
                for (int k = 0; k < 32; k++) {
                    /* Per interaction (fast kernel, SASS): 2 LDS.128, 6 FADD
                     * (dx, dv), 3 (r2, floor folded in), 3 + 3 (rp, rp2),
                     * FMUL + 2 FSETP (criterion), MUFU + FSEL, 3 FMUL
                     * (rinv2, m rinv, m rinv^3), FADD (pot), 3 FFMA (acc),
                     * 3 + 2 + 6 (jerk), 1 (flag) = 41 instructions for the
                     * 60 flops of the convention; the PRECISE one adds an
                     * LDS and 3 FADD (and the exact r = 0 test). */
                    const int q = j_first + w * 32 + k;
                    const float4 pj = sp[q], vj = sv[q];
                    float dx = pj.x - pi.x, dy = pj.y - pi.y, dz = pj.z - pi.z;
                    if (PRECISE) {
                        const float4 lj = sl[q];
                        dx += lj.x - li.x;
                        dy += lj.y - li.y;
                        dz += lj.z - li.z;
                    }
                    const float dvx = vj.x - vi.x, dvy = vj.y - vi.y, dvz = vj.z - vi.z;
                    /* The fast kernel floors r2 at R2_FLOOR (folded into an FFMA):
                     * rsqrt stays finite at r = 0, so only neighbours need the
                     * select; an r = 0 pair that is no neighbour then adds
                     * m * 0 (zero-mass j) to the forces, but m_i * 1e12 to the
                     * potential if it is i itself with m_i h2 <= R2_FLOOR: the
                     * host sends such i (h2 ~ 0) to the PRECISE kernel, which
                     * tests r2 == 0 exactly. */
                    const float r2 = PRECISE ? dx * dx + dy * dy + dz * dz
                                             : fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, GPUNB_CUDA_R2_FLOOR)));
                    const float px = dx + dt * dvx, py = dy + dt * dvy, pz = dz + dt * dvz;
                    const float rp2 = px * px + py * py + pz * pz;
                    const float mh2 = pj.w * h2;
                    /* Neighbour: min(r2, rp2) < m_j h2, written without a branch.
                     * Neighbours and r = 0 pairs get rinv = 0: no force, no NaN. */
                    const bool nb = (r2 < mh2) | (rp2 < mh2);
                    float rinv = rsqrt_ftz(r2);
                    rinv = (PRECISE ? (nb | (r2 == 0.0f)) : nb) ? 0.0f : rinv;
                    const float rinv2 = rinv * rinv;
                    const float mr = pj.w * rinv;
                    const float mr3 = mr * rinv2;
                    const float rv = dx * dvx + dy * dvy + dz * dvz;
                    const float alpha = -3.0f * rv * rinv2;
                    pot += mr;
                    ax += mr3 * dx;
                    ay += mr3 * dy;
                    az += mr3 * dz;
                    jx += mr3 * (dvx + alpha * dx);
                    jy += mr3 * (dvy + alpha * dy);
                    jz += mr3 * (dvz + alpha * dz);
                    bits |= nb ? (1u << k) : 0u;
                }
                /* Rare: a word with a neighbour.  Buffer them in shared memory;
                 * global memory only when the buffer is full. */
                while (bits) {
                    const int k = __ffs(bits) - 1;
                    bits &= bits - 1;
                    if (nbuf == GPUNB_CUDA_NB_BUFFER) {
                        flush_neighbours(nbbuf, tid, nbuf, my_count, my_list, a.cap);
                        nbuf = 0;
                    }
                    nbbuf[nbuf++][tid] = a.j0 + (int)jt + j_first + w * 32 + k;
                }
            }
            sums[0][tid] += ax;
            sums[1][tid] += ay;
            sums[2][tid] += az;
            sums[3][tid] += jx;
            sums[4][tid] += jy;
            sums[5][tid] += jz;
            sums[6][tid] += pot;
        }
        __syncthreads();
    }
    if (nbuf)
        flush_neighbours(nbbuf, tid, nbuf, my_count, my_list, a.cap);

    /* The JWAYS partial sums of each i, added in a fixed order. */
    __syncthreads();
    if (way == 0) {
        float *out = a.partial + (size_t)slice * GPUNB_CUDA_NPARTIAL * ni_pad + i;
#pragma unroll
        for (int c = 0; c < GPUNB_CUDA_NPARTIAL; c++) {
            double s = sums[c][ti];
            for (int w = 1; w < GPUNB_CUDA_JWAYS; w++)
                s += sums[c][ti + w * GPUNB_CUDA_BLOCK_I];
            out[(size_t)c * ni_pad] = (float)s;
        }
    }
}

extern "C" cudaError_t gpunb_cuda_launch_force(const gpunb_cuda_force_args *a, cudaStream_t stream)
{
    dim3 grid((unsigned)a->nslices, (unsigned)a->ni_tiles);
    const unsigned nt = GPUNB_CUDA_FORCE_THREADS;
    if (a->min_blocks == GPUNB_CUDA_FORCE_MIN_BLOCKS_ALT) {
        if (a->precise)
            gpunb_force_kernel<true, GPUNB_CUDA_FORCE_MIN_BLOCKS_ALT><<<grid, nt, 0, stream>>>(*a);
        else
            gpunb_force_kernel<false, GPUNB_CUDA_FORCE_MIN_BLOCKS_ALT><<<grid, nt, 0, stream>>>(*a);
    } else {
        if (a->precise)
            gpunb_force_kernel<true, GPUNB_CUDA_FORCE_MIN_BLOCKS><<<grid, nt, 0, stream>>>(*a);
        else
            gpunb_force_kernel<false, GPUNB_CUDA_FORCE_MIN_BLOCKS><<<grid, nt, 0, stream>>>(*a);
    }
    return cudaGetLastError();
}

/* The force kernels use shared memory, not L1: ask for the largest shared
 * carveout, so that the driver's choice of split never caps the blocks per
 * SM below what the registers allow (5 x 31 KB needs the 164 KB split). */
template <bool PRECISE, int MIN_BLOCKS>
static cudaError_t prefer_shared(void)
{
    return cudaFuncSetAttribute(gpunb_force_kernel<PRECISE, MIN_BLOCKS>,
                                cudaFuncAttributePreferredSharedMemoryCarveout,
                                (int)cudaSharedmemCarveoutMaxShared);
}

extern "C" cudaError_t gpunb_cuda_force_occupancy(int min_blocks, int *blocks_per_sm)
{
    cudaError_t err;
    if ((err = prefer_shared<false, GPUNB_CUDA_FORCE_MIN_BLOCKS>()) != cudaSuccess ||
        (err = prefer_shared<true, GPUNB_CUDA_FORCE_MIN_BLOCKS>()) != cudaSuccess ||
        (err = prefer_shared<false, GPUNB_CUDA_FORCE_MIN_BLOCKS_ALT>()) != cudaSuccess ||
        (err = prefer_shared<true, GPUNB_CUDA_FORCE_MIN_BLOCKS_ALT>()) != cudaSuccess)
        return err;
    if (min_blocks == GPUNB_CUDA_FORCE_MIN_BLOCKS_ALT)
        return cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            blocks_per_sm, gpunb_force_kernel<false, GPUNB_CUDA_FORCE_MIN_BLOCKS_ALT>,
            GPUNB_CUDA_FORCE_THREADS, 0);
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        blocks_per_sm, gpunb_force_kernel<false, GPUNB_CUDA_FORCE_MIN_BLOCKS>, GPUNB_CUDA_FORCE_THREADS, 0);
}

extern "C" cudaError_t gpunb_cuda_probe_kernels(void)
{
    cudaFuncAttributes attr;
    cudaError_t err = cudaFuncGetAttributes(&attr, gpunb_force_kernel<false, GPUNB_CUDA_FORCE_MIN_BLOCKS>);
    if (err == cudaSuccess)
        err = cudaFuncGetAttributes(&attr, gpunb_force_kernel<true, GPUNB_CUDA_FORCE_MIN_BLOCKS>);
    return err;
}
