/* nb6_simd_avx512.h -- the vector vocabulary of the SIMD kernels for
 * AVX-512F: 16 float lanes, opmask registers for masks, a gather of whole
 * 64-byte records (simd_load_records), rsqrt14 refined by one Newton step.
 * Compile with SIMD_AVX512_CFLAGS.  Every nb6_simd_<level>.h defines the same
 * names; the kernels use only them. */
#ifndef NB6_SIMD_ISA_H
#define NB6_SIMD_ISA_H

#include <immintrin.h>

#include <stddef.h>

#define SIMD_VL 16
#define SIMD_LEVEL_NAME "avx512"
#define SIMD_SUFFIX(name) name##_avx512

typedef __m512 simd_f;
typedef __mmask16 simd_mask;

static inline simd_f simd_set1(float a) { return _mm512_set1_ps(a); }
static inline simd_f simd_zero(void) { return _mm512_setzero_ps(); }
static inline simd_f simd_load(const float *p) { return _mm512_load_ps(p); }
static inline simd_f simd_add(simd_f a, simd_f b) { return _mm512_add_ps(a, b); }
static inline simd_f simd_sub(simd_f a, simd_f b) { return _mm512_sub_ps(a, b); }
static inline simd_f simd_mul(simd_f a, simd_f b) { return _mm512_mul_ps(a, b); }
static inline simd_f simd_min(simd_f a, simd_f b) { return _mm512_min_ps(a, b); }
/* a*b + c and c - a*b */
static inline simd_f simd_fmadd(simd_f a, simd_f b, simd_f c) { return _mm512_fmadd_ps(a, b, c); }
static inline simd_f simd_fnmadd(simd_f a, simd_f b, simd_f c) { return _mm512_fnmadd_ps(a, b, c); }

static inline simd_mask simd_lt(simd_f a, simd_f b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
static inline simd_mask simd_mask_not(simd_mask m) { return (simd_mask)~m; }
/* a where m, else 0 */
static inline simd_f simd_keep(simd_f a, simd_mask m) { return _mm512_maskz_mov_ps(m, a); }
/* Lane l of the mask as bit l. */
static inline unsigned simd_mask_bits(simd_mask m) { return (unsigned)m; }
/* Lanes 0 .. n-1 (all when n >= SIMD_VL). */
static inline simd_mask simd_first(int n)
{
    return n >= SIMD_VL ? (simd_mask)0xffff : (simd_mask)((1u << n) - 1u);
}

/* 1/sqrt(r2) where r2 > 0, exactly 0 where r2 == 0 (coincident particles,
 * masked lanes).  rsqrt14 has a relative error below 2^-14; one Newton step
 * in the form y + y/2 (1 - r2 y^2) brings it to about one float ulp. */
static inline simd_f simd_rsqrt_nz(simd_f r2)
{
    simd_mask pos = _mm512_cmp_ps_mask(r2, _mm512_setzero_ps(), _CMP_GT_OQ);
    __m512 y = _mm512_maskz_rsqrt14_ps(pos, r2);
    __m512 e = _mm512_fnmadd_ps(r2, _mm512_mul_ps(y, y), _mm512_set1_ps(1.0f));
    return _mm512_fmadd_ps(_mm512_mul_ps(y, _mm512_set1_ps(0.5f)), e, y);
}

/* Fields 0..11 of the 16-float records at base + idx[l], l = 0..SIMD_VL-1
 * (idx[l]: a record offset from a list, a multiple of 16), as vectors:
 * out[f] lane l = base[idx[l] + f].  Three
 * aligned 128-bit loads per record (the load inserts them straight into the
 * 128-bit lane of the vector that collects them) and 4x4 transposes: cheaper
 * than ten gathers, which fetch the same cache line ten times.  Record-major
 * order, so that one record's address is live at a time (the compiler spills
 * sixteen live indices). */
static inline __attribute__((always_inline)) void simd_load_records(const float *base, const int *idx, simd_f out[12])
{
    __m512 r[3][4];
#pragma GCC unroll 16
    for (int l = 0; l < 16; l++) {
        /* unsigned: the offset is zero-extended by the load itself */
        const float *p = base + (unsigned)idx[l];
        const int g = l & 3, lane = l >> 2;
#pragma GCC unroll 3
        for (int c = 0; c < 3; c++) {
            __m128 v = _mm_load_ps(p + 4 * c);
            r[c][g] = lane == 0 ? _mm512_broadcast_f32x4(v) : _mm512_insertf32x4(r[c][g], v, lane);
        }
    }
#pragma GCC unroll 3
    for (int c = 0; c < 3; c++) {
        /* In 128-bit lane L, row g is record g + 4L: transpose each 4x4. */
        __m512d t0 = _mm512_castps_pd(_mm512_unpacklo_ps(r[c][0], r[c][1]));
        __m512d t1 = _mm512_castps_pd(_mm512_unpackhi_ps(r[c][0], r[c][1]));
        __m512d t2 = _mm512_castps_pd(_mm512_unpacklo_ps(r[c][2], r[c][3]));
        __m512d t3 = _mm512_castps_pd(_mm512_unpackhi_ps(r[c][2], r[c][3]));
        out[4 * c + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
        out[4 * c + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
        out[4 * c + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
        out[4 * c + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
    }
}

/* Sum of the lanes, in double. */
static inline double simd_hsum(simd_f v)
{
    __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
}

#endif
