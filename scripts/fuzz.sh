#!/usr/bin/env bash
# Builds keel's libFuzzer targets (fuzz/) with clang 16 in their own build directory and runs each one for a
# bounded time through CTest (label `fuzz`), starting from the seed corpora in fuzz/corpus/. New inputs are
# kept in <build-dir>/fuzz/corpus/; a finding leaves its input in <build-dir>/fuzz/ (crash-*, leak-*, timeout-*)
# and fails the run; replay it with <build-dir>/fuzz/<target> <file>.
# Usage: scripts/fuzz.sh [seconds-per-target (default 20)] [build-dir (default build-fuzz)]
# Needs clang-16 and libclang-rt-16-dev (scripts/setup.sh --no-build installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_TARGET="${1:-20}"
BUILD_DIR="${2:-build-fuzz}"
CXX_COMPILER="$(command -v clang++-16 || true)"
if [ -z "$CXX_COMPILER" ]; then
  echo "scripts/fuzz.sh: clang++-16 not found; run scripts/setup.sh --no-build first" >&2
  exit 1
fi

cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$CXX_COMPILER" \
  -DKEEL_BUILD_FUZZ=ON -DKEEL_BUILD_TESTS=OFF -DKEEL_BUILD_BENCH=OFF -DKEEL_FUZZ_SECONDS="$SECONDS_PER_TARGET"
cmake --build "$BUILD_DIR" --target keel_fuzz
# Each target is one single-threaded libFuzzer process with its own corpus directory, so they run side by
# side, one per core: every target still fuzzes for its full SECONDS_PER_TARGET on a core of its own.
ctest --test-dir "$BUILD_DIR" -L fuzz --output-on-failure -j "$(nproc)"
