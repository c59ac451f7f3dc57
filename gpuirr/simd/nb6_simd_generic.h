/* nb6_simd_generic.h -- the vector vocabulary with one lane in plain C: the
 * portable path of the GPUNB host back-end on CPUs without a SIMD level of
 * this build (the compiler may still vectorise it).  Same names as
 * nb6_simd_avx512.h. */
#ifndef NB6_SIMD_ISA_H
#define NB6_SIMD_ISA_H

#include <math.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SIMD_VL 1
#define SIMD_LEVEL_NAME "scalar"
#define SIMD_SUFFIX(name) name##_scalar

typedef float simd_f;
typedef int simd_mask;

static inline float simd_lane0(simd_f v) { return v; }
static inline simd_f simd_set1(float a) { return a; }
static inline simd_f simd_zero(void) { return 0.0f; }
static inline simd_f simd_load(const float *p) { return *p; }
static inline simd_f simd_add(simd_f a, simd_f b) { return a + b; }
static inline simd_f simd_sub(simd_f a, simd_f b) { return a - b; }
static inline simd_f simd_mul(simd_f a, simd_f b) { return a * b; }
static inline simd_f simd_min(simd_f a, simd_f b) { return a < b ? a : b; }
static inline simd_f simd_fmadd(simd_f a, simd_f b, simd_f c) { return a * b + c; }
static inline simd_f simd_fnmadd(simd_f a, simd_f b, simd_f c) { return c - a * b; }
static inline simd_mask simd_lt(simd_f a, simd_f b) { return a < b; }
static inline simd_mask simd_mask_not(simd_mask m) { return !m; }
static inline simd_f simd_keep(simd_f a, simd_mask m) { return m ? a : 0.0f; }
static inline unsigned simd_mask_bits(simd_mask m) { return m ? 1u : 0u; }
static inline simd_mask simd_first(int n) { return n > 0; }
static inline simd_f simd_rsqrt_nz(simd_f r2) { return r2 > 0.0f ? 1.0f / sqrtf(r2) : 0.0f; }
/* The lo parts of a GPUIRR record (see nb6_simd_avx512.h). */
static inline int32_t generic_bits(simd_f w)
{
    int32_t b;
    memcpy(&b, &w, sizeof b);
    return b;
}
static inline float generic_int16(uint32_t h) { return (float)((int32_t)h - (h >= 0x8000 ? 0x10000 : 0)); }
static inline simd_f simd_int16_lo(simd_f w) { return generic_int16((uint32_t)generic_bits(w) & 0xffff); }
static inline simd_f simd_int16_hi(simd_f w) { return generic_int16((uint32_t)generic_bits(w) >> 16); }
static inline simd_f simd_lo_unit(simd_f hi)
{
    int32_t e = (generic_bits(hi) & 0x7f800000) - (39 << 23);
    float u;
    e = e > 0 ? e : 0;
    memcpy(&u, &e, sizeof u);
    return u;
}
static inline __attribute__((always_inline)) void simd_load_fields8(const float *base, const int *idx, int off,
                                                                    simd_f out[8])
{
    for (int f = 0; f < 8; f++)
        out[f] = base[(unsigned)idx[0] + off + f];
}
static inline double simd_hsum(simd_f v) { return v; }

/* Offsets of a list tail: out[l] = m[l] for l < left, m[0] beyond (a record
 * that is loaded anyway; those lanes are masked off). */
static inline void simd_tail_offsets(const int *m, int left, int out[SIMD_VL])
{
    for (int l = 0; l < SIMD_VL; l++)
        out[l] = m[l < left ? l : 0];
}

#endif
