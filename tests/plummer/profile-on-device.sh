#!/bin/bash
# profile-on-device.sh -- where the Plummer driver's host time goes on the GPU
# machine: its phases (-profile) at several thread counts, and a sampled
# profile of one run by perf where perf can be had.
# From the repository root on the GPU machine (see run-on-device.sh for what
# to carry):
#   PROFILE_THREADS="16 4 1" bash tests/plummer/profile-on-device.sh
# (PROFILE_THREADS="" for the perf runs alone)
# The machine has no perf: PERF_TAR names a tarball of a perf binary with
# the libraries it needs beyond glibc's (the perf binary at its top, the
# libraries under lib/), unpacked to /tmp.  Make it here, on a machine with
# Debian's linux-perf, and carry it in .devtools:
#   bash tests/plummer/profile-on-device.sh --pack .devtools/perf.tar.xz
# PROFILE_N (65536), PROFILE_TEND (1: phases of t = 0.5..1),
# PROFILE_ARGS (-resident -gpu-irr 512), PROFILE_PERF_THREADS (16),
# PROFILE_PERF_DELAY (ms before perf starts sampling; default: the start-up
# that the phase run with PROFILE_PERF_THREADS threads printed, plus 200 ms,
# else 0), PROFILE_ANNOTATE (a regular expression: the functions whose hot
# lines are printed).
# Leaves in $OUT: profile.log (phases per thread count, perf's flat profile
# and the hottest lines of the hottest functions).
set -u -o pipefail
if [ "${1:-}" = --pack ]; then
  tarball=${2:?--pack needs the tarball to write}
  perf_bin=$(command -v perf) || { echo "no perf here (Debian: apt-get install linux-perf)" >&2; exit 1; }
  pack=$(mktemp -d)
  mkdir -p "$pack/lib" && cp "$perf_bin" "$pack/perf" || exit 1
  # glibc's own libraries, libstdc++, libgcc_s and zlib are on the GPU machine.
  ldd "$perf_bin" | awk '$3 ~ /^\// { print $3 }' |
    grep -vE '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s|libz)\.so' |
    while read -r lib; do cp -L "$lib" "$pack/lib/"; done
  tar -C "$pack" -cJf "$tarball" . && rm -rf "$pack" && echo "wrote $tarball"
  exit
fi
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/profile-device-out}
mkdir -p "$out"
n=${PROFILE_N:-65536}
tend=${PROFILE_TEND:-1}
threads=${PROFILE_THREADS-"16 4 1"}
args=${PROFILE_ARGS:-"-resident -gpu-irr 512"}
perf_threads=${PROFILE_PERF_THREADS:-16}
perf_delay=${PROFILE_PERF_DELAY:-}
annotate=${PROFILE_ANNOTATE:-'block_step|irregular_correct|set_particle|set_jparticle|tstep|predict'}
log=$out/profile.log
cd "$src" || exit 1
. tests/device-setup.sh >/dev/null 2>&1
build=/tmp/nb6-plummer-build

{
  echo "== hardware"; nvidia-smi -L 2>&1
  lscpu 2>&1 | grep -E '^(Model name|CPU\(s\)|L2|L3)'
  echo "== build (-g for perf's line numbers; code as run-on-device.sh's)"
  { test -x configure || ./bootstrap; } &&
  mkdir -p "$build" && cd "$build" &&
  "$src/configure" --with-cuda-arch=90 CFLAGS="-O3 -march=native -g" FCFLAGS="-O3 -march=native -g" \
    >configure.out 2>&1 &&
  make -j"$(nproc)" >make.out 2>&1 || { tail -n 40 make.out; echo "BUILD FAILED"; exit 1; }
} >"$log" 2>&1 || { cat "$log"; exit 1; }
cd "$build" || exit 1

for t in $threads; do
  echo "== N = $n, t = 0..$tend, $t threads, $args" >>"$log"
  OMP_NUM_THREADS=$t ./tests/plummer/plummer_ac -n "$n" -tend "$tend" -profile -progress 0 $args \
    >"$out/run.tmp" 2>&1
  echo "exit status $?" >>"$log"
  grep -E '^#|^ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]' "$out/run.tmp" >>"$log"
  # The host's initial derivatives take seconds at 64k and would fill the
  # perf run's samples: start sampling after them, as timed by the run
  # with perf's thread count (one thread's start-up is many times longer).
  startup=$(sed -n 's/.*start-up before t = 0: *\([0-9.]*\) s.*/\1/p' "$out/run.tmp" | tail -n 1)
  [ -n "${PROFILE_PERF_DELAY:-}" ] || [ "$t" != "$perf_threads" ] || [ -z "$startup" ] ||
    perf_delay=$(awk -v s="$startup" 'BEGIN { printf "%d", 1000 * s + 200 }')
done
perf_delay=${perf_delay:-0}

perf=
if [ -n "${PERF_TAR:-}" ] && [ -f "$src/$PERF_TAR" ]; then
  mkdir -p /tmp/perf && tar -C /tmp/perf -xJf "$src/$PERF_TAR" && perf=/tmp/perf/perf
elif command -v perf >/dev/null 2>&1; then
  perf=perf
fi
if [ -z "$perf" ]; then
  echo "== perf: none (set PERF_TAR)" >>"$log"
else
  export LD_LIBRARY_PATH=/tmp/perf/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "== perf $($perf --version 2>&1), paranoid $(cat /proc/sys/kernel/perf_event_paranoid)" >>"$log"
  echo "== perf stat (hardware counters, if the VM has them), $perf_threads threads" >>"$log"
  OMP_NUM_THREADS=$perf_threads $perf stat -e cycles,instructions,cache-misses,task-clock \
    ./tests/plummer/plummer_ac -n "$n" -tend "$tend" -q -progress 0 $args >/dev/null 2>"$out/stat.tmp"
  tail -n 15 "$out/stat.tmp" >>"$log"
  echo "== perf record, $perf_threads threads, from $perf_delay ms" >>"$log"
  (cd "$out" && OMP_NUM_THREADS=$perf_threads $perf record -F 2999 -e cpu-clock -D "$perf_delay" -o perf.data \
    "$build/tests/plummer/plummer_ac" -n "$n" -tend "$tend" -q -progress 0 $args \
    >/dev/null 2>"$out/rec.tmp") || tail -n 5 "$out/rec.tmp" >>"$log"
  $perf report -i "$out/perf.data" --stdio --no-children --sort dso,symbol 2>/dev/null |
    grep -v '^$' | head -n 70 >>"$log"
  for sym in $($perf report -i "$out/perf.data" --stdio --no-children --sort symbol 2>/dev/null |
      awk '/%/ && $1 + 0 >= 0.5 { for (f = 1; f < NF; f++) if ($f == "[.]") print $(f + 1) }' |
      grep -E "$annotate" | head -n 8); do
    echo "== perf annotate $sym (lines with >= 0.5 % of its samples)" >>"$log"
    $perf annotate -i "$out/perf.data" --stdio -l "$sym" 2>/dev/null |
      awk -F: '$1 + 0 >= 0.5' | head -n 60 >>"$log"
  done
  rm -f "$out/perf.data" "$out/perf.data.old"
fi
rm -f "$out/run.tmp" "$out/stat.tmp" "$out/rec.tmp"
cat "$log"
