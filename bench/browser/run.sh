#!/usr/bin/env bash
# Installs bench/browser's pinned packages (@playwright/mcp, never a browser: it drives Debian's Chromium)
# when they are missing or older than package-lock.json, then runs compare.mjs with the given options
# (node compare.mjs --help) from the caller's directory. Not part of scripts/setup.sh or CI: the first
# install reaches the npm registry. See docs/benchmarks.md.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
if [ ! -f "$here/node_modules/@playwright/mcp/cli.js" ] ||
   [ "$here/package-lock.json" -nt "$here/node_modules/.package-lock.json" ]; then
  echo "bench/browser/run.sh: npm ci in $here (@playwright/mcp, no browser download)" >&2
  (cd "$here" && npm ci --no-audit --no-fund >&2)
fi
exec node "$here/compare.mjs" "$@"
