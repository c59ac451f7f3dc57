/* nb6_simd_avx.h -- the vector vocabulary of the SIMD kernels for AVX (Sandy
 * Bridge): 8 float lanes, no FMA (a*b+c in two roundings), record gather by
 * loads and transposes.  Compile with SIMD_AVX_CFLAGS.  Same names as
 * nb6_simd_avx512.h. */
#ifndef NB6_SIMD_ISA_H
#define NB6_SIMD_ISA_H

#include <immintrin.h>

#include <stddef.h>

#define SIMD_VL 8
#define SIMD_LEVEL_NAME "avx"
#define SIMD_SUFFIX(name) name##_avx

typedef __m256 simd_f;
typedef __m256 simd_mask;

static inline simd_f simd_set1(float a) { return _mm256_set1_ps(a); }
static inline simd_f simd_zero(void) { return _mm256_setzero_ps(); }
static inline simd_f simd_load(const float *p) { return _mm256_load_ps(p); }
static inline simd_f simd_add(simd_f a, simd_f b) { return _mm256_add_ps(a, b); }
static inline simd_f simd_sub(simd_f a, simd_f b) { return _mm256_sub_ps(a, b); }
static inline simd_f simd_mul(simd_f a, simd_f b) { return _mm256_mul_ps(a, b); }
static inline simd_f simd_min(simd_f a, simd_f b) { return _mm256_min_ps(a, b); }
static inline simd_f simd_fmadd(simd_f a, simd_f b, simd_f c) { return _mm256_add_ps(_mm256_mul_ps(a, b), c); }
static inline simd_f simd_fnmadd(simd_f a, simd_f b, simd_f c) { return _mm256_sub_ps(c, _mm256_mul_ps(a, b)); }

static inline simd_mask simd_lt(simd_f a, simd_f b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
static inline simd_mask simd_mask_not(simd_mask m)
{
    return _mm256_xor_ps(m, _mm256_castsi256_ps(_mm256_set1_epi32(-1)));
}
static inline simd_f simd_keep(simd_f a, simd_mask m) { return _mm256_and_ps(a, m); }
static inline unsigned simd_mask_bits(simd_mask m) { return (unsigned)_mm256_movemask_ps(m); }
static inline simd_mask simd_first(int n)
{
    /* AVX has no 256-bit integer compare: compare lane numbers as floats. */
    __m256 lane = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmp_ps(lane, _mm256_set1_ps((float)(n < SIMD_VL ? n : SIMD_VL)), _CMP_LT_OQ);
}

/* The lo parts of a GPUIRR record (see nb6_simd_avx512.h).  AVX has no
 * 256-bit integer operations: each 128-bit half with SSE4.1's. */
static inline __m128i avx_half(simd_f w, int upper)
{
    return _mm_castps_si128(upper ? _mm256_extractf128_ps(w, 1) : _mm256_castps256_ps128(w));
}
static inline simd_f avx_join(__m128i lo, __m128i hi)
{
    return _mm256_castsi256_ps(_mm256_insertf128_si256(_mm256_castsi128_si256(lo), hi, 1));
}
static inline simd_f simd_int16_lo(simd_f w)
{
    return _mm256_cvtepi32_ps(_mm256_castps_si256(avx_join(_mm_srai_epi32(_mm_slli_epi32(avx_half(w, 0), 16), 16),
                                                           _mm_srai_epi32(_mm_slli_epi32(avx_half(w, 1), 16), 16))));
}
static inline simd_f simd_int16_hi(simd_f w)
{
    return _mm256_cvtepi32_ps(_mm256_castps_si256(avx_join(_mm_srai_epi32(avx_half(w, 0), 16),
                                                           _mm_srai_epi32(avx_half(w, 1), 16))));
}
static inline __m128i avx_lo_unit_half(__m128i bits)
{
    __m128i e = _mm_sub_epi32(_mm_and_si128(bits, _mm_set1_epi32(0x7f800000)), _mm_set1_epi32(39 << 23));
    return _mm_max_epi32(e, _mm_setzero_si128());
}
static inline simd_f simd_lo_unit(simd_f hi)
{
    return avx_join(avx_lo_unit_half(avx_half(hi, 0)), avx_lo_unit_half(avx_half(hi, 1)));
}

#include "nb6_simd_avx_common.h"

/* Offsets of a list tail: out[l] = m[l] for l < left, m[0] beyond (a record
 * that is loaded anyway; those lanes are masked off). */
static inline void simd_tail_offsets(const int *m, int left, int out[SIMD_VL])
{
    for (int l = 0; l < SIMD_VL; l++)
        out[l] = m[l < left ? l : 0];
}

#endif
