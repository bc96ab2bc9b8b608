#!/usr/bin/env bash
# Installs what hhg needs to build and test, from Debian's packages.
# Safe to run repeatedly: it installs only what is missing.
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config libgtest-dev libcli11-dev nlohmann-json3-dev clang libbullet-dev libfcl-dev libcgal-dev libnanoflann-dev python3-matplotlib
  python3-pybind11 pybind11-dev python3-numpy python3-scipy python3-pytest python3-venv python3-dev python3-setuptools)
packages+=(libopenmpi-dev openmpi-bin)  # hhg::mpi and its tests (docs/distributed.md)
packages+=(libgmp-dev)  # the exact rational reference of tests/test_exact_queries.cpp
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "hhg: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
