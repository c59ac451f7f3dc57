/* gpunb_cuda_irregular.cu -- the Ahmad-Cohen irregular force on the GPU
 * from the resident records and the neighbour lists the GPU keeps: the
 * records and lists the host changed are pulled into place, then a warp per
 * i-particle predicts i and its members and sums in double.  In a large
 * block a first kernel predicts every record once (a body is a member of
 * some 80 lists, so the per-pair prediction repeats each one that often),
 * and the warps read the 64-byte predicted state instead of the 128-byte
 * record: the same prediction, so the same bits.  The block's later calls
 * (the new lists of its regular bodies: same time, same records) read that
 * prediction again, however few their i.
 *
 * Why a warp per i: lists are short (tens to a few hundred members), so one
 * thread per i would leave most lanes idle on the long lists and serialise
 * each member's record load; with a warp the lanes fetch 32 members' records
 * at once, and the sums meet in a butterfly of shuffles.  Everything is in
 * double: the work is a few 10^7 pairs per large block, small beside the
 * loads of scattered 128-byte records, which set the time. */
#include "gpunb_cuda_kernels.h"

#define FULL_MASK 0xffffffffu

/* Reads over PCIe, many in flight: the host spends no time packing what
 * changed (a serial pass over tens of thousands of scattered rows cost
 * milliseconds per regular block).  Eight lanes per record, 16 bytes each,
 * so that each load of a warp asks for four whole 128-byte records; with a
 * lane per record each load asked for 16 bytes of 32 records, and the
 * requests over PCIe carried mostly bytes that were thrown away. */
enum { PULL_LANES = (int)(sizeof(gpunb_cuda_jrec) / sizeof(double2)) };

static __global__ void __launch_bounds__(GPUNB_CUDA_PREDICT_THREADS)
gpunb_record_pull_kernel(const gpunb_cuda_jrec *__restrict__ host_rec, const int *__restrict__ index, int n,
                         gpunb_cuda_jrec *__restrict__ rec)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const int k = (int)(t / PULL_LANES), piece = (int)(t % PULL_LANES);
    if (k < n) {
        const int j = index[k];
        ((double2 *)(rec + j))[piece] = ((const double2 *)(host_rec + j))[piece];
    }
}

static __global__ void __launch_bounds__(GPUNB_CUDA_IRR_THREADS)
gpunb_list_pull_kernel(const int *__restrict__ host_lists, int lmax, const int *__restrict__ index, int n,
                       int *__restrict__ lists)
{
    const int q = (int)((blockIdx.x * (unsigned)blockDim.x + threadIdx.x) / 32u), lane = (int)(threadIdx.x & 31u);
    if (q >= n)
        return;
    const size_t at = (size_t)index[q] * (size_t)lmax;
    const int count = host_lists[at];
    for (int l = lane; l <= count; l += 32)
        lists[at + l] = host_lists[at + l];
}

/* Every record j < n at time t into pred[4 j .. 4 j + 3]: (x, y), (z, m),
 * (vx, vy), (vz, 0). */
static __global__ void __launch_bounds__(GPUNB_CUDA_PREDICT_THREADS)
gpunb_irr_predict_kernel(const gpunb_cuda_jrec *__restrict__ rec, int n, double t, double2 *__restrict__ pred)
{
    const int j = (int)(blockIdx.x * (unsigned)blockDim.x + threadIdx.x);
    if (j >= n)
        return;
    double x[3], v[3];
    gpunb_cuda_predict_record(rec + j, t, x, v);
    double2 *p = pred + 4 * (size_t)j;
    p[0] = make_double2(x[0], x[1]);
    p[1] = make_double2(x[2], rec[j].m);
    p[2] = make_double2(v[0], v[1]);
    p[3] = make_double2(v[2], 0.0);
}

/* Body k at time t: from pred (PREDICTED) or from its record. */
template <bool PREDICTED>
static __device__ __forceinline__ void body_at(const gpunb_cuda_jrec *__restrict__ rec,
                                               const double2 *__restrict__ pred, int k, double t, double x[3],
                                               double v[3], double *m)
{
    if (PREDICTED) {
        const double2 *p = pred + 4 * (size_t)k;
        const double2 a = p[0], b = p[1], c = p[2], d = p[3];
        x[0] = a.x, x[1] = a.y, x[2] = b.x, *m = b.y;
        v[0] = c.x, v[1] = c.y, v[2] = d.x;
    } else {
        gpunb_cuda_predict_record(rec + k, t, x, v);
        *m = rec[k].m;
    }
}

