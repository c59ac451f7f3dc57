#!/bin/sh
# run-fuzz.sh SECONDS [WORKDIR]: build the libraries with clang, ASan, UBSan and
# libFuzzer's coverage, then fuzz the native API for SECONDS seconds.
# Prints libFuzzer's final statistics; exits non-zero on a finding (the
# reproducer is left in WORKDIR as crash-*).
set -eu
seconds=${1:-60}
src=$(cd "$(dirname "$0")/../.." && pwd)
work=${2:-$(mktemp -d)}
mkdir -p "$work/build" "$work/corpus"
cd "$work/build"
flags="-g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"
if [ ! -f Makefile ]; then
  "$src/configure" -q CC=clang CFLAGS="$flags" --without-cuda --disable-fortran --disable-openmp >/dev/null
fi
make -j2 libgpunb.la libgpuirr.la >/dev/null
clang $flags -fsanitize=fuzzer -I"$src/gpunb" -I"$src/gpuirr" "$src/tests/fuzz/fuzz_api.c" \
  .libs/libgpunb.a .libs/libgpuirr.a -lm -o fuzz_api
echo "fuzz_api: fuzzing the GPUNB/GPUIRR API for $seconds s in $work"
cd "$work"
./build/fuzz_api -max_total_time="$seconds" -max_len=4096 -timeout=10 -print_final_stats=1 corpus 2>&1 \
  | grep -E "^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss|==[0-9]+==ERROR|SUMMARY|Done)" || true
found=0
for f in crash-* timeout-* leak-* oom-*; do
  [ -e "$f" ] && { found=1; echo "fuzz_api: finding $work/$f"; }
done
[ $found = 0 ] || { echo "fuzz_api: 0 passed, 1 failed (reproduce: $work/build/fuzz_api FILE)"; exit 1; }
echo "fuzz_api: 1 passed, 0 failed (no finding)"
