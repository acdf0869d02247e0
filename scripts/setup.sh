#!/usr/bin/env bash
# Installs every system package keel needs on Debian 12 and configures + builds the project.
# Idempotent and non-interactive. Usage: scripts/setup.sh [--no-build] [build-dir]
# KEEL_DEBUG_INFO=OFF builds without debug information (scripts/test.sh does, to save compile time).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential g++ cmake ninja-build ccache pkg-config git
  libboost1.81-dev
  nlohmann-json3-dev libvalijson-dev libre2-dev
  libsqlite3-dev sqlite3 libpq-dev
  libssl-dev openssl libsodium-dev libcurl4-openssl-dev
  libspdlog-dev libfmt-dev libcli11-dev libtomlplusplus-dev
  libyaml-cpp-dev  # SKILL.md front matter (src/skills/front_matter.cc)
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  clang-format-16 clang-tidy-16  # scripts/check_format.sh, scripts/clang_tidy.sh (the versions CI pins)
  clang-16 libclang-rt-16-dev  # scripts/fuzz.sh: libFuzzer, and a clang that compiles <expected>
  chromium  # the browser tools' tests drive a real headless Chromium (docs/browser.md)
  xvfb  # an X server for the headed-browser test (src/browser/headed_e2e_test.cc)
)

# The network steps are retried: a registry that stumbles once should not fail a whole CI run, and each step
# says what it is doing so a failure in the log names the step.
retry() {
  local attempt
  for attempt in 1 2 3; do
    "$@" && return 0
    echo "scripts/setup.sh: '$*' failed (attempt $attempt of 3)" >&2
    sleep $((attempt * 10))
  done
  return 1
}

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  echo "scripts/setup.sh: installing ${missing[*]}"
  retry $SUDO apt-get update
  retry $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi

# clients/ts: json-schema-to-typescript at the version package-lock.json pins, which generates the protocol's
# TypeScript types from docs/protocol/ (the keel_ts_types_fresh test runs it). Node.js 20 with npm.
if ! command -v npm >/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  retry $SUDO apt-get install -y --no-install-recommends nodejs npm
fi
echo "scripts/setup.sh: npm ci in clients/ts"
(cd clients/ts && retry npm ci --no-audit --no-fund)
# web/: the web app's packages (Preact, markdown-it; esbuild, TypeScript, Playwright's test runner, axe-core),
# then its build (web/dist). Playwright drives Debian's chromium: no browser is downloaded.
echo "scripts/setup.sh: npm ci in web"
(cd web && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 retry npm ci --no-audit --no-fund)
echo "scripts/setup.sh: building the web app (web/dist)"
(cd web && npm run build)
# tests/mcp-conformance: the official MCP conformance suite, the reference server server-everything, and the
# Node 22 binary both need (a package, so nothing is downloaded at test time); the keel_mcp_conformance_* and
# keel_mcp_everything_test tests run them (docs/mcp-client.md).
echo "scripts/setup.sh: npm ci in tests/mcp-conformance"
(cd tests/mcp-conformance && retry npm ci --no-audit --no-fund)

if [ "${1:-}" = "--no-build" ]; then exit 0; fi
BUILD_DIR="${1:-build}"
echo "scripts/setup.sh: configuring and building $BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKEEL_WERROR=ON \
  -DKEEL_DEBUG_INFO="${KEEL_DEBUG_INFO:-ON}"
cmake --build "$BUILD_DIR"
