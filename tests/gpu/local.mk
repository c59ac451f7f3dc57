# GPU tests and benchmarks (skip without a GPU).
# test_gpunb_cuda: the CUDA back-end against the double reference (exits 77
# with "SKIP: no usable CUDA device (...)" where there is none).
# test_gpunb_resident_cuda: its native extended path (GPU-resident records,
# GPU prediction, asynchronous force) against double and the legacy path.
# test_gpunb_irregular_cuda: the irregular force over neighbour lists on the
# GPU (and with GPU_LIST="0 0" on the host), tests/test_irregular.c built with
# -DTEST_IRREGULAR_CUDA.
# test_gpuirr_device: GPUIRR's large blocks on the GPU (gpuirr_use_device)
# against double and, for the blocks it leaves on the host, a handle without.
# bench_gpunb: figures per (NI, NJ); built by `make check`, not a test.
# run-on-device.sh: build, test, sanitizers, benchmark, SASS count on a GPU.
# ab-kernel.sh: a kernel change against the previous tree, alternating.
# ab-flags.sh: builds of this tree with different compile-time settings
# (gpunb_cuda_const.h), alternating.
# tail-profile.sh: a call's time beyond the force kernel, with and without
# the spatial order (benchmark and every kernel's Nsight Compute duration).
check_PROGRAMS += tests/gpu/test_gpunb_cuda tests/gpu/test_gpunb_resident_cuda tests/gpu/test_gpunb_irregular_cuda \
	tests/gpu/test_gpuirr_device tests/gpu/bench_gpunb
TESTS += tests/gpu/test_gpunb_cuda tests/gpu/test_gpunb_resident_cuda tests/gpu/test_gpunb_irregular_cuda \
	tests/gpu/test_gpuirr_device
tests_gpu_test_gpunb_cuda_LDADD = $(TEST_LIBS)
tests_gpu_test_gpunb_resident_cuda_LDADD = $(TEST_LIBS)
tests_gpu_test_gpunb_resident_cuda_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests
tests_gpu_test_gpunb_irregular_cuda_SOURCES = tests/test_irregular.c
tests_gpu_test_gpunb_irregular_cuda_LDADD = $(TEST_LIBS)
tests_gpu_test_gpunb_irregular_cuda_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests -DTEST_IRREGULAR_CUDA
tests_gpu_test_gpuirr_device_LDADD = $(TEST_LIBS)
tests_gpu_test_gpuirr_device_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests
tests_gpu_bench_gpunb_LDADD = $(TEST_LIBS)
EXTRA_DIST += tests/gpu/run-on-device.sh tests/gpu/run-irregular.sh tests/gpu/run-gpuirr-device.sh tests/gpu/sass_per_interaction.sh tests/gpu/run-two-gpus.sh \
	tests/gpu/device-build.sh \
	tests/gpu/run-variants.sh tests/gpu/ab-kernel.sh tests/gpu/ab-flags.sh tests/gpu/ab-waves.sh tests/gpu/tail-profile.sh
if HAVE_CUDA
tests_gpu_bench_gpunb_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests $(CUDA_CPPFLAGS)
tests_gpu_bench_gpunb_LDADD += $(CUDA_LIBS)
endif
tests_gpu_test_gpunb_cuda_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests
if !HAVE_CUDA
tests_gpu_bench_gpunb_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests
endif
