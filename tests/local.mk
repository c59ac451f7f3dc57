# Tests: `make check`.  Each program exits 0 (pass), 77 (skip, with the
# reason on stdout) or 1 (fail) and ends with "name: N passed, M failed".
noinst_LTLIBRARIES += tests/libtestlib.la
tests_libtestlib_la_SOURCES = tests/testlib.c tests/testlib.h
TEST_LIBS = tests/libtestlib.la libgpunb.la libgpuirr.la -lm

FOUNDATION_TESTS = tests/test_gpunb tests/test_gpuirr tests/test_helpers tests/test_lifecycle \
	tests/test_concurrency tests/test_native tests/test_resident tests/test_irregular tests/test_dirty
check_PROGRAMS += $(FOUNDATION_TESTS)
TESTS += $(FOUNDATION_TESTS) tests/test_symbols.sh
tests_test_gpunb_LDADD = $(TEST_LIBS)
tests_test_gpuirr_LDADD = $(TEST_LIBS)
tests_test_helpers_LDADD = $(TEST_LIBS)
tests_test_lifecycle_LDADD = $(TEST_LIBS)
tests_test_concurrency_LDADD = $(TEST_LIBS) -lpthread
tests_test_native_LDADD = $(TEST_LIBS)
tests_test_resident_LDADD = $(TEST_LIBS) -lpthread
tests_test_irregular_LDADD = $(TEST_LIBS)
# An internal part of libgpunb, built in from its source (its symbols are hidden).
tests_test_dirty_SOURCES = tests/test_dirty.c gpunb/gpunb_dirty.c
tests_test_dirty_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/gpunb
tests_test_dirty_LDADD = tests/libtestlib.la libnb6common.la -lm -lpthread
EXTRA_DIST += tests/test_symbols.sh tests/device-setup.sh tests/cores-check.sh
# The legacy tests run on whatever the default back-end is; on a machine
# without a GPU a CUDA build must be allowed to use the CPU for them.
AM_TESTS_ENVIRONMENT = top_builddir=$(top_builddir); export top_builddir; \
	NB6ACCEL_CPU_FALLBACK=$${NB6ACCEL_CPU_FALLBACK-1}; export NB6ACCEL_CPU_FALLBACK;

if HAVE_FORTRAN
check_PROGRAMS += tests/test_fortran
TESTS += tests/test_fortran
tests_test_fortran_SOURCES = tests/test_fortran.f90
tests_test_fortran_LDADD = libnb6accel_fmod.la libgpunb.la libgpuirr.la
tests_test_fortran_LDFLAGS = $(OPENMP_FCFLAGS)
tests/test_fortran.$(OBJEXT): libnb6accel_fmod.la
endif

include tests/gpu/local.mk
include tests/simd/local.mk
include tests/plummer/local.mk

# `make installcheck` (and so `make distcheck`): programs built against the
# installed tree with nothing but pkg-config's flags.
EXTRA_DIST += tests/install/legacy_c.c tests/install/legacy_f.f90
installcheck-local:
	@set -e; pc="$(DESTDIR)$(libdir)/pkgconfig"; d=`mktemp -d`; \
	flags=`PKG_CONFIG_PATH="$$pc" PKG_CONFIG_SYSROOT_DIR="$(DESTDIR)" pkg-config --cflags --libs nb6accel`; \
	echo "pkg-config nb6accel: $$flags"; \
	$(CC) -o $$d/legacy_c $(srcdir)/tests/install/legacy_c.c $$flags -lm; \
	NB6ACCEL_CPU_FALLBACK=$${NB6ACCEL_CPU_FALLBACK-1}; export NB6ACCEL_CPU_FALLBACK; \
	LD_LIBRARY_PATH="$(DESTDIR)$(libdir)" $$d/legacy_c; \
	if test -n "$(FC)"; then \
	  (cd $$d && $(FC) -o legacy_f $(abs_srcdir)/tests/install/legacy_f.f90 $$flags) && \
	  LD_LIBRARY_PATH="$(DESTDIR)$(libdir)" $$d/legacy_f; \
	fi; rm -rf $$d

# Fuzzing (run by .ci/run for 60 s; by hand: tests/fuzz/run-fuzz.sh SECONDS).
EXTRA_DIST += tests/fuzz/fuzz_api.c tests/fuzz/run-fuzz.sh
