#!/usr/bin/env bash
# `mpiexec -n P hhg_mpi pairs FILE` must print exactly what `hhg pairs FILE` prints,
# on every adversarial zoo scene (2D and 3D), a hand-written file exercising the
# input format, and bad inputs (both: status 2, nothing on standard output); and
# with --periodic AXES --domain BOUNDS on periodic scenes (every axis subset,
# boxes wider than half the period and than the period, points on the faces,
# boxes periods away), plus bad --periodic / --domain values.
# Usage: compare_pairs.sh HHG HHG_MPI MPIEXEC NUMPROC_FLAG P [handoff]
# With 'handoff' the distributed side is `mpiexec -n P hhg pairs ...` itself
# (hhg execs hhg_mpi, apps/hhg/mpi_handoff.cpp) instead of hhg_mpi.
set -u
hhg="$1"; hhg_mpi="$2"; mpiexec="$3"; np_flag="$4"; ranks="$5"; mode="${6:-}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail=0
distributed="$hhg_mpi"
[ "$mode" = handoff ] && distributed="$hhg"
run_mpi() { "$mpiexec" "$np_flag" "$ranks" "$distributed" "$@"; }
compare() {  # file, label, extra flags of pairs...
  local file="$1" label="$2"; shift 2
  "$hhg" pairs "$@" "$file" >"$work/serial.out" 2>"$work/serial.err"; local s=$?
  run_mpi pairs "$@" "$file" >"$work/mpi.out" 2>"$work/mpi.err"; local m=$?
  if [ "$s" != "$m" ] || ! cmp -s "$work/serial.out" "$work/mpi.out"; then
    echo "DIFFERENT: $label (status serial $s, mpi $m; $(wc -l <"$work/serial.out") vs $(wc -l <"$work/mpi.out") lines)"
    head -3 "$work/serial.err" "$work/mpi.err"
    fail=1
  elif [ "$s" = 2 ] && ! grep -q '^hhg: ' "$work/mpi.err"; then
    echo "NO 'hhg: ' MESSAGE: $label"; cat "$work/mpi.err"; fail=1
  elif [ "$s" = 2 ] && [ "$(grep -m1 '^hhg: ' "$work/serial.err")" != "$(grep -m1 '^hhg: ' "$work/mpi.err")" ]; then
    # one text for a problem (stop 79: a box out of a periodic domain read differently)
    echo "OTHER MESSAGE: $label"; grep -m1 '^hhg: ' "$work/serial.err" "$work/mpi.err"; fail=1
  else
    echo "same: $label ($(wc -l <"$work/serial.out") lines, status $s)"
  fi
}
if [ "$mode" != handoff ]; then
  for dim in 2 3; do
    for name in $("$hhg_mpi" scene list); do
      "$hhg_mpi" scene "$name" 1500 7 --dim "$dim" >"$work/scene.txt" || { echo "scene $name failed"; fail=1; continue; }
      compare "$work/scene.txt" "$name ${dim}D"
    done
  done
else
  "$hhg_mpi" scene uniform 3000 5 --dim 3 >"$work/scene.txt"
  compare "$work/scene.txt" "uniform 3D (through hhg)"
fi
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
printf '0 0 0 1 1 1\n0 0 0 1000 1 1\n' >"$work/far.txt"
compare "$work/far.txt" "bad input: a box 100 periods wide" --periodic x --domain 0,10
# named by its line, as every bad input line (stop 80: "box 1", the output's index)
if ! grep -q '^hhg: line 2: on periodic axis 0 the box ' "$work/mpi.err"; then
  echo "NO LINE IN THE MESSAGE: a box 100 periods wide"; cat "$work/mpi.err"; fail=1
fi

