#!/bin/bash
# tail-profile.sh -- where a REGF call's time goes besides the force kernel,
# in NBODY6's order and in the spatial order, on the GPU machine.
# From the repository root there (carry the bootstrap outputs as for
# run-on-device.sh):
#   OUT=$OUT ROUNDS=3 TAIL_NI=1024 TAIL_NJ=131072 bash tests/gpu/tail-profile.sh
# 1. ROUNDS alternating rounds of the benchmark at (TAIL_NI, TAIL_NJ) with
#    NB6ACCEL_CUDA_SPATIAL=0 and =1, or each of TAIL_MODES (e.g. "0 auto")
#    (call, force kernel and the rest).
# 2. Nsight Compute's duration of every kernel of a few calls each way
#    (the sort of the i, force, gathering, reduction, a redo's kernels), so
#    that the rest of the call splits into GPU work and host work
#    (TAIL_NCU=0: not).  TAIL_NI and TAIL_NJ may be lists ("512 1024").
# Summary in $OUT/summary.txt.
set -u
SRC=$(pwd)
OUT=${OUT:-/tmp/tail-profile-out}
B=${B:-/tmp/b-tail}
ROUNDS=${ROUNDS:-3}
NI=${TAIL_NI:-1024}
NJ=${TAIL_NJ:-131072}
# shellcheck source=tests/gpu/device-build.sh
. tests/gpu/device-build.sh
for r in $(seq "$ROUNDS"); do
  for sp in ${TAIL_MODES:-0 1}; do
    note "== round $r SPATIAL=$sp"
    NB6ACCEL_CUDA_SPATIAL=$sp timeout 100 ./tests/gpu/bench_gpunb --ni "$NI" --nj "$NJ" --seconds 0.3 2>&1 |
      grep -E '^ +[0-9]' | sed 's/^/  /' | tee -a "$S"
  done
done
[ "${TAIL_NCU:-1}" = 1 ] || exit 0
command -v ncu >/dev/null 2>&1 || { note "no ncu: no kernel figures"; exit 0; }
for sp in ${TAIL_MODES:-0 1}; do
  note "== ncu SPATIAL=$sp, NI=$NI, NJ=$NJ: kernels of the calls after the first few (us)"
  NB6ACCEL_CUDA_SPATIAL=$sp timeout 200 ./libtool --mode=execute ncu --clock-control none --csv \
    --launch-skip 30 --launch-count 16 --metrics gpu__time_duration.sum \
    ./tests/gpu/bench_gpunb --ni "$NI" --nj "$NJ" --seconds 0 >"$OUT/ncu-$sp.csv" 2>&1
  note "  rc=$?"
  # CSV columns: ..., "Kernel Name", ..., "Metric Name", "Metric Unit", "Metric Value"
  awk -F'","' '/gpu__time_duration.sum/ {
      name = $5; sub(/\(.*/, "", name); unit = $(NF - 1); v = $NF; gsub(/[",]/, "", v);
      if (unit == "nsecond") v /= 1000; else if (unit == "msecond") v *= 1000;
      printf "  %-40s %9.2f\n", name, v }' "$OUT/ncu-$sp.csv" | tee -a "$S"
done
