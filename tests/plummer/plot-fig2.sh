#!/bin/sh
# plot-fig2.sh CSV PNG [GNUPLOT] -- Fig. 2 of Nitadori & Aarseth (2012) from
# the CSV rows of plummer_ac: wall time of t = 2..4 and its regular-force and
# irregular-force parts against N, log-log, for NBODY6's GPUNB path (the
# first complete row of each N; rows stopped by the wall-clock limit are
# left out), and, where the CSV has them, the wall time of the resident
# GPUNB path's rows as a fourth curve; a CSV of resident rows only gives the
# three curves of that path.  Without gnuplot it uses
# matplotlib if there, else says so and leaves the CSV alone.
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
  # Machines without gnuplot may have Python's matplotlib (the GPU machine does).
  if python3 -c 'import matplotlib' >/dev/null 2>&1; then
    python3 - "$csv" "$png" <<'PY'
import csv, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
plt.figure(figsize=(8, 6))
first, resident = {}, {}
for r in csv.DictReader(open(sys.argv[1])):
    if r["status"] == "complete" and r.get("gpunb_path", "nbody6") == "nbody6":
        first.setdefault(int(r["n"]), (float(r["wall_second"]), float(r["regular_second"]),
                                       float(r["irregular_second"])))
    elif r["status"] == "complete" and r.get("gpunb_path") == "resident":
        resident.setdefault(int(r["n"]), float(r["wall_second"]))
path = "NBODY6 GPUNB path"
if not first:
    path = "resident GPUNB path"
    for r in csv.DictReader(open(sys.argv[1])):
        if r["status"] == "complete" and r.get("gpunb_path") == "resident":
            first.setdefault(int(r["n"]), (float(r["wall_second"]), float(r["regular_second"]),
                                           float(r["irregular_second"])))
    resident = {}
rows = sorted((k,) + v for k, v in first.items())
if not rows:
    print("plot-fig2: no complete run in %s: no %s" % (sys.argv[1], sys.argv[2]))
    sys.exit(0)
n = [r[0] for r in rows]
for k, (label, mark) in enumerate([("total, " + path, "o-"), ("regular force (GPUNB)", "s-"),
                                   ("irregular force (GPUIRR)", "^-")]):
    plt.loglog(n, [r[k + 1] for r in rows], mark, label=label)
if resident:
    nr = sorted(resident)
    plt.loglog(nr, [resident[k] for k in nr], "o--", label="total, resident GPUNB path")
plt.xlabel("N"); plt.ylabel("wall-clock time for t = 2..4 (s)"); plt.grid(True, which="both", alpha=0.3)
plt.title("Plummer model, AC Hermite with nb6accel\n(as Fig. 2 of Nitadori & Aarseth 2012)", fontsize=10)
plt.legend(); plt.tight_layout(); plt.savefig(sys.argv[2], dpi=100)
print("plot-fig2: wrote %s (matplotlib; gnuplot not found)" % sys.argv[2])
PY
    exit $?
  fi
  echo "plot-fig2: gnuplot not found (install gnuplot-nox and re-run configure): no $png; the figures are in $csv"
  exit 0
fi
data=`mktemp`
resident=`mktemp`
trap 'rm -f "$data" "$resident"' EXIT
# n, wall_second, regular_second, irregular_second of complete rows, sorted by N.
awk -F, 'NR > 1 && $22 == "complete" && $24 != "resident" && !seen[$1]++ { print $1, $7, $8, $9 }' \
  "$csv" | sort -n > "$data"
awk -F, 'NR > 1 && $22 == "complete" && $24 == "resident" && !seen[$1]++ { print $1, $7 }' \
  "$csv" | sort -n > "$resident"
extra=
if test -s "$resident"; then
  extra=", '$resident' using 1:2 with linespoints dt 2 pt 6 title 'total, resident GPUNB path'"
fi
path='NBODY6 GPUNB path'
if ! test -s "$data"; then
  # resident rows only: their parts
  path='resident GPUNB path'
  extra=
  awk -F, 'NR > 1 && $22 == "complete" && $24 == "resident" && !seen[$1]++ { print $1, $7, $8, $9 }' \
    "$csv" | sort -n > "$data"
fi
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
plot '$data' using 1:2 with linespoints pt 7 title 'total, $path', \
     '$data' using 1:3 with linespoints pt 5 title 'regular force (GPUNB)', \
     '$data' using 1:4 with linespoints pt 9 title 'irregular force (GPUIRR)'$extra
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
plot '$data' using 1:2 with linespoints title 'total, $path', \
     '$data' using 1:3 with linespoints title 'regular force (GPUNB)', \
     '$data' using 1:4 with linespoints title 'irregular force (GPUIRR)'$extra
GP
  status=$?
fi
test $status -eq 0 && echo "plot-fig2: wrote $png"
exit $status
