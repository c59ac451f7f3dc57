#!/bin/sh
# sass_per_interaction.sh LIB: SASS instructions per pairwise interaction of
# GPUNB's force kernel, read with cuobjdump from LIB (libgpunb.so or the
# kernel's object).  Counts the instructions of the kernel's main loop (the
# largest backward branch: one shared-memory tile of TILE_J = 64 j per trip,
# its loads, barriers and tile sums included; the neighbour-recording routine
# is a separate function, entered only for words that hold a neighbour) and
# divides by 64.  Prints "<per-interaction> <loop instructions> <kernel total>".
lib=${1:?usage: sass_per_interaction.sh libgpunb.so}
tile=${2:-64}
# (plain awk has no strtonum: hex addresses are converted by hand)
cuobjdump -sass "$lib" | awk -v tile="$tile" '
  function hex(s,   i, n, c) { n = 0; s = tolower(s); sub(/^0x/, "", s)
    for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; n = n * 16 + c }
    return n }
  /Function : .*gpunb_force_kernelILb0E/ { inside = 1; next }
  /Function : / { inside = 0 }
  inside && match($0, /\/\*[0-9a-f]+\*\//) {
    addr = hex(substr($0, RSTART + 2, RLENGTH - 4)); total++
    if (match($0, /BRA 0x[0-9a-f]+/)) {
      target = hex(substr($0, RSTART + 4, RLENGTH - 4))
      if (target < addr && (addr - target) / 16 + 1 > span) span = (addr - target) / 16 + 1
    }
  }
  END { if (span == 0) { print "no loop found"; exit 1 } printf "%.2f %d %d\n", span / tile, span, total }'
