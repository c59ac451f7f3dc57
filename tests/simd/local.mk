# Tests of every SIMD kernel (GPUIRR and the GPUNB host back-end) against
# double references computed in the tests; benchmarks (built by `make check`,
# not run: tests/simd/run-on-device.sh and README say how; the kernels' limit in
# cycles per interaction: tests/simd/mca_per_interaction.sh).
EXTRA_DIST += tests/simd/simd_testutil.h tests/simd/run-on-device.sh tests/simd/mca_per_interaction.sh

check_PROGRAMS += tests/simd/test_gpuirr_simd
tests_simd_test_gpuirr_simd_SOURCES = tests/simd/test_gpuirr_simd.c tests/simd/simd_testutil.h
tests_simd_test_gpuirr_simd_LDADD = libgpuirr.la
TESTS += tests/simd/test_gpuirr_simd

check_PROGRAMS += tests/simd/test_gpunb_simd
tests_simd_test_gpunb_simd_SOURCES = tests/simd/test_gpunb_simd.c tests/simd/simd_testutil.h
tests_simd_test_gpunb_simd_LDADD = libgpunb.la
TESTS += tests/simd/test_gpunb_simd

# Benchmarks: built by `make check`, run by hand or by run-on-device.sh.
check_PROGRAMS += tests/simd/bench_gpuirr_simd tests/simd/bench_gpunb_simd tests/simd/bench_gpuirr_blocks
tests_simd_bench_gpuirr_simd_SOURCES = tests/simd/bench_gpuirr_simd.c tests/simd/simd_testutil.h
tests_simd_bench_gpuirr_simd_LDADD = libgpuirr.la
tests_simd_bench_gpunb_simd_SOURCES = tests/simd/bench_gpunb_simd.c tests/simd/simd_testutil.h
tests_simd_bench_gpunb_simd_LDADD = libgpunb.la

# GPUIRR as NBODY6 drives it, block by block (few actives per block).
tests_simd_bench_gpuirr_blocks_SOURCES = tests/simd/bench_gpuirr_blocks.c tests/simd/simd_testutil.h
tests_simd_bench_gpuirr_blocks_LDADD = libgpuirr.la
