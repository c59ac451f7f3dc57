#!/usr/bin/env bash
# run-on-device.sh: on the GPU machine, from the repository root of a copy
# that carries .nbody6 (an NBODY6 tree) and .devtools (gfortran, see
# .devtools/device-fortran.sh), in one go:
#   1. build nb6accel with CUDA (configure, make) in /tmp; that machine has
#      no libtool, so run ./bootstrap here and carry the generated build
#      system too: carry [".devtools", ".nbody6", "configure", "Makefile.in",
#      "aclocal.m4", "config.h.in", "build-aux", "m4"] (./bootstrap runs
#      there only where configure is missing: a libtoolize without its
#      aclocal macros, on some lent machines, broke the carried tree);
#   2. build NBODY6 against it with build-nbody6 (NMAX 140000, LMAX 600);
#   3. pick how OpenMP threads wait (short 4k runs, see POLICIES below),
#      then time the Plummer test with 16 threads: 64k and 128k on the GPU
#      back-end, 16k on the CPU back-end;
# $OUT gets summary.txt (what it printed) and nbody6-logs.tar.gz (every log;
# the device hands back at most 8 files).  Each step gets what is left of a
# fixed budget (BUDGET_S, default 540 s), so the whole fits in one device
# call; a run cut short is reported as such.
set -u
root=$PWD
OUT=${OUT:-/tmp/nbody6-device-out}
mkdir -p "$OUT"
logs=$(mktemp -d /tmp/nbody6-device-logs.XXXXXX)
: > "$OUT/summary.txt"
trap 'cp "$OUT/summary.txt" "$logs/"; tar -czf "$OUT/nbody6-logs.tar.gz" -C "$logs" .' EXIT
budget=${BUDGET_S:-540}
t0=$(date +%s)
left() { echo $(( budget - ($(date +%s) - t0) )); }
log() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/summary.txt"; }

