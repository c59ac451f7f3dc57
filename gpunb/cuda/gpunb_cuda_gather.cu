/* gpunb_cuda_gather.cu -- the list-gathering kernel: one block per i turns
 * the unordered neighbour records the force blocks appended into i's sorted
 * list in pinned host memory (gather_one in gpunb_cuda_gather.cuh).
 *
 * For small blocks of i (where the call's latency is what counts) the same
 * kernel first does the reduction of the partial forces (REDUCE): one
 * launch after the force kernel instead of two on two streams.
 *
 * With pdl set (sm_90 and later), the kernel is a programmatic dependent
 * launch: its blocks may be placed while the force kernel still runs (that
 * kernel allows it at its start), and wait in griddepcontrol.wait until the
 * force kernel has finished and its writes are visible; the launch latency
 * between the two kernels is then hidden.  Launched plainly, the wait
 * returns at once. */
#include "gpunb_cuda_gather.cuh"

template <bool REDUCE>
static __global__ void __launch_bounds__(GPUNB_CUDA_GATHER_THREADS)
gpunb_gather_kernel(unsigned long long *__restrict__ nbcount, const int2 *__restrict__ nblist, int cap,
                    const int *__restrict__ perm, const int *__restrict__ iorder, int j0, int limit,
                    int *__restrict__ compact, gpunb_cuda_result *__restrict__ result,
                    const float *__restrict__ partial, int nslices, int ni_pad,
                    unsigned long long *__restrict__ stamp_done)
{
    __shared__ __align__(16) int entries[GPUNB_CUDA_GATHER_SMEM_LIST + 4];
    __shared__ int sorted[GPUNB_CUDA_GATHER_SMEM_LIST];
    __shared__ double red[REDUCE ? GPUNB_CUDA_GATHER_THREADS / 32 : 1][GPUNB_CUDA_NPARTIAL];
    const gather_smem sm = {entries, sorted, GPUNB_CUDA_GATHER_SMEM_LIST, red};
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    const int out = iorder ? __ldg(iorder + blockIdx.x) : (int)blockIdx.x;
    gather_one<REDUCE, 2>(blockIdx.x, out, nbcount, nblist, cap, perm, j0, limit, compact, result, partial,
                          nslices, ni_pad, sm);
    if (stamp_done) {
        /* The host reads i's results once it sees the stamp (wait_stamps):
         * every thread's writes to host memory go before it. */
        __threadfence_system();
        __syncthreads();
        if (threadIdx.x == 0)
            stamp_done[out] = gpu_clock_ns();
    }
}

extern "C" cudaError_t gpunb_cuda_launch_gather(unsigned long long *nbcount, const int2 *nblist, int cap,
                                                const int *perm, const int *iorder, int j0, int ni,
                                                int limit, int *compact, gpunb_cuda_result *result,
                                                const float *partial, int nslices, int ni_pad,
                                                unsigned long long *stamp_done, int pdl, cudaStream_t stream)
{
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    cfg.gridDim = dim3((unsigned)ni);
    cfg.blockDim = dim3(GPUNB_CUDA_GATHER_THREADS);
    cfg.stream = stream;
    if (pdl) {
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
    }
    const cudaError_t err =
        partial ? cudaLaunchKernelEx(&cfg, gpunb_gather_kernel<true>, nbcount, nblist, cap, perm, iorder, j0, limit,
                                     compact, result, partial, nslices, ni_pad, stamp_done)
                : cudaLaunchKernelEx(&cfg, gpunb_gather_kernel<false>, nbcount, nblist, cap, perm, iorder, j0, limit,
                                     compact, result, (const float *)NULL, 0, 0, stamp_done);
    return err != cudaSuccess ? err : cudaGetLastError();
}
