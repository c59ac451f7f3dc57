# libgpunb: regular force, jerk, potential and neighbour lists.
lib_LTLIBRARIES += libgpunb.la
include_HEADERS += gpunb/gpunb.h
libgpunb_la_SOURCES = gpunb/gpunb_api.c gpunb/gpunb_handle.h gpunb/gpunb_resident.c gpunb/gpunb_irregular.c \
	gpunb/gpunb_backend.h gpunb/gpunb_cpu.c gpunb/gpunb_dirty.c gpunb/gpunb_dirty.h \
	gpunb/gpunb_profile.c gpunb/gpunb_profile.h \
	fortran_bindings/gpunb_legacy.c
libgpunb_la_LIBADD = libnb6common.la
libgpunb_la_LDFLAGS = -version-info 0:0:0 $(OPENMP_CFLAGS)
EXTRA_libgpunb_la_DEPENDENCIES =

include gpunb/cuda/local.mk
include gpunb/simd/local.mk
