#!/bin/sh
# plot-fig2.sh CSV PNG [GNUPLOT] -- Fig. 2 of Nitadori & Aarseth (2012) from
# the CSV rows of plummer_ac: wall time of t = 2..4 and its regular-force and
# irregular-force parts against N, log-log.  Rows stopped by the wall-clock
# limit are left out.  Without gnuplot it says so and leaves the CSV alone.
csv=$1
png=$2
gnuplot=${3:-}
if test -z "$csv" || test -z "$png"; then
  echo "usage: $0 CSV PNG [GNUPLOT]" >&2
  exit 2
fi
if test -z "$gnuplot"; then
  gnuplot=`command -v gnuplot 2>/dev/null`
fi
if test -z "$gnuplot"; then
  echo "plot-fig2: gnuplot not found (install gnuplot-nox and re-run configure): no $png; the figures are in $csv"
  exit 0
fi
data=`mktemp`
trap 'rm -f "$data"' EXIT
# n, wall_second, regular_second, irregular_second of complete rows, sorted by N.
awk -F, 'NR > 1 && $22 == "complete" { print $1, $7, $8, $9 }' "$csv" | sort -n > "$data"
if ! test -s "$data"; then
  echo "plot-fig2: no complete run in $csv: no $png"
  exit 0
fi
"$gnuplot" <<GP
set terminal pngcairo size 800,600 noenhanced
set output '$png'
set logscale xy
set grid
set key top left
set xlabel 'N'
set ylabel 'wall-clock time for t = 2..4 (s)'
set title 'Plummer model, AC Hermite with nb6accel (Nitadori & Aarseth 2012, Fig. 2)'
plot '$data' using 1:2 with linespoints pt 7 title 'total', \
     '$data' using 1:3 with linespoints pt 5 title 'regular force (GPUNB)', \
     '$data' using 1:4 with linespoints pt 9 title 'irregular force (GPUIRR)'
GP
status=$?
if test $status -ne 0; then
  # Some gnuplot builds lack pngcairo; the plain png terminal is in gnuplot-nox.
  "$gnuplot" <<GP
set terminal png size 800,600
set output '$png'
set logscale xy
set grid
set key top left
set xlabel 'N'
set ylabel 'wall-clock time for t = 2..4 (s)'
plot '$data' using 1:2 with linespoints title 'total', \
     '$data' using 1:3 with linespoints title 'regular force (GPUNB)', \
     '$data' using 1:4 with linespoints title 'irregular force (GPUIRR)'
GP
  status=$?
fi
test $status -eq 0 && echo "plot-fig2: wrote $png"
exit $status
