#!/bin/bash
# run-variants.sh -- compare the settings of GPUNB's CUDA force kernel on
# the GPU machine in one go: the compiled variants (NB6ACCEL_CUDA_FORCE_BLOCKS
# = 5 or 4 blocks per SM) times the number of block waves per large-NI call
# (NB6ACCEL_CUDA_WAVES) times the path of a call with NI <= 256 (SMALL: two
# kernels, single launch NB6ACCEL_CUDA_SINGLE_LAUNCH=1, or the gathering
# kernel as a dependent launch NB6ACCEL_CUDA_PDL=1): build, the quick GPU
# tests of each variant (against
# the double reference), its SASS instructions per interaction, the
# benchmark, compute-sanitizer, and Nsight Compute's warp-state and scheduler
# figures of the force kernel at NI = 1024, NJ = 128k, of the fused
# reduction + gathering kernel at NI = 64 and of the single-launch kernel there.
# Usage, from the repository root on the GPU machine (after ./bootstrap here,
# carrying .devtools configure Makefile.in aclocal.m4 config.h.in build-aux m4):
#   bash tests/gpu/run-variants.sh                 (logs in $OUT or /tmp/variants-out)
#   VARIANTS="5" WAVES="1 2 4" MODES=never bash tests/gpu/run-variants.sh
#   VARIANTS=5 WAVES=2 REPEAT=3 BENCH_NI=64 BENCH_NJ=131072 bash tests/gpu/run-variants.sh
#     (the three small-call paths, alternating, three rounds)
# (TEST_WAVES sets NB6ACCEL_CUDA_WAVES for the quick tests; BENCH_NI, BENCH_NJ
# the benchmark's sizes; SANITIZE_VARIANTS, NCU_VARIANTS="" skip those steps.)
set -u
SRC=$(pwd)
OUT=${OUT:-/tmp/variants-out}
B=${BUILD:-/tmp/b-gpunb-variants}
VARIANTS=${VARIANTS:-"5 4"}     # NB6ACCEL_CUDA_FORCE_BLOCKS values
NCU_VARIANTS=${NCU_VARIANTS-"5"}
WAVES=${WAVES:-"1 2 4"}         # NB6ACCEL_CUDA_WAVES values to benchmark
NCU_WAVES=${NCU_WAVES:-2}
SMALL=${SMALL:-"0:0 1:0 0:1"}   # NB6ACCEL_CUDA_SINGLE_LAUNCH:NB6ACCEL_CUDA_PDL pairs to benchmark
REPEAT=${REPEAT:-1}             # rounds over SMALL (alternating, for the noise between runs)
. tests/gpu/device-build.sh

