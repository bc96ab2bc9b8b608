#!/usr/bin/env bash
# The tests on a fresh machine: install dependencies, then
#  1. Release build with warnings as errors, the whole test suite, the
#     library's sources compiled without SSE2 (the portable fallbacks), and
#     `hhg bench --quick` (every method on the thesis scenarios; pairs must agree);
#  2. AddressSanitizer + UndefinedBehaviorSanitizer build with clang (no
#     recovery; for x86-64-v3, AVX2 and FMA, where the CPU runs it) and
#     libstdc++'s checked indexing (_GLIBCXX_ASSERTIONS: an index past a
#     vector's end aborts even where the optimizer moved or dropped the read,
#     as v[0] of an empty vector whose fields are read late), the whole test
#     suite again (the benchmark programs are not built: stage 1 tests them;
#     the MPI test programs run at 2 and 4 ranks, stage 1 runs them at 1-4),
#     and the libFuzzer target (stage 4);
#  3. ThreadSanitizer build, the tests that run threads (names with
#     "Threads" or "Concurrent"; only their files are built);
#  4. libFuzzer against the brute-force model, a short run
#     (HHG_FUZZ_SECONDS, default 150) from the seed corpus tests/fuzz/corpus;
#  5. install to a temporary prefix and build a consumer with find_package(hhg);
#  6. the Python module: pip install into a fresh venv, pytest python/tests,
#     the example examples/python/particles.py.
#
# Time (CI's budget is 50 minutes; compiling is most of it):
# - Ninja, which compiles a target's files while the libraries it links are
#   still being built;
# - the sanitizer builds with line tables only (-g1), not full debug
#   information: the stacks still name files and lines;
# - the ASan build with clang, which compiles src/hash_grids.cpp under
#   ASan+UBSan at -O2 -g1 in 110 s where g++ takes 267 (measured one after
#   the other on this 2-core machine); the fuzzer, a clang ASan build too,
#   is built there instead of building the library a third time.
# (-O1 compiles 1.5x faster still, but the ASan tests then ran 1.3x slower.)
# - the ASan build's typed tests on two (dimension, scalar) variants of each
#   method, not four (docs/reliability.md, stage 2, says what it saves).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
jobs="$(nproc)"
# configure DIR ARGS...: Ninja for a new build directory; one made before
# keeps its generator (CMake refuses to change it).
configure() {
  local dir="$1"
  shift
  local gen=()
  [ -f "$dir/CMakeCache.txt" ] || gen=(-G Ninja)
  cmake "${gen[@]}" -S . -B "$dir" "$@" >/dev/null
}
# stage TITLE: the stage's title and the minutes since the start (CI's log
# then shows where the time goes)
stage() { printf '== %s == (%d:%02d)\n' "$1" $((SECONDS / 60)) $((SECONDS % 60)); }

stage "Release build, warnings as errors"
configure build-test -DCMAKE_BUILD_TYPE=Release -DHHG_WARNINGS_AS_ERRORS=ON
cmake --build build-test -j"$jobs"
(cd build-test && ctest --output-on-failure -j"$jobs")

