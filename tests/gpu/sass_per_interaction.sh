#!/bin/sh
# sass_per_interaction.sh LIB: SASS instructions per pairwise interaction of
# GPUNB's force kernel, read with cuobjdump from LIB (libgpunb.so or the
# kernel's object).  Counts the instructions of the kernel's main loop (the
# largest backward branch: per trip each thread does 64 interactions of the
# shared-memory tile, its loads, barriers and tile sums included), less the
# loops nested in it (the neighbour recording, run only for 32-j words that
# hold a neighbour), and divides by 64.  Prints
# "<per interaction> <loop instructions> <nested-loop instructions> <kernel total>".
lib=${1:?usage: sass_per_interaction.sh libgpunb.so [min-blocks variant, default 5]}
variant=${2:-5}
tile=64
# (plain awk has no strtonum: hex addresses are converted by hand)
cuobjdump -sass "$lib" | awk -v tile="$tile" -v fn="gpunb_force_kernelILb0ELi${variant}ELb0ELb0ELb0EE" '
  function hex(s,   i, n, c) { n = 0; s = tolower(s); sub(/^0x/, "", s)
    for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; n = n * 16 + c }
    return n }
  /Function : / && index($0, fn) { inside = 1; next }
  /Function : / { inside = 0 }
  inside && match($0, /\/\*[0-9a-f]+\*\//) {
    addr = hex(substr($0, RSTART + 2, RLENGTH - 4)); total++
    if (match($0, /BRA 0x[0-9a-f]+/)) {
      target = hex(substr($0, RSTART + 4, RLENGTH - 4))
      if (target < addr) { n++; lo[n] = target; hi[n] = addr }
    }
  }
  END {
    for (k = 1; k <= n; k++) if (hi[k] - lo[k] > hi[m] - lo[m] || m == 0) m = k
    if (m == 0) { print "no loop found"; exit 1 }
    span = (hi[m] - lo[m]) / 16 + 1
    for (k = 1; k <= n; k++) if (k != m && lo[k] > lo[m] && hi[k] < hi[m]) nested += (hi[k] - lo[k]) / 16 + 1
    printf "%.2f %d %d %d\n", (span - nested) / tile, span, nested, total }'
