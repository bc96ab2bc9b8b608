#!/usr/bin/env bash
# P. Terdiman's "box pruning revisited" v17 (CompleteBoxPruning) against hhg's
# one-shot pairs on the `terdiman` scene, in one process, call by call
# (bench/terdiman_peer/compare.cpp).
#
#   scripts/terdiman_peer.sh BOXPRUNING_CHECKOUT [HHG_BUILD_DIR] [ROUNDS]
#
# BOXPRUNING_CHECKOUT is a checkout of his public repository,
# github.com/Pierre-Terdiman/BoxPruning (measured at commit 2d0cb4b3); it needs
# BoxPruning17/ and Shared/ only. None of his code is in this repository: the
# script copies his files into a temporary directory, makes compiler-only edits
# there with sed (MSVC -> g++; his algorithm is untouched, except that his
# `static` radix sorter becomes a fresh one per call, as a one-shot caller has
# it), and compiles them with bench/terdiman_peer/Stdafx.h, our stand-in for
# his precompiled header.
# HHG_BUILD_DIR (default build/ of this repository) is a Release build of hhg: libhhg.a is linked
# from it, and libhhg_scenes.a if there (else scenes/scenes.cpp is compiled).
# Everything is compiled with that build's Release flags, -O3 -DNDEBUG.
# ROUNDS (default 5) rounds of `compare 10000 41` and `compare 100000 11`;
# prints each run and the medians over the rounds of the ratios hhg/his.
# On a shared machine keep other jobs off the cores while it runs.
set -euo pipefail

