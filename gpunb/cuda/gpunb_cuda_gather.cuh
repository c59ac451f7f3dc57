/* gpunb_cuda_gather.cuh -- the reduction and list gathering of one i by one
 * block of GATHER_THREADS threads, as a device function: the gathering
 * kernel (gpunb_cuda_gather.cu) runs it in a block per i, the single-launch
 * force kernel (gpunb_cuda_force.cu) in its own blocks after a grid-wide
 * barrier, on shared memory it no longer needs for the force.
 *
 * The unordered word records the force blocks appended (nbcount[i] counts
 * them and their neighbours; the first cap in nblist[i * cap ...]) become
 * one ascending list at compact + out * cap (out: the caller's i, or i
 * itself where the i were not reordered): a fixed place, so no allocator
 * (an atomic round trip per i) is needed; the host reads only the counts it
 * is told about, and the kernel writes straight into pinned host memory, so
 * the gaps cost no transfer.  Records are of distinct 32-j words, so a
 * record's neighbours start at the number of neighbours in records of
 * smaller words.
 *
 * The block is latency-bound (one i, a few hundred entries), so it issues
 * everything it can in one round trip: the counts, the first GATHER_THREADS
 * records (speculatively: those past the count are ignored) and, with
 * REDUCE, the partial sums; a second round only for lists longer than that.
 * Loads of what other blocks wrote go through L2 only (__ldcg): in the
 * single-launch kernel they were written in the same launch, where neither
 * L1 nor the read-only path is coherent. */
#ifndef GPUNB_CUDA_GATHER_CUH
#define GPUNB_CUDA_GATHER_CUH

#include "gpunb_cuda_kernels.h"

/* Shared scratch of gather_one: entries holds smem_list + 4 ints (16-byte
 * aligned: the records' keys, padded to a multiple of 4 and read as uint4,
 * then their bits), sorted smem_list, red one double per warp and partial
 * component. */
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

/* The records of gather_one where the force read the j-set in spatial
 * order: each record's entries become j = j0 + perm[entry - j0] in shared
 * memory, a warp per record (a lane per bit: one coalesced read of perm;
 * places from a shared counter, so in any order), then each j's rank (the
 * number of smaller ones, all distinct) is its place in the sorted list:
 * each thread ranks two at once against all, four per shared load.  The
 * host asks for this only where count <= limit <= smem_list. */
static __device__ __forceinline__ void gather_spatial(int words, int count, const int2 *__restrict__ src,
                                                      const int *__restrict__ perm, int j0, int *__restrict__ dst,
                                                      const gather_smem sm)
{
    constexpr int NT = GPUNB_CUDA_GATHER_THREADS;
    const int tid = threadIdx.x;
    __shared__ int filled;
    if (tid == 0)
        filled = 0;
    __syncthreads();
    const int lane = tid % 32;
    for (int e = tid / 32; e < words; e += NT / 32) { /* uniform per warp */
        const int2 r = __ldcg(src + e);
        const unsigned b = (unsigned)r.y;
        int at = 0;
        if (lane == 0)
            at = atomicAdd(&filled, __popc(b));
        at = __shfl_sync(0xffffffffu, at, 0);
        if (b >> lane & 1u)
            sm.entries[at + __popc(b & ((1u << lane) - 1u))] = j0 + __ldg(perm + ((r.x << 5) - j0) + lane);
    }
    if (tid < 4)
        sm.entries[count + tid] = 0x7fffffff; /* never smaller than an entry */
    __syncthreads();
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
}

/* Place i's results, for the caller's i = out (see gpunb_cuda_launch_gather).
 * UNROLL: slices per thread whose loads are in flight at once (2 in the
 * gathering kernel; 1 in the single-launch force kernel, whose 48 registers
 * would otherwise spill). */
