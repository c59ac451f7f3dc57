/* nb6_simd_cpu.h -- which instruction sets this CPU and its operating system
 * support, by CPUID and XGETBV.  Included by the dispatchers of libgpuirr and
 * libgpunb, which are compiled WITHOUT any -m flags, so that reading the CPU
 * never executes an instruction the CPU lacks.  Internal. */
#ifndef NB6_SIMD_CPU_H
#define NB6_SIMD_CPU_H

#include <string.h>

/* Levels in increasing order; a kernel of level L runs iff L <= the CPU's. */
enum nb6_simd_level {
    NB6_SIMD_SCALAR = 0,
    NB6_SIMD_SSE2 = 1,
    NB6_SIMD_AVX = 2,
    NB6_SIMD_AVX2 = 3, /* AVX2 + FMA */
    NB6_SIMD_AVX512 = 4, /* AVX-512F (+ AVX2, FMA, which every such CPU has) */
    NB6_SIMD_NLEVELS = 5
};

static const char *const nb6_simd_level_names[NB6_SIMD_NLEVELS] = {
    "scalar", "sse2", "avx", "avx2", "avx512"};

/* Level named `name`, or -1. */
static inline int nb6_simd_level_from_name(const char *name)
{
    for (int l = 0; l < NB6_SIMD_NLEVELS; l++)
        if (strcmp(name, nb6_simd_level_names[l]) == 0)
            return l;
    return -1;
}

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <cpuid.h>

/* XCR0: which register states the OS saves on a context switch.  Without
 * those bits the instructions exist but must not be used. */
static inline unsigned long long nb6_simd_xgetbv0(void)
{
    unsigned eax, edx;
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((unsigned long long)edx << 32) | eax;
}

/* The best level this CPU and OS support. */
static inline int nb6_simd_cpu_level(void)
{
    unsigned a, b, c, d, max_leaf;
    int level = NB6_SIMD_SCALAR;
    if (!__get_cpuid(0, &max_leaf, &b, &c, &d))
        return level;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return level;
    if (d & (1u << 26))
        level = NB6_SIMD_SSE2;
    int osxsave = (c & (1u << 27)) != 0, avx = (c & (1u << 28)) != 0, fma = (c & (1u << 12)) != 0;
    if (!osxsave || !avx)
        return level;
    unsigned long long xcr0 = nb6_simd_xgetbv0();
    if ((xcr0 & 0x6) != 0x6) /* SSE and AVX (YMM) state */
        return level;
    level = NB6_SIMD_AVX;
    if (max_leaf < 7)
        return level;
    __cpuid_count(7, 0, a, b, c, d);
    int avx2 = (b & (1u << 5)) != 0, avx512f = (b & (1u << 16)) != 0;
    if (!avx2 || !fma)
        return level;
    level = NB6_SIMD_AVX2;
    if (avx512f && (xcr0 & 0xe6) == 0xe6) /* + opmask, ZMM_Hi256, Hi16_ZMM state */
        level = NB6_SIMD_AVX512;
    return level;
}
#else
static inline int nb6_simd_cpu_level(void) { return NB6_SIMD_SCALAR; }
#endif

#endif
