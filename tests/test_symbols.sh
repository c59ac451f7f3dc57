#!/bin/sh
# Every symbol the shared libraries export carries its library's prefix
# (gpunb_ / gpuirr_), apart from the NBODY6 legacy entry points.
top_builddir=${top_builddir:-.}
header=$top_builddir/fortran_bindings/nb6accel_legacy.h
for lib in gpunb gpuirr; do
  so=$top_builddir/.libs/lib$lib.so
  if [ ! -f "$so" ]; then
    echo "SKIP: $so not built (static-only build)"
    exit 77
  fi
done
legacy=$(sed -n 's/^#define NB6_F_[A-Z_]* \([A-Za-z0-9_]*\)$/\1/p' "$header")
[ -n "$legacy" ] || { echo "FAIL: no legacy names in $header"; exit 1; }
fail=0 pass=0
check() { # lib prefix legacy-names...
  lib=$1 prefix=$2; shift 2
  for sym in $(nm -D --defined-only "$top_builddir/.libs/lib$lib.so" | awk '$2 ~ /^[TDBRVW]$/ {print $3}'); do
    case $sym in
      "$prefix"*) pass=$((pass + 1)); continue ;;
      _init|_fini|__bss_start|_edata|_end) continue ;;
    esac
    ok=0
    for l in "$@"; do [ "$sym" = "$l" ] && ok=1; done
    if [ $ok = 1 ]; then pass=$((pass + 1)); else echo "FAIL: lib$lib exports $sym"; fail=$((fail + 1)); fi
  done
}
check gpunb gpunb_ $(echo "$legacy" | grep -E '^(gpunb_|gpupot)')
check gpuirr gpuirr_ $(echo "$legacy" | grep -E '^(gpuirr_|cxvpred|cnbint|wtime|dbltim)')
for l in $legacy; do
  if ! nm -D --defined-only "$top_builddir/.libs/libgpunb.so" "$top_builddir/.libs/libgpuirr.so" | grep -q " $l\$"; then
    echo "FAIL: legacy entry point $l is not exported"; fail=$((fail + 1))
  fi
done
echo "test_symbols: $pass passed, $fail failed"
[ $fail = 0 ] && [ $pass -gt 20 ]
