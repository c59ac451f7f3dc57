/* gpunb_cuda_force.cu -- the regular-force kernel: force, jerk, potential and
 * neighbour flags of NI i-particles (one per thread) against one slice of the
 * j-set (one slice per block column), so that even 32-64 i fill every SM.
 *
 * Precision: positions are float relative to an origin chosen at send (the
 * j-set's centre of mass), so particles far from the coordinate origin keep
 * their digits; pair arithmetic in single precision, rsqrt on the special
 * function unit; each tile's 64 terms are summed in float and the tile sums
 * in double (long slices lose nothing to the running sum).  The PRECISE
 * variant also carries each coordinate's float remainder (x = hi + lo) and
 * forms dx = (hi_j - hi_i) + (lo_j - lo_i): close pairs that are no
 * neighbours (tiny h2) keep their relative accuracy, at 4 more instructions
 * per interaction; the host runs it only where the fast one may be short. */
#include "gpunb_cuda_kernels.h"


/* rsqrt.approx.ftz: one MUFU.RSQ, without the denormal fix-up code that
 * rsqrtf() gets when nvcc runs without -ftz=true. */
static __device__ __forceinline__ float rsqrt_ftz(float x)
{
    float y;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* Store the neighbours flagged in `bits` (bit k = j index jbase + k) in i's
 * unordered partial list; the count grows even past cap so that overflow
 * reports the true count.  Rare: only words with a neighbour get here. */
static __device__ __noinline__ void record_neighbours(unsigned bits, int jbase, int *count,
                                                      int *list, int cap)
{
    int pos = atomicAdd(count, __popc(bits));
    while (bits) {
        int k = __ffs(bits) - 1;
        bits &= bits - 1;
        if (pos < cap)
            list[pos] = jbase + k;
        pos++;
    }
}

template <bool PRECISE>
static __global__ void __launch_bounds__(GPUNB_CUDA_BLOCK_I, 16)
gpunb_force_kernel(const gpunb_cuda_force_args a)
{
    __shared__ float4 sp[GPUNB_CUDA_TILE_J], sv[GPUNB_CUDA_TILE_J];
    __shared__ float4 sl[PRECISE ? GPUNB_CUDA_TILE_J : 1];
    const int tid = threadIdx.x;
    const int i = blockIdx.y * GPUNB_CUDA_BLOCK_I + tid;
    const int ni_pad = gridDim.y * GPUNB_CUDA_BLOCK_I;
    const int slice = blockIdx.x;
    const long long t_begin = a.ntiles * slice / a.nslices;
    const long long t_end = a.ntiles * (slice + 1) / a.nslices;

    if (slice == 0 && blockIdx.y == 0 && tid == 0)
        *a.total = 0;

    const float4 pi = a.ipos[i], vi = a.ivel[i];
    const float4 li = PRECISE ? a.ilo[i] : make_float4(0, 0, 0, 0);
    const float h2 = pi.w, dt = vi.w;
    double sum[GPUNB_CUDA_NPARTIAL] = {0, 0, 0, 0, 0, 0, 0};
    int *const my_count = a.nbcount + i;
    int *const my_list = a.nblist + (size_t)i * a.cap;

    for (long long t = t_begin; t < t_end; t++) {
        const long long jt = t * GPUNB_CUDA_TILE_J;
        sp[tid] = a.jpos[jt + tid];
        sv[tid] = a.jvel[jt + tid];
        if (PRECISE)
            sl[tid] = a.jlo[jt + tid];
        __syncthreads();
        float ax = 0, ay = 0, az = 0, jx = 0, jy = 0, jz = 0, pot = 0;
#pragma unroll
        for (int w = 0; w < GPUNB_CUDA_TILE_J / 32; w++) {
            unsigned bits = 0;
#pragma unroll
            for (int k = 0; k < 32; k++) {
                /* 2 LDS, 6 FADD, 3+3 (r2) +3 (rp) +3 (rp2), criterion 3,
                 * MUFU + select, 3 FMUL, 1 FADD (pot), 3 FFMA (acc),
                 * 3 (rv) + 2 + 6 (jerk): about 42 instructions and the
                 * 60 flops of the convention per interaction. */
                const float4 pj = sp[w * 32 + k], vj = sv[w * 32 + k];
                float dx = pj.x - pi.x, dy = pj.y - pi.y, dz = pj.z - pi.z;
                if (PRECISE) {
                    const float4 lj = sl[w * 32 + k];
                    dx += lj.x - li.x;
                    dy += lj.y - li.y;
                    dz += lj.z - li.z;
                }
                const float dvx = vj.x - vi.x, dvy = vj.y - vi.y, dvz = vj.z - vi.z;
                const float r2 = dx * dx + dy * dy + dz * dz;
                const float px = dx + dt * dvx, py = dy + dt * dvy, pz = dz + dt * dvz;
                const float rp2 = px * px + py * py + pz * pz;
                const float mh2 = pj.w * h2;
                /* Neighbour: min(r2, rp2) < m_j h2, written without a branch.
                 * Neighbours and r = 0 pairs get rinv = 0: no force, no NaN. */
                const bool nb = (r2 < mh2) | (rp2 < mh2);
                float rinv = rsqrt_ftz(r2);
                rinv = (nb | (r2 == 0.0f)) ? 0.0f : rinv;
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
            if (bits)
                record_neighbours(bits, a.j0 + (int)jt + w * 32, my_count, my_list, a.cap);
        }
        sum[0] += ax;
        sum[1] += ay;
        sum[2] += az;
        sum[3] += jx;
        sum[4] += jy;
        sum[5] += jz;
        sum[6] += pot;
        __syncthreads();
    }
    float *out = a.partial + (size_t)slice * GPUNB_CUDA_NPARTIAL * ni_pad + i;
#pragma unroll
    for (int c = 0; c < GPUNB_CUDA_NPARTIAL; c++)
        out[(size_t)c * ni_pad] = (float)sum[c];
}

extern "C" cudaError_t gpunb_cuda_launch_force(const gpunb_cuda_force_args *a, cudaStream_t stream)
{
    dim3 grid((unsigned)a->nslices, (unsigned)a->ni_tiles);
    if (a->precise)
        gpunb_force_kernel<true><<<grid, GPUNB_CUDA_BLOCK_I, 0, stream>>>(*a);
    else
        gpunb_force_kernel<false><<<grid, GPUNB_CUDA_BLOCK_I, 0, stream>>>(*a);
    return cudaGetLastError();
}

extern "C" cudaError_t gpunb_cuda_force_occupancy(int *blocks_per_sm)
{
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, gpunb_force_kernel<false>,
                                                         GPUNB_CUDA_BLOCK_I, 0);
}

extern "C" cudaError_t gpunb_cuda_probe_kernels(void)
{
    cudaFuncAttributes attr;
    cudaError_t err = cudaFuncGetAttributes(&attr, gpunb_force_kernel<false>);
    return err != cudaSuccess ? err : cudaFuncGetAttributes(&attr, gpunb_force_kernel<true>);
}
