# The Plummer timing driver (the main job) and its tests.
#   make plummer         one run, N = $(PLUMMER_N) (default 16384 with a usable
#                        GPU, else 4096), t = 0..4,
#                        table on stdout, a row appended to $(PLUMMER_CSV)
#   make plummer-sweep   one run per N in $(PLUMMER_SWEEP) into a fresh
#                        $(PLUMMER_SWEEP_CSV), then Fig. 2 as $(PLUMMER_PNG)
# Override on the command line or in the environment, e.g.
#   make plummer PLUMMER_N=65536 PLUMMER_ARGS="-etai 0.02 -etar 0.03"
EXTRA_DIST += tests/plummer/README.md tests/plummer/plot-fig2.sh tests/plummer/run-on-device.sh tests/plummer/ab-on-device.sh tests/plummer/profile-on-device.sh tests/plummer/test_plummer_cli.sh \
	tests/plummer/RESULTS.md tests/plummer/results-h100.csv tests/plummer/fig2-h100.png \
	tests/plummer/ac_correct_lanes.inc tests/plummer/ac_box_terms.inc

if HAVE_FORTRAN
# The integrator as a convenience library: shared by the program and the tests.
noinst_LTLIBRARIES += tests/plummer/libplummerac.la
tests_plummer_libplummerac_la_SOURCES = tests/plummer/plummer_rng.f90 tests/plummer/ac_order.f90 \
	tests/plummer/plummer_model.f90 tests/plummer/ac_state.f90 tests/plummer/ac_clock.f90 tests/plummer/ac_profile.f90 \
	tests/plummer/ac_blocks.f90 tests/plummer/ac_forces.f90 \
	tests/plummer/ac_correct.f90 tests/plummer/ac_integrator.f90 tests/plummer/ac_run.f90 \
	tests/plummer/ac_table.f90 tests/plummer/ac_prefetch.c tests/plummer/ac_cpu.c
tests_plummer_libplummerac_la_LIBADD = tests/plummer/libplummerac_generic.la tests/plummer/libplummerac_avx2.la \
	tests/plummer/libplummerac_avx512.la
# The corrector's lanes and the start-up's pair terms in three copies
# (ac_correct_lanes.inc, ac_box_terms.inc; configure sets their flags);
# per-library flags need a library of their own.
noinst_LTLIBRARIES += tests/plummer/libplummerac_generic.la tests/plummer/libplummerac_avx2.la \
	tests/plummer/libplummerac_avx512.la
tests_plummer_libplummerac_generic_la_SOURCES = tests/plummer/ac_correct_generic.f90 tests/plummer/ac_box_terms_generic.f90
tests_plummer_libplummerac_generic_la_FCFLAGS = $(AM_FCFLAGS) $(PLUMMER_LANES_GENERIC_FCFLAGS)
tests_plummer_libplummerac_avx2_la_SOURCES = tests/plummer/ac_correct_avx2.f90 tests/plummer/ac_box_terms_avx2.f90
tests_plummer_libplummerac_avx2_la_FCFLAGS = $(AM_FCFLAGS) $(PLUMMER_LANES_AVX2_FCFLAGS)
tests_plummer_libplummerac_avx512_la_SOURCES = tests/plummer/ac_correct_avx512.f90 tests/plummer/ac_box_terms_avx512.f90
tests_plummer_libplummerac_avx512_la_FCFLAGS = $(AM_FCFLAGS) $(PLUMMER_LANES_AVX512_FCFLAGS)

noinst_PROGRAMS += tests/plummer/plummer_ac tests/plummer/plummer_gpu_usable
tests_plummer_plummer_gpu_usable_SOURCES = tests/plummer/plummer_gpu_usable.c
tests_plummer_plummer_gpu_usable_LDADD = libgpunb.la
tests_plummer_plummer_ac_SOURCES = tests/plummer/plummer_ac.f90
tests_plummer_plummer_ac_LDADD = tests/plummer/libplummerac.la libgpunb.la libgpuirr.la
tests_plummer_plummer_ac_LDFLAGS = $(OPENMP_FCFLAGS)

