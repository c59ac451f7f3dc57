/* gpunb_cuda_boxes.cu -- the j-set's sorted copies (spatial order,
 * gpunb_cuda_spatial.cu) and the bounding boxes of their quarter tiles (the
 * j one way of a force block computes in one tile), for the force kernel's
 * far test: where no j of a quarter can be a neighbour of any i of a warp,
 * the warp skips the neighbour criterion for those j.  One kernel does
 * both: a separate copy kernel cost one more launch (~6 us of host time on
 * the H100 box) in every gpunb_predict and gpunb_send.
 *
 * A box holds the massive j only: a massless j (padding, NBODY6's merger
 * ghosts at 1e6) is never a neighbour and adds nothing, the same with the
 * test as without, and would stretch its box over the whole cluster. */
#include "gpunb_cuda_kernels.h"

/* One warp per quarter: each lane copies and folds QUARTER_J / 32 j, then the warp. */
static __device__ __forceinline__ float warp_min(float v)
{
#pragma unroll
    for (int d = 16; d > 0; d >>= 1)
        v = fminf(v, __shfl_xor_sync(0xffffffffu, v, d));
    return v;
}

static __device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int d = 16; d > 0; d >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, d));
    return v;
}

static __global__ void __launch_bounds__(GPUNB_CUDA_BOX_THREADS)
gpunb_sorted_boxes_kernel(const int *__restrict__ perm, const float4 *__restrict__ jpos,
                          const float4 *__restrict__ jvel, const float4 *__restrict__ jlo, int nquarters,
                          float4 *__restrict__ spos, float4 *__restrict__ svel, float4 *__restrict__ slo,
                          float4 *__restrict__ box)
{
    const int lane = threadIdx.x % 32;
    const int q = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    if (q >= nquarters) /* uniform per warp */
        return;
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    float vlo[3] = {INFINITY, INFINITY, INFINITY}, vhi[3] = {-INFINITY, -INFINITY, -INFINITY};
    float mmax = 0.0f;
#pragma unroll
    for (int e = 0; e < GPUNB_CUDA_QUARTER_J / 32; e++) {
        const int k = q * GPUNB_CUDA_QUARTER_J + e * 32 + lane, j = perm[k];
        const float4 p = jpos[j], v = jvel[j];
        spos[k] = p;
        svel[k] = v;
        slo[k] = jlo[j];
        if (p.w > 0.0f) {
            lo[0] = fminf(lo[0], p.x), hi[0] = fmaxf(hi[0], p.x);
            lo[1] = fminf(lo[1], p.y), hi[1] = fmaxf(hi[1], p.y);
            lo[2] = fminf(lo[2], p.z), hi[2] = fmaxf(hi[2], p.z);
            vlo[0] = fminf(vlo[0], v.x), vhi[0] = fmaxf(vhi[0], v.x);
            vlo[1] = fminf(vlo[1], v.y), vhi[1] = fmaxf(vhi[1], v.y);
            vlo[2] = fminf(vlo[2], v.z), vhi[2] = fmaxf(vhi[2], v.z);
            mmax = fmaxf(mmax, p.w);
        }
    }
    for (int k = 0; k < 3; k++) {
        lo[k] = warp_min(lo[k]), hi[k] = warp_max(hi[k]);
        vlo[k] = warp_min(vlo[k]), vhi[k] = warp_max(vhi[k]);
    }
    mmax = warp_max(mmax);
    if (lane != 0)
        return;
    if (mmax == 0.0f) { /* no massive j: never a neighbour; finite velocities keep dt * v finite */
        for (int k = 0; k < 3; k++)
            vlo[k] = vhi[k] = 0.0f;
    }
    /* The largest magnitudes of a coordinate and a velocity in the box:
     * the far test's rounding allowance scales with them. */
    float xmag = 0.0f, vmag = 0.0f;
    if (mmax > 0.0f)
        for (int k = 0; k < 3; k++) {
            xmag = fmaxf(xmag, fmaxf(fabsf(lo[k]), fabsf(hi[k])));
            vmag = fmaxf(vmag, fmaxf(fabsf(vlo[k]), fabsf(vhi[k])));
        }
    box[4 * q] = make_float4(lo[0], lo[1], lo[2], mmax);
    box[4 * q + 1] = make_float4(hi[0], hi[1], hi[2], xmag);
    box[4 * q + 2] = make_float4(vlo[0], vlo[1], vlo[2], 0.0f);
    box[4 * q + 3] = make_float4(vhi[0], vhi[1], vhi[2], vmag);
}

extern "C" cudaError_t gpunb_cuda_launch_sorted_boxes(const int *perm, const float4 *jpos, const float4 *jvel,
                                                      const float4 *jlo, int nquarters, float4 *spos, float4 *svel,
                                                      float4 *slo, float4 *box, cudaStream_t stream)
{
    const int per_block = GPUNB_CUDA_BOX_THREADS / 32;
    if (nquarters > 0)
        gpunb_sorted_boxes_kernel<<<(nquarters + per_block - 1) / per_block, GPUNB_CUDA_BOX_THREADS, 0, stream>>>(
            perm, jpos, jvel, jlo, nquarters, spos, svel, slo, box);
    return cudaGetLastError();
}
