# nbody6_patch: build NBODY6-GPU from a user's NBODY6 tree against nb6accel.
EXTRA_DIST += nbody6_patch/README.md
