/* gpunb_cuda_spatial.cu -- the j-set in spatial order, for the far test
 * (gpunb_cuda_force.cu): Morton keys of the float positions, a radix
 * sort (CUB's, deterministic), and the sorted order laid out with its
 * j-tiles spread apart (run r of TILE_J sorted j to tile r * stride mod
 * ntiles), so that every force slice holds some of every region and no
 * block gets all of an i-tile's neighbours.  The force kernel then reads
 * sorted copies of the j-set; the j-set itself stays in the caller's order
 * for everything else (members as i, fetches, the lists' j indices).
 * With it, each call's i in spatial order too (warps of nearby i pass the
 * far test), sorted on the GPU by one block before the force kernel. */
#include "gpunb_cuda_kernels.h"

#include <cub/device/device_radix_sort.cuh>

static __device__ __forceinline__ unsigned spread10(unsigned v)
{
    v &= 0x3ffu;
    v = (v | (v << 16)) & 0x30000ffu;
    v = (v | (v << 8)) & 0x300f00fu;
    v = (v | (v << 4)) & 0x30c30c3u;
    return (v | (v << 2)) & 0x9249249u;
}

/* The Morton code (30 bits) of a float position about the origin, on the
 * cube of 1024 cells per axis at `scale` cells per unit (beyond it clamped;
 * NaN to cell 0). */
static __device__ __forceinline__ unsigned morton_of(float4 p, float scale)
{
    const float c[3] = {p.x, p.y, p.z};
    unsigned cell[3];
    for (int d = 0; d < 3; d++)
        cell[d] = (unsigned)fminf(fmaxf(fmaf(c[d], scale, 512.0f), 0.0f), 1023.0f);
    return spread10(cell[0]) | spread10(cell[1]) << 1 | spread10(cell[2]) << 2;
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

static __global__ void __launch_bounds__(GPUNB_CUDA_PREDICT_THREADS)
gpunb_spatial_copy_kernel(const int *__restrict__ perm, int n, const float4 *__restrict__ jpos,
                          const float4 *__restrict__ jvel, const float4 *__restrict__ jlo, float4 *__restrict__ spos,
                          float4 *__restrict__ svel, float4 *__restrict__ slo)
{
    const int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= n)
        return;
    const int j = perm[q];
    spos[q] = jpos[j];
    svel[q] = jvel[j];
    slo[q] = jlo[j];
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

extern "C" cudaError_t gpunb_cuda_launch_spatial_copy(const int *perm, int n, const float4 *jpos, const float4 *jvel,
                                                      const float4 *jlo, float4 *spos, float4 *svel, float4 *slo,
                                                      cudaStream_t stream)
{
    const int nt = GPUNB_CUDA_PREDICT_THREADS;
    if (n > 0)
        gpunb_spatial_copy_kernel<<<(n + nt - 1) / nt, nt, 0, stream>>>(perm, n, jpos, jvel, jlo, spos, svel, slo);
    return cudaGetLastError();
}

/* A call's i in spatial order, sorted by one block: keys of 32 bits, the
 * Morton code's top 32 - ibits bits above the i's own index (ibits bits), so
 * every key is distinct and any sort gives the one order; a bitonic sort in
 * shared memory, padded to a power of two with keys that sort last.  Then
 * the i's records in that order (places ni .. ni_pad - 1 keep the padding),
 * and for the host perm[k] = the caller's i at place k, rank[i] = its place
 * (perm, rank may be NULL: another GPU's copy of the same order). */
static __global__ void __launch_bounds__(GPUNB_CUDA_ORDER_THREADS)
gpunb_order_i_kernel(int ni, int ni_pad, int npow2, int ibits, float scale, const float4 *__restrict__ ibuf,
                     float4 *__restrict__ ibuf_sorted, int nbuf, const int4 *__restrict__ iidx,
                     int4 *__restrict__ iidx_sorted, const float4 *__restrict__ mpos, int *__restrict__ perm,
                     int *__restrict__ rank)
{
    extern __shared__ unsigned key[];
    const int tid = threadIdx.x, nt = blockDim.x;
    const unsigned index_mask = (1u << ibits) - 1u;
    for (int k = tid; k < npow2; k += nt) {
        unsigned kk = 0xffffffffu;
        if (k < ni) {
            const float4 p = iidx ? mpos[iidx[k].x] : ibuf[k];
            kk = (morton_of(p, scale) >> (ibits - 2)) << ibits | (unsigned)k;
        }
        key[k] = kk;
    }
    for (int size = 2; size <= npow2; size <<= 1)
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            __syncthreads();
            for (int t = tid; t < npow2 / 2; t += nt) {
                const int lo = 2 * t - (t & (stride - 1)), hi = lo + stride;
                const unsigned a = key[lo], b = key[hi];
                if ((a > b) == ((lo & size) == 0)) {
                    key[lo] = b;
                    key[hi] = a;
                }
            }
        }
    __syncthreads();
    for (int k = tid; k < ni_pad; k += nt) {
        const int i = k < ni ? (int)(key[k] & index_mask) : k;
        if (iidx)
            iidx_sorted[k] = iidx[i];
        else
            for (int c = 0; c < nbuf; c++)
                ibuf_sorted[c * ni_pad + k] = ibuf[c * ni_pad + i];
        if (perm && k < ni) {
            perm[k] = i;
            rank[i] = k;
        }
    }
    /* the host reads perm and rank once a later kernel's writes are in */
    __threadfence_system();
}

static int order_npow2(int ni)
{
    int n = 2;
    while (n < ni)
        n <<= 1;
    return n;
}

extern "C" cudaError_t gpunb_cuda_order_i_prepare(void)
{
    return cudaFuncSetAttribute(gpunb_order_i_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)(sizeof(unsigned) * (size_t)order_npow2(GPUNB_CUDA_NI_CHUNK)));
}

extern "C" cudaError_t gpunb_cuda_launch_order_i(int ni, int ni_pad, float scale, const float4 *ibuf,
                                                 float4 *ibuf_sorted, int nbuf, const int4 *iidx,
                                                 int4 *iidx_sorted, const float4 *mpos, int *perm, int *rank,
                                                 cudaStream_t stream)
{
    const int npow2 = order_npow2(ni);
    int ibits = 2;
    while ((1 << ibits) < ni)
        ibits++;
    if (ni < 1 || ni > GPUNB_CUDA_NI_CHUNK || ni_pad < ni)
        return cudaErrorInvalidValue;
    gpunb_order_i_kernel<<<1, GPUNB_CUDA_ORDER_THREADS, sizeof(unsigned) * (size_t)npow2, stream>>>(
        ni, ni_pad, npow2, ibits, scale, ibuf, ibuf_sorted, nbuf, iidx, iidx_sorted, mpos, perm, rank);
    return cudaGetLastError();
}