[ -d .nbody6/GPU2 ] || { log "no .nbody6 NBODY6 tree in $root (carry it)"; exit 1; }
# gfortran from .devtools, linking the shared libgomp (see tests/device-setup.sh).
# shellcheck disable=SC1091
. tests/device-setup.sh > "$logs/devtools.log" 2>&1
command -v gfortran >/dev/null 2>&1 || { log "gfortran setup failed (see devtools.log)"; exit 1; }
log "$(cat "$logs/devtools.log" | tail -n 1)"
jobs=$(nproc)
{ nvidia-smi; lscpu; gfortran --version | head -n 1; nvcc --version | tail -n 2; } > "$logs/machine.txt" 2>&1
log "machine: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1), $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1)"
# Does the machine give 16 CPUs' worth right now, and how much does its host
# take (steal)?  Checked at the start and at the end.
stat_steal() { awk '/^cpu / { print $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }
steal0=$(stat_steal)
if gcc -O2 -fopenmp nbody6_patch/omp-scaling-check.c -o /tmp/omp-scaling-check 2> "$logs/omp-scaling-check.log"; then
    /tmp/omp-scaling-check "$(nproc)" wake > "$logs/omp-check.txt" 2>&1
    while read -r line; do log "$line"; done < "$logs/omp-check.txt"
    for policy in active passive; do
        OMP_WAIT_POLICY=$policy /tmp/omp-scaling-check "$(nproc)" wake 2>&1 | tail -n 2 |
            sed "s/^/$policy: /" > "$logs/omp-check-$policy.txt"
        while read -r line; do log "$line"; done < "$logs/omp-check-$policy.txt"
    done
fi
# (The device tool's copy may carry an older .git than the work tree: pass
# NB6_COMMIT from the machine that called it.)
log "nb6accel commit: ${NB6_COMMIT:-$(git log -1 --format='%h %s' 2>/dev/null || echo unknown)}"

# 1. nb6accel, in a build directory of this source tree's own: configured
# again for another tree (an old worktree, for an A/B), a shared one kept the
# first tree's objects, newer than the other's sources, and linked them.
key=$(printf %s "$root" | cksum | cut -d' ' -f1)
b=/tmp/nb6accel-build-$key
if [ ! -x configure ]; then
    boot=./bootstrap
else  # carried generated files: keep make from re-running the autotools
    boot=:
    touch aclocal.m4; sleep 1; touch configure Makefile.in; sleep 1; touch config.h.in
fi
if ! { $boot && mkdir -p "$b" && cd "$b" &&
       "$root/configure" --with-cuda --with-cuda-arch=90 CFLAGS="-O3 -march=native" &&
       make -j"$jobs"; } > "$logs/nb6accel-build.log" 2>&1; then
    cd "$root"; tail -n 40 "$logs/nb6accel-build.log"; log "nb6accel build FAILED"; exit 1
fi
cd "$root"
grep -A7 'will build' "$logs/nb6accel-build.log" | tee -a "$OUT/summary.txt"
log "nb6accel built"

# 2. NBODY6
nb=/tmp/nbody6-nb6accel-$key
if ! nbody6_patch/build-nbody6 --nbody6 "$root/.nbody6" --builddir "$b" --out "$nb" -j "$jobs" \
        --nmax 140000 --lmax 600 > "$logs/build-nbody6.log" 2>&1; then
    cat "$logs/build-nbody6.log"; cp "$nb/build.log" "$logs/nbody6-build.log" 2>/dev/null
    log "NBODY6 build FAILED"; exit 1
fi
cp "$nb/build.log" "$logs/nbody6-build.log"; cp "$nb/nbody6-edits.diff" "$logs/"
log "NBODY6 built ($(tail -n 3 "$logs/build-nbody6.log" | head -n 1))"

# CPU time each thread of process $1 got over $2 seconds (percent of one
# CPU, busiest first) and their involuntary context switches: tells threads
# that wait (low %) from threads that share CPUs (switches) from threads
# that spin (100 % each).
thread_cpu_share() {
    local pid=$1 dt=$2 a b
    snap() { for t in /proc/"$pid"/task/*; do
                 echo "${t##*/} $(awk '{ print $14 + $15 }' "$t/stat" 2>/dev/null) $(sed -n 's/^nonvoluntary_ctxt_switches:[[:space:]]*//p' "$t/status" 2>/dev/null)"
             done; }
    a=$(snap); sleep "$dt"; b=$(snap)
    join <(sort <<< "$a") <(sort <<< "$b") |
        awk -v dt="$dt" -v hz="$(getconf CLK_TCK)" '{ print 100 * ($4 - $2) / hz / dt, $5 - $3 }' |
        sort -rn | awk -v dt="$dt" '{ n++; tot += $1; sw += $2; list = list sprintf(" %.0f", $1) }
            END { printf "%d threads, %.0f %% of a CPU in all, %d involuntary switches in %s s; per thread:%s", n, tot, sw, dt, list }'
}

# PERF_RUN=name (one of RUNS) with PERF_TAR (a perf tarball carried in
# .devtools, tests/plummer/profile-on-device.sh --pack): perf samples that
# run from PERF_AT seconds after it started (default 60: past NBODY6's
# start-up at 64k; "T2": from the ADJUST line of TIME = 2 on) for
# PERF_SECONDS (default 15), all threads, and the
# summary gets the flat profile by library and function: which of NBODY6's
# own time is its Fortran and which our libraries' calls from its serial
# loops (the libraries' statistics time only their force calls).
# PERF_CALLERS=1 records the master thread alone, with call graphs (dwarf:
# 8 KiB of stack a sample), and prints its callers.
perf_bin=
if [ -n "${PERF_RUN:-}" ] && [ -f "${PERF_TAR:-}" ]; then
    mkdir -p /tmp/perf && tar -C /tmp/perf -xJf "$PERF_TAR" && perf_bin=/tmp/perf/perf
