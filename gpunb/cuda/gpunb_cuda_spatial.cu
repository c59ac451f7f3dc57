/* gpunb_cuda_spatial.cu -- the j-set in spatial order, for the far test
 * (gpunb_cuda_force.cu): Morton keys of the float positions, a radix
 * sort (CUB's, deterministic), and the sorted order laid out with its
 * j-tiles spread apart (run r of TILE_J sorted j to tile r * stride mod
 * ntiles), so that every force slice holds some of every region and no
 * block gets all of an i-tile's neighbours.  The force kernel then reads
 * sorted copies of the j-set; the j-set itself stays in the caller's order
 * for everything else (members as i, fetches, the lists' j indices).  The
 * copies are made with the boxes of the far test (gpunb_cuda_boxes.cu).
 * With it, each call's i in spatial order too (warps of nearby i pass the
 * far test), ranked on the GPU before the force kernel. */
#include "gpunb_cuda_kernels.h"

#include <cub/device/device_radix_sort.cuh>

/* The Morton code (30 bits) of a float position about the origin, on the
 * cube of 1024 cells per axis at `scale` cells per unit (beyond it clamped;
 * NaN to cell 0). */
static __device__ __forceinline__ unsigned morton_of(float4 p, float scale)
{
    const float c[3] = {p.x, p.y, p.z};
    unsigned cell[3];
    for (int d = 0; d < 3; d++)
        cell[d] = (unsigned)fminf(fmaxf(fmaf(c[d], scale, 512.0f), 0.0f), 1023.0f);
    return nb6_morton10(cell);
}

/* key[q]: the Morton code of jpos[q] over the cube of 1024 cells per axis
 * at `scale` cells per unit about the origin (beyond it clamped); massless
 * j (padding, ghosts) last. */
static __global__ void __launch_bounds__(GPUNB_CUDA_PREDICT_THREADS)
gpunb_keys_kernel(const float4 *__restrict__ jpos, int n, float scale, unsigned *__restrict__ key,
                  int *__restrict__ idx)
{
    const int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= n)
        return;
    const float4 p = jpos[q];
    key[q] = p.w > 0.0f ? morton_of(p, scale) : 0xffffffffu;
    idx[q] = q;
}

static __global__ void __launch_bounds__(GPUNB_CUDA_PREDICT_THREADS)
gpunb_layout_kernel(const int *__restrict__ sorted, int n, int stride, int *__restrict__ perm)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n)
        return;
    const int runs = n / GPUNB_CUDA_TILE_J, r = p / GPUNB_CUDA_TILE_J;
    perm[(int)((long long)r * stride % runs) * GPUNB_CUDA_TILE_J + p % GPUNB_CUDA_TILE_J] = sorted[p];
}

extern "C" cudaError_t gpunb_cuda_spatial_temp_bytes(int n, size_t *bytes)
{
    *bytes = 0;
    return cub::DeviceRadixSort::SortPairs(nullptr, *bytes, (const unsigned *)nullptr, (unsigned *)nullptr,
                                           (const int *)nullptr, (int *)nullptr, n);
}

extern "C" cudaError_t gpunb_cuda_launch_spatial_sort(const float4 *jpos, int n, float scale, int stride,
                                                      unsigned *keys, int *idx, void *temp, size_t temp_bytes,
                                                      int *perm, cudaStream_t stream)
{
    const int nt = GPUNB_CUDA_PREDICT_THREADS, nb = (n + nt - 1) / nt;
    gpunb_keys_kernel<<<nb, nt, 0, stream>>>(jpos, n, scale, keys, idx);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        return err;
    err = cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, keys + n, idx, idx + n, n, 0, 32, stream);
    if (err != cudaSuccess)
        return err;
    gpunb_layout_kernel<<<nb, nt, 0, stream>>>(idx + n, n, stride, perm);
    return cudaGetLastError();
}

/* A call's i in spatial order, by ranking: keys of 32 bits, the Morton
 * code's top 32 - ibits bits above the i's own index (ibits bits), so every
 * key is distinct and its rank (the number of smaller keys) is its place.
 * A block per ORDER_OWN i: each block makes all ni keys in shared memory,
 * its warps count the smaller ones over eighths of them, and the block
 * writes its i's records at their places (places ni .. ni_pad - 1 keep the
 * padding) and iorder[place] = i.  Many blocks side by side, a few hundred
 * instructions each: one block's bitonic sort of 1024 keys (55 barrier
 * stages) took 15 us before the force kernel could start. */
