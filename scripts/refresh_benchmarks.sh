#!/usr/bin/env bash
# scripts/refresh_benchmarks.sh: the full refresh of docs/benchmarks/: every
# scenario of `hhg_bench`, every method and every peer compiled in, at
# N = 10^3 .. 10^6, then the plots and the summary table (scripts/plot_bench.py).
#
#   scripts/refresh_benchmarks.sh [--sizes 1000,10000,100000,1000000] [--steps 6]
#       [--timeout 300] [--out docs/benchmarks] [--build build-bench]
#       [--scenarios equal,varied,...] [--methods M,...] [--threads 1] [--no-build]
#
# One `hhg_bench` invocation per scenario (each (scenario, N, method) in its
# own process, as always), written to OUT/raw/<scenario>.{json,csv,txt}; a
# scenario already in OUT/raw is not run again (delete the file to redo it),
# so an interrupted refresh resumes. Then OUT/results.{json,csv} (merged),
# OUT/summary.txt (the tables) and the plots. `terdiman` (one-shot data) runs
# at the --sizes up to 10^5, plus his 10^4 and 10^5 when --sizes reaches 10^5.
# hhg's variants run on --threads threads (default 1: one core, like the
# peers; pivot and pivot-chunked always use every core).
# Run it on a quiet machine: the timings are the point.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
sizes=1000,10000,100000,1000000
steps=6
timeout=300
out=$here/docs/benchmarks
build=$here/build-bench
scenarios=
methods=
threads=1
do_build=1
while [ $# -gt 0 ]; do
  case $1 in
    --sizes) sizes=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --scenarios) scenarios=$2; shift 2 ;;
    --methods) methods=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --no-build) do_build=0; shift ;;
    -h|--help) sed -n 2,20p "$0"; exit 0 ;;
    *) echo "refresh_benchmarks.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
python=/usr/bin/python3  # Debian's: it has matplotlib

if [ $do_build = 1 ]; then
  cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DHHG_BUILD_TESTS=OFF -DHHG_BUILD_APPS=OFF \
    -DHHG_BUILD_BENCH=ON -DHHG_BUILD_PYTHON=OFF -DHHG_WITH_MPI=OFF -DHHG_BUILD_ADAPTERS=OFF >/dev/null
  cmake --build "$build" -j"$(nproc)" --target hhg_bench >/dev/null
fi
bench=$build/bench/hhg_bench
[ -x "$bench" ] || { echo "refresh_benchmarks.sh: $bench not built" >&2; exit 1; }

# every experiment `hhg_bench --help` offers, unless --scenarios says otherwise
if [ -z "$scenarios" ]; then
  scenarios=$("$bench" --help | "$python" -c '
import re, sys
m = re.search(r"--scenario TEXT:\{([^}]*)\}", sys.stdin.read())
print(m.group(1) if m else "")')
fi
[ -n "$scenarios" ] || { echo "refresh_benchmarks.sh: no scenarios found in hhg_bench --help" >&2; exit 1; }

mkdir -p "$out/raw"
start=$(date +%s)
IFS=, read -r -a scenario_list <<< "$scenarios"
for sc in "${scenario_list[@]}"; do
  if [ -s "$out/raw/$sc.json" ]; then
    echo "== $sc: already in $out/raw, skipped" >&2
    continue
  fi
  ns=$sizes
  if [ "$sc" = terdiman ]; then  # his sizes; the pairs grow as N^2 in the fixed cube
    # (his 10^4 and 10^5 are added when --sizes reaches 10^5: a full refresh)
    ns=$("$python" -c "
import sys
n = [int(x) for x in sys.argv[1].split(',')]
s = {x for x in n if x <= 100000} | ({10000, 100000} if max(n) >= 100000 else set())
print(','.join(map(str, sorted(s))))" "$sizes")
  fi
  echo "== $sc at N = $ns ($(($(date +%s) - start)) s so far)" >&2
  args=(--scenario "$sc" --n "$ns" --steps "$steps" --timeout "$timeout" --threads "$threads"
        --json "$out/raw/$sc.json.part" --csv "$out/raw/$sc.csv.part")
  [ -n "$methods" ] && args+=(--methods "$methods")
  # status 1 = some method disagreed or failed: kept (the notes say which), reported at the end
  status=0
  "$bench" "${args[@]}" > "$out/raw/$sc.txt.part" || status=$?
  [ $status -le 1 ] || { echo "refresh_benchmarks.sh: hhg_bench failed on $sc (status $status)" >&2; exit 1; }
  [ $status = 0 ] || echo "refresh_benchmarks.sh: $sc: some methods disagreed or failed (see $out/raw/$sc.txt)" >&2
  for ext in json csv txt; do mv "$out/raw/$sc.$ext.part" "$out/raw/$sc.$ext"; done
done

# merge: results.json (a list of runs), results.csv (one header), summary.txt
"$python" - "$out" "${scenario_list[@]}" <<'EOF'
import json, os, sys
out, names = sys.argv[1], sys.argv[2:]
runs, csv, text = [], [], []
for sc in names:
    with open(os.path.join(out, "raw", sc + ".json")) as f:
        runs.extend(json.load(f))
    with open(os.path.join(out, "raw", sc + ".csv")) as f:
        lines = f.read().splitlines()
    csv.extend(lines if not csv else lines[1:])
    with open(os.path.join(out, "raw", sc + ".txt")) as f:
        text.append(f.read())
with open(os.path.join(out, "results.json"), "w") as f:
    json.dump(runs, f, indent=1)
with open(os.path.join(out, "results.csv"), "w") as f:
    f.write("\n".join(csv) + "\n")
with open(os.path.join(out, "summary.txt"), "w") as f:
    f.write("\n".join(text))
EOF
"$python" "$here/scripts/plot_bench.py" "$out/results.json" "$out"
echo "refresh done in $(($(date +%s) - start)) s: $out/results.{json,csv}, summary.txt, summary.md, *.png" >&2