usage() {
  [ $# -gt 0 ] && echo "terdiman_peer.sh: $*" >&2
  echo "usage: scripts/terdiman_peer.sh BOXPRUNING_CHECKOUT [HHG_BUILD_DIR] [ROUNDS]" >&2
  echo "  BOXPRUNING_CHECKOUT: a checkout of github.com/Pierre-Terdiman/BoxPruning" >&2
  echo "  HHG_BUILD_DIR: a Release build of hhg (default build); ROUNDS: default 5" >&2
  exit 2
}

if [ $# -lt 1 ] || [ $# -gt 3 ]; then usage; fi
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
checkout=$1
build=${2:-$repo/build}
rounds=${3:-5}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || usage "ROUNDS must be a positive integer, not '$rounds'"

his_files=(BoxPruning17/IceBoxPruning.cpp BoxPruning17/IceBoxPruning.h
  Shared/IceContainer.cpp Shared/IceContainer.h Shared/IceRevisitedRadix.cpp Shared/IceRevisitedRadix.h
  Shared/IceMemoryMacros.h)
for f in "${his_files[@]}"; do
  [ -f "$checkout/$f" ] || usage "$checkout/$f not found (not a checkout of Pierre-Terdiman/BoxPruning?)"
done
[ -f "$build/libhhg.a" ] || usage "$build/libhhg.a not found (build hhg in Release there first)"
if [ -f "$build/CMakeCache.txt" ] && ! grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$build/CMakeCache.txt"; then
  echo "terdiman_peer.sh: warning: $build is not a Release build" >&2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in "${his_files[@]}"; do cp "$checkout/$f" "$tmp/"; done

# Compiler-only edits (MSVC -> g++), in this order:
#  - the jump to OverlapFound crosses the initialisation of Index1: braces around
#    that block, closing where the `_asm align 16` before LoopStart was;
#  - the other `_asm align 16` lines (code alignment hints) dropped;
#  - __forceinline, __declspec(align(16)), _aligned_malloc/_aligned_free spelled in C++/C11;
#  - `static PRUNING_SORTER RS;` of CompleteBoxPruning: a fresh sorter per call.
sed -i \
  -e '/^OverlapFound:$/,/^LoopStart:$/{' \
  -e 's|^\t\tconst udword Index1 = \(.*\)$|\t\t{const udword Index1 = \1\t// g++: braces added (jump crosses initialization)|' \
  -e 's|^\t\t_asm[[:blank:]]*align[[:blank:]]*16$|\t\t}|' \
  -e '}' \
  -e '/^[[:blank:]]*_asm[[:blank:]]*align[[:blank:]]*16[[:blank:]]*$/d' \
  -e 's|__forceinline|inline __attribute__((always_inline))|g' \
  -e 's|__declspec(align(16))|alignas(16)|g' \
  -e 's|_aligned_malloc(\(.*\), 16)|aligned_alloc(16, \1)|g' \
  -e 's|_aligned_free(|free(|g' \
  -e 's|^\tstatic PRUNING_SORTER RS;.*$|\tPRUNING_SORTER RS;\t// terdiman_peer.sh: a fresh sorter per call (was static)|' \
  "$tmp/IceBoxPruning.cpp"
if grep -nE '_asm|__forceinline|__declspec|_aligned_|static PRUNING_SORTER RS;' "$tmp/IceBoxPruning.cpp" >&2 ||
  [ "$(grep -c $'^\t\t{const udword Index1' "$tmp/IceBoxPruning.cpp")" != 1 ]; then
  echo "terdiman_peer.sh: the edits did not apply as at commit 2d0cb4b3; see the lines above" >&2
  exit 1
fi

# his headers through -isystem and his .cpp with -w: their warnings are his, not ours
cxx=${CXX:-g++}
flags=(-std=gnu++20 -O3 -DNDEBUG)
includes=(-I"$repo/bench/terdiman_peer" -isystem "$tmp" -I"$repo/include" -I"$repo/scenes/include")
objs=()
for src in IceBoxPruning IceContainer IceRevisitedRadix; do
  "$cxx" "${flags[@]}" "${includes[@]}" -w -c "$tmp/$src.cpp" -o "$tmp/$src.o"
  objs+=("$tmp/$src.o")
done
"$cxx" "${flags[@]}" "${includes[@]}" -Wall -Wextra -c "$repo/bench/terdiman_peer/compare.cpp" -o "$tmp/compare.o"
if [ -f "$build/libhhg_scenes.a" ]; then
  scenes=("$build/libhhg_scenes.a")
else
  "$cxx" "${flags[@]}" -I"$repo/include" -I"$repo/scenes/include" -c "$repo/scenes/scenes.cpp" -o "$tmp/scenes.o"
  scenes=("$tmp/scenes.o")
fi
"$cxx" "$tmp/compare.o" "${objs[@]}" "${scenes[@]}" "$build/libhhg.a" -pthread -o "$tmp/compare"

commit=$(git -C "$checkout" rev-parse HEAD 2>/dev/null || echo unknown)
echo "Terdiman BoxPruning17 at $commit vs hhg ($build), $cxx ${flags[*]}, $rounds round(s)"
log=$tmp/runs.log
for ((r = 1; r <= rounds; ++r)); do
  echo "=== round $r"
  "$tmp/compare" 10000 41 | tee -a "$log"
  "$tmp/compare" 100000 11 | tee -a "$log"
done

/usr/bin/python3 - "$log" "$rounds" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    kv = dict(f.split("=", 1) for f in line.split())
    runs.setdefault(int(kv["n"]), []).append(kv)
def med(rs, key):
    return statistics.median(float(r[key]) for r in rs)
print(f"medians over {sys.argv[2]} rounds (each run: median / min of its repetitions)")
print(f"{'n':>7} {'his ms':>8} {'hhg total ms':>13} {'hhg reused ms':>14} "
      f"{'total/his':>10} {'reused/his':>11} {'total/his min':>14} {'reused/his min':>15}")
for n, rs in sorted(runs.items()):
    print(f"{n:>7} {med(rs, 'his_median_ms'):>8.3f} {med(rs, 'hhg_total_median_ms'):>13.3f} "
          f"{med(rs, 'hhg_reused_median_ms'):>14.3f} {med(rs, 'total_over_his_median'):>10.3f} "
          f"{med(rs, 'reused_over_his_median'):>11.3f} {med(rs, 'total_over_his_min'):>14.3f} "
          f"{med(rs, 'reused_over_his_min'):>15.3f}")
    print(f"{'':>7} hhg on his float boxes (hash_grids<3, float>): {med(rs, 'hhg_float_median_ms'):.3f} ms, "
          f"{med(rs, 'float_over_his_median'):.3f} of his time")
    print(f"{'':>7} pairs: his {rs[0]['pairs_his']}, hhg {rs[0]['pairs_hhg']}, hhg float {rs[0]['pairs_hhg_float']}"
          + (f", brute force on his float boxes {rs[0]['pairs_brute_float']}" if "pairs_brute_float" in rs[0] else ""))
PY
