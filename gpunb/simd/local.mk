# SIMD + OpenMP host back-end of GPUNB: the back-end (gpunb_simd.c, compiled
# without SIMD flags: it reads CPUID) and its kernel gpunb_simd_kernel.c,
# compiled once as the portable path and once per SIMD level configure found,
# each as a convenience library linked into libgpunb.  It shares the vector
# vocabulary headers of gpuirr/simd/.
GPUNB_SIMD_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/gpuirr/simd -I$(top_srcdir)/gpunb/simd
libgpunb_la_SOURCES += gpunb/simd/gpunb_simd.c gpunb/simd/gpunb_simd.h

noinst_LTLIBRARIES += libgpunb_simd_scalar.la
libgpunb_simd_scalar_la_SOURCES = gpunb/simd/gpunb_simd_kernel.c
libgpunb_simd_scalar_la_CPPFLAGS = $(GPUNB_SIMD_CPPFLAGS)
libgpunb_simd_scalar_la_CFLAGS = $(AM_CFLAGS) $(SIMD_KERNEL_CFLAGS)
libgpunb_la_LIBADD += libgpunb_simd_scalar.la

if HAVE_SIMD_SSE2
noinst_LTLIBRARIES += libgpunb_simd_sse2.la
libgpunb_simd_sse2_la_SOURCES = gpunb/simd/gpunb_simd_kernel.c
libgpunb_simd_sse2_la_CPPFLAGS = $(GPUNB_SIMD_CPPFLAGS) -DNB6_SIMD_BUILD_SSE2
libgpunb_simd_sse2_la_CFLAGS = $(AM_CFLAGS) $(SIMD_SSE2_CFLAGS) $(SIMD_KERNEL_CFLAGS)
libgpunb_la_LIBADD += libgpunb_simd_sse2.la
endif

if HAVE_SIMD_AVX
noinst_LTLIBRARIES += libgpunb_simd_avx.la
libgpunb_simd_avx_la_SOURCES = gpunb/simd/gpunb_simd_kernel.c
libgpunb_simd_avx_la_CPPFLAGS = $(GPUNB_SIMD_CPPFLAGS) -DNB6_SIMD_BUILD_AVX
libgpunb_simd_avx_la_CFLAGS = $(AM_CFLAGS) $(SIMD_AVX_CFLAGS) $(SIMD_KERNEL_CFLAGS)
libgpunb_la_LIBADD += libgpunb_simd_avx.la
endif

if HAVE_SIMD_AVX2
noinst_LTLIBRARIES += libgpunb_simd_avx2.la
libgpunb_simd_avx2_la_SOURCES = gpunb/simd/gpunb_simd_kernel.c
libgpunb_simd_avx2_la_CPPFLAGS = $(GPUNB_SIMD_CPPFLAGS) -DNB6_SIMD_BUILD_AVX2
libgpunb_simd_avx2_la_CFLAGS = $(AM_CFLAGS) $(SIMD_AVX2_CFLAGS) $(SIMD_KERNEL_CFLAGS)
libgpunb_la_LIBADD += libgpunb_simd_avx2.la
endif

if HAVE_SIMD_AVX512
noinst_LTLIBRARIES += libgpunb_simd_avx512.la
libgpunb_simd_avx512_la_SOURCES = gpunb/simd/gpunb_simd_kernel.c
libgpunb_simd_avx512_la_CPPFLAGS = $(GPUNB_SIMD_CPPFLAGS) -DNB6_SIMD_BUILD_AVX512
libgpunb_simd_avx512_la_CFLAGS = $(AM_CFLAGS) $(SIMD_AVX512_CFLAGS) $(SIMD_KERNEL_CFLAGS)
libgpunb_la_LIBADD += libgpunb_simd_avx512.la
endif
