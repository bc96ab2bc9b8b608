#!/usr/bin/env bash
# scripts/refresh_benchmarks.sh: the full refresh of docs/benchmarks/: every
# scenario of `hhg_bench`, every method and every peer compiled in, at
# N = 10^3 .. 10^6, then the plots and the summary table (scripts/plot_bench.py).
#
#   scripts/refresh_benchmarks.sh [--sizes 1000,10000,100000,1000000] [--steps 6]
#       [--timeout 300] [--out docs/benchmarks] [--build build-bench | --bench FILE]
#       [--scenarios equal,varied,...] [--methods M,...] [--threads 1] [--lanes 1]
#       [--rounds 1] [--no-build] [--rerun-alone] [--no-plots]
#
# One `hhg_bench` invocation per scenario (each (scenario, N, method) in its
# own process, as always), written to OUT/raw/<scenario>.{json,csv,txt}; a
# scenario already in OUT/raw is not run again (delete the file to redo it),
# so an interrupted refresh resumes. Then OUT/results.{json,csv} (merged),
# OUT/summary.txt (the tables), summary.md and the plots, from every scenario
# in OUT/raw (so `--scenarios X` after deleting OUT/raw/X.* re-runs X alone and
# keeps the rest); with the default
# OUT, also the generated tables of docs/benchmarks/README.md and README.md
# (between their `<!-- begin/end generated -->` markers). `terdiman` (one-shot
# data) runs at the --sizes up to 10^5, plus his 10^4 and 10^5 when --sizes
# reaches 10^5. hhg's variants run on --threads threads (default 1: one core,
# like the peers; pivot and pivot-chunked always use every core).
#
# --lanes N (N <= the cores, --threads 1) runs N scenarios at once, one per
# core, with every method but those run alone; then those run alone, scenario
# by scenario, and their results join the lanes' (checked to find the same
# pairs per step: scripts/merge_bench.py). Alone: pivot and pivot-chunked (they
# use every core), hhg's engine (hhg, hhg-rebuild, hhg-every-axis) and grid,
# whose ratios issue 19's targets are judged on (a lane beside slows the memory-bound grid far more
# than hhg: stop 63 measured varied's hhg / grid at 0.45 in lanes, 0.55
# alone); the hhg-only experiments (factor, update) run alone whole. On 2
# cores a full refresh takes ~56 min with --lanes 2 --timeout 60 against ~2 h
# without.
# The methods run alone run with hhg_bench --interleave: those of a scenario and N
# at once, one process each, taking turns step by step, so that their ratios
# compare the same phases of a host whose speed drifts within seconds (stop
# 76: run one process after another, hhg's variants on the same path came out
# up to 1.9x apart; stop 77: interleaved, within ~15 %).
# --rerun-alone (with --lanes): the alone methods again, the lanes kept: each
# scenario's raw files are split back into the lane's part (merge_bench.py
# split) and the alone methods run and merge as in a full refresh; the
# hhg-only experiments run again whole. For an engine change (every method of
# hhg's engine runs alone) when the peers and the other methods did not change:
# ~8 min instead of the full run.
# --rounds R: the methods run alone (every method without --lanes) run R
# rounds (hhg_bench --rounds: forward, then backward; each row the method's
# median round), so that hhg's and the grid's ratios compare the same phases
# of a host whose speed drifts (stop 73: in each of two single passes of the
# alone part, rows of unchanged code came out 27 % slower than the committed
# ones). The lanes' methods run once. results.json
# then gives each row run alone its `rounds` (a run's own `rounds` is its
# lane's). `--rerun-alone --rounds 3` takes ~3 times the alone part's time.
# --bench FILE: that hhg_bench, nothing built.
# --no-plots: the tables without the PNGs (plot_bench.py --no-plots).
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
lanes=1
rounds=1
bench=
do_build=1
rerun_alone=0
no_plots=0
# with --lanes: methods run alone after the lanes: those that use every core
# whatever --threads says (src/pivot_hashing.cpp), and those whose ratios the
# targets are judged on (hhg against the strong grid), timed on a quiet machine
alone_list=pivot,pivot-chunked,hhg,hhg-rebuild,hhg-every-axis,grid
# experiments that expand into hhg variants only, never another method (bench/harness/bench.cpp)
hhg_only=factor,update
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
    --lanes) lanes=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --bench) bench=$2; do_build=0; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --rerun-alone) rerun_alone=1; shift ;;
    --no-plots) no_plots=1; shift ;;
    -h|--help) sed -n "2,/^set -euo/p" "$0" | sed '$d'; exit 0 ;;
    *) echo "refresh_benchmarks.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
