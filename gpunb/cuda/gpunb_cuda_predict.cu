/* gpunb_cuda_predict.cu -- resident j-particles on the GPU: the prediction
 * kernel turns every record into the float j-set the force kernel reads
 * (the same layout gpunb_send leaves).  The records the host changed since
 * the last prediction are either copied into the GPU's record array before
 * it, or (a few) read by it from the host's mapped array and kept, as a
 * bitmap in mapped memory marks them: that costs no launch of its own.
 * Where the j-set's spatial order (gpunb_cuda_spatial.cu) is still current,
 * the kernel also writes the sorted copies and their boxes, which a
 * prediction in a new order leaves to gpunb_cuda_launch_sorted_boxes.
 *
 * The prediction is in double with NBODY6's Horner form and no contraction
 * into FMA (__dmul_rn/__dadd_rn), so it is bit-identical to the host's
 * (gpunb_handle.h, fp-contract off): the host's and the GPU's j-sets are the
 * same floats.  The i of a pending force that the host needs (the several-GPU
 * path, the redo of a block) are read back from the j-set (the fetch kernel
 * below), so that self stays an exact r = 0 neighbour even where the
 * records changed after the prediction. */
#include "gpunb_cuda_box.cuh"

#include <math_constants.h>

/* hi + lo floats of a double (the host's nb6_split in common/nb6_common.h). */
static __device__ __forceinline__ void split_rn(double r, float *hi, float *lo)
{
    *hi = __double2float_rn(r);
    *lo = __double2float_rn(__dadd_rn(r, -(double)*hi));
}

/* Record j's j-set entry p (position, mass), u (velocity), l (low parts)
 * at time t about o; zero padding from nj on.  A record marked in pull_bits
 * is read from host_rec and kept in rec first. */
static __device__ __forceinline__ void predict_entry(gpunb_cuda_jrec *__restrict__ rec,
                                                     const gpunb_cuda_jrec *__restrict__ host_rec,
                                                     const unsigned *__restrict__ pull_bits, int nj, int j, double t,
                                                     const gpunb_cuda_origin *o, float4 *p, float4 *u, float4 *l)
{
    *p = *u = *l = make_float4(0, 0, 0, 0); /* padding: massless, adds nothing */
    if (j >= nj)
        return;
    gpunb_cuda_jrec pulled;
    const gpunb_cuda_jrec *r = rec + j;
    if (pull_bits && (pull_bits[j >> 5] >> (j & 31) & 1u)) { /* changed: the host's record, kept */
        pulled = host_rec[j];
        rec[j] = pulled;
        r = &pulled;
    }
    double x[3], v[3];
    gpunb_cuda_predict_record(r, t, x, v);
    split_rn(__dadd_rn(x[0], -o->x[0]), &p->x, &l->x);
    split_rn(__dadd_rn(x[1], -o->x[1]), &p->y, &l->y);
    split_rn(__dadd_rn(x[2], -o->x[2]), &p->z, &l->z);
    p->w = __double2float_rn(r->m);
    *u = make_float4(__double2float_rn(__dadd_rn(v[0], -o->v[0])), __double2float_rn(__dadd_rn(v[1], -o->v[1])),
                     __double2float_rn(__dadd_rn(v[2], -o->v[2])), 0.0f);
}

static __global__ void __launch_bounds__(GPUNB_CUDA_PREDICT_THREADS)
gpunb_predict_kernel(gpunb_cuda_jrec *__restrict__ rec, const gpunb_cuda_jrec *__restrict__ host_rec,
                     const unsigned *__restrict__ pull_bits, int nj, int npad, double t, gpunb_cuda_origin o,
                     float4 *__restrict__ jpos, float4 *__restrict__ jvel, float4 *__restrict__ jlo)
{
    const int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= npad)
        return;
    float4 p, u, l;
    predict_entry(rec, host_rec, pull_bits, nj, q, t, &o, &p, &u, &l);
    jpos[q] = p;
    jvel[q] = u;
    jlo[q] = l;
}

/* The same in spatial order: a warp per quarter tile of the sorted copies
 * (entry k is record perm[k]) predicts its entries into them and into the
 * j-set, and folds the quarter's box: what gpunb_cuda_launch_sorted_boxes
 * would make after gpunb_predict_kernel, without its launch. */
static __global__ void __launch_bounds__(GPUNB_CUDA_BOX_THREADS)
gpunb_predict_sorted_kernel(gpunb_cuda_jrec *__restrict__ rec, const gpunb_cuda_jrec *__restrict__ host_rec,
                            const unsigned *__restrict__ pull_bits, int nj, int nquarters, double t,
                            gpunb_cuda_origin o, const int *__restrict__ perm, float4 *__restrict__ jpos,
                            float4 *__restrict__ jvel, float4 *__restrict__ jlo, float4 *__restrict__ spos,
                            float4 *__restrict__ svel, float4 *__restrict__ slo, float4 *__restrict__ box)
{
    const int lane = threadIdx.x % 32;
    const int q = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (q >= nquarters) /* uniform per warp */
        return;
    gpunb_cuda_box_acc b;
    gpunb_cuda_box_begin(&b);
#pragma unroll
    for (int e = 0; e < GPUNB_CUDA_QUARTER_J / 32; e++) {
        const int k = q * GPUNB_CUDA_QUARTER_J + e * 32 + lane, j = perm[k];
        float4 p, u, l;
        predict_entry(rec, host_rec, pull_bits, nj, j, t, &o, &p, &u, &l);
        jpos[j] = p;
        jvel[j] = u;
        jlo[j] = l;
        spos[k] = p;
        svel[k] = u;
        slo[k] = l;
        gpunb_cuda_box_add(&b, p, u);
    }
    gpunb_cuda_box_store(&b, lane, q, box);
}