#define ORDER_OWN 32
#define ORDER_WARPS (GPUNB_CUDA_ORDER_THREADS / 32)

static __global__ void __launch_bounds__(GPUNB_CUDA_ORDER_THREADS)
gpunb_order_i_kernel(int ni, int ni_pad, int ibits, float scale, const float4 *__restrict__ ibuf,
                     float4 *__restrict__ ibuf_sorted, int nbuf, const int4 *__restrict__ iidx,
                     int4 *__restrict__ iidx_sorted, const float4 *__restrict__ mpos, int *__restrict__ iorder)
{
    extern __shared__ __align__(16) unsigned key[]; /* ni rounded up to 4 */
    __shared__ int part[ORDER_WARPS][ORDER_OWN];
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int n4 = (ni + 3) >> 2;
    for (int k = tid; k < 4 * n4; k += GPUNB_CUDA_ORDER_THREADS) {
        unsigned kk = 0xffffffffu; /* never smaller than a key */
        if (k < ni) {
            const float4 p = iidx ? mpos[iidx[k].x] : ibuf[k];
            kk = (morton_of(p, scale) >> (ibits - 2)) << ibits | (unsigned)k;
        }
        key[k] = kk;
    }
    __syncthreads();
    const int own = blockIdx.x * ORDER_OWN + lane;
    const unsigned mine = own < ni ? key[own] : 0u;
    const uint4 *k4 = reinterpret_cast<const uint4 *>(key);
    const int m0 = n4 * warp / ORDER_WARPS, m1 = n4 * (warp + 1) / ORDER_WARPS;
    int smaller = 0;
#pragma unroll 4
    for (int m = m0; m < m1; m++) {
        const uint4 q = k4[m];
        smaller += (q.x < mine) + (q.y < mine) + (q.z < mine) + (q.w < mine);
    }
    part[warp][lane] = smaller;
    __syncthreads();
    if (own >= ni_pad)
        return;
    int place = own; /* padding stays */
    if (own < ni) {
        place = 0;
        for (int w = 0; w < ORDER_WARPS; w++)
            place += part[w][lane];
    }
    /* warp c copies array c of the i's records; the last warp their indices */
    if (iidx && warp == 0)
        iidx_sorted[place] = iidx[own];
    else if (!iidx && warp < nbuf)
        ibuf_sorted[warp * ni_pad + place] = ibuf[warp * ni_pad + own];
    if (warp == ORDER_WARPS - 1 && own < ni)
        iorder[place] = own;
}

extern "C" cudaError_t gpunb_cuda_order_i_prepare(void)
{
    return cudaFuncSetAttribute(gpunb_order_i_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)(sizeof(unsigned) * (size_t)GPUNB_CUDA_NI_CHUNK));
}

extern "C" cudaError_t gpunb_cuda_launch_order_i(int ni, int ni_pad, float scale, const float4 *ibuf,
                                                 float4 *ibuf_sorted, int nbuf, const int4 *iidx,
                                                 int4 *iidx_sorted, const float4 *mpos, int *iorder,
                                                 cudaStream_t stream)
{
    static_assert(GPUNB_CUDA_NI_CHUNK % 4 == 0, "the keys, rounded up to 4, fit the opted-in shared memory");
    static_assert(ORDER_WARPS > 3, "a warp per array of the i's records, and one more");
    int ibits = 2;
    while ((1 << ibits) < ni)
        ibits++;
    if (ni < 1 || ni > GPUNB_CUDA_NI_CHUNK || ni_pad < ni)
        return cudaErrorInvalidValue;
    const unsigned blocks = (unsigned)(ni_pad + ORDER_OWN - 1) / ORDER_OWN;
    gpunb_order_i_kernel<<<blocks, GPUNB_CUDA_ORDER_THREADS, sizeof(unsigned) * (size_t)((ni + 3) & ~3), stream>>>(
        ni, ni_pad, ibits, scale, ibuf, ibuf_sorted, nbuf, iidx, iidx_sorted, mpos, iorder);
    return cudaGetLastError();
}
