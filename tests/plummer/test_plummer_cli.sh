#!/bin/sh
# The Plummer driver's command line: bad options stop with status 2 and a
# message that names the option and its value (never a run that silently
# does something else, as -tend 0.001 once did: every step shrank to 2^-20),
# -profile prints its table after a short run, and -prefetch, -irr-first
# and -regf-depth change no arithmetic.
top_builddir=${top_builddir:-.}
driver=$top_builddir/tests/plummer/plummer_ac
[ -x "$driver" ] || { echo "SKIP: $driver not built (no Fortran compiler)"; exit 77; }
fail=0 pass=0
out=${TMPDIR:-/tmp}/test_plummer_cli.$$
trap 'rm -f "$out" "$out.a" "$out.b"' EXIT
refused() { # words expected in the message, then the options
  want=$1; shift
  "$driver" "$@" >"$out" 2>&1
  rc=$?
  if [ "$rc" = 2 ] && grep -q -- "$want" "$out"; then
    pass=$((pass + 1)); echo "PASS: refused $* ($want)"
  else
    fail=$((fail + 1)); echo "FAIL: $* gave status $rc, message:"; cat "$out"
  fi
}
refused '-tend 1.000E-03' -n 512 -tend 0.001 -q
refused 'bad value for -n: "1"' -n 1
refused 'unknown option "-bogus"' -bogus 3
refused 'bad value for -ascending: "-1"' -ascending -1
refused 'cannot open initial conditions file' -ic /nonexistent/ic.txt
refused 'bad value for -order: "hilbert"' -order hilbert
refused 'bad value for -lanes: "sse"' -lanes sse
refused 'bad value for -nimax: "0"' -nimax 0
refused '-gpu-irr 512 needs -resident' -gpu-irr 512
if "$driver" -n 512 -tend 0.25 -progress 0 -order morton -nimax 100 -lanes generic >"$out" 2>&1 &&
   grep -q 'order = morton' "$out" && grep -q 'NIMAX = 100 ' "$out" &&
   grep -q 'corrector lanes: generic' "$out"; then
  pass=$((pass + 1)); echo "PASS: -order morton -nimax 100 -lanes generic run and say so"
else
  fail=$((fail + 1)); echo "FAIL: -order morton -nimax 100 -lanes generic:"; cat "$out"
fi
if "$driver" -n 512 -tend 0.25 -q -progress 0 -profile >"$out" 2>&1 &&
   grep -q '^# Block profile' "$out" && grep -q '^#   all ' "$out"; then
  pass=$((pass + 1)); echo "PASS: -profile prints the block profile"
else
  fail=$((fail + 1)); echo "FAIL: -profile:"; cat "$out"
fi
# NB6ACCEL_PROFILE_IRR=1: the library's table of the irregular-force calls
# at close (here on the host path, which -gpu-irr-host on keeps), with a row of calls.
if NB6ACCEL_PROFILE_IRR=1 "$driver" -n 512 -tend 0.25 -q -progress 0 -resident -gpu-irr 64 -gpu-irr-host on \
  >"$out" 2>&1 &&
   grep -q '^profile gpunb_firr_start + finish' "$out" &&
   grep -A2 '^profile gpunb_firr_start + finish' "$out" | grep -Eq '^ +[0-9]+\.\. +[0-9]+ +[1-9]'; then
  pass=$((pass + 1)); echo "PASS: NB6ACCEL_PROFILE_IRR=1 prints the irregular calls' profile"
else
  fail=$((fail + 1)); echo "FAIL: NB6ACCEL_PROFILE_IRR=1:"; cat "$out"
fi
# -prefetch K only asks for cache lines ahead: the same final state.
if "$driver" -n 512 -tend 0.25 -q -progress 0 -dump "$out.a" >/dev/null 2>&1 &&
   "$driver" -n 512 -tend 0.25 -q -progress 0 -prefetch 8 -dump "$out.b" >/dev/null 2>&1 &&
   [ -s "$out.a" ] && cmp -s "$out.a" "$out.b"; then
  pass=$((pass + 1)); echo "PASS: -prefetch 8 ends in the same state as the default"
else
  fail=$((fail + 1)); echo "FAIL: -prefetch 8 and the default end in other states (or did not run)"
fi
# -irr-first on only starts the regular force later (after the irregular
# one, in blocks that take theirs from GPUNB): the same final state.
if "$driver" -n 512 -tend 0.25 -q -progress 0 -resident -gpu-irr 64 -gpu-irr-host on -dump "$out.a" >/dev/null 2>&1 &&
   "$driver" -n 512 -tend 0.25 -q -progress 0 -resident -gpu-irr 64 -gpu-irr-host on -irr-first on \
     -dump "$out.b" >"$out" 2>&1 &&
   [ -s "$out.a" ] && cmp -s "$out.a" "$out.b"; then
  pass=$((pass + 1)); echo "PASS: -irr-first on ends in the same state as off"
else
  fail=$((fail + 1)); echo "FAIL: -irr-first on and off end in other states (or did not run):"; cat "$out"
fi
# -regf-depth 1 starts each regular chunk when the one before is collected;
# the default (2) keeps two in flight, and a chunk whose lists overflow
# fetches the next one before its retry (small chunks and a tight NBMAX
# make both happen here): the same final state.
cmp_depth="-n 1024 -tend 0.5 -q -progress 0 -resident -nimax 32 -nnb 60 -nbmax 62"
# shellcheck disable=SC2086
if "$driver" $cmp_depth -regf-depth 1 -dump "$out.a" >/dev/null 2>&1 &&
   "$driver" $cmp_depth -dump "$out.b" >"$out" 2>&1 &&
   [ -s "$out.a" ] && cmp -s "$out.a" "$out.b"; then
  pass=$((pass + 1)); echo "PASS: two regular chunks in flight end in the same state as one"
else
  fail=$((fail + 1)); echo "FAIL: -regf-depth 1 and 2 end in other states (or did not run):"; cat "$out"
fi
refused 'bad value for -regf-depth: "3"' -regf-depth 3
rm -f "$out.a" "$out.b"
echo "test_plummer_cli: $pass passed, $fail failed"
[ "$fail" = 0 ]