python=/usr/bin/python3  # Debian's: it has matplotlib
case $lanes in ''|*[!0-9]*|0) echo "refresh_benchmarks.sh: --lanes must be a whole number >= 1, not '$lanes'" >&2; exit 2 ;; esac
if [ "$lanes" -gt 1 ]; then
  [ "$threads" = 1 ] || { echo "refresh_benchmarks.sh: --lanes $lanes runs one scenario per core: --threads must be 1" >&2; exit 2; }
  [ "$lanes" -le "$(nproc)" ] || { echo "refresh_benchmarks.sh: --lanes $lanes is more than the $(nproc) cores" >&2; exit 2; }
fi
case $rounds in ''|*[!0-9]*|0) echo "refresh_benchmarks.sh: --rounds must be a whole number >= 1, not '$rounds'" >&2; exit 2 ;; esac
[ $rerun_alone = 0 ] || [ "$lanes" -gt 1 ] || { echo "refresh_benchmarks.sh: --rerun-alone needs --lanes 2 or more" >&2; exit 2; }

if [ $do_build = 1 ]; then
  cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DHHG_BUILD_TESTS=OFF -DHHG_BUILD_APPS=OFF \
    -DHHG_BUILD_BENCH=ON -DHHG_BUILD_PYTHON=OFF -DHHG_WITH_MPI=OFF -DHHG_BUILD_ADAPTERS=ON >/dev/null
  cmake --build "$build" -j"$(nproc)" --target hhg_bench >/dev/null
fi
[ -n "$bench" ] || bench=$build/bench/hhg_bench
[ -x "$bench" ] || { echo "refresh_benchmarks.sh: $bench not built" >&2; exit 1; }

