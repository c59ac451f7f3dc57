#!/bin/bash
# run-on-device.sh -- everything the CUDA back-end of GPUNB needs a GPU for,
# in one go (device time is scarce): bootstrap, configure with CUDA, build,
# the GPU test (CUDA vs the double reference), the whole `make check` (the
# Foundation tests then run on the CUDA back-end too), compute-sanitizer
# memcheck, racecheck, initcheck and synccheck on the reduced case of each
# GPU test, the SASS count per interaction, the benchmark, Nsight Compute
# kernel figures, and a short table at the end.
# Usage, from the repository root on the GPU machine:
#   bash tests/gpu/run-on-device.sh            (logs go to $OUT or /tmp/gpunb-out)
#   MODE=short bash tests/gpu/run-on-device.sh (about 3 minutes: the GPU tests
#     only inside `make check`, memcheck, racecheck and initcheck, the default settings' benchmark,
#     the resident-path benchmark, ncu of the NI = 64 call)
# With the device tool: run ./bootstrap here, then run the command
#   bash tests/gpu/run-on-device.sh      (it sources tests/device-setup.sh)
# carrying .devtools configure Makefile.in aclocal.m4 config.h.in build-aux m4.
set -u
MODE=${MODE:-full}
SRC=$(pwd)
OUT=${OUT:-/tmp/gpunb-out}
B=${BUILD:-/tmp/b-gpunb-cuda}
. tests/gpu/device-build.sh

if [ "$MODE" = full ]; then
t0=$(date +%s)
timeout 400 ./tests/gpu/test_gpunb_cuda >"$OUT/test_gpu.log" 2>&1
note "GPU test (tests/gpu/test_gpunb_cuda): rc=$? in $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/test_gpu.log")"
grep -E "^relative errors|FAIL" "$OUT/test_gpu.log" | head -8 | sed 's/^/  /' | tee -a "$S"
fi

t0=$(date +%s)
timeout 300 make -j8 check >"$OUT/check.log" 2>&1
note "make check (Foundation tests on the CUDA back-end): rc=$? in $(( $(date +%s) - t0 )) s"
grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL|XPASS):|^# " "$OUT/check.log" | sed 's/^/  /' | tee -a "$S" >/dev/null
grep -E "^(FAIL|ERROR)" "$OUT/check.log" | sed 's/^/  /'
for t in $(grep -E "^(FAIL|ERROR):" "$OUT/check.log" | awk '{print $2}'); do
  { echo "=== $t.log"; tail -20 "$t.log"; } >>"$OUT/check.log" 2>/dev/null
done
# The GPU tests' and test_resident's own logs (errors, timings of the native path).
for t in tests/gpu/test_gpunb_cuda tests/gpu/test_gpunb_resident_cuda tests/test_resident; do
  { echo "=== $t.log"; cat "$t.log"; } >>"$OUT/tests.log" 2>/dev/null
  note "  $(basename $t): $(grep -E "^relative errors" "$t.log" | head -1)"
done
grep -E "cuda +extended" tests/test_resident.log | sed 's/^/  /' | tee -a "$S"
grep -E "^  NJ=" tests/gpu/test_gpunb_resident_cuda.log | sed 's/^/  /' | tee -a "$S"
# The resident path with the library's spatial order at every NJ and NI (auto
# uses it from 128k j and 2^26 interactions per GPU): the i as j-set members
# put in order on the GPU.
t0=$(date +%s)
NB6ACCEL_CUDA_SPATIAL=1 timeout 300 ./tests/gpu/test_gpunb_resident_cuda >"$OUT/resident_spatial.log" 2>&1
note "resident path, NB6ACCEL_CUDA_SPATIAL=1: rc=$? in $(( $(date +%s) - t0 )) s: $(grep -E "^relative errors" "$OUT/resident_spatial.log" | head -1)"

# Sanitizers on the reduced case ("quick") of each GPU test: the legacy
# call, the native extended path, the irregular force over lists (every
# kernel of the back-end runs in one of them), and GPUIRR's copy on the GPU
# (small already; it ignores "quick"); all in one log.
: >"$OUT/sanitizers.log"
tools="memcheck racecheck initcheck synccheck"
[ "$MODE" = full ] || tools="memcheck racecheck initcheck"
for tool in $tools; do
  for t in "test_gpunb_cuda|quick case" "test_gpunb_resident_cuda|native path, quick" \
    "test_gpunb_irregular_cuda|irregular force, quick" "test_gpuirr_device|GPUIRR's GPU copy"; do
    prog=${t%%|*} what=${t#*|}
    t0=$(date +%s)
    echo "=== compute-sanitizer --tool $tool, $prog quick" >>"$OUT/sanitizers.log"
    timeout 240 ./libtool --mode=execute compute-sanitizer --tool $tool --error-exitcode 9 \
      ./tests/gpu/$prog quick >"$OUT/$tool.tmp" 2>&1
    rc=$?
    cat "$OUT/$tool.tmp" >>"$OUT/sanitizers.log"
    note "compute-sanitizer $tool ($what): rc=$rc in $(( $(date +%s) - t0 )) s: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/$tool.tmp" | tail -1) $(tail -1 "$OUT/$tool.tmp")"
    rm -f "$OUT/$tool.tmp"
  done