template <bool PREDICTED>
static __global__ void __launch_bounds__(GPUNB_CUDA_IRR_THREADS)
gpunb_irregular_kernel(const gpunb_cuda_jrec *__restrict__ rec, const double2 *__restrict__ pred,
                       const int *__restrict__ lists, int lmax, const int *__restrict__ idx, int ni, double t,
                       double *__restrict__ out)
{
    const int q = (int)((blockIdx.x * (unsigned)blockDim.x + threadIdx.x) / 32u), lane = (int)(threadIdx.x & 31u);
    if (q >= ni) /* the whole warp leaves together: the shuffles below see all 32 lanes */
        return;
    const int i = idx[q];
    const int *row = lists + (size_t)i * (size_t)lmax;
    const int count = row[0];
    double xi[3], vi[3], mi, a[3] = {0.0, 0.0, 0.0}, jk[3] = {0.0, 0.0, 0.0};
    body_at<PREDICTED>(rec, pred, i, t, xi, vi, &mi);
    for (int l = lane; l < count; l += 32) {
        double xk[3], vk[3], mk, dx[3], dv[3];
        body_at<PREDICTED>(rec, pred, row[1 + l], t, xk, vk, &mk);
#pragma unroll
        for (int c = 0; c < 3; c++) {
            dx[c] = xk[c] - xi[c];
            dv[c] = vk[c] - vi[c];
        }
        const double r2 = dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2];
        if (r2 > 0.0) {
            const double rinv = rsqrt(r2), rinv2 = rinv * rinv, mr3 = mk * rinv * rinv2;
            const double rv = 3.0 * (dx[0] * dv[0] + dx[1] * dv[1] + dx[2] * dv[2]) * rinv2;
#pragma unroll
            for (int c = 0; c < 3; c++) {
                a[c] += mr3 * dx[c];
                jk[c] += mr3 * (dv[c] - rv * dx[c]);
            }
        }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
#pragma unroll
        for (int c = 0; c < 3; c++) {
            a[c] += __shfl_xor_sync(FULL_MASK, a[c], off);
            jk[c] += __shfl_xor_sync(FULL_MASK, jk[c], off);
        }
    if (lane < 6)
        out[6 * (size_t)q + lane] = lane < 3 ? a[lane] : jk[lane - 3];
}

static unsigned warps_to_blocks(int warps)
{
    const int per_block = GPUNB_CUDA_IRR_THREADS / 32;
    return (unsigned)((warps + per_block - 1) / per_block);
}

extern "C" cudaError_t gpunb_cuda_launch_record_pull(const gpunb_cuda_jrec *host_rec, const int *index, int n,
                                                     gpunb_cuda_jrec *rec, cudaStream_t stream)
{
    const long long nt = GPUNB_CUDA_PREDICT_THREADS, threads = (long long)n * PULL_LANES;
    if (n > 0)
        gpunb_record_pull_kernel<<<(unsigned)((threads + nt - 1) / nt), (unsigned)nt, 0, stream>>>(host_rec, index,
                                                                                              n, rec);
    return cudaGetLastError();
}

extern "C" cudaError_t gpunb_cuda_launch_list_pull(const int *host_lists, int lmax, const int *index, int n,
                                                   int *lists, cudaStream_t stream)
{
    if (n > 0)
        gpunb_list_pull_kernel<<<warps_to_blocks(n), GPUNB_CUDA_IRR_THREADS, 0, stream>>>(host_lists, lmax, index,
                                                                                         n, lists);
    return cudaGetLastError();
}

extern "C" cudaError_t gpunb_cuda_launch_irregular(const gpunb_cuda_jrec *rec, int nrec, double2 *pred,
                                                   int predict_first, const int *lists, int lmax, const int *idx,
                                                   int ni, double t, double *out, cudaStream_t stream)
{
    if (ni <= 0)
        return cudaGetLastError();
    if (pred) {
        const unsigned nt = GPUNB_CUDA_PREDICT_THREADS;
        if (predict_first)
            gpunb_irr_predict_kernel<<<((unsigned)nrec + nt - 1) / nt, nt, 0, stream>>>(rec, nrec, t, pred);
        gpunb_irregular_kernel<true><<<warps_to_blocks(ni), GPUNB_CUDA_IRR_THREADS, 0, stream>>>(
            rec, pred, lists, lmax, idx, ni, t, out);
    } else {
        gpunb_irregular_kernel<false><<<warps_to_blocks(ni), GPUNB_CUDA_IRR_THREADS, 0, stream>>>(
            rec, NULL, lists, lmax, idx, ni, t, out);
    }
    return cudaGetLastError();
}
