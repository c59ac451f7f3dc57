#!/bin/bash
# run-on-device.sh -- build nb6accel on the GPU machine (CPU part only:
# --without-cuda), run the SIMD tests there (its Xeon has AVX-512, so every
# level is checked) and the GPUIRR benchmark of the AVX-512 kernel at 1, 8
# and 16 OpenMP threads: FIRR_VEC (prediction included) at N = 64k, 8k,
# 256k, 1M, then 64k again with the particles forced in a shuffled order and
# with the threads bound to cores.  BENCH_GPUNB=1 adds the GPUNB host
# benchmark (the regular force; longer).  Logs go to $OUT (default
# ./simd-device-out: build.log, the test logs, the benchmark logs,
# summary.txt); a short table is printed last.  The cores' clock
# (tests/cores-check.sh) is logged before and after the
# benchmarks, and the libraries as built are packed into $OUT/libs.tar.gz:
# the kernels' limit in cycles per interaction comes from
# tests/simd/mca_per_interaction.sh on them, unpacked (llvm-mca, which the
# GPU machine lacks), so that a rate of X interactions/s on T threads at G GHz
# is X / (T * G * 1e9 / cycles) of it.
# OLD_TREE=dir (a bootstrapped source tree of an older commit, e.g. from
# `git archive OLD | tar -x -C dir && (cd dir && ./bootstrap)`, carried)
# also builds that tree's libraries and GPUIRR benchmarks beside this one
# and runs both alternately, ROUNDS (3) times: FIRR_VEC at 64k and 8k and
# bench_gpuirr_blocks (NBODY6's small blocks), on 1 thread and all, into
# $OUT/ab_gpuirr.log.  The lent machines drift, so a kernel change is
# judged only there, run against run.  Both builds take CFLAGS from the
# environment: CFLAGS="-O3 -march=native" gives the flags of the timing
# runs (tests/plummer, nbody6_patch), none configure's default (-g -O3
# since session 45, autoconf's -g -O2 before).
#
#   tests/simd/run-on-device.sh            (from the top of the source tree)
#
# On the device machine, run it after `. tests/device-setup.sh` (that
# machine has no gfortran of its own; see that file).  It has no
# libtool either: run ./bootstrap here first and carry the generated build
# system (configure Makefile.in aclocal.m4 config.h.in build-aux m4); this
# script then runs ./bootstrap only where no configure was carried.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$PWD/simd-device-out}
build=${BUILD:-/tmp/nb6accel-simd-build}
jobs=$(nproc)
mkdir -p "$OUT" "$build"

step() { echo "== $* ($(date -u +%T))"; }

machine=$(grep -m1 "model name" /proc/cpuinfo; lscpu 2>/dev/null |
    grep -E "^(CPU\(s\)|Thread|Core|Socket|L2|L3|NUMA node\(s\))"; ${CC:-gcc} --version | head -1)
echo "$machine"
clock_check() { sh "$src/tests/cores-check.sh" "clock ($1)" "$jobs"; }

step "bootstrap + configure --without-cuda + make"
blog="$OUT/build.log"
# Only the libraries and the programs of tests/simd/: a file elsewhere that
# is being edited must not stop this run.
progs="tests/simd/test_gpuirr_simd tests/simd/test_gpunb_simd tests/simd/bench_gpuirr_simd
       tests/simd/bench_gpunb_simd"
if [ ! -x "$src/configure" ]; then
    boot=./bootstrap
else # carried files: make them newer than their sources so make keeps them
    boot=true
    (cd "$src" && touch aclocal.m4 && sleep 1 && touch configure Makefile.in && sleep 1 && touch config.h.in)
fi
{ (cd "$src" && $boot) && (cd "$build" && "$src/configure" --without-cuda) &&
  make -C "$build" -j"$jobs" libgpunb.la libgpuirr.la $progs; } > "$blog" 2>&1 ||
    { tail -40 "$blog"; exit 1; }
grep -A8 "will build" "$blog"
old_build=/tmp/nb6accel-simd-old-build
if [ -n "${OLD_TREE:-}" ]; then
    old_src=$(cd "$OLD_TREE" && pwd)
    step "configure --without-cuda + make of $OLD_TREE"
    # afresh: objects left by a build with other CFLAGS would be kept by make
    rm -rf "$old_build" && mkdir -p "$old_build"
    { (cd "$old_build" && "$old_src/configure" --without-cuda) &&
      make -C "$old_build" -j"$jobs" libgpuirr.la tests/simd/bench_gpuirr_simd tests/simd/bench_gpuirr_blocks; } \
        > "$OUT/build-old.log" 2>&1 || { tail -40 "$OUT/build-old.log"; echo "BUILD OF $OLD_TREE FAILED"; exit 1; }
    make -C "$build" -j"$jobs" tests/simd/bench_gpuirr_blocks >> "$blog" 2>&1 || { tail -40 "$blog"; exit 1; }
