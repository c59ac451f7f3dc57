/* gpunb_cuda_boxes.cu -- the j-set's sorted copies (spatial order,
 * gpunb_cuda_spatial.cu) and the bounding boxes of their quarter tiles
 * (gpunb_cuda_box.cuh), after a gpunb_send or a prediction in the caller's
 * order.  One kernel does both: a separate copy kernel cost one more launch
 * (~6 us of host time on the H100 box).  A prediction in an order that is
 * still current makes them itself (gpunb_cuda_predict.cu). */
#include "gpunb_cuda_box.cuh"

/* One warp per quarter: each lane copies and folds QUARTER_J / 32 j, then the warp. */
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
    gpunb_cuda_box_acc b;
    gpunb_cuda_box_begin(&b);
#pragma unroll
    for (int e = 0; e < GPUNB_CUDA_QUARTER_J / 32; e++) {
        const int k = q * GPUNB_CUDA_QUARTER_J + e * 32 + lane, j = perm[k];
        const float4 p = jpos[j], v = jvel[j];
        spos[k] = p;
        svel[k] = v;
        slo[k] = jlo[j];
        gpunb_cuda_box_add(&b, p, v);
    }
    gpunb_cuda_box_store(&b, lane, q, box);
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
