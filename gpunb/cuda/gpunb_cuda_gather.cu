/* gpunb_cuda_gather.cu -- the list-gathering kernel: turns the unordered
 * per-i neighbour entries the force blocks appended (one atomic counter per
 * i) into one compact ascending list per i, placed one after another in a
 * compact array, so that only the lists themselves cross PCIe.  One block
 * per i; entries are distinct j indices, so each one's rank (the number of
 * smaller entries) is its place in the sorted list.
 *
 * For small blocks of i (where the call's latency is what counts) the same
 * kernel first does the reduction of the partial forces (REDUCE): one
 * launch after the force kernel instead of two on two streams. */
#include "gpunb_cuda_kernels.h"


template <bool REDUCE>
static __global__ void __launch_bounds__(GPUNB_CUDA_GATHER_THREADS)
gpunb_gather_kernel(int *__restrict__ nbcount, const int *__restrict__ nblist, int cap, int limit,
                    int *__restrict__ total, int *__restrict__ compact,
                    gpunb_cuda_result *__restrict__ result, const float *__restrict__ partial,
                    int nslices, int ni_pad)
{
    __shared__ int entries[GPUNB_CUDA_GATHER_SMEM_LIST];
    __shared__ int base;
    __shared__ double red[REDUCE ? GPUNB_CUDA_GATHER_THREADS / 32 : 1][GPUNB_CUDA_NPARTIAL];
    const int i = blockIdx.x, tid = threadIdx.x;

    if (REDUCE) { /* the slices of i over the threads, then a fixed-order sum */
        const size_t stride = (size_t)GPUNB_CUDA_NPARTIAL * ni_pad;
        double sum[GPUNB_CUDA_NPARTIAL] = {0, 0, 0, 0, 0, 0, 0};
        for (int sl = tid; sl < nslices; sl += GPUNB_CUDA_GATHER_THREADS) {
            const float *p = partial + (size_t)sl * stride + i;
#pragma unroll
            for (int c = 0; c < GPUNB_CUDA_NPARTIAL; c++)
                sum[c] += p[(size_t)c * ni_pad];
        }
#pragma unroll
        for (int c = 0; c < GPUNB_CUDA_NPARTIAL; c++) {
            for (int off = 16; off > 0; off >>= 1)
                sum[c] += __shfl_down_sync(0xffffffffu, sum[c], off);
            if (tid % 32 == 0)
                red[tid / 32][c] = sum[c];
        }
        __syncthreads();
        if (tid < GPUNB_CUDA_NPARTIAL) {
            double t = 0.0;
            for (int w = 0; w < GPUNB_CUDA_GATHER_THREADS / 32; w++)
                t += red[w][tid];
            gpunb_cuda_result *r = result + i;
            if (tid < 3)
                r->acc[tid] = t;
            else if (tid < 6)
                r->jrk[tid - 3] = t;
            else
                r->pot = t;
        }
    }
    const int count = nbcount[i];

    __syncthreads(); /* every thread has read the counter before it is reset */
    if (tid == 0)
        nbcount[i] = 0; /* ready for the next force launch */
    if (count > limit) { /* uniform over the block */
        if (tid == 0) {
            result[i].count = -count;
            result[i].off = 0;
        }
        return;
    }
    if (tid == 0) {
        base = count > 0 ? atomicAdd(total, count) : 0;
        result[i].count = count;
        result[i].off = base;
    }
    const int *src = nblist + (size_t)i * cap;
    if (count <= GPUNB_CUDA_GATHER_SMEM_LIST)
        for (int e = tid; e < count; e += GPUNB_CUDA_GATHER_THREADS)
            entries[e] = src[e];
    __syncthreads(); /* base and the entries are in shared memory */
    int *dst = compact + base;
    if (count <= GPUNB_CUDA_GATHER_SMEM_LIST) {
        for (int e = tid; e < count; e += GPUNB_CUDA_GATHER_THREADS) {
            const int v = entries[e];
            int r0 = 0, r1 = 0, r2 = 0, r3 = 0, k = 0;
            for (; k + 3 < count; k += 4) { /* four compares in flight */
                r0 += entries[k] < v;
                r1 += entries[k + 1] < v;
                r2 += entries[k + 2] < v;
                r3 += entries[k + 3] < v;
            }
            for (; k < count; k++)
                r0 += entries[k] < v;
            dst[(r0 + r1) + (r2 + r3)] = v;
        }
    } else { /* a list longer than shared memory: ranked from global memory */
        for (int e = tid; e < count; e += GPUNB_CUDA_GATHER_THREADS) {
            const int v = src[e];
            int rank = 0;
            for (int k = 0; k < count; k++)
                rank += src[k] < v;
            dst[rank] = v;
        }
    }
}

extern "C" cudaError_t gpunb_cuda_launch_gather(int *nbcount, const int *nblist, int cap, int ni,
                                                int limit, int *total, int *compact,
                                                gpunb_cuda_result *result, const float *partial,
                                                int nslices, int ni_pad, cudaStream_t stream)
{
    if (partial)
        gpunb_gather_kernel<true><<<ni, GPUNB_CUDA_GATHER_THREADS, 0, stream>>>(
            nbcount, nblist, cap, limit, total, compact, result, partial, nslices, ni_pad);
    else
        gpunb_gather_kernel<false><<<ni, GPUNB_CUDA_GATHER_THREADS, 0, stream>>>(
            nbcount, nblist, cap, limit, total, compact, result, NULL, 0, 0);
    return cudaGetLastError();
}
