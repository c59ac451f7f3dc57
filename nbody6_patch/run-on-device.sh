#!/usr/bin/env bash
# run-on-device.sh: on the GPU machine, from the repository root of a copy
# that carries .nbody6 (an NBODY6 tree) and .devtools (gfortran, see
# .devtools/device-fortran.sh), in one go:
#   1. build nb6accel with CUDA (./bootstrap, configure, make) in /tmp;
#   2. build NBODY6 against it with build-nbody6 (NMAX 140000, LMAX 600);
#   3. time the Plummer test, OMP_NUM_THREADS=16: 64k and 128k on the GPU
#      back-end, 16k on the CPU back-end;
# everything it prints and every log goes to $OUT.  Each step gets what is
# left of a fixed budget (BUDGET_S, default 540 s), so the whole fits in one
# device call; a run cut short is reported as such.
set -u
root=$PWD
OUT=${OUT:-/tmp/nbody6-device-out}
mkdir -p "$OUT"
budget=${BUDGET_S:-540}
t0=$(date +%s)
left() { echo $(( budget - ($(date +%s) - t0) )); }
log() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/summary.txt"; }

[ -d .nbody6/GPU2 ] || { log "no .nbody6 NBODY6 tree in $root (carry it)"; exit 1; }
if ! command -v gfortran >/dev/null 2>&1; then
    # shellcheck disable=SC1091
    source .devtools/device-fortran.sh setup .devtools > "$OUT/devtools.log" 2>&1 ||
        { log "gfortran setup failed (see devtools.log)"; exit 1; }
fi
jobs=$(nproc)
{ nvidia-smi; lscpu; gfortran --version | head -n 1; nvcc --version | tail -n 2; } > "$OUT/machine.txt" 2>&1
log "machine: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1), $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1)"
log "nb6accel commit: $(git log -1 --format='%h %s' 2>/dev/null || echo unknown)"

# 1. nb6accel
b=/tmp/nb6accel-build
if ! { ./bootstrap && mkdir -p "$b" && cd "$b" && "$root/configure" --with-cuda &&
       make -j"$jobs"; } > "$OUT/nb6accel-build.log" 2>&1; then
    cd "$root"; tail -n 40 "$OUT/nb6accel-build.log"; log "nb6accel build FAILED"; exit 1
fi
cd "$root"
grep -A8 'will build' "$OUT/nb6accel-build.log" | tee -a "$OUT/summary.txt"
log "nb6accel built"

# 2. NBODY6
nb=/tmp/nbody6-nb6accel
if ! nbody6_patch/build-nbody6 --nbody6 "$root/.nbody6" --builddir "$b" --out "$nb" -j "$jobs" \
        --nmax 140000 --lmax 600 > "$OUT/build-nbody6.log" 2>&1; then
    cat "$OUT/build-nbody6.log"; cp "$nb/build.log" "$OUT/nbody6-build.log" 2>/dev/null
    log "NBODY6 build FAILED"; exit 1
fi
cp "$nb/build.log" "$OUT/nbody6-build.log"; cp "$nb/nbody6-edits.diff" "$OUT/"
log "NBODY6 built ($(tail -n 3 "$OUT/build-nbody6.log" | head -n 1))"

# 3. Plummer timings: name N backend cap_s
export OMP_NUM_THREADS=16
plummer() {
    local name=$1 n=$2 backend=$3 cap=$4 t rc
    t=$(left); t=$(( t - 15 < cap ? t - 15 : cap ))
    if [ "$t" -lt 20 ]; then log "$name: skipped (no time left)"; return; fi
    log "$name: N=$n backend=$backend, limit ${t} s"
    timeout "$t" nbody6_patch/run-plummer --n "$n" --backend "$backend" --threads 16 \
        --binary "$nb/bin/nbody6" --dir "/tmp/run-$name" > "$OUT/plummer-$name.txt" 2>&1
    rc=$?
    for f in input stdout.log stderr.log adjust-times summary; do
        [ -f "/tmp/run-$name/$f" ] && cp "/tmp/run-$name/$f" "$OUT/$name.$f"
    done
    [ "$rc" -eq 124 ] && log "$name: TIMED OUT after $t s"
    grep -E 'wall_|de_|detot_4' "/tmp/run-$name/summary" 2>/dev/null | tr '\n' ' ' | sed "s/^/  $name: /" | tee -a "$OUT/summary.txt"
    echo | tee -a "$OUT/summary.txt"
}
plummer 64k-gpu 65536 cuda 150
plummer 128k-gpu 131072 cuda 240
plummer 16k-cpu 16384 cpu 120
log "done"
