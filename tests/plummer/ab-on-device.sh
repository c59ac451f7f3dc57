#!/bin/bash
# ab-on-device.sh -- A/B timing of the Plummer driver on the GPU machine: the
# lent machines differ by up to 30 % on the CPU parts, so a change is judged
# only against its alternative measured alternately on one machine.
# From the repository root on the GPU machine (carry what
# tests/plummer/run-on-device.sh needs):
#   OUT=$OUT VARIANTS="new||-profile;old|NB6ACCEL_X=0|-profile" ROUNDS=2 \
#     bash tests/plummer/ab-on-device.sh
# VARIANTS: entries "label|VAR=VALUE ...|driver options" separated by ';'.
# Builds and runs the driver's tests through tests/plummer/run-on-device.sh
# (no timing runs there), then ROUNDS rounds of every variant in turn at
# N = AB_N (65536), t = 0..4, each within AB_LIMIT seconds (60).  Leaves in
# $OUT: plummer-device.log (build, tests), ab.txt (each run's table, rest
# and profile lines, GPUIRR's figures), ab-runs.log (every run in full).
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/plummer-ab-out}
mkdir -p "$out"
PLUMMER_SIZES=" " OUT="$out" bash "$src/tests/plummer/run-on-device.sh" >"$out/build-console.log" 2>&1 ||
  { tail -n 40 "$out/build-console.log"; exit 1; }
rm -f "$out/plummer.csv" "$out/plummer-runs.log" "$out/plummer-fig2.png" "$out/build-console.log"
bin=/tmp/nb6-plummer-build/tests/plummer/plummer_ac
export OMP_NUM_THREADS=${PLUMMER_THREADS:-$(nproc)}
n=${AB_N:-65536}
limit=${AB_LIMIT:-60}
rounds=${ROUNDS:-2}
summary=$out/ab.txt
: >"$summary"
: >"$out/ab-runs.log"
IFS=';' read -r -a variants <<<"${VARIANTS:-default||-profile}"
for r in $(seq 1 "$rounds"); do
  for v in "${variants[@]}"; do
    IFS='|' read -r label envs opts <<<"$v"
    echo "== round $r: $label (env: ${envs:-none}; options: ${opts:-none})" | tee -a "$summary" >>"$out/ab-runs.log"
    # shellcheck disable=SC2086 # envs and opts are word lists
    env $envs "$bin" -n "$n" -q -progress 0 -wall-limit "$limit" $opts >"$out/run.tmp" 2>&1
    echo "exit status $?" >>"$summary"
    cat "$out/run.tmp" >>"$out/ab-runs.log"
    grep -E '^ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]|^# rest|^# NBODY6 path|^# resident|^# Block|^# +[0-9]+\.\.|^#   all|perf grav|pass pred|team grav' \
      "$out/run.tmp" >>"$summary"
  done
done
rm -f "$out/run.tmp"
cat "$summary"
