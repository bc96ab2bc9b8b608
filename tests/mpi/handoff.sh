#!/usr/bin/env bash
# `mpiexec -n P hhg ...` (P > 1) without MPI in hhg (apps/hhg/mpi_handoff.cpp):
# - `hhg run` becomes `hhg_mpi run` (the distributed scenario, P ranks, --check);
# - a serial-only subcommand (query) fails with status 2, one 'hhg: ' message, no output;
# - out of memory (under ulimit -v) is status 1 with one message, as in the serial hhg;
# - a copy of hhg with no hhg_mpi beside it fails the same way instead of printing P copies;
#   with HHG_MPI naming hhg_mpi it works again; with -n 1 it is the serial tool.
# Usage: handoff.sh HHG MPIEXEC NUMPROC_FLAG P
set -u
hhg="$1"; mpiexec="$2"; np_flag="$3"; ranks="$4"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail=0
printf '0 0 0 1 1 1\n0.5 0.5 0.5 2 2 2\n' >"$work/boxes.txt"
printf '0 1\n' >"$work/want.txt"
expect_failure() {  # label, command...
  local label="$1"; shift
  "$@" >"$work/out" 2>"$work/err"; local s=$?
  local n; n=$(grep -c '^hhg: ' "$work/err")
  if [ "$s" = 0 ] || [ -s "$work/out" ] || [ "$n" != 1 ]; then
    echo "WRONG: $label (status $s, $(wc -c <"$work/out") bytes out, $n 'hhg:' messages)"; cat "$work/err"; fail=1
  else
    echo "ok: $label fails clearly: $(grep '^hhg: ' "$work/err")"
  fi
}
expect_pairs() {  # label, command...
  local label="$1"; shift
  "$@" >"$work/out" 2>"$work/err"; local s=$?
  if [ "$s" != 0 ] || ! cmp -s "$work/out" "$work/want.txt"; then
    echo "WRONG: $label (status $s)"; cat "$work/out" "$work/err"; fail=1
  else
    echo "ok: $label"
  fi
}
"$mpiexec" "$np_flag" "$ranks" "$hhg" run --total 3000 --steps 3 --dim 3 --check >"$work/run.out" 2>&1
s=$?
if [ "$s" != 0 ] || ! grep -q "^# hhg_mpi run: $ranks ranks" "$work/run.out"; then
  echo "WRONG: mpiexec hhg run (status $s)"; cat "$work/run.out"; fail=1
else
  echo "ok: mpiexec -n $ranks hhg run runs distributed"
fi
expect_failure "mpiexec hhg query" "$mpiexec" "$np_flag" "$ranks" "$hhg" query --boxes "$work/boxes.txt" --point 0,0,0
# the arguments hhg pairs takes, hhg_mpi pairs takes alike (stop 79: `--dim=3` and `--`
# were unknown options there, a repeated flag's last value won, `--help` failed)
expect_pairs "mpiexec hhg pairs --dim=3 FILE" "$mpiexec" "$np_flag" "$ranks" "$hhg" pairs --dim=3 "$work/boxes.txt"
expect_pairs "mpiexec hhg pairs -- FILE" "$mpiexec" "$np_flag" "$ranks" "$hhg" pairs -- "$work/boxes.txt"
expect_failure "mpiexec hhg pairs --dim twice" "$mpiexec" "$np_flag" "$ranks" "$hhg" pairs --dim 3 --dim 2 \
  "$work/boxes.txt"
"$mpiexec" "$np_flag" "$ranks" "$hhg" pairs --help >"$work/help" 2>"$work/err"
s=$?
if [ "$s" != 0 ] || [ "$(grep -c 'hhg_mpi pairs' "$work/help")" != 1 ]; then
  echo "WRONG: mpiexec hhg pairs --help (status $s, $(grep -c 'hhg_mpi pairs' "$work/help") usage lines)"
  cat "$work/help" "$work/err"; fail=1
else
  echo "ok: mpiexec hhg pairs --help prints the usage once"
fi
# Out of memory is exit status 1 (README, "Exit status"), as in hhg itself (stop 80:
# hhg_mpi gave 2, the status of bad input). 300 boxes 60 periods wide on both axes:
# each has some 3,700 images (within the limits), all covering the domain, so the
# detection needs terabytes; under `ulimit -v` an allocation fails on some rank,
# every rank agrees on the error, rank 0 prints it once, nothing on standard output.
awk 'BEGIN { print "# dim 2"; for (k = 0; k < 300; k++) printf "%d %d %d %d\n", -(k % 7), -(k % 5), 600 - k % 7, 600 - k % 5 }' \
  >"$work/dense.txt"
limit=1500000  # KiB of address space per process
if ! (ulimit -v "$limit" && "$mpiexec" "$np_flag" "$ranks" "$hhg" pairs "$work/boxes.txt" >"$work/out" 2>&1); then
  echo "SKIPPED: out of memory: the programs do not start under ulimit -v $limit (a sanitizer build?)"
  cat "$work/out"
else
  for tool in "mpiexec -n $ranks hhg" "hhg (serial)"; do
    if [ "$tool" = "hhg (serial)" ]; then
      (ulimit -v "$limit" && exec "$hhg" pairs --periodic all --domain 0,10 "$work/dense.txt") >"$work/out" 2>"$work/err"
    else
      (ulimit -v "$limit" && exec "$mpiexec" "$np_flag" "$ranks" "$hhg" pairs --periodic all --domain 0,10 \
        "$work/dense.txt") >"$work/out" 2>"$work/err"
    fi
    s=$?
    n=$(grep -c '^hhg: ' "$work/err")
    if [ "$s" != 1 ] || [ -s "$work/out" ] || [ "$n" != 1 ] || ! grep '^hhg: ' "$work/err" | grep -q 'out of memory'; then
      echo "WRONG: $tool out of memory (status $s, want 1; $(wc -c <"$work/out") bytes out, $n 'hhg:' messages)"
      cat "$work/err"; fail=1
    else
      echo "ok: $tool out of memory: status 1, $(grep '^hhg: ' "$work/err")"
    fi
  done
fi
cp "$hhg" "$work/hhg"
expect_failure "hhg without hhg_mpi" "$mpiexec" "$np_flag" "$ranks" "$work/hhg" pairs "$work/boxes.txt"
expect_pairs "hhg without hhg_mpi, HHG_MPI set" env HHG_MPI="$(dirname "$hhg")/hhg_mpi" \
  "$mpiexec" "$np_flag" "$ranks" "$work/hhg" pairs "$work/boxes.txt"
expect_pairs "hhg without hhg_mpi, one rank" "$mpiexec" "$np_flag" 1 "$work/hhg" pairs "$work/boxes.txt"
exit $fail
