/* ac_cpu.c -- whether this CPU (and its OS) runs the code of the driver's
 * AVX2 and AVX-512 corrector lanes (ac_correct_avx2.f90, -march=x86-64-v3;
 * ac_correct_avx512.f90, -march=x86-64-v4).  Not the libraries'
 * nb6_simd_cpu.h: its levels are what their intrinsics need (AVX-512F, AVX2
 * with FMA), while gfortran's code for a level may use any of its features. */
#include <stdbool.h>

bool ac_cpu_has_avx2(void);
bool ac_cpu_has_avx512(void);

/* libgcc's checks include the OS's XSAVE state for the ymm and zmm registers. */
bool ac_cpu_has_avx2(void)
{
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    __builtin_cpu_init();
    bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
              __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
#if !defined(__clang__)
    /* Clang's builtin does not know these three names. */
    v3 = v3 && __builtin_cpu_supports("f16c") && __builtin_cpu_supports("lzcnt") &&
         __builtin_cpu_supports("movbe");
#endif
    return v3;
#else
    return false;
#endif
}

bool ac_cpu_has_avx512(void)
{
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    __builtin_cpu_init();
    return ac_cpu_has_avx2() && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
#else
    return false;
#endif
}