fi
perf_sample() {
    local name=$1 pid=$2
    [ -n "$perf_bin" ] || { log "$name: no perf (PERF_TAR)"; return; }
    case ${PERF_AT:-60} in
    T*) # from the ADJUST line of that model time on (start-up differs by machine)
        until awk -v w="${PERF_AT#T}" '$1 + 0 >= w + 0 { f = 1 } END { exit !f }' \
                "/tmp/run-$name/adjust-times" 2>/dev/null; do
            kill -0 "$pid" 2>/dev/null || { log "$name: ended before TIME = ${PERF_AT#T}"; return; }
            sleep 0.2
        done ;;
    *) sleep $(( ${PERF_AT:-60} - 5 )) ;;
    esac
    local whom=(-p "$pid") what="all threads"
    [ -z "${PERF_CALLERS:-}" ] || { whom=(--call-graph dwarf,8192 -t "$pid"); what="the master thread with call graphs"; }
    LD_LIBRARY_PATH=/tmp/perf/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        "$perf_bin" record -F 999 -e cpu-clock "${whom[@]}" \
        -o "/tmp/perf-$name.data" -- sleep "${PERF_SECONDS:-15}" > "$logs/perf-$name.log" 2>&1
    { echo "== perf of $name, ${PERF_SECONDS:-15} s from ${PERF_AT:-60} s (cpu-clock, $what)"
      LD_LIBRARY_PATH=/tmp/perf/lib "$perf_bin" report -i "/tmp/perf-$name.data" --stdio --no-children \
          --sort dso,symbol -g none 2>/dev/null | grep -v -e '^#' -e '^$' | head -n 60
      echo "== by library"
      LD_LIBRARY_PATH=/tmp/perf/lib "$perf_bin" report -i "/tmp/perf-$name.data" --stdio --no-children \
          --sort dso -g none 2>/dev/null | grep -v -e '^#' -e '^$' | head -n 12
      echo "== by thread"
      LD_LIBRARY_PATH=/tmp/perf/lib "$perf_bin" report -i "/tmp/perf-$name.data" --stdio --no-children \
          --sort pid -g none 2>/dev/null | grep -v -e '^#' -e '^$' | head -n 20
      # The master thread alone: the serial path that sets the wall time.
      # From perf script, split by thread here (perf report --tid gave the
      # whole process's figures for some symbols: session 68); a symbol
      # that the workers never hit is the master's serial work.
      echo "== the master thread (tid $pid): % of its samples, by library and function; * = no worker sample there (not marked with PERF_CALLERS, which samples the master alone)"
      LD_LIBRARY_PATH=/tmp/perf/lib "$perf_bin" script -i "/tmp/perf-$name.data" -F tid,ip,sym,dso 2>/dev/null |
          awk -v m="$pid" '
              function count(line,   d, f) { d = line; sub(/.*\(/, "", d); sub(/\).*/, "", d); sub(/.*\//, "", d)
                  split(line, f, " "); if (tid == m) { c[d " " f[2]]++; n++ } else { w[d " " f[2]]++; nw++ } }
              /^ *[0-9]+ *$/ { tid = $1; want = 1; next }
              /^ *[0-9]+ / { tid = $1; line = $0; sub(/^ *[0-9]+ +/, "", line); count(line); next }
              want && NF { count($0); want = 0 }
              END { for (k in c) printf "%6.2f %%  %s%s\n", 100 * c[k] / n, k, (nw == 0 || k in w) ? "" : " *" }' |
          sort -rn | head -n 45
      # PERF_CALLERS=1: for the master's samples in a library it calls
      # (libgomp's barriers, libcuda's waits, libc, the clock in vdso),
      # the first caller outside it, with the offset of the call: which
      # parallel region it waits in, which copy, which clock reads.
      if [ -n "${PERF_CALLERS:-}" ]; then
          echo "== the master thread's samples in libgomp, libcuda, libc, vdso and the kernel, by first caller outside"
          LD_LIBRARY_PATH=/tmp/perf/lib "$perf_bin" script -i "/tmp/perf-$name.data" -F tid,ip,sym,symoff,dso 2>/dev/null |
              awk -v m="$pid" '
                  function lib(line,   d) { d = line; sub(/.*\(/, "", d); sub(/\).*/, "", d); sub(/.*\//, "", d); return d }
                  function leafy(d) { return d ~ /^(libgomp|libcuda|libc\.|libcudart|\[vdso\]|\[kernel)/ }
                  /^ *[0-9]+ *$/ || /^[0-9]+ / { tid = $1; depth = 0; leaf = ""; done = 0; next }
                  /^$/ { next }
                  tid == m && !done { d = lib($0); if (d == "inlined") next; depth++
                      if (depth == 1) { if (!leafy(d)) { done = 1; next } leaf = d; next }
                      if (!leafy(d)) { f = $2; c[leaf " <- " f " (" d ")"]++; n++; done = 1 } }
                  END { for (k in c) printf "%6d  %s\n", c[k], k }' |
              sort -rn | head -n 60
      fi
    } > "$logs/perf-$name.txt" 2>&1
    cat "$logs/perf-$name.txt" >> "$OUT/summary.txt"
}

# 3. Plummer timings: name N backend cap_s
threads=16
plummer() {
    local name=$1 n=$2 backend=$3 cap=$4 tcrit=${5:-4} dump=${6:-} t rc
    t=$(left); t=$(( t - 15 < cap ? t - 15 : cap ))
    if [ "$t" -lt 20 ]; then log "$name: skipped (no time left)"; return; fi
    log "$name: N=$n backend=$backend, ${dump:+from $dump }to T=$tcrit, limit ${t} s"
    timeout "$t" nbody6_patch/run-plummer --n "$n" --backend "$backend" --threads "$threads" --tcrit "$tcrit" \
        ${dump:+--restart "$dump"} --binary "$nb/bin/nbody6" --dir "/tmp/run-$name" > "$logs/plummer-$name.txt" 2>&1 &
    local job=$! pid= k cpus=
    # Which CPUs NBODY6's threads run on (seen: 16 threads no faster than 8,
    # CPU force at a third of one core's speed): three samples, 1 s apart.
    for k in 1 2 3 4 5 6 7 8 9 10; do
        pid=$(pgrep -n -x nbody6) && break; sleep 0.5
    done
    if [ -n "$pid" ]; then
        sleep 3
        log "$name: $(thread_cpu_share "$pid" 2)"
        log "$name: $(awk '/^Rss:/ { r = $2 } /^AnonHugePages:/ { h = $2 }
                          END { printf "resident %d MiB, of it on huge pages %d MiB", r / 1024, h / 1024 }' \
                          "/proc/$pid/smaps_rollup" 2>/dev/null)"
        log "$name: busiest processes: $(ps -eo pcpu=,comm= --sort=-pcpu 2>/dev/null | head -n 5 | awk '{ printf "%s %s%%; ", $2, $1 }')"
        [ -n "${PERF_RUN:-}" ] && [ "$name" = "$PERF_RUN" ] && perf_sample "$name" "$pid" &
    fi
    wait "$job"
    rc=$?
    wait # the perf sample, if one runs
    for f in input stdout.log stderr.log adjust-times summary; do
        [ -f "/tmp/run-$name/$f" ] && cp "/tmp/run-$name/$f" "$logs/$name.$f"
    done
    if [ "$rc" -eq 124 ]; then
        log "$name: TIMED OUT after $t s; ADJUST lines reached (TIME, wall s since start):"
        sed 's/^/    /' "/tmp/run-$name/adjust-times" 2>/dev/null | tee -a "$OUT/summary.txt"
        grep 'ADJUST:' "/tmp/run-$name/stdout.log" 2>/dev/null | cut -c1-90 | tee -a "$OUT/summary.txt"
    fi
    grep -E 'wall_|de_|detot_4' "/tmp/run-$name/summary" 2>/dev/null | tr '\n' ' ' | sed "s/^/  $name: /" | tee -a "$OUT/summary.txt"
    echo | tee -a "$OUT/summary.txt"
    sed -n '/NSTEPS/p; /library statistics/,$p' "$logs/plummer-$name.txt" | tail -n 16 | tee -a "$OUT/summary.txt"
}
# How libgomp's idle threads wait decides much here: NBODY6 opens a parallel
# region (its own or ours) several times per block step, and on a virtual
# machine waking sleeping threads is slow, while spinning threads hurt where
# the CPUs are shared.  A short 4k run (GPU back-end unless PROBE_BACKEND=cpu,
# to T = 2) per setting
# of POLICIES; the fastest is used for the timing runs (all are reported).
# A policy NAME@T also sets the number of threads (default 16).
log "environment: $(env | grep -E '^(OMP|GOMP|KMP)_' | tr '\n' ' ')$(grep Cpus_allowed_list /proc/self/status)"
set_policy() {
    unset OMP_WAIT_POLICY OMP_PROC_BIND OMP_PLACES GOMP_SPINCOUNT GOMP_CPU_AFFINITY
    threads=16
    case $1 in *@*) threads=${1#*@} ;; esac
    case ${1%@*} in
    default) ;;
    active|passive) export OMP_WAIT_POLICY=${1%@*} ;;
    active-bound) export OMP_WAIT_POLICY=active OMP_PROC_BIND=close OMP_PLACES=cores ;;
    esac
}
best= best_t=
for p in ${POLICIES-default active passive passive@8}; do
    set_policy "$p"
    plummer "probe-4k-$p" 4096 "${PROBE_BACKEND:-cuda}" 40 2 > /dev/null
    t=$(sed -n 's/^wall_0_2=//p' "/tmp/run-probe-4k-$p/summary" 2>/dev/null)
    log "policy $p: 4k t 0..2 = ${t:-?} s"
    if [ -n "$t" ] && { [ -z "$best" ] || awk -v a="$t" -v b="$best_t" 'BEGIN { exit !(a < b) }'; }; then
        best=$p best_t=$t
    fi
