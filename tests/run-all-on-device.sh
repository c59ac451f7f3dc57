#!/bin/bash
# run-all-on-device.sh -- one device call for a session's measurements: the
# CUDA back-end's tests and benchmark (tests/gpu/run-on-device.sh, MODE=short),
# the Plummer driver (tests/plummer/run-on-device.sh) and, where .nbody6 is
# carried, NBODY6 on these libraries (nbody6_patch/run-on-device.sh), each
# with its share of the call's time (device time is scarce, and every call
# starts a bare machine).
# With the device tool: ./bootstrap here, then
#   run(command="OUT=$OUT bash tests/run-all-on-device.sh", kind="nvidia-h100-x1",
#       carry=[".devtools", ".nbody6", "configure", "Makefile.in", "aclocal.m4",
#              "config.h.in", "build-aux", "m4"])
# Settings: GPU_MODE (short), PLUMMER_SIZES (65536), PLUMMER_BUDGET (140 s), NBODY6_RUNS
# ("64k-gpu:65536:cuda:150"), SKIP="gpu plummer nbody6" (any of them).
set -u
OUT=${OUT:-/tmp/nb6-all-out}
SKIP=${SKIP:-}
mkdir -p "$OUT"
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/all.txt"; }
skipped() { case " $SKIP " in *" $1 "*) return 0 ;; esac; return 1; }

if ! skipped gpu; then
  mkdir -p "$OUT/gpu"
  MODE=${GPU_MODE:-short} OUT="$OUT/gpu" BUILD=/tmp/b-gpunb-cuda timeout 260 bash tests/gpu/run-on-device.sh \
    >"$OUT/gpu/console.log" 2>&1
  say "gpu: rc=$?"
fi
if ! skipped plummer; then
  mkdir -p "$OUT/plummer"
  pb=${PLUMMER_BUDGET:-140}
  OUT="$OUT/plummer" PLUMMER_SIZES=${PLUMMER_SIZES:-65536} PLUMMER_BUDGET=$pb \
    timeout $(( pb + 60 )) bash tests/plummer/run-on-device.sh >"$OUT/plummer/console.log" 2>&1
  say "plummer: rc=$?"
fi
if ! skipped nbody6 && [ -d .nbody6/GPU2 ]; then
  mkdir -p "$OUT/nbody6"
  OUT="$OUT/nbody6" POLICIES=active RUNS=${NBODY6_RUNS:-"64k-gpu:65536:cuda:150"} BUDGET_S=${NBODY6_BUDGET:-230} \
    timeout 260 bash nbody6_patch/run-on-device.sh >"$OUT/nbody6/console.log" 2>&1
  say "nbody6: rc=$?"
fi
# the summaries in one place
for f in "$OUT"/gpu/summary.txt "$OUT"/plummer/plummer-device.log "$OUT"/nbody6/summary.txt; do
  [ -f "$f" ] && { echo "==== $f"; tail -n 40 "$f"; } >>"$OUT/all.txt"
done
say "done"
