# nbody6_patch: build NBODY6-GPU from a user's NBODY6 tree against nb6accel.
# The test builds and runs NBODY6 only when NBODY6_DIR names a tree; else it
# skips (exit 77).
EXTRA_DIST += nbody6_patch/README.md nbody6_patch/RESULTS.md nbody6_patch/build-nbody6 nbody6_patch/run-plummer \
	nbody6_patch/nbody6-gpu2.mk nbody6_patch/test-nbody6.sh nbody6_patch/run-on-device.sh \
	nbody6_patch/omp-scaling-check.c nbody6_patch/intgrt-resident.patch
TESTS += nbody6_patch/test-nbody6.sh

# The test's scratch build of NBODY6 (a directory: not for CLEANFILES).
clean-local: clean-local-nbody6-patch
clean-local-nbody6-patch:
	-rm -rf nbody6_patch/test-nbody6.work
.PHONY: clean-local-nbody6-patch
