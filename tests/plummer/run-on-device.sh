#!/bin/bash
# run-on-device.sh -- the Plummer timing sweep (t = 2..4) on the GPU machine.
# From the repository root on the GPU machine:
#   bash tests/plummer/run-on-device.sh
# With the device tool (the machine has no libtool and no gfortran): run
# ./bootstrap here, then run that command carrying .devtools configure
# Makefile.in aclocal.m4 config.h.in build-aux m4.  Builds out of tree in
# /tmp, runs the driver's tests on this machine's back-ends, then one run per
# entry of PLUMMER_SIZES (default: 64k and 128k, t = 0..4, each with NBODY6's
# path and with the resident one; "N"; "Nr" for the resident GPUNB path;
# "Ng" for it with the irregular force of blocks of >= 512 on the GPU;
# "N@NB" or "Nr@NB" with a target <NB> of NB; "+OPT+VAL" appended for more
# options) with a wall-clock limit per run (its share, by N, of what is left)
# so that the whole call stays within PLUMMER_BUDGET seconds (default 530),
# and prints the table of all runs.  Leaves in $OUT: plummer-device.log
# (hardware, build, tests, summary lines, table), plummer-runs.log (every run
# in full), plummer.csv, plummer-fig2.png (if gnuplot is there).
# PLUMMER_ARGS go to every run.  PLUMMER_FLAGS: the build's CFLAGS and
# FCFLAGS (default "-O3 -march=native", as every figure in RESULTS.md before
# session 46; "default": configure's own, as the README's commands build).
set -u -o pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/plummer-device-out}
mkdir -p "$out"
budget=${PLUMMER_BUDGET:-530}
sizes=${PLUMMER_SIZES:-"65536 65536r 131072 131072r"}
label=${PLUMMER_LABEL:-device}
args=${PLUMMER_ARGS:-}
flags=${PLUMMER_FLAGS:--O3 -march=native}
flag_args=(CFLAGS="$flags" FCFLAGS="$flags")
[ "$flags" = default ] && flag_args=()
cd "$src" || exit 1
. tests/device-setup.sh >/dev/null 2>&1
start=$(date +%s)
log=$out/plummer-device.log
elapsed() { echo $(( $(date +%s) - start )); }

{
  echo "== hardware"; nvidia-smi -L 2>&1; nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv 2>&1
  lscpu 2>&1 | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket)'
  echo "== build"
  { test -x configure || ./bootstrap; } &&
  mkdir -p /tmp/nb6-plummer-build && cd /tmp/nb6-plummer-build &&
  "$src/configure" --with-cuda-arch=90 "${flag_args[@]}" | tail -n 12 &&
  make -j"$(nproc)" >make.out 2>&1 || { tail -n 40 make.out; echo "BUILD FAILED"; exit 1; }
  make -j"$(nproc)" tests/plummer/test_plummer_model tests/plummer/test_plummer_run \
    tests/plummer/test_plummer_box_terms >>make.out 2>&1 ||
    { tail -n 40 make.out; echo "BUILD OF TESTS FAILED"; exit 1; }
  echo "built after $(elapsed) s"
  echo "== tests of the driver on this machine's back-ends"
  export OMP_NUM_THREADS=${PLUMMER_THREADS:-$(nproc)}
  ./tests/plummer/test_plummer_model 2>&1 | tail -n 3
  ./tests/plummer/test_plummer_run 2>&1 | grep -E 'back-end|kernel|PASS|FAIL|passed'
  ./tests/plummer/test_plummer_box_terms 2>&1 | grep -E 'FAIL|SKIP|passed'
  echo "tests done after $(elapsed) s"
} >"$log" 2>&1 || { cat "$log"; exit 1; }
cat "$log"

cd /tmp/nb6-plummer-build || exit 1
# The machine's image sets OMP_NUM_THREADS=1 (seen: 'threads = 1'): use every core.
export OMP_NUM_THREADS=${PLUMMER_THREADS:-$(nproc)}
{
  echo "== affinity and OpenMP runtime"
  grep Cpus_allowed_list /proc/self/status
  echo "cpu0 siblings: $(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list 2>&1)"
  ldd tests/plummer/.libs/plummer_ac 2>/dev/null | grep -E 'gomp|gfortran|gpunb|gpuirr'
} 2>&1 | tee -a "$log"
# Seen on this machine: with OMP_PROC_BIND=close OMP_PLACES=cores every
# thread of this program ran on one core (16 threads no faster than 1), so
# threads are left unbound; PLUMMER_BIND=probe times a short run each way
# (about 20 s) and keeps the faster, PLUMMER_BIND=yes binds.
probe() {
  local t0 t1
  t0=$(date +%s.%N)
  ./tests/plummer/plummer_ac -n 32768 -tend 0.25 -q -progress 0 >/dev/null 2>&1
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}
bind=${PLUMMER_BIND:-no}
if [ "$bind" = probe ]; then
  unset OMP_PROC_BIND OMP_PLACES
  free_s=$(probe)
  bound_s=$(OMP_PROC_BIND=close OMP_PLACES=cores probe)
  echo "probe N = 32768, t = 0..0.25: unbound $free_s s, bound to cores $bound_s s" | tee -a "$log"
  bind=$(awk -v f="$free_s" -v b="$bound_s" 'BEGIN { print (b < 0.9 * f) ? "yes" : "no" }')
