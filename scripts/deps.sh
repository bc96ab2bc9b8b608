#!/usr/bin/env bash
# Installs what hhg needs to build and test, from Debian's packages.
# Safe to run repeatedly: it installs only what is missing.
set -euo pipefail
packages=(build-essential cmake pkg-config libgtest-dev libcli11-dev nlohmann-json3-dev clang libbullet-dev libfcl-dev libcgal-dev libnanoflann-dev python3-matplotlib libgmp-dev)
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
