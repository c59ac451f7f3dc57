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
    /* entries: the unordered list and 4 sentinels (read as int4); sorted:
     * the list in order, written out in one coalesced pass (the output is
     * pinned host memory: scattered 4-byte writes would each cross PCIe). */
    __shared__ __align__(16) int entries[GPUNB_CUDA_GATHER_SMEM_LIST + 4];
    __shared__ int sorted[GPUNB_CUDA_GATHER_SMEM_LIST];
    __shared__ int base;
    __shared__ double red[REDUCE ? GPUNB_CUDA_GATHER_THREADS / 32 : 1][GPUNB_CUDA_NPARTIAL];
    const int i = blockIdx.x, tid = threadIdx.x;

    if (REDUCE) { /* the slices of i over the threads, then a fixed-order sum */
        /* layout slices_inner: partial[(c * ni_pad + i) * nslices + slice] */
        const size_t c_stride = (size_t)ni_pad * nslices;
        const float *p = partial + (size_t)i * nslices;
        double sum[GPUNB_CUDA_NPARTIAL] = {0, 0, 0, 0, 0, 0, 0};
#pragma unroll 2
        for (int sl = tid; sl < nslices; sl += GPUNB_CUDA_GATHER_THREADS) {
#pragma unroll
            for (int c = 0; c < GPUNB_CUDA_NPARTIAL; c++)
                sum[c] += p[c * c_stride + sl];
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
    const bool in_smem = count <= GPUNB_CUDA_GATHER_SMEM_LIST; /* uniform */
    if (in_smem) {
        for (int e = tid; e < count; e += GPUNB_CUDA_GATHER_THREADS)
            entries[e] = src[e];
        if (tid < 4)
            entries[count + tid] = 0x7fffffff; /* never smaller than an entry */
    }
    __syncthreads(); /* base and the entries are in shared memory */
    int *dst = compact + base;
    if (in_smem) {
        /* Each thread ranks two entries at once against all, four per
         * shared load: count^2 / (2 x 4 x threads) loads per thread, the
         * short critical path of a block of long lists. */
        const int4 *e4 = reinterpret_cast<const int4 *>(entries);
        const int n4 = (count + 3) >> 2;
        for (int e0 = 0; e0 < count; e0 += 2 * GPUNB_CUDA_GATHER_THREADS) {
            const int a = e0 + tid, b = a + GPUNB_CUDA_GATHER_THREADS;
            const int va = a < count ? entries[a] : 0x7fffffff, vb = b < count ? entries[b] : 0x7fffffff;
            int ra = 0, rb = 0;
#pragma unroll 4
            for (int k = 0; k < n4; k++) {
                const int4 q = e4[k];
                ra += (q.x < va) + (q.y < va) + (q.z < va) + (q.w < va);
                rb += (q.x < vb) + (q.y < vb) + (q.z < vb) + (q.w < vb);
            }
            if (a < count)
                sorted[ra] = va;
            if (b < count)
                sorted[rb] = vb;
        }
        __syncthreads();
        for (int e = tid; e < count; e += GPUNB_CUDA_GATHER_THREADS)
            dst[e] = sorted[e];
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
