# NB6_CHECK_SIMD: which instruction sets the C compiler can build kernels for.
# Each level gets SIMD_<LEVEL>_CFLAGS, the conditional HAVE_SIMD_<LEVEL> and a
# define NB6ACCEL_HAVE_<LEVEL>; --disable-simd turns them all off.
# The SIMD + OpenMP host back-end of GPUNB (gpunb/simd/) is always built: it
# has a portable path and adds every level found here
# (NB6ACCEL_HAVE_GPUNB_SIMD makes gpunb_api.c use it for the CPU back-end).
AC_DEFUN([NB6_CHECK_SIMD_LEVEL], [
  AC_CACHE_CHECK([whether $CC builds $1 code with $2], [nb6_cv_simd_$1], [
    nb6_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS $2"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <immintrin.h>]], [[$3]])],
      [nb6_cv_simd_$1=yes], [nb6_cv_simd_$1=no])
    CFLAGS=$nb6_save_CFLAGS])
  AS_IF([test "x$enable_simd" != xno && test "x$nb6_cv_simd_$1" = xyes], [
    AC_DEFINE(m4_toupper([NB6ACCEL_HAVE_$1]), [1], [Define if the $1 kernels are built.])
    AC_SUBST(m4_toupper([SIMD_$1_CFLAGS]), ["$2"])
    nb6_simd_levels="$nb6_simd_levels $1"
  ])
  AM_CONDITIONAL(m4_toupper([HAVE_SIMD_$1]),
    [test "x$enable_simd" != xno && test "x$nb6_cv_simd_$1" = xyes])
])

AC_DEFUN([NB6_CHECK_SIMD], [
AC_ARG_ENABLE([simd],
  [AS_HELP_STRING([--disable-simd], [build only the scalar kernels])],
  [], [enable_simd=yes])
nb6_simd_levels="scalar"
AC_DEFINE([NB6ACCEL_HAVE_GPUNB_SIMD], [1],
  [Define when the SIMD + OpenMP host back-end of GPUNB is built (always).])
dnl The SIMD kernels never read errno; without it the compiler may vectorise
dnl sqrt (the double-precision potential of gpunb/simd/ needs that).
AC_CACHE_CHECK([whether $CC accepts -fno-math-errno], [nb6_cv_no_math_errno], [
  nb6_save_CFLAGS=$CFLAGS
  CFLAGS="$CFLAGS -fno-math-errno"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])], [nb6_cv_no_math_errno=yes], [nb6_cv_no_math_errno=no])
  CFLAGS=$nb6_save_CFLAGS])
AS_IF([test "x$nb6_cv_no_math_errno" = xyes], [SIMD_KERNEL_CFLAGS=-fno-math-errno], [SIMD_KERNEL_CFLAGS=])
AC_SUBST([SIMD_KERNEL_CFLAGS])
dnl GPUIRR's kernels are intrinsics throughout; two GCC options keep their
dnl code the same at every -O level (measured on the development EPYC):
dnl -fno-tree-slp-vectorize, because the SLP vectorizer (on at -O3, and
dnl cheaply at -O2 since GCC 12) moved the sixteen record offsets of a group
dnl into vector registers and back in a variant of the kernel tried at
dnl -O3 -march=native (295 instructions per group of 16 pairs instead of
dnl 233: tests/simd/RESULTS.md, session 44); -fpeel-loops (on at -O3 only),
dnl worth 7-10 % at 64k through the per-particle prefetch code.  Each is
dnl kept only where the compiler takes it without a warning.
GPUIRR_KERNEL_CFLAGS=
for nb6_flag in -fno-tree-slp-vectorize -fpeel-loops; do
  AC_MSG_CHECKING([whether $CC accepts $nb6_flag])
  nb6_save_CFLAGS=$CFLAGS
  CFLAGS="$CFLAGS -Werror $nb6_flag"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
    [GPUIRR_KERNEL_CFLAGS="$GPUIRR_KERNEL_CFLAGS $nb6_flag"; AC_MSG_RESULT([yes])], [AC_MSG_RESULT([no])])
  CFLAGS=$nb6_save_CFLAGS
done
AC_SUBST([GPUIRR_KERNEL_CFLAGS])
AS_CASE([$host_cpu], [x86_64|i?86], [
  NB6_CHECK_SIMD_LEVEL([sse2], [-msse2],
    [__m128 a = _mm_set1_ps(1.0f); a = _mm_rsqrt_ps(a); (void)a;])
  NB6_CHECK_SIMD_LEVEL([avx], [-mavx],
    [__m256 a = _mm256_set1_ps(1.0f); a = _mm256_rsqrt_ps(a); (void)a;])
  NB6_CHECK_SIMD_LEVEL([avx2], [-mavx2 -mfma],
    [__m256 a = _mm256_set1_ps(1.0f); a = _mm256_fmadd_ps(a, a, a); (void)a;])
  dnl -mavx512f alone does not enable FMA for the scalar and auto-vectorised
  dnl code around the intrinsics; every AVX-512F CPU has FMA.
  NB6_CHECK_SIMD_LEVEL([avx512], [-mavx512f -mfma],
    [__m512 a = _mm512_set1_ps(1.0f); a = _mm512_rsqrt14_ps(a); (void)a;])
], [
  AM_CONDITIONAL([HAVE_SIMD_SSE2], [false])
  AM_CONDITIONAL([HAVE_SIMD_AVX], [false])
  AM_CONDITIONAL([HAVE_SIMD_AVX2], [false])
  AM_CONDITIONAL([HAVE_SIMD_AVX512], [false])
])
])
