/* ac_cpu.c -- whether this CPU (and its OS) runs AVX-512 code of the
 * x86-64-v4 level, for the driver's choice of irregular corrector lanes
 * (ac_correct_avx512.f90).  Not the libraries' nb6_simd_cpu.h: its AVX-512
 * level means AVX-512F, all their kernels use, while gfortran's
 * -march=x86-64-v4 code may also use CD, BW, DQ and VL (which the Xeon Phi
 * lacked). */
#include <stdbool.h>

bool ac_cpu_has_avx512(void);

bool ac_cpu_has_avx512(void)
{
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    /* libgcc's checks include the OS's XSAVE state for the zmm registers. */
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
#else
    return false;
#endif
}