stage "the portable paths compile (no SSE2)"
# The SIMD kernels have plain fallbacks for other targets; nothing else
# compiles them (a fallback that named an SSE type once broke them unseen).
# (one compiler a core: xargs fails if any of them does)
printf '%s\0' src/*.cpp src/hash_grids/*.cpp |
  xargs -0 -n1 -P"$jobs" g++ -std=c++20 -fsyntax-only -U__SSE2__ -Iinclude -Isrc

stage "hhg bench --quick (every method, pairs must agree)"
./build-test/hhg bench --quick --json build-test/bench-quick.json --csv build-test/bench-quick.csv >/dev/null

# The ASan build is compiled for x86-64-v3 (AVX2, FMA, BMI2) when this CPU runs
# it (glibc's loader says so): stage 1 checks the default build, this stage
# the code a `-march=native` user gets (vectorized loops, contracted FMAs).
v3=""
if /lib64/ld-linux-x86-64.so.2 --help 2>/dev/null | grep -q "x86-64-v3 (supported"; then v3="-march=x86-64-v3"; fi
stage "AddressSanitizer + UndefinedBehaviorSanitizer (clang${v3:+, $v3})"
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
# (HHG_TEST_FEWER_VARIANTS: the typed tests on 2D float and 3D double, not all
# four (dimension, scalar) variants: tests/support.hpp; _GLIBCXX_ASSERTIONS: above)
configure build-asan -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" -DHHG_WARNINGS_AS_ERRORS=ON -DHHG_BUILD_BENCH=OFF \
  -DHHG_BUILD_FUZZ=ON -DCMAKE_CXX_FLAGS="$san $v3 -D_GLIBCXX_ASSERTIONS -DHHG_TEST_FEWER_VARIANTS" -DCMAKE_EXE_LINKER_FLAGS="$san" "-DHHG_MPI_TEST_RANKS=2;4"
cmake --build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j"$jobs")

stage "ThreadSanitizer: the tests that run threads"
tsan="-fsanitize=thread -fno-omit-frame-pointer"
threaded="Threads|Concurrent"
configure build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
  -DHHG_WARNINGS_AS_ERRORS=ON -DHHG_BUILD_BENCH=OFF -DHHG_TEST_NAMES="$threaded" \
  -DCMAKE_CXX_FLAGS="$tsan" -DCMAKE_EXE_LINKER_FLAGS="$tsan"
cmake --build build-tsan -j"$jobs" --target hhg_tests
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j"$jobs" -R "$threaded")

stage "libFuzzer against the brute-force model (${HHG_FUZZ_SECONDS:-150} s)"
# (hhg_fuzz was built in build-asan; its findings and log go to build-fuzz/)
mkdir -p build-fuzz
work="$(mktemp -d)"
cp tests/fuzz/corpus/* "$work"/
rm -f build-fuzz/crash-* build-fuzz/leak-* build-fuzz/timeout-*
if ! ./build-asan/hhg_fuzz "$work" -max_total_time="${HHG_FUZZ_SECONDS:-150}" -print_final_stats=1 \
    -artifact_prefix=build-fuzz/ >build-fuzz/fuzz.log 2>&1; then
  tail -60 build-fuzz/fuzz.log
  echo "hhg: the fuzzer found a failing input (build-fuzz/crash-*):"
  for f in build-fuzz/crash-* build-fuzz/leak-* build-fuzz/timeout-*; do [ -f "$f" ] && od -An -tx1 "$f"; done
  exit 1
fi
grep -E "^Done|stat::number_of_executed_units|stat::new_units_added" build-fuzz/fuzz.log
rm -rf "$work"

stage "install + find_package consumer"
prefix="$(mktemp -d)"
cmake --install build-test --prefix "$prefix" >/dev/null
cmake -S tests/consumer -B build-consumer -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build build-consumer -j"$jobs"
./build-consumer/quickstart
for p in consumer_bullet consumer_fcl; do  # the adapters (hhg::bullet, hhg::fcl) when installed
  if [ -x "build-consumer/$p" ]; then "./build-consumer/$p"; else echo "consumer: $p skipped (adapter not installed)"; fi
done
rm -rf "$prefix"
stage "Python: pip install . into a fresh venv, pytest, the example"
pywork="$(mktemp -d)"
/usr/bin/python3 -m venv --system-site-packages "$pywork/venv"
CMAKE_BUILD_PARALLEL_LEVEL="$jobs" "$pywork/venv/bin/pip" install -q --no-build-isolation --no-deps --no-index .
"$pywork/venv/bin/python" -m pytest python/tests -q -p no:cacheprovider
"$pywork/venv/bin/python" examples/python/particles.py --steps 20 --out "$pywork/particles.png"
rm -rf "$pywork"
stage "all tests passed"
