#!/bin/bash
# ab-kernel.sh -- A/B of GPUNB's CUDA kernels on the GPU machine: the lent
# machines differ by up to 8 % in the force kernel, so a kernel change is
# judged against the previous code built beside it and run alternately.
# From the repository root on the GPU machine (carry the bootstrap outputs
# as for run-variants.sh, and the old tree):
#   AB_OLD_TREE=.ab-old OUT=$OUT ROUNDS=3 bash tests/gpu/ab-kernel.sh
# AB_OLD_TREE: a bootstrapped source tree of the previous code (e.g. a git
# worktree of HEAD).  Builds both (this one through device-build.sh, which
# also prints ptxas' registers and spills), runs this tree's quick GPU tests,
# the SASS count per interaction of both, then ROUNDS rounds of the benchmark
# (BENCH_NI x BENCH_NJ, NB6ACCEL_CUDA_PRECISE=$AB_PRECISE) alternating old and
# new, and Nsight Compute's instruction and issue figures of both force
# kernels at NI = 1024, NJ = 128k.  Summary in $OUT/summary.txt.
set -u
SRC=$(pwd)
OUT=${OUT:-/tmp/ab-kernel-out}
B=${BUILD:-/tmp/b-gpunb-ab-new}
OLD_B=/tmp/b-gpunb-ab-old
ROUNDS=${ROUNDS:-3}
. tests/gpu/device-build.sh
old_src=$(cd "$SRC/${AB_OLD_TREE:?set AB_OLD_TREE to the old source tree}" && pwd)
mkdir -p "$OLD_B"
(cd "$OLD_B" && "$old_src/configure" --with-cuda NVCCFLAGS="-O3" && make -j16 && make -j16 check TESTS=) \
  >"$OUT/build-old.log" 2>&1 || { tail -30 "$OUT/build-old.log"; note "OLD BUILD FAILED"; exit 1; }
for t in test_gpunb_cuda test_gpunb_resident_cuda; do
  timeout 200 ./tests/gpu/$t quick >"$OUT/$t.log" 2>&1
  note "new $t quick: rc=$? $(grep -E '^relative errors' "$OUT/$t.log" | head -1)"
  grep -E "FAIL" "$OUT/$t.log" | head -5 | sed 's/^/  /' | tee -a "$S"
done
declare -A sass
for side in old new; do
  dir=$B; [ $side = old ] && dir=$OLD_B
  counts=$(PATH=$PATH:/usr/local/cuda/bin bash "$SRC/tests/gpu/sass_per_interaction.sh" "$dir/.libs/libgpunb.so" 5)
  case ${counts%% *} in [0-9]*) sass[$side]=${counts%% *} ;; esac # else the assumed 42
  note "$side SASS per interaction (per interaction, loop, nested, kernel): $counts"
done
for r in $(seq "$ROUNDS"); do
  for side in old new; do
    dir=$B; [ $side = old ] && dir=$OLD_B
    note "== round $r $side"
    (cd "$dir" && NB6ACCEL_CUDA_PRECISE=${AB_PRECISE:-auto} timeout 100 ./tests/gpu/bench_gpunb --sass "${sass[$side]:-42}" \
      --ni "${BENCH_NI:-64 1024}" --nj "${BENCH_NJ:-131072 1048576}" --seconds 0.3 2>&1) | grep -E '^ +[0-9]' |
      sed 's/^/  /' | tee -a "$S"
  done
done
if command -v ncu >/dev/null 2>&1; then
  for side in old new; do
    dir=$B; [ $side = old ] && dir=$OLD_B
    (cd "$dir" && NB6ACCEL_CUDA_PRECISE=never timeout 150 ./libtool --mode=execute ncu \
      --clock-control none --kernel-name regex:gpunb_force --launch-skip 4 --launch-count 1 \
      --metrics gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__pcsamp_warps_issue_stalled_barrier,smsp__pcsamp_warps_issue_stalled_short_scoreboard,smsp__pcsamp_warps_issue_stalled_wait,smsp__pcsamp_warps_issue_stalled_not_selected,smsp__pcsamp_warps_issue_stalled_selected,smsp__pcsamp_warps_issue_stalled_dispatch_stall,smsp__pcsamp_warps_issue_stalled_no_instructions,smsp__pcsamp_warps_issue_stalled_long_scoreboard,smsp__pcsamp_warps_issue_stalled_math_pipe_throttle \
      ./tests/gpu/bench_gpunb --ni 1024 --nj 131072 --seconds 0) >"$OUT/ncu-$side.log" 2>&1
    note "== ncu $side (NI=1024, NJ=131072: 1.342e8 interactions): rc=$?"
    grep -E "gpu__time_duration|issue_active|warps_active|inst_executed|stalled" "$OUT/ncu-$side.log" |
      sed 's/^ */  /' | tee -a "$S"
  done
fi
if [ -n "${SASS_DUMP:-}" ]; then
  cuobjdump -sass -fun "$SASS_DUMP" "$B/.libs/libgpunb.so" >"$OUT/sass-new.txt" 2>&1
fi
