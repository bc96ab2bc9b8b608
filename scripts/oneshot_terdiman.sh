#!/usr/bin/env bash
# One-shot pairs (bulk build + first detection, one thread) on P. Terdiman's
# "box pruning revisited" data: centres uniform in a cube of edge 4096,
# half-extents uniform in [0, 127] per axis (hhg's `terdiman` scenario).
# Prints the median of REPS runs (default 11; each run a fresh process, as a
# one-shot user pays it) per method and size, beside Terdiman's published
# v17 times (0.68 ms at 10^4, 34 ms at 10^5).
#
#   scripts/oneshot_terdiman.sh [path/to/hhg]       (default build/hhg)
#   REPS=21 METHODS=hhg,grid NS=10000,100000 SAP_NS=10000 scripts/oneshot_terdiman.sh
#
# sap is run at SAP_NS only (its one-shot at 10^5 takes minutes). On a shared
# machine wrap it in something that keeps the other processes off the cores.
set -euo pipefail
hhg=${1:-build/hhg}
reps=${REPS:-11}
methods=${METHODS:-hhg,grid}
ns=${NS:-10000,100000}
sap_ns=${SAP_NS-10000}
csv=$(mktemp)
trap 'rm -f "$csv"' EXIT
for ((r = 0; r < reps; ++r)); do
  "$hhg" bench --scenario terdiman --n "$ns" --methods "$methods" --steps 1 --threads 1 \
    --csv "$csv.run" --skip-header >/dev/null 2>&1
  cat "$csv.run" >>"$csv"
  if [ -n "$sap_ns" ]; then
    "$hhg" bench --scenario terdiman --n "$sap_ns" --methods sap --steps 1 --threads 1 \
      --csv "$csv.run" --skip-header >/dev/null 2>&1
    cat "$csv.run" >>"$csv"
  fi
done
rm -f "$csv.run"
/usr/bin/python3 - "$csv" "$reps" <<'PY'
import csv, statistics, sys
# columns of hhg bench --csv: scenario,n,steps,seed,method,setup_ms,...,pairs (11th)
rows = {}
for r in csv.reader(open(sys.argv[1])):
    if len(r) < 11 or r[5] == "":
        continue
    rows.setdefault((int(r[1]), r[4]), []).append((float(r[5]), r[10]))
terdiman = {10000: 0.68, 100000: 34.0}
print(f"one-shot pairs, terdiman data, one thread, median of {sys.argv[2]} runs")
print(f"{'n':>7} {'method':<6} {'median ms':>10} {'min ms':>8} {'pairs':>9} {'x Terdiman v17':>15}")
for (n, m) in sorted(rows):
    t = [x for x, _ in rows[(n, m)]]
    med = statistics.median(t)
    ref = terdiman.get(n)
    ratio = f"{med / ref:.2f}" if ref else "-"
    print(f"{n:>7} {m:<6} {med:>10.3f} {min(t):>8.3f} {rows[(n, m)][0][1]:>9} {ratio:>15}")
PY
