#!/bin/bash
# ab-waves.sh -- force waves per large call (NB6ACCEL_CUDA_WAVES), compared
# in alternating rounds on the GPU machine: the lent machines drift within a
# call, so each round runs every setting once, in turn.  From the repository
# root on the GPU machine (carry the bootstrap outputs as for
# run-on-device.sh):
#   OUT=$OUT ROUNDS=4 WAVES="8 16" bash tests/gpu/ab-waves.sh
# "default" leaves NB6ACCEL_CUDA_WAVES unset (the library's choice by call).
# BENCH_NI and BENCH_NJ set the calls (default NI = 512 1024 2048 4096 against
# NJ = 128k, 256k, 1M: the calls in spatial order).  Prints the force
# kernel's us per setting and round, and each setting's mean and least over rounds,
# in $OUT/summary.txt.
set -u
SRC=$(pwd)
OUT=${OUT:-/tmp/ab-waves-out}
B=${BUILD:-/tmp/b-gpunb-waves}
ROUNDS=${ROUNDS:-3}
WAVES=${WAVES:-"8 16"}
. tests/gpu/device-build.sh
timeout 200 ./tests/gpu/test_gpunb_cuda quick >"$OUT/test.log" 2>&1
note "test_gpunb_cuda quick: rc=$? $(grep -E '^relative errors' "$OUT/test.log" | head -1)"
: >"$OUT/bench.tsv"
for r in $(seq "$ROUNDS"); do
  for w in $WAVES; do
    if [ "$w" = default ]; then unset NB6ACCEL_CUDA_WAVES; else export NB6ACCEL_CUDA_WAVES=$w; fi
    timeout 200 ./tests/gpu/bench_gpunb --ni "${BENCH_NI:-512 1024 2048 4096}" \
      --nj "${BENCH_NJ:-131072 262144 1048576}" --seconds 0.3 >"$OUT/bench.tmp" 2>&1
    # NI NJ call_us kernel_us ...: keep NI, NJ, the kernel's us.
    awk -v w="$w" -v r="$r" '/^ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ { print w "\t" r "\t" $1 "\t" $2 "\t" $4 "\t" $3 }' \
      "$OUT/bench.tmp" >>"$OUT/bench.tsv"
    cat "$OUT/bench.tmp" >>"$OUT/bench.log"
  done
done
unset NB6ACCEL_CUDA_WAVES
rm -f "$OUT/bench.tmp"
{
  echo "force kernel us (whole call us) per round; waves, NI, NJ: rounds ... | mean, least of the kernel"
  sort -t$'\t' -k3,3n -k4,4n -k1,1 -k2,2n "$OUT/bench.tsv" | awk -F'\t' '
    function flush() { if (key != "") printf "%-8s %5s %8s: %s| %.1f, %.1f\n", kw, kni, knj, line, sum / cnt, least }
    { k = $1 " " $3 " " $4; if (k != key) { flush(); key = k; kw = $1; kni = $3; knj = $4; line = ""; sum = 0; cnt = 0; least = 1e30 }
      line = line sprintf("%.1f (%.1f) ", $5, $6); sum += $5; cnt++; if ($5 < least) least = $5 }
    END { flush() }'
} | tee -a "$S"
