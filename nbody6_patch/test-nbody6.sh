#!/bin/sh
# make check: NBODY6-GPU from the tree in NBODY6_DIR, built against the
# libraries of this build tree, integrates the 1k Plummer model of
# GPU2/run/1k to T = 2 with an energy error like the original's.
#
# The bound: NBODY6's SSE build with the original libraries prints
# DE = -6.4E-06 at T = 2 (and so does ours with the double-precision CPU
# back-ends); the limit 2E-05 leaves room for single-precision back-ends and
# still catches what breaks the contract (a neighbour criterion without the
# mass factor drives E from -0.25 to +18; wrong jerk scaling gives ~1E-3).
#
# Second case: the same run with `build-nbody6 --resident' (NBODY6's loop
# patched to use GPUNB_SET_JP / GPUNB_PREDICT / GPUNB_REGF_START / _FINISH;
# on the CPU back-end the resident j-set is emulated on the host).  Bound
# |DE| <= 1E-05, and its total step count (NSTEPI at T = 2) within 1 % of the
# first case's: the resident j-set must give the regular forces of the
# original path (on the CPU back-end the two runs are in fact identical).
#
# Third case, N = 2048 (the first size with regular blocks of more than
# the patch's first chunk of 1024 bodies, whose second chunk it starts with
# the first, keeping two in flight), all on the CPU back-end: the resident build on two
# threads and on one, and the original build, must print the same steps and
# energies.  The patch runs NBODY6's serial loops over LISTQ and a block's
# members on the OpenMP team (compactions in order, minima, copies; a team
# of one on one thread) and moves the regular-force calls, none of which may
# change a bit; every sum of the CPU back-ends and of NBODY6 is per body.
set -eu

if [ -z "${NBODY6_DIR:-}" ]; then
    echo "SKIP: set NBODY6_DIR to an NBODY6 tree to run this test"
    exit 77
fi
if [ ! -f "$NBODY6_DIR/GPU2/Makefile.build" ]; then
    echo "FAIL: NBODY6_DIR=$NBODY6_DIR is not an NBODY6 tree (no GPU2/Makefile.build)"
    exit 1
fi
max_de=2e-5
max_de_resident=1e-5

here=${srcdir:-$(dirname "$0")/..}/nbody6_patch
here=$(cd "$here" && pwd)
builddir=$(cd "${top_builddir:-.}" && pwd)
[ -f "$builddir/libgpunb.la" ] || { echo "FAIL: $builddir/libgpunb.la not found (run make first)"; exit 1; }
work=$builddir/nbody6_patch/test-nbody6.work
rm -rf "$work"
mkdir -p "$work"

echo "test-nbody6: NBODY6 tree $NBODY6_DIR, nb6accel build tree $builddir"
if ! "$here/build-nbody6" --nbody6 "$NBODY6_DIR" --builddir "$builddir" --out "$work/build" \
        --nmax 4010 --lmax 200; then
    echo "FAIL: build-nbody6 failed (log: $work/build/build.log)"
    exit 1
fi
# This test is about NBODY6 on our libraries, not about a GPU: a CUDA build on
# a machine without one runs on the CPU back-end (the back-end used is printed).
NB6ACCEL_CPU_FALLBACK=${NB6ACCEL_CPU_FALLBACK:-1}; export NB6ACCEL_CPU_FALLBACK
if ! "$here/run-plummer" --n 1024 --tcrit 2 --binary "$work/build/bin/nbody6" --dir "$work/run" \
        --max-de "$max_de"; then
    echo "FAIL: the 1k Plummer run failed or its energy error is above $max_de (see $work/run)"
    exit 1
fi
de=$(sed -n 's/^de_2=//p' "$work/run/summary")
if [ -z "$de" ]; then
    echo "FAIL: the run did not reach the ADJUST at T = 2 (see $work/run/stdout.log)"
    exit 1
