#!/bin/bash
# run-irregular.sh -- the GPU irregular force on the GPU machine in one go:
# build with CUDA (tests/gpu/device-build.sh), its GPU test
# (test_gpunb_irregular_cuda), optionally compute-sanitizer memcheck on it
# (MEMCHECK=1), and bench_gpunb --irregular with each way of predicting the
# members (NB6ACCEL_CUDA_IRR_PREDICT=never, always, auto).
# Usage, from the repository root on the GPU machine (carry .devtools
# configure Makefile.in aclocal.m4 config.h.in build-aux m4):
#   OUT=$OUT bash tests/gpu/run-irregular.sh
# Sizes: IRR_NJ (default "131072 65536"), IRR_NI (default "512 2048 8192
# 32768 65536 131072").  Summary in $OUT/summary.txt.
set -u
SRC=$(pwd)
OUT=${OUT:-/tmp/gpunb-irr-out}
B=${BUILD:-/tmp/b-gpunb-cuda}
. tests/gpu/device-build.sh

t0=$(date +%s)
timeout 300 ./tests/gpu/test_gpunb_irregular_cuda >"$OUT/test_irregular.log" 2>&1
note "test_gpunb_irregular_cuda: rc=$? in $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/test_irregular.log")"
grep -E "^worst|FAIL" "$OUT/test_irregular.log" | head -5 | sed 's/^/  /' | tee -a "$S"
if [ "${MEMCHECK:-0}" = 1 ]; then
  t0=$(date +%s)
  timeout 400 ./libtool --mode=execute compute-sanitizer --tool memcheck --error-exitcode 9 \
    ./tests/gpu/test_gpunb_irregular_cuda >"$OUT/memcheck-irregular.log" 2>&1
  note "compute-sanitizer memcheck test_gpunb_irregular_cuda: rc=$? in $(( $(date +%s) - t0 )) s: $(grep "ERROR SUMMARY" "$OUT/memcheck-irregular.log" | tail -1)"
fi
for mode in never always auto; do
  note "== bench_gpunb --irregular 1, NB6ACCEL_CUDA_IRR_PREDICT=$mode"
  NB6ACCEL_CUDA_IRR_PREDICT=$mode timeout 120 ./tests/gpu/bench_gpunb --irregular 1 \
    --nj "${IRR_NJ:-131072 65536}" --ni "${IRR_NI:-512 2048 8192 32768 65536 131072}" 2>&1 | tee -a "$S"
done
