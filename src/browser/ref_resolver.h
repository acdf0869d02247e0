// browser/ref_resolver.h — the one place a ref becomes an element to act on (plan §1.6), for every tool that
// takes a ref.
//
// resolve_ref checks, in order, and names the first thing that no longer holds:
//   1. the thread's RefTable knows the ref for this tab (browser.unknown_ref, browser.wrong_tab,
//      browser.stale_ref with the reason it was invalidated);
//   2. the tab is open and alive (browser.stale_ref "the tab was closed", browser.tab_crashed);
//   3. the frame is still there with the same document and the same keel world (browser.stale_ref "the page
//      navigated" — the frame's other refs are invalidated with it);
//   4. the frame is at the origin the call was decided (and maybe approved) for (browser.target_changed);
//   5. the page-script registry still has a connected element there with the same role and name, and it is
//      the DOM node the ref was pinned to (pinned now at first use) (browser.stale_ref).
// It never falls back to another element.
//
// Runtime thread only.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "browser/browser_runtime.h"
#include "browser/ref_table.h"
#include "keel/error.h"

namespace keel::browser {

struct ResolvedRef {
  RefRecord record;
  std::string origin;  // the frame's origin now
};

// "e12 (button "Buy 1")": how reports and errors name a ref.
std::string describe_ref(const RefRecord& record);

// Parameters by value (coroutine). `decided_origin`: the origin in the call's decided target, if any.
boost::asio::awaitable<Result<ResolvedRef>> resolve_ref(std::shared_ptr<BrowserThread> thread,
                                                        std::string ref, int64_t tab_id,
                                                        std::optional<std::string> decided_origin,
                                                        std::chrono::milliseconds timeout);

}  // namespace keel::browser
