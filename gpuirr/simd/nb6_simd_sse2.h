/* nb6_simd_sse2.h -- the vector vocabulary of the SIMD kernels for SSE2:
 * 4 float lanes, no FMA, record gather by loads and
 * _MM_TRANSPOSE4_PS.  Compile with SIMD_SSE2_CFLAGS.  Same
 * names as nb6_simd_avx512.h. */
#ifndef NB6_SIMD_ISA_H
#define NB6_SIMD_ISA_H

#include <emmintrin.h>

#include <stddef.h>

#define SIMD_VL 4
#define SIMD_LEVEL_NAME "sse2"
#define SIMD_SUFFIX(name) name##_sse2

typedef __m128 simd_f;
typedef __m128 simd_mask;

static inline simd_f simd_set1(float a) { return _mm_set1_ps(a); }
static inline simd_f simd_zero(void) { return _mm_setzero_ps(); }
static inline simd_f simd_load(const float *p) { return _mm_load_ps(p); }
static inline simd_f simd_add(simd_f a, simd_f b) { return _mm_add_ps(a, b); }
static inline simd_f simd_sub(simd_f a, simd_f b) { return _mm_sub_ps(a, b); }
static inline simd_f simd_mul(simd_f a, simd_f b) { return _mm_mul_ps(a, b); }
static inline simd_f simd_min(simd_f a, simd_f b) { return _mm_min_ps(a, b); }
static inline simd_f simd_fmadd(simd_f a, simd_f b, simd_f c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
static inline simd_f simd_fnmadd(simd_f a, simd_f b, simd_f c) { return _mm_sub_ps(c, _mm_mul_ps(a, b)); }

static inline simd_mask simd_lt(simd_f a, simd_f b) { return _mm_cmplt_ps(a, b); }
static inline simd_mask simd_mask_not(simd_mask m)
{
    return _mm_xor_ps(m, _mm_castsi128_ps(_mm_set1_epi32(-1)));
}
static inline simd_f simd_keep(simd_f a, simd_mask m) { return _mm_and_ps(a, m); }
static inline unsigned simd_mask_bits(simd_mask m) { return (unsigned)_mm_movemask_ps(m); }
static inline simd_mask simd_first(int n)
{
    __m128i lane = _mm_setr_epi32(0, 1, 2, 3);
    return _mm_castsi128_ps(_mm_cmpgt_epi32(_mm_set1_epi32(n), lane));
}

/* 1/sqrt(r2), 0 where r2 == 0: sqrt and divide (see nb6_simd_avx2.h). */
static inline simd_f simd_rsqrt_nz(simd_f r2)
{
    __m128 pos = _mm_cmpgt_ps(r2, _mm_setzero_ps());
    return _mm_and_ps(_mm_div_ps(_mm_set1_ps(1.0f), _mm_sqrt_ps(r2)), pos);
}

/* The lo parts of a GPUIRR record (see nb6_simd_avx512.h).  SSE2 has no
 * signed 32-bit max: negative units are masked to 0 instead. */
static inline simd_f simd_int16_lo(simd_f w)
{
    return _mm_cvtepi32_ps(_mm_srai_epi32(_mm_slli_epi32(_mm_castps_si128(w), 16), 16));
}
static inline simd_f simd_int16_hi(simd_f w) { return _mm_cvtepi32_ps(_mm_srai_epi32(_mm_castps_si128(w), 16)); }
static inline simd_f simd_lo_unit(simd_f hi)
{
    __m128i e = _mm_sub_epi32(_mm_and_si128(_mm_castps_si128(hi), _mm_set1_epi32(0x7f800000)),
                              _mm_set1_epi32(39 << 23));
    return _mm_castsi128_ps(_mm_and_si128(e, _mm_cmpgt_epi32(e, _mm_setzero_si128())));
}

/* Record loads: fields off..off+3 (simd_load_fields4, off a multiple of
 * 4) or off..off+7 (simd_load_fields8) of the records at base + idx[l],
 * l = 0..SIMD_VL-1 (idx[l]: a record offset from a list, 16-byte aligned),
 * as vectors: out[f] lane l = base[idx[l] + off + f].  Aligned 128-bit
 * loads and 4x4 transposes. */
static inline __attribute__((always_inline)) void simd_load_fields4(const float *base, const int *idx, int off,
                                                                    simd_f out[4])
{
    __m128 r0 = _mm_load_ps(base + (unsigned)idx[0] + off);
    __m128 r1 = _mm_load_ps(base + (unsigned)idx[1] + off);
    __m128 r2 = _mm_load_ps(base + (unsigned)idx[2] + off);
    __m128 r3 = _mm_load_ps(base + (unsigned)idx[3] + off);
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
    out[0] = r0;
    out[1] = r1;
    out[2] = r2;
    out[3] = r3;
}

static inline __attribute__((always_inline)) void simd_load_fields8(const float *base, const int *idx, int off,
                                                                    simd_f out[8])
{
    simd_load_fields4(base, idx, off, out);
    simd_load_fields4(base, idx, off + 4, out + 4);
}

/* Lane 0 of v. */
static inline float simd_lane0(simd_f v) { return _mm_cvtss_f32(v); }

static inline double simd_hsum(simd_f v)
{
    __m128d s = _mm_add_pd(_mm_cvtps_pd(v), _mm_cvtps_pd(_mm_movehl_ps(v, v)));
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
