#!/usr/bin/env bash
# The tests on a fresh machine: install dependencies, then
#  1. Release build with warnings as errors, the whole test suite, and
#     `hhg bench --quick` (every method on the thesis scenarios; pairs must agree);
#  2. AddressSanitizer + UndefinedBehaviorSanitizer build (no recovery), the
#     whole test suite again;
#  3. ThreadSanitizer build, the tests that run threads (names with
#     "Threads" or "Concurrent");
#  4. libFuzzer (clang) against the brute-force model, a short run
#     (HHG_FUZZ_SECONDS, default 150) from the seed corpus tests/fuzz/corpus;
#  5. install to a temporary prefix and build a consumer with find_package(hhg);
#  6. the Python module: pip install into a fresh venv, pytest python/tests,
#     the example examples/python/particles.py.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
jobs="$(nproc)"

echo "== Release build, warnings as errors =="
cmake -S . -B build-test -DCMAKE_BUILD_TYPE=Release -DHHG_WARNINGS_AS_ERRORS=ON >/dev/null
cmake --build build-test -j"$jobs"
(cd build-test && ctest --output-on-failure -j"$jobs")

echo "== hhg bench --quick (every method, pairs must agree) =="
./build-test/hhg bench --quick --json build-test/bench-quick.json --csv build-test/bench-quick.csv >/dev/null

echo "== AddressSanitizer + UndefinedBehaviorSanitizer =="
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHHG_WARNINGS_AS_ERRORS=ON \
  -DCMAKE_CXX_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san" >/dev/null
cmake --build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j"$jobs")

echo "== ThreadSanitizer: the tests that run threads =="
tsan="-fsanitize=thread -fno-omit-frame-pointer"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHHG_WARNINGS_AS_ERRORS=ON -DHHG_BUILD_BENCH=OFF \
  -DCMAKE_CXX_FLAGS="$tsan" -DCMAKE_EXE_LINKER_FLAGS="$tsan" >/dev/null
cmake --build build-tsan -j"$jobs" --target hhg_tests
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j"$jobs" -R "Threads|Concurrent")

echo "== libFuzzer against the brute-force model (${HHG_FUZZ_SECONDS:-150} s) =="
cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHHG_BUILD_FUZZ=ON \
  -DHHG_BUILD_TESTS=OFF -DHHG_BUILD_APPS=OFF -DHHG_BUILD_BENCH=OFF -DHHG_WARNINGS_AS_ERRORS=ON \
  -DCMAKE_CXX_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san" >/dev/null
cmake --build build-fuzz -j"$jobs" --target hhg_fuzz
work="$(mktemp -d)"
cp tests/fuzz/corpus/* "$work"/
rm -f build-fuzz/crash-* build-fuzz/leak-* build-fuzz/timeout-*
if ! ./build-fuzz/hhg_fuzz "$work" -max_total_time="${HHG_FUZZ_SECONDS:-150}" -print_final_stats=1 \
    -artifact_prefix=build-fuzz/ >build-fuzz/fuzz.log 2>&1; then
  tail -60 build-fuzz/fuzz.log
  echo "hhg: the fuzzer found a failing input (build-fuzz/crash-*):"
  for f in build-fuzz/crash-* build-fuzz/leak-* build-fuzz/timeout-*; do [ -f "$f" ] && od -An -tx1 "$f"; done
  exit 1
fi
grep -E "^Done|stat::number_of_executed_units|stat::new_units_added" build-fuzz/fuzz.log
rm -rf "$work"

echo "== install + find_package consumer =="
prefix="$(mktemp -d)"
cmake --install build-test --prefix "$prefix" >/dev/null
cmake -S tests/consumer -B build-consumer -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build build-consumer -j"$jobs"
./build-consumer/quickstart
for p in consumer_bullet consumer_fcl; do  # the adapters (hhg::bullet, hhg::fcl) when installed
  if [ -x "build-consumer/$p" ]; then "./build-consumer/$p"; else echo "consumer: $p skipped (adapter not installed)"; fi
done
rm -rf "$prefix"
echo "== Python: pip install . into a fresh venv, pytest, the example =="
pywork="$(mktemp -d)"
/usr/bin/python3 -m venv --system-site-packages "$pywork/venv"
CMAKE_BUILD_PARALLEL_LEVEL="$jobs" "$pywork/venv/bin/pip" install -q --no-build-isolation --no-deps --no-index .
"$pywork/venv/bin/python" -m pytest python/tests -q -p no:cacheprovider
"$pywork/venv/bin/python" examples/python/particles.py --steps 20 --out "$pywork/particles.png"
rm -rf "$pywork"
echo "== all tests passed =="
