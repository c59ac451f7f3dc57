#!/bin/bash
# run-on-device.sh -- the Plummer timing sweep (t = 2..4) on the GPU machine.
# Run from anywhere inside the source tree (gfortran must be on PATH, e.g.
# after `source .devtools/device-fortran.sh setup .devtools`).  Builds out of
# tree in /tmp, runs the driver's tests on this machine's back-ends, then one
# run per N with a wall-clock limit so that the whole call stays within
# PLUMMER_BUDGET seconds (default 530), and leaves in $OUT:
#   plummer-device.log (hardware, build, tests), plummer-N.log per N,
#   plummer.csv, plummer-fig2.png (if gnuplot is there).
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$src/plummer-device-out}
mkdir -p "$out"
budget=${PLUMMER_BUDGET:-530}
sizes=${PLUMMER_SIZES:-"16384 32768 65536 131072 262144"}
label=${PLUMMER_LABEL:-device}
start=$(date +%s)
log=$out/plummer-device.log
elapsed() { echo $(( $(date +%s) - start )); }

{
  echo "== hardware"; nvidia-smi -L 2>&1; nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv 2>&1
  lscpu 2>&1 | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket)'
  echo "== build"
  cd "$src" && { test -x configure || ./bootstrap; } &&
  mkdir -p /tmp/nb6-plummer-build && cd /tmp/nb6-plummer-build &&
  "$src/configure" --with-cuda-arch=90 CFLAGS="-O3 -march=native" FCFLAGS="-O3 -march=native" \
    | tail -n 12 &&
  make -j"$(nproc)" >make.out 2>&1 || { tail -n 40 make.out; echo "BUILD FAILED"; exit 1; }
  make -j"$(nproc)" tests/plummer/test_plummer_model tests/plummer/test_plummer_run >>make.out 2>&1 ||
    { tail -n 40 make.out; echo "BUILD OF TESTS FAILED"; exit 1; }
  echo "built after $(elapsed) s"
  echo "== tests of the driver on this machine's back-ends"
  ./tests/plummer/test_plummer_model 2>&1 | tail -n 3
  ./tests/plummer/test_plummer_run 2>&1 | grep -E 'back-end|kernel|PASS|FAIL|passed'
  echo "tests done after $(elapsed) s"
} >"$log" 2>&1 || { cat "$log"; exit 1; }
cat "$log"

cd /tmp/nb6-plummer-build || exit 1
export OMP_PROC_BIND=${OMP_PROC_BIND:-close} OMP_PLACES=${OMP_PLACES:-cores}
for n in $sizes; do
  left=$(( budget - $(elapsed) ))
  if [ "$left" -lt 40 ]; then
    echo "== N = $n skipped: only $left s of the budget left"
    continue
  fi
  limit=$(( left - 20 ))
  echo "== N = $n (wall limit $limit s, $(elapsed) s elapsed)"
  ./tests/plummer/plummer_ac -n "$n" -csv "$out/plummer.csv" -label "$label" \
    -wall-limit "$limit" -progress 15 >"$out/plummer-$n.log" 2>&1
  echo "exit status $?"
  grep -E '^ +[0-9]+\.0000 |^# N =|^# Timing|^#      N|^ +[0-9]+ +[0-9.]+ +[0-9.]+|STOPPED|back-end|kernel' \
    "$out/plummer-$n.log"
done
echo "== CSV"
cat "$out/plummer.csv" 2>/dev/null
sh "$src/tests/plummer/plot-fig2.sh" "$out/plummer.csv" "$out/plummer-fig2.png"
echo "== done after $(elapsed) s"
