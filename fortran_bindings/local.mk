# The legacy NBODY6 entry points live in libgpunb / libgpuirr (see their
# local.mk); here: their C header and the Fortran 2003 module.
nodist_include_HEADERS += fortran_bindings/nb6accel_legacy.h

if HAVE_FORTRAN
AM_FCFLAGS = $(FC_MODOUT)fortran_bindings $(FC_MODINC)fortran_bindings $(OPENMP_FCFLAGS)
# The module holds interfaces only; this library exists to build its .mod.
noinst_LTLIBRARIES += libnb6accel_fmod.la
nodist_libnb6accel_fmod_la_SOURCES = fortran_bindings/nb6accel.f90
fmoddir = $(includedir)
nodist_fmod_DATA = fortran_bindings/nb6accel.$(FC_MODEXT)
fortran_bindings/nb6accel.$(FC_MODEXT): libnb6accel_fmod.la
CLEANFILES += fortran_bindings/*.$(FC_MODEXT)
endif