# The tests' PASS/FAIL lines (plummer_checks).
noinst_LTLIBRARIES += tests/plummer/libplummercheck.la
tests_plummer_libplummercheck_la_SOURCES = tests/plummer/plummer_checks.f90

PLUMMER_TESTS = tests/plummer/test_plummer_model tests/plummer/test_plummer_run tests/plummer/test_plummer_teams \
	tests/plummer/test_plummer_box_terms
check_PROGRAMS += $(PLUMMER_TESTS)
TESTS += $(PLUMMER_TESTS) tests/plummer/test_plummer_cli.sh
tests_plummer_test_plummer_model_SOURCES = tests/plummer/test_plummer_model.f90
tests_plummer_test_plummer_model_LDADD = tests/plummer/libplummercheck.la tests/plummer/libplummerac.la libgpunb.la \
	libgpuirr.la
tests_plummer_test_plummer_model_LDFLAGS = $(OPENMP_FCFLAGS)
tests_plummer_test_plummer_run_SOURCES = tests/plummer/test_plummer_run.f90
tests_plummer_test_plummer_run_LDADD = tests/plummer/libplummercheck.la tests/plummer/libplummerac.la libgpunb.la \
	libgpuirr.la
tests_plummer_test_plummer_run_LDFLAGS = $(OPENMP_FCFLAGS)
tests_plummer_test_plummer_teams_SOURCES = tests/plummer/test_plummer_teams.f90 tests/plummer/team_marks.c
tests_plummer_test_plummer_teams_LDADD = tests/plummer/libplummerac.la libgpunb.la libgpuirr.la
tests_plummer_test_plummer_teams_LDFLAGS = $(OPENMP_FCFLAGS)
tests_plummer_test_plummer_box_terms_SOURCES = tests/plummer/test_plummer_box_terms.f90
tests_plummer_test_plummer_box_terms_LDADD = tests/plummer/libplummercheck.la tests/plummer/libplummerac.la libgpunb.la \
	libgpuirr.la
tests_plummer_test_plummer_box_terms_LDFLAGS = $(OPENMP_FCFLAGS)

# Fortran modules must exist before their users compile (make -j).
# (The copies' objects are named through variables: a literal target would
# make automake drop its own compile rule for these objects, which have
# flags of their own.)
plummer_lanes_lo = tests/plummer/libplummerac_generic_la-ac_correct_generic.lo \
	tests/plummer/libplummerac_avx2_la-ac_correct_avx2.lo tests/plummer/libplummerac_avx512_la-ac_correct_avx512.lo
plummer_box_terms_lo = tests/plummer/libplummerac_generic_la-ac_box_terms_generic.lo \
	tests/plummer/libplummerac_avx2_la-ac_box_terms_avx2.lo tests/plummer/libplummerac_avx512_la-ac_box_terms_avx512.lo
tests/plummer/plummer_rng.lo: libnb6accel_fmod.la
tests/plummer/plummer_model.lo: tests/plummer/plummer_rng.lo tests/plummer/ac_order.lo libnb6accel_fmod.la
tests/plummer/ac_state.lo: libnb6accel_fmod.la
tests/plummer/ac_blocks.lo: tests/plummer/ac_state.lo tests/plummer/ac_clock.lo
tests/plummer/ac_forces.lo: tests/plummer/ac_correct.lo tests/plummer/ac_clock.lo tests/plummer/ac_order.lo \
	$(plummer_box_terms_lo)
tests/plummer/ac_correct.lo: tests/plummer/ac_state.lo
$(plummer_lanes_lo): tests/plummer/ac_correct.lo $(srcdir)/tests/plummer/ac_correct_lanes.inc
$(plummer_box_terms_lo): tests/plummer/ac_state.lo $(srcdir)/tests/plummer/ac_box_terms.inc
tests/plummer/ac_integrator.lo: tests/plummer/ac_blocks.lo tests/plummer/ac_correct.lo $(plummer_lanes_lo) \
	tests/plummer/ac_forces.lo tests/plummer/ac_profile.lo