done
set_policy "${best:-default}"
log "OpenMP for the timing runs: ${best:-default} ($threads threads, OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset} OMP_PROC_BIND=${OMP_PROC_BIND:-unset})"

# RUNS: name:N:backend:cap_s[:tcrit[:threads]] ..., in order of importance
# (the budget may end the list early); tcrit defaults to 4 (0: only the
# initialisation, FPOLY0, whose library statistics are the first block of
# stderr), threads to the policy's.
run_list() {
    local r name n backend cap tc th policy_threads
    for r in $1; do
        IFS=: read -r name n backend cap tc th <<< "$r"
        policy_threads=$threads
        threads=${th:-$threads}
        plummer "$name" "$n" "$backend" "$cap" "${tc:-4}"
        threads=$policy_threads
    done
}
# The --resident build (intgrt-resident.patch) in $nb-resident, once for
# AB_RESIDENT and RESIDENT_RUNS together.
resident_built=
build_resident() {
    [ -n "$resident_built" ] && return 0
    nbody6_patch/build-nbody6 --nbody6 "$root/.nbody6" --builddir "$b" --out "$nb-resident" -j "$jobs" \
        --nmax 140000 --lmax 600 --resident > "$logs/build-nbody6-resident.log" 2>&1 && resident_built=1
}
# AB_RESIDENT=N:cap:rounds: the plain and the --resident build alternately,
# `rounds` times each at N (the lent machines drift, so the two are compared
# only run against run); set RUNS=" " to run nothing else before.
if [ -n "${AB_RESIDENT:-}" ]; then
    IFS=: read -r ab_n ab_cap ab_rounds <<< "$AB_RESIDENT"
    if build_resident; then
        nb_plain=$nb
        for r in $(seq "${ab_rounds:-2}"); do
            nb=$nb_plain; plummer "ab-plain-$r" "$ab_n" cuda "$ab_cap"
            nb=$nb_plain-resident; plummer "ab-resident-$r" "$ab_n" cuda "$ab_cap"
        done
        nb=$nb_plain
    else
        log "resident build FAILED (build-nbody6-resident.log)"
    fi
