// browser/browser_errors.h — error codes of the browser layer (stable, part of the protocol: they reach
// clients as tool results' error codes). Pending their merge into keel/error_codes.h; one block per work
// package of issue 17.
#pragma once

namespace keel::codes {

// Refs and page scripts (browser/ref_table.h, browser/snapshot.h).
inline constexpr char kBrowserUnknownRef[] =
    "browser.unknown_ref";  // not a ref keel issued (or issued before keel restarted)
inline constexpr char kBrowserWrongTab[] = "browser.wrong_tab";  // a ref of another tab than the current one
inline constexpr char kBrowserStaleRef[] =
    "browser.stale_ref";  // the element a ref named is gone or changed (navigation, re-render, closed tab)
inline constexpr char kBrowserBadScriptResult[] =
    "browser.bad_script_result";  // a page script's result is not what keel expects (shape, reused index)

}  // namespace keel::codes
