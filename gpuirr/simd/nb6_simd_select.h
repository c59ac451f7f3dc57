/* nb6_simd_select.h -- include the vector vocabulary of the level this
 * translation unit is compiled for (-DNB6_SIMD_BUILD_<LEVEL>, set by
 * gpuirr/simd/local.mk and gpunb/simd/local.mk next to that level's flags). */
#if defined(NB6_SIMD_BUILD_AVX512)
#include "nb6_simd_avx512.h"
#elif defined(NB6_SIMD_BUILD_AVX2)
#include "nb6_simd_avx2.h"
#elif defined(NB6_SIMD_BUILD_AVX)
#include "nb6_simd_avx.h"
#elif defined(NB6_SIMD_BUILD_SSE2)
#include "nb6_simd_sse2.h"
#else
#include "nb6_simd_generic.h"
#endif
