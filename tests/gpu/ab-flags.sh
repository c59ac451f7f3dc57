#!/bin/bash
# ab-flags.sh -- A/B of compile-time settings of GPUNB's CUDA kernels on the
# GPU machine: each variant is this tree built with its own preprocessor
# flags (e.g. the force kernel's GPUNB_CUDA_BLOCK_I and GPUNB_CUDA_JWAYS, see
# gpunb_cuda_const.h), and the variants' benchmarks run alternately, since
# the lent machines differ by up to 8 % in the force kernel.
# From the repository root on the GPU machine (carry the bootstrap outputs as
# for run-variants.sh):
#   VARIANTS="base|;i128|-DGPUNB_CUDA_BLOCK_I=128 -DGPUNB_CUDA_JWAYS=2" \
#     OUT=$OUT ROUNDS=3 bash tests/gpu/ab-flags.sh
# Flags that begin with @DIR build the bootstrapped source tree DIR instead
# (e.g. "old|@.ab-old", a git worktree of the previous code).
# Per variant: ptxas' registers and spills of the fast force kernel, the
# quick GPU test against the double reference, then ROUNDS rounds of the
# benchmark (BENCH_NI x BENCH_NJ, with BENCH_ARGS), and Nsight Compute's figures of the force
# kernel at NI = 1024, NJ = 128k (instructions per interaction from the
# executed count, issue, warps, stall samples).  SOURCE_VARIANT=label also
# saves that variant's per-instruction SASS counts and stall samples
# ($OUT/sass-<label>.csv).  Summary in $OUT/summary.txt, the logs in
# $OUT/logs.tar.gz (the device tool returns only a few files).
set -u
SRC=$(pwd)
OUT=${OUT:-/tmp/ab-flags-out}
LOGS=/tmp/ab-flags-logs
ROUNDS=${ROUNDS:-3}
VARIANTS=${VARIANTS:-"base|"}
mkdir -p "$OUT" "$LOGS"
trap 'tar -C "$LOGS" -czf "$OUT/logs.tar.gz" .' EXIT
. tests/device-setup.sh >/dev/null 2>&1
S=$OUT/summary.txt
: >"$S"
note() { echo "$*" | tee -a "$S"; }
note "device: $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -1)"
# (a carried configure is kept: some lent machines have a libtoolize without
# its aclocal macros, and a bootstrap there breaks the tree)
[ -x configure ] || ./bootstrap >"$LOGS/bootstrap.log" 2>&1

labels=()
declare -A flags
IFS=';' read -ra specs <<<"$VARIANTS"
for spec in "${specs[@]}"; do
  label=${spec%%|*}
  labels+=("$label")
  flags[$label]=${spec#*|}
done

for label in "${labels[@]}"; do
  dir=/tmp/b-flags-$label
  mkdir -p "$dir"
  t0=$(date +%s)
  tree=$SRC cppflags=${flags[$label]}
  if [ "${cppflags#@}" != "$cppflags" ]; then
    read -r first rest <<<"$cppflags"
    tree=$(cd "$SRC/${first#@}" && pwd) cppflags=$rest
  fi
  (cd "$dir" && "$tree/configure" --with-cuda CPPFLAGS="$cppflags" NVCCFLAGS="-O3 -Xptxas -v" &&
    make -j16 libgpunb.la && make -j16 tests/gpu/bench_gpunb tests/gpu/test_gpunb_cuda) >"$LOGS/build-$label.log" 2>&1
  rc=$?
  note "== $label (${flags[$label]:-defaults}): build rc=$rc in $(( $(date +%s) - t0 )) s"
  grep -A2 -E "Compiling entry function '_Z[0-9]+gpunb_force_kernelILb0ELi[0-9]+ELb0ELb0ELb[01]EE" "$LOGS/build-$label.log" |
    grep -E "registers|spill" | sed 's/ptxas info *: //; s/^/  ptxas fast kernel: /' | tee -a "$S"
  [ $rc = 0 ] || { tail -20 "$LOGS/build-$label.log"; continue; }
  (cd "$dir" && timeout 200 ./tests/gpu/test_gpunb_cuda quick) >"$LOGS/test-$label.log" 2>&1
  note "  test_gpunb_cuda quick: rc=$? $(grep -E '^relative errors' "$LOGS/test-$label.log" | head -1)"
  grep -E "FAIL" "$LOGS/test-$label.log" | head -5 | sed 's/^/  /' | tee -a "$S"
done

for r in $(seq "$ROUNDS"); do
  for label in "${labels[@]}"; do
    dir=/tmp/b-flags-$label
    [ -x "$dir/tests/gpu/bench_gpunb" ] || continue
    note "== round $r $label"
    (cd "$dir" && timeout 100 ./tests/gpu/bench_gpunb --ni "${BENCH_NI:-64 1024}" \
      --nj "${BENCH_NJ:-131072 1048576}" --seconds 0.3 ${BENCH_ARGS:-} 2>&1) | grep -E '^ +[0-9]' | sed 's/^/  /' | tee -a "$S"
  done
done

command -v ncu >/dev/null 2>&1 || { note "no ncu: no kernel figures"; exit 0; }
metrics=gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active
metrics+=,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
for st in barrier short_scoreboard wait not_selected selected dispatch_stall no_instructions long_scoreboard \
  math_pipe_throttle mio_throttle branch_resolving; do
  metrics+=,smsp__pcsamp_warps_issue_stalled_$st
done
for label in "${labels[@]}"; do
  dir=/tmp/b-flags-$label
  [ -x "$dir/tests/gpu/bench_gpunb" ] || continue
  (cd "$dir" && NB6ACCEL_CUDA_PRECISE=never timeout 150 ./libtool --mode=execute ncu --clock-control none \
    --kernel-name regex:gpunb_force --launch-skip 4 --launch-count 1 --metrics "$metrics" \
    ./tests/gpu/bench_gpunb --ni 1024 --nj 131072 --seconds 0 ${BENCH_ARGS:-}) >"$LOGS/ncu-$label.log" 2>&1
  note "== ncu $label (NI=1024, NJ=131072: 1.342e8 interactions): rc=$?"
  grep -E "gpu__time_duration|issue_active|warps_active|inst_executed|stalled" "$LOGS/ncu-$label.log" |
    sed 's/^ */  /' | tee -a "$S"
  awk '/smsp__inst_executed.sum/ { v = $NF; gsub(",", "", v); printf "  instructions per interaction: %.2f\n", v * 32 / (1024 * 131072) }' \
    "$LOGS/ncu-$label.log" | tee -a "$S"
  if [ "${SOURCE_VARIANT:-}" = "$label" ]; then
    (cd "$dir" && NB6ACCEL_CUDA_PRECISE=never timeout 200 ./libtool --mode=execute ncu --clock-control none \
      --kernel-name regex:gpunb_force --launch-skip 4 --launch-count 1 --section SourceCounters \
      --section WarpStateStats -f -o "$LOGS/src-$label" ./tests/gpu/bench_gpunb --ni 1024 --nj 131072 --seconds 0 \
      ${BENCH_ARGS:-}) \
      >"$LOGS/ncu-src-$label.log" 2>&1
    ncu --import "$LOGS/src-$label.ncu-rep" --page source --csv --print-source sass >"$OUT/sass-$label.csv" 2>&1
    note "  per-instruction profile: rc=$? $(wc -l <"$OUT/sass-$label.csv") lines in sass-$label.csv"
  fi
done
