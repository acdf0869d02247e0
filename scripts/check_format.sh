#!/usr/bin/env bash
# Checks that every C++ file git tracks (*.cc, *.h) is formatted as .clang-format says, with clang-format 16
# (Debian's clang-format-16; other versions format some constructs differently). Lists the files that differ
# and fails if there are any. `--fix` rewrites them in place instead. Extra arguments limit the run to those
# files. Usage: scripts/check_format.sh [--fix] [file...]
set -euo pipefail
cd "$(dirname "$0")/.."

CLANG_FORMAT="${CLANG_FORMAT:-$(command -v clang-format-16 || true)}"
if [ -z "$CLANG_FORMAT" ]; then
  echo "scripts/check_format.sh: clang-format-16 not found; run scripts/setup.sh --no-build first" >&2
  exit 1
fi

FIX=0
if [ "${1:-}" = "--fix" ]; then FIX=1; shift; fi
if [ $# -gt 0 ]; then
  FILES=("$@")
else
  mapfile -t FILES < <(git ls-files -- '*.cc' '*.h')
fi

if [ "$FIX" = 1 ]; then
  printf '%s\0' "${FILES[@]}" | xargs -0 -n 50 "$CLANG_FORMAT" -i --style=file
  exit 0
fi

# --dry-run reports each difference as "<file>:<line>:<col>: error: code should be clang-formatted".
mapfile -t unformatted < <(printf '%s\0' "${FILES[@]}" |
  xargs -0 -n 50 "$CLANG_FORMAT" --style=file --dry-run 2>&1 | sed -n 's/^\(.*\):[0-9]*:[0-9]*: \(warning\|error\): code should be clang-formatted.*/\1/p' |
  sort -u)
if [ ${#unformatted[@]} -gt 0 ]; then
  printf '%s\n' "${unformatted[@]}" >&2
  echo "scripts/check_format.sh: ${#unformatted[@]} file(s) differ from .clang-format;" \
    "scripts/check_format.sh --fix formats them" >&2
  exit 1
fi
echo "scripts/check_format.sh: ${#FILES[@]} files formatted"