fi

step "SIMD tests"
check_rc=0
for t in test_gpuirr_simd test_gpunb_simd; do
    "$build/tests/simd/$t" > "$OUT/$t.log" 2>&1
    rc=$?
    echo "$t: exit $rc ($( [ $rc = 0 ] && echo pass || echo FAIL))"
    [ $rc = 0 ] || check_rc=1
    grep -hE "^(skip|FAIL|default|PASS)" "$OUT/$t.log"
done

step "benchmarks"
clock_check start | tee "$OUT/clock.log"
threads=${THREADS:-"1 8 16"}
level=${LEVEL:-avx512}
"$build/tests/simd/bench_gpuirr_simd" -l "$level" $threads > "$OUT/bench_gpuirr.log" 2>&1
"$build/tests/simd/bench_gpuirr_simd" -q -s -l "$level" $threads 2>&1 | grep -E "^FIRR" >> "$OUT/bench_gpuirr.log"
echo "# threads bound to cores (OMP_PROC_BIND=close OMP_PLACES=cores)" >> "$OUT/bench_gpuirr.log"
OMP_PROC_BIND=close OMP_PLACES=cores "$build/tests/simd/bench_gpuirr_simd" -q -l "$level" $threads 2>&1 |
    grep -E "^(FIRR|PRED)" | sed 's/$/  [bound]/' >> "$OUT/bench_gpuirr.log"
: > "$OUT/bench_gpunb.log"
[ "${BENCH_GPUNB:-0}" = 1 ] && "$build/tests/simd/bench_gpunb_simd" $threads > "$OUT/bench_gpunb.log" 2>&1
if [ -n "${OLD_TREE:-}" ]; then
    step "A/B against $OLD_TREE"
    ab="$OUT/ab_gpuirr.log"
    : > "$ab"
    for r in $(seq 1 "${ROUNDS:-3}"); do
        for which in new old; do
            b=$build
            [ $which = old ] && b=$old_build
            for n in 65536 8192; do
                "$b/tests/simd/bench_gpuirr_simd" -q -n $n -l "$level" 1 "$jobs" 2>&1 | grep -E "^FIRR" |
                    sed "s/^/$which round $r: /" >> "$ab"
            done
            NB6_TEST_SEED=$r "$b/tests/simd/bench_gpuirr_blocks" -b 10000 -l "$level" 1 "$jobs" 2>&1 |
                grep -E "^blocks" | sed "s/^/$which round $r: /" >> "$ab"
        done
    done
fi
clock_check end | tee -a "$OUT/clock.log"
cat "$OUT/bench_gpuirr.log" "$OUT/bench_gpunb.log"
# one archive: the device tool brings back few files
tar czhf "$OUT/libs.tar.gz" -C "$build/.libs" libgpunb.so libgpuirr.so

step "summary"
{
    echo "$machine"
    echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) hardware threads"
    cat "$OUT/clock.log"
    echo "SIMD tests: $( [ $check_rc = 0 ] && echo pass || echo FAIL) (levels: $(grep -h '^default' "$OUT"/test_gpuirr_simd.log | sed 's/.*: //') default)"
    printf "%-9s %-7s %7s %9s %12s %12s\n" what level threads N "time/ms" "inter/s"
    awk '{tag = ($NF == "[bound]") ? $NF : ($NF == "i]") ? "[shuffled]" : ""}
         /^FIRR_VEC/ {printf "%-9s %-7s %7s %9s %12s %12s %s\n", $1, $2, $4, $6, $9, $11, tag}
         /^REGF/     {printf "%-9s %-7s %7s %9s %12s %12s\n", $1, $3, $5, $7, $12, $14}' \
        "$OUT/bench_gpuirr.log" "$OUT/bench_gpunb.log" | grep -E "avx512|double|scalar"
    if [ -n "${OLD_TREE:-}" ]; then
        echo "A/B against $OLD_TREE (interactions/s; blocks: firr us/block):"
        awk '/FIRR_VEC/ {k = $1 " N=" $9 " thr=" $7; v[k] = v[k] " " $14}
             /blocks/   {k = $1 " blocks thr=" $7; v[k] = v[k] " " $21}
             END {for (k in v) print k ":" v[k]}' "$OUT/ab_gpuirr.log" | sort
    fi
} | tee "$OUT/summary.txt"
exit $check_rc
