#!/usr/bin/env bash
# `mpiexec -n P hhg_mpi pairs FILE` must print exactly what `hhg pairs FILE` prints,
# on every adversarial zoo scene (2D and 3D), a hand-written file exercising the
# input format, and bad inputs (both: status 2, nothing on standard output).
# Usage: compare_pairs.sh HHG HHG_MPI MPIEXEC NUMPROC_FLAG P
set -u
hhg="$1"; hhg_mpi="$2"; mpiexec="$3"; np_flag="$4"; ranks="$5"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail=0
run_mpi() { "$mpiexec" "$np_flag" "$ranks" "$hhg_mpi" "$@"; }
compare() {  # file, label
  "$hhg" pairs "$1" >"$work/serial.out" 2>/dev/null; local s=$?
  run_mpi pairs "$1" >"$work/mpi.out" 2>/dev/null; local m=$?
  if [ "$s" != "$m" ] || ! cmp -s "$work/serial.out" "$work/mpi.out"; then
    echo "DIFFERENT: $2 (status serial $s, mpi $m; $(wc -l <"$work/serial.out") vs $(wc -l <"$work/mpi.out") lines)"
    fail=1
  else
    echo "same: $2 ($(wc -l <"$work/serial.out") pairs, status $s)"
  fi
}
for dim in 2 3; do
  for name in $("$hhg_mpi" scene list); do
    "$hhg_mpi" scene "$name" 1500 7 --dim "$dim" >"$work/scene.txt" || { echo "scene $name failed"; fail=1; continue; }
    compare "$work/scene.txt" "$name ${dim}D"
  done
done
printf '# dim 2\n# a comment\n\n0 0 1 1\r\n+1,1,2,2\n  -inf -inf inf 0\n1e300 1e300 inf inf\n0.5\t0.5 0.5 0.5\n' >"$work/format.txt"
compare "$work/format.txt" "input format (header, comments, CRLF, commas, +, inf)"
printf '0 0 0 1 1 1\n1 1 1 2 2 2\n3 3 3 2 4 4\n' >"$work/bad1.txt"
compare "$work/bad1.txt" "bad input: min > max"
printf '0 0 0 1 1 1\n0 0 nan 1 1 1\n' >"$work/bad2.txt"
compare "$work/bad2.txt" "bad input: NaN"
printf '0 0 0 1 1\n' >"$work/bad3.txt"
compare "$work/bad3.txt" "bad input: too few numbers"
: >"$work/empty.txt"
compare "$work/empty.txt" "empty input"
exit $fail
