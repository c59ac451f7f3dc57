/* gpuirr_dispatch.c -- choose the GPUIRR kernel for this CPU.
 * NB6ACCEL_SIMD=<name> forces one (tests use it to check every kernel). */
#include "config.h"
#include "gpuirr_dispatch.h"

#include <string.h>

static const gpuirr_kernel *const kernels[] = {
    &gpuirr_kernel_scalar,
};

int gpuirr_choose_kernel(const gpuirr_kernel **out)
{
    const char *want = nb6_getenv("NB6ACCEL_SIMD");
    size_t n = sizeof kernels / sizeof kernels[0];
    if (!want) {
        *out = kernels[n - 1];
        return GPUIRR_OK;
    }
    for (size_t k = 0; k < n; k++)
        if (strcmp(kernels[k]->name, want) == 0) {
            *out = kernels[k];
            return GPUIRR_OK;
        }
    return gpuirr_fail(GPUIRR_EUSAGE,
                       "gpuirr_open: NB6ACCEL_SIMD=\"%s\" is not a kernel of this build on this CPU "
                       "(available: scalar)", want);
}