tests/plummer/ac_run.lo: tests/plummer/ac_integrator.lo tests/plummer/plummer_model.lo tests/plummer/ac_profile.lo \
	tests/plummer/ac_order.lo
tests/plummer/ac_table.lo: tests/plummer/ac_run.lo
tests/plummer/plummer_ac.$(OBJEXT) tests/plummer/test_plummer_model.$(OBJEXT) \
	tests/plummer/test_plummer_run.$(OBJEXT) tests/plummer/test_plummer_teams.$(OBJEXT) \
	tests/plummer/test_plummer_box_terms.$(OBJEXT): tests/plummer/libplummerac.la
tests/plummer/test_plummer_model.$(OBJEXT) tests/plummer/test_plummer_run.$(OBJEXT) \
	tests/plummer/test_plummer_box_terms.$(OBJEXT): tests/plummer/libplummercheck.la

# auto: 16384 where GPUNB's CUDA back-end can run, else 4096.
PLUMMER_N ?= auto
PLUMMER_ARGS ?=
PLUMMER_CSV ?= plummer.csv
# auto: 16k, 32k, 64k, 128k where GPUNB's CUDA back-end can run, else 1k .. 8k.
PLUMMER_SWEEP ?= auto
PLUMMER_SWEEP_CSV ?= plummer-sweep.csv
PLUMMER_PNG ?= plummer-fig2.png

# A CUDA build on a machine without a usable GPU runs GPUNB on the CPU here
# (the libraries say so at open) rather than stopping.
PLUMMER_ENV = NB6ACCEL_CPU_FALLBACK=$${NB6ACCEL_CPU_FALLBACK-1}; export NB6ACCEL_CPU_FALLBACK;

plummer: tests/plummer/plummer_ac$(EXEEXT) tests/plummer/plummer_gpu_usable$(EXEEXT)
	@n=$(PLUMMER_N); if test "$$n" = auto; then \
	  if ./tests/plummer/plummer_gpu_usable$(EXEEXT); then n=16384; else n=4096; fi; \
	  echo "plummer: N = $$n (PLUMMER_N=... to choose)"; fi; \
	$(PLUMMER_ENV) ./tests/plummer/plummer_ac$(EXEEXT) -n $$n -csv $(PLUMMER_CSV) $(PLUMMER_ARGS)
	@echo "plummer: table appended to $(PLUMMER_CSV)"

plummer-sweep: tests/plummer/plummer_ac$(EXEEXT) tests/plummer/plummer_gpu_usable$(EXEEXT)
	rm -f $(PLUMMER_SWEEP_CSV)
	@set -e; $(PLUMMER_ENV) sizes="$(PLUMMER_SWEEP)"; if test "$$sizes" = auto; then \
	  if ./tests/plummer/plummer_gpu_usable$(EXEEXT); then sizes="16384 32768 65536 131072"; \
	  else sizes="1024 2048 4096 8192"; fi; \
	  echo "plummer-sweep: N = $$sizes (PLUMMER_SWEEP=... to choose)"; fi; \
	for n in $$sizes; do \
	  echo "plummer-sweep: N = $$n (log in plummer-sweep-$$n.log)"; \
	  ./tests/plummer/plummer_ac$(EXEEXT) -n $$n -csv $(PLUMMER_SWEEP_CSV) $(PLUMMER_ARGS) \
	    > plummer-sweep-$$n.log; \
	  sed -n "/^# Timing/,\$$p" plummer-sweep-$$n.log; \
	done
	$(SHELL) $(srcdir)/tests/plummer/plot-fig2.sh $(PLUMMER_SWEEP_CSV) $(PLUMMER_PNG) "$(GNUPLOT)"
else
plummer plummer-sweep:
	@echo "$@: needs a Fortran compiler (configure found none, or --disable-fortran)"; exit 1
endif
.PHONY: plummer plummer-sweep
CLEANFILES += plummer-sweep-*.log
