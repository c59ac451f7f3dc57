#!/bin/bash
# run-two-gpus.sh -- the several-GPU figure of the CUDA back-end, on a machine
# with two or more GPUs (the device tool's nvidia-h200-x2): builds the CUDA
# back-end, runs the GPU test once on all GPUs, then the benchmark at
# NI = 1024 and NI = 64 on NJ = 1M and 128k with GPU_LIST = one GPU and then
# all of them, and prints the speed-up.  From the repository root (with the
# generated build system carried, as tests/gpu/run-on-device.sh says):
#   bash tests/gpu/run-two-gpus.sh        (logs in $OUT or /tmp/gpunb-2gpu-out)
set -u
SRC=$(pwd)
OUT=${OUT:-/tmp/gpunb-2gpu-out}
B=${BUILD:-/tmp/b-gpunb-2gpu}
mkdir -p "$OUT" "$B"
. tests/device-setup.sh >/dev/null 2>&1
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
all=$(seq -s ' ' 0 $((ngpu - 1)))
{
    nvidia-smi -L
    if [ ! -x configure ]; then ./bootstrap >/dev/null; fi
    (cd "$B" && "$SRC/configure" -q --with-cuda --with-cuda-arch=90 --disable-fortran &&
        make -j"$(nproc)" >make.log 2>&1 && make tests/gpu/bench_gpunb tests/gpu/test_gpunb_cuda >>make.log 2>&1) ||
        { tail -n 30 "$B/make.log"; echo "BUILD FAILED"; exit 1; }
    echo "== test_gpunb_cuda with GPU_LIST=\"$all\""
    GPU_LIST="$all" timeout 300 "$B/tests/gpu/test_gpunb_cuda" 2>&1 | tail -n 4
    for list in 0 "$all"; do
        echo "== bench_gpunb, GPU_LIST=\"$list\""
        GPU_LIST="$list" timeout 120 "$B/tests/gpu/bench_gpunb" --ni "64 1024" --nj "131072 1048576" 2>&1
    done
} 2>&1 | tee "$OUT/two-gpus.log"