template <bool REDUCE, int UNROLL>
static __device__ __forceinline__ void gather_one(int i, int out, unsigned long long *__restrict__ nbcount,
                                                  const int2 *__restrict__ nblist, int cap,
                                                  const int *__restrict__ perm, int j0, int limit,
                                                  int *__restrict__ compact, gpunb_cuda_result *__restrict__ result,
                                                  const float *__restrict__ partial, int nslices, int ni_pad,
                                                  const gather_smem sm)
{
    constexpr int NT = GPUNB_CUDA_GATHER_THREADS;
    const int tid = threadIdx.x;
    const int2 *src = nblist + (size_t)i * cap;
    /* one round trip: counts, first records, partial sums */
    const unsigned long long counts = __ldcg(nbcount + i);
    const int words = (int)(counts >> 32), count = (int)(unsigned)counts;
    const int2 first = tid < cap ? __ldcg(src + tid) : make_int2(0, 0);

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
        gpunb_cuda_store_component(result + out, tid, t);
    }
    if (tid == 0) {
        nbcount[i] = 0; /* ready for the next force launch */
        result[out].count = count > limit ? -count : count;
        result[out].off = count > limit ? 0 : out * cap;
    }
    if (count > limit) /* uniform over the block */
        return;
    /* Here words <= count <= limit <= cap: every record was stored.  The
     * records' words are distinct, so a record's j go to the place given by
     * the neighbours in records of smaller words, in ascending order. */
    int *dst = compact + (size_t)out * cap;
    if (perm) { /* entries of the spatial order: their j, then sorted (count <= limit <= smem_list) */
        gather_spatial(words, count, src, perm, j0, dst, sm);
        return;
    }
    const int wpad = (words + 3) & ~3;
    const bool in_smem = count <= sm.smem_list && wpad + words <= sm.smem_list + 4; /* uniform */
    if (in_smem) {
        /* keys: word << 6 | neighbours in it (word < 2^26), padded with
         * keys no key exceeds; then the bits */
        unsigned *keys = reinterpret_cast<unsigned *>(sm.entries);
        int *bits = sm.entries + wpad;
        for (int e = tid; e < words; e += NT) {
            const int2 r = e == tid ? first : __ldcg(src + e);
            keys[e] = (unsigned)r.x << 6 | (unsigned)__popc(r.y);
            bits[e] = r.y;
        }
        if (tid < wpad - words)
            keys[words + tid] = 0xffffffffu;
        __syncthreads(); /* the records are in shared memory */
        const uint4 *k4 = reinterpret_cast<const uint4 *>(keys);
        for (int e = tid; e < words; e += NT) {
            const unsigned key = keys[e];
            int at = 0;
#pragma unroll 4
            for (int k = 0; k < wpad / 4; k++) {
                const uint4 q = k4[k];
                at += (q.x < key ? (int)(q.x & 63) : 0) + (q.y < key ? (int)(q.y & 63) : 0) +
                      (q.z < key ? (int)(q.z & 63) : 0) + (q.w < key ? (int)(q.w & 63) : 0);
            }
            const int j32 = (int)(key >> 6) << 5;
            for (unsigned b = (unsigned)bits[e]; b; b &= b - 1)
                sm.sorted[at++] = j32 + __ffs(b) - 1;
        }
        /* The sorted list is written out in one coalesced pass (the output
         * is pinned host memory: scattered 4-byte writes would each cross
         * PCIe). */
        __syncthreads();
        for (int e = tid; e < count; e += NT)
            dst[e] = sm.sorted[e];
    } else { /* a list longer than shared memory: placed straight from global memory */
        for (int e = tid; e < words; e += NT) {
            const int2 r = __ldcg(src + e);
            int at = 0;
            for (int k = 0; k < words; k++) {
                const int2 q = __ldcg(src + k);
                at += q.x < r.x ? __popc(q.y) : 0;
            }
            for (unsigned b = (unsigned)r.y; b; b &= b - 1)
                dst[at++] = (r.x << 5) + __ffs(b) - 1;
        }
    }
}

#endif
