// browser/page_scripts.h — keel's page scripts (src/browser/scripts/*.js), compiled in at build time.
//
// The bundle is one JavaScript expression. Evaluated in a JavaScript world (keel's isolated world per frame,
// later an extension's content script), it installs the non-enumerable global `__keel` — the functions keel
// calls with JSON arguments: snapshot, describeRef, findText, readText, the DOM-level actions click, hover,
// fill, selectOption, setChecked, and the change record observeStart, observeTake, barrier, waitForText (the
// last two return promises) — and evaluates to the surface's
// version. Evaluating it again in a world that already has that version keeps the existing object, so the
// element registry (and with it every ref's index) survives. The script contract and the outline format are
// in docs/browser.md, "Page scripts, snapshot and refs".
//
// Everything here is immutable data with static storage: callable from any thread, views valid for the
// program's lifetime.
#pragma once

#include <span>
#include <string_view>

namespace keel::browser {

// The version api.js reports (KEEL_SCRIPTS_VERSION); a test keeps the two equal.
inline constexpr int kPageScriptsVersion = 1;

struct PageScriptFile {
  std::string_view name;  // "snapshot.js"
  std::string_view text;
};

// The bundle to evaluate in a world (see above).
std::string_view page_script_bundle();

// The source files the bundle is made of, in bundle order (for diagnostics and tests).
std::span<const PageScriptFile> page_script_files();

}  // namespace keel::browser
