# libgpuirr: irregular force over stored neighbour lists, host helpers.
lib_LTLIBRARIES += libgpuirr.la
include_HEADERS += gpuirr/gpuirr.h
libgpuirr_la_SOURCES = gpuirr/gpuirr_api.c gpuirr/gpuirr_internal.h gpuirr/gpuirr_dispatch.c \
	gpuirr/gpuirr_dispatch.h gpuirr/gpuirr_scalar.c gpuirr/gpuirr_host.c gpuirr/gpuirr_device.c \
	fortran_bindings/gpuirr_legacy.c
# (gpuirr_device.c: large blocks on the GPU through a GPUNB handle)
libgpuirr_la_LIBADD = libnb6common.la libgpunb.la
libgpuirr_la_LDFLAGS = -version-info 0:0:0 $(OPENMP_CFLAGS)

include gpuirr/simd/local.mk