/* A block's part of the records' moments: each thread's sums over its
 * records, then the warps' (shuffles) and the block's (shared memory),
 * always in the same order. */
static __global__ void __launch_bounds__(GPUNB_CUDA_MOMENT_THREADS)
gpunb_moments_kernel(const gpunb_cuda_jrec *__restrict__ rec, int nj, gpunb_cuda_moments *__restrict__ part)
{
    enum { SUMS = sizeof(gpunb_cuda_moments) / sizeof(double), WARPS = GPUNB_CUDA_MOMENT_THREADS / 32 };
    __shared__ double warp_sum[WARPS][SUMS];
    double a[SUMS] = {0};
    a[SUMS - 1] = CUDART_INF;
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < nj; j += gridDim.x * blockDim.x) {
        const gpunb_cuda_jrec *r = rec + j;
        const double w = r->m;
        if (w == 0.0) /* a ghost far away: not even 0 * inf */
            continue;
        a[0] += w;
        for (int c = 0; c < 3; c++) {
            a[1 + c] += w * r->x0[c];
            a[4 + c] += w * r->v0[c];
        }
        a[7] += w * (r->x0[0] * r->x0[0] + r->x0[1] * r->x0[1] + r->x0[2] * r->x0[2]);
        a[8] += w * (r->v0[0] * r->v0[0] + r->v0[1] * r->v0[1] + r->v0[2] * r->v0[2]);
        a[9] = fmin(a[9], w);
    }
    for (int d = 16; d > 0; d /= 2)
        for (int k = 0; k < SUMS; k++) {
            const double o = __shfl_down_sync(0xffffffffu, a[k], d);
            a[k] = k == SUMS - 1 ? fmin(a[k], o) : a[k] + o;
        }
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0)
        for (int k = 0; k < SUMS; k++)
            warp_sum[warp][k] = a[k];
    __syncthreads();
    if (threadIdx.x < SUMS) {
        const int k = threadIdx.x;
        double b = warp_sum[0][k];
        for (int w = 1; w < WARPS; w++)
            b = k == SUMS - 1 ? fmin(b, warp_sum[w][k]) : b + warp_sum[w][k];
        ((double *)&part[blockIdx.x])[k] = b;
    }
}

extern "C" cudaError_t gpunb_cuda_launch_moments(const gpunb_cuda_jrec *rec, int nj, gpunb_cuda_moments *part,
                                                 cudaStream_t stream)
{
    gpunb_moments_kernel<<<GPUNB_CUDA_MOMENT_BLOCKS, GPUNB_CUDA_MOMENT_THREADS, 0, stream>>>(rec, nj, part);
    return cudaGetLastError();
}

/* The j-set entries of the given members, as the force kernels read them. */
static __global__ void __launch_bounds__(GPUNB_CUDA_PREDICT_THREADS)
gpunb_fetch_kernel(const float4 *__restrict__ jpos, const float4 *__restrict__ jvel,
                   const float4 *__restrict__ jlo, const int *__restrict__ index, int n,
                   float4 *__restrict__ out)
{
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) {
        const int j = index[k];
        out[3 * k] = jpos[j];
        out[3 * k + 1] = jvel[j];
        out[3 * k + 2] = jlo[j];
    }
}

extern "C" cudaError_t gpunb_cuda_launch_predict(gpunb_cuda_jrec *rec, const gpunb_cuda_jrec *host_rec,
                                                 const unsigned *pull_bits, int nj, int npad, double t,
                                                 const gpunb_cuda_origin *o, float4 *jpos, float4 *jvel,
                                                 float4 *jlo, const gpunb_cuda_sorted_out *sorted,
                                                 cudaStream_t stream)
{
    if (sorted) {
        const int nquarters = npad / GPUNB_CUDA_QUARTER_J, per_block = GPUNB_CUDA_BOX_THREADS / 32;
        gpunb_predict_sorted_kernel<<<(nquarters + per_block - 1) / per_block, GPUNB_CUDA_BOX_THREADS, 0, stream>>>(
            rec, host_rec, pull_bits, nj, nquarters, t, *o, sorted->perm, jpos, jvel, jlo, sorted->spos,
            sorted->svel, sorted->slo, sorted->box);
    } else {
        const int nt = GPUNB_CUDA_PREDICT_THREADS;
        gpunb_predict_kernel<<<(npad + nt - 1) / nt, nt, 0, stream>>>(rec, host_rec, pull_bits, nj, npad, t, *o,
                                                                      jpos, jvel, jlo);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t gpunb_cuda_launch_fetch(const float4 *jpos, const float4 *jvel, const float4 *jlo,
                                               const int *index, int n, float4 *out, cudaStream_t stream)
{
    const int nt = GPUNB_CUDA_PREDICT_THREADS;
    if (n > 0)
        gpunb_fetch_kernel<<<(n + nt - 1) / nt, nt, 0, stream>>>(jpos, jvel, jlo, index, n, out);
    return cudaGetLastError();
}
