/* nb6_simd_avx_common.h -- the part of the 8-lane vocabulary that AVX and
 * AVX2 share (both 256-bit float vectors): the reciprocal square root, the
 * record loads with their 4x4 transposes, the horizontal sum.  Included by
 * nb6_simd_avx.h and nb6_simd_avx2.h after their own definitions. */
#ifndef NB6_SIMD_AVX_COMMON_H
#define NB6_SIMD_AVX_COMMON_H

/* 1/sqrt(r2), 0 where r2 == 0.  AVX's rsqrt has only 12 bits; one Newton
 * step would leave a one-sided error of ~2e-7 (6e-7 in r^-3), above the
 * accuracy budget, so this level uses a correctly rounded sqrt and divide. */
static inline simd_f simd_rsqrt_nz(simd_f r2)
{
    __m256 pos = _mm256_cmp_ps(r2, _mm256_setzero_ps(), _CMP_GT_OQ);
    return _mm256_and_ps(_mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_sqrt_ps(r2)), pos);
}

/* Record loads: fields off..off+3 (simd_load_fields4, off a multiple of
 * 4) or off..off+7 (simd_load_fields8) of the records at base + idx[l],
 * l = 0..SIMD_VL-1 (idx[l]: a record offset from a list, 16-byte aligned),
 * as vectors: out[f] lane l = base[idx[l] + off + f].  Aligned 128-bit
 * loads and 4x4 transposes: cheaper than gathers, which fetch the same
 * cache line once per field. */
static inline __attribute__((always_inline)) void simd_load_fields4(const float *base, const int *idx, int off,
                                                                    simd_f out[4])
{
    __m256 r[4];
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++)
        r[g] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_load_ps(base + (unsigned)idx[g] + off)),
                                    _mm_load_ps(base + (unsigned)idx[g + 4] + off), 1);
    /* In 128-bit lane L, row g is record g + 4L: transpose each 4x4. */
    __m256d t0 = _mm256_castps_pd(_mm256_unpacklo_ps(r[0], r[1]));
    __m256d t1 = _mm256_castps_pd(_mm256_unpackhi_ps(r[0], r[1]));
    __m256d t2 = _mm256_castps_pd(_mm256_unpacklo_ps(r[2], r[3]));
    __m256d t3 = _mm256_castps_pd(_mm256_unpackhi_ps(r[2], r[3]));
    out[0] = _mm256_castpd_ps(_mm256_unpacklo_pd(t0, t2));
    out[1] = _mm256_castpd_ps(_mm256_unpackhi_pd(t0, t2));
    out[2] = _mm256_castpd_ps(_mm256_unpacklo_pd(t1, t3));
    out[3] = _mm256_castpd_ps(_mm256_unpackhi_pd(t1, t3));
}

static inline __attribute__((always_inline)) void simd_load_fields8(const float *base, const int *idx, int off,
                                                                    simd_f out[8])
{
    simd_load_fields4(base, idx, off, out);
    simd_load_fields4(base, idx, off + 4, out + 4);
}

/* Lane 0 of v. */
static inline float simd_lane0(simd_f v) { return _mm256_cvtss_f32(v); }

static inline double simd_hsum(simd_f v)
{
    __m256d d = _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)),
                              _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(d), _mm256_extractf128_pd(d, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

#endif
