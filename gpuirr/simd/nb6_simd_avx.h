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

/* 1/sqrt(r2), 0 where r2 == 0: sqrt and divide (see nb6_simd_avx2.h). */
static inline simd_f simd_rsqrt_nz(simd_f r2)
{
    __m256 pos = _mm256_cmp_ps(r2, _mm256_setzero_ps(), _CMP_GT_OQ);
    return _mm256_and_ps(_mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_sqrt_ps(r2)), pos);
}

/* Fields 0..11 of the 16-float records at base + idx[l], l = 0..SIMD_VL-1
 * (idx[l]: a record offset from a list, a multiple of 16), as vectors:
 * out[f] lane l = base[idx[l] + f].  Three
 * aligned 128-bit loads per record and 4x4 transposes: cheaper than ten
 * gathers, which fetch the same cache line ten times. */
static inline __attribute__((always_inline)) void simd_load_records(const float *base, const int *idx, simd_f out[12])
{
#pragma GCC unroll 3
    for (int c = 0; c < 3; c++) {
        __m256 r[4];
#pragma GCC unroll 4
        for (int g = 0; g < 4; g++)
            r[g] = _mm256_insertf128_ps(
                _mm256_castps128_ps256(_mm_load_ps(base + (unsigned)idx[g] + 4 * c)),
                _mm_load_ps(base + (unsigned)idx[g + 4] + 4 * c), 1);
        /* In 128-bit lane L, row g is record g + 4L: transpose each 4x4. */
        __m256d t0 = _mm256_castps_pd(_mm256_unpacklo_ps(r[0], r[1]));
        __m256d t1 = _mm256_castps_pd(_mm256_unpackhi_ps(r[0], r[1]));
        __m256d t2 = _mm256_castps_pd(_mm256_unpacklo_ps(r[2], r[3]));
        __m256d t3 = _mm256_castps_pd(_mm256_unpackhi_ps(r[2], r[3]));
        out[4 * c + 0] = _mm256_castpd_ps(_mm256_unpacklo_pd(t0, t2));
        out[4 * c + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(t0, t2));
        out[4 * c + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(t1, t3));
        out[4 * c + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(t1, t3));
    }
}

static inline double simd_hsum(simd_f v)
{
    __m256d d = _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)),
                              _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(d), _mm256_extractf128_pd(d, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

/* Offsets of a list tail: out[l] = m[l] for l < left, m[0] beyond (a record
 * that is loaded anyway; those lanes are masked off). */
static inline void simd_tail_offsets(const int *m, int left, int out[SIMD_VL])
{
    for (int l = 0; l < SIMD_VL; l++)
        out[l] = m[l < left ? l : 0];
}

#endif
