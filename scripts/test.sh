#!/usr/bin/env bash
# Sets everything up (system packages, build) and runs the whole test suite: every CTest label but `slow`.
# Usage: scripts/test.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build}"
scripts/setup.sh "$BUILD_DIR"
ctest --test-dir "$BUILD_DIR" --label-exclude slow --output-on-failure --timeout 600 -j "$(nproc)"