fi
# AB_ENV=N:cap:rounds:VAR=value: the plain build (with AB_ENV_BUILD=resident
# the --resident one) alternately without and with VAR=value in the
# environment (e.g. NB6ACCEL_GPUIRR_DEVICE=off, or LD_PRELOAD=<path without
# colons> of another OpenMP runtime), `rounds` times each at N, on the GPUNB
# back-end AB_BACKEND (default cuda).  Even rounds run the "set" run first
# (the machines' clock drifts through a call, and a variant always run second
# took that drift as its own in session 52); AB_ENV_ORDER=fixed runs "unset"
# first in every round, as before session 62.
if [ -n "${AB_ENV:-}" ]; then
    IFS=: read -r ab_n ab_cap ab_rounds ab_set <<< "$AB_ENV"
    nb_plain=$nb ab_rounds=${ab_rounds:-2}
    if [ "${AB_ENV_BUILD:-plain}" = resident ]; then
        if build_resident; then nb=$nb-resident
        else log "AB_ENV: resident build FAILED (build-nbody6-resident.log)"; ab_rounds=0; fi
    fi
    ab_env_run() {  # $1: unset or set, $2: the round
        if [ "$1" = unset ]; then
            plummer "ab-env-unset-$2" "$ab_n" "${AB_BACKEND:-cuda}" "$ab_cap"
            return
        fi
        env_saved=$(env | grep "^${ab_set%%=*}=" || true)
        export "${ab_set?}"
        plummer "ab-env-set-$2" "$ab_n" "${AB_BACKEND:-cuda}" "$ab_cap"
        unset "${ab_set%%=*}"
        [ -n "$env_saved" ] && export "${env_saved?}"
    }
    for r in $(seq "$ab_rounds"); do
        if [ $((r % 2)) -eq 0 ] && [ "${AB_ENV_ORDER:-alternate}" != fixed ]; then
            ab_env_run set "$r"; ab_env_run unset "$r"
        else
            ab_env_run unset "$r"; ab_env_run set "$r"
        fi
    done
    nb=$nb_plain
