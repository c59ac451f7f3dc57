/* gpunb_cuda_gather.cu -- the list-gathering kernel: one block per i turns
 * the unordered neighbour entries the force blocks appended into i's sorted
 * list in pinned host memory (gather_one in gpunb_cuda_gather.cuh).
 *
 * For small blocks of i (where the call's latency is what counts) the same
 * kernel first does the reduction of the partial forces (REDUCE): one
 * launch after the force kernel instead of two on two streams. */
#include "gpunb_cuda_gather.cuh"

template <bool REDUCE>
static __global__ void __launch_bounds__(GPUNB_CUDA_GATHER_THREADS)
gpunb_gather_kernel(int *__restrict__ nbcount, const int *__restrict__ nblist, int cap, int limit,
                    int *__restrict__ compact, gpunb_cuda_result *__restrict__ result,
                    const float *__restrict__ partial, int nslices, int ni_pad)
{
    __shared__ __align__(16) int entries[GPUNB_CUDA_GATHER_SMEM_LIST + 4];
    __shared__ int sorted[GPUNB_CUDA_GATHER_SMEM_LIST];
    __shared__ double red[REDUCE ? GPUNB_CUDA_GATHER_THREADS / 32 : 1][GPUNB_CUDA_NPARTIAL];
    const gather_smem sm = {entries, sorted, GPUNB_CUDA_GATHER_SMEM_LIST, red};
    gather_one<REDUCE, 2>(blockIdx.x, nbcount, nblist, cap, limit, compact, result, partial, nslices, ni_pad, sm);
}

extern "C" cudaError_t gpunb_cuda_launch_gather(int *nbcount, const int *nblist, int cap, int ni,
                                                int limit, int *compact, gpunb_cuda_result *result,
                                                const float *partial, int nslices, int ni_pad,
                                                cudaStream_t stream)
{
    if (partial)
        gpunb_gather_kernel<true><<<ni, GPUNB_CUDA_GATHER_THREADS, 0, stream>>>(
            nbcount, nblist, cap, limit, compact, result, partial, nslices, ni_pad);
    else
        gpunb_gather_kernel<false><<<ni, GPUNB_CUDA_GATHER_THREADS, 0, stream>>>(
            nbcount, nblist, cap, limit, compact, result, NULL, 0, 0);
    return cudaGetLastError();
}