fi
backend=$(sed -n 's/.*GPUNB back-end \([^,]*\).*/\1/p' "$work/run/stderr.log" | tail -n 1)
echo "PASS: N = 1024 to T = 2: DE = $de (|DE| <= $max_de), GPUNB back-end ${backend:-?}"

# ---- second case: --resident -------------------------------------------------
# NSTEPI (irregular steps) and NSTEPR (regular) of the T = 2 line of a run.
steps() { sed -n 's/^nsteps_line=.*NSTEPS = *\([0-9]*\) *[0-9]* *\([0-9]*\).*/\1 \2/p' "$1/summary"; }
if ! "$here/build-nbody6" --nbody6 "$NBODY6_DIR" --builddir "$builddir" --out "$work/build-resident" \
        --nmax 4010 --lmax 200 --resident; then
    echo "FAIL: build-nbody6 --resident failed (log: $work/build-resident/build.log)"
    exit 1
fi
if ! NB6ACCEL_GPUNB=cpu "$here/run-plummer" --n 1024 --tcrit 2 --threads 2 \
        --binary "$work/build-resident/bin/nbody6" --dir "$work/run-resident" --max-de "$max_de_resident"; then
    echo "FAIL: the resident 1k run failed or its energy error is above $max_de_resident (see $work/run-resident)"
    exit 1
