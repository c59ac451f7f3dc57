/* gpunb_cuda_reduce.cu -- the reduction kernel: sums the per-slice partial
 * forces of the force kernel in double, on the GPU, so that only NI final
 * records cross PCIe.  32 i per block (lane = i, coalesced reads), the
 * slices shared among the warps, then a fixed-order sum over the warps:
 * the result does not depend on scheduling. */
#include "gpunb_cuda_kernels.h"


static __global__ void __launch_bounds__(32 * GPUNB_CUDA_REDUCE_WARPS)
gpunb_reduce_kernel(const float *__restrict__ partial, int nslices, int ni, int ni_pad,
                    gpunb_cuda_result *__restrict__ result)
{
    __shared__ double part[GPUNB_CUDA_REDUCE_WARPS][GPUNB_CUDA_NPARTIAL][32];
    const int lane = threadIdx.x, warp = threadIdx.y;
    const int i = blockIdx.x * 32 + lane;
    double sum[GPUNB_CUDA_NPARTIAL] = {0, 0, 0, 0, 0, 0, 0};

    if (i < ni_pad) {
        for (int s = warp; s < nslices; s += GPUNB_CUDA_REDUCE_WARPS) {
            const float *p = partial + (size_t)s * GPUNB_CUDA_NPARTIAL * ni_pad + i;
#pragma unroll
            for (int c = 0; c < GPUNB_CUDA_NPARTIAL; c++)
                sum[c] += p[(size_t)c * ni_pad];
        }
    }
#pragma unroll
    for (int c = 0; c < GPUNB_CUDA_NPARTIAL; c++)
        part[warp][c][lane] = sum[c];
    __syncthreads();
    /* Warp c < NPARTIAL adds component c over the warps in a fixed order. */
    if (warp < GPUNB_CUDA_NPARTIAL && i < ni) {
        double total = 0.0;
        for (int w = 0; w < GPUNB_CUDA_REDUCE_WARPS; w++)
            total += part[w][warp][lane];
        gpunb_cuda_result *r = result + i;
        if (warp < 3)
            r->acc[warp] = total;
        else if (warp < 6)
            r->jrk[warp - 3] = total;
        else
            r->pot = total;
    }
}

extern "C" cudaError_t gpunb_cuda_launch_reduce(const float *partial, int nslices, int ni,
                                                int ni_pad, gpunb_cuda_result *result,
                                                cudaStream_t stream)
{
    dim3 block(32, GPUNB_CUDA_REDUCE_WARPS);
    gpunb_reduce_kernel<<<(ni + 31) / 32, block, 0, stream>>>(partial, nslices, ni, ni_pad, result);
    return cudaGetLastError();
}