# every experiment `hhg_bench --help` offers, unless --scenarios says otherwise
offered=$("$bench" --help | "$python" -c '
import re, sys
m = re.search(r"--scenario TEXT:\{([^}]*)\}", sys.stdin.read())
print(m.group(1) if m else "")')
[ -n "$offered" ] || { echo "refresh_benchmarks.sh: no scenarios found in hhg_bench --help" >&2; exit 1; }
[ -n "$scenarios" ] || scenarios=$offered

# with --lanes: the methods of the lanes and those run alone afterwards
all_methods=$methods
if [ -z "$all_methods" ]; then
  all_methods=$("$bench" --help | "$python" -c '
import re, sys
m = re.search(r"--methods TEXT:\{([^}]*)\}", sys.stdin.read())
print(m.group(1) if m else "")')
fi
in_list() { case ",$2," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
lane_methods= alone_methods=
IFS=, read -r -a method_list <<< "$all_methods"
for m in "${method_list[@]}"; do
  if in_list "$m" "$alone_list"; then alone_methods+=${alone_methods:+,}$m; else lane_methods+=${lane_methods:+,}$m; fi
done

mkdir -p "$out/raw"
start=$(date +%s)
IFS=, read -r -a scenario_list <<< "$scenarios"

# run_scenario SCENARIO METHODS PART: one hhg_bench into OUT/raw/SCENARIO[.PART].{json,csv,txt}
run_scenario() {
  local sc=$1 ms=$2 to=$out/raw/$1${3:+.$3} ns=$sizes status=0
  if [ "$sc" = terdiman ]; then  # his sizes; the pairs grow as N^2 in the fixed cube
    # (his 10^4 and 10^5 are added when --sizes reaches 10^5: a full refresh)
    ns=$("$python" -c "
import sys
n = [int(x) for x in sys.argv[1].split(',')]
s = {x for x in n if x <= 100000} | ({10000, 100000} if max(n) >= 100000 else set())
print(','.join(map(str, sorted(s))))" "$sizes")
  fi
  echo "== $sc${3:+ ($3)} at N = $ns ($(($(date +%s) - start)) s so far)" >&2
  local args=(--scenario "$sc" --n "$ns" --steps "$steps" --timeout "$timeout" --threads "$threads"
              --json "$to.json.part" --csv "$to.csv.part")
  [ -n "$ms" ] && args+=(--methods "$ms")
  [ "${3:-}" = lane ] || args+=(--rounds "$rounds")  # (the lanes run once)
  [ "${3:-}" = alone ] && args+=(--interleave)  # (taking turns: below)
  # status 1 = some method disagreed or failed: kept (the notes say which), reported at the end
  "$bench" "${args[@]}" > "$to.txt.part" || status=$?
  [ $status -le 1 ] || { echo "refresh_benchmarks.sh: hhg_bench failed on $sc (status $status)" >&2; return 1; }
  [ $status = 0 ] || echo "refresh_benchmarks.sh: $sc: some methods disagreed or failed (see $to.txt)" >&2
  local ext
  for ext in json csv txt; do mv "$to.$ext.part" "$to.$ext"; done
}

if [ $rerun_alone = 1 ]; then
  for sc in "${scenario_list[@]}"; do
    rm -f "$out/raw/$sc.alone.json" "$out/raw/$sc.alone.csv" "$out/raw/$sc.alone.txt"
    [ -s "$out/raw/$sc.json" ] || continue
    if in_list "$sc" "$hhg_only"; then
      rm -f "$out/raw/$sc.json" "$out/raw/$sc.csv" "$out/raw/$sc.txt"  # run alone whole
    else
      # status 3: nothing but alone runs in it (run alone whole before): rerun it whole
      status=0
      "$python" "$here/scripts/merge_bench.py" split "$out" "$sc" "$alone_methods" || status=$?
      case $status in
        0) ;;
        3) rm -f "$out/raw/$sc.json" "$out/raw/$sc.csv" "$out/raw/$sc.txt" ;;
        *) echo "refresh_benchmarks.sh: merge_bench.py split failed on $sc (status $status)" >&2; exit 1 ;;
      esac
    fi
  done
fi
todo=()
for sc in "${scenario_list[@]}"; do
  if [ -s "$out/raw/$sc.json" ]; then echo "== $sc: already in $out/raw, skipped" >&2; else todo+=("$sc"); fi
done
if [ "$lanes" = 1 ]; then
  for sc in "${todo[@]}"; do run_scenario "$sc" "$methods" ""; done
else
  # the lanes: a queue of scenarios, at most $lanes hhg_bench at once
  failed=0 running=0
  for sc in "${todo[@]}"; do
    [ -s "$out/raw/$sc.lane.json" ] && continue
    # an hhg-only experiment runs alone whole (its methods are hhg's variants)
    if [ -z "$lane_methods" ] || in_list "$sc" "$hhg_only"; then : > "$out/raw/$sc.lane.none"; continue; fi
    run_scenario "$sc" "$lane_methods" lane &
    running=$((running + 1))
    if [ $running -ge "$lanes" ]; then wait -n || failed=1; running=$((running - 1)); fi
  done
  while [ $running -gt 0 ]; do wait -n || failed=1; running=$((running - 1)); done
  [ $failed = 0 ] || { echo "refresh_benchmarks.sh: a lane failed (see above)" >&2; exit 1; }
  # then the methods run alone (an hhg-only experiment: all of them), and the merge
  for sc in "${todo[@]}"; do
    if [ ! -s "$out/raw/$sc.alone.json" ]; then
      if in_list "$sc" "$hhg_only"; then
        run_scenario "$sc" "$all_methods" alone
      elif [ -n "$alone_methods" ]; then
        run_scenario "$sc" "$alone_methods" alone
      fi
    fi
    if [ -e "$out/raw/$sc.lane.none" ]; then  # no lane methods: the alone run is the whole
      rm "$out/raw/$sc.lane.none"
      for ext in json csv txt; do mv "$out/raw/$sc.alone.$ext" "$out/raw/$sc.$ext"; done
    else
      "$python" "$here/scripts/merge_bench.py" alone "$out" "$sc"
    fi
  done
fi

# The merge takes every scenario whose results are in OUT/raw, in hhg_bench's
# order, not only those of this call: a scenario re-run alone (its raw files
# deleted, --scenarios naming it) replaces its own rows and keeps the others'.
merged=()
IFS=, read -r -a offered_list <<< "$offered"
for sc in "${offered_list[@]}" "${scenario_list[@]}"; do
  [ -s "$out/raw/$sc.json" ] || continue
  in_list "$sc" "$(IFS=,; echo "${merged[*]:-}")" || merged+=("$sc")
done
"$python" "$here/scripts/merge_bench.py" all "$out" "${merged[@]}"
plot_args=("$out/results.json" "$out")
[ $no_plots = 0 ] || plot_args+=(--no-plots)
if [ "$(cd "$out" && pwd)" = "$here/docs/benchmarks" ]; then
  plot_args+=(--update "$here/docs/benchmarks/README.md" --update "$here/README.md")
fi
"$python" "$here/scripts/plot_bench.py" "${plot_args[@]}"
echo "refresh done in $(($(date +%s) - start)) s: $out/results.{json,csv}, summary.txt, summary.md$([ $no_plots = 1 ] || echo ', *.png')" >&2
