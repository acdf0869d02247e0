#!/usr/bin/env bash
# Sets everything up (system packages, build) and runs the whole test suite: every CTest label but `slow`,
# then a short fuzz run (label `fuzz`, in BUILD_DIR-fuzz). The style checks run too (docs/contributing.md):
# clang-format over every C++ file before the tests, clang-tidy over the library sources after them.
# Usage: scripts/test.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build}"
# Without debug information: a third less compile time, and nothing in the suite reads it.
KEEL_DEBUG_INFO=OFF scripts/setup.sh "$BUILD_DIR"
echo "scripts/test.sh: format check ($(date -u +%T))"
scripts/check_format.sh
echo "scripts/test.sh: CTest ($(date -u +%T))"
# setup.sh installed Chromium, so a browser suite that cannot start it fails instead of skipping.
export KEEL_REQUIRE_CHROMIUM=1
ctest --test-dir "$BUILD_DIR" --label-exclude slow --output-on-failure --timeout 600 -j "$(nproc)"
echo "scripts/test.sh: clang-tidy ($(date -u +%T))"
scripts/clang_tidy.sh "$BUILD_DIR"
# A short libFuzzer run of the SSE parser, the JSON event reader and each wire decoder (clang 16, own build
# directory); scripts/fuzz.sh SECONDS runs a longer campaign on demand.
echo "scripts/test.sh: fuzz ($(date -u +%T))"
scripts/fuzz.sh 10 "$BUILD_DIR-fuzz"
