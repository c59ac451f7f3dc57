/* gpunb_cuda_reduce.cu -- the reduction kernel: sums the per-slice partial
 * forces of the force kernel in double, on the GPU, so that only NI final
 * records cross PCIe.  One block per (32 i, component): lane = i (coalesced
 * reads), the slices shared among the warps (four loads in flight per warp),
 * then a fixed-order sum over the warps: the result does not depend on
 * scheduling, and even NI = 32 spreads the work over 7 SMs. */
#include "gpunb_cuda_kernels.h"

static __global__ void __launch_bounds__(32 * GPUNB_CUDA_REDUCE_WARPS)
gpunb_reduce_kernel(const float *__restrict__ partial, int nslices, int ni, int ni_pad,
                    gpunb_cuda_result *__restrict__ result)
{
    __shared__ double part[GPUNB_CUDA_REDUCE_WARPS][32];
    const int lane = threadIdx.x, warp = threadIdx.y, comp = blockIdx.y;
    const int i = blockIdx.x * 32 + lane;
    const size_t stride = (size_t)GPUNB_CUDA_NPARTIAL * ni_pad;
    const float *p = partial + (size_t)comp * ni_pad + i;
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int s = warp;

    if (i < ni_pad) {
        for (; s + 3 * GPUNB_CUDA_REDUCE_WARPS < nslices; s += 4 * GPUNB_CUDA_REDUCE_WARPS) {
            s0 += p[(size_t)s * stride];
            s1 += p[(size_t)(s + GPUNB_CUDA_REDUCE_WARPS) * stride];
            s2 += p[(size_t)(s + 2 * GPUNB_CUDA_REDUCE_WARPS) * stride];
            s3 += p[(size_t)(s + 3 * GPUNB_CUDA_REDUCE_WARPS) * stride];
        }
        for (; s < nslices; s += GPUNB_CUDA_REDUCE_WARPS)
            s0 += p[(size_t)s * stride];
    }
    part[warp][lane] = (s0 + s1) + (s2 + s3);
    __syncthreads();
    if (warp == 0 && i < ni) {
        double total = 0.0;
        for (int w = 0; w < GPUNB_CUDA_REDUCE_WARPS; w++)
            total += part[w][lane];
        gpunb_cuda_store_component(result + i, comp, total);
    }
}

extern "C" cudaError_t gpunb_cuda_launch_reduce(const float *partial, int nslices, int ni,
                                                int ni_pad, gpunb_cuda_result *result,
                                                cudaStream_t stream)
{
    dim3 grid((unsigned)(ni + 31) / 32, GPUNB_CUDA_NPARTIAL), block(32, GPUNB_CUDA_REDUCE_WARPS);
    gpunb_reduce_kernel<<<grid, block, 0, stream>>>(partial, nslices, ni, ni_pad, result);
    return cudaGetLastError();
}
