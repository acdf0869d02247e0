#!/usr/bin/env bash
# Runs clang-tidy 16 (Debian's clang-tidy-16) with the checks in .clang-tidy over keel's library sources: every
# src/**/*.cc but the *_test.cc files, with the compile commands of a configured build directory. Headers under
# include/keel/ and src/ are checked through the sources that include them. The same parse runs clang's
# -Wthread-safety analysis (util/thread_annotations.h). Any finding fails the run.
# Usage: scripts/clang_tidy.sh [build-dir (default build)] [file-regex (default: the library sources)]
# Needs clang-tidy-16 (scripts/setup.sh --no-build installs it) and a configured build directory (the build
# exports compile_commands.json).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"

BUILD_DIR="${1:-build}"
FILES_REGEX="${2:-^$ROOT/src/.*(?<!_test)\.cc\$}"
RUN_CLANG_TIDY="$(command -v run-clang-tidy-16 || true)"
if [ -z "$RUN_CLANG_TIDY" ] || ! command -v clang-tidy-16 > /dev/null; then
  echo "scripts/clang_tidy.sh: clang-tidy-16 not found; run scripts/setup.sh --no-build first" >&2
  exit 1
fi
if [ ! -f "$BUILD_DIR/compile_commands.json" ]; then
  echo "scripts/clang_tidy.sh: no $BUILD_DIR/compile_commands.json; configure the build first" >&2
  exit 1
fi

# The compile commands are g++'s. For clang 16: C++23 is spelled c++2b; libstdc++ 12 declares <expected> only
# when __cpp_concepts says C++20 concepts, which clang 16 implements but does not announce (scripts/fuzz.sh
# does the same); g++-only warning flags are ignored, and warnings stay warnings (.clang-tidy decides which
# of them are errors).
"$RUN_CLANG_TIDY" -quiet -p "$BUILD_DIR" -clang-tidy-binary "$(command -v clang-tidy-16)" -j "$(nproc)" \
  -extra-arg=-std=c++2b -extra-arg=-U__cpp_concepts -extra-arg=-D__cpp_concepts=202002L \
  -extra-arg=-Wno-unknown-warning-option -extra-arg=-Wno-error -extra-arg=-Wthread-safety \
  "$FILES_REGEX"