done

sass=$(PATH=$PATH:/usr/local/cuda/bin bash "$SRC/tests/gpu/sass_per_interaction.sh" .libs/libgpunb.so 5)
sass4=$(PATH=$PATH:/usr/local/cuda/bin bash "$SRC/tests/gpu/sass_per_interaction.sh" .libs/libgpunb.so 4)
note "SASS per interaction of the fast kernel (main loop less nested loops / 64; loop, nested, kernel total): default (5 blocks/SM, 48 registers) $sass; 4 blocks/SM (64 registers) $sass4"
t0=$(date +%s)
runs='"auto 5 $sass" "never 5 $sass" "auto 4 $sass4"'
[ "$MODE" = full ] || runs='"auto 5 $sass" "never 5 $sass" "always 5 $sass"'
{ eval "set -- $runs"; for run in "$@"; do
    set -- $run
    echo "== NB6ACCEL_CUDA_PRECISE=$1 NB6ACCEL_CUDA_FORCE_BLOCKS=$2 (auto: fast kernel, two-float redo of the i whose error bound asks for it)"
    NB6ACCEL_CUDA_PRECISE=$1 NB6ACCEL_CUDA_FORCE_BLOCKS=$2 timeout 200 ./tests/gpu/bench_gpunb --sass "$3" \
      --ni "64 1024" --nj "16384 131072 1048576" --seconds 0.3
  done; } >"$OUT/bench.log" 2>&1
note "benchmark: rc=$? in $(( $(date +%s) - t0 )) s"
cat "$OUT/bench.log" | tee -a "$S"
t0=$(date +%s)
{ timeout 120 ./tests/gpu/bench_gpunb --resident 1 --ni "64 1024" --nj "131072 1048576"
  echo "== NB6ACCEL_CUDA_PRECISE=always (no synchronous redo at finish)"
  NB6ACCEL_CUDA_PRECISE=always timeout 120 ./tests/gpu/bench_gpunb --resident 1 --ni "64 1024" --nj "131072"
} >"$OUT/bench_resident.tmp" 2>&1
note "resident-path benchmark: rc=$? in $(( $(date +%s) - t0 )) s"
cat "$OUT/bench_resident.tmp" | tee -a "$S" >>"$OUT/bench.log"
rm -f "$OUT/bench_resident.tmp"
# The Plummer driver, legacy (NBODY6's CXVPRED + GPUNB_SEND + GPUNB_REGF)
# and resident GPUNB path, a short run (the t = 2..4 timings are the Plummer
# device script's business).
t0=$(date +%s)
for opt in "" "-resident"; do
  OMP_NUM_THREADS=$(nproc) timeout 90 ./tests/plummer/plummer_ac -n 16384 -tend 1 -progress 0 -q $opt \
    >"$OUT/plummer.tmp" 2>&1
  note "plummer_ac -n 16384 -tend 1 $opt: rc=$?"
  { echo "=== plummer_ac -n 16384 -tend 1 $opt"; cat "$OUT/plummer.tmp"; } >>"$OUT/bench.log"
  tail -6 "$OUT/plummer.tmp" | sed 's/^/  /' | tee -a "$S"
  rm -f "$OUT/plummer.tmp"
done
note "plummer runs: $(( $(date +%s) - t0 )) s"

# Kernel durations and issue activity from Nsight Compute (clocks as found).
t0=$(date +%s)
nruns='"auto 5 64" "auto 5 1024" "auto 4 1024"'
[ "$MODE" = full ] || nruns='"auto 5 64" "never 5 1024"'
eval "set -- $nruns"
for run in "$@"; do
  set -- $run
  echo "== NB6ACCEL_CUDA_PRECISE=$1 NB6ACCEL_CUDA_FORCE_BLOCKS=$2 NI=$3 NJ=131072"
  NB6ACCEL_CUDA_PRECISE=$1 NB6ACCEL_CUDA_FORCE_BLOCKS=$2 timeout 120 ./libtool --mode=execute ncu \
    --clock-control none --csv --kernel-name regex:gpunb_ --launch-skip 9 --launch-count 3 \
    --metrics gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,sm__cycles_elapsed.avg.per_second,launch__waves_per_multiprocessor,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers \
    ./tests/gpu/bench_gpunb --ni "$3" --nj 131072 --seconds 0
done >"$OUT/ncu.log" 2>&1
note "ncu: rc=$? in $(( $(date +%s) - t0 )) s"
grep -E "^==|gpunb_" "$OUT/ncu.log" | awk -F'","' '/^==/ {print; next} {sub(/\(.*/, "", $5); print "  " $5 " grid " $9 " " $(NF-2) " = " $NF}' | sed 's/"//g' | head -70 | tee -a "$S"

note "== summary table: default settings (NB6ACCEL_CUDA_PRECISE=auto, 5 force blocks/SM) on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
awk '/^== NB6ACCEL_CUDA_PRECISE=auto NB6ACCEL_CUDA_FORCE_BLOCKS=5/ {on = 1; next} /^==/ {on = 0} on && /^ +(NI|[0-9])/' "$OUT/bench.log" | tee -a "$S"
