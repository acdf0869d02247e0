#!/usr/bin/env bash
# Runs the page scripts' tests (src/browser/scripts/test/*_test.html) in headless Chromium: builds the bundle
# the way cmake/KeelEmbed.cmake does (bundle.head, the files of bundle.order, bundle.tail), loads each test
# page from file:// with `--dump-dom` (one fresh browser and profile per page; it exits by itself after the
# load event, and after the pages' timers under a virtual time budget, so asynchronous tests finish without
# waiting in real time) and reads the verdict the page wrote: "KEEL-JS-TESTS pass=<n> fail=<m>" and a line per failure.
# Exit 77 (CTest: skipped) only when Chromium cannot start; KEEL_REQUIRE_CHROMIUM=1 makes that a failure.
# Usage: run_in_chromium.sh <chromium executable or ""> <scripts dir> <work dir>
set -uo pipefail
CHROMIUM="$1"
SCRIPTS_DIR="$2"
WORK_DIR="$3"

cannot_start() {
  echo "Chromium cannot start: $1" >&2
  if [ "${KEEL_REQUIRE_CHROMIUM:-0}" = 1 ]; then exit 1; fi
  exit 77
}

# One headless run of <url>: the DOM after the load event on stdout.
dump_dom() {
  local profile rc
  profile=$(mktemp -d "$WORK_DIR/profile.XXXXXX")
  timeout -k 5 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --no-default-browser-check \
    --disable-background-networking --disable-component-update --disable-sync --disable-quic \
    --user-data-dir="$profile" --virtual-time-budget=30000 --dump-dom "$1" 2>"$WORK_DIR/chromium.err"
  rc=$?
  rm -rf "$profile"
  return $rc
}

[ -n "$CHROMIUM" ] && [ -x "$CHROMIUM" ] || cannot_start "no chromium executable found at configure time"
rm -rf "$WORK_DIR" && mkdir -p "$WORK_DIR" || exit 1
if ! dump_dom 'data:text/html,<p>up</p>' | grep -q '<p>up</p>'; then
  cannot_start "$(tail -n 5 "$WORK_DIR/chromium.err")"
fi

cp "$SCRIPTS_DIR"/test/*.html "$SCRIPTS_DIR"/test/*.js "$WORK_DIR"/ || exit 1
{
  cat "$SCRIPTS_DIR/bundle.head"
  while read -r name; do [ -n "$name" ] && cat "$SCRIPTS_DIR/$name"; done <"$SCRIPTS_DIR/bundle.order"
  cat "$SCRIPTS_DIR/bundle.tail"
} >"$WORK_DIR/page_scripts_bundle.js" || exit 1

failed=0
for page in "$WORK_DIR"/*_test.html; do
  name=$(basename "$page")
  dom=$(dump_dom "file://$page")
  rc=$?
  verdict=$(printf '%s\n' "$dom" | sed -n '/<div id="verdict">/,/<\/div>/p' | sed 's/<[^>]*>//g')
  if [ $rc -ne 0 ] || [ -z "$verdict" ]; then
    echo "$name: no verdict (chromium exit $rc)" >&2
    tail -n 20 "$WORK_DIR/chromium.err" >&2
    failed=1
    continue
  fi
  printf '%s: %s\n' "$name" "$verdict"
  if ! printf '%s\n' "$verdict" | grep -q 'KEEL-JS-TESTS pass=[1-9][0-9]* fail=0'; then failed=1; fi
done
exit $failed
