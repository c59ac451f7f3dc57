/* gpunb_cuda_reduce.cu -- the reduction kernel: sums the per-slice partial
 * forces of the force kernel in double, on the GPU, so that only NI final
 * records cross PCIe.  One block per 32 i: lane = i (coalesced reads), the
 * slices shared among the warps (four loads in flight per warp and
 * component), then a fixed-order sum over the warps: the result does not
 * depend on scheduling.  The block's 32 records are written together at the
 * end, consecutive threads to consecutive doubles: the results live in
 * mapped host memory, and one component per block (7 stores of 8 bytes per
 * record, each crossing PCIe alone) made the writes, not the sums, the
 * kernel's cost. */
#include "gpunb_cuda_kernels.h"

/* Components summed at once: their 4 accumulators each stay in registers
 * beside the block's 1024 threads. */
#define REDUCE_COMPONENTS_AT_ONCE 4

static_assert(sizeof(gpunb_cuda_result) == 8 * 8 && GPUNB_CUDA_NPARTIAL == 7,
              "a result record is the 7 sums and two ints, 64 bytes");

static __global__ void __launch_bounds__(32 * GPUNB_CUDA_REDUCE_WARPS)
gpunb_reduce_kernel(const float *__restrict__ partial, int nslices, int ni, int ni_pad,
                    const int *__restrict__ iorder, gpunb_cuda_result *__restrict__ result)
{
    __shared__ double part[REDUCE_COMPONENTS_AT_ONCE][GPUNB_CUDA_REDUCE_WARPS][32];
    __shared__ double total[32][GPUNB_CUDA_NPARTIAL + 1];
    const int lane = threadIdx.x, warp = threadIdx.y;
    const int i0 = blockIdx.x * 32, i = i0 + lane;
    const size_t stride = (size_t)GPUNB_CUDA_NPARTIAL * ni_pad;

    for (int c0 = 0; c0 < GPUNB_CUDA_NPARTIAL; c0 += REDUCE_COMPONENTS_AT_ONCE) {
        double s0[REDUCE_COMPONENTS_AT_ONCE], s1[REDUCE_COMPONENTS_AT_ONCE];
        double s2[REDUCE_COMPONENTS_AT_ONCE], s3[REDUCE_COMPONENTS_AT_ONCE];
#pragma unroll
        for (int c = 0; c < REDUCE_COMPONENTS_AT_ONCE; c++)
            s0[c] = s1[c] = s2[c] = s3[c] = 0.0;
        int s = warp;
        if (i < ni_pad) {
            const float *p = partial + (size_t)c0 * ni_pad + i;
            for (; s + 3 * GPUNB_CUDA_REDUCE_WARPS < nslices; s += 4 * GPUNB_CUDA_REDUCE_WARPS) {
#pragma unroll
                for (int c = 0; c < REDUCE_COMPONENTS_AT_ONCE; c++) {
                    if (c0 + c >= GPUNB_CUDA_NPARTIAL)
                        break;
                    const float *q = p + (size_t)c * ni_pad;
                    s0[c] += q[(size_t)s * stride];
                    s1[c] += q[(size_t)(s + GPUNB_CUDA_REDUCE_WARPS) * stride];
                    s2[c] += q[(size_t)(s + 2 * GPUNB_CUDA_REDUCE_WARPS) * stride];
                    s3[c] += q[(size_t)(s + 3 * GPUNB_CUDA_REDUCE_WARPS) * stride];
                }
            }
            for (; s < nslices; s += GPUNB_CUDA_REDUCE_WARPS)
#pragma unroll
                for (int c = 0; c < REDUCE_COMPONENTS_AT_ONCE; c++)
                    if (c0 + c < GPUNB_CUDA_NPARTIAL)
                        s0[c] += p[(size_t)c * ni_pad + (size_t)s * stride];
        }
#pragma unroll
        for (int c = 0; c < REDUCE_COMPONENTS_AT_ONCE; c++)
            part[c][warp][lane] = (s0[c] + s1[c]) + (s2[c] + s3[c]);
        __syncthreads();
        if (warp < REDUCE_COMPONENTS_AT_ONCE && c0 + warp < GPUNB_CUDA_NPARTIAL) {
            double sum = 0.0;
            for (int w = 0; w < GPUNB_CUDA_REDUCE_WARPS; w++)
                sum += part[warp][w][lane];
            total[lane][c0 + warp] = sum;
        }
        __syncthreads(); /* the totals are in, and part may be overwritten */
    }
    /* Thread t: record t / 8, double t % 8 (the eighth, count and off, is
     * the gathering kernel's). */
    const int t = warp * 32 + lane;
    if (t < 32 * 8) {
        const int r = t / 8, c = t % 8;
        if (c < GPUNB_CUDA_NPARTIAL && i0 + r < ni)
            gpunb_cuda_store_component(result + (iorder ? __ldg(iorder + i0 + r) : i0 + r), c, total[r][c]);
    }
}

extern "C" cudaError_t gpunb_cuda_launch_reduce(const float *partial, int nslices, int ni,
                                                int ni_pad, const int *iorder, gpunb_cuda_result *result,
                                                cudaStream_t stream)
{
    const dim3 grid((unsigned)(ni + 31) / 32), block(32, GPUNB_CUDA_REDUCE_WARPS);
    gpunb_reduce_kernel<<<grid, block, 0, stream>>>(partial, nslices, ni, ni_pad, iorder, result);
    return cudaGetLastError();
}