fi
# AB_BINARY=dir:N:cap:rounds: the plain build alternately with the NBODY6
# built in dir (dir/bin/nbody6; e.g. an older nb6accel tree's, built by
# running this script from that tree with RUNS=" " POLICIES=" " first: its
# NBODY6 links that tree's libraries by rpath), `rounds` times each at N,
# on the GPUNB back-end AB_BACKEND (default cuda).
if [ -n "${AB_BINARY:-}" ]; then
    IFS=: read -r ab_dir ab_n ab_cap ab_rounds <<< "$AB_BINARY"
    if [ -x "$ab_dir/bin/nbody6" ]; then
        nb_plain=$nb
        for r in $(seq "${ab_rounds:-2}"); do
            nb=$ab_dir; plummer "ab-other-$r" "$ab_n" "${AB_BACKEND:-cuda}" "$ab_cap"
            nb=$nb_plain; plummer "ab-this-$r" "$ab_n" "${AB_BACKEND:-cuda}" "$ab_cap"
        done
    else
        log "AB_BINARY: no $ab_dir/bin/nbody6"
    fi
fi
# AB_PATCH=files:N:cap:rounds: the --resident build against --resident builds
# made with the patches in files (comma-separated; each instead of this
# tree's intgrt-resident.patch, e.g. an older commit's: git show
# OLD:nbody6_patch/intgrt-resident.patch > .devtools/old.patch), all against
# this tree's libraries, `rounds` times each at N, the order rotating by round
# (the machines' clock drifts through a call), on the GPUNB back-end
# AB_BACKEND (default cuda).  AB_RESTART=1: the --resident build first runs
# to T = 2 once and every A/B run continues from its dump to T = 4
# (run-plummer --restart; wall_restart): no start-up per run (100-130 s at
# 128k), so several rounds fit in one call.
if [ -n "${AB_PATCH:-}" ]; then
    IFS=: read -r ab_files ab_n ab_cap ab_rounds <<< "$AB_PATCH"
    nb_plain=$nb ab_builds=this ab_ok=1 k=0
    build_resident || ab_ok=
    IFS=, read -r -a ab_list <<< "$ab_files"
    for ab_file in "${ab_list[@]}"; do
        k=$((k + 1))
        other=$(mktemp -d /tmp/nb6-other-patch.XXXXXX)
        cp nbody6_patch/build-nbody6 nbody6_patch/nbody6-gpu2.mk "$other/"
        if cp "$ab_file" "$other/intgrt-resident.patch" &&
           "$other/build-nbody6" --nbody6 "$root/.nbody6" --builddir "$b" --out "$nb_plain-other-patch-$k" \
               -j "$jobs" --nmax 140000 --lmax 600 --resident > "$logs/build-nbody6-other-patch-$k.log" 2>&1; then
            ab_builds="$ab_builds other-$k"
            log "AB_PATCH: other-$k is $ab_file"
        else
            ab_ok=
        fi
    done
    ab_dump=
    if [ -n "$ab_ok" ] && [ "${AB_RESTART:-0}" = 1 ]; then
        nb=$nb_plain-resident; plummer "ab-patch-to-t2" "$ab_n" "${AB_BACKEND:-cuda}" "$ab_cap" 2
        if [ -s /tmp/run-ab-patch-to-t2/fort.2 ]; then
            ab_dump=/tmp/ab-patch-dump-t2
            mv /tmp/run-ab-patch-to-t2/fort.2 "$ab_dump"
        else
            log "AB_PATCH: no dump at T = 2 (/tmp/run-ab-patch-to-t2/fort.2)"; ab_ok=
        fi
    fi
    if [ -n "$ab_ok" ]; then
        read -r -a ab_order <<< "$ab_builds"
        for r in $(seq "${ab_rounds:-2}"); do
            for v in "${ab_order[@]}"; do
                case $v in this) nb=$nb_plain-resident ;; *) nb=$nb_plain-${v/other/other-patch} ;; esac
                plummer "ab-patch-$v-$r" "$ab_n" "${AB_BACKEND:-cuda}" "$ab_cap" 4 "$ab_dump"
            done
            ab_order=("${ab_order[@]:1}" "${ab_order[0]}")
        done
    else
        log "AB_PATCH: a --resident build or the dump FAILED (build-nbody6-resident.log, build-nbody6-other-patch-*.log)"
    fi
    nb=$nb_plain