# Periodic scenes in [-5, 5) per axis (awk: the same file for both sides).
periodic_scene() {  # dim seed n
  awk -v dim="$1" -v seed="$2" -v n="$3" 'BEGIN {
    srand(seed); printf "# dim %d\n", dim
    for (k = 0; k < n; k++) {
      r = rand()
      for (i = 0; i < dim; i++) {
        c = -5 + 10 * rand()
        if (r < 0.65) e = 0.001 * exp(log(1000) * rand())         # small, over 3 decades
        else if (r < 0.7) e = (i == int(k % dim)) ? 5 + 8 * rand() : 0.3  # wider than half the period, or the period, on one axis
        else if (r < 0.85) { q = rand(); c = (q < 0.4) ? -5 : (q < 0.8 ? 5 : int(c)); e = (rand() < 0.5) ? 0 : 1 }  # on the faces
        else { c += 10 * (int(5 * rand()) - 2); e = 0.7 }         # periods away
        lo[i] = c; hi[i] = c + e
      }
      line = ""
      for (i = 0; i < dim; i++) line = line sprintf("%.17g ", lo[i])
      for (i = 0; i < dim; i++) line = line sprintf("%.17g%s", hi[i], i + 1 < dim ? " " : "")
      print line
    }
  }' >"$work/periodic.txt"
}
for dim in 2 3; do
  if [ "$dim" = 2 ]; then subsets="y x,y"; else subsets="z x,y all"; fi
  [ "$mode" = handoff ] && subsets="all"
  periodic_scene "$dim" "$((11 + dim))" 1000
  for axes in $subsets; do
    compare "$work/periodic.txt" "periodic ${dim}D --periodic $axes" --periodic "$axes" --domain -5,5
  done
  compare "$work/periodic.txt" "periodic ${dim}D, per-axis domain" --periodic all \
    --domain "$( [ "$dim" = 2 ] && echo -5,5,-5,7 || echo -5,5,-6,5,-5,5.5 )"
done
# Far from the origin, a period of a few ulps (stop 80: hhg_mpi's widening was 2.8
# periods at [1e14, 1e14 + 1), 28 at 1e15: out of memory, or minutes, where hhg
# pairs took 0.04 s). Boxes on the lattice of 1/8 periods (exact): points and boxes
# on lo and hi (touching through the face), as wide as the period and wider, one
# or two periods outside.
far_scene() {  # dim seed n lo period
  awk -v dim="$1" -v seed="$2" -v n="$3" -v lo="$4" -v L="$5" 'BEGIN {
    srand(seed); printf "# dim %d\n", dim
    for (k = 0; k < n; k++) {
      r = rand(); line = ""; ends = ""
      for (i = 0; i < dim; i++) {
        q = rand(); c = lo + L * int(8 * rand()) / 8
        if (q < 0.2) c = lo; else if (q > 0.8) c = lo + L
        if (r > 0.85) c += L * (int(5 * rand()) - 2)
        e = (r < 0.4) ? 0 : (r < 0.6 ? L / 8 : (r < 0.8 ? L : 1.5 * L))
        line = line sprintf("%.17g ", c); ends = ends sprintf(" %.17g", c + e)
      }
      print line ends
    }
  }' >"$work/far_periodic.txt"
}
far_scene 3 31 200 100000000000000 1
compare "$work/far_periodic.txt" "far 3D [1e14, 1e14 + 1)" --periodic all --domain 100000000000000,100000000000001
if [ "$mode" != handoff ]; then
  far_scene 2 32 300 -1000000000000001 1
  compare "$work/far_periodic.txt" "far 2D [-1e15 - 1, -1e15)" --periodic all --domain=-1000000000000001,-1000000000000000
  far_scene 3 33 100 -1000000000000001 1
  compare "$work/far_periodic.txt" "far 3D [-1e15 - 1, -1e15)" --periodic all --domain=-1000000000000001,-1000000000000000
  far_scene 3 34 100 1000000000000000 1
  compare "$work/far_periodic.txt" "far 3D [1e15, 1e15 + 1), x and z" --periodic x,z --domain 1000000000000000,1000000000000001
fi
compare "$work/periodic.txt" "bad: unknown axis" --periodic x,w --domain -5,5
[ "$mode" = handoff ] && exit $fail
compare "$work/periodic.txt" "bad: axis twice" --periodic x,x --domain -5,5
compare "$work/periodic.txt" "bad: lo == hi" --periodic x --domain 5,5
compare "$work/periodic.txt" "bad: infinite bound" --periodic x --domain -inf,5
compare "$work/periodic.txt" "bad: 3 values" --periodic x --domain 0,1,2
compare "$work/periodic.txt" "bad: no --domain" --periodic x
compare "$work/periodic.txt" "bad: no --periodic" --domain 0,1
compare "$work/periodic.txt" "bad: box over 64 periods" --periodic x --domain 0,0.01
exit $fail
