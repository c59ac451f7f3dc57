# SIMD kernels of GPUIRR: gpuirr/simd/gpuirr_simd_kernel.c compiled once per
# instruction set that configure found (HAVE_SIMD_<LEVEL>), each with that
# set's flags, as a convenience library linked into libgpuirr.  The
# dispatcher (gpuirr/gpuirr_dispatch.c) is compiled without those flags.
# GPUIRR_KERNEL_CFLAGS: two GCC options that keep the kernels' code the same
# at -O2 and -O3 (m4/nb6_simd.m4 says why).
EXTRA_DIST += gpuirr/simd/nb6_simd_cpu.h gpuirr/simd/nb6_simd_select.h gpuirr/simd/nb6_simd_avx_common.h \
	gpuirr/simd/nb6_simd_generic.h gpuirr/simd/nb6_simd_sse2.h gpuirr/simd/nb6_simd_avx.h \
	gpuirr/simd/nb6_simd_avx2.h gpuirr/simd/nb6_simd_avx512.h
NB6_SIMD_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/gpuirr/simd

if HAVE_SIMD_SSE2
noinst_LTLIBRARIES += libgpuirr_sse2.la
libgpuirr_sse2_la_SOURCES = gpuirr/simd/gpuirr_simd_kernel.c
libgpuirr_sse2_la_CPPFLAGS = $(NB6_SIMD_CPPFLAGS) -DNB6_SIMD_BUILD_SSE2
libgpuirr_sse2_la_CFLAGS = $(AM_CFLAGS) $(SIMD_SSE2_CFLAGS) $(GPUIRR_KERNEL_CFLAGS)
libgpuirr_la_LIBADD += libgpuirr_sse2.la
endif

if HAVE_SIMD_AVX
noinst_LTLIBRARIES += libgpuirr_avx.la
libgpuirr_avx_la_SOURCES = gpuirr/simd/gpuirr_simd_kernel.c
libgpuirr_avx_la_CPPFLAGS = $(NB6_SIMD_CPPFLAGS) -DNB6_SIMD_BUILD_AVX
libgpuirr_avx_la_CFLAGS = $(AM_CFLAGS) $(SIMD_AVX_CFLAGS) $(GPUIRR_KERNEL_CFLAGS)
libgpuirr_la_LIBADD += libgpuirr_avx.la
endif

if HAVE_SIMD_AVX2
noinst_LTLIBRARIES += libgpuirr_avx2.la
libgpuirr_avx2_la_SOURCES = gpuirr/simd/gpuirr_simd_kernel.c
libgpuirr_avx2_la_CPPFLAGS = $(NB6_SIMD_CPPFLAGS) -DNB6_SIMD_BUILD_AVX2
libgpuirr_avx2_la_CFLAGS = $(AM_CFLAGS) $(SIMD_AVX2_CFLAGS) $(GPUIRR_KERNEL_CFLAGS)
libgpuirr_la_LIBADD += libgpuirr_avx2.la
endif

if HAVE_SIMD_AVX512
noinst_LTLIBRARIES += libgpuirr_avx512.la
libgpuirr_avx512_la_SOURCES = gpuirr/simd/gpuirr_simd_kernel.c
libgpuirr_avx512_la_CPPFLAGS = $(NB6_SIMD_CPPFLAGS) -DNB6_SIMD_BUILD_AVX512
libgpuirr_avx512_la_CFLAGS = $(AM_CFLAGS) $(SIMD_AVX512_CFLAGS) $(GPUIRR_KERNEL_CFLAGS)
libgpuirr_la_LIBADD += libgpuirr_avx512.la
endif