fi
if [ "$bind" = yes ]; then
  export OMP_PROC_BIND=close OMP_PLACES=cores
else
  unset OMP_PROC_BIND OMP_PLACES
fi
echo "OMP_NUM_THREADS=$OMP_NUM_THREADS OMP_PROC_BIND=${OMP_PROC_BIND:-unset} OMP_PLACES=${OMP_PLACES:-unset}" | tee -a "$log"
runs=$out/plummer-runs.log
: >"$runs"
# N of an entry, for the share of the budget each run may use.
entry_n() { local e=${1%%+*}; e=${e%@*}; e=${e%g}; echo "${e%r}"; }
remaining_n=0
for entry in $sizes; do remaining_n=$(( remaining_n + $(entry_n "$entry") )); done
for entry in $sizes; do
  share_n=$(entry_n "$entry")
  # "N", "Nr" (resident GPUNB path), "Ng" (and -gpu-irr 512), "N@NB" (target
  # <NB>), "Nr@NB", and any of these followed by "+OPTION+VALUE..." (more
  # options, '+' for space).
  more=
  case $entry in *+*) more=$(echo "${entry#*+}" | tr '+' ' '); entry=${entry%%+*} ;; esac
  n=${entry%@*}
  extra=
  [ "$n" != "$entry" ] && extra="-nnb ${entry#*@}"
  case $n in *r) n=${n%r}; extra="$extra -resident" ;; esac
  case $n in *g) n=${n%g}; extra="$extra -resident -gpu-irr 512" ;; esac
  extra="$extra $more"
  left=$(( budget - $(elapsed) ))
  if [ "$left" -lt 40 ]; then
    echo "== N = $n $extra skipped: only $left s of the budget left" | tee -a "$log"
    continue
  fi
  # Its share by N of what is left, so a slow run cannot starve the next
  # ones; what a run leaves unused goes to those after it.
  limit=$(( (left - 20) * share_n / remaining_n ))
  [ "$limit" -lt 30 ] && limit=30
  remaining_n=$(( remaining_n - share_n ))
  echo "== N = $n $extra (wall limit $limit s, $(elapsed) s elapsed)" | tee -a "$log" "$runs"
  ./tests/plummer/plummer_ac -n "$n" -csv "$out/plummer.csv" -label "$label" \
    -wall-limit "$limit" -progress 15 $extra $args >"$out/run.tmp" 2>&1
  echo "exit status $?" | tee -a "$log"
  cat "$out/run.tmp" >>"$runs"
  grep -E '^ +[0-9]+\.0000 |^# N =|^# GPUNB|^# Timing|^#      N|^ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]|^# rest|^# resident|^# NBODY6 path|STOPPED|back-end|kernel' \
    "$out/run.tmp" | tee -a "$log"
  rm -f "$out/run.tmp"
done
{
  echo "== table (t = 0..2 and 2..4 wall; regular, irregular, rest for 2..4; seconds)"
  awk -F, 'NR == 1 { next }
    { if (!hdr++) printf "%8s %-9s %9s %9s %8s %9s %8s %10s %10s %6s %10s %s\n", "N", "path",
        "wall0..2", "wall2..4", "regular", "irregular", "rest", "reg.steps", "irr.steps", "<NB>",
        "dE/E", "status";
      printf "%8d %-9s %9.2f %9.2f %8.2f %9.2f %8.2f %10.3g %10.3g %6.1f %10.2e %s\n", $1, $24, $6, $7,
        $8, $9, $10, $11, $12, $14, $15, $22 }' "$out/plummer.csv" 2>/dev/null
  echo "== CSV"
  cat "$out/plummer.csv" 2>/dev/null
  sh "$src/tests/plummer/plot-fig2.sh" "$out/plummer.csv" "$out/plummer-fig2.png"
  echo "== done after $(elapsed) s"
} 2>&1 | tee -a "$log"