fi
# AB_OPTS=opts:N:cap:rounds[:plain]: the --resident build (with ":plain",
# the plain one) alternately with one built with the build-nbody6 options
# opts as well (commas for spaces, e.g. --march,native), `rounds`
# times each at N, on the GPUNB back-end AB_BACKEND (default cuda).
if [ -n "${AB_OPTS:-}" ]; then
    IFS=: read -r ab_opts ab_n ab_cap ab_rounds ab_base <<< "$AB_OPTS"
    if [ "${ab_base:-resident}" = plain ]; then ab_mode= ab_this=$nb; else ab_mode=--resident ab_this=$nb-resident; fi
    # shellcheck disable=SC2046
    if { [ -n "$ab_mode" ] && ! build_resident; } ||
       ! nbody6_patch/build-nbody6 --nbody6 "$root/.nbody6" --builddir "$b" --out "$nb-opts" -j "$jobs" \
           --nmax 140000 --lmax 600 $ab_mode $(echo "$ab_opts" | tr ',' ' ') > "$logs/build-nbody6-opts.log" 2>&1; then
        log "AB_OPTS: a build FAILED (build-nbody6-resident.log, build-nbody6-opts.log)"
    else
        log "AB_OPTS: built with ${ab_mode:-(plain)} $ab_opts ($(tail -n 3 "$logs/build-nbody6-opts.log" | head -n 1))"
        nb_plain=$nb
        for r in $(seq "${ab_rounds:-2}"); do
            nb=$nb_plain-opts; plummer "ab-opts-$r" "$ab_n" "${AB_BACKEND:-cuda}" "$ab_cap"
            nb=$ab_this; plummer "ab-base-$r" "$ab_n" "${AB_BACKEND:-cuda}" "$ab_cap"
        done
        nb=$nb_plain
    fi
