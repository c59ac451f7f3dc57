/* nb6_simd_avx2.h -- the vector vocabulary of the SIMD kernels for AVX2 + FMA:
 * 8 float lanes, vector masks, record gather by loads and transposes.
 * Compile with SIMD_AVX2_CFLAGS.  Same names as nb6_simd_avx512.h. */
#ifndef NB6_SIMD_ISA_H
#define NB6_SIMD_ISA_H

#include <immintrin.h>

#include <stddef.h>

#define SIMD_VL 8
#define SIMD_LEVEL_NAME "avx2"
#define SIMD_SUFFIX(name) name##_avx2

typedef __m256 simd_f;
typedef __m256 simd_mask; /* all-ones lanes */

static inline simd_f simd_set1(float a) { return _mm256_set1_ps(a); }
static inline simd_f simd_zero(void) { return _mm256_setzero_ps(); }
static inline simd_f simd_load(const float *p) { return _mm256_load_ps(p); }
static inline simd_f simd_add(simd_f a, simd_f b) { return _mm256_add_ps(a, b); }
static inline simd_f simd_sub(simd_f a, simd_f b) { return _mm256_sub_ps(a, b); }
static inline simd_f simd_mul(simd_f a, simd_f b) { return _mm256_mul_ps(a, b); }
static inline simd_f simd_min(simd_f a, simd_f b) { return _mm256_min_ps(a, b); }
static inline simd_f simd_fmadd(simd_f a, simd_f b, simd_f c) { return _mm256_fmadd_ps(a, b, c); }
static inline simd_f simd_fnmadd(simd_f a, simd_f b, simd_f c) { return _mm256_fnmadd_ps(a, b, c); }

static inline simd_mask simd_lt(simd_f a, simd_f b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
static inline simd_mask simd_mask_not(simd_mask m)
{
    return _mm256_xor_ps(m, _mm256_castsi256_ps(_mm256_set1_epi32(-1)));
}
static inline simd_f simd_keep(simd_f a, simd_mask m) { return _mm256_and_ps(a, m); }
static inline unsigned simd_mask_bits(simd_mask m) { return (unsigned)_mm256_movemask_ps(m); }
static inline simd_mask simd_first(int n)
{
    __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane));
}

/* The lo parts of a GPUIRR record (see nb6_simd_avx512.h). */
static inline simd_f simd_int16_lo(simd_f w)
{
    return _mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_slli_epi32(_mm256_castps_si256(w), 16), 16));
}
static inline simd_f simd_int16_hi(simd_f w)
{
    return _mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_castps_si256(w), 16));
}
static inline simd_f simd_lo_unit(simd_f hi)
{
    __m256i e = _mm256_and_si256(_mm256_castps_si256(hi), _mm256_set1_epi32(0x7f800000));
    return _mm256_castsi256_ps(_mm256_max_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(39 << 23)),
                                                _mm256_setzero_si256()));
}

#include "nb6_simd_avx_common.h"

/* Offsets of a list tail: out[l] = m[l] for l < left, m[0] beyond (a record
 * that is loaded anyway; those lanes are masked off).  A masked load reads
 * nothing past the list. */
static inline void simd_tail_offsets(const int *m, int left, int out[SIMD_VL])
{
    __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256i v = _mm256_maskload_epi32(m, keep);
    v = _mm256_blendv_epi8(_mm256_set1_epi32(m[0]), v, keep);
    _mm256_storeu_si256((__m256i *)out, v);
}

#endif
