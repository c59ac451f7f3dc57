/* gpunb_cuda_potential.cu -- GPUPOT's potential in double precision on the
 * GPU: one thread per particle k, the particles l in shared-memory tiles.
 * r = 0 pairs (k itself, coincident particles) are skipped, as on the host. */
#include "gpunb_cuda_kernels.h"


static __global__ void __launch_bounds__(GPUNB_CUDA_POT_THREADS)
gpunb_potential_kernel(const gpunb_cuda_xm *__restrict__ xm, int n, int k0, int k1,
                       double *__restrict__ pot)
{
    __shared__ gpunb_cuda_xm tile[GPUNB_CUDA_POT_THREADS];
    const int k = k0 + blockIdx.x * GPUNB_CUDA_POT_THREADS + threadIdx.x;
    gpunb_cuda_xm me = {0, 0, 0, 0};
    double phi = 0.0;

    if (k < k1)
        me = xm[k];
    for (int l0 = 0; l0 < n; l0 += GPUNB_CUDA_POT_THREADS) {
        const int l = l0 + threadIdx.x;
        if (l < n)
            tile[threadIdx.x] = xm[l];
        else
            tile[threadIdx.x] = gpunb_cuda_xm{0, 0, 0, 0};
        __syncthreads();
        const int len = min(GPUNB_CUDA_POT_THREADS, n - l0);
        for (int q = 0; q < len; q++) {
            const double dx = tile[q].x - me.x, dy = tile[q].y - me.y, dz = tile[q].z - me.z;
            const double r2 = dx * dx + dy * dy + dz * dz;
            if (r2 > 0.0)
                phi += tile[q].m / sqrt(r2);
        }
        __syncthreads();
    }
    if (k < k1)
        pot[k - k0] = phi;
}

extern "C" cudaError_t gpunb_cuda_launch_potential(const gpunb_cuda_xm *xm, int n, int k0, int k1,
                                                   double *pot, cudaStream_t stream)
{
    const int blocks = (k1 - k0 + GPUNB_CUDA_POT_THREADS - 1) / GPUNB_CUDA_POT_THREADS;
    if (blocks > 0)
        gpunb_potential_kernel<<<blocks, GPUNB_CUDA_POT_THREADS, 0, stream>>>(xm, n, k0, k1, pot);
    return cudaGetLastError();
}
