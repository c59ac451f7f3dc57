#!/bin/bash
# run-gpuirr-device.sh -- GPUIRR's large blocks on the GPU (gpuirr_use_device)
# on the GPU machine in one go: build with CUDA (tests/gpu/device-build.sh),
# the tests that reach it (test_gpuirr_device; test_gpuirr and test_fortran,
# whose GPUIRR_OPEN now uses the GPU; test_gpunb_irregular_cuda, the kernel
# it calls), compute-sanitizer memcheck and racecheck on test_gpuirr_device,
# then NBODY6 at NBODY6_N (default 65536) with and without the GPU
# (NB6ACCEL_GPUIRR_DEVICE=off), NBODY6_ROUNDS times alternately
# (nbody6_patch/run-on-device.sh AB_ENV; set NBODY6_ROUNDS=0 for none), or,
# with OLD_TREE=dir (a bootstrapped source tree of an earlier commit, e.g.
# `git archive` of it plus ./bootstrap; the device tool carries 8 paths at
# most, so pack it into .devtools as a tarball and unpack it first),
# alternately with NBODY6 built against that tree's libraries (AB_BINARY),
# to judge a change of code.
# Usage, from the repository root on the GPU machine (carry .devtools .nbody6
# configure Makefile.in aclocal.m4 config.h.in build-aux m4):
#   OUT=$OUT bash tests/gpu/run-gpuirr-device.sh
set -u
SRC=$(pwd)
OUT=${OUT:-/tmp/gpuirr-device-out}
B=${BUILD:-/tmp/b-gpuirr-device}
. tests/gpu/device-build.sh

for t in tests/gpu/test_gpuirr_device tests/test_gpuirr tests/test_fortran tests/gpu/test_gpunb_irregular_cuda; do
  t0=$(date +%s)
  timeout 300 "./$t" >"$OUT/${t##*/}.log" 2>&1
  note "$t: rc=$? in $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/${t##*/}.log")"
  grep -E "GPU|host|FAIL|SKIP|worst" "$OUT/${t##*/}.log" | head -12 | sed 's/^/  /' | tee -a "$S"
done
for tool in memcheck racecheck; do
  t0=$(date +%s)
  timeout 300 ./libtool --mode=execute compute-sanitizer --tool $tool --error-exitcode 9 \
    ./tests/gpu/test_gpuirr_device >"$OUT/$tool-gpuirr-device.log" 2>&1
  note "compute-sanitizer $tool test_gpuirr_device: rc=$? in $(( $(date +%s) - t0 )) s: $(grep "ERROR SUMMARY" "$OUT/$tool-gpuirr-device.log" | tail -1)"
done
cd "$SRC" || exit 1
ab="${NBODY6_N:-65536}:${NBODY6_CAP:-170}:${NBODY6_ROUNDS:-1}"
if [ "${NBODY6_ROUNDS:-1}" -gt 0 ] && [ -n "${OLD_TREE:-}" ]; then
  old=$(cd "$OLD_TREE" && pwd)
  ln -sfn "$SRC/.nbody6" "$old/.nbody6"
  ln -sfn "$SRC/.devtools" "$old/.devtools"
  t0=$(date +%s)
  (cd "$old" && OUT=$OUT/old-build RUNS=" " POLICIES=" " NATIVE_RUN="" bash nbody6_patch/run-on-device.sh >/dev/null 2>&1)
  note "NBODY6 against $OLD_TREE's libraries: rc=$? in $(( $(date +%s) - t0 )) s"
  OUT=$OUT/nbody6 RUNS=" " POLICIES=${POLICIES:-active} NATIVE_RUN="" BUDGET_S=${NBODY6_BUDGET_S:-420} \
    AB_BINARY="/tmp/nbody6-nb6accel-$(printf %s "$old" | cksum | cut -d' ' -f1):$ab" \
    bash nbody6_patch/run-on-device.sh > /dev/null 2>&1
  cat "$OUT/nbody6/summary.txt" >> "$S"
elif [ "${NBODY6_ROUNDS:-1}" -gt 0 ]; then
  OUT=$OUT/nbody6 RUNS=" " POLICIES=${POLICIES:-active} NATIVE_RUN="" BUDGET_S=${NBODY6_BUDGET_S:-420} \
    AB_ENV="$ab:NB6ACCEL_GPUIRR_DEVICE=off" bash nbody6_patch/run-on-device.sh > /dev/null 2>&1
  cat "$OUT/nbody6/summary.txt" >> "$S"
fi