: >"$OUT/bench.log"
for v in $VARIANTS; do
  export NB6ACCEL_CUDA_FORCE_BLOCKS=$v
  t0=$(date +%s)
  env ${TEST_WAVES:+NB6ACCEL_CUDA_WAVES=$TEST_WAVES} timeout 200 ./tests/gpu/test_gpunb_cuda quick >"$OUT/test-$v.log" 2>&1
  note "== $v: test_gpunb_cuda quick rc=$? ($(( $(date +%s) - t0 )) s): $(grep -E '^relative errors' "$OUT/test-$v.log" | head -1)"
  grep -E "FAIL" "$OUT/test-$v.log" | head -5 | sed 's/^/  /' | tee -a "$S"
  env ${TEST_WAVES:+NB6ACCEL_CUDA_WAVES=$TEST_WAVES} timeout 200 ./tests/gpu/test_gpunb_resident_cuda quick >"$OUT/test-res-$v.log" 2>&1
  note "  test_gpunb_resident_cuda quick rc=$?: $(grep -E '^relative errors' "$OUT/test-res-$v.log" | head -1)"
  grep -E "FAIL" "$OUT/test-res-$v.log" | head -5 | sed 's/^/  /' | tee -a "$S"
  # The whole quick tests again on each other small-call path (the resident
  # path's calls too; the several-GPU case on one GPU named three times keeps
  # two kernels with SINGLE_LAUNCH=1, and gets dependent launches with PDL=1).
  for small in $SMALL; do
    [ "$small" = 0:0 ] && continue
    for t in test_gpunb_cuda test_gpunb_resident_cuda; do
      NB6ACCEL_CUDA_SINGLE_LAUNCH=${small%:*} NB6ACCEL_CUDA_PDL=${small#*:} timeout 200 ./tests/gpu/$t quick \
        >"$OUT/$t-$v-${small/:/-}.log" 2>&1
      note "  $t quick, SINGLE_LAUNCH:PDL=$small: rc=$? $(grep -E '^relative errors' "$OUT/$t-$v-${small/:/-}.log" | head -1)"
      grep -E "FAIL" "$OUT/$t-$v-${small/:/-}.log" | head -5 | sed 's/^/  /' | tee -a "$S"
    done
  done
  sass=$(PATH=$PATH:/usr/local/cuda/bin bash "$SRC/tests/gpu/sass_per_interaction.sh" .libs/libgpunb.so $v)
  note "  SASS per interaction (per interaction, loop, nested, kernel): $sass"
  for waves in $WAVES; do
    for mode in ${MODES:-never auto}; do
     for round in $(seq "$REPEAT"); do
      for small in $SMALL; do
      single=${small%:*} pdl=${small#*:}
      tag="$v NB6ACCEL_CUDA_WAVES=$waves NB6ACCEL_CUDA_PRECISE=$mode NB6ACCEL_CUDA_SINGLE_LAUNCH=$single NB6ACCEL_CUDA_PDL=$pdl round $round"
      echo "== $tag" >>"$OUT/bench.log"
      NB6ACCEL_CUDA_SINGLE_LAUNCH=$single NB6ACCEL_CUDA_PDL=$pdl NB6ACCEL_CUDA_WAVES=$waves NB6ACCEL_CUDA_PRECISE=$mode timeout 200 \
        ./tests/gpu/bench_gpunb --sass "${sass%% *}" --ni "${BENCH_NI:-64 1024}" --nj "${BENCH_NJ:-131072 1048576}" \
        --seconds 0.3 >>"$OUT/bench.log" 2>&1
      echo "  waves=$waves precise=$mode single=$single pdl=$pdl (round $round)" >>"$S"
      awk -v tag="== $tag" '/^== /{on = ($0 == tag); next} on && /^ +[0-9]/' "$OUT/bench.log" |
        sed 's/^/  /' | tee -a "$S"
      done
     done
    done
  done
done
unset NB6ACCEL_CUDA_FORCE_BLOCKS

# compute-sanitizer on the quick GPU test of the variants named here.
for v in ${SANITIZE_VARIANTS-5}; do
  for tool in memcheck racecheck synccheck; do
    NB6ACCEL_CUDA_FORCE_BLOCKS=$v timeout 240 ./libtool --mode=execute compute-sanitizer --tool $tool \
      --error-exitcode 9 ./tests/gpu/test_gpunb_cuda quick >"$OUT/san.tmp" 2>&1
    note "compute-sanitizer $tool $v: rc=$? $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/san.tmp" | tail -1)"
    cat "$OUT/san.tmp" >>"$OUT/sanitizers.log"
  done
done
rm -f "$OUT/san.tmp"

# Where the issue slots go: stall reasons, shared-load wavefronts per LDS,
# the spread of SM busy time (imbalance between blocks).
if command -v ncu >/dev/null 2>&1; then
  for v in $NCU_VARIANTS; do
    NB6ACCEL_CUDA_WAVES=$NCU_WAVES NB6ACCEL_CUDA_FORCE_BLOCKS=$v NB6ACCEL_CUDA_PRECISE=never timeout 150 ./libtool --mode=execute ncu \
      --clock-control none --kernel-name regex:gpunb_force --launch-skip 4 --launch-count 1 \
      --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
      --metrics gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld.sum,sm__cycles_active.min,sm__cycles_active.max,sm__cycles_active.avg,smsp__pcsamp_warps_issue_stalled_barrier,smsp__pcsamp_warps_issue_stalled_mio_throttle,smsp__pcsamp_warps_issue_stalled_short_scoreboard,smsp__pcsamp_warps_issue_stalled_long_scoreboard,smsp__pcsamp_warps_issue_stalled_math_pipe_throttle,smsp__pcsamp_warps_issue_stalled_wait,smsp__pcsamp_warps_issue_stalled_not_selected,smsp__pcsamp_warps_issue_stalled_selected,smsp__pcsamp_warps_issue_stalled_dispatch_stall,smsp__pcsamp_warps_issue_stalled_lg_throttle,smsp__pcsamp_warps_issue_stalled_no_instructions,smsp__pcsamp_warps_issue_stalled_branch_resolving \
      ./tests/gpu/bench_gpunb --ni 1024 --nj 131072 --seconds 0 >"$OUT/ncu-$v.log" 2>&1
    note "== ncu $v, $NCU_WAVES waves (NI=1024, NJ=131072, fast kernel): rc=$?"
    grep -E "gpu__time_duration|issue_active|warps_active|inst_executed|wavefronts|cycles_active|stalled|Achieved Occupancy|Theoretical Occupancy|Block Limit|Waves Per SM|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued" \
      "$OUT/ncu-$v.log" | sed 's/^ */  /' | tee -a "$S"
  done
else
  note "ncu: not found"
fi

# The fused reduction + list-gathering kernel of the NI = 64 call: why it
# takes as long as it does (latency: which stalls).
if command -v ncu >/dev/null 2>&1; then
  timeout 150 ./libtool --mode=execute ncu --clock-control none --kernel-name regex:gpunb_gather \
    --launch-skip 4 --launch-count 1 --section WarpStateStats --section SpeedOfLight --section LaunchStats \
    --section SourceCounters --metrics gpu__time_duration.sum,smsp__inst_executed.sum \
    ./tests/gpu/bench_gpunb --ni 64 --nj 131072 --seconds 0 >"$OUT/ncu-gather.log" 2>&1
  note "== ncu gather kernel (NI=64, NJ=131072): rc=$?"
  grep -E "gpu__time_duration|inst_executed|Stall|stall|Warp Cycles Per Issued|Duration|Memory Throughput|DRAM Throughput" \
    "$OUT/ncu-gather.log" | head -40 | sed 's/^ */  /' | tee -a "$S"
  # The single launch of the same call (force, barrier, reduction and gathering in one kernel).
  NB6ACCEL_CUDA_SINGLE_LAUNCH=1 timeout 150 ./libtool --mode=execute ncu --clock-control none \
    --kernel-name regex:gpunb_force --launch-skip 4 --launch-count 1 --section LaunchStats --section Occupancy \
    --metrics gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active \
    ./tests/gpu/bench_gpunb --ni 64 --nj 131072 --seconds 0 >"$OUT/ncu-single.log" 2>&1
  note "== ncu single-launch force kernel (NI=64, NJ=131072, NB6ACCEL_CUDA_SINGLE_LAUNCH=1): rc=$?"
  grep -E "gpu__time_duration|inst_executed|issue_active|warps_active|Grid Size|Registers|Block Limit|Waves Per SM" \
    "$OUT/ncu-single.log" | head -20 | sed 's/^ */  /' | tee -a "$S"
fi
