/* gpuirr_dispatch.c -- choose the GPUIRR kernel for this CPU.
 * Compiled without SIMD flags: it only reads CPUID and XGETBV
 * (simd/nb6_simd_cpu.h) and points at a kernel built for a level the CPU has.
 * NB6ACCEL_SIMD=scalar|sse2|avx|avx2|avx512 forces one (tests use it to check
 * every kernel on one machine); a level that this build lacks or this CPU
 * cannot run is an error naming the value, never a silent fallback. */
#include "config.h"
#include "gpuirr_dispatch.h"
#include "simd/nb6_simd_cpu.h"

#include <stdio.h>
#include <string.h>

/* kernel_of[level]: NULL where that level is not compiled in. */
static const gpuirr_kernel *kernel_of(int level)
{
    switch (level) {
    case NB6_SIMD_SCALAR:
        return &gpuirr_kernel_scalar;
#ifdef NB6ACCEL_HAVE_SSE2
    case NB6_SIMD_SSE2:
        return &gpuirr_kernel_sse2;
#endif
#ifdef NB6ACCEL_HAVE_AVX
    case NB6_SIMD_AVX:
        return &gpuirr_kernel_avx;
#endif
#ifdef NB6ACCEL_HAVE_AVX2
    case NB6_SIMD_AVX2:
        return &gpuirr_kernel_avx2;
#endif
#ifdef NB6ACCEL_HAVE_AVX512
    case NB6_SIMD_AVX512:
        return &gpuirr_kernel_avx512;
#endif
    default:
        return NULL;
    }
}

int gpuirr_choose_kernel(const gpuirr_kernel **out)
{
    const char *want = nb6_getenv("NB6ACCEL_SIMD");
    const int cpu = nb6_simd_cpu_level();
    char built[96] = "";

    for (int l = 0; l < NB6_SIMD_NLEVELS; l++)
        if (kernel_of(l)) {
            strcat(built, l ? " " : "");
            strcat(built, nb6_simd_level_names[l]);
        }
    if (!want) {
        for (int l = cpu; l >= 0; l--)
            if (kernel_of(l)) {
                *out = kernel_of(l);
                return GPUIRR_OK;
            }
        *out = &gpuirr_kernel_scalar;
        return GPUIRR_OK;
    }
    int level = nb6_simd_level_from_name(want);
    if (level < 0)
        return gpuirr_fail(GPUIRR_EUSAGE,
                           "gpuirr_open: NB6ACCEL_SIMD=\"%s\" is not a SIMD level "
                           "(scalar, sse2, avx, avx2, avx512)", want);
    if (!kernel_of(level))
        return gpuirr_fail(GPUIRR_EUSAGE,
                           "gpuirr_open: NB6ACCEL_SIMD=\"%s\" is not compiled into this build "
                           "(built: %s)", want, built);
    if (level > cpu)
        return gpuirr_fail(GPUIRR_EUSAGE,
                           "gpuirr_open: NB6ACCEL_SIMD=\"%s\" is not supported by this CPU "
                           "(it runs up to %s)", want, nb6_simd_level_names[cpu]);
    *out = kernel_of(level);
    return GPUIRR_OK;
}
