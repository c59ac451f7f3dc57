/* gpunb_cuda_spatial.cu -- the j-set in spatial order, for the far test
 * (gpunb_cuda_force.cu): Morton keys of the float positions, a radix
 * sort (CUB's, deterministic), and the sorted order laid out with its
 * j-tiles spread apart (run r of TILE_J sorted j to tile r * stride mod
 * ntiles), so that every force slice holds some of every region and no
 * block gets all of an i-tile's neighbours.  The force kernel then reads
 * sorted copies of the j-set; the j-set itself stays in the caller's order
 * for everything else (members as i, fetches, the lists' j indices). */
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
    unsigned k = 0xffffffffu;
    if (p.w > 0.0f) {
        const float c[3] = {p.x, p.y, p.z};
        unsigned cell[3];
        for (int d = 0; d < 3; d++)
            cell[d] = (unsigned)fminf(fmaxf(fmaf(c[d], scale, 512.0f), 0.0f), 1023.0f);
        k = spread10(cell[0]) | spread10(cell[1]) << 1 | spread10(cell[2]) << 2;
    }
    key[q] = k;
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
