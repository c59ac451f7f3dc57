/* gpunb_cuda_gather.cuh -- the reduction and list gathering of one i by one
 * block of GATHER_THREADS threads, as a device function: the gathering
 * kernel (gpunb_cuda_gather.cu) runs it in a block per i, the single-launch
 * force kernel (gpunb_cuda_force.cu) in its own blocks after a grid-wide
 * barrier, on shared memory it no longer needs for the force.
 *
 * The unordered entries the force blocks appended (nbcount[i] of them, the
 * first cap in nblist[i * cap ...]) become one ascending list at compact +
 * i * cap: a fixed place, so no allocator (an atomic round trip per i) is
 * needed; the host reads only the counts it is told about, and the kernel
 * writes straight into pinned host memory, so the gaps cost no transfer.
 * Entries are distinct j indices, so each one's rank (the number of smaller
 * entries) is its place in the sorted list.
 *
 * The block is latency-bound (one i, a few hundred entries), so it issues
 * everything it can in one round trip: the count, the first GATHER_THREADS
 * entries (speculatively: those past the count are ignored) and, with
 * REDUCE, the partial sums; a second round only for lists longer than that.
 * Loads of what other blocks wrote go through L2 only (__ldcg): in the
 * single-launch kernel they were written in the same launch, where neither
 * L1 nor the read-only path is coherent. */
#ifndef GPUNB_CUDA_GATHER_CUH
#define GPUNB_CUDA_GATHER_CUH

#include "gpunb_cuda_kernels.h"

/* Shared scratch of gather_one: entries holds smem_list + 4 ints (16-byte
 * aligned; 4 sentinels read as int4), sorted smem_list, red one double per
 * warp and partial component. */
typedef struct gather_smem {
    int *entries, *sorted;
    int smem_list;
    double (*red)[GPUNB_CUDA_NPARTIAL];
} gather_smem;

/* The GPU's global clock, in ns (the same on every SM). */
static __device__ __forceinline__ unsigned long long gpu_clock_ns(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* UNROLL: slices per thread whose loads are in flight at once (2 in the
 * gathering kernel; 1 in the single-launch force kernel, whose 48 registers
 * would otherwise spill). */
template <bool REDUCE, int UNROLL>
static __device__ __forceinline__ void gather_one(int i, int *__restrict__ nbcount, const int *__restrict__ nblist,
                                                  int cap, int limit, int *__restrict__ compact,
                                                  gpunb_cuda_result *__restrict__ result,
                                                  const float *__restrict__ partial, int nslices, int ni_pad,
                                                  const gather_smem sm)
{
    constexpr int NT = GPUNB_CUDA_GATHER_THREADS;
    const int tid = threadIdx.x;
    const int *src = nblist + (size_t)i * cap;
    /* one round trip: count, first entries, partial sums */
    const int count = __ldcg(nbcount + i);
    const int first = tid < cap ? __ldcg(src + tid) : 0x7fffffff;

    if (REDUCE) { /* the slices of i over the threads, then a fixed-order sum */
        /* layout slices_inner: partial[(c * ni_pad + i) * nslices + slice] */
        const size_t c_stride = (size_t)ni_pad * nslices;
        const float *p = partial + (size_t)i * nslices;
        double sum[GPUNB_CUDA_NPARTIAL] = {0, 0, 0, 0, 0, 0, 0};
#pragma unroll(UNROLL)
        for (int sl = tid; sl < nslices; sl += NT) {
#pragma unroll
            for (int c = 0; c < GPUNB_CUDA_NPARTIAL; c++)
                sum[c] += __ldcg(p + c * c_stride + sl);
        }
#pragma unroll
        for (int c = 0; c < GPUNB_CUDA_NPARTIAL; c++) {
            for (int off = 16; off > 0; off >>= 1)
                sum[c] += __shfl_down_sync(0xffffffffu, sum[c], off);
            if (tid % 32 == 0)
                sm.red[tid / 32][c] = sum[c];
        }
    }
    __syncthreads(); /* red is complete; every thread has read the counter */
    if (REDUCE && tid < GPUNB_CUDA_NPARTIAL) {
        double t = 0.0;
        for (int w = 0; w < NT / 32; w++)
            t += sm.red[w][tid];
        gpunb_cuda_store_component(result + i, tid, t);
    }
    if (tid == 0) {
        nbcount[i] = 0; /* ready for the next force launch */
        result[i].count = count > limit ? -count : count;
        result[i].off = count > limit ? 0 : i * cap;
    }
    if (count > limit) /* uniform over the block */
        return;
    int *dst = compact + (size_t)i * cap;
    const bool in_smem = count <= sm.smem_list; /* uniform */
    if (in_smem) {
        if (tid < count)
            sm.entries[tid] = first;
        for (int e = tid + NT; e < count; e += NT)
            sm.entries[e] = __ldcg(src + e);
        if (tid < 4)
            sm.entries[count + tid] = 0x7fffffff; /* never smaller than an entry */
    }
    __syncthreads(); /* the entries are in shared memory */
    if (in_smem) {
        /* Each thread ranks two entries at once against all, four per
         * shared load: count^2 / (2 x 4 x threads) loads per thread, the
         * short critical path of a block of long lists.  The sorted list
         * is written out in one coalesced pass (the output is pinned host
         * memory: scattered 4-byte writes would each cross PCIe). */
        const int4 *e4 = reinterpret_cast<const int4 *>(sm.entries);
        const int n4 = (count + 3) >> 2;
        for (int e0 = 0; e0 < count; e0 += 2 * NT) {
            const int a = e0 + tid, b = a + NT;
            const int va = a < count ? sm.entries[a] : 0x7fffffff, vb = b < count ? sm.entries[b] : 0x7fffffff;
            int ra = 0, rb = 0;
#pragma unroll 4
            for (int k = 0; k < n4; k++) {
                const int4 q = e4[k];
                ra += (q.x < va) + (q.y < va) + (q.z < va) + (q.w < va);
                rb += (q.x < vb) + (q.y < vb) + (q.z < vb) + (q.w < vb);
            }
            if (a < count)
                sm.sorted[ra] = va;
            if (b < count)
                sm.sorted[rb] = vb;
        }
        __syncthreads();
        for (int e = tid; e < count; e += NT)
            dst[e] = sm.sorted[e];
    } else { /* a list longer than shared memory: ranked from global memory */
        for (int e = tid; e < count; e += NT) {
            const int v = __ldcg(src + e);
            int rank = 0;
            for (int k = 0; k < count; k++)
                rank += __ldcg(src + k) < v;
            dst[rank] = v;
        }
    }
}

#endif
