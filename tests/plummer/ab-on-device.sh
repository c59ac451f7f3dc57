#!/bin/bash
# ab-on-device.sh -- A/B timing of the Plummer driver on the GPU machine: the
# lent machines differ by up to 30 % on the CPU parts, so a change is judged
# only against its alternative measured alternately on one machine.
# From the repository root on the GPU machine (carry what
# tests/plummer/run-on-device.sh needs):
#   OUT=$OUT VARIANTS="new||-profile;old|NB6ACCEL_X=0|-profile" ROUNDS=2 \
#     bash tests/plummer/ab-on-device.sh
# VARIANTS: entries "label|VAR=VALUE ...|driver options" separated by ';'.
# BIN=path among a variant's VAR=VALUE runs that driver instead (an older
# tree's build, to judge a change of code rather than of options);
# AB_OLD_TREE=dir (a bootstrapped source tree, e.g. a git worktree of the
# commit before the change) is built beside this one, and BIN=old names it;
# AB_OLD_FLAGS: its CFLAGS and FCFLAGS (default "-O3 -march=native", as this
# tree's build; "default": configure's own), so that AB_OLD_TREE=. judges the
# compiler flags alone.
# Builds and runs the driver's tests through tests/plummer/run-on-device.sh
# (no timing runs there), then ROUNDS rounds of every variant in turn (round
# r from the r-th variant on, cyclically; AB_ORDER=fixed: as listed) at
# N = AB_N (65536), t = 0..4, each within AB_LIMIT seconds (60).  Leaves in
# $OUT: plummer-device.log (build, tests), ab.txt (the cores' clock and
# CPUs' worth at the start and the end, each run's table, rest and profile
# lines, GPUIRR's figures), ab-runs.log (every run in full).
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/plummer-ab-out}
mkdir -p "$out"
PLUMMER_SIZES=" " OUT="$out" bash "$src/tests/plummer/run-on-device.sh" >"$out/build-console.log" 2>&1 ||
  { tail -n 40 "$out/build-console.log"; exit 1; }
rm -f "$out/plummer.csv" "$out/plummer-runs.log" "$out/plummer-fig2.png" "$out/build-console.log"
bin=/tmp/nb6-plummer-build/tests/plummer/plummer_ac
old_bin=
if [ -n "${AB_OLD_TREE:-}" ]; then
  old_src=$(cd "$AB_OLD_TREE" && pwd)
  old_flags=${AB_OLD_FLAGS:--O3 -march=native}
  old_flag_args=(CFLAGS="$old_flags" FCFLAGS="$old_flags")
  [ "$old_flags" = default ] && old_flag_args=()
  rm -rf /tmp/nb6-ab-old-build && mkdir -p /tmp/nb6-ab-old-build
  (cd /tmp/nb6-ab-old-build &&
    "$old_src/configure" --with-cuda-arch=90 "${old_flag_args[@]}" >configure.out 2>&1 &&
    make -j"$(nproc)" >make.out 2>&1 && make -j"$(nproc)" tests/plummer/plummer_ac >>make.out 2>&1) ||
    { tail -n 40 /tmp/nb6-ab-old-build/make.out; echo "BUILD OF $AB_OLD_TREE FAILED"; exit 1; }
  old_bin=/tmp/nb6-ab-old-build/tests/plummer/plummer_ac
fi
export OMP_NUM_THREADS=${PLUMMER_THREADS:-$(nproc)}
n=${AB_N:-65536}
limit=${AB_LIMIT:-60}
rounds=${ROUNDS:-2}
summary=$out/ab.txt
: >"$summary"
[ -n "$old_bin" ] && echo "BIN=old: $old_src built with CFLAGS and FCFLAGS: $old_flags" >>"$summary"
machine_check() { sh "$src/tests/cores-check.sh" "machine ($1)" "$OMP_NUM_THREADS" >>"$summary"; }
machine_check start
: >"$out/ab-runs.log"
IFS=';' read -r -a variants <<<"${VARIANTS:-default||-profile}"
nv=${#variants[@]}
for r in $(seq 1 "$rounds"); do
  # Round r starts at variant r (cyclically): the clock drifts through a
  # call, and a variant always run at the same place in the round takes that
  # drift as its own (session 52); AB_ORDER=fixed keeps the listed order.
  shift_by=$((r - 1))
  [ "${AB_ORDER:-rotate}" = fixed ] && shift_by=0
  for k in $(seq 0 $((nv - 1))); do
    v=${variants[$(((k + shift_by) % nv))]}
    IFS='|' read -r label envs opts <<<"$v"
    run_bin=$bin
    run_envs=
    for w in $envs; do
      case $w in
        BIN=old) run_bin=$old_bin ;;
        BIN=*) run_bin=${w#BIN=} ;;
        *) run_envs="$run_envs $w" ;;
      esac
    done
    echo "== round $r: $label (env: ${envs:-none}; options: ${opts:-none})" | tee -a "$summary" >>"$out/ab-runs.log"
    # shellcheck disable=SC2086 # envs and opts are word lists
    env $run_envs "$run_bin" -n "$n" -q -progress 0 -wall-limit "$limit" $opts >"$out/run.tmp" 2>&1
    echo "exit status $?" >>"$summary"
    cat "$out/run.tmp" >>"$out/ab-runs.log"
    grep -E '^ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]|^# rest|^# NBODY6 path|^# resident|^# Block|^# +[0-9]+\.\.|^#   all|perf grav|pass pred|team grav' \
      "$out/run.tmp" >>"$summary"
  done
done
rm -f "$out/run.tmp"
machine_check end
cat "$summary"