fi
# AB_LIBS=dir:N:cap:rounds[:plain]: the --resident build (with ":plain", the
# plain one) alternately on another tree's libraries and on this tree's,
# `rounds` times each at N, on the GPUNB back-end AB_BACKEND (default cuda).
# dir is a bootstrapped source tree (an older commit's: git archive OLD |
# tar -x -C dir, then ./bootstrap there; carried); its libraries are built
# here with the same configure, and one NBODY6 binary runs on either through
# LD_LIBRARY_PATH, which NBODY6's RUNPATH lets win (checked with ldd first):
# a change inside the libraries judged without a second NBODY6 build.
# AB_LIBS_FLAGS: the other libraries' CFLAGS (default "-O3 -march=native", as
# this tree's; "default": configure's own), so that dir = . judges the flags.
if [ -n "${AB_LIBS:-}" ]; then
    IFS=: read -r ab_dir ab_n ab_cap ab_rounds ab_base <<< "$AB_LIBS"
    ab_libs=/tmp/nb6accel-ab-libs
    nb_plain=$nb ab_nb=
    if [ "${ab_base:-}" = plain ]; then ab_nb=$nb
    elif build_resident; then ab_nb=$nb-resident
    else log "AB_LIBS: resident build FAILED (build-nbody6-resident.log)"; fi
    if [ -n "$ab_nb" ]; then
        ab_src=$(cd "$ab_dir" && pwd)
        ab_flags=${AB_LIBS_FLAGS:--O3 -march=native}
        ab_flag_args=(CFLAGS="$ab_flags")
        [ "$ab_flags" = default ] && ab_flag_args=()
        log "AB_LIBS: the other libraries from $ab_src, CFLAGS: $ab_flags"
        # afresh, as in step 1: make keeps objects newer than another tree's sources
        if ! { rm -rf "$ab_libs" && mkdir -p "$ab_libs" && cd "$ab_libs" &&
               "$ab_src/configure" --with-cuda --with-cuda-arch=90 "${ab_flag_args[@]}" &&
               make -j"$jobs"; } > "$logs/nb6accel-ab-libs-build.log" 2>&1; then
            log "AB_LIBS: build of $ab_dir FAILED (nb6accel-ab-libs-build.log)"; ab_nb=
        fi
        cd "$root"
    fi
    if [ -n "$ab_nb" ]; then
        ld_saved=${LD_LIBRARY_PATH:-}
        ld_other=$ab_libs/.libs${ld_saved:+:$ld_saved}
        picked=$(LD_LIBRARY_PATH=$ld_other ldd "$ab_nb/bin/nbody6" | grep -c "=> $ab_libs/.libs/libgpu")
        log "AB_LIBS: with LD_LIBRARY_PATH=$ab_libs/.libs, NBODY6 loads $picked of its 2 nb6accel libraries from there"
        if [ "$picked" -eq 2 ]; then
            nb=$ab_nb
            for r in $(seq "${ab_rounds:-2}"); do
                export LD_LIBRARY_PATH=$ld_other
                plummer "ab-libs-other-$r" "$ab_n" "${AB_BACKEND:-cuda}" "$ab_cap"
                export LD_LIBRARY_PATH=$ld_saved
                plummer "ab-libs-this-$r" "$ab_n" "${AB_BACKEND:-cuda}" "$ab_cap"
            done
            nb=$nb_plain
        fi
        [ -n "$ld_saved" ] || unset LD_LIBRARY_PATH
    fi
fi
run_list "${RUNS:-64k-gpu:65536:cuda:150 128k-gpu:131072:cuda:240 16k-cpu:16384:cpu:120}"

# RESIDENT_RUNS (same form as RUNS): the same runs with NBODY6 built with
# --resident (intgrt-resident.patch: GPUNB_SET_JP / GPUNB_PREDICT /
# GPUNB_REGF_START..FINISH in NBODY6's loop).
if [ -n "${RESIDENT_RUNS:-}" ]; then
    if build_resident; then
        nb_plain=$nb; nb=$nb-resident
        run_list "$RESIDENT_RUNS"
        nb=$nb_plain
    else
        log "resident build FAILED (build-nbody6-resident.log)"
    fi
fi

# The same Fortran compiled for this CPU (-march=native instead of NBODY6's
# core2): does the Fortran side matter at 64k?  Only if time is left.
if [ -n "${NATIVE_RUN-64k-gpu-native:65536:cuda:120}" ] && [ "$(left)" -gt 120 ]; then
    if nbody6_patch/build-nbody6 --nbody6 "$root/.nbody6" --builddir "$b" --out "$nb-native" -j "$jobs" \
            --nmax 140000 --lmax 600 --march native > "$logs/build-nbody6-native.log" 2>&1; then
        nb=$nb-native
        IFS=: read -r name n backend cap <<< "${NATIVE_RUN-64k-gpu-native:65536:cuda:120}"
        plummer "$name" "$n" "$backend" "$cap"
    else
        log "native build FAILED (build-nbody6-native.log)"
    fi
fi
[ -x /tmp/omp-scaling-check ] && /tmp/omp-scaling-check "$(nproc)" | while read -r line; do log "$line"; done
set -- $steal0 $(stat_steal)
[ $# -eq 4 ] && log "CPU time taken by the host (steal) during this script: $(awk -v a="$1" -v b="$2" -v c="$3" -v d="$4" 'BEGIN { printf "%.1f %%", (d > b) ? 100 * (c - a) / (d - b) : 0 }')"
log "done"
