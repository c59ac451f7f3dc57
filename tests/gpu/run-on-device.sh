#!/bin/bash
# run-on-device.sh -- everything the CUDA back-end of GPUNB needs a GPU for,
# in one go (device time is scarce): bootstrap, configure with CUDA, build,
# the GPU test (CUDA vs the double reference), the whole `make check` (the
# Foundation tests then run on the CUDA back-end too), compute-sanitizer
# memcheck and racecheck on a reduced case, the SASS count per interaction,
# the benchmark, and a short table at the end.
# Usage, from the repository root on the GPU machine:
#   bash tests/gpu/run-on-device.sh            (logs go to $OUT or /tmp/gpunb-out)
set -u
SRC=$(pwd)
OUT=${OUT:-/tmp/gpunb-out}
B=${BUILD:-/tmp/b-gpunb-cuda}
mkdir -p "$OUT" "$B"
[ -f .devtools/device-fortran.sh ] && . .devtools/device-fortran.sh setup .devtools >/dev/null 2>&1
S=$OUT/summary.txt
: >"$S"
note() { echo "$*" | tee -a "$S"; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm --format=csv,noheader 2>&1 | head -4 | tr '\n' ';')"
note "nvcc: $(nvcc --version | tail -1)"

t0=$(date +%s)
{ ./bootstrap && cd "$B" && "$SRC/configure" --with-cuda NVCCFLAGS="-O3 -Xptxas -v" &&
  make -j16 && make -j16 check TESTS= ; } >"$OUT/build.log" 2>&1
build=$?
cd "$B" || exit 1
note "build (configure --with-cuda, make, check programs): rc=$build in $(( $(date +%s) - t0 )) s"
grep -A2 "gpunb_force_kernel" "$OUT/build.log" | grep -E "registers|spill" | head -3 | sed 's/^/  ptxas: /' | tee -a "$S"
[ $build = 0 ] || { tail -30 "$OUT/build.log"; exit 1; }

t0=$(date +%s)
timeout 400 ./tests/gpu/test_gpunb_cuda >"$OUT/test_gpu.log" 2>&1
note "GPU test (tests/gpu/test_gpunb_cuda): rc=$? in $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/test_gpu.log")"
grep -E "^relative errors|FAIL" "$OUT/test_gpu.log" | head -8 | sed 's/^/  /' | tee -a "$S"

t0=$(date +%s)
timeout 300 make -j8 check >"$OUT/check.log" 2>&1
note "make check (Foundation tests on the CUDA back-end): rc=$? in $(( $(date +%s) - t0 )) s"
grep -E "^(PASS|FAIL|SKIP|ERROR|XFAIL|XPASS):|^# " "$OUT/check.log" | sed 's/^/  /' | tee -a "$S" >/dev/null
grep -E "^(FAIL|ERROR)" "$OUT/check.log" | sed 's/^/  /'
for t in $(grep -E "^(FAIL|ERROR):" "$OUT/check.log" | awk '{print $2}'); do
  { echo "=== $t.log"; tail -20 "$t.log"; } >>"$OUT/check.log" 2>/dev/null
done

for tool in memcheck racecheck; do
  t0=$(date +%s)
  timeout 240 ./libtool --mode=execute compute-sanitizer --tool $tool --error-exitcode 9 \
    ./tests/gpu/test_gpunb_cuda quick >"$OUT/$tool.log" 2>&1
  note "compute-sanitizer $tool (quick case): rc=$? in $(( $(date +%s) - t0 )) s: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/$tool.log" | tail -1)"
done

sass=$(PATH=$PATH:/usr/local/cuda/bin bash "$SRC/tests/gpu/sass_per_interaction.sh" .libs/libgpunb.so)
note "SASS per interaction (main loop / 64, loop instructions, kernel total): $sass"
t0=$(date +%s)
timeout 300 ./tests/gpu/bench_gpunb --sass "${sass%% *}" --ni "64 1024" --nj "16384 131072 1048576" \
  >"$OUT/bench.log" 2>&1
note "benchmark: rc=$? in $(( $(date +%s) - t0 )) s"
cat "$OUT/bench.log" | tee -a "$S"
