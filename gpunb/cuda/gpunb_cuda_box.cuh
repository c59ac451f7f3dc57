/* gpunb_cuda_box.cuh -- the bounding box of one quarter tile of the j-set
 * in spatial order (the j one way of a force block computes in one tile),
 * folded by one warp, for the force kernel's far test: where no j of a
 * quarter can be a neighbour of any i of a warp, the warp skips the
 * neighbour criterion for those j.  Device functions: the boxes kernel
 * (gpunb_cuda_boxes.cu) folds the sorted copies it makes of a j-set, the
 * sorted prediction (gpunb_cuda_predict.cu) the entries it predicts.
 *
 * A box holds the massive j only: a massless j (padding, NBODY6's merger
 * ghosts at 1e6) is never a neighbour and adds nothing, the same with the
 * test as without, and would stretch its box over the whole cluster. */
#ifndef GPUNB_CUDA_BOX_CUH
#define GPUNB_CUDA_BOX_CUH

#include "gpunb_cuda_kernels.h"

typedef struct gpunb_cuda_box_acc {
    float lo[3], hi[3], vlo[3], vhi[3], mmax;
} gpunb_cuda_box_acc;

static __device__ __forceinline__ void gpunb_cuda_box_begin(gpunb_cuda_box_acc *b)
{
    for (int k = 0; k < 3; k++) {
        b->lo[k] = b->vlo[k] = INFINITY;
        b->hi[k] = b->vhi[k] = -INFINITY;
    }
    b->mmax = 0.0f;
}

/* This lane's entry p (position, mass), v (velocity). */
static __device__ __forceinline__ void gpunb_cuda_box_add(gpunb_cuda_box_acc *b, float4 p, float4 v)
{
    if (p.w > 0.0f) {
        b->lo[0] = fminf(b->lo[0], p.x), b->hi[0] = fmaxf(b->hi[0], p.x);
        b->lo[1] = fminf(b->lo[1], p.y), b->hi[1] = fmaxf(b->hi[1], p.y);
        b->lo[2] = fminf(b->lo[2], p.z), b->hi[2] = fmaxf(b->hi[2], p.z);
        b->vlo[0] = fminf(b->vlo[0], v.x), b->vhi[0] = fmaxf(b->vhi[0], v.x);
        b->vlo[1] = fminf(b->vlo[1], v.y), b->vhi[1] = fmaxf(b->vhi[1], v.y);
        b->vlo[2] = fminf(b->vlo[2], v.z), b->vhi[2] = fmaxf(b->vhi[2], v.z);
        b->mmax = fmaxf(b->mmax, p.w);
    }
}

static __device__ __forceinline__ float gpunb_cuda_warp_min(float v)
{
#pragma unroll
    for (int d = 16; d > 0; d >>= 1)
        v = fminf(v, __shfl_xor_sync(0xffffffffu, v, d));
    return v;
}

static __device__ __forceinline__ float gpunb_cuda_warp_max(float v)
{
#pragma unroll
    for (int d = 16; d > 0; d >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, d));
    return v;
}

/* The warp's lanes together: quarter q's box into box[4q .. 4q + 3] (see
 * gpunb_cuda_launch_sorted_boxes); every lane of the warp must call it. */
static __device__ __forceinline__ void gpunb_cuda_box_store(gpunb_cuda_box_acc *b, int lane, int q,
                                                            float4 *__restrict__ box)
{
    float lo[3], hi[3], vlo[3], vhi[3];
    for (int k = 0; k < 3; k++) {
        lo[k] = gpunb_cuda_warp_min(b->lo[k]), hi[k] = gpunb_cuda_warp_max(b->hi[k]);
        vlo[k] = gpunb_cuda_warp_min(b->vlo[k]), vhi[k] = gpunb_cuda_warp_max(b->vhi[k]);
    }
    const float mmax = gpunb_cuda_warp_max(b->mmax);
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

#endif
