#!/bin/sh
# mca_per_interaction.sh LIBDIR: the hardware limit of the host kernels, as
# core cycles per pairwise interaction of their inner loops, from llvm-mca's
# model of an Intel server core (-mcpu, default icelake-server: the H100 box's
# Xeon; MCPU=... for another).  For each kernel it takes, from LIBDIR's
# libgpunb.so and libgpuirr.so as built, the AVX-512 instance of the
# function, finds its innermost loop that holds the reciprocal square root
# (one per i of a trip), leaves out the loops nested in it (the neighbour
# recording of GPUNB, run only for a group that holds a neighbour; GPUIRR's
# prefetch tails) and the branches, and hands the rest to llvm-mca.
# Interactions per trip: the loop's square roots times the vector's lanes.
# Prints per kernel: the loop's instructions, interactions per trip, and
# cycles per interaction as llvm-mca's simulation of the loop gives them
# (dependencies, ports) and as its port-throughput bound alone.  A kernel
# that runs at X interactions per second on T threads at G GHz then runs at
# X / (T * G * 1e9 / cycles) of that limit.  Needs objdump and llvm-mca
# (Debian: binutils, llvm); exits 77 without them.
set -u
dir=${1:?usage: mca_per_interaction.sh LIBDIR (holding libgpunb.so and libgpuirr.so)}
mcpu=${MCPU:-icelake-server}
mca=$(command -v llvm-mca || ls /usr/lib/llvm-*/bin/llvm-mca 2>/dev/null | tail -1)
if [ -z "$mca" ] || ! command -v objdump >/dev/null; then
    echo "mca_per_interaction.sh: needs objdump and llvm-mca (Debian: binutils, llvm)" >&2
    exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# loop_of LIB FUNCTION: the loop's instructions on stdout, "<instructions>
# <square roots> <lanes>" in $tmp/shape.  Plain awk has no strtonum:
# addresses are converted by hand.
loop_of() {
    objdump -d --no-show-raw-insn "$1" | awk -v fn="$2" -v shape="$tmp/shape" '
      function hex(s,   i, n) { n = 0; s = tolower(s)
        for (i = 1; i <= length(s); i++) n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
        return n }
      function is_root(t) { return t ~ /^vrsqrt(14)?ps/ }
      /^[0-9a-f]+ <.*>:$/ { name = $2; gsub(/[<>:]/, "", name)
        if (name == fn) { inst++; inside = 1 } else inside = 0; next }
      inside && /^ *[0-9a-f]+:\t/ {
        split($0, part, "\t"); a = part[1]; sub(/^ */, "", a); sub(/:$/, "", a)
        t = part[2]; for (k = 3; k <= length(part); k++) t = t " " part[k]
        sub(/ *<[^>]*>/, "", t)
        n++; owner[n] = inst; addr[n] = hex(a); text[n] = t
        if (is_root(t)) roots[inst]++ }
      END {
        # the instance with the most square roots, then its loops
        for (k in roots) if (roots[k] > best_roots) { best_roots = roots[k]; best = k }
        if (!best) { print "no instance of " fn " with a square root" > "/dev/stderr"; exit 1 }
        for (i = 1; i <= n; i++) {
          if (owner[i] != best) continue
          split(text[i], w, " ")
          if (w[1] ~ /^j/ && w[2] ~ /^[0-9a-f]+$/ && hex(w[2]) <= addr[i]) { m++; lo[m] = hex(w[2]); hi[m] = addr[i] } }
        for (k = 1; k <= m; k++) {
          r = 0
          for (i = 1; i <= n; i++) if (owner[i] == best && addr[i] >= lo[k] && addr[i] <= hi[k] && is_root(text[i])) r++
          if (r > 0 && (!main || hi[k] - lo[k] < hi[main] - lo[main])) main = k }
        if (!main) { print "no loop with a square root in " fn > "/dev/stderr"; exit 1 }
        for (i = 1; i <= n; i++) {
          if (owner[i] != best || addr[i] < lo[main] || addr[i] > hi[main]) continue
          nested = 0
          for (k = 1; k <= m; k++) if (k != main && lo[k] > lo[main] && hi[k] < hi[main] && addr[i] >= lo[k] && addr[i] <= hi[k]) nested = 1
          if (nested || text[i] ~ /^(j|nop|cs |data16)/) continue
          print text[i]; count++
          if (is_root(text[i])) { sq++; lanes = text[i] ~ /zmm/ ? 16 : text[i] ~ /ymm/ ? 8 : 4 } }
        print count, sq, lanes > shape }'
}

report() { # report LABEL LIB FUNCTION
    loop_of "$2" "$3" >"$tmp/loop.s" || return 1
    read -r ins roots lanes <"$tmp/shape"
    pairs=$(( roots * lanes ))
    "$mca" -mcpu="$mcpu" -iterations=1000 "$tmp/loop.s" >"$tmp/mca.txt" 2>&1 ||
        { echo "$1: llvm-mca failed: $(head -3 "$tmp/mca.txt")"; return 1; }
    awk -v label="$1" -v ins="$ins" -v pairs="$pairs" -v mcpu="$mcpu" '
      /^Iterations:/ { it = $2 } /^Total Cycles:/ { cyc = $3 } /^Block RThroughput:/ { rt = $3 }
      END { printf "%s: loop of %d instructions, %d interactions per trip; cycles per interaction %.2f " \
                   "(llvm-mca -mcpu=%s, simulated), %.2f (port throughput bound)\n",
                   label, ins, pairs, cyc / it / pairs, mcpu, rt / pairs }' "$tmp/mca.txt"
}

rc=0
report "GPUNB regular force, AVX-512, two i per pass" "$dir/libgpunb.so" regf_two || rc=1
report "GPUIRR irregular force, AVX-512 (prediction included)" "$dir/libgpuirr.so" force_avx512._omp_fn.0 || rc=1
exit $rc
