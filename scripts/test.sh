#!/usr/bin/env bash
# The tests on a fresh machine: install dependencies, then
#  1. Release build with warnings as errors, the whole test suite;
#  2. AddressSanitizer + UndefinedBehaviorSanitizer build (no recovery), the
#     whole test suite again;
#  3. install to a temporary prefix and build a consumer with find_package(hhg).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
jobs="$(nproc)"

echo "== Release build, warnings as errors =="
cmake -S . -B build-test -DCMAKE_BUILD_TYPE=Release -DHHG_WARNINGS_AS_ERRORS=ON >/dev/null
cmake --build build-test -j"$jobs"
(cd build-test && ctest --output-on-failure -j"$jobs")

echo "== AddressSanitizer + UndefinedBehaviorSanitizer =="
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHHG_WARNINGS_AS_ERRORS=ON \
  -DCMAKE_CXX_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san" >/dev/null
cmake --build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j"$jobs")

echo "== install + find_package consumer =="
prefix="$(mktemp -d)"
cmake --install build-test --prefix "$prefix" >/dev/null
cmake -S tests/consumer -B build-consumer -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build build-consumer -j"$jobs"
./build-consumer/quickstart
rm -rf "$prefix"
echo "== all tests passed =="
