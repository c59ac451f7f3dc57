#!/bin/sh
# cores-check.sh LABEL [THREADS]: the machine's cores as the device scripts
# log them at the start and the end of a call (the lent machines differ,
# and a run's time follows their clock): nbody6_patch/omp-scaling-check
# (CPUs' worth of a team, the cores' clock alone and with every thread
# busy, independent adds per cycle), built once per machine, each line
# prefixed "LABEL:".  Prints nothing where it cannot be built.
label=${1:?usage: cores-check.sh LABEL [THREADS]}
threads=${2:-$(nproc)}
src=$(cd "$(dirname "$0")/.." && pwd)
bin=${TMPDIR:-/tmp}/nb6-omp-scaling-check
[ -x "$bin" ] || ${CC:-gcc} -O2 -fopenmp "$src/nbody6_patch/omp-scaling-check.c" -o "$bin" 2>/dev/null || exit 0
"$bin" "$threads" | sed "s/^omp-scaling-check:/$label:/"
