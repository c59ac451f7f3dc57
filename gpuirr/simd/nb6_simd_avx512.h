/* nb6_simd_avx512.h -- the vector vocabulary of the SIMD kernels for
 * AVX-512F: 16 float lanes, opmask registers for masks, a gather of whole
 * records (simd_load_records), rsqrt14 refined by one Newton step.
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

/* The lo parts of a GPUIRR record (gpuirr_lo16): the signed 16-bit integer
 * in the low or the high half of each lane's 32 bits, as a float (exact),
 * and the unit 2^(e - 166) of the lo part beside hi (e: hi's biased
 * exponent; 0 where e < 40), so that lo = n * unit exactly.  Integer
 * operations on the bits: every level gives the same values. */
static inline simd_f simd_int16_lo(simd_f w)
{
    return _mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(_mm512_castps_si512(w), 16), 16));
}
static inline simd_f simd_int16_hi(simd_f w)
{
    return _mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_castps_si512(w), 16));
}
static inline simd_f simd_lo_unit(simd_f hi)
{
    __m512i e = _mm512_and_si512(_mm512_castps_si512(hi), _mm512_set1_epi32(0x7f800000));
    return _mm512_castsi512_ps(_mm512_max_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(39 << 23)),
                                                _mm512_setzero_si512()));
}

/* Record loads: fields off..off+7 (off a multiple of 8) of the records at
 * base + idx[l], l = 0..SIMD_VL-1 (idx[l]: a record offset from a list,
 * 32-byte aligned), as vectors: out[f] lane l = base[idx[l] + off + f].
 * Cheaper than gathers, which fetch the same cache line once per field,
 * and the shuffles are the kernel's scarce port: eight fields come as
 * 256-bit halves, records l and l + 8 in one vector (one load, one
 * insert), then an 8x8 transpose inside each half (unpack, shuffle,
 * two-source permute: 24 shuffles).  Record-major order, so that one
 * record's address is live at a time (sixteen live offsets spill), and each
 * load reads its offset afresh (record_offset): a record is loaded in two
 * groups of fields, and the compiler would otherwise keep its sixteen
 * addresses from one group to the next, on the stack. */
static inline __attribute__((always_inline)) unsigned record_offset(const int *idx, int l)
{
    return (unsigned)((const volatile int *)idx)[l];
}
static inline __attribute__((always_inline)) void simd_load_fields8(const float *base, const int *idx, int off,
                                                               simd_f out[8])
{
    __m512 h[8];
#pragma GCC unroll 16
    for (int l = 0; l < 16; l++) {
        /* unsigned: the offset is zero-extended by the load itself */
        const float *p = base + record_offset(idx, l) + off;
        const int row = l & 7;
        if (l < 8)
            h[row] = _mm512_castps256_ps512(_mm256_load_ps(p));
        else
            h[row] = _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(h[row]),
                                                         _mm256_castps_pd(_mm256_load_ps(p)), 1));
    }
    /* h[r]: fields off..off+7 of record r (low half) and r + 8 (high half). */
    __m512 t[8], u[8];
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        t[2 * k] = _mm512_unpacklo_ps(h[2 * k], h[2 * k + 1]);
        t[2 * k + 1] = _mm512_unpackhi_ps(h[2 * k], h[2 * k + 1]);
    }
#pragma GCC unroll 2
    for (int k = 0; k < 2; k++) {
        /* u[4k + f]: 128-bit lane L holds field f (L even) or f + 4 (L odd)
         * of records 4k..4k+3 (+8 in the high half) */
        u[4 * k + 0] = _mm512_shuffle_ps(t[4 * k], t[4 * k + 2], 0x44);
        u[4 * k + 1] = _mm512_shuffle_ps(t[4 * k], t[4 * k + 2], 0xee);
        u[4 * k + 2] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
        u[4 * k + 3] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xee);
    }
    const __m512i even = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
    const __m512i odd = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
#pragma GCC unroll 4
    for (int f = 0; f < 4; f++) {
        __m512d lo = _mm512_castps_pd(u[f]), hi = _mm512_castps_pd(u[4 + f]);
        out[f] = _mm512_castpd_ps(_mm512_permutex2var_pd(lo, even, hi));
        out[4 + f] = _mm512_castpd_ps(_mm512_permutex2var_pd(lo, odd, hi));
    }
}

/* Lane 0 of v. */
static inline float simd_lane0(simd_f v) { return _mm512_cvtss_f32(v); }

/* Sum of the lanes, in double. */
static inline double simd_hsum(simd_f v)
{
    __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
}

/* Offsets of a list tail: out[l] = m[l] for l < left, m[0] beyond (a record
 * that is loaded anyway; those lanes are masked off).  A masked load reads
 * nothing past the list. */
static inline void simd_tail_offsets(const int *m, int left, int out[SIMD_VL])
{
    __m512i v = _mm512_mask_loadu_epi32(_mm512_set1_epi32(m[0]), simd_first(left), m);
    _mm512_storeu_si512(out, v);
}

#endif