fi
de_r=$(sed -n 's/^de_2=//p' "$work/run-resident/summary")
set -- $(steps "$work/run") $(steps "$work/run-resident")
if [ -z "$de_r" ] || [ $# -ne 4 ]; then
    echo "FAIL: the resident run did not reach the ADJUST at T = 2 (see $work/run-resident/stdout.log)"
    exit 1
fi
echo "test-nbody6: steps to T = 2 (irregular, regular): original $1 $2, resident $3 $4"
if ! awk -v a="$1" -v b="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.01 * a) }'; then
    echo "FAIL: the resident build took $3 irregular steps against $1 of the original (more than 1 % apart)"
    exit 1
fi
echo "PASS: resident N = 1024 to T = 2: DE = $de_r (|DE| <= $max_de_resident), steps within 1 % of the original's"

# ---- third case: N = 2048, resident on two threads and one, and original --
for run in original:build:2 resident:build-resident:2 resident-1:build-resident:1; do
    name=${run%%:*} rest=${run#*:}
    bin=${rest%%:*} threads=${rest#*:}
    if ! NB6ACCEL_GPUNB=cpu "$here/run-plummer" --n 2048 --tcrit 2 --threads "$threads" \
            --binary "$work/$bin/bin/nbody6" --dir "$work/run-2k-$name"; then
        echo "FAIL: the 2k run '$name' failed (see $work/run-2k-$name)"
        exit 1
    fi
done
# The T = 0 and 2 lines (steps, DE, E), the ADJUST lines less their wall time,
# and the counters (#1-#3: GPUCOR's NBVOID, NICONV, NBFLUX among them; RSMIN
# on the NRUN line) less the CPU time.
printed() {
    grep -E '^ +T = |ADJUST:|^ #[123] |^ NRUN =' "$1/stdout.log" | sed 's/WTIME *=.*//; s/CPU = *[0-9.]*//'
}
for name in original resident resident-1; do
    printed "$work/run-2k-$name" > "$work/printed-$name"
done
if [ "$(grep -c 'NSTEPS' "$work/printed-original")" -lt 2 ]; then
    echo "FAIL: the 2k run's output has no T = 2 line to compare (see $work/run-2k-original/stdout.log)"
    exit 1
fi
for name in resident resident-1; do
    if ! cmp -s "$work/printed-original" "$work/printed-$name"; then
        echo "FAIL: the 2k run '$name' printed other steps, energies or counters than the original build:"
        diff "$work/printed-original" "$work/printed-$name" | head -n 20
        exit 1
    fi
done
echo "PASS: N = 2048 to T = 2 on the CPU back-end: the resident build on two threads and on one prints the same $(wc -l < "$work/printed-original") step, energy and counter lines as the original"

# ---- fourth case: chunks in flight and overflow repeats ----------------------
# The patch keeps two regular-force chunks in flight, and when a chunk's
# lists overflow it collects the chunk behind it (into a second set of
# arrays) before it repeats the chunk.  Both are rare at the sizes above, so
# two scratch copies of the patch make them common: GPUNB_REGF_START gets
# NNBMAX as the list limit instead of NBMAX (NBODY6 keeps lists near 0.9
# NNBMAX: some 2 000 overflows to T = 2 at N = 4000), one copy with chunks
# of 100 and then 300 bodies (many per block, overflows with chunks in
# flight), the other with one chunk per block.  On the CPU back-end a body's
# force and list depend on its own data only, so the two must print the
# same steps, energies and counters.
scratch_patch() {  # $1: directory, $2: NIMAX, $3: NB6N1
    mkdir -p "$1"
    cp "$here/build-nbody6" "$here/nbody6-gpu2.mk" "$1/"
    sed -e "s/^+      PARAMETER (NIMAX=4096,NPMAX=16,NB6N1=1024)\$/+      PARAMETER (NIMAX=$2,NPMAX=16,NB6N1=$3)/" \
        -e '/^+.*CALL GPUNB_REGF_START(/s/LMAX,NBMAX)$/LMAX,NNBMAX)/' \
        "$here/intgrt-resident.patch" > "$1/intgrt-resident.patch"
    if [ "$(grep -c "^+      PARAMETER (NIMAX=$2,NPMAX=16,NB6N1=$3)\$" "$1/intgrt-resident.patch")" -ne 1 ] ||
       ! grep -q '^+.*CALL GPUNB_REGF_START(.*LMAX,NNBMAX)$' "$1/intgrt-resident.patch" ||
       grep '^+.*CALL GPUNB_REGF_START(' "$1/intgrt-resident.patch" | grep -qv 'LMAX,NNBMAX)$'; then
        echo "FAIL: the fourth case's edits no longer fit intgrt-resident.patch (its NIMAX line or a GPUNB_REGF_START call changed)"
        exit 1
    fi
    if ! "$1/build-nbody6" --nbody6 "$NBODY6_DIR" --builddir "$builddir" --out "$1/build" \
            --nmax 4010 --lmax 200 --resident > "$1/build-nbody6.log" 2>&1; then
        echo "FAIL: build-nbody6 --resident with the scratch patch in $1 failed (log: $1/build/build.log)"
        exit 1
    fi
}
for run in chunks:300:100 whole:4096:4096; do
    IFS=: read -r name nimax n1 <<< "$run"
    scratch_patch "$work/patch-$name" "$nimax" "$n1"
    if ! NB6ACCEL_GPUNB=cpu "$here/run-plummer" --n 4000 --tcrit 2 --threads 2 \
            --binary "$work/patch-$name/build/bin/nbody6" --dir "$work/run-4k-$name"; then
        echo "FAIL: the 4k run '$name' failed (see $work/run-4k-$name)"
        exit 1
    fi
    printed "$work/run-4k-$name" > "$work/printed-4k-$name"
done
overflows=$(grep -c 'OVERFLOW!' "$work/run-4k-chunks/fort.41" || true)
if [ "$overflows" -lt 100 ] || [ "$(grep -c 'NSTEPS' "$work/printed-4k-chunks")" -lt 2 ]; then
    echo "FAIL: the 4k run with small chunks reported $overflows list overflows (expected thousands) or no T = 2 line (see $work/run-4k-chunks)"
    exit 1
fi
if ! cmp -s "$work/printed-4k-whole" "$work/printed-4k-chunks"; then
    echo "FAIL: with chunks of 100 and 300 bodies the 4k run printed other steps, energies or counters than with one chunk per block:"
    diff "$work/printed-4k-whole" "$work/printed-4k-chunks" | head -n 20
    exit 1
fi
echo "PASS: N = 4000 to T = 2 with $overflows list overflows: chunks of 100 and 300 bodies, two in flight, print the same $(wc -l < "$work/printed-4k-chunks") step, energy and counter lines as one chunk per block"
