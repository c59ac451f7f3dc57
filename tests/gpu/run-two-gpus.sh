#!/bin/bash
# run-two-gpus.sh -- the several-GPU path on a machine with two or more GPUs
# (the device tool's nvidia-h200-x2): builds the CUDA back-end (and, where
# gfortran is there, the Fortran module and the Plummer driver), then
#   1. `make check` with GPU_LIST = all GPUs: every test, the GPU tests
#      (legacy and resident path, GPUIRR's copy) and the driver's, on
#      separate GPUs, not shares of one as `make check` does on one GPU;
#   2. the benchmark at NI = 1024 and NI = 64 on NJ = 1M and 128k with
#      GPU_LIST = one GPU and then all of them (the speed-up);
#   3. with gfortran, the Plummer driver at N = TWO_GPU_PLUMMER_N (default
#      65536), t = 0..4, resident path, on one GPU and on all (the several-GPU
#      path through the whole integration: its energy error and time).
# From the repository root (with the generated build system carried, as
# tests/gpu/run-on-device.sh says, and .devtools for gfortran):
#   bash tests/gpu/run-two-gpus.sh        (logs in $OUT or /tmp/gpunb-2gpu-out)
# TWO_GPU_LIST replaces "all GPUs" (e.g. "0 0": two shares of one GPU, the
# several-GPU path on a machine with one).
set -u
SRC=$(pwd)
OUT=${OUT:-/tmp/gpunb-2gpu-out}
B=${BUILD:-/tmp/b-gpunb-2gpu}
mkdir -p "$OUT" "$B"
. tests/device-setup.sh >/dev/null 2>&1
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
all=${TWO_GPU_LIST:-$(seq -s ' ' 0 $((ngpu - 1)))}
fortran=--disable-fortran
command -v gfortran >/dev/null 2>&1 && fortran=
plummer_n=${TWO_GPU_PLUMMER_N:-65536}
{
    nvidia-smi -L
    echo "== build (configure --with-cuda ${fortran:-with Fortran})"
    if [ ! -x configure ]; then ./bootstrap >/dev/null; fi
    (cd "$B" && "$SRC/configure" -q --with-cuda --with-cuda-arch=90 $fortran &&
        make -j"$(nproc)" >make.log 2>&1 && make -j"$(nproc)" check TESTS= >>make.log 2>&1 &&
        make tests/gpu/bench_gpunb >>make.log 2>&1) ||
        { tail -n 30 "$B/make.log"; echo "BUILD FAILED"; exit 1; }
    echo "== make check with GPU_LIST=\"$all\""
    (cd "$B" && GPU_LIST="$all" timeout 600 make -j8 check >check.log 2>&1; echo "make check: rc=$?")
    grep -E "^(PASS|FAIL|SKIP|ERROR):|^# (TOTAL|PASS|SKIP|FAIL|ERROR)" "$B/check.log"
    for t in tests/gpu/test_gpunb_cuda tests/gpu/test_gpunb_resident_cuda tests/gpu/test_gpuirr_device; do
        [ -f "$B/$t.log" ] || continue
        echo "-- $t"
        grep -E "GPU_LIST|GPUs?:|^relative errors|lists differ|FAIL|passed" "$B/$t.log" | head -n 12
    done
    for list in 0 "$all"; do
        echo "== bench_gpunb, GPU_LIST=\"$list\""
        GPU_LIST="$list" timeout 120 "$B/tests/gpu/bench_gpunb" --ni "64 1024" --nj "131072 1048576" 2>&1
    done
    if [ -z "$fortran" ] && [ -x "$B/tests/plummer/plummer_ac" ]; then
        export OMP_NUM_THREADS=$(nproc)
        for list in 0 "$all"; do
            echo "== Plummer driver N = $plummer_n, t = 0..4, -resident -gpu-irr 512, GPU_LIST=\"$list\", $OMP_NUM_THREADS threads"
            (cd "$B" && GPU_LIST="$list" timeout 240 ./tests/plummer/plummer_ac -n "$plummer_n" -resident \
                -gpu-irr 512 -progress 0 2>&1 | grep -E '^ +[0-9]+\.0000 |^# GPUNB|^# -gpu-irr|^Opened NBODY6|^  [A-Z]|^#      N|^ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]|^# rest|irregular force|STOPPED|rror')
        done
    fi
} 2>&1 | tee "$OUT/two-gpus.log"
