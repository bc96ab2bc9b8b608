#!/usr/bin/env bash
# The main job on a fresh machine: install dependencies, build (Release), and
# run `hhg run` (the thesis scenario, 100 000 objects, 100 steps).
# Extra arguments go to `hhg run`, e.g. scripts/run.sh --n 1000000 --steps 20
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target hhg_cli
./build/hhg run "$@"
